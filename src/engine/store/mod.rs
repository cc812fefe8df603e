//! The crawl's persistent state, in one database: the crawl index, an LSM
//! tree (fjall, see [`index`]). The frontier queue, seen marks, page records
//! and parked URLs share one keyspace (see [`keys`]); who links to each URL,
//! the first URL of each content digest and the links left out have one
//! each; the small typed records (rules, alerts, hosts, meta, sitemaps) share
//! one (see [`typed`]). One [`CrawlBatch`] writes any of them atomically.
//! What earlier versions kept in sled is adopted on open (see [`legacy`]).
//! Only this module talks to the database.

mod batch;
mod crawl_tree;
mod digests;
pub mod faults;
mod fragments;
pub(crate) mod gzip;
mod held_rows;
mod index;
mod inlink_files;
mod inlink_rows;
mod inlink_tally;
mod inlinks;
pub(crate) mod keys;
mod legacy;
mod previous;
pub mod private;
mod query;
mod record_codec;
mod records;
mod referrer_batch;
mod referrers;
mod sitemaps;
mod typed;
pub(crate) mod warc;
mod warc_read;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use serde::de::DeserializeOwned;

pub(crate) use batch::CrawlBatch;
use crawl_tree::CrawlTree;
pub(crate) use digests::FirstCapture;
use faults::DiskFaults;
pub use fragments::FragmentLinks;
use index::CrawlIndex;
pub use index::INDEX_DIR;
pub use query::{Entries, FilterReason, FilteredUrl};
pub use records::{PageOutcome, PageRecord, UrlKind, WarcLocation, SOFT_404_PROBE};
use referrers::ReferrerCounts;
pub use referrers::MAX_REFERRERS;
pub use sitemaps::SitemapEntry;
pub use typed::Tree;
pub(crate) use warc_read::read_capture;
pub use warc_read::{read_response, ArchivedResponse};

/// Why a read or write of the crawl database failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Another process holds the database's lock.
    #[error(
        "the data directory {} is in use by another crawldeck process; stop that process or choose another data directory",
        path.display()
    )]
    Locked {
        /// The data directory.
        path: PathBuf,
    },
    /// The sled database an earlier version left (`<data dir>/db`) could
    /// not be read into the crawl index; it is left as it was.
    #[error("cannot read the database of an earlier crawldeck version in {}: {source}; check its permissions and free space (it is read again at the next start), or move it away to open the crawl without it", path.display())]
    Adopt {
        /// sled's directory (`<data dir>/db`).
        path: PathBuf,
        /// sled's error.
        source: sled::Error,
    },
    /// The directory given as a crawl's is missing, a file, or holds no crawl.
    #[error("{} {why}; give the --data directory of a crawl", path.display())]
    NoCrawl {
        /// The directory as given.
        path: PathBuf,
        /// "does not exist", "is not a directory", "holds no crawl…".
        why: &'static str,
    },
    /// A stored value does not decode.
    #[error(
        "corrupt {what} in the crawl database: {message}; the data directory may have been damaged"
    )]
    Corrupt {
        /// What kind of record ("page record", "rule", "queue sequence", …).
        what: &'static str,
        /// Why it does not decode.
        message: String,
    },
    /// The frontier was asked to end a lease it does not hold (a coordinator bug).
    #[error("{url} is not in flight in this frontier (completed or released twice?)")]
    UnknownLease {
        /// The lease's URL.
        url: String,
    },
    /// The shared frontier's Redis server failed or could not be reached.
    #[error("shared frontier (Redis) {op} failed: {message}; check that the Redis server is running and reachable")]
    Remote {
        /// What was being done ("claiming a host", "queueing URLs", …).
        op: &'static str,
        /// The Redis client's error.
        message: String,
    },
    /// The shared frontier's Redis server cannot be reached (refused, reset,
    /// timed out, loading its data): the crawl pauses and retries.
    #[error("Redis at {server}: {reason}")]
    Unreachable {
        /// The server's URL, without credentials.
        server: String,
        /// What went wrong, in a few words ("connection refused", …).
        reason: String,
    },
    /// fjall could not open (or create) the crawl's database.
    #[error("cannot open the crawl index in {}: {source}; check the directory's permissions, free space and the file size limit (ulimit -f: it needs 64 MiB files)", path.display())]
    OpenIndex {
        /// The index directory (`<data dir>/index`).
        path: PathBuf,
        /// fjall's error.
        source: fjall::Error,
    },
    /// A read or write of the crawl's database failed.
    #[error(
        "crawl index {op} failed: {source}; check free disk space and the data directory's permissions"
    )]
    Index {
        /// What was being done ("batch write", "flush", "scan", …).
        op: &'static str,
        /// fjall's error.
        source: fjall::Error,
    },
    /// A read or write of a file of the crawl's database beside the index.
    #[error("{op} {} failed: {source}; check free disk space and the data directory's permissions", path.display())]
    File {
        /// What was being done ("appending to", "renaming", …).
        op: &'static str,
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A record could not be serialised to JSON.
    #[error("cannot encode {what} for the crawl database: {source}")]
    Encode {
        /// What kind of record ("rule", "alert", "host state", "meta record").
        what: &'static str,
        /// serde_json's error.
        source: serde_json::Error,
    },
}

