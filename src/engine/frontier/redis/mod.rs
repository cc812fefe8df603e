//! The frontier shared by several workers through Redis: one crawl, many
//! processes. All state lives under `crawldeck:{crawl}:` (see `scripts`);
//! each worker keeps only its page records (in its own local store) and what
//! it knows of the hosts it holds.
//!
//! A host is fetched by one worker at a time: the worker holds the host's
//! lease (a key with a TTL, renewed while held). The URLs it takes are
//! recorded under the host, so when a lease expires (a dead worker) any
//! worker's reaper puts them back in the queue. A worker gives a host back
//! as soon as nothing of it is in flight, with its not-before time in Redis,
//! so the next worker waits the same politeness delay. A host new to a
//! worker is announced by `take_new_hosts` while the worker holds its
//! lease, and its robots.txt settled before any page (the answer shared
//! through `robots::shared`).
//!
//! A take pops the host's head and reads the next few URLs of its level
//! (`TAKE_BATCH`): the leaseholder serves those without a round trip. They
//! stay queued in Redis until their lease ends, so a crash or a dropped
//! batch loses nothing, and the host competes with the others again once
//! its batch is served.

mod alerts;
mod breakers;
mod bulk;
mod conn;
mod leases;
mod meta;
mod outage;
mod reader;
mod redis_url;
mod scripts;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_affinity;
#[cfg(test)]
mod tests_alerts;
#[cfg(test)]
mod tests_batch;
#[cfg(test)]
mod tests_breakers;
#[cfg(test)]
mod tests_outage;
mod views;

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::Path;
use std::time::Duration;

use tokio::time::Instant;

pub use breakers::{breakers_key, shared_breaker_state, SharedBreakerState};
pub use conn::{key_prefix, refuse_worker_dir, shared_crawl, validate_crawl_name, worker_id};
use conn::{Clock, Link};
pub use meta::{
    alert_decisions_key, alert_raisers_key, machine_name, records_at, wall_ms, Heartbeat,
};
pub use reader::RedisReader;
pub use redis_url::{RedisCredentials, RedisUrl, PASSWORD_VAR, USER_VAR};
use scripts::Scripts;

use super::api::FrontierCounts;
use super::entry::{decode, encode, level_of};
use super::{FrontierEntry, Hold};
use crate::engine::control::HostKey;
use crate::engine::dedup::url_fingerprint;
use crate::engine::store::{Store, StoreError};

/// The not-before score of a host that never had one (as in the scripts).
const NEVER: i128 = -1_000_000_000_000_000_000;
/// How long a host lease lasts without renewal.
pub const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(10);
/// Hold bit of a host whose maximum in flight is 0 (beyond `Hold`'s bits).
const CLOSED: u8 = 16;
/// Hold bits every worker obeys: the operator's pause and a maximum of 0.
/// robots.txt, breakers and giving up stay per worker, so a worker that dies
/// holding one cannot leave a host stuck for the others.
const SHARED_HOLDS: u8 = 1 | CLOSED;
/// URLs a take reads of a host's level: a host is served up to this many
/// times in a row before it competes with the others again.
const TAKE_BATCH: usize = 8;
/// How long a due host waits for the worker that last claimed it before
/// another worker may take it (unless its owner holds more than an even
/// share of the hosts): what a worker learns of a host (trap evidence,
/// breaker failures, response times, connections) stays with it.
pub const DEFAULT_HOST_AFFINITY: Duration = Duration::from_secs(1);
/// Hosts tried per `next_ready` before giving the loop back.
const CLAIM_TRIES: usize = 16;
/// How often a worker polls when only other workers hold hosts with work.
const CLUSTER_POLL: Duration = Duration::from_millis(200);

/// Where a shared frontier lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterTarget {
    /// The server, with its credentials and TLS trust.
    pub url: RedisUrl,
    /// The crawl's name; its keys are `crawldeck:{name}:…`.
    pub crawl: String,
    /// Host lease lifetime without renewal.
    pub lease_ttl: Duration,
    /// How long a due host waits for the worker that last claimed it
    /// before another worker may take it (see `DEFAULT_HOST_AFFINITY`).
    pub host_affinity: Duration,
}

/// What this worker knows of one host.
#[derive(Debug, Default)]
struct Local {
    /// This worker's own holds: robots.txt, breaker, given up.
    holds: u8,
    /// Leases of the host's URLs this worker has out.
    in_flight: usize,
    /// Those of them answered: only their end is to come, so they no
    /// longer count against the host's requests at once.
    answered: HashSet<Vec<u8>>,
    max_in_flight: Option<usize>,
    not_before: Option<Instant>,
    /// The level of the host's head after its batch (while leased), from
    /// the last take.
    head_level: Option<usize>,
    /// The URLs read with the last take (member, level): still queued in
    /// Redis, served without a round trip while the lease lasts.
    batch: VecDeque<(Vec<u8>, usize)>,
    /// Members served from `batch` whose lease has not ended (still queued
    /// in Redis).
    batch_out: HashSet<Vec<u8>>,
    /// A not-before (score) set while the host's one lease was out: written
    /// with that lease's end, saving a script call per page.
    pending_nb: Option<String>,
}

