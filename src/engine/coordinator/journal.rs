//! Operations that span many loop turns (a removed rule's blocked URLs coming
//! back, an alert's sweep) are recorded under `meta/pending-ops` when they
//! start, with their progress after each chunk, and removed when done; a
//! crawl killed in the middle resumes them at boot, before any dispatch.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::engine::frontier::ScanCursor;
use crate::engine::store::{Store, StoreError, Tree};

/// What follows once a sweep's work is done.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) enum Then {
    RuleAdded { rule_id: u64, text: String },
    Accepted { alert_id: u64, rule_id: u64 },
    Dismissed { alert_id: u64 },
}

/// Meta key of the pending operations.
const PENDING_KEY: &[u8] = b"pending-ops";

/// How far a removed rule's walk has been applied.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct WalkPosition {
    /// Which tree of which prefix (`unblock::phase`).
    pub(super) phase: usize,
    /// The last URL of that phase whose chunk is applied.
    pub(super) after: Option<String>,
}

/// A stored URL: `(url, host, depth)`.
pub(super) type Stored = (String, String, u32);

/// A rule removal whose blocked URLs are still coming back.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct PendingUnblock {
    /// The removed rule's host (`None`: every host).
    pub(super) host: Option<String>,
    /// The removal in words, for its answer.
    pub(super) text: String,
    pub(super) returned: u64,
    pub(super) position: WalkPosition,
    /// A chunk of once-queued URLs being queued again: after a crash its
    /// copies in the frontier are taken out before it is applied again.
    pub(super) in_flight: Option<Vec<Stored>>,
}

/// One piece of a sweep's work, as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) enum PendingWork {
    Block {
        rule_id: u64,
        from: Option<ScanCursor>,
    },
    Release {
        alert_id: u64,
        blocked_by: Option<u64>,
    },
}

/// A sweep, as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct PendingSweep {
    pub(super) work: Vec<PendingWork>,
    pub(super) count: u64,
    pub(super) then: Then,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Pending {
    unblocks: BTreeMap<u64, PendingUnblock>,
    /// By the sweep's key, in the order they run.
    sweeps: BTreeMap<u64, PendingSweep>,
}

/// The pending operations; the one owner of `meta/pending-ops`.
pub(super) struct Journal {
    pending: Pending,
    store: Store,
}

impl Journal {
    /// The stored pending operations.
    pub(super) fn load(store: &Store) -> Result<Self, StoreError> {
        let pending = store.get(Tree::Meta, PENDING_KEY)?.unwrap_or_default();
        Ok(Journal {
            pending,
            store: store.clone(),
        })
    }

    /// Removals left by an earlier run, to resume.
    pub(super) fn left_unblocks(&self) -> Vec<(u64, PendingUnblock)> {
        self.pending.unblocks.clone().into_iter().collect()
    }

    /// Sweeps left by an earlier run, in the order they ran.
    pub(super) fn left_sweeps(&self) -> Vec<(u64, PendingSweep)> {
        self.pending.sweeps.clone().into_iter().collect()
    }

    /// The key the next sweep is stored under.
    pub(super) fn next_sweep_key(&self) -> u64 {
        self.pending.sweeps.keys().next_back().map_or(0, |k| k + 1)
    }

    pub(super) fn unblock(&self, rule_id: u64) -> Option<&PendingUnblock> {
        self.pending.unblocks.get(&rule_id)
    }

    /// Records (or updates) removal `rule_id`'s progress.
    pub(super) fn put_unblock(
        &mut self,
        rule_id: u64,
        op: PendingUnblock,
    ) -> Result<(), StoreError> {
        self.pending.unblocks.insert(rule_id, op);
        self.save()
    }

    pub(super) fn end_unblock(&mut self, rule_id: u64) -> Result<(), StoreError> {
        self.pending.unblocks.remove(&rule_id);
        self.save()
    }

    /// Records (or updates) sweep `key`'s progress.
    pub(super) fn put_sweep(&mut self, key: u64, op: PendingSweep) -> Result<(), StoreError> {
        self.pending.sweeps.insert(key, op);
        self.save()
    }

    pub(super) fn end_sweep(&mut self, key: u64) -> Result<(), StoreError> {
        self.pending.sweeps.remove(&key);
        self.save()
    }

    fn save(&self) -> Result<(), StoreError> {
        if self.pending.unblocks.is_empty() && self.pending.sweeps.is_empty() {
            self.store.remove(Tree::Meta, PENDING_KEY)
        } else {
            self.store.put(Tree::Meta, PENDING_KEY, &self.pending)
        }
    }
}

impl super::Coordinator {
    /// Resumes what an earlier run left under way, before any dispatch.
    pub(super) fn resume_pending(&mut self) {
        let unblocks = self.journal.left_unblocks();
        self.resume_removals(unblocks);
        let sweeps = self.journal.left_sweeps();
        self.resume_sweeps(sweeps);
    }
}
