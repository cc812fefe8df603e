//! The one order of the hosts table, which the TUI draws with and the control
//! socket cuts snapshots with, so a window asked for over the wire holds
//! exactly the rows the screen shows.

use super::control::HostKey;
use super::host_window::{HostWindow, SortColumn};
use super::telemetry::{BreakerPhase, HostView, Snapshot, WindowInfo};

/// The value a host is ranked by under `sort` (biggest first).
fn sort_key(sort: SortColumn, h: &HostView) -> (u64, u64) {
    match sort {
        SortColumn::Host => (0, 0),
        SortColumn::Queued => (h.queued, 0),
        SortColumn::InFlight => (h.in_flight as u64, 0),
        SortColumn::ReqPerSec => ((h.req_per_sec * 1000.0) as u64, 0),
        SortColumn::Latency => (h.mean_latency.as_micros() as u64, 0),
        SortColumn::Delay => (h.delay.as_micros() as u64, 0),
        SortColumn::Errors => (h.status.errors + h.status.s5xx, h.status.s4xx),
        SortColumn::Breaker => (breaker_rank(h), h.breaker.consecutive_failures as u64),
    }
}

/// Breaker phases by how bad they are, for sorting.
fn breaker_rank(h: &HostView) -> u64 {
    match h.breaker.phase {
        BreakerPhase::Open => 2,
        BreakerPhase::HalfOpen => 1,
        BreakerPhase::Closed => 0,
    }
}

/// `hosts` that pass `filter`, in the table's order: biggest first by
/// `sort` (host key breaks ties, so the order is total), reversed on request.
pub fn ordered<'a>(
    hosts: &'a [HostView],
    sort: SortColumn,
    reverse: bool,
    filter: &str,
) -> Vec<&'a HostView> {
    // Host keys are lower case already.
    let filter = filter.to_ascii_lowercase();
    let mut rows: Vec<&HostView> = hosts
        .iter()
        .filter(|h| filter.is_empty() || h.host.contains(&filter))
        .collect();
    rows.sort_by(|a, b| {
        let ord = if sort == SortColumn::Host {
            a.host.cmp(&b.host)
        } else {
            sort_key(sort, b)
                .cmp(&sort_key(sort, a))
                .then_with(|| a.host.cmp(&b.host))
        };
        if reverse {
            ord.reverse()
        } else {
            ord
        }
    });
    rows
}

impl HostView {
    /// The host as a table row: every field the hosts table draws. The
    /// free-text fields only the detail view shows (queue head, robots.txt
    /// summary, last error, last refusal: most of a view's bytes) are left out.
    pub fn row(&self) -> HostView {
        let mut row = HostView {
            queue_head: Vec::new(),
            robots_summary: None,
            last_refusal: None,
            ..self.clone()
        };
        row.breaker.last_error = None;
        row
    }
}

impl Snapshot {
    /// The snapshot as `window` shows it: every total, the rows of the
    /// window (without detail fields) and the detail host in full.
    pub fn windowed(&self, window: &HostWindow) -> Snapshot {
        let order = ordered(&self.hosts, window.sort, window.reverse, &window.filter);
        let matching = order.len();
        let first = window.first.min(matching);
        let hosts = order.iter().skip(first).take(window.rows);
        let info = WindowInfo {
            first,
            matching,
            listed: self.hosts.len(),
            paused: self.paused_hosts(),
            asked: window.clone(),
        };
        let detail = window.detail.as_ref().and_then(|key| self.host_detail(key));
        Snapshot {
            hosts: hosts.map(|h| h.row()).collect(),
            window: Some(info),
            detail: detail.cloned(),
            ..self.shallow_clone()
        }
    }

    /// Everything but the hosts lists, copied.
    pub fn shallow_clone(&self) -> Snapshot {
        Snapshot {
            state: self.state,
            elapsed: self.elapsed,
            counters: self.counters.clone(),
            pages_per_sec: self.pages_per_sec,
            bytes_per_sec: self.bytes_per_sec,
            frontier_size: self.frontier_size,
            in_flight: self.in_flight,
            front_queues: self.front_queues,
            hosts_ready: self.hosts_ready,
            hosts_waiting: self.hosts_waiting,
            hosts_paused: self.hosts_paused,
            hosts_breaker_open: self.hosts_breaker_open,
            hosts_robots_pending: self.hosts_robots_pending,
            hosts_total: self.hosts_total,
            hosts: Vec::new(),
            rules: self.rules.clone(),
            alerts: self.alerts.clone(),
            quarantined: self.quarantined,
            dropped_events: self.dropped_events,
            data_dir: self.data_dir.clone(),
            product_token: self.product_token.clone(),
            user_agent: self.user_agent.clone(),
            global_delay: self.global_delay,
            global_concurrency: self.global_concurrency,
            global_rate: self.global_rate,
            finish_reason: self.finish_reason.clone(),
            stopped: self.stopped,
            fault: self.fault.clone(),
            cluster: self.cluster.clone(),
            outage: self.outage.clone(),
            extractions: self.extractions.clone(),
            window: None,
            detail: None,
        }
    }

    /// `host` in full: the cut snapshot's detail host, or the whole list's entry.
    pub fn host_detail(&self, host: &str) -> Option<&HostView> {
        self.detail
            .as_ref()
            .filter(|h| h.host == host)
            .or_else(|| self.hosts.iter().find(|h| h.host == host))
    }

    /// The listed hosts the operator paused, by key.
    pub fn paused_hosts(&self) -> Vec<HostKey> {
        match &self.window {
            Some(info) => info.paused.clone(),
            None => self
                .hosts
                .iter()
                .filter(|h| h.paused)
                .map(|h| h.host.clone())
                .collect(),
        }
    }
}

#[cfg(test)]
#[path = "host_order_tests.rs"]
mod tests;
