//! One host's back queue in memory: exact counters and a small head buffer
//! over the host's ordered key range in the store.

use std::collections::BTreeMap;

use tokio::time::Instant;

use super::entry::{decode, level_of, FrontierEntry};
use super::schedule::Slot;
use crate::engine::control::HostKey;
use crate::engine::store::{keys, Store, StoreError};
use crate::engine::telemetry::PRIORITY_LEVELS;

/// Entries a host keeps in memory; the rest stay in the store.
pub(super) const BUFFER_CAP: usize = 64;

/// A key handed out, and whether its request is over (only its completion
/// is to come).
pub(super) struct Leased {
    pub key: Vec<u8>,
    answered: bool,
}

pub(super) struct HostQueue {
    pub name: HostKey,
    prefix: Vec<u8>,
    /// Queued and not leased.
    pub queued: u64,
    pub per_level: [u64; PRIORITY_LEVELS],
    /// Invariant: every queued, unleased key `<= cursor` is in `buffer`;
    /// every key in `buffer` is `<= cursor`.
    buffer: BTreeMap<Vec<u8>, FrontierEntry>,
    cursor: Option<Vec<u8>>,
    /// Keys handed out and not yet completed (still in the store).
    pub leased: Vec<Leased>,
    pub max_in_flight: usize,
    pub not_before: Option<Instant>,
    pub holds: u8,
    pub slot: Slot,
}

impl HostQueue {
    pub fn new(name: HostKey, max_in_flight: usize, holds: u8) -> Self {
        HostQueue {
            prefix: keys::queue_prefix(&name),
            name,
            queued: 0,
            per_level: [0; PRIORITY_LEVELS],
            buffer: BTreeMap::new(),
            cursor: None,
            leased: Vec::new(),
            max_in_flight,
            not_before: None,
            holds,
            slot: Slot::None,
        }
    }

    /// Requests out: leases not answered yet. Politeness counts these.
    pub fn in_flight(&self) -> usize {
        self.leased.iter().filter(|l| !l.answered).count()
    }

    /// Leases not completed yet, answered or not.
    pub fn has_leases(&self) -> bool {
        !self.leased.is_empty()
    }

    #[cfg(test)]
    pub fn buffered(&self) -> usize {
        self.buffer.len()
    }

    /// Priority level of the next entry, if it is loaded.
    pub fn head_level(&self) -> Option<usize> {
        self.buffer
            .first_key_value()
            .map(|(_, e)| level_of(e.priority))
    }

    pub fn head_urls(&self, n: usize) -> Vec<String> {
        self.buffer
            .values()
            .take(n)
            .map(|e| e.url.clone())
            .collect()
    }

    /// Counts a key that is now queued in the store (new, returned or unparked).
    pub fn admit(&mut self, key: Vec<u8>, entry: FrontierEntry) {
        self.queued += 1;
        self.per_level[level_of(entry.priority)] += 1;
        if self.cursor.as_ref().is_some_and(|c| key <= *c) {
            self.buffer.insert(key, entry);
            while self.buffer.len() > BUFFER_CAP {
                self.buffer.pop_last();
                self.cursor = self.buffer.last_key_value().map(|(k, _)| k.clone());
            }
        }
    }

    /// Un-counts a queued key that left the store's queue (removed or parked).
    pub fn forget(&mut self, key: &[u8], priority: u8) {
        self.queued = self.queued.saturating_sub(1);
        let level = &mut self.per_level[level_of(priority)];
        *level = level.saturating_sub(1);
        self.buffer.remove(key);
    }

    pub fn is_leased(&self, key: &[u8]) -> bool {
        self.leased.iter().any(|l| l.key == key)
    }

    /// Takes the head entry and marks it leased.
    pub fn take_head(&mut self) -> Option<(Vec<u8>, FrontierEntry)> {
        let (key, entry) = self.buffer.pop_first()?;
        self.queued = self.queued.saturating_sub(1);
        let level = &mut self.per_level[level_of(entry.priority)];
        *level = level.saturating_sub(1);
        self.leased.push(Leased {
            key: key.clone(),
            answered: false,
        });
        Some((key, entry))
    }

    /// The lease's request is over; `false` if `key` was not leased or was
    /// answered already.
    pub fn answer(&mut self, key: &[u8]) -> bool {
        match self.leased.iter_mut().find(|l| l.key == key) {
            Some(l) if !l.answered => {
                l.answered = true;
                true
            }
            _ => false,
        }
    }

    /// Ends a lease; `false` if `key` was not leased.
    pub fn end_lease(&mut self, key: &[u8]) -> bool {
        match self.leased.iter().position(|l| l.key == key) {
            Some(i) => {
                self.leased.swap_remove(i);
                true
            }
            None => false,
        }
    }

    /// Loads the next entries from the store when the buffer ran empty.
    pub fn ensure_head(&mut self, store: &Store) -> Result<(), StoreError> {
        if !self.buffer.is_empty() || self.queued == 0 {
            return Ok(());
        }
        self.refill(store)?;
        if self.buffer.is_empty() && self.cursor.is_some() {
            // Nothing after the cursor: rescan the whole range once.
            self.cursor = None;
            self.refill(store)?;
        }
        if self.buffer.is_empty() {
            tracing::error!(host = %self.name, queued = self.queued,
                "frontier counters disagree with the store; resetting this host's count");
            self.queued = 0;
            self.per_level = [0; PRIORITY_LEVELS];
        }
        Ok(())
    }

    fn refill(&mut self, store: &Store) -> Result<(), StoreError> {
        let leased = &self.leased;
        let rows = store.scan_after(&self.prefix, self.cursor.as_deref(), BUFFER_CAP, |k| {
            leased.iter().any(|l| l.key == k)
        })?;
        for (key, value) in rows {
            self.cursor = Some(key.clone());
            match decode(&value) {
                Ok(entry) => {
                    self.buffer.insert(key, entry);
                }
                Err(e) => {
                    tracing::error!(host = %self.name, error = %e, "skipping an unreadable queue entry");
                }
            }
        }
        Ok(())
    }
}
