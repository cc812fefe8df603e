//! The part of the hosts list one viewer shows: its order (sort, direction,
//! filter), the rows on its screen and the host whose detail is open.
//! `host_order` puts hosts in that order and cuts snapshots to a window.

use serde::{Deserialize, Serialize};

use super::control::HostKey;

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
