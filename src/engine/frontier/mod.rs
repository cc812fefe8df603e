//! The URL frontier: front queues by priority, one back queue per host, and a
//! schedule of hosts by the time they may next be fetched. The queue itself
//! lives in the store; memory holds per-host counters and small head buffers.
//!
//! Protocol for the coordinator: `next_ready` hands out a [`Lease`]; exactly one
//! of `complete`, `release` or `requeue` ends it. A host created by the
//! frontier (new, or seen again after it went idle and was forgotten) starts
//! with the holds of `set_initial_holds` and is listed by `take_new_hosts`, so
//! robots.txt, pauses and overrides can be applied before any of its URLs is
//! handed out.
//!
//! The frontier also owns the seen set (see [`FrontierStore::claim_unseen`]).
//! [`FrontierStore`] is the interface the coordinator uses, so the frontier can
//! live elsewhere (a shared remote store); `Frontier` is its version in the local store.

mod api;
#[cfg(test)]
pub(crate) mod conformance;
mod entry;
mod host;
mod ops;
mod redis;
mod resume;
mod scan;
mod schedule;
mod seen;

use std::collections::HashMap;

use tokio::time::Instant;

pub use self::redis::{
    alert_decisions_key, alert_raisers_key, breakers_key, key_prefix, machine_name, records_at,
    refuse_worker_dir, shared_breaker_state, shared_crawl, validate_crawl_name, wall_ms, worker_id,
    ClusterTarget, Heartbeat, RedisCredentials, RedisFrontier, RedisReader, RedisUrl,
    SharedBreakerState, DEFAULT_HOST_AFFINITY, DEFAULT_LEASE_TTL, PASSWORD_VAR, USER_VAR,
};
#[cfg(test)]
use api::FrontierCounts;
pub use api::{
    AlertDecision, AlertNews, Completion, FrontierStore, HostQueueView, ScanCursor, ScanPage,
    ScanRange, SharedAlert, SharedBreaker,
};
/// Decodes a stored queue or parked entry (the page inspector reads parked URLs).
pub(crate) use entry::decode as decode_entry;
#[cfg(test)]
pub(crate) use entry::encode as encode_entry;
pub use entry::{FrontierEntry, Hold, Lease};
pub use scan::FrontierReader;
#[cfg(test)]
use schedule::LEVEL_WEIGHTS;

use crate::engine::control::{ByHost, HostKey};
use crate::engine::store::{Store, StoreError};
use crate::engine::telemetry::{HostActivity, PRIORITY_LEVELS};
use entry::level_of;
use host::HostQueue;
use schedule::{HostId, Schedule, Slot};
use seen::SeenSet;

/// Seed of the level selection; fixed so runs are reproducible.
const DEFAULT_SEED: u64 = 0x6372_6177_6c64_6563;
/// Rows per store scan during bulk operations.
const SCAN_CHUNK: usize = 1024;

/// The URL frontier and seen set kept in the local [`Store`].
pub struct Frontier {
    store: Store,
    seen: SeenSet,
    hosts: Vec<Option<HostQueue>>,
    free_ids: Vec<HostId>,
    ids: ByHost<HostId>,
    schedule: Schedule,
    next_seq: u64,
    queued: u64,
    levels: [u64; PRIORITY_LEVELS],
    in_flight: u64,
    parked: HashMap<u64, u64>,
    parked_by_host: ByHost<u64>,
    default_max_in_flight: usize,
    initial_holds: u8,
    new_hosts: Vec<HostKey>,
    last_now: Option<Instant>,
}

impl Frontier {
    /// Opens the frontier stored in `store`. Everything still queued is queued
    /// again, including URLs that were in flight when the last run stopped,
    /// and the seen set's Bloom filter is filled from the stored seen marks.
    pub fn open(store: &Store) -> Result<Self, StoreError> {
        let mut frontier = Frontier {
            store: store.clone(),
            seen: SeenSet::load(store)?,
            hosts: Vec::new(),
            free_ids: Vec::new(),
            ids: ByHost::default(),
            schedule: Schedule::new(DEFAULT_SEED),
            next_seq: store.load_seq()?,
            queued: 0,
            levels: [0; PRIORITY_LEVELS],
            in_flight: 0,
            parked: HashMap::new(),
            parked_by_host: ByHost::default(),
            default_max_in_flight: 1,
            initial_holds: 0,
            new_hosts: Vec::new(),
            last_now: None,
        };
        frontier.rebuild()?;
        Ok(frontier)
    }

