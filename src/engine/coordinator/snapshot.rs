//! The snapshot: the engine's whole state as front ends show it, assembled
//! from the parts a few times a second.

use std::sync::Arc;

use tokio::time::Instant;

use super::Coordinator;
use crate::engine::control::HostKey;
use crate::engine::frontier::HostQueueView;
use crate::engine::store::StoreError;
use crate::engine::telemetry::{HostActivity, HostView, Snapshot};

/// Hosts listed in one snapshot (busiest first).
const SNAPSHOT_HOSTS: usize = 500;
/// URLs of each host's queue head shown.
const HEAD_SHOWN: usize = 5;

/// What a host is ranked by in the snapshot, biggest first: in flight,
/// queued, fetched.
type Busy = (u32, u64, u64);

impl Coordinator {
    /// Builds and publishes the snapshot.
    pub(super) fn publish(&mut self) -> Arc<Snapshot> {
        self.outbox.send_held();
        let now = Instant::now();
        let (pages_per_sec, bytes_per_sec) = self.stats.sample_rates(now);
        let counts = self.frontier.counts().unwrap_or_else(|e| {
            tracing::error!("counting the frontier for the snapshot: {e}");
            Default::default()
        });
        let mut snap = Snapshot {
            state: self.run.state,
            elapsed: self.stats.elapsed(),
            counters: self.stats.counters().clone(),
            pages_per_sec,
            bytes_per_sec,
            frontier_size: counts.queued,
            in_flight: self.slots.total() as u32,
            front_queues: counts.front_queues,
            rules: self.rules.views(),
            alerts: self.alerts.views(),
            dropped_events: self.outbox.dropped(),
            data_dir: self.data_dir.clone(),
            product_token: self.cfg.identity.token(),
            user_agent: self.cfg.identity.user_agent.clone(),
            global_delay: self.hosts.default_delay(),
            global_concurrency: self.slots.concurrency(),
            global_rate: self.slots.rate(),
            finish_reason: self.run.finish_reason.clone(),
            stopped: self.run.stopped,
            fault: self.run.fault.clone(),
            outage: self.outage_line(),
            extractions: self.extraction_names(),
            ..Snapshot::default()
        };
        snap.hosts = self.host_views(now, &mut snap);
        let snap = Arc::new(snap);
        self.outbox.publish(snap.clone());
        snap
    }

    /// Counts every host in memory into `snap` by what it is doing, and
    /// returns the views of the busiest [`SNAPSHOT_HOSTS`], busiest first.
    /// Only those are built in full (their queue heads, robots.txt
    /// summaries): a wide crawl holds up to tens of thousands of hosts, and
    /// a snapshot is made four times a second whether anyone looks or not.
    fn host_views(&mut self, now: Instant, snap: &mut Snapshot) -> Vec<HostView> {
        if self.run.outage.is_some() {
            // Their queues are in the server that is out of reach.
            return Vec::new();
        }
        let busy: Vec<(&str, u32, u64)> = self.hosts.busy().collect();
        let all: Vec<&str> = busy.iter().map(|&(key, ..)| key).collect();
        let queues = match self.frontier.host_views(&all, now, 0) {
            Ok(queues) => queues,
            Err(e) => return no_views(e),
        };
        let mut ranked: Vec<(Busy, &str)> = Vec::with_capacity(busy.len());
        for ((key, in_flight, fetched), queue) in busy.into_iter().zip(&queues) {
            count_host(snap, queue);
            ranked.push(((in_flight, queue.queued, fetched), key));
        }
        snap.hosts_total = ranked.len() as u32;
        // Busiest first; the host key breaks ties, so the order is total.
        let order = |a: &(Busy, &str), b: &(Busy, &str)| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1));
        if ranked.len() > SNAPSHOT_HOSTS {
            ranked.select_nth_unstable_by(SNAPSHOT_HOSTS - 1, order);
            ranked.truncate(SNAPSHOT_HOSTS);
        }
        ranked.sort_unstable_by(order);
        let shown: Vec<HostKey> = ranked.into_iter().map(|(_, key)| key.to_owned()).collect();
        let refs: Vec<&str> = shown.iter().map(String::as_str).collect();
        let queues = match self.frontier.host_views(&refs, now, HEAD_SHOWN) {
            Ok(queues) => queues,
            Err(e) => return no_views(e),
        };
        shown
            .iter()
            .zip(queues)
            .filter_map(|(key, queue)| self.hosts.view(key, now, queue))
            .collect()
    }
}

/// A frontier that cannot be read lists no hosts; the rest of the snapshot
/// still goes out.
fn no_views(e: StoreError) -> Vec<HostView> {
    tracing::error!("reading host queues for the snapshot: {e}");
    Vec::new()
}

/// Counts a host into the snapshot's totals by its activity and parked URLs.
fn count_host(snap: &mut Snapshot, queue: &HostQueueView) {
    match queue.activity {
        HostActivity::Ready => snap.hosts_ready += 1,
        HostActivity::Waiting | HostActivity::Busy => snap.hosts_waiting += 1,
        HostActivity::PausedByOperator => snap.hosts_paused += 1,
        HostActivity::BreakerOpen => snap.hosts_breaker_open += 1,
        HostActivity::RobotsPending => snap.hosts_robots_pending += 1,
        HostActivity::Idle | HostActivity::Finished => {}
    }
    snap.quarantined += queue.parked;
}

#[cfg(test)]
#[path = "snapshot_tests.rs"]
mod tests;
