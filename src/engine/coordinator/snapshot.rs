//! The snapshot: the engine's whole state as front ends show it, assembled
//! from the parts a few times a second.

use tokio::time::Instant;

use super::Coordinator;
use crate::engine::telemetry::{HostActivity, HostView, Snapshot};

/// Hosts listed in one snapshot (busiest first).
const SNAPSHOT_HOSTS: usize = 500;
/// URLs of each host's queue head shown.
const HEAD_SHOWN: usize = 5;

impl Coordinator {
    /// Builds and publishes the snapshot.
    pub(super) fn publish(&mut self) -> Snapshot {
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
        let mut views = self.host_views(now);
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

    /// Every host in memory with its queue.
    fn host_views(&mut self, now: Instant) -> Vec<HostView> {
        if self.run.outage.is_some() {
            // Their queues are in the server that is out of reach.
            return Vec::new();
        }
        let keys = self.hosts.keys();
        let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
        let queues = match self.frontier.host_views(&refs, now, HEAD_SHOWN) {
            Ok(queues) => queues,
            Err(e) => {
                tracing::error!("reading host queues for the snapshot: {e}");
                return Vec::new();
            }
        };
        keys.iter()
            .zip(queues)
            .filter_map(|(key, queue)| self.hosts.view(key, now, queue))
            .collect()
    }
}
