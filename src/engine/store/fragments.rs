//! `#fragment` links, kept to check later that their page has the element
//! they name: one key per page and fragment (`page 0 fragment`) holding the
//! first page found linking to it. A menu's `page#part` link on every page is
//! written once: a fixed-size bitmap of fingerprints remembers what was
//! written this run, and a pair it seems to know is looked up before it is
//! skipped (two pairs may share a bit; skipping on the bit alone lost one
//! page's broken fragment now and then, more on a larger site). Pairs known
//! written are remembered by their whole 64-bit hash too, up to
//! [`KNOWN_CAP`] of them: a menu's pairs, met on every page, are then
//! skipped without a lookup.

use std::sync::MutexGuard;

use super::held_rows::HeldRows;
use super::index::Rows;
use super::query::Entries;
use super::{Store, StoreError};
use crate::engine::dedup::{url_fingerprint, FingerprintSet};

/// Bits of the written-pairs bitmap: 1 MiB whatever the crawl's size.
const MARK_BITS: usize = 1 << 23;
/// Pairs remembered as written by their whole hash (~300 KB at most); the
/// set starts over when full.
const KNOWN_CAP: usize = 1 << 14;

/// Which page and fragment pairs this run has written.
#[derive(Default)]
pub(super) struct FragmentMarks {
    bits: Vec<u64>,
    /// Pairs known to be written (this run or before), by [`pair_hash`].
    known: FingerprintSet,
    /// Pairs found since the last batch write (`held_rows.rs`).
    pub(super) held: HeldRows,
}

impl FragmentMarks {
    fn know(&mut self, hash: u64) {
        if self.known.len() >= KNOWN_CAP {
            self.known.clear();
        }
        self.known.insert(hash);
    }

    /// Marks `fingerprint`; false if it was marked already.
    fn mark(&mut self, fingerprint: u64) -> bool {
        if self.bits.is_empty() {
            self.bits = vec![0; MARK_BITS / 64];
        }
        let bit = fingerprint as usize & (MARK_BITS - 1);
        let (word, mask) = (bit / 64, 1u64 << (bit % 64));
        let new = self.bits[word] & mask == 0;
        self.bits[word] |= mask;
        new
    }
}

/// A page and fragment pair's hash: its bit in the bitmap, its identity in
/// the known set.
fn pair_hash(page: &str, fragment: &str) -> u64 {
    url_fingerprint(page) ^ url_fingerprint(fragment).rotate_left(29)
}

fn key(page: &str, fragment: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(page.len() + fragment.len() + 1);
    key.extend_from_slice(page.as_bytes());
    key.push(0);
    key.extend_from_slice(fragment.as_bytes());
    key
}

/// One page's fragment links: the page, then each fragment with the first
/// page found linking to it.
pub type FragmentLinks = (String, Vec<(String, String)>);

