//! One atomic write of the crawl's state: queue changes, seen marks, page
//! records and parked URLs together, and typed records (`typed.rs`) with them.
use super::keys;
use super::record_codec;
use super::records::PageRecord;

/// Writes in order: a value to insert, or `None` to remove the key; the last
/// write of a key counts.
pub(super) type Writes = Vec<(Vec<u8>, Option<Vec<u8>>)>;

#[derive(Default)]
pub(crate) struct CrawlBatch {
    /// The crawl tree's writes.
    pub(super) writes: Writes,
    /// Writes of the typed trees, their keys tagged (`typed::records_key`).
    pub(super) records: Writes,
}

impl CrawlBatch {
    pub(crate) fn enqueue(&mut self, key: &[u8], value: &[u8]) {
        self.writes.push((key.to_vec(), Some(value.to_vec())));
    }

    pub(crate) fn dequeue(&mut self, key: &[u8]) {
        self.writes.push((key.to_vec(), None));
    }

    /// Writes the URL's persistent seen mark; returns its fingerprint.
    pub(crate) fn mark_seen(&mut self, url: &str) -> u64 {
        let fp = keys::url_fingerprint(url);
        self.writes
            .push((keys::seen_key(fp).to_vec(), Some(Vec::new())));
        fp
    }

    pub(crate) fn record_page(&mut self, record: &PageRecord) {
        self.writes.push((
            keys::page_key(&record.url),
            Some(record_codec::encode(record)),
        ));
    }

    /// Writes a row other than the queue's, the seen marks and the pages'.
    pub(super) fn put_row(&mut self, key: Vec<u8>, value: Vec<u8>) {
        self.writes.push((key, Some(value)));
    }

    /// Whether the batch writes nothing.
    pub(crate) fn is_empty(&self) -> bool {
        self.writes.is_empty() && self.records.is_empty()
    }

    pub(crate) fn set_seq(&mut self, next_seq: u64) {
        self.set_meta(keys::META_SEQ, &next_seq.to_be_bytes());
    }

    /// Writes one of the crawl-wide `m…` keys.
    pub(crate) fn set_meta(&mut self, key: &[u8], value: &[u8]) {
        self.writes.push((key.to_vec(), Some(value.to_vec())));
    }
}
