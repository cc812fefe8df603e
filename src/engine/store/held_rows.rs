//! Rows a page adds beside its record, its payload digest's first URL
//! (`digests.rs`) and its `#fragment` links (`fragments.rs`), held in memory
//! until the next batch write ([`Store::apply`], the crawl loop's group
//! commit) or flush carries them. Written alone they cost a commit and a
//! journal write each, two per page (5 % of the crawl's CPU on the shared
//! bench); carried with the page's record they are exactly as durable.

use std::collections::{HashMap, HashSet};

use super::index::{KeyspaceWrite, Rows};
use super::{Store, StoreError};

/// Rows of one keyspace waiting for the next write; a key's first value wins.
#[derive(Debug, Default)]
pub(super) struct HeldRows {
    rows: HashMap<Vec<u8>, Vec<u8>>,
    /// Held rows not to write yet: they name a WARC record still in the
    /// writer's buffer. Reads see them.
    waiting: HashSet<Vec<u8>>,
}

impl HeldRows {
    pub(super) fn get(&self, key: &[u8]) -> Option<&[u8]> {
        self.rows.get(key).map(Vec::as_slice)
    }

    pub(super) fn contains(&self, key: &[u8]) -> bool {
        self.rows.contains_key(key)
    }

    /// Holds `value` for `key` unless a value is held for it already.
    pub(super) fn hold(&mut self, key: Vec<u8>, value: Vec<u8>) {
        self.rows.entry(key).or_insert(value);
    }

    /// [`HeldRows::hold`], the row not written before [`HeldRows::release`].
    pub(super) fn hold_waiting(&mut self, key: Vec<u8>, value: Vec<u8>) {
        if !self.rows.contains_key(&key) {
            self.waiting.insert(key.clone());
            self.rows.insert(key, value);
        }
    }

    /// Lets the next write carry the rows held waiting.
    pub(super) fn release(&mut self) {
        self.waiting.clear();
    }

    /// The rows as writes to `to`, but those waiting; they stay held until
    /// [`HeldRows::forget`].
    fn writes(&self, to: Rows) -> Vec<KeyspaceWrite> {
        self.rows
            .iter()
            .filter(|(key, _)| !self.waiting.contains(*key))
            .map(|(key, value)| (to, key.clone(), Some(value.clone())))
            .collect()
    }

    /// Stops holding the rows `written` (now in the index); rows held since
    /// they were copied stay.
    fn forget(&mut self, written: &[KeyspaceWrite]) {
        for (_, key, _) in written {
            self.rows.remove(key);
        }
    }
}

impl Store {
    /// `writes` and every held row in one atomic write. The rows stay held
    /// (and answer reads) until the write succeeded: a failed write loses
    /// none. The rows are copied out, not locked while written: a page
    /// thread asking for a digest's first capture never waits for the
    /// crawl loop's commit. Written twice by two writers at once, a row is
    /// the same row (a held key never changes its value).
    pub(super) fn write_with_held_rows(
        &self,
        writes: impl Iterator<Item = KeyspaceWrite>,
    ) -> Result<(), StoreError> {
        let digests = self.digest_state().held.writes(Rows::Digests);
        let fragments = self.fragment_marks().held.writes(Rows::Fragments);
        let held = digests.iter().chain(&fragments).cloned();
        self.inner.index.write_all(writes.chain(held))?;
        self.digest_state().held.forget(&digests);
        self.fragment_marks().held.forget(&fragments);
        Ok(())
    }

