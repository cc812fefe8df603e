//! The workers' snapshots merged into one, as the TUI shows a single crawl:
//! counters and rates summed, queue depths from the shared frontier, hosts
//! merged by key with the worker holding each, alerts once per crawl-wide
//! number (every worker joins an alert another raised: their evidence
//! merged) with the raiser named, rules once per pattern (numbered anew:
//! each worker numbers its own), each host's breaker as the crawl shares it.

use std::collections::{BTreeMap, HashMap};

use super::status::{not_fetching, WorkerRow};
use crate::engine::cluster_view::{ClusterView, WorkerView};
use crate::engine::control::{HostKey, RuleSpec};
use crate::engine::telemetry::{
    AlertStatus, BreakerPhase, CrawlState, HostActivity, HostView, RuleView, Snapshot, TrapAlert,
};
use crate::engine::SharedBreakerState;

/// Hosts the merged snapshot lists, busiest first (as one engine's does):
/// room for every worker's busiest and the rows the views' windows show.
const MERGED_HOSTS: usize = 20_000;
/// Workers remembered after they end (their pages still count).
const REMEMBERED_WORKERS: usize = 256;

/// One reading of the shared crawl from Redis.
#[derive(Debug, Clone, Default)]
pub struct ClusterRead {
    /// The crawl's name.
    pub crawl: String,
    /// Where it is read from, shown where one crawl shows its data directory.
    pub source: String,
    /// Every worker with a heartbeat.
    pub workers: Vec<WorkerRow>,
    /// The snapshots workers published, by worker.
    pub snapshots: Vec<(String, Snapshot)>,
    /// Host → the worker holding its lease.
    pub held: HashMap<HostKey, String>,
    /// URLs queued in the shared frontier.
    pub queued: u64,
    /// URLs parked (quarantined) across the crawl, every worker's.
    pub parked: u64,
    /// URLs the shared frontier records in flight. Those a worker serves
    /// from a take's batch stay queued there until done.
    pub in_flight: u64,
    /// Hosts with queued or leased URLs.
    pub hosts: u64,
    /// Hosts nobody holds with URLs queued: may be fetched now, and waiting
    /// for their next allowed time (the shared schedule).
    pub unheld_ready: u64,
    pub unheld_waiting: u64,
    /// Alert number → the worker that raised it.
    pub alert_raisers: HashMap<u64, String>,
    /// The shared breakers of the hosts in the snapshots (those ever shared).
    pub breakers: HashMap<HostKey, SharedBreakerState>,
}

/// Merges readings, keeping each alert's number from one reading to the
/// next, and what workers that ended had done.
#[derive(Debug, Default)]
pub struct Merger {
    /// Each worker's latest snapshot, ended ones included.
    last: BTreeMap<String, Snapshot>,
    /// Each worker's latest heartbeat, ended ones included.
    workers: BTreeMap<String, WorkerView>,
    /// Alert number → the workers with a copy of it, its raiser first.
    alert_holders: BTreeMap<u64, Vec<String>>,
    /// A rule's pattern and scope → its merged id.
    rule_ids: HashMap<RuleSpec, u64>,
}

impl Merger {
    /// Every worker seen so far (up to a bound).
    pub fn known_workers(&self) -> Vec<String> {
        self.workers.keys().cloned().collect()
    }

    /// The pattern and scope of the merged rule `id`.
    pub fn rule_spec(&self, id: u64) -> Option<&RuleSpec> {
        self.rule_ids
            .iter()
            .find(|(_, n)| **n == id)
            .map(|(spec, _)| spec)
    }

    /// The worker to decide alert `id` for the crawl: the first live one of
    /// those with a copy (its raiser first), else its raiser.
    pub fn alert_decider(&self, id: u64) -> Option<&str> {
        let holders = self.alert_holders.get(&id)?;
        let alive = |w: &&String| self.workers.get(*w).is_some_and(|v| v.alive);
        holders
            .iter()
            .find(alive)
            .or(holders.first())
            .map(String::as_str)
    }