impl StoreError {
    /// The shared frontier's server is out of reach: retrying may succeed.
    pub fn is_unreachable(&self) -> bool {
        matches!(self, StoreError::Unreachable { .. })
    }

    pub(crate) fn index(op: &'static str) -> impl Fn(fjall::Error) -> StoreError {
        move |source| StoreError::Index { op, source }
    }
}

/// The crawl database. Cheap to clone: its state is shared.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

struct Inner {
    /// Queue, seen marks, page records, parked URLs (see `crawl_tree.rs`).
    crawl: CrawlTree,
    /// Every keyspace (see `index.rs`).
    index: CrawlIndex,
    /// Referrers held back and how many each URL has (see `referrers.rs`),
    /// and the links counted since the last write (`inlinks.rs`).
    referrer_counts: Mutex<ReferrerCounts>,
    /// How many pages link to each URL (see `inlinks.rs`).
    inlink_counts: RwLock<inlinks::InlinkCounts>,
    /// The `#fragment` links written this run (`fragments.rs`).
    fragment_marks: Mutex<fragments::FragmentMarks>,
    /// Which content digests are stored (see `digests.rs`).
    digests: digests::DigestIndex,
    /// Whether any page record was written (the `mpages` row).
    has_pages: AtomicBool,
    /// The recrawl pass (see `previous.rs`): page records written over
    /// earlier ones keep those from pass 1 on.
    recrawl_pass: AtomicU32,
    /// Serialises batch application: a recrawl pass reads the records it
    /// writes over and keeps them in the same batch.
    apply_lock: Mutex<()>,
    faults: DiskFaults,
}

/// A raw `(key, value)` pair of the crawl tree.
pub type RawEntry = (Vec<u8>, Vec<u8>);

impl Store {
    /// Opens (or creates) the database of the data directory `dir`,
    /// adopting what an earlier version kept in sled.
    pub fn open(dir: &Path, cache_bytes: u64) -> Result<Store, StoreError> {
        Self::open_with_faults(dir, cache_bytes, DiskFaults::default())
    }

    /// [`Store::open`], its writes failing while `faults` says the disk is full.
    pub fn open_with_faults(
        dir: &Path,
        cache_bytes: u64,
        faults: DiskFaults,
    ) -> Result<Store, StoreError> {
        // fjall's lock (`index/lock`) is the store's: taken before anything
        // is read or adopted, so a second process gets `Locked`.
        let index = CrawlIndex::open(dir, cache_bytes)?;
        legacy::adopt(dir, &index)?;
        let crawl = CrawlTree::new(&index);
        // Earlier versions kept the exact count there; any count but 0 says the same.
        let has_pages = match crawl.get(keys::META_PAGES, "read of the page mark")? {
            Some(v) => decode_u64(&v, "page mark")? > 0,
            None => false,
        };
        let inner = Inner {
            index,
            referrer_counts: Mutex::default(),
            inlink_counts: RwLock::default(),
            fragment_marks: Mutex::default(),
            digests: Default::default(),
            crawl,
            has_pages: AtomicBool::new(has_pages),
            recrawl_pass: AtomicU32::new(0),
            apply_lock: Mutex::new(()),
            faults,
        };
        let store = Store {
            inner: Arc::new(inner),
        };
        store.load_inlinks(dir)?;
        store.referrer_counts().pending = referrer_batch::PendingReferrers::open(dir)?;
        let pass = store.stored_pass()?;
        store.inner.recrawl_pass.store(pass, Ordering::Relaxed);
        Ok(store)
    }

    /// Whether `dir` holds a crawl's database (of this version or an earlier one).
    pub fn exists_in(dir: &Path) -> bool {
        dir.join(index::INDEX_DIR).is_dir() || dir.join(legacy::SLED_DIR).is_dir()
    }

    /// Whether the URL with this fingerprint was ever admitted to the frontier.
    pub(crate) fn seen_contains(&self, fp: u64) -> Result<bool, StoreError> {
        self.inner
            .crawl
            .contains_key(&keys::seen_key(fp), "seen lookup")
    }

