//! The snapshot: the engine's whole state as front ends show it, built from
//! the scheduler's state a few times a second.

use std::sync::Arc;

use tokio::time::Instant;

use super::{Coordinator, SNAPSHOT_HOSTS};
use crate::engine::telemetry::{HostActivity, Snapshot};

impl Coordinator {
    /// Builds and publishes the snapshot.
    pub fn publish(&mut self) -> Snapshot {
        let now = Instant::now();
        let mut snap = Snapshot {
            state: self.state,
            elapsed: self.elapsed(),
            counters: self.counters.clone(),
            pages_per_sec: self.pages_rate.sample(now, self.counters.pages_fetched),
            bytes_per_sec: self.bytes_rate.sample(now, self.counters.bytes),
            frontier_size: self.frontier.len(),
            in_flight: (self.in_flight + self.robots_in_flight) as u32,
            front_queues: self.frontier.front_queue_depths(),
            rules: self.rules.views(),
            alerts: self.alerts.values().cloned().collect(),
            dropped_events: self.dropped_events,
            data_dir: self.data_dir.clone(),
            global_delay: self.global_delay,
            global_concurrency: self.global_concurrency,
            global_rate: self.rate.rate(),
            finish_reason: self.finish_reason.clone(),
            ..Snapshot::default()
        };
        let mut views = Vec::with_capacity(self.hosts.len());
        for (key, host) in self.hosts.iter_mut() {
            let activity = self.frontier.host_activity(key, now);
            match activity {
                HostActivity::Ready => snap.hosts_ready += 1,
                HostActivity::Waiting | HostActivity::Busy => snap.hosts_waiting += 1,
                HostActivity::PausedByOperator => snap.hosts_paused += 1,
                HostActivity::BreakerOpen => snap.hosts_breaker_open += 1,
                HostActivity::RobotsPending => snap.hosts_robots_pending += 1,
                HostActivity::Idle | HostActivity::Finished => {}
            }
            let quarantined = self.frontier.host_parked(key);
            let max = host.politeness.max_in_flight(&self.cfg.politeness);
            views.push(host.view(
                now,
                self.frontier.host_queued(key),
                max,
                activity,
                quarantined,
                self.frontier.host_head(key, 5),
            ));
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
        let _ = self.ends.snapshots.send(Arc::new(snap.clone()));
        snap
    }
}
