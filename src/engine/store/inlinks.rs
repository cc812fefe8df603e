//! How many crawled pages link to each URL, counted exactly as their links
//! are admitted, without a count per URL in memory: the links of a group of
//! pages are tallied, then written as one key per URL (`url 0 group`) holding
//! that group's count, and a reader adds up a URL's keys. A menu linked from
//! every page costs one key per group, not one per page, and a count is never
//! read back while crawling.
//!
//! A group is written when it holds [`MAX_PENDING`] URLs, at the first flush
//! [`WRITE_EVERY`] after it began, and at every checkpoint: writing at every
//! flush (each group commit) cost a store write for nearly every link. So a
//! `kill -9` may lose the counts of the last few seconds' links.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::index::Rows;
use super::{Store, StoreError};
use crate::engine::dedup::FingerprintMap;

/// URLs tallied before the group is written even without a flush.
const MAX_PENDING: usize = 64 * 1024;
/// Age of a group at which a flush writes it.
const WRITE_EVERY: Duration = Duration::from_secs(2);

/// Links of the current group of pages, by target URL's fingerprint.
#[derive(Default)]
pub(super) struct InlinkTally {
    pending: FingerprintMap<(Box<str>, u32)>,
    since: Option<Instant>,
}

impl InlinkTally {
    /// One more page links to `target` (whose fingerprint is `fingerprint`).
    pub(super) fn add(&mut self, fingerprint: u64, target: &str) {
        match self.pending.get_mut(&fingerprint) {
            Some((_, n)) => *n = n.saturating_add(1),
            None => {
                self.since.get_or_insert_with(Instant::now);
                self.pending.insert(fingerprint, (target.into(), 1));
            }
        }
    }

    pub(super) fn is_full(&self) -> bool {
        self.pending.len() >= MAX_PENDING
    }

    /// Whether a flush should write the group.
    pub(super) fn is_due(&self) -> bool {
        self.is_full() || self.since.is_some_and(|t| t.elapsed() >= WRITE_EVERY)
    }
}

/// The key of one group's count for `url`: the URL, a 0 byte (never in a
/// URL), the group's number big-endian.
fn key(url: &str, group: u64) -> Vec<u8> {
    let mut key = Vec::with_capacity(url.len() + 9);
    key.extend_from_slice(url.as_bytes());
    key.push(0);
    key.extend_from_slice(&group.to_be_bytes());
    key
}

fn count_of(value: &[u8]) -> Result<u32, StoreError> {
    let bytes: [u8; 4] = value
        .try_into()
        .map_err(|_| super::corrupt("inlink count", "not 4 bytes"))?;
    Ok(u32::from_le_bytes(bytes))
}

impl Store {
    /// Writes the tally of the pages since the last write (durable at the
    /// index's next persist). Each write takes a group number no earlier
    /// write of this data directory used: they start at the time the store
    /// was opened, in microseconds.
    pub(super) fn write_pending_inlinks(&self) -> Result<(), StoreError> {
        let pending = std::mem::take(&mut self.referrer_counts().inlinks);
        if pending.pending.is_empty() {
            return Ok(());
        }
        let group = self.inner.inlink_group.fetch_add(1, Ordering::Relaxed);
        let rows = pending
            .pending
            .into_values()
            .map(|(url, n)| (key(&url, group), Some(n.to_le_bytes().to_vec())));
        self.inner.index.write(Rows::Inlinks, rows)
    }

    /// How many crawled pages link to `url` (a redirect counts as a link
    /// from the URL that redirects).
    pub fn inlinks(&self, url: &str) -> Result<u32, StoreError> {
        let mut prefix = url.as_bytes().to_vec();
        prefix.push(0);
        let mut total = 0u32;
        for row in self.inner.index.rows(Rows::Inlinks).prefix(prefix) {
            let (_, value) = row
                .into_inner()
                .map_err(|source| StoreError::Index { op: "scan", source })?;
            total = total.saturating_add(count_of(&value)?);
        }
        Ok(total)
    }

    /// `(url, inlinks)` for URLs starting with `url_prefix`, in URL order.
    pub fn inlink_entries(&self, url_prefix: &str) -> super::query::Entries<(String, u32)> {
        let rows: Box<dyn Iterator<Item = _> + Send> = Box::new(
            self.inner
                .index
                .rows(Rows::Inlinks)
                .prefix(url_prefix.as_bytes())
                .map(|guard| guard.into_inner()),
        );
        Box::new(Sums {
            rows: rows.peekable(),
        })
    }
}

type KvRows = std::iter::Peekable<Box<dyn Iterator<Item = fjall::Result<fjall::KvPair>> + Send>>;

/// One URL's keys after another, added up: they are adjacent, as the 0 byte
/// sorts before any URL character.
struct Sums {
    rows: KvRows,
}

fn url_of(key: &[u8]) -> Result<&str, StoreError> {
    let end = key
        .len()
        .checked_sub(9)
        .filter(|&at| key[at] == 0)
        .ok_or_else(|| super::corrupt("inlink key", "no group number"))?;
    std::str::from_utf8(&key[..end]).map_err(|_| super::corrupt("inlink key", "not UTF-8"))
}

impl Sums {
    fn sum_one(&mut self, key: &[u8], value: &[u8]) -> Result<(String, u32), StoreError> {
        let url = url_of(key)?.to_string();
        let mut total = count_of(value)?;
        while let Some(Ok((next, _))) = self.rows.peek() {
            if url_of(next).ok() != Some(url.as_str()) {
                break;
            }
            let Some(Ok((_, value))) = self.rows.next() else {
                break;
            };
            total = total.saturating_add(count_of(&value)?);
        }
        Ok((url, total))
    }
}

impl Iterator for Sums {
    type Item = Result<(String, u32), StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.rows.next()? {
            Ok((key, value)) => Some(self.sum_one(&key, &value)),
            Err(source) => Some(Err(StoreError::Index { op: "scan", source })),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::Store;

    #[test]
    fn inlinks_count_each_linking_page_once_across_groups_and_reopens() {
        let dir = tempfile::tempdir().unwrap();
        let (menu, once) = ("http://a.example/menu", "http://a.example/menu/once");
        {
            let store = Store::open(dir.path(), 1 << 20).unwrap();
            for n in 0..10 {
                let parent = format!("http://a.example/p{n}");
                // The same link twice on one page counts once.
                let links = [(menu, n == 0), (menu, false)];
                store.add_referrers(&parent, links.into_iter()).unwrap();
                if n % 4 == 0 {
                    store.flush_all().unwrap();
                }
            }
            let page = "http://a.example/p0";
            store
                .add_referrers(page, [(once, true), (page, false)].into_iter())
                .unwrap();
            store.flush_all().unwrap();
            assert_eq!(store.inlinks(menu).unwrap(), 10);
        }
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        store
            .add_referrers("http://a.example/p99", [(menu, false)].into_iter())
            .unwrap();
        store.flush().unwrap();
        assert_eq!(
            store.inlinks(menu).unwrap(),
            10,
            "a flush writes a group when it is due"
        );
        store.flush_all().unwrap();
        assert_eq!(store.inlinks(menu).unwrap(), 11, "counts survive a reopen");
        assert_eq!(store.inlinks(once).unwrap(), 1);
        assert_eq!(
            store.inlinks("http://a.example/p0").unwrap(),
            0,
            "no self-links"
        );
        let entries: Vec<(String, u32)> = store
            .inlink_entries("http://a.example/")
            .map(Result::unwrap)
            .collect();
        assert_eq!(entries, [(menu.to_string(), 11), (once.to_string(), 1)]);
    }
}
