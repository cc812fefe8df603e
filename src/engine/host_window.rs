//! The part of the hosts list one viewer shows: its order (sort, direction,
//! filter), the rows on its screen and the host whose detail is open. The one
//! sort the TUI draws with and the control socket cuts snapshots with, so a
//! window asked for over the wire holds exactly the rows the screen shows.

use serde::{Deserialize, Serialize};

use super::control::HostKey;
use super::telemetry::{BreakerPhase, HostView, Snapshot, WindowInfo};

/// Rows a window may ask for: the engine lists at most this many hosts.
pub const MAX_WINDOW_ROWS: usize = 500;
/// Characters of a host filter kept; a host key is never longer.
pub const MAX_FILTER_CHARS: usize = 256;

/// What the hosts table is sorted by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum SortColumn {
    /// By host key, A to Z.
    Host,
    /// By queued URLs, most first.
    #[default]
    Queued,
    /// By requests in flight.
    InFlight,
    /// By requests per second.
    ReqPerSec,
    /// By mean latency.
    Latency,
    /// By current delay.
    Delay,
    /// By 5xx and transport errors, then 4xx.
    Errors,
    /// By breaker phase (open first), then consecutive failures.
    Breaker,
}

impl SortColumn {
    /// Every column, in the order sort-next steps through.
    pub const ALL: [SortColumn; 8] = [
        SortColumn::Host,
        SortColumn::Queued,
        SortColumn::InFlight,
        SortColumn::ReqPerSec,
        SortColumn::Latency,
        SortColumn::Delay,
        SortColumn::Errors,
        SortColumn::Breaker,
    ];

    /// The column as the status line names it.
    pub fn label(self) -> &'static str {
        match self {
            SortColumn::Host => "host",
            SortColumn::Queued => "queue",
            SortColumn::InFlight => "in-flight",
            SortColumn::ReqPerSec => "req/s",
            SortColumn::Latency => "latency",
            SortColumn::Delay => "delay",
            SortColumn::Errors => "errors",
            SortColumn::Breaker => "breaker",
        }
    }

    /// The value a host is ranked by (biggest first).
    fn key(self, h: &HostView) -> (u64, u64) {
        match self {
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
}

/// Breaker phases by how bad they are, for sorting.
fn breaker_rank(h: &HostView) -> u64 {
    match h.breaker.phase {
        BreakerPhase::Open => 2,
        BreakerPhase::HalfOpen => 1,
        BreakerPhase::Closed => 0,
    }
}

/// What a viewer shows of the hosts list. The default shows no rows: a
/// viewer that never says its window gets the totals only.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct HostWindow {
    /// The sort column.
    pub sort: SortColumn,
    /// Smallest first instead.
    pub reverse: bool,
    /// Only hosts whose key contains this (case-insensitive); empty: all.
    pub filter: String,
    /// The first row shown, counted in the sorted, filtered list.
    pub first: usize,
    /// Rows shown.
    pub rows: usize,
    /// The host whose detail view is open.
    pub detail: Option<HostKey>,
}

impl HostWindow {
    /// The window within the limits a server keeps to, whatever a viewer asked.
    pub fn bounded(mut self) -> HostWindow {
        self.rows = self.rows.min(MAX_WINDOW_ROWS);
        self.first = self.first.min(MAX_WINDOW_ROWS);
        if let Some((cut, _)) = self.filter.char_indices().nth(MAX_FILTER_CHARS) {
            self.filter.truncate(cut);
        }
        self
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
            sort.key(b)
                .cmp(&sort.key(a))
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
    fn shallow_clone(&self) -> Snapshot {
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
            fault: self.fault.clone(),
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
#[path = "host_window_tests.rs"]
mod tests;
