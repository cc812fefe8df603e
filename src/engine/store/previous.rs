//! The previous recrawl pass, kept for `crawldeck diff DIR`. A page record
//! is keyed by URL, so a recrawl pass writes over the one before; the first
//! time pass `N` writes a URL's record, the record it replaces is kept as
//! `o <N> <url>` (an empty value: the URL had no record before pass `N`), in
//! the same batch, so `kill -9` never leaves one without the other. A URL
//! pass `N` has not written yet still has its previous record as its page
//! record. Starting pass `N + 1` drops the rows of pass `N` and before: the
//! store holds one previous pass, whatever the number of passes.
//!
//! A first crawl (pass 0) keeps nothing and reads nothing more per page.

use std::collections::BTreeMap;
use std::iter::Peekable;
use std::sync::atomic::Ordering;

use super::query::Entries;
use super::{decode_page_entry, keys, CrawlBatch, PageRecord, Store, StoreError, Tree};

/// Meta key: the number of the current recrawl pass (0 or absent: none yet).
const PASS_KEY: &[u8] = b"recrawl_pass";
/// Rows dropped per batch when a pass starts.
const CLEAR_CHUNK: usize = 4096;

impl Store {
    /// The recrawl pass the crawl is in (0: its first crawl).
    pub fn recrawl_pass(&self) -> u32 {
        self.inner.recrawl_pass.load(Ordering::Relaxed)
    }

    /// The stored pass number, read when the store opens.
    pub(super) fn stored_pass(&self) -> Result<u32, StoreError> {
        Ok(self.get(Tree::Meta, PASS_KEY)?.unwrap_or(0))
    }

    /// Starts the next recrawl pass: from now on a record written over one
    /// of an earlier pass keeps that one. Drops what the pass before kept.
    pub(crate) fn start_recrawl_pass(&self) -> Result<u32, StoreError> {
        let pass = self.recrawl_pass() + 1;
        self.put(Tree::Meta, PASS_KEY, &pass)?;
        self.inner.recrawl_pass.store(pass, Ordering::Relaxed);
        // Rows of older passes left by a crash here are never read (rows
        // are read by pass) and go at the next start.
        self.drop_previous_except(pass)?;
        Ok(pass)
    }

    fn drop_previous_except(&self, pass: u32) -> Result<(), StoreError> {
        let current = keys::previous_prefix(pass);
        let mut batch = CrawlBatch::default();
        for row in self
            .inner
            .crawl
            .scan_prefix(&[keys::PREVIOUS], "scan of the previous pass")
        {
            let (key, _) = row?;
            if key.starts_with(&current) {
                continue;
            }
            batch.dequeue(&key);
            if batch.writes.len() == CLEAR_CHUNK {
                self.apply(std::mem::take(&mut batch))?;
            }
        }
        self.apply(batch)
    }

    /// For a page record about to be written in recrawl pass `pass`: the
    /// row keeping the record it replaces, unless this pass kept one already.
    pub(super) fn keep_previous(
        &self,
        pass: u32,
        page_key: &[u8],
        kept: &mut Vec<(Vec<u8>, Option<Vec<u8>>)>,
    ) -> Result<(), StoreError> {
        let current = self.inner.crawl.get(page_key, "page lookup")?;
        let mut previous_key = keys::previous_prefix(pass);
        previous_key.extend_from_slice(&page_key[1..]);
        if !self
            .inner
            .crawl
            .contains_key(&previous_key, "previous pass lookup")?
        {
            let value = current.as_ref().map_or_else(Vec::new, |v| v.to_vec());
            kept.push((previous_key, Some(value)));
        }
        Ok(())
    }

    /// Adds to `writes` the rows [`Store::keep_previous`] asks for, from
    /// recrawl pass 1 on; a first crawl reads nothing here.
    pub(super) fn keep_previous_records(
        &self,
        writes: &mut BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    ) -> Result<(), StoreError> {
        let pass = self.recrawl_pass();
        if pass == 0 {
            return Ok(());
        }
        let mut kept = Vec::new();
        for key in super::page_writes(writes) {
            self.keep_previous(pass, key, &mut kept)?;
        }
        writes.extend(kept);
        Ok(())
    }

    /// The page records as they stood at the end of the previous recrawl
    /// pass, of URLs starting with `url_prefix`, in URL order: what the
    /// current pass kept, else the current record (not written this pass).
    /// Before any recrawl pass: the current records.
    pub fn previous_pass_records(&self, url_prefix: &str) -> Entries<PageRecord> {
        let pass = self.recrawl_pass();
        let mut pages = vec![keys::PAGE];
        pages.extend_from_slice(url_prefix.as_bytes());
        let mut kept = keys::previous_prefix(pass);
        let kept_len = kept.len();
        kept.extend_from_slice(url_prefix.as_bytes());
        Box::new(PreviousPass {
            pages: self.crawl_rows(&pages, "page scan"),
            kept: self.crawl_rows(&kept, "previous pass scan").peekable(),
            kept_len,
        })
    }
}

