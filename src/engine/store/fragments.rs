//! `#fragment` links, kept to check later that their page has the element
//! they name: one key per page and fragment (`page 0 fragment`) holding the
//! first page found linking to it. A menu's `page#part` link on every page is
//! written once: a fixed-size bitmap of fingerprints remembers what was
//! written this run (a rare false hit loses one pair, never adds one).

use super::index::Rows;
use super::query::Entries;
use super::{Store, StoreError};
use crate::engine::dedup::url_fingerprint;

/// Bits of the written-pairs bitmap: 1 MiB whatever the crawl's size.
const MARK_BITS: usize = 1 << 23;

/// Which page and fragment pairs this run has written.
#[derive(Default)]
pub(super) struct FragmentMarks {
    bits: Vec<u64>,
}

impl FragmentMarks {
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
    /// Records that `source` links to each `(page, fragment)`, unless this
    /// run recorded that pair already. Durable at the index's next persist.
    pub(crate) fn add_fragment_links<'a>(
        &self,
        source: &str,
        links: impl Iterator<Item = (&'a str, &'a str)>,
    ) -> Result<(), StoreError> {
        let mut marks = self
            .inner
            .fragment_marks
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let rows: Vec<_> = links
            .filter(|(page, fragment)| {
                marks.mark(url_fingerprint(page) ^ url_fingerprint(fragment).rotate_left(29))
            })
            .map(|(page, fragment)| (key(page, fragment), Some(source.as_bytes().to_vec())))
            .collect();
        drop(marks);
        self.inner.index.write(Rows::Fragments, rows)
    }

    /// The fragment links of pages starting with `url_prefix`, page by page in URL order.
    pub fn fragment_links(&self, url_prefix: &str) -> Entries<FragmentLinks> {
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