    /// The merged snapshot of `read`.
    pub fn merge(&mut self, read: &ClusterRead) -> Snapshot {
        let snaps = &self.remember(read);
        let first = snaps.first().map(|(_, s)| s.clone()).unwrap_or_default();
        let mut merged = Snapshot {
            state: merged_state(snaps.iter().map(|(_, s)| s.state)),
            elapsed: snaps
                .iter()
                .map(|(_, s)| s.elapsed)
                .max()
                .unwrap_or_default(),
            frontier_size: 0,
            front_queues: first.front_queues,
            data_dir: read.source.clone(),
            product_token: first.product_token.clone(),
            user_agent: first.user_agent.clone(),
            global_delay: first.global_delay,
            global_concurrency: first.global_concurrency,
            global_rate: first.global_rate,
            ..Snapshot::default()
        };
        for (_, s) in snaps {
            add_counters(&mut merged, s);
        }
        merged.frontier_size = not_fetching(read.queued, read.in_flight, merged.in_flight as u64);
        // Each worker counts the crawl's parked URLs of the hosts it knows.
        merged.quarantined = read.parked;
        merged.finish_reason = (merged.state == CrawlState::Done)
            .then(|| named(snaps, |s| s.finish_reason.as_deref()))
            .flatten();
        merged.fault = named(snaps, |s| s.fault.as_deref());
        merged.rules = self.merge_rules(snaps);
        let alert_workers = self.merge_alerts(&mut merged, snaps, &read.alert_raisers);
        merged.hosts = merged_hosts(snaps, &read.held);
        for view in &mut merged.hosts {
            if let Some(shared) = read.breakers.get(&view.host) {
                shared_breaker(view, shared);
            }
        }
        count_hosts(&mut merged, read);
        let held_by = merged
            .hosts
            .iter()
            .filter_map(|h| Some((h.host.clone(), read.held.get(&h.host)?.clone())))
            .collect();
        merged.cluster = Some(ClusterView {
            crawl: read.crawl.clone(),
            workers: self.workers.values().cloned().collect(),
            held_by,
            alert_workers,
        });
        merged
    }

    /// The workers' snapshots: those published now, and the last one of
    /// each worker that stopped publishing (its pages, rules and alerts
    /// still count; it holds nothing and fetches nothing any more).
    fn remember(&mut self, read: &ClusterRead) -> Vec<(String, Snapshot)> {
        for (worker, s) in &read.snapshots {
            self.last.insert(worker.clone(), s.clone());
        }
        for view in self.workers.values_mut() {
            view.alive = false;
        }
        for row in &read.workers {
            self.workers
                .insert(row.beat.worker.clone(), worker_view(row));
        }
        // Forget ended workers past the bound (their snapshots come from heartbeats' names).
        let excess = self.workers.len().saturating_sub(REMEMBERED_WORKERS);
        let forgotten: Vec<String> = self
            .workers
            .iter()
            .filter(|(_, w)| !w.alive)
            .map(|(name, _)| name.clone())
            .take(excess)
            .collect();
        for name in forgotten {
            self.workers.remove(&name);
            self.last.remove(&name);
        }
        let publishing: Vec<&String> = read.snapshots.iter().map(|(w, _)| w).collect();
        self.last
            .iter()
            .map(|(worker, s)| {
                let s = if publishing.contains(&worker) {
                    s.clone()
                } else {
                    ended(s)
                };
                (worker.clone(), s)
            })
            .collect()
    }

    /// The rules of every worker, one per pattern and scope, hits summed,
    /// numbered in the order they were first seen.
    fn merge_rules(&mut self, snaps: &[(String, Snapshot)]) -> Vec<RuleView> {
        let mut rules: Vec<RuleView> = Vec::new();
        for (_, s) in snaps {
            for rule in &s.rules {
                match rules.iter_mut().find(|r| r.spec == rule.spec) {
                    Some(known) => known.hits += rule.hits,
                    None => {
                        let next = self.rule_ids.len() as u64 + 1;
                        let id = *self.rule_ids.entry(rule.spec.clone()).or_insert(next);
                        rules.push(RuleView { id, ..rule.clone() });
                    }
                }
            }
        }
        rules.sort_by_key(|r| r.id);
        rules
    }

    /// One alert per crawl-wide number, the workers' copies merged (see
    /// [`merged_alert`]); each named with its raiser.
    fn merge_alerts(
        &mut self,
        merged: &mut Snapshot,
        snaps: &[(String, Snapshot)],
        raisers: &HashMap<u64, String>,
    ) -> BTreeMap<u64, String> {
        let mut copies: BTreeMap<u64, Vec<(&String, &TrapAlert)>> = BTreeMap::new();
        for (worker, s) in snaps {
            for alert in &s.alerts {
                copies.entry(alert.id).or_default().push((worker, alert));
            }
        }
        let mut workers = BTreeMap::new();
        merged.alerts = Vec::with_capacity(copies.len());
        for (id, mut each) in copies {
            let raiser = raisers.get(&id);
            // The raiser's copy first: its rule and impact are the alert's.
            each.sort_by_key(|(w, _)| Some(*w) != raiser);
            let holders = each.iter().map(|(w, _)| (*w).clone()).collect();
            self.alert_holders.insert(id, holders);
            workers.insert(id, raiser.unwrap_or(each[0].0).clone());
            let rest = each[1..].iter().map(|(_, a)| *a);
            merged.alerts.push(merged_alert(each[0].1, rest));
        }
        workers
    }
}

