//! Reading the queued and parked URLs without the frontier: over any
//! connection, so a rule preview scans from its own thread through its own
//! connection while the crawl loop keeps the frontier's.

use super::conn::{first_members, Link};
use super::RedisUrl;
use crate::engine::frontier::api::{ScanCursor, ScanPage, ScanRange};
use crate::engine::frontier::entry::decode;
use crate::engine::frontier::FrontierEntry;
use crate::engine::store::StoreError;
use crate::engine::telemetry::PRIORITY_LEVELS;

/// One alert's parked URLs across the workers' keys.
#[derive(Debug, Clone, PartialEq)]
pub struct ParkedGroup {
    pub alert_id: u64,
    /// Parked URLs under the alert.
    pub count: u64,
    /// The first of them.
    pub entries: Vec<FrontierEntry>,
}

/// `(member, score)` rows of a sorted set.
pub(super) type Rows = Vec<(Vec<u8>, String)>;

/// Scans a crawl's URLs through a connection of its own to the same server,
/// opened at the first scan (so on the thread that scans).
pub struct RedisReader {
    url: RedisUrl,
    prefix: String,
    link: Option<Link>,
}

impl RedisReader {
    pub(super) fn new(url: &RedisUrl, prefix: &str) -> Self {
        RedisReader {
            url: url.clone(),
            prefix: prefix.to_string(),
            link: None,
        }
    }

    /// The reader's connection, opened on first use (so on the thread that
    /// reads) and again after the server was out of reach.
    fn link(&mut self) -> Result<&mut Link, StoreError> {
        if self.link.as_ref().is_none_or(|link| link.down().is_some()) {
            self.link = Some(Link::open(&self.url)?);
        }
        Ok(self.link.as_mut().expect("opened above"))
    }

    /// A reader of the crawl `crawl` on the server at `url`.
    pub fn for_crawl(url: &RedisUrl, crawl: &str) -> Self {
        RedisReader::new(url, &super::key_prefix(crawl))
    }

    /// The parked URLs by alert, in alert order: at most `max_alerts`
    /// alerts, each with its count (over every worker's key) and its first
    /// `max_urls` entries. `true` with them when alerts were left out.
    pub fn parked_by_alert(
        &mut self,
        max_alerts: usize,
        max_urls: usize,
    ) -> Result<(Vec<ParkedGroup>, bool), StoreError> {
        let set = format!("{}parked_keys", self.prefix);
        let link = self.link()?;
        let keys: Vec<String> = link.query("listing parked URLs", |c| {
            redis::cmd("SMEMBERS").arg(&set).query(c)
        })?;
        // `parked:WORKER:ALERT`: the number is after the last colon.
        let mut by_alert: std::collections::BTreeMap<u64, Vec<String>> = Default::default();
        for key in keys {
            if let Some(id) = key.rsplit(':').next().and_then(|n| n.parse().ok()) {
                by_alert.entry(id).or_default().push(key);
            }
        }
        let cut = by_alert.len() > max_alerts;
        let mut groups = Vec::new();
        for (alert_id, keys) in by_alert.into_iter().take(max_alerts) {
            let mut group = ParkedGroup {
                alert_id,
                count: 0,
                entries: Vec::new(),
            };
            for key in keys {
                let (start, stop) = first_members(max_urls.saturating_sub(group.entries.len()));
                let (count, members): (u64, Vec<Vec<u8>>) =
                    link.query("reading parked URLs", |c| {
                        redis::pipe()
                            .cmd("ZCARD")
                            .arg(&key)
                            .cmd("ZRANGE")
                            .arg(&key)
                            .arg(start)
                            .arg(stop)
                            .query(c)
                    })?;
                group.count += count;
                for member in &members {
                    group.entries.push(decode(member)?);
                }
            }
            if group.count > 0 {
                groups.push(group);
            }
        }
        Ok((groups, cut))
    }

    /// Hosts no worker holds that have URLs queued, by whether they may be
    /// fetched now: `(ready, waiting for their next allowed time)`.
    pub fn unheld_hosts(&mut self) -> Result<(u64, u64), StoreError> {
        let prefix = self.prefix.clone();
        let epoch_key = format!("{prefix}epoch");
        let link = self.link()?;
        let epoch: Option<String> = link.query("reading the crawl's clock", |c| {
            redis::cmd("GET").arg(&epoch_key).query(c)
        })?;
        let Some(epoch_ms) = epoch.and_then(|e| e.parse::<i128>().ok()) else {
            return Ok((0, 0));
        };
        let now = super::conn::Clock::new(epoch_ms).score(tokio::time::Instant::now());
        let mut pipe = redis::pipe();
        for level in 0..PRIORITY_LEVELS {
            let key = format!("{prefix}sched:{level}");
            pipe.cmd("ZCARD").arg(&key);
            pipe.cmd("ZCOUNT")
                .arg(&key)
                .arg("-inf")
                .arg(now.to_string());
        }
        let counts: Vec<u64> = link.query("counting scheduled hosts", |c| pipe.query(c))?;
        let (all, ready) = counts.chunks(2).fold((0, 0), |(all, ready), pair| {
            (all + pair[0], ready + pair[1])
        });
        Ok((ready, all - ready))
    }

