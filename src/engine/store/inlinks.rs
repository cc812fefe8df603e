//! How many crawled pages link to each URL, counted exactly as their links
//! are admitted and held in memory by URL fingerprint: 12 bytes a linked
//! URL, in two sorted arrays. A row per URL and group of pages (the way
//! before) cost ~50 store writes a page on a large crawl; see
//! docs/PERFORMANCE.md, "Inlink counts in memory".
//!
//! The links of a group of pages are tallied, added to the counts and
//! appended to a log of `(fingerprint, count)` pairs. When the log holds
//! more pairs than the counts do, the counts are written whole instead and
//! the log emptied, so it stays under the counts' size. The files are in
//! `inlink_files.rs`; opening the store reads them, and moves counts an
//! earlier version kept in the index's rows (`inlink_rows.rs`) there.
//!
//! A group (`inlink_tally.rs`) is written when it holds
//! [`MAX_PENDING`](super::inlink_tally::MAX_PENDING) URLs, at the first
//! flush [`WRITE_EVERY`] after it began, and at every checkpoint: writing at every
//! flush (each group commit) cost a store write for nearly every link. So a
//! `kill -9` may lose the counts of the last few seconds' links.

use std::ops::Bound;
use std::path::Path;
use std::time::{Duration, Instant};

use super::index::{CrawlIndex, Rows};
use super::inlink_files::InlinkFiles;
use super::inlink_rows::{decode_pairs, kind_of, legacy_count, legacy_url_of, Counted, RowKind};
use super::{keys, Store, StoreError};

/// Age of a group at which a flush writes it.
const WRITE_EVERY: Duration = Duration::from_secs(2);
/// URLs the counts have room for before they first grow (48 MB of address
/// space, filled as URLs are found).
const ROOM: usize = 4 << 20;
/// Rows of an earlier version's counts removed in one write.
const ROW_REMOVALS_PER_WRITE: usize = 16 * 1024;

/// When the oldest write a store holds back was held: a flush writes them
/// [`WRITE_EVERY`] after it (the inlink counts' group, the referrer batch).
#[derive(Debug, Default)]
pub(super) struct HeldSince(Option<Instant>);

impl HeldSince {
    /// A write is held back (the first one starts the window).
    pub(super) fn hold(&mut self) {
        self.0.get_or_insert_with(Instant::now);
    }

    /// The window has passed: a flush should write what is held.
    pub(super) fn is_over(&self) -> bool {
        self.0.is_some_and(|t| t.elapsed() >= WRITE_EVERY)
    }
}

/// Every count, by fingerprint, and the files that hold them.
#[derive(Default)]
pub(super) struct InlinkCounts {
    /// Fingerprints in ascending order; `counts[i]` is `fps[i]`'s count.
    fps: Vec<u64>,
    counts: Vec<u32>,
    /// Open once the store has read them.
    files: Option<InlinkFiles>,
    /// Pairs the log holds after the last whole copy.
    pairs_in_log: usize,
    /// The group number of the next record: no earlier opening of this
    /// data directory used it (see [`unix_micros`]).
    next_group: u64,
}

/// Now in microseconds since the Unix epoch: later than any group number an
/// earlier opening of the store gave out (it gives out fewer than one a
/// microsecond).
fn unix_micros() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

impl InlinkCounts {
    pub(super) fn get(&self, fingerprint: u64) -> u32 {
        match self.fps.binary_search(&fingerprint) {
            Ok(i) => self.counts[i],
            Err(_) => 0,
        }
    }

    fn files(&self) -> &InlinkFiles {
        self.files.as_ref().expect("opened with the store")
    }

    fn take_group(&mut self) -> u64 {
        self.next_group += 1;
        self.next_group - 1
    }