/// The workers' copies of one alert as one: evidence and parked URLs summed,
/// samples merged (as many as the fullest copy shows), the latest sighting,
/// the first decision, the first copy's rule and impact.
fn merged_alert<'a>(first: &TrapAlert, copies: impl Iterator<Item = &'a TrapAlert>) -> TrapAlert {
    let mut alert = first.clone();
    let mut cap = alert.samples.len();
    for copy in copies {
        alert.evidence_count += copy.evidence_count;
        alert.matching_queued += copy.matching_queued;
        alert.last_seen = alert.last_seen.max(copy.last_seen);
        cap = cap.max(copy.samples.len());
        for sample in &copy.samples {
            if !alert.samples.contains(sample) {
                alert.samples.push(sample.clone());
            }
        }
        if decided(copy.status) > decided(alert.status) {
            alert.status = copy.status;
        }
        if alert.impact.is_none() {
            alert.impact = copy.impact.clone();
        }
    }
    alert.samples.truncate(cap);
    alert
}

/// How far the decision on an alert went: open, noted, decided.
fn decided(status: AlertStatus) -> u8 {
    match status {
        AlertStatus::Open => 0,
        AlertStatus::Noted => 1,
        AlertStatus::Accepted | AlertStatus::Dismissed => 2,
    }
}

/// A worker's last snapshot once it stopped publishing.
fn ended(s: &Snapshot) -> Snapshot {
    Snapshot {
        state: CrawlState::Done,
        finish_reason: match s.state {
            CrawlState::Done => s.finish_reason.clone(),
            _ => Some("stopped publishing its snapshot (gone)".into()),
        },
        pages_per_sec: 0.0,
        bytes_per_sec: 0.0,
        in_flight: 0,
        hosts: Vec::new(),
        ..s.clone()
    }
}

/// The crawl runs while any worker runs; it is done when every worker is.
fn merged_state(states: impl Iterator<Item = CrawlState>) -> CrawlState {
    let states: Vec<CrawlState> = states.collect();
    let any = |s| states.contains(&s);
    if any(CrawlState::Running) {
        CrawlState::Running
    } else if any(CrawlState::Paused) {
        CrawlState::Paused
    } else if any(CrawlState::Draining) {
        CrawlState::Draining
    } else if any(CrawlState::Starting) || states.is_empty() {
        CrawlState::Starting
    } else {
        CrawlState::Done
    }
}

/// `worker: text` for each worker that has one, joined.
fn named(snaps: &[(String, Snapshot)], text: impl Fn(&Snapshot) -> Option<&str>) -> Option<String> {
    let all: Vec<String> = snaps
        .iter()
        .filter_map(|(w, s)| Some(format!("{w}: {}", text(s)?)))
        .collect();
    (!all.is_empty()).then(|| all.join("; "))
}

/// Sums what each worker counted.
fn add_counters(into: &mut Snapshot, s: &Snapshot) {
    let (c, o) = (&mut into.counters, &s.counters);
    c.pages_fetched += o.pages_fetched;
    c.bytes += o.bytes;
    c.errors += o.errors;
    for (kind, n) in &o.errors_by_kind {
        *c.errors_by_kind.entry(kind.clone()).or_insert(0) += n;
    }
    c.duplicates += o.duplicates;
    c.robots_denied += o.robots_denied;
    c.blocked_by_rules += o.blocked_by_rules;
    c.filtered += o.filtered;
    c.redirects += o.redirects;
    c.not_modified += o.not_modified;
    c.revisits += o.revisits;
    c.revisit_bytes_saved += o.revisit_bytes_saved;
    c.refused_private += o.refused_private;
    c.links_cut += o.links_cut;
    c.pages_cut += o.pages_cut;
    c.bodies_cut += o.bodies_cut;
    c.checked += o.checked;
    c.resources_fetched += o.resources_fetched;
    c.resource_bytes += o.resource_bytes;
    let (r, or) = (&mut c.responses, &o.responses);
    r.s2xx += or.s2xx;
    r.s3xx += or.s3xx;
    r.s4xx += or.s4xx;
    r.s5xx += or.s5xx;
    r.errors += or.errors;
    r.refused += or.refused;
    into.pages_per_sec += s.pages_per_sec;
    into.bytes_per_sec += s.bytes_per_sec;
    into.in_flight += s.in_flight;
    into.dropped_events += s.dropped_events;
}

