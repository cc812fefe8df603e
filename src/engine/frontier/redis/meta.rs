//! What workers of one crawl share besides the frontier: the seeds (scope
//! and allowed address classes derive from them, so a worker that joins
//! without seeds needs them), the trap alerts' numbers and each worker's
//! heartbeat.

use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::RedisFrontier;
use crate::engine::store::StoreError;

/// What a worker says of itself, in the hash `beats` (worker → JSON), at
/// every upkeep (a third of the lease TTL).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Heartbeat {
    /// The worker's name (its data directory keeps it).
    pub worker: String,
    /// crawldeck's version.
    pub version: String,
    /// Pages this worker completed since it started.
    pub pages: u64,
    /// Pages per second since the previous heartbeat.
    pub pages_per_s: f64,
    /// Hosts whose lease it holds.
    pub hosts_held: u64,
    /// URLs it has in flight.
    pub in_flight: u64,
    /// Wall clock of the heartbeat, ms since the Unix epoch.
    pub at_ms: u64,
    /// The worker counts as gone when no heartbeat came for this long.
    pub stale_after_ms: u64,
    /// Where its page records are, `MACHINE:DATA_DIR` (named when a read
    /// needs a worker that is gone).
    #[serde(default)]
    pub records: String,
    /// Its process id (0 from a worker of an earlier version).
    #[serde(default)]
    pub pid: u32,
    /// The crawl is over here: the worker only serves its records
    /// (`cluster::serving`) until it is stopped.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub serving: bool,
}

/// This machine's name, as workers and senders of commands give it.
pub fn machine_name() -> String {
    rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned()
}

/// Where a worker's page records are, as its heartbeat names them:
/// `MACHINE:DATA_DIR`, the directory made absolute.
pub fn records_at(data_dir: &std::path::Path) -> String {
    let dir = std::path::absolute(data_dir).unwrap_or_else(|_| data_dir.to_path_buf());
    format!("{}:{}", machine_name(), dir.display())
}

/// The hash of alert number → the worker that raised it.
pub fn alert_raisers_key(prefix: &str) -> String {
    format!("{prefix}alert-raisers")
}

/// The hash of alert number → its decision (JSON of `AlertDecision`).
pub fn alert_decisions_key(prefix: &str) -> String {
    format!("{prefix}alert-decisions")
}

impl Heartbeat {
    /// Writes this heartbeat as its worker's, in the crawl under `prefix`.
    pub fn publish(
        &self,
        con: &mut impl ::redis::ConnectionLike,
        prefix: &str,
    ) -> ::redis::RedisResult<()> {
        let json = serde_json::to_string(self).expect("a heartbeat always encodes as JSON");
        ::redis::cmd("HSET")
            .arg(format!("{prefix}beats"))
            .arg(&self.worker)
            .arg(json)
            .query(con)
    }
}

/// Milliseconds since the Unix epoch, the clock heartbeats are stamped with.
pub fn wall_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl RedisFrontier {
    /// Adds `mine` to the crawl's seeds and returns all of them, sorted.
    pub fn share_seeds(&mut self, mine: &[String]) -> Result<Vec<String>, StoreError> {
        let key = format!("{}seeds", self.prefix);
        let mut all: Vec<String> = self.link.query("sharing the seeds", |c| {
            let mut pipe = ::redis::pipe();
            if !mine.is_empty() {
                pipe.cmd("SADD").arg(&key).arg(mine).ignore();
            }
            pipe.cmd("SMEMBERS").arg(&key);
            pipe.query::<(Vec<String>,)>(c).map(|(all,)| all)
        })?;
        all.sort();
        Ok(all)
    }

    /// Publishes this worker's heartbeat.
    pub(super) fn beat(&mut self) -> Result<(), StoreError> {
        let at_ms = wall_ms();
        let (last_ms, last_pages) = self.last_beat;
        let seconds = at_ms.saturating_sub(last_ms) as f64 / 1000.0;
        let pages_per_s = if last_ms == 0 || seconds <= 0.0 {
            0.0
        } else {
            self.pages.saturating_sub(last_pages) as f64 / seconds
        };
        self.last_beat = (at_ms, self.pages);
        let beat = Heartbeat {
            worker: self.worker.clone(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            pages: self.pages,
            pages_per_s,
            hosts_held: self.leased.len() as u64,
            in_flight: self.hosts.values().map(|h| h.in_flight as u64).sum(),
            at_ms,
            stale_after_ms: 3 * self.ttl_for_beats.as_millis() as u64,
            records: self.records.clone(),
            pid: std::process::id(),
            serving: false,
        };
        let prefix = self.prefix.clone();
        self.link
            .query("publishing the heartbeat", |c| beat.publish(c, &prefix))
    }
}

/// When this worker last looked at one of the crawl's shared records (its
/// alerts, its breakers): the coordinator asks on every tick, a look goes
/// to Redis at most once per period.
#[derive(Debug, Default)]
pub(super) struct Looks {
    last: Option<std::time::Instant>,
}

impl Looks {
    /// Whether a look is due now and Redis is `reachable`; if so it is taken.
    pub(super) fn take(&mut self, every: std::time::Duration, reachable: bool) -> bool {
        let due = self.last.is_none_or(|t| t.elapsed() >= every);
        if due && reachable {
            self.last = Some(std::time::Instant::now());
        }
        due && reachable
    }

    /// The next look goes to Redis whatever the time.
    #[cfg(test)]
    pub(super) fn forget(&mut self) {
        self.last = None;
    }
}