    /// See [`crate::engine::frontier::FrontierStore::scan`].
    pub fn scan(
        &mut self,
        range: ScanRange,
        from: Option<&ScanCursor>,
        limit: usize,
    ) -> Result<ScanPage, StoreError> {
        let prefix = self.prefix.clone();
        scan_range(self.link()?, &prefix, range, from, limit)
    }
}

/// Rows of `key` after the score `after` (exclusive), in score order.
pub(super) fn rows_after(
    link: &mut Link,
    key: &str,
    after: Option<&str>,
    limit: usize,
) -> Result<Rows, StoreError> {
    let min = after.map_or("-inf".to_string(), |s| format!("({s}"));
    link.query("reading a queue", |c| {
        redis::cmd("ZRANGEBYSCORE")
            .arg(key)
            .arg(&min)
            .arg("+inf")
            .arg("WITHSCORES")
            .arg("LIMIT")
            .arg(0)
            .arg(limit)
            .query(c)
    })
}

/// Hosts with queued or leased URLs, sorted.
pub(super) fn queue_hosts(link: &mut Link, prefix: &str) -> Result<Vec<String>, StoreError> {
    let key = format!("{prefix}hosts");
    let mut hosts: Vec<String> = link.query("listing hosts", |c| {
        redis::cmd("SMEMBERS").arg(&key).query(c)
    })?;
    hosts.sort();
    Ok(hosts)
}

/// Reads queued (leased included) or parked URLs in `(key, score)` order.
/// The cursor is `key \0 score` of the last row read.
pub(super) fn scan_range(
    link: &mut Link,
    prefix: &str,
    range: ScanRange,
    from: Option<&ScanCursor>,
    limit: usize,
) -> Result<ScanPage, StoreError> {
    let keys: Vec<String> = match range {
        ScanRange::Queued => queue_hosts(link, prefix)?
            .into_iter()
            .map(|h| format!("{prefix}q:{h}"))
            .collect(),
        ScanRange::Parked => {
            let set = format!("{prefix}parked_keys");
            let mut keys: Vec<String> = link.query("listing parked URLs", |c| {
                redis::cmd("SMEMBERS").arg(&set).query(c)
            })?;
            keys.sort();
            keys
        }
    };
    let (start_key, start_score) = match from {
        Some(ScanCursor(bytes)) => {
            let text = String::from_utf8_lossy(bytes).into_owned();
            let (k, s) = text.split_once('\0').unwrap_or((&text, ""));
            (
                Some(k.to_string()),
                Some(s.to_string()).filter(|s| !s.is_empty()),
            )
        }
        None => (None, None),
    };
    let mut entries = Vec::new();
    for key in keys {
        if start_key.as_ref().is_some_and(|s| key < *s) {
            continue;
        }
        let resume = start_key.as_ref() == Some(&key);
        if !resume && range == ScanRange::Queued {
            entries.extend(leased_entries(link, &key)?);
        }
        let after = if resume { start_score.clone() } else { None };
        let room = limit.saturating_sub(entries.len()).max(1);
        let rows = rows_after(link, &key, after.as_deref(), room)?;
        for (member, _) in &rows {
            entries.push(decode(member)?);
        }
        if entries.len() >= limit {
            let score = rows.last().map_or("", |(_, score)| score.as_str());
            let next = Some(ScanCursor(format!("{key}\0{score}").into_bytes()));
            return Ok(ScanPage { entries, next });
        }
    }
    Ok(ScanPage {
        entries,
        next: None,
    })
}

/// The in-flight entries of the host whose queue is `queue_key`.
fn leased_entries(link: &mut Link, queue_key: &str) -> Result<Vec<FrontierEntry>, StoreError> {
    let key = queue_key.replacen(":q:", ":inflight:", 1);
    let members: Vec<Vec<u8>> = link.query("reading leased URLs", |c| {
        redis::cmd("HKEYS").arg(&key).query(c)
    })?;
    members.iter().map(|m| decode(m)).collect()
}