    /// Calls `f` with every seen fingerprint (to fill a Bloom filter on resume).
    pub(crate) fn for_each_seen(&self, mut f: impl FnMut(u64)) -> Result<(), StoreError> {
        for item in self.inner.crawl.scan_prefix(&[keys::SEEN], "seen scan") {
            let (key, _) = item?;
            let bytes: [u8; 8] = key
                .get(1..)
                .and_then(|b| b.try_into().ok())
                .ok_or_else(|| corrupt("seen mark", "key is not 9 bytes long"))?;
            f(u64::from_be_bytes(bytes));
        }
        Ok(())
    }

    /// Up to `limit` crawl-wide values (JSON) written under `prefix`,
    /// with their keys' rest.
    pub(crate) fn progress_under<T: DeserializeOwned>(
        &self,
        prefix: &[u8],
        limit: usize,
    ) -> Result<Vec<(Vec<u8>, T)>, StoreError> {
        let rows = self
            .inner
            .crawl
            .scan_prefix(prefix, "read of the crawl's progress");
        let mut found = Vec::new();
        for row in rows.take(limit) {
            let (key, value) = row?;
            let value = decode_json(&value, "crawl progress")?;
            found.push((key[prefix.len()..].to_vec(), value));
        }
        Ok(found)
    }

    /// A crawl-wide value (JSON) written with a batch's `set_meta`.
    pub(crate) fn get_progress<T: DeserializeOwned>(
        &self,
        key: &[u8],
    ) -> Result<Option<T>, StoreError> {
        match self.inner.crawl.get(key, "read of the crawl's progress")? {
            Some(v) => decode_json(&v, "crawl progress").map(Some),
            None => Ok(None),
        }
    }

    /// The record of a URL that left the frontier; `None` if it has not (queued, parked, in
    /// flight, or never seen).
    pub fn page(&self, url: &str) -> Result<Option<PageRecord>, StoreError> {
        match self.inner.crawl.get(&keys::page_key(url), "page lookup")? {
            Some(v) => decode_page(url, &v).map(Some),
            None => Ok(None),
        }
    }

    /// Calls `f` with every page record, in URL order (for exports).
    pub fn for_each_page(&self, mut f: impl FnMut(PageRecord)) -> Result<(), StoreError> {
        for item in self.inner.crawl.scan_prefix(&[keys::PAGE], "page scan") {
            let (k, v) = item?;
            f(decode_page_entry(&k, &v)?);
        }
        Ok(())
    }

    /// Whether any URL has a page record. (Not a count: an exact one cost
    /// a lookup of every record written, to learn whether it was new.)
    pub fn has_pages(&self) -> bool {
        self.inner.has_pages.load(Ordering::Relaxed)
    }

    /// How many URLs have a page record, counted (for tests).
    #[cfg(test)]
    pub(crate) fn count_pages(&self) -> usize {
        let mut pages = 0;
        self.for_each_page(|_| pages += 1).expect("a page scan");
        pages
    }

