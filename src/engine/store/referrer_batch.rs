//! Referrer rows held back, then written together as a sorted run straight
//! into tables of the index (fjall's ingestion): no journal entry and no
//! memtable insert a row. The first tenth of a large crawl adds ~30 of them
//! a page, and written one by one they were most of what its store cost
//! (docs/PERFORMANCE.md, "Referrer rows ingested in sorted batches").
//!
//! They are written when the batch is full, at the first flush 2 s after it
//! began ([`HeldSince`]) and at every checkpoint. Until then every flush (each
//! group commit) appends the rows held since the last one to
//! `<data dir>/referrers.held`, in the batch's own layout, so they survive a
//! `kill -9`; opening the store takes them back, and a written batch empties
//! the file. Reads see held rows too: `Store::referrers` looks here.

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use super::index::{CrawlIndex, Rows};
use super::inlinks::HeldSince;
use super::keys::url_fingerprint;
use super::private;
use super::StoreError;
use crate::engine::dedup::FingerprintSet;

/// Bytes of keys and values held before they are written: ~35,000 rows of
/// the bench's URLs, a table of level 0 each time.
const BATCH_BYTES: usize = 4 << 20;
/// A row's head: the key's length and the value's (u32, little-endian).
const HEAD: usize = 8;

#[derive(Default)]
pub(super) struct PendingReferrers {
    /// The rows, each its head, its key, its value: one allocation for all.
    bytes: Vec<u8>,
    /// Where each row starts, in the order they were held.
    starts: Vec<usize>,
    /// Fingerprints of the URLs the rows are of: a read of any other URL
    /// looks no further.
    urls: FingerprintSet,
    held: HeldSince,
    /// The rows' copy on disk, and how many of `bytes` it holds.
    log: Option<(File, PathBuf)>,
    logged: usize,
}

/// The held rows' file in a data directory.
const LOG_FILE: &str = "referrers.held";

impl PendingReferrers {
    /// The batch of `data_dir`, with the rows its file kept (a row cut short
    /// by a `kill -9` is cut off).
    pub(super) fn open(data_dir: &Path) -> Result<PendingReferrers, StoreError> {
        let path = data_dir.join(LOG_FILE);
        let error = |op| {
            let path = path.clone();
            move |source| StoreError::File { op, path, source }
        };
        let mut file = private::private_file_options()
            .read(true)
            .append(true)
            .create(true)
            .open(&path)
            .map_err(error("opening"))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(error("reading"))?;
        let mut batch = PendingReferrers::default();
        let mut at = 0;
        while let Some((key, value)) = whole_row(&bytes[at..]) {
            let url = key.split(|b| *b == 0).next().unwrap_or_default();
            let fingerprint = url_fingerprint(&String::from_utf8_lossy(url));
            batch.push(fingerprint, &[key], value);
            at += HEAD + key.len() + value.len();
        }
        if at < bytes.len() {
            file.set_len(at as u64)
                .map_err(error("cutting the torn end of"))?;
        }
        batch.logged = batch.bytes.len();
        batch.log = Some((file, path));
        Ok(batch)
    }

    /// Appends the rows held since the last call to the file.
    pub(super) fn log_new_rows(&mut self) -> Result<(), StoreError> {
        let Some((file, path)) = &mut self.log else {
            return Ok(());
        };
        let new = &self.bytes[self.logged..];
        if !new.is_empty() {
            file.write_all(new).map_err(|source| StoreError::File {
                op: "appending to",
                path: path.clone(),
                source,
            })?;
        }
        self.logged = self.bytes.len();
        Ok(())
    }

    /// Holds the row whose key is `key` (the parts joined) for the URL whose
    /// fingerprint is `url`. Keys hold at most two URLs, so their lengths fit.
    pub(super) fn push(&mut self, url: u64, key: &[&[u8]], value: &[u8]) {
        if self.bytes.capacity() == 0 {
            // Exactly: doubling past the batch would hold twice its memory.
            self.bytes.reserve_exact(BATCH_BYTES + BATCH_BYTES / 16);
        }
        self.held.hold();
        self.urls.insert(url);
        self.starts.push(self.bytes.len());
        let key_len: usize = key.iter().map(|part| part.len()).sum();
        self.bytes
            .extend_from_slice(&(key_len as u32).to_le_bytes());
        self.bytes
            .extend_from_slice(&(value.len() as u32).to_le_bytes());
        for part in key {
            self.bytes.extend_from_slice(part);
        }
        self.bytes.extend_from_slice(value);
    }

