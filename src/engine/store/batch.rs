//! One atomic write to the crawl tree: queue changes, seen marks, page records
//! and parked URLs together.

use super::keys;
use super::record_codec;
use super::records::PageRecord;

#[derive(Default)]
pub(crate) struct CrawlBatch {
    pub(super) inner: sled::Batch,
    /// Page keys written, so `Store::apply` can count the new ones.
    pub(super) page_keys: Vec<Vec<u8>>,
}

impl CrawlBatch {
    pub(crate) fn enqueue(&mut self, key: &[u8], value: &[u8]) {
        self.inner.insert(key, value);
    }

    pub(crate) fn dequeue(&mut self, key: &[u8]) {
        self.inner.remove(key);
    }

    /// Writes the URL's persistent seen mark; returns its fingerprint.
    pub(crate) fn mark_seen(&mut self, url: &str) -> u64 {
        let fp = keys::url_fingerprint(url);
        self.inner.insert(&keys::seen_key(fp)[..], &[][..]);
        fp
    }

    pub(crate) fn record_page(&mut self, record: &PageRecord) {
        let key = keys::page_key(&record.url);
        self.inner
            .insert(key.as_slice(), record_codec::encode(record));
        self.page_keys.push(key);
    }

    pub(crate) fn set_seq(&mut self, next_seq: u64) {
        self.inner.insert(keys::META_SEQ, &next_seq.to_be_bytes());
    }
}