impl Store {
    /// Records that `source` links to each `(page, fragment)`, unless that
    /// pair is recorded already: held for the next batch write.
    pub(crate) fn add_fragment_links<'a>(
        &self,
        source: &str,
        links: impl Iterator<Item = (&'a str, &'a str)>,
    ) -> Result<(), StoreError> {
        let mut marks = self.fragment_marks();
        let (mut rows, mut maybe_known) = (Vec::new(), Vec::new());
        for (page, fragment) in links {
            let hash = pair_hash(page, fragment);
            if marks.mark(hash) {
                rows.push((hash, key(page, fragment)));
            } else if !marks.known.contains(&hash) {
                let key = key(page, fragment);
                if !marks.held.contains(&key) {
                    maybe_known.push((hash, key));
                }
            }
        }
        drop(marks);
        let fragments = self.inner.index.rows(Rows::Fragments);
        let mut stored = Vec::new();
        for (hash, key) in maybe_known {
            if fragments
                .contains_key(&key)
                .map_err(StoreError::index("read"))?
            {
                stored.push(hash);
            } else {
                rows.push((hash, key));
            }
        }
        let mut marks = self.fragment_marks();
        for hash in stored {
            marks.know(hash);
        }
        for (hash, key) in rows {
            marks.know(hash);
            marks.held.hold(key, source.as_bytes().to_vec());
        }
        Ok(())
    }

    /// The marks and held pairs, locked.
    pub(super) fn fragment_marks(&self) -> MutexGuard<'_, FragmentMarks> {
        self.inner
            .fragment_marks
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The fragment links of pages starting with `url_prefix`, page by page in URL order.
    pub fn fragment_links(&self, url_prefix: &str) -> Entries<FragmentLinks> {
        if let Err(e) = self.write_held_rows() {
            return Box::new(std::iter::once(Err(e)));
        }
        let rows = self
            .inner
            .index
            .rows(Rows::Fragments)
            .prefix(url_prefix.as_bytes())
            .map(|guard| guard.into_inner());
        let mut rows = Box::new(rows).peekable();
        Box::new(std::iter::from_fn(move || {
            let (key, source) = match rows.next()? {
                Ok(kv) => kv,
                Err(source) => return Some(Err(StoreError::Index { op: "scan", source })),
            };
            let split = |key: &[u8]| -> Result<(String, String), StoreError> {
                let at = key
                    .iter()
                    .position(|b| *b == 0)
                    .ok_or_else(|| super::corrupt("fragment key", "no separator"))?;
                let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
                Ok((text(&key[..at]), text(&key[at + 1..])))
            };
            let (page, fragment) = match split(&key) {
                Ok(parts) => parts,
                Err(e) => return Some(Err(e)),
            };
            let mut links = vec![(fragment, String::from_utf8_lossy(&source).into_owned())];
            while let Some(Ok((next, _))) = rows.peek() {
                let same = next.len() > page.len()
                    && next[page.len()] == 0
                    && next.starts_with(page.as_bytes());
                if !same {
                    break;
                }
                if let Some(Ok((next, source))) = rows.next() {
                    if let Ok((_, fragment)) = split(&next) {
                        links.push((fragment, String::from_utf8_lossy(&source).into_owned()));
                    }
                }
            }
            Some(Ok((page, links)))
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::super::Store;
    use super::MARK_BITS;
    use crate::engine::dedup::url_fingerprint;

    /// Two pages whose `#x` pairs share a bit of the written-pairs bitmap.
    fn sharing_a_mark() -> (String, String) {
        let mut seen = std::collections::HashMap::new();
        for n in 0.. {
            let page = format!("http://h.example/p{n}");
            let bit = (url_fingerprint(&page) ^ url_fingerprint("x").rotate_left(29)) as usize
                & (MARK_BITS - 1);
            if let Some(other) = seen.insert(bit, page.clone()) {
                return (other, page);
            }
        }
        unreachable!()
    }

    #[test]
    fn a_pair_sharing_a_mark_with_one_written_before_is_written_too() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        let (first, second) = sharing_a_mark();
        for page in [&first, &second] {
            let source = "http://h.example/menu";
            store
                .add_fragment_links(source, [(page.as_str(), "x")].into_iter())
                .unwrap();
        }
        let pages: Vec<String> = store
            .fragment_links("http://h.example/")
            .map(|entry| entry.unwrap().0)
            .collect();
        let mut both = vec![first, second];
        both.sort();
        assert_eq!(pages, both);
    }

    #[test]
    fn the_pairs_known_written_stay_bounded() {
        let mut marks = super::FragmentMarks::default();
        for hash in 0..=super::KNOWN_CAP as u64 {
            marks.know(hash);
        }
        assert!(marks.known.len() <= super::KNOWN_CAP);
        assert!(marks.known.contains(&(super::KNOWN_CAP as u64)));
    }

    #[test]
    fn a_pair_met_again_is_written_once_with_its_first_source() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        let page = "http://h.example/a";
        for n in 0..3 {
            let source = format!("http://h.example/{n}");
            store
                .add_fragment_links(&source, [(page, "top")].into_iter())
                .unwrap();
            // Written between sightings: the pair is found stored, then known.
            store.flush().unwrap();
        }
        let got: Vec<_> = store.fragment_links(page).map(Result::unwrap).collect();
        let first = ("top".to_string(), "http://h.example/0".to_string());
        assert_eq!(got, [(page.to_string(), vec![first])]);
    }

    #[test]
    fn fragment_links_are_kept_once_per_page_and_fragment_grouped_by_page() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        let (a, b) = ("http://h.example/a", "http://h.example/a/b");
        store
            .add_fragment_links("http://h.example/1", [(a, "x"), (b, "y")].into_iter())
            .unwrap();
        store
            .add_fragment_links("http://h.example/2", [(a, "x"), (a, "z")].into_iter())
            .unwrap();
        store.flush().unwrap();
        let got: Vec<_> = store
            .fragment_links("http://h.example/")
            .map(Result::unwrap)
            .collect();
        let pair = |f: &str, s: &str| (f.to_string(), s.to_string());
        assert_eq!(
            got,
            [
                (
                    a.to_string(),
                    vec![
                        pair("x", "http://h.example/1"),
                        pair("z", "http://h.example/2")
                    ]
                ),
                (b.to_string(), vec![pair("y", "http://h.example/1")]),
            ]
        );
    }
}