    /// Adds `pairs` (in ascending fingerprint order, each once): one pass
    /// over the counts, then the new fingerprints merged in from the back.
    fn add(&mut self, pairs: &[(u64, u32)]) {
        let mut fresh = Vec::new();
        let mut i = 0;
        for &(fp, n) in pairs {
            i = self.position_from(i, fp);
            match self.fps.get(i) {
                Some(&held) if held == fp => self.counts[i] = self.counts[i].saturating_add(n),
                _ => fresh.push((fp, n)),
            }
        }
        if fresh.is_empty() {
            return;
        }
        let held = self.fps.len();
        // Room for `ROOM` counts at first, then `Vec`'s doubling. Room not
        // yet filled is address space only, never written, so not resident:
        // growing by exactly what a group added copied both arrays for
        // nearly every group of a large crawl's first tenth, the old and the
        // new copy resident together, the peak of the million-page bench's
        // memory (docs/PERFORMANCE.md, "Room for the inlink counts").
        let room = fresh.len().max(ROOM.saturating_sub(held));
        self.fps.reserve(room);
        self.counts.reserve(room);
        self.fps.resize(held + fresh.len(), 0);
        self.counts.resize(held + fresh.len(), 0);
        let (mut from, mut to) = (held, held + fresh.len());
        for &(fp, n) in fresh.iter().rev() {
            while from > 0 && self.fps[from - 1] > fp {
                from -= 1;
                to -= 1;
                self.fps[to] = self.fps[from];
                self.counts[to] = self.counts[from];
            }
            to -= 1;
            self.fps[to] = fp;
            self.counts[to] = n;
        }
    }

    /// The first place at or after `from` whose fingerprint is not below
    /// `fp`. A batch's fingerprints ascend, most a few places past the one
    /// before: a search that gallops from `from` reads a few neighbours
    /// where one over the whole rest missed the cache at every step.
    fn position_from(&self, from: usize, fp: u64) -> usize {
        let rest = &self.fps[from..];
        let mut bound = 1;
        while bound < rest.len() && rest[bound - 1] < fp {
            bound *= 2;
        }
        // Everything before `bound / 2` is below `fp`; the place is at most `bound`.
        let (low, high) = (bound / 2, bound.min(rest.len()));
        from + low + rest[low..high].partition_point(|&held| held < fp)
    }

    /// The counts an earlier version kept in the index's rows: the rows
    /// that count (`inlink_rows::Counted`) added up, with those of the
    /// format before them.
    fn from_rows(index: &CrawlIndex) -> Result<InlinkCounts, StoreError> {
        let rows = index.rows(Rows::Inlinks);
        let mut kinds = Vec::new();
        let mut keys = Vec::new();
        let mut legacy_rows = false;
        for row in rows.iter() {
            let key = row.key().map_err(StoreError::index("inlink scan"))?;
            match kind_of(&key) {
                RowKind::Legacy => legacy_rows = true,
                kind => {
                    kinds.push(kind);
                    keys.push(key.to_vec());
                }
            }
        }
        let counted = Counted::of(&kinds);
        let mut counts = InlinkCounts::default();
        for (kind, key) in kinds.into_iter().zip(keys) {
            if !counted.counts(kind) {
                continue;
            }
            let value = rows
                .get(&key)
                .map_err(StoreError::index("inlink row read"))?;
            counts.add(&decode_pairs(&value.unwrap_or_default())?);
        }
        if legacy_rows && counted.copy.is_none() {
            counts.add(&legacy_sums(index)?);
        }
        Ok(counts)
    }
}

/// The rows of the format before, summed a URL at a time (its rows are
/// adjacent), by fingerprint in ascending order.
fn legacy_sums(index: &CrawlIndex) -> Result<Vec<(u64, u32)>, StoreError> {
    let mut sums: Vec<(u64, u32)> = Vec::new();
    let mut last_url: Option<Vec<u8>> = None;
    for row in index.rows(Rows::Inlinks).iter() {
        let (key, value) = row.into_inner().map_err(StoreError::index("inlink scan"))?;
        if kind_of(&key) != RowKind::Legacy {
            continue;
        }
        let url = legacy_url_of(&key)?;
        let n = legacy_count(&value)?;
        match (sums.last_mut(), &last_url) {
            (Some((_, sum)), Some(last)) if last.as_slice() == url.as_bytes() => {
                *sum = sum.saturating_add(n);
            }
            _ => {
                sums.push((keys::url_fingerprint(url), n));
                last_url = Some(url.as_bytes().to_vec());
            }
        }
    }
    sums.sort_unstable_by_key(|&(fp, _)| fp);
    sums.dedup_by(|later, kept| {
        let same = later.0 == kept.0;
        if same {
            kept.1 = kept.1.saturating_add(later.1);
        }
        same
    });
    Ok(sums)
}