    /// URLs queued and not in flight.
    pub fn len(&self) -> u64 {
        self.queued
    }

    /// URLs handed out by `next_ready` and not yet completed or released.
    pub fn in_flight(&self) -> u64 {
        self.in_flight
    }

    /// Queued URLs per priority level (the front queues).
    pub fn front_queue_depths(&self) -> [u64; PRIORITY_LEVELS] {
        self.levels
    }

    /// URLs of `host` queued and not in flight.
    pub fn host_queued(&self, host: &str) -> u64 {
        self.host(host).map_or(0, |h| h.queued)
    }

    /// The next `n` URLs the host's queue will hand out (from its buffer).
    pub fn host_head(&self, host: &str, n: usize) -> Vec<String> {
        self.host(host).map_or_else(Vec::new, |h| h.head_urls(n))
    }

    /// Hosts the frontier has created state for since the last call (new, or
    /// seen again after going idle); they started with the initial holds.
    pub fn take_new_hosts(&mut self) -> Vec<HostKey> {
        std::mem::take(&mut self.new_hosts)
    }

    /// Holds every newly seen host starts with (e.g. `Hold::Robots`).
    pub fn set_initial_holds(&mut self, holds: &[Hold]) {
        self.initial_holds = holds.iter().fold(0, |acc, h| acc | h.bit());
    }

    /// Requests in flight per host unless `set_max_in_flight` said otherwise.
    pub fn set_default_max_in_flight(&mut self, max: usize) {
        let old = std::mem::replace(&mut self.default_max_in_flight, max);
        let ids: Vec<HostId> = self.ids.values().copied().collect();
        for id in ids {
            let host = self.host_mut(id);
            if host.max_in_flight == old {
                host.max_in_flight = max;
                self.reschedule(id);
            }
        }
    }

    /// The host is not fetched before `at` (politeness).
    pub fn set_not_before(&mut self, host: &str, at: Instant) {
        let id = self.host_id(host);
        let h = self.host_mut(id);
        h.not_before = Some(at);
        if let Slot::Ready(..) = h.slot {
            let slot = std::mem::replace(&mut h.slot, Slot::None);
            self.schedule.remove(id, slot);
        }
        self.reschedule(id);
    }

    /// Sets or clears one reason not to schedule the host.
    pub fn set_hold(&mut self, host: &str, hold: Hold, on: bool) {
        let id = self.host_id(host);
        let h = self.host_mut(id);
        if on {
            h.holds |= hold.bit();
        } else {
            h.holds &= !hold.bit();
        }
        self.reschedule(id);
        self.maybe_forget(id);
    }

    /// Requests the host may have in flight at once.
    pub fn set_max_in_flight(&mut self, host: &str, max: usize) {
        let id = self.host_id(host);
        self.host_mut(id).max_in_flight = max;
        self.reschedule(id);
        self.maybe_forget(id);
    }

    /// The next URL to fetch (tests: `FrontierStore::next_ready` without the
    /// `Result`).
    #[cfg(test)]
    pub fn next_ready(&mut self, now: Instant) -> Option<Lease> {
        self.try_next_ready(now)
            .expect("the test store does not fail")
    }

    /// When a host next becomes ready (now, if one is ready already); `None`
    /// if no host with work can become ready by time alone.
    pub fn next_wakeup(&self) -> Option<Instant> {
        self.schedule
            .next_wakeup(self.last_now.unwrap_or_else(Instant::now))
    }

    /// What the host is doing as of `now`, as the front ends show it.
    pub fn host_activity(&self, host: &str, now: Instant) -> HostActivity {
        let Some(h) = self.host(host) else {
            return HostActivity::Idle;
        };
        if h.holds & Hold::Finished.bit() != 0 {
            HostActivity::Finished
        } else if h.holds & Hold::Paused.bit() != 0 {
            HostActivity::PausedByOperator
        } else if h.holds & Hold::Breaker.bit() != 0 {
            HostActivity::BreakerOpen
        } else if h.holds & Hold::Robots.bit() != 0 {
            HostActivity::RobotsPending
        } else if h.queued == 0 {
            if h.in_flight() > 0 {
                HostActivity::Busy
            } else {
                HostActivity::Idle
            }
        } else if h.in_flight() >= h.max_in_flight {
            HostActivity::Busy
        } else if h.not_before.is_some_and(|t| t > now) {
            HostActivity::Waiting
        } else {
            HostActivity::Ready
        }
    }

    /// URLs of `host` parked under any alert.
    pub fn host_parked(&self, host: &str) -> u64 {
        self.parked_by_host.get(host).copied().unwrap_or(0)
    }

