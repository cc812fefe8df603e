//! Circuit breakers as the crawl's, not a worker's: the last change any
//! worker made to a host's breaker is kept in `breakers` (JSON, times on the
//! crawl's clock) and logged in `breaker-log` under a crawl-wide number. A
//! worker looks for changes made elsewhere when `breaker-seq` moved, at most
//! every [`BREAKER_POLL`]; a host it claims or adopts comes with its record.

use std::collections::HashMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::conn::Clock;
use super::outage::Write;
use super::RedisFrontier;
use crate::engine::breaker::OpenBreaker;
use crate::engine::control::HostKey;
use crate::engine::frontier::SharedBreaker;
use crate::engine::store::StoreError;

/// How often a worker looks whether other workers changed a breaker.
const BREAKER_POLL: Duration = Duration::from_millis(500);
/// Hosts read per look; more wait for the next.
const BREAKERS_PER_POLL: usize = 64;

/// What this worker has read of the crawl's breaker log.
#[derive(Debug, Default)]
pub(super) struct BreakersSeen {
    /// The change number read up to.
    read_to: u64,
    looks: super::meta::Looks,
    /// Breakers read with a claim (JSON), until the claimer takes them.
    claimed: HashMap<HostKey, Vec<u8>>,
}

impl BreakersSeen {
    pub(super) fn note_claimed(&mut self, host: &str, breaker: &[u8]) {
        self.claimed.insert(host.to_string(), breaker.to_vec());
    }
}

/// A breaker as `breakers` keeps it.
#[derive(Debug, Serialize, Deserialize)]
struct BreakerRecord {
    by: String,
    reason: String,
    open: Option<OpenRecord>,
}

/// An open breaker: times are scores on the crawl's clock (strings, as
/// everywhere in the shared frontier).
#[derive(Debug, Serialize, Deserialize)]
struct OpenRecord {
    probe_at: String,
    failing_since: String,
    reopen_level: u32,
    cooldown_ms: u64,
    last_error: Option<String>,
}

/// A host's shared breaker as a reader of the crawl shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct SharedBreakerState {
    /// While open: the time to its probe (zero once due); `None`: closed.
    pub probe_in: Option<Duration>,
    /// The failure that opened it (or the last probe's).
    pub last_error: Option<String>,
}

/// The hash of the crawl's breakers, host → JSON (`key_prefix` first).
pub fn breakers_key(prefix: &str) -> String {
    format!("{prefix}breakers")
}

/// A stored breaker as of `now` (nanoseconds on the crawl's clock); `None`
/// if unreadable.
pub fn shared_breaker_state(json: &str, now: i128) -> Option<SharedBreakerState> {
    let record: BreakerRecord = serde_json::from_str(json).ok()?;
    let Some(open) = record.open else {
        return Some(SharedBreakerState {
            probe_in: None,
            last_error: None,
        });
    };
    let probe_at = open.probe_at.parse::<i128>().ok()?;
    let ns = (probe_at - now).clamp(0, u64::MAX as i128) as u64;
    Some(SharedBreakerState {
        probe_in: Some(Duration::from_nanos(ns)),
        last_error: open.last_error,
    })
}

impl RedisFrontier {
    /// See [`crate::engine::frontier::FrontierStore::share_breaker`]; held
    /// while Redis is out of reach, like a lease's end.
    pub(super) fn write_breaker(
        &mut self,
        host: &str,
        open: Option<&OpenBreaker>,
        reason: &str,
    ) -> Result<(), StoreError> {
        let record = BreakerRecord {
            by: self.worker.clone(),
            reason: reason.to_string(),
            open: open.map(|o| OpenRecord {
                probe_at: self.clock.score(o.probe_at).to_string(),
                failing_since: self.clock.score(o.failing_since).to_string(),
                reopen_level: o.reopen_level,
                cooldown_ms: o.cooldown.as_millis().min(u64::MAX as u128) as u64,
                last_error: o.last_error.clone(),
            }),
        };
        let breaker = serde_json::to_string(&record).map_err(|source| StoreError::Encode {
            what: "host breaker",
            source,
        })?;
        self.write(Write::ShareBreaker {
            host: host.to_string(),
            breaker,
        })
        .map(drop)
    }