/// Writes the counts whole, through a new group number.
fn write_copy(counts: &mut InlinkCounts) -> Result<(), StoreError> {
    let group = counts.take_group();
    counts
        .files()
        .write_copy(group, &counts.fps, &counts.counts)?;
    counts.pairs_in_log = 0;
    Ok(())
}

impl Store {
    /// Reads the counts from their files in `data_dir`. Counts an earlier
    /// version kept in the index are written there as a whole copy, then
    /// their rows removed (a crash in between: the copy holds them).
    pub(super) fn load_inlinks(&self, data_dir: &Path) -> Result<(), StoreError> {
        let (files, stored) = InlinkFiles::open(data_dir)?;
        let mut counts = InlinkCounts::default();
        let had_files = stored.copy.is_some() || !stored.groups.is_empty();
        if let Some(copy) = stored.copy {
            (counts.fps, counts.counts) = (copy.fps, copy.counts);
        }
        for group in &stored.groups {
            counts.add(group);
            counts.pairs_in_log += group.len();
        }
        let index = &self.inner.index;
        let has_rows = index.rows(Rows::Inlinks).iter().next().is_some();
        if has_rows && !had_files {
            counts = InlinkCounts::from_rows(index)?;
        }
        counts.next_group = unix_micros();
        counts.files = Some(files);
        if has_rows {
            write_copy(&mut counts)?;
        }
        *self.inlink_counts_mut() = counts;
        match has_rows {
            true => self.remove_inlink_rows(),
            false => Ok(()),
        }
    }

    /// Removes the index's rows of the counts, a bounded number a write (a
    /// large crawl of an earlier version had tens of millions), each scan
    /// going on from the last key removed.
    fn remove_inlink_rows(&self) -> Result<(), StoreError> {
        let rows = self.inner.index.rows(Rows::Inlinks);
        let mut after: Option<Vec<u8>> = None;
        loop {
            let scan = match &after {
                None => rows.iter(),
                Some(key) => {
                    rows.range::<&[u8], _>((Bound::Excluded(key.as_slice()), Bound::Unbounded))
                }
            };
            let mut removed = Vec::new();
            for row in scan.take(ROW_REMOVALS_PER_WRITE) {
                removed.push(
                    row.key()
                        .map_err(StoreError::index("inlink scan"))?
                        .to_vec(),
                );
            }
            let Some(last) = removed.last().cloned() else {
                return Ok(());
            };
            let removals = removed.into_iter().map(|key| (key, None));
            self.inner.index.write(Rows::Inlinks, removals)?;
            after = Some(last);
        }
    }

    /// Adds the tally of the pages since the last write to the counts and
    /// logs it (durable at the next flush).
    pub(super) fn write_pending_inlinks(&self) -> Result<(), StoreError> {
        let pairs = self.referrer_counts().inlinks.take_sorted();
        if pairs.is_empty() {
            return Ok(());
        }
        let mut counts = self.inlink_counts_mut();
        counts.add(&pairs);
        if counts.pairs_in_log + pairs.len() > counts.fps.len() {
            return write_copy(&mut counts);
        }
        let group = counts.take_group();
        counts.files().append(group, &pairs)?;
        counts.pairs_in_log += pairs.len();
        Ok(())
    }

    /// Makes the logged counts durable.
    pub(super) fn sync_inlinks(&self) -> Result<(), StoreError> {
        self.inlink_counts().files().sync()
    }

    fn inlink_counts_mut(&self) -> std::sync::RwLockWriteGuard<'_, InlinkCounts> {
        self.inner
            .inlink_counts
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn inlink_counts(&self) -> std::sync::RwLockReadGuard<'_, InlinkCounts> {
        self.inner
            .inlink_counts
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// How many crawled pages link to `url` (a redirect counts as a link
    /// from the URL that redirects), as of the last group written.
    pub fn inlinks(&self, url: &str) -> u32 {
        self.inlink_counts().get(keys::url_fingerprint(url))
    }

    /// [`Store::inlinks`] of each of `urls`, in their order.
    pub fn inlinks_of<S: AsRef<str>>(&self, urls: &[S]) -> Vec<u32> {
        let counts = self.inlink_counts();
        let count = |url: &S| counts.get(keys::url_fingerprint(url.as_ref()));
        urls.iter().map(count).collect()
    }
}

#[cfg(test)]
#[path = "inlinks_tests.rs"]
mod tests;