impl Local {
    /// Requests of the host out now: leases not answered yet.
    fn requests(&self) -> usize {
        self.in_flight.saturating_sub(self.answered.len())
    }

    /// Forgets the batch; its first URL is the host's head again.
    fn drop_batch(&mut self) {
        if let Some(&(_, level)) = self.batch.front() {
            self.head_level = Some(level);
        }
        self.batch.clear();
    }
}

/// The Redis-backed [`super::FrontierStore`].
pub struct RedisFrontier {
    link: Link,
    /// The server's URL, for readers with connections of their own.
    url: RedisUrl,
    scripts: Scripts,
    prefix: String,
    worker: String,
    ttl: Duration,
    /// How long others' due hosts wait for their owners (see `due_for`).
    affinity: Duration,
    clock: Clock,
    store: Store,
    hosts: HashMap<HostKey, Local>,
    /// The hosts whose lease this worker holds (of `hosts`): what the take
    /// path walks, however many hosts the crawl has.
    leased: HashSet<HostKey>,
    default_max_in_flight: usize,
    initial_holds: u8,
    new_hosts: Vec<HostKey>,
    last_now: Option<Instant>,
    last_upkeep: Option<std::time::Instant>,
    rng: fastrand::Rng,
    /// Pages completed by this worker, and `(wall ms, pages)` at the last heartbeat.
    pages: u64,
    last_beat: (u64, u64),
    /// The heartbeat is stale after three of these (the lease TTL; zero at exit).
    ttl_for_beats: Duration,
    /// Where this worker's page records are (`MACHINE:DATA_DIR`), for its heartbeat.
    records: String,
    /// Leases this worker has out (entry → how many times), so ending one
    /// twice is caught here whatever Redis did with the URL meanwhile.
    out: HashMap<Vec<u8>, u32>,
    /// Writes waiting for the server to answer again (see `outage`).
    held: VecDeque<outage::Write>,
    /// The counts last read, shown while the server is out of reach.
    last_counts: FrontierCounts,
    /// What this worker has seen of the crawl's trap alerts.
    alerts_seen: alerts::AlertsSeen,
    /// What this worker has read of the crawl's breaker changes.
    breakers_seen: breakers::BreakersSeen,
}