    /// Records pages outside a frontier operation (e.g. URLs refused at discovery).
    pub(crate) fn record_pages<'a>(
        &self,
        records: impl IntoIterator<Item = &'a PageRecord>,
    ) -> Result<(), StoreError> {
        self.record_pages_with(records, CrawlBatch::default())
    }

    /// [`Store::record_pages`] in one atomic write with `batch`.
    pub(crate) fn record_pages_with<'a>(
        &self,
        records: impl IntoIterator<Item = &'a PageRecord>,
        mut batch: CrawlBatch,
    ) -> Result<(), StoreError> {
        for record in records {
            batch.record_page(record);
        }
        self.apply(batch)
    }

    /// [`Store::flush`], with everything held back for a larger write (the
    /// inlink counts, referrers) written first: at checkpoints and at the end.
    pub(crate) fn flush_all(&self) -> Result<(), StoreError> {
        self.write_pending_referrers()?;
        self.write_pending_inlinks()?;
        self.flush()
    }

    /// Makes everything written so far durable (but the inlink counts of the
    /// last seconds, see `inlinks.rs`); held referrers go to their file
    /// (`referrer_batch.rs`).
    pub(crate) fn flush(&self) -> Result<(), StoreError> {
        self.simulated_fault("flush")?;
        {
            let mut counts = self.referrer_counts();
            if counts.pending.is_due() {
                counts.pending.write(&self.inner.index)?;
            } else {
                // Kept on disk until written: they survive a `kill -9`.
                counts.pending.log_new_rows()?;
            }
        }
        if self.referrer_counts().inlinks.is_due() {
            self.write_pending_inlinks()?;
        }
        self.write_held_rows()?;
        self.inner.index.persist()?;
        self.sync_inlinks()
    }

    /// A write refused by [`DiskFaults`], reported as fjall reports a full disk.
    fn simulated_fault(&self, op: &'static str) -> Result<(), StoreError> {
        self.inner
            .faults
            .take_write()
            .map_err(|e| StoreError::Index {
                op,
                source: fjall::Error::Io(e),
            })
    }

    /// Applies one batch atomically; the first page record also sets the page mark.
    pub(crate) fn apply(&self, batch: CrawlBatch) -> Result<(), StoreError> {
        let _guard = self
            .inner
            .apply_lock
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        self.simulated_fault("batch write")?;
        // One write per key, the last one, as a single atomic write needs.
        let mut writes: BTreeMap<Vec<u8>, Option<Vec<u8>>> = batch.writes.into_iter().collect();
        let records: BTreeMap<Vec<u8>, Option<Vec<u8>>> = batch.records.into_iter().collect();
        self.keep_previous_records(&mut writes)?;
        let first_pages = !self.has_pages() && page_writes(&writes).next().is_some();
        if first_pages {
            writes.insert(keys::META_PAGES.to_vec(), Some(1u64.to_be_bytes().to_vec()));
        }
        let crawl = writes.into_iter().map(|(k, v)| (index::Rows::Crawl, k, v));
        let records = records
            .into_iter()
            .map(|(k, v)| (index::Rows::Records, k, v));
        self.write_with_held_rows(crawl.chain(records))?;
        if first_pages {
            self.inner.has_pages.store(true, Ordering::Relaxed);
        }
        Ok(())
    }

    /// The persisted frontier sequence counter (next sequence number to use).
    pub(crate) fn load_seq(&self) -> Result<u64, StoreError> {
        match self
            .inner
            .crawl
            .get(keys::META_SEQ, "read of the queue sequence")?
        {
            Some(v) => decode_u64(&v, "queue sequence"),
            None => Ok(0),
        }
    }

    /// Up to `limit` raw entries with `prefix`, strictly after `after` if given,
    /// skipping keys for which `skip` is true.
    pub(crate) fn scan_after(
        &self,
        prefix: &[u8],
        after: Option<&[u8]>,
        limit: usize,
        skip: impl Fn(&[u8]) -> bool,
    ) -> Result<Vec<RawEntry>, StoreError> {
        let end = prefix_end(prefix);
        let start = match after {
            Some(a) if a >= prefix => std::ops::Bound::Excluded(a.to_vec()),
            _ => std::ops::Bound::Included(prefix.to_vec()),
        };
        let end = match end {
            Some(e) => std::ops::Bound::Excluded(e),
            None => std::ops::Bound::Unbounded,
        };
        let mut out = Vec::new();
        for item in self.inner.crawl.range((start, end), "queue scan") {
            if out.len() >= limit {
                break;
            }
            let (k, v) = item?;
            if !skip(&k) {
                out.push((k.to_vec(), v.to_vec()));
            }
        }
        Ok(out)
    }
}

/// The smallest key greater than every key starting with `prefix`.
fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < u8::MAX {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

fn corrupt(what: &'static str, message: impl Into<String>) -> StoreError {
    StoreError::Corrupt {
        what,
        message: message.into(),
    }
}

/// The keys of the page records `writes` write (not remove).
fn page_writes(writes: &BTreeMap<Vec<u8>, Option<Vec<u8>>>) -> impl Iterator<Item = &[u8]> {
    writes
        .range(vec![keys::PAGE]..vec![keys::PAGE + 1])
        .filter(|(_, value)| value.is_some())
        .map(|(key, _)| key.as_slice())
}

/// A JSON value stored (or sent) as `what`; a bad one is corrupt.
pub(crate) fn decode_json<T: DeserializeOwned>(
    bytes: &[u8],
    what: &'static str,
) -> Result<T, StoreError> {
    serde_json::from_slice(bytes).map_err(|e| corrupt(what, e.to_string()))
}

/// The page record stored under `url`'s key.
fn decode_page(url: &str, bytes: &[u8]) -> Result<PageRecord, StoreError> {
    record_codec::decode(url, bytes).map_err(|message| corrupt("page record", message))
}

/// A page record from its raw key (`p` and the URL) and value.
fn decode_page_entry(key: &[u8], bytes: &[u8]) -> Result<PageRecord, StoreError> {
    let url = key
        .strip_prefix(&[keys::PAGE])
        .and_then(|url| std::str::from_utf8(url).ok())
        .ok_or_else(|| corrupt("page record", "its key is not a URL"))?;
    decode_page(url, bytes)
}

fn decode_u64(bytes: &[u8], what: &'static str) -> Result<u64, StoreError> {
    let arr: [u8; 8] = bytes
        .try_into()
        .map_err(|_| corrupt(what, format!("expected 8 bytes, found {}", bytes.len())))?;
    Ok(u64::from_be_bytes(arr))
}

#[cfg(test)]
mod tests;