/// Hosts by key: the holder's view (else the first seen) with the workers'
/// counts summed; the queue is shared, so its depth is the largest reported.
fn merged_hosts(snaps: &[(String, Snapshot)], held: &HashMap<HostKey, String>) -> Vec<HostView> {
    let mut hosts: HashMap<HostKey, HostView> = HashMap::new();
    for (worker, s) in snaps {
        for view in &s.hosts {
            let holder = held.get(&view.host) == Some(worker);
            let merged = match hosts.remove(&view.host) {
                None => view.clone(),
                Some(known) if holder => combine(view.clone(), &known),
                Some(known) => combine(known, view),
            };
            hosts.insert(view.host.clone(), merged);
        }
    }
    let mut hosts: Vec<HostView> = hosts.into_values().collect();
    hosts.sort_by(|a, b| {
        (b.in_flight, b.queued, b.fetched)
            .cmp(&(a.in_flight, a.queued, a.fetched))
            .then_with(|| a.host.cmp(&b.host))
    });
    hosts.truncate(MERGED_HOSTS);
    hosts
}

/// `base` with `other`'s counts added.
fn combine(mut base: HostView, other: &HostView) -> HostView {
    base.queued = base.queued.max(other.queued);
    base.in_flight += other.in_flight;
    base.fetched += other.fetched;
    base.req_per_sec += other.req_per_sec;
    // The crawl's count of the host (`parked_hosts`), not the worker's.
    base.quarantined = base.quarantined.max(other.quarantined);
    let (m, o) = (&mut base.status, &other.status);
    m.s2xx += o.s2xx;
    m.s3xx += o.s3xx;
    m.s4xx += o.s4xx;
    m.s5xx += o.s5xx;
    m.errors += o.errors;
    m.refused += o.refused;
    base
}

/// The crawl's breaker of a host, not the row's worker's (which may not
/// have followed it yet).
fn shared_breaker(view: &mut HostView, shared: &SharedBreakerState) {
    let b = &mut view.breaker;
    match shared.probe_in {
        Some(probe_in) => {
            if b.phase == BreakerPhase::Closed {
                b.phase = BreakerPhase::Open;
            }
            if b.phase == BreakerPhase::Open {
                b.next_probe_in = Some(probe_in);
            }
            b.last_error = shared.last_error.clone().or(b.last_error.take());
            if matches!(view.activity, HostActivity::Ready | HostActivity::Waiting) {
                view.activity = HostActivity::BreakerOpen;
            }
        }
        None => {
            b.phase = BreakerPhase::Closed;
            b.next_probe_in = None;
            if view.activity == HostActivity::BreakerOpen {
                view.activity = HostActivity::Waiting;
            }
        }
    }
}

/// Hosts by activity, counted over the merged list; the total is the shared frontier's.
/// Hosts by state: a held host as its holder sees it, the hosts nobody
/// holds from the shared schedule (a worker's row of such a host is stale),
/// so hosts beyond the rows the workers publish count too.
fn count_hosts(merged: &mut Snapshot, read: &ClusterRead) {
    let clamp = |n: u64| u32::try_from(n).unwrap_or(u32::MAX);
    for view in &merged.hosts {
        let held = read.held.contains_key(&view.host);
        match view.activity {
            HostActivity::Ready if held => merged.hosts_ready += 1,
            HostActivity::Waiting | HostActivity::Busy if held => merged.hosts_waiting += 1,
            HostActivity::PausedByOperator => merged.hosts_paused += 1,
            HostActivity::BreakerOpen => merged.hosts_breaker_open += 1,
            HostActivity::RobotsPending => merged.hosts_robots_pending += 1,
            _ => {}
        }
    }
    merged.hosts_ready += clamp(read.unheld_ready);
    merged.hosts_waiting += clamp(read.unheld_waiting);
    merged.hosts_total = clamp(read.hosts).max(merged.hosts.len() as u32);
}

fn worker_view(row: &WorkerRow) -> WorkerView {
    WorkerView {
        worker: row.beat.worker.clone(),
        version: row.beat.version.clone(),
        alive: row.alive,
        serving: row.beat.serving,
        pages: row.beat.pages,
        pages_per_s: row.beat.pages_per_s,
        hosts_held: row.beat.hosts_held,
        in_flight: row.beat.in_flight,
        last_beat_ms_ago: row.last_beat_ms_ago,
    }
}

#[cfg(test)]
#[path = "merge_tests.rs"]
mod tests;
