//! The links of the current group of pages, counted by target URL's
//! fingerprint until the group is written (`inlinks.rs`).
//!
//! Every admitted link adds to it, so it is on the crawl loop's path for
//! each link, and at tens of thousands of URLs a group it is larger than a
//! core's cache: each add missed it. An open-addressing table of fixed size
//! lets a page's links touch their slots first, in independent loads, so
//! the misses overlap (as the seen check's do), and it is never regrown.

use std::hash::BuildHasher;

use super::inlinks::HeldSince;

/// URLs tallied before the group is written even without a flush.
pub(super) const MAX_PENDING: usize = 64 * 1024;
/// Slots: the table is at most half full, so probes stay short. Callers
/// write the group once it is full, and add at most a chunk of a page's
/// links (4,096) between two checks, so it never fills.
const SLOTS: usize = 2 * MAX_PENDING;
const SLOT_BITS: u32 = SLOTS.trailing_zeros();
const _: () = assert!(SLOTS.is_power_of_two());

pub(super) struct InlinkTally {
    /// `(fingerprint, links)`; a slot with no links is free.
    slots: Vec<(u64, u32)>,
    len: usize,
    /// Odd, drawn per process: slots are picked by multiply-shift hashing,
    /// so URLs a site crafts to share a slot's bits (fingerprints are
    /// stable, unkeyed xxh3) do not pile up in one run of slots.
    multiplier: u64,
    held: HeldSince,
}

impl Default for InlinkTally {
    fn default() -> Self {
        InlinkTally {
            slots: Vec::new(),
            len: 0,
            multiplier: std::collections::hash_map::RandomState::new().hash_one(0u64) | 1,
            held: HeldSince::default(),
        }
    }
}

impl InlinkTally {
    fn slot_of(&self, fingerprint: u64) -> usize {
        (fingerprint.wrapping_mul(self.multiplier) >> (64 - SLOT_BITS)) as usize
    }

    /// Reads `fingerprint`'s first slot, to bring it into the cache.
    pub(super) fn touch(&self, fingerprint: u64) -> u64 {
        self.slots
            .get(self.slot_of(fingerprint))
            .map_or(0, |&(fp, _)| fp)
    }

    /// One more page links to the URL whose fingerprint is `fingerprint`.
    pub(super) fn add(&mut self, fingerprint: u64) {
        if self.slots.is_empty() {
            self.slots = vec![(0, 0); SLOTS];
        }
        debug_assert!(self.len < SLOTS, "the tally is written when full");
        self.held.hold();
        let mut i = self.slot_of(fingerprint);
        loop {
            let slot = &mut self.slots[i];
            if slot.1 == 0 {
                *slot = (fingerprint, 1);
                self.len += 1;
                return;
            }
            if slot.0 == fingerprint {
                slot.1 = slot.1.saturating_add(1);
                return;
            }
            i = (i + 1) & (SLOTS - 1);
        }
    }

    pub(super) fn is_full(&self) -> bool {
        self.len >= MAX_PENDING
    }

    /// Whether a flush should write the group.
    pub(super) fn is_due(&self) -> bool {
        self.is_full() || self.held.is_over()
    }

    /// The tally as pairs in fingerprint order; a new group starts.
    pub(super) fn take_sorted(&mut self) -> Vec<(u64, u32)> {
        let mut pairs = Vec::with_capacity(self.len);
        for slot in self.slots.iter_mut().filter(|slot| slot.1 != 0) {
            pairs.push(*slot);
            *slot = (0, 0);
        }
        self.len = 0;
        self.held = HeldSince::default();
        pairs.sort_unstable_by_key(|&(fp, _)| fp);
        pairs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_each_fingerprint_and_starts_empty_after_a_take() {
        let mut tally = InlinkTally::default();
        assert!(tally.take_sorted().is_empty());
        for fp in [7, 0, 7, u64::MAX, 7, 0] {
            tally.add(fp);
        }
        assert_eq!(tally.take_sorted(), vec![(0, 2), (7, 3), (u64::MAX, 1)]);
        assert!(tally.take_sorted().is_empty());
        assert!(!tally.is_due(), "a taken group holds nothing back");
        tally.add(7);
        assert_eq!(tally.take_sorted(), vec![(7, 1)]);
    }

    #[test]
    fn fingerprints_sharing_a_slot_are_counted_apart() {
        // With multiplier 1, a slot is a fingerprint's top bits.
        let mut tally = InlinkTally {
            multiplier: 1,
            ..InlinkTally::default()
        };
        let last = (SLOTS as u64 - 1) << (64 - SLOT_BITS);
        let same_slot: Vec<u64> = (0..5).map(|low| last | low).collect();
        for (n, &fp) in same_slot.iter().enumerate() {
            for _ in 0..=n {
                tally.add(fp);
            }
        }
        // The run of slots wrapped past the table's end.
        assert_ne!(tally.slots[0], (0, 0));
        let expected: Vec<(u64, u32)> = same_slot
            .iter()
            .enumerate()
            .map(|(n, &fp)| (fp, n as u32 + 1))
            .collect();
        assert_eq!(tally.take_sorted(), expected);
        assert!(tally.slots.iter().all(|&slot| slot == (0, 0)));
    }

    #[test]
    fn full_at_max_pending_urls_not_links() {
        let mut tally = InlinkTally::default();
        for fp in 0..MAX_PENDING as u64 - 1 {
            tally.add(fp.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            tally.add(fp.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        }
        assert!(!tally.is_full());
        tally.add(u64::MAX);
        assert!(tally.is_full() && tally.is_due());
        let pairs = tally.take_sorted();
        assert_eq!(pairs.len(), MAX_PENDING);
        assert!(pairs.windows(2).all(|w| w[0].0 < w[1].0));
    }
}