    /// See [`crate::engine::frontier::FrontierStore::breaker_news`].
    pub(super) fn read_breaker_news(
        &mut self,
    ) -> Result<Vec<(HostKey, SharedBreaker)>, StoreError> {
        let reachable = self.link.down().is_none();
        let seen = &mut self.breakers_seen;
        if !seen.looks.take(BREAKER_POLL, reachable) {
            return Ok(Vec::new());
        }
        let (p, read_to) = (self.prefix.clone(), seen.read_to);
        let last: Option<u64> = self.link.query("reading the crawl's breakers", |c| {
            redis::cmd("GET").arg(format!("{p}breaker-seq")).query(c)
        })?;
        if last.unwrap_or(0) <= read_to {
            return Ok(Vec::new());
        }
        let changed: Vec<(String, u64)> = self.link.query("reading the crawl's breakers", |c| {
            redis::cmd("ZRANGEBYSCORE")
                .arg(format!("{p}breaker-log"))
                .arg(format!("({read_to}"))
                .arg("+inf")
                .arg("WITHSCORES")
                .arg("LIMIT")
                .arg(0)
                .arg(BREAKERS_PER_POLL)
                .query(c)
        })?;
        if let Some(n) = changed.iter().map(|(_, n)| *n).max() {
            self.breakers_seen.read_to = n;
        }
        let hosts: Vec<&str> = changed.iter().map(|(h, _)| h.as_str()).collect();
        let shared = self.read_breakers(&hosts)?;
        Ok(hosts
            .iter()
            .zip(shared)
            .filter_map(|(host, b)| Some((host.to_string(), b?)))
            .filter(|(_, b)| b.by != self.worker)
            .collect())
    }

    /// See [`crate::engine::frontier::FrontierStore::shared_breakers`].
    pub(super) fn read_breakers(
        &mut self,
        hosts: &[&str],
    ) -> Result<Vec<Option<SharedBreaker>>, StoreError> {
        if hosts.is_empty() {
            return Ok(Vec::new());
        }
        let key = breakers_key(&self.prefix);
        let jsons: Vec<Option<String>> = self.link.query("reading the crawl's breakers", |c| {
            redis::cmd("HMGET").arg(&key).arg(hosts).query(c)
        })?;
        let clock = self.clock;
        Ok(hosts
            .iter()
            .zip(jsons)
            .map(|(host, json)| decode(host, json.as_deref()?, &clock))
            .collect())
    }

    /// See [`crate::engine::frontier::FrontierStore::claimed_breaker`].
    pub(super) fn take_claimed_breaker(&mut self, host: &str) -> Option<SharedBreaker> {
        let json = self.breakers_seen.claimed.remove(host)?;
        decode(host, &String::from_utf8_lossy(&json), &self.clock).filter(|b| b.by != self.worker)
    }

    /// The next `breaker_news` looks at once.
    #[cfg(test)]
    pub(super) fn look_at_breakers_now(&mut self) {
        self.breakers_seen.looks.forget();
    }
}

/// A stored breaker on this worker's clock; an unreadable one is logged and
/// skipped (the shared not-before still keeps the host's cooldown).
fn decode(host: &str, json: &str, clock: &Clock) -> Option<SharedBreaker> {
    let record: BreakerRecord = match serde_json::from_str(json) {
        Ok(record) => record,
        Err(e) => {
            tracing::warn!("unreadable breaker of {host} in Redis: {e}");
            return None;
        }
    };
    let instant = |score: &str| score.parse::<i128>().ok().map(|s| clock.instant(s));
    let open = match &record.open {
        None => None,
        Some(o) => Some(OpenBreaker {
            probe_at: instant(&o.probe_at)?,
            failing_since: instant(&o.failing_since)?,
            reopen_level: o.reopen_level,
            cooldown: Duration::from_millis(o.cooldown_ms),
            last_error: o.last_error.clone(),
        }),
    };
    Some(SharedBreaker {
        by: record.by,
        reason: record.reason,
        open,
    })
}
