//! Which host goes next: hosts waiting for their politeness time in one
//! ordered set, ready hosts in one ordered set per priority level (fewest
//! requests in flight first, then oldest), and a weighted choice among the
//! levels that have a ready host.

use std::collections::BTreeSet;

use tokio::time::Instant;

use crate::engine::telemetry::PRIORITY_LEVELS;

/// Relative weights of the priority levels (seed notes: 40/30/20/7/3 %): among
/// the levels with a ready host, `next_ready` picks one with these odds.
pub const LEVEL_WEIGHTS: [u32; PRIORITY_LEVELS] = [40, 30, 20, 7, 3];

pub(super) type HostId = u32;

/// Where a host currently sits in the schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Slot {
    /// Not schedulable: held, busy or empty.
    None,
    /// Schedulable once `not_before` (None: at once) has passed.
    Waiting(Option<Instant>, u64),
    /// Schedulable now at a level, with that many requests in flight;
    /// `since` orders hosts by how long they have waited.
    Ready(usize, usize, Instant, u64),
}

/// A ready host's place in its level: requests in flight, ready since, tick.
type ReadyKey = (usize, Instant, u64, HostId);

pub(super) struct Schedule {
    waiting: BTreeSet<(Option<Instant>, u64, HostId)>,
    /// A host with fewer requests in flight goes first, so a host gets a
    /// second connection only when no idle host is ready: load spreads over
    /// hosts, and a crawl holds about one connection a host.
    ready: [BTreeSet<ReadyKey>; PRIORITY_LEVELS],
    tick: u64,
    rng: fastrand::Rng,
}

impl Schedule {
    pub fn new(seed: u64) -> Self {
        Schedule {
            waiting: BTreeSet::new(),
            ready: Default::default(),
            tick: 0,
            rng: fastrand::Rng::with_seed(seed),
        }
    }

    fn next_tick(&mut self) -> u64 {
        self.tick += 1;
        self.tick
    }

    pub fn remove(&mut self, id: HostId, slot: Slot) {
        match slot {
            Slot::None => {}
            Slot::Waiting(at, tick) => {
                self.waiting.remove(&(at, tick, id));
            }
            Slot::Ready(level, in_flight, since, tick) => {
                self.ready[level].remove(&(in_flight, since, tick, id));
            }
        }
    }

    pub fn insert_waiting(&mut self, id: HostId, at: Option<Instant>) -> Slot {
        let tick = self.next_tick();
        self.waiting.insert((at, tick, id));
        Slot::Waiting(at, tick)
    }

    pub fn insert_ready(
        &mut self,
        id: HostId,
        level: usize,
        in_flight: usize,
        since: Instant,
        tick: u64,
    ) -> Slot {
        self.ready[level].insert((in_flight, since, tick, id));
        Slot::Ready(level, in_flight, since, tick)
    }

    /// Hosts whose time has come, with the time they became ready. The caller
    /// files each under its head level with `insert_ready`.
    pub fn due(&mut self, now: Instant) -> Vec<(HostId, Instant, u64)> {
        let mut due = Vec::new();
        while let Some(&(at, tick, id)) = self.waiting.first() {
            if at.is_some_and(|t| t > now) {
                break;
            }
            self.waiting.pop_first();
            due.push((id, at.unwrap_or(now).min(now), tick));
        }
        due
    }

    /// Picks a level by weight and takes that level's least busy,
    /// longest-waiting host out of the ready set. Levels with an idle host
    /// (none in flight) come before levels whose ready hosts are all busy:
    /// a host's second connection waits until no idle host is ready at any
    /// level.
    pub fn pick(&mut self) -> Option<HostId> {
        let idle = |set: &BTreeSet<ReadyKey>| set.first().is_some_and(|k| k.0 == 0);
        let any = |set: &BTreeSet<ReadyKey>| !set.is_empty();
        let level = self.pick_level(idle).or_else(|| self.pick_level(any))?;
        self.ready[level].pop_first().map(|(_, _, _, id)| id)
    }

    /// A level chosen by weight among those `eligible` says yes to.
    fn pick_level(&mut self, eligible: impl Fn(&BTreeSet<ReadyKey>) -> bool) -> Option<usize> {
        let total: u32 = (0..PRIORITY_LEVELS)
            .filter(|&l| eligible(&self.ready[l]))
            .map(|l| LEVEL_WEIGHTS[l])
            .sum();
        if total == 0 {
            return None;
        }
        let mut roll = self.rng.u32(0..total);
        for (level, weight) in LEVEL_WEIGHTS.into_iter().enumerate() {
            if !eligible(&self.ready[level]) {
                continue;
            }
            if roll < weight {
                return Some(level);
            }
            roll -= weight;
        }
        None
    }

    /// Earliest time a waiting host becomes ready; a ready host means "now".
    pub fn next_wakeup(&self, fallback_now: Instant) -> Option<Instant> {
        let ready = self
            .ready
            .iter()
            .filter_map(|set| set.first().map(|&(_, since, _, _)| since))
            .min();
        let waiting = self
            .waiting
            .first()
            .map(|&(at, _, _)| at.unwrap_or(fallback_now));
        match (ready, waiting) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}
