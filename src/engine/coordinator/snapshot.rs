//! The snapshot: the engine's whole state as front ends show it, assembled
//! from the parts a few times a second.

use tokio::time::Instant;

use super::Coordinator;
use crate::engine::hosts::HostQueueFacts;
use crate::engine::telemetry::{HostActivity, Snapshot};

/// Hosts listed in one snapshot (busiest first).
const SNAPSHOT_HOSTS: usize = 500;

impl Coordinator {
    /// Builds and publishes the snapshot.
    pub(super) fn publish(&mut self) -> Snapshot {
        let now = Instant::now();
        let (pages_per_sec, bytes_per_sec) = self.stats.sample_rates(now);
        let mut snap = Snapshot {
            state: self.run.state,
            elapsed: self.stats.elapsed(),
            counters: self.stats.counters().clone(),
            pages_per_sec,
            bytes_per_sec,
            frontier_size: self.frontier.len(),
            in_flight: self.slots.total() as u32,
            front_queues: self.frontier.front_queue_depths(),
            rules: self.rules.views(),
            alerts: self.alerts.views(),
            dropped_events: self.outbox.dropped(),
            data_dir: self.data_dir.clone(),
            global_delay: self.hosts.default_delay(),
            global_concurrency: self.slots.concurrency(),
            global_rate: self.slots.rate(),
            finish_reason: self.run.finish_reason.clone(),
            ..Snapshot::default()
        };
        let frontier = &self.frontier;
        let mut views = self.hosts.views(now, &mut |host| HostQueueFacts {
            queued: frontier.host_queued(host),
            parked: frontier.host_parked(host),
            activity: frontier.host_activity(host, now),
            head: frontier.host_head(host, 5),
        });
        for view in &views {
            match view.activity {
                HostActivity::Ready => snap.hosts_ready += 1,
                HostActivity::Waiting | HostActivity::Busy => snap.hosts_waiting += 1,
                HostActivity::PausedByOperator => snap.hosts_paused += 1,
                HostActivity::BreakerOpen => snap.hosts_breaker_open += 1,
                HostActivity::RobotsPending => snap.hosts_robots_pending += 1,
                HostActivity::Idle | HostActivity::Finished => {}
            }
        }
        snap.hosts_total = views.len() as u32;
        snap.quarantined = views.iter().map(|v| v.quarantined).sum();
        views.sort_by(|a, b| {
            (b.in_flight, b.queued, b.fetched)
                .cmp(&(a.in_flight, a.queued, a.fetched))
                .then_with(|| a.host.cmp(&b.host))
        });
        views.truncate(SNAPSHOT_HOSTS);
        snap.hosts = views;
        self.outbox.publish(snap.clone());
        snap
    }
}