/// The page rows and the kept rows of one pass walked side by side.
struct PreviousPass {
    pages: Entries<(Vec<u8>, Vec<u8>)>,
    kept: Peekable<Entries<(Vec<u8>, Vec<u8>)>>,
    /// Length of `o <pass>`: the kept row's URL follows.
    kept_len: usize,
}

impl PreviousPass {
    /// The kept value of `url` (the page key's URL), skipping kept rows
    /// before it (none: every kept row is written with its page record).
    fn kept_value(&mut self, url: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        loop {
            let order = match self.kept.peek() {
                None => return Ok(None),
                Some(Err(_)) => return self.kept.next().map_or(Ok(None), |r| r.map(|_| None)),
                Some(Ok((key, _))) => key[self.kept_len..].cmp(url),
            };
            match order {
                std::cmp::Ordering::Less => {
                    self.kept.next();
                }
                std::cmp::Ordering::Equal => {
                    return Ok(self.kept.next().and_then(Result::ok).map(|(_, v)| v))
                }
                std::cmp::Ordering::Greater => return Ok(None),
            }
        }
    }
}

impl Iterator for PreviousPass {
    type Item = Result<PageRecord, StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let (key, value) = match self.pages.next()? {
                Ok(row) => row,
                Err(e) => return Some(Err(e)),
            };
            let value = match self.kept_value(&key[1..]) {
                Ok(None) => value,
                // Not recorded before this pass: not in the previous one.
                Ok(Some(kept)) if kept.is_empty() => continue,
                Ok(Some(kept)) => kept,
                Err(e) => return Some(Err(e)),
            };
            return Some(decode_page_entry(&key, &value));
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::store::{PageOutcome, PageRecord, Store};

    fn record(url: &str, status: u16) -> PageRecord {
        PageRecord::without_fetch(
            url,
            "a.test",
            0,
            1_700_000_000_000,
            PageOutcome::Fetched { status },
        )
    }

    fn previous(store: &Store) -> Vec<(String, PageOutcome)> {
        store
            .previous_pass_records("")
            .map(|r| r.map(|p| (p.url, p.outcome)).unwrap())
            .collect()
    }

    fn fetched(url: &str, status: u16) -> (String, PageOutcome) {
        (url.to_string(), PageOutcome::Fetched { status })
    }

    #[test]
    fn a_recrawl_pass_keeps_the_record_it_replaces_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        let (a, b, c) = ("http://a.test/a", "http://a.test/b", "http://a.test/c");
        store
            .record_pages(&[record(a, 200), record(b, 200)])
            .unwrap();
        assert_eq!(
            store.crawl_rows(b"o", "test").count(),
            0,
            "pass 0 keeps nothing"
        );
        assert_eq!(store.start_recrawl_pass().unwrap(), 1);
        // `a` rewritten twice, `c` new; `b` not fetched again yet.
        store
            .record_pages(&[record(a, 404), record(c, 200)])
            .unwrap();
        store.record_pages(&[record(a, 500)]).unwrap();
        assert_eq!(store.count_pages(), 3);
        assert_eq!(
            store.page(a).unwrap().unwrap().outcome,
            PageOutcome::Fetched { status: 500 }
        );
        assert_eq!(previous(&store), [fetched(a, 200), fetched(b, 200)]);
        drop(store);

        let store = Store::open(dir.path(), 1 << 20).unwrap();
        assert_eq!(store.recrawl_pass(), 1, "the pass survives a restart");
        assert_eq!(previous(&store), [fetched(a, 200), fetched(b, 200)]);
        assert_eq!(
            store.previous_pass_records("http://a.test/b").count(),
            1,
            "by prefix"
        );
    }

    #[test]
    fn the_next_pass_drops_what_the_one_before_kept() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        let (a, b) = ("http://a.test/a", "http://a.test/b");
        store
            .record_pages(&[record(a, 200), record(b, 200)])
            .unwrap();
        store.start_recrawl_pass().unwrap();
        store
            .record_pages(&[record(a, 404), record(b, 404)])
            .unwrap();
        assert_eq!(store.crawl_rows(b"o", "test").count(), 2);
        assert_eq!(store.start_recrawl_pass().unwrap(), 2);
        assert_eq!(
            store.crawl_rows(b"o", "test").count(),
            0,
            "pass 1's rows are gone"
        );
        assert_eq!(previous(&store), [fetched(a, 404), fetched(b, 404)]);
        store.record_pages(&[record(b, 200)]).unwrap();
        assert_eq!(previous(&store), [fetched(a, 404), fetched(b, 404)]);
        assert_eq!(store.crawl_rows(b"o", "test").count(), 1);
    }
}
