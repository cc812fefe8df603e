//! What the quarantine pane holds: the last read of parked URLs, which
//! alerts are expanded, the selection. The decisions are in `quarantine`.

use std::collections::HashSet;

use crate::engine::inspect::quarantine::{ParkedByAlert, ParkedUrl, Quarantine};

/// What the quarantine pane holds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QuarantineView {
    /// The last read, or why it failed; `None` before the first.
    pub read: Option<Result<Quarantine, String>>,
    /// A read is under way.
    pub reading: bool,
    /// Alerts whose URLs are listed.
    pub expanded: HashSet<u64>,
    /// The selected row of [`QuarantineView::rows`].
    pub selected: usize,
    /// Snapshots since the last read was asked for.
    pub snapshots_since_read: u32,
}

/// One row of the pane: an alert, or one of an expanded alert's URLs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum QuarantineRow<'a> {
    Alert(&'a ParkedByAlert),
    Url(u64, &'a ParkedUrl),
}

impl QuarantineView {
    /// The rows shown, in order.
    pub fn rows(&self) -> Vec<QuarantineRow<'_>> {
        let Some(Ok(read)) = &self.read else {
            return Vec::new();
        };
        let mut rows = Vec::new();
        for alert in &read.alerts {
            rows.push(QuarantineRow::Alert(alert));
            if self.expanded.contains(&alert.alert_id) {
                rows.extend(
                    alert
                        .urls
                        .iter()
                        .map(|u| QuarantineRow::Url(alert.alert_id, u)),
                );
            }
        }
        rows
    }
}
