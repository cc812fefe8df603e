//! Operations over many queued or parked URLs, in chunks: the predicate runs
//! here, and a script removes exactly the chosen URLs still queued.

use super::outage::Write;
use super::RedisFrontier;
use crate::engine::frontier::api::{ScanCursor, ScanPage, ScanRange};
use crate::engine::frontier::entry::decode;
use crate::engine::frontier::{FrontierEntry, SCAN_CHUNK};
use crate::engine::store::{PageRecord, StoreError};

/// `(member, score)` rows of a sorted set.
type Rows = Vec<(Vec<u8>, String)>;

impl RedisFrontier {
    fn parked_key(&self, alert_id: u64) -> String {
        format!("{}parked:{}:{alert_id}", self.prefix, self.worker)
    }

    /// Rows of `key` after the score `after` (exclusive), in score order.
    fn rows_after(
        &mut self,
        key: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Rows, StoreError> {
        let min = after.map_or("-inf".to_string(), |s| format!("({s}"));
        self.link.query("reading a queue", |c| {
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
    fn queue_hosts(&mut self) -> Result<Vec<String>, StoreError> {
        let key = format!("{}hosts", self.prefix);
        let mut hosts: Vec<String> = self.link.query("listing hosts", |c| {
            redis::cmd("SMEMBERS").arg(&key).query(c)
        })?;
        hosts.sort();
        Ok(hosts)
    }

    pub(super) fn park_entries(
        &mut self,
        alert_id: u64,
        entries: &[FrontierEntry],
    ) -> Result<u64, StoreError> {
        if entries.is_empty() {
            return Ok(0);
        }
        let out = self.write(Write::Park {
            key: self.parked_key(alert_id),
            entries: entries.to_vec(),
        })?;
        // Held through an outage: counted when written.
        Ok(out.map_or(0, |out| count_of(&out)))
    }

    /// Removes queued URLs matching `pred` (of `host`, or of every host):
    /// recorded with `record`, or parked under `park`.
    pub(super) fn remove_where(
        &mut self,
        host: Option<&str>,
        pred: &dyn Fn(&FrontierEntry) -> bool,
        record: Option<&dyn Fn(&FrontierEntry) -> PageRecord>,
        park: Option<u64>,
    ) -> Result<u64, StoreError> {
        let hosts = match host {
            Some(h) => vec![h.to_string()],
            None => self.queue_hosts()?,
        };
        let target = park.map_or(String::new(), |id| self.parked_key(id));
        let mut removed = 0;
        for host in hosts {
            let key = format!("{}q:{host}", self.prefix);
            let mut after: Option<String> = None;
            loop {
                let rows = self.rows_after(&key, after.as_deref(), SCAN_CHUNK)?;
                let Some((_, last)) = rows.last() else { break };
                after = Some(last.clone());
                let mut chosen = Vec::new();
                for (member, _) in &rows {
                    let entry = decode(member)?;
                    if pred(&entry) {
                        chosen.push((member.clone(), entry));
                    }
                }
                if !chosen.is_empty() {
                    removed += self.remove_chunk(&host, &target, chosen, record)?;
                }
                if rows.len() < SCAN_CHUNK {
                    break;
                }
            }
        }
        Ok(removed)
    }

    fn remove_chunk(
        &mut self,
        host: &str,
        target: &str,
        chosen: Vec<(Vec<u8>, FrontierEntry)>,
        record: Option<&dyn Fn(&FrontierEntry) -> PageRecord>,
    ) -> Result<u64, StoreError> {
        let mut inv = self.scripts.remove.prepare_invoke();
        inv.arg(&self.prefix).arg(host).arg(target);
        for (member, _) in &chosen {
            inv.arg(member);
        }
        let gone = self.link.run("removing URLs", &inv)?;
        let gone: std::collections::HashSet<Vec<u8>> = gone.into_iter().collect();
        if let Some(record) = record {
            let records: Vec<PageRecord> = chosen
                .iter()
                .filter(|(m, _)| gone.contains(m))
                .map(|(_, e)| record(e))
                .collect();
            self.store.record_pages(&records)?;
        }
        Ok(gone.len() as u64)
    }

    /// Unparks (`record` is `None`) or drops an alert's parked URLs.
    pub(super) fn end_parked(
        &mut self,
        alert_id: u64,
        record: Option<&dyn Fn(&FrontierEntry) -> PageRecord>,
    ) -> Result<u64, StoreError> {
        let key = self.parked_key(alert_id);
        let mut total = 0;
        loop {
            let rows = self.rows_after(&key, None, SCAN_CHUNK)?;
            if rows.is_empty() {
                return Ok(total);
            }
            let entries = rows
                .iter()
                .map(|(m, _)| decode(m))
                .collect::<Result<Vec<_>, _>>()?;
            let mut inv = self.scripts.unpark.prepare_invoke();
            inv.arg(&self.prefix)
                .arg(&key)
                .arg(if record.is_some() { "drop" } else { "unpark" });
            for ((member, _), entry) in rows.iter().zip(&entries) {
                inv.arg(member).arg(&entry.host);
            }
            let n = count_of(&self.link.run("releasing parked URLs", &inv)?);
            if let Some(record) = record {
                let records: Vec<PageRecord> = entries.iter().map(record).collect();
                self.store.record_pages(&records)?;
            }
            total += n;
            if n == 0 {
                // Nothing moved: another worker took them meanwhile.
                return Ok(total);
            }
        }
    }

    /// Reads queued (leased included) or parked URLs in `(key, score)` order.
    /// The cursor is `key \0 score` of the last row read.
    pub(super) fn scan_range(
        &mut self,
        range: ScanRange,
        from: Option<&ScanCursor>,
        limit: usize,
    ) -> Result<ScanPage, StoreError> {
        let keys: Vec<String> = match range {
            ScanRange::Queued => self
                .queue_hosts()?
                .into_iter()
                .map(|h| format!("{}q:{h}", self.prefix))
                .collect(),
            ScanRange::Parked => {
                let set = format!("{}parked_keys", self.prefix);
                let mut keys: Vec<String> = self.link.query("listing parked URLs", |c| {
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
                entries.extend(self.leased_entries(&key)?);
            }
            let after = if resume { start_score.clone() } else { None };
            let room = limit.saturating_sub(entries.len()).max(1);
            let rows = self.rows_after(&key, after.as_deref(), room)?;
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
    fn leased_entries(&mut self, queue_key: &str) -> Result<Vec<FrontierEntry>, StoreError> {
        let key = queue_key.replacen(":q:", ":inflight:", 1);
        let members: Vec<Vec<u8>> = self.link.query("reading leased URLs", |c| {
            redis::cmd("HKEYS").arg(&key).query(c)
        })?;
        members.iter().map(|m| decode(m)).collect()
    }
}

fn count_of(out: &[Vec<u8>]) -> u64 {
    out.first()
        .and_then(|n| std::str::from_utf8(n).ok()?.parse().ok())
        .unwrap_or(0)
}
