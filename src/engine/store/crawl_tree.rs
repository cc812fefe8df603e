//! Reads of the crawl tree (layout in `keys.rs`), a keyspace of the index
//! (`index.rs`); its writes are [`CrawlBatch`](super::CrawlBatch)es, applied
//! by `Store::apply`. Earlier versions kept it in sled (`legacy.rs`).

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