impl RedisFrontier {
    /// Joins the crawl `target.crawl`: page records go to `store`, the worker's
    /// name is kept in `data_dir`, and URLs this worker had in flight when it
    /// last stopped go back to their queues.
    pub fn open(
        target: &ClusterTarget,
        data_dir: &Path,
        store: &Store,
    ) -> Result<Self, StoreError> {
        validate_crawl_name(&target.crawl).map_err(|message| StoreError::Remote {
            op: "opening the crawl",
            message,
        })?;
        let mut link = Link::open(&target.url)?;
        link.check_version()?;
        let prefix = key_prefix(&target.crawl);
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i128);
        let epoch_key = format!("{prefix}epoch");
        let epoch: String = link.query("reading the crawl's clock", |c| {
            redis::pipe()
                .cmd("SET")
                .arg(&epoch_key)
                .arg(now_ms.to_string())
                .arg("NX")
                .ignore()
                .cmd("GET")
                .arg(&epoch_key)
                .query::<(String,)>(c)
                .map(|(e,)| e)
        })?;
        let epoch_ms = epoch.parse::<i128>().unwrap_or(now_ms);
        let mut frontier = RedisFrontier {
            link,
            url: target.url.clone(),
            scripts: Scripts::new(),
            prefix,
            worker: conn::worker_id(data_dir)?,
            ttl: target.lease_ttl,
            affinity: target.host_affinity,
            clock: Clock::new(epoch_ms),
            store: store.clone(),
            hosts: HashMap::new(),
            leased: HashSet::new(),
            default_max_in_flight: 1,
            initial_holds: 0,
            new_hosts: Vec::new(),
            last_now: None,
            last_upkeep: None,
            rng: fastrand::Rng::with_seed(super::DEFAULT_SEED),
            pages: 0,
            last_beat: (0, 0),
            ttl_for_beats: target.lease_ttl,
            records: meta::records_at(data_dir),
            out: HashMap::new(),
            held: VecDeque::new(),
            last_counts: FrontierCounts::default(),
            alerts_seen: alerts::AlertsSeen::default(),
            breakers_seen: breakers::BreakersSeen::default(),
        };
        conn::record_crawl(data_dir, &target.url, &target.crawl)?;
        // Lease ends held when the last run stopped go before its leases are reaped.
        frontier.load_held()?;
        frontier.replay_held()?;
        frontier.reap(true)?;
        Ok(frontier)
    }

    /// This worker's name in the cluster.
    pub fn worker(&self) -> &str {
        &self.worker
    }

    fn ttl_ms(&self) -> String {
        self.ttl.as_millis().to_string()
    }

    /// Requeues the in-flight URLs of expired leases (`own`: and of this
    /// worker's leases from an earlier run).
    fn reap(&mut self, own: bool) -> Result<u64, StoreError> {
        let mut inv = self.scripts.reap.prepare_invoke();
        inv.arg(&self.prefix)
            .arg(if own { self.worker.as_str() } else { "" });
        let out = self.link.run("requeueing expired leases", &inv)?;
        Ok(out
            .first()
            .and_then(|n| std::str::from_utf8(n).ok()?.parse().ok())
            .unwrap_or(0))
    }

    /// Renews held leases and reaps expired ones, at most every third of the TTL.
    fn upkeep(&mut self) -> Result<(), StoreError> {
        let due = self.last_upkeep.is_none_or(|t| t.elapsed() >= self.ttl / 3);
        if !due {
            return Ok(());
        }
        self.last_upkeep = Some(std::time::Instant::now());
        let held: Vec<HostKey> = self.leased.iter().cloned().collect();
        if !held.is_empty() {
            let mut inv = self.scripts.renew.prepare_invoke();
            inv.arg(&self.prefix).arg(&self.worker).arg(self.ttl_ms());
            for host in &held {
                inv.arg(host);
            }
            for lost in self.link.run("renewing host leases", &inv)? {
                let host = String::from_utf8_lossy(&lost).into_owned();
                tracing::warn!("lease of {host} expired while held; another worker may fetch it");
                self.forget_leases(vec![host]);
            }
        }
        self.reap(false)?;
        self.beat()
    }

    /// Held hosts with nothing in flight, no robots.txt to settle and no
    /// batch they may serve: given back so any worker may take them when
    /// they are due.
    fn idle_hosts(&self) -> Vec<HostKey> {
        self.held_hosts()
            .filter(|(_, h)| {
                h.in_flight == 0
                    && h.holds & Hold::Robots.bit() == 0
                    && (h.batch.is_empty() || h.holds != 0)
            })
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// The hosts whose lease this worker holds, with what it knows of each.
    fn held_hosts(&self) -> impl Iterator<Item = (&HostKey, &Local)> {
        self.leased
            .iter()
            .filter_map(|k| Some((k, self.hosts.get(k)?)))
    }

    /// Notes hosts whose lease this worker no longer holds.
    fn forget_leases(&mut self, hosts: Vec<HostKey>) {
        for host in hosts {
            self.leased.remove(&host);
            if let Some(h) = self.hosts.get_mut(&host) {
                h.head_level = None;
                h.batch.clear();
            }
        }
    }

    /// Gives back the leases of idle hosts (see `idle_hosts`).
    fn release_idle_hosts(&mut self) -> Result<(), StoreError> {
        let idle = self.idle_hosts();
        if idle.is_empty() {
            return Ok(());
        }
        let mut inv = self.scripts.release_hosts.prepare_invoke();
        inv.arg(&self.prefix).arg(&self.worker);
        for host in &idle {
            inv.arg(host);
        }
        self.link.run("giving hosts back", &inv)?;
        self.forget_leases(idle);
        Ok(())
    }
}

impl Drop for RedisFrontier {
    /// Gives back the hosts with nothing in flight so the other workers need
    /// not wait for their leases to expire; leases of URLs still in flight
    /// stay, as after a crash (this worker's next start, or the reaper, requeues them).
    fn drop(&mut self) {
        for h in self.hosts.values_mut() {
            h.batch.clear();
            if h.in_flight == 0 {
                h.holds &= !Hold::Robots.bit();
            }
        }
        // A last heartbeat that is stale at once: this worker is gone.
        self.ttl_for_beats = Duration::ZERO;
        if !self.held.is_empty() {
            tracing::warn!(
                "{} write(s) to Redis could not be made before exit; they are kept \
                 in the data directory and made at this worker's next start",
                self.held.len()
            );
        }
        if let Err(e) = self.release_idle_hosts().and_then(|()| self.beat()) {
            tracing::warn!(
                "could not give hosts back at exit ({e}); their leases expire in {:?}",
                self.ttl
            );
        }
    }
}

/// The level encoded in a queue score (`level * 2^40 + sequence`).
fn level_from_score(score: i128) -> usize {
    level_of((score >> 40).clamp(0, u8::MAX as i128) as u8)
}

/// Appends `member level fingerprint host` for each entry.
fn push_args(inv: &mut redis::ScriptInvocation<'_>, entries: &[FrontierEntry]) {
    for e in entries {
        inv.arg(encode(e))
            .arg(level_of(e.priority))
            .arg(url_fingerprint(&e.url))
            .arg(&e.host);
    }
}