    fn row(&self, start: usize) -> (&[u8], &[u8]) {
        whole_row(&self.bytes[start..]).expect("a held row is whole")
    }

    /// The rows held for the URL with fingerprint `url` whose keys start
    /// with `prefix`, in the order they were held.
    pub(super) fn rows_of<'a>(
        &'a self,
        url: u64,
        prefix: &'a [u8],
    ) -> impl Iterator<Item = (&'a [u8], &'a [u8])> + 'a {
        // A URL with no rows here (nearly every read) costs no walk of them.
        let starts = match self.urls.contains(&url) {
            true => &self.starts[..],
            false => &[],
        };
        starts
            .iter()
            .map(|&start| self.row(start))
            .filter(move |(key, _)| key.starts_with(prefix))
    }

    /// The batch is full: write it now.
    pub(super) fn is_full(&self) -> bool {
        self.bytes.len() >= BATCH_BYTES
    }

    /// Whether a flush should write the batch.
    pub(super) fn is_due(&self) -> bool {
        self.is_full() || self.held.is_over()
    }

    /// Writes the rows into the referrer keyspace, each key once (the row
    /// held first: a URL's first referrer is the page it was first found
    /// on), and empties the batch. On an error the rows stay held.
    pub(super) fn write(&mut self, index: &CrawlIndex) -> Result<(), StoreError> {
        if self.starts.is_empty() {
            return Ok(());
        }
        // A sorted copy: on an error the rows stay held in the order found.
        // Each key found once, not at every comparison.
        let mut order: Vec<(&[u8], usize)> =
            self.starts.iter().map(|&at| (self.row(at).0, at)).collect();
        // Of equal keys the one held first (its start is lower) leads and stays.
        order.sort_unstable();
        order.dedup_by(|later, earlier| later.0 == earlier.0);
        index.ingest(Rows::Referrers, order.iter().map(|&(_, at)| self.row(at)))?;
        self.starts.clear();
        self.bytes.clear();
        self.urls.clear();
        self.held = HeldSince::default();
        self.logged = 0;
        match &self.log {
            Some((file, path)) => file.set_len(0).map_err(|source| StoreError::File {
                op: "emptying",
                path: path.clone(),
                source,
            }),
            None => Ok(()),
        }
    }
}

/// The row at the start of `bytes`, if it is all there.
fn whole_row(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let length = |at: usize| -> Option<usize> {
        let field: [u8; 4] = bytes.get(at..at + 4)?.try_into().ok()?;
        Some(u32::from_le_bytes(field) as usize)
    };
    let (key_len, value_len) = (length(0)?, length(4)?);
    let key = bytes.get(HEAD..HEAD.checked_add(key_len)?)?;
    let value_at = HEAD + key_len;
    let value = bytes.get(value_at..value_at.checked_add(value_len)?)?;
    Some((key, value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_come_back_whole_and_only_for_their_url() {
        let mut batch = PendingReferrers::default();
        batch.push(1, &[b"http://a.test/x", &[0]], b"http://a.test/");
        batch.push(2, &[b"http://a.test/y", &[0]], b"http://a.test/");
        batch.push(
            1,
            &[b"http://a.test/x", &[0], b"http://a.test/p"],
            &7u64.to_be_bytes(),
        );
        batch.push(1, &[b"http://a.test/xz", &[0]], b"http://a.test/q");
        let of_x: Vec<_> = batch.rows_of(1, b"http://a.test/x\0").collect();
        assert_eq!(
            of_x,
            [
                (&b"http://a.test/x\0"[..], &b"http://a.test/"[..]),
                (
                    &b"http://a.test/x\0http://a.test/p"[..],
                    &7u64.to_be_bytes()[..]
                ),
            ],
            "a longer URL sharing the start is another URL's"
        );
        assert_eq!(
            batch.rows_of(3, b"http://a.test/x\0").count(),
            0,
            "not held"
        );
        assert!(!batch.is_full());
        assert!(!batch.is_due(), "just begun");
    }

    #[test]
    fn a_batch_fills_at_its_size_without_growing_past_its_room() {
        let mut batch = PendingReferrers::default();
        let value = [b'v'; 200];
        let mut rows = 0;
        while !batch.is_full() {
            batch.push(
                rows,
                &[format!("http://a.test/{rows}").as_bytes(), &[0]],
                &value,
            );
            rows += 1;
        }
        assert!(rows > 15_000, "{rows} rows");
        assert!(batch.is_due());
        assert!(batch.bytes.capacity() < BATCH_BYTES + BATCH_BYTES / 8);
    }
}
