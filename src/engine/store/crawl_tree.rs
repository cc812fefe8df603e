//! Reads of the crawl tree (layout in `keys.rs`), a keyspace of the index
//! (`index.rs`); its writes are [`CrawlBatch`](super::CrawlBatch)es, applied
//! by `Store::apply`. It was a sled tree before (moved over on open).

use std::ops::RangeBounds;

use fjall::{Keyspace, Slice};

use super::index::{CrawlIndex, Rows};
use super::StoreError;

/// One `(key, value)` of a scan.
pub(super) type Row = Result<(Slice, Slice), StoreError>;

pub(super) struct CrawlTree {
    rows: Keyspace,
}

impl CrawlTree {
    pub(super) fn new(index: &CrawlIndex) -> CrawlTree {
        CrawlTree {
            rows: index.rows(Rows::Crawl).clone(),
        }
    }

    pub(super) fn get(&self, key: &[u8], op: &'static str) -> Result<Option<Slice>, StoreError> {
        self.rows.get(key).map_err(StoreError::index(op))
    }

    pub(super) fn contains_key(&self, key: &[u8], op: &'static str) -> Result<bool, StoreError> {
        self.rows.contains_key(key).map_err(StoreError::index(op))
    }

    /// Rows whose key starts with `prefix`, in key order.
    pub(super) fn scan_prefix(
        &self,
        prefix: &[u8],
        op: &'static str,
    ) -> impl Iterator<Item = Row> + Send + 'static {
        self.rows
            .prefix(prefix)
            .map(move |guard| guard.into_inner().map_err(StoreError::index(op)))
    }

    /// Rows in `range`, in key order.
    pub(super) fn range<K: AsRef<[u8]>>(
        &self,
        range: impl RangeBounds<K>,
        op: &'static str,
    ) -> impl Iterator<Item = Row> + Send + 'static {
        self.rows
            .range(range)
            .map(move |guard| guard.into_inner().map_err(StoreError::index(op)))
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::store::{keys, record_codec, PageOutcome, PageRecord, Store};

    #[test]
    fn the_crawl_tree_an_earlier_version_kept_in_sled_moves_to_the_index() {
        let dir = tempfile::tempdir().unwrap();
        let url = "http://a.test/1";
        let record = PageRecord::without_fetch(
            url,
            "a.test",
            1,
            1_700_000_000_000,
            PageOutcome::RobotsDenied,
        );
        let fp = keys::url_fingerprint(url);
        {
            let db = sled::open(dir.path().join("db")).unwrap();
            let legacy = db.open_tree("crawl").unwrap();
            legacy.insert(keys::seen_key(fp), &[][..]).unwrap();
            legacy
                .insert(keys::page_key(url), record_codec::encode(&record))
                .unwrap();
            legacy
                .insert(keys::META_PAGES, &1u64.to_be_bytes())
                .unwrap();
            db.flush().unwrap();
        }
        for _ in 0..2 {
            let store = Store::open(dir.path(), 1 << 20).unwrap();
            assert_eq!(store.page(url).unwrap(), Some(record.clone()));
            assert_eq!(store.pages_count(), 1);
            assert!(store.seen_contains(fp).unwrap());
            let trees = store.inner.db.tree_names();
            assert!(
                !trees.iter().any(|name| name == b"crawl"),
                "sled's tree is gone"
            );
        }
    }
}