    // ---- internals ----

    /// Takes the head of the host the schedule picks and counts it in flight;
    /// the caller loads the host's next head and reschedules it.
    fn take_next(&mut self, now: Instant) -> Option<(HostId, Lease)> {
        self.last_now = Some(now);
        for (id, since, tick) in self.schedule.due(now) {
            let host = self.hosts[id as usize]
                .as_mut()
                .expect("scheduled host exists");
            let in_flight = host.in_flight();
            host.slot = match host.head_level() {
                Some(level) => self
                    .schedule
                    .insert_ready(id, level, in_flight, since, tick),
                None => Slot::None,
            };
        }
        loop {
            let id = self.schedule.pick()?;
            let host = self.host_mut(id);
            host.slot = Slot::None;
            let Some((key, entry)) = host.take_head() else {
                self.reschedule(id);
                continue;
            };
            self.queued = self.queued.saturating_sub(1);
            let level = &mut self.levels[level_of(entry.priority)];
            *level = level.saturating_sub(1);
            self.in_flight += 1;
            return Some((id, Lease { entry, key }));
        }
    }

    fn host(&self, name: &str) -> Option<&HostQueue> {
        let id = *self.ids.get(name)?;
        self.hosts[id as usize].as_ref()
    }

    fn host_mut(&mut self, id: HostId) -> &mut HostQueue {
        self.hosts[id as usize].as_mut().expect("host id is live")
    }

    fn host_id(&mut self, name: &str) -> HostId {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        let host = HostQueue::new(
            name.to_string(),
            self.default_max_in_flight,
            self.initial_holds,
        );
        let id = match self.free_ids.pop() {
            Some(id) => {
                self.hosts[id as usize] = Some(host);
                id
            }
            None => {
                self.hosts.push(Some(host));
                (self.hosts.len() - 1) as HostId
            }
        };
        self.ids.insert(name.to_string(), id);
        self.new_hosts.push(name.to_string());
        id
    }

    /// Refills the host's buffer if needed, keeping the totals in step when the
    /// store turned out to hold fewer entries than counted.
    fn ensure_head(&mut self, id: HostId) -> Result<(), StoreError> {
        let host = self.hosts[id as usize].as_mut().expect("host id is live");
        let before = host.per_level;
        let result = host.ensure_head(&self.store);
        for (level, count) in before.iter().enumerate() {
            let lost = count - host.per_level[level].min(*count);
            self.levels[level] = self.levels[level].saturating_sub(lost);
            self.queued = self.queued.saturating_sub(lost);
        }
        result
    }

    /// Puts the host where it belongs in the schedule after any change.
    fn reschedule(&mut self, id: HostId) {
        let host = self.hosts[id as usize].as_mut().expect("host id is live");
        let eligible = host.holds == 0 && host.in_flight() < host.max_in_flight;
        let head = host.head_level().filter(|_| eligible);
        host.slot = match (host.slot, head) {
            (slot, None) => {
                self.schedule.remove(id, slot);
                Slot::None
            }
            (Slot::Ready(level, in_flight, since, tick), Some(head))
                if level != head || in_flight != host.in_flight() =>
            {
                self.schedule.remove(id, host.slot);
                self.schedule
                    .insert_ready(id, head, host.in_flight(), since, tick)
            }
            (slot @ Slot::Ready(..), Some(_)) => slot,
            (Slot::Waiting(at, tick), Some(_)) if at == host.not_before => Slot::Waiting(at, tick),
            (slot, Some(_)) => {
                self.schedule.remove(id, slot);
                self.schedule.insert_waiting(id, host.not_before)
            }
        };
    }

    /// Drops the state of a host that has nothing queued, nothing in flight and
    /// nothing the coordinator set, so memory follows the hosts with work.
    fn maybe_forget(&mut self, id: HostId) {
        let host = self.hosts[id as usize].as_ref().expect("host id is live");
        let time_passed = match (host.not_before, self.last_now) {
            (None, _) => true,
            (Some(t), Some(now)) => t <= now,
            (Some(_), None) => false,
        };
        if host.queued == 0
            && !host.has_leases()
            && host.holds == 0
            && host.max_in_flight == self.default_max_in_flight
            && time_passed
            && !self.parked_by_host.contains_key(&host.name)
        {
            self.schedule.remove(id, host.slot);
            self.ids.remove(&host.name);
            self.hosts[id as usize] = None;
            self.free_ids.push(id);
        }
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_ops;