    /// Writes the held rows (before a flush, or a listing of them).
    pub(super) fn write_held_rows(&self) -> Result<(), StoreError> {
        self.write_with_held_rows(std::iter::empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::store::{CrawlBatch, FirstCapture, PageOutcome, PageRecord};

    fn stored(store: &Store, rows: Rows, key: &[u8]) -> bool {
        store.inner.index.rows(rows).get(key).unwrap().is_some()
    }

    fn first_url(store: &Store, digest: &[u8], url: &str) -> Option<String> {
        store.first_url_with_digest(digest, url).unwrap()
    }

    #[test]
    fn rows_held_while_a_copy_was_written_stay_held() {
        let mut held = HeldRows::default();
        held.hold(b"a".to_vec(), b"1".to_vec());
        let written = held.writes(Rows::Digests);
        held.hold(b"b".to_vec(), b"2".to_vec());
        held.hold(b"a".to_vec(), b"other".to_vec());
        held.forget(&written);
        assert!(!held.contains(b"a"), "written: in the index now");
        assert_eq!(held.get(b"b"), Some(&b"2"[..]), "held after the copy: kept");
    }

    fn page(url: &str) -> PageRecord {
        let outcome = PageOutcome::Fetched { status: 200 };
        PageRecord::without_fetch(url, "a.test", 0, 0, outcome)
    }

    #[test]
    fn a_pages_digest_and_fragment_rows_are_written_with_its_record_not_alone() {
        let dir = tempfile::tempdir().unwrap();
        let digest = [7u8; 20];
        {
            let store = Store::open(dir.path(), 1 << 20).unwrap();
            let url = "http://a.test/1";
            assert_eq!(first_url(&store, &digest, url), None);
            store
                .add_fragment_links(url, [("http://a.test/2", "part")].into_iter())
                .unwrap();
            // Held: reads see them, the index has no row of its own yet.
            assert_eq!(
                first_url(&store, &digest, "http://a.test/3").as_deref(),
                Some(url)
            );
            assert!(!stored(&store, Rows::Digests, &digest));
            assert!(!stored(&store, Rows::Fragments, b"http://a.test/2\0part"));
            // The page's batch carries them: one write, no flush needed.
            store.record_pages(&[page(url)]).unwrap();
            assert!(stored(&store, Rows::Digests, &digest));
            assert!(stored(&store, Rows::Fragments, b"http://a.test/2\0part"));
        }
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        assert_eq!(
            first_url(&store, &digest, "http://a.test/4").as_deref(),
            Some("http://a.test/1")
        );
        let listed: Vec<_> = store
            .fragment_links("http://a.test/")
            .map(Result::unwrap)
            .collect();
        assert_eq!(listed.len(), 1);
    }

    #[test]
    fn a_flush_or_a_listing_writes_what_is_held() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        store
            .first_url_with_digest(&[1u8; 20], "http://a.test/1")
            .unwrap();
        store.flush().unwrap();
        assert!(stored(&store, Rows::Digests, &[1u8; 20]));
        store
            .add_fragment_links("http://a.test/1", [("http://a.test/2", "x")].into_iter())
            .unwrap();
        let listed: Vec<_> = store
            .fragment_links("http://a.test/")
            .map(Result::unwrap)
            .collect();
        assert_eq!(
            listed[0].1,
            [("x".to_string(), "http://a.test/1".to_string())]
        );
        assert!(stored(&store, Rows::Fragments, b"http://a.test/2\0x"));
        // Nothing is held twice: an empty batch writes nothing more.
        store.apply(CrawlBatch::default()).unwrap();
        assert!(store.digest_state().held.get(&[1u8; 20]).is_none());
    }

    fn first_capture() -> FirstCapture {
        use crate::engine::store::warc::EarlierCapture;
        use crate::engine::store::WarcLocation;
        FirstCapture {
            record: EarlierCapture {
                uri: "http://a.test/1".into(),
                date: "2026-11-29T00:00:00Z".into(),
                payload_digest: Some("sha1:X".into()),
            },
            at: WarcLocation {
                file: "crawldeck-00000.warc.gz".into(),
                offset: 10,
                length: 20,
            },
        }
    }

    /// A store holding `digest`'s first capture, recorded with `on_disk`.
    fn recorded(digest: &[u8], on_disk: bool) -> (tempfile::TempDir, Store, FirstCapture) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        let first = first_capture();
        assert!(store
            .record_first_capture(digest, "http://a.test/1", &first, on_disk)
            .unwrap());
        // A copy fetched before the next batch write still finds the first record.
        assert_eq!(
            store.first_capture(digest, "sha1:X").unwrap(),
            Some(first.clone())
        );
        (dir, store, first)
    }

    #[test]
    fn an_archived_payload_is_a_revisit_target_before_its_row_is_written() {
        let digest = [3u8; 20];
        let (_dir, store, first) = recorded(&digest, true);
        assert!(!store
            .record_first_capture(&digest, "http://a.test/2", &first, true)
            .unwrap());
        assert!(!stored(&store, Rows::Digests, &digest));
        store.apply(CrawlBatch::default()).unwrap();
        assert!(stored(&store, Rows::Digests, &digest));
        assert_eq!(store.first_capture(&digest, "sha1:X").unwrap(), Some(first));
    }

    #[test]
    fn a_row_naming_a_record_still_in_the_warc_buffer_is_read_but_not_written() {
        let digest = [4u8; 20];
        let (_dir, store, _) = recorded(&digest, false);
        store.apply(CrawlBatch::default()).unwrap();
        store.flush().unwrap();
        assert!(!stored(&store, Rows::Digests, &digest));

        store.release_digest_rows();
        store.apply(CrawlBatch::default()).unwrap();
        assert!(stored(&store, Rows::Digests, &digest));
        assert!(store.digest_state().held.get(&digest).is_none());
    }
}
