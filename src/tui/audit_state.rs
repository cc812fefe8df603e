//! What the Audit view holds: the findings last read and the selection.
//! The decisions are in `audit`.

use crate::results::audit::Finding;

/// What the Audit view holds.
#[derive(Debug, Clone, Default)]
pub struct AuditView {
    /// The last read, or why it failed; `None` before the first.
    pub read: Option<Result<Vec<Finding>, String>>,
    pub reading: bool,
    pub selected: usize,
    pub snapshots_since_read: u32,
}

impl AuditView {
    /// The findings read, none before the first read.
    pub fn findings(&self) -> &[Finding] {
        match &self.read {
            Some(Ok(findings)) => findings,
            _ => &[],
        }
    }
}
