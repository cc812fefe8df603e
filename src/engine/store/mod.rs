//! The crawl's persistent state. What a crawl writes on every page is in the
//! crawl index, an LSM tree (fjall, see [`index`]): the frontier queue, seen
//! marks, page records and parked URLs in one keyspace (see [`keys`]), who
//! links to each URL, the first URL of each content digest. Small typed
//! records (rules, alerts, hosts, meta, filtered links) are in sled trees.
//! Only this module talks to either.

mod batch;
mod crawl_tree;
mod digests;
pub mod faults;
mod fragments;
pub(crate) mod gzip;
mod index;
mod inlinks;
pub(crate) mod keys;
mod previous;
pub mod private;
mod query;
mod record_codec;
mod records;
mod referrers;
#[cfg(unix)]
pub mod remote;
mod sitemaps;
pub(crate) mod warc;
mod warc_read;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde::de::DeserializeOwned;
use serde::Serialize;

pub(crate) use batch::CrawlBatch;
use crawl_tree::CrawlTree;
pub(crate) use digests::FirstCapture;
use faults::DiskFaults;
pub use fragments::FragmentLinks;
use index::CrawlIndex;
pub use query::{Entries, FilterReason, FilteredUrl};
pub use records::{PageOutcome, PageRecord, UrlKind, WarcLocation, SOFT_404_PROBE};
use referrers::ReferrerCounts;
pub use referrers::MAX_REFERRERS;
pub use sitemaps::SitemapEntry;
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
        /// The data directory (the parent of `db`).
        path: PathBuf,
    },
    /// sled could not open (or create) the database.
    #[error("cannot open the crawl database in {}: {source}; check the directory's permissions and free space", path.display())]
    Open {
        /// The database directory (`<data dir>/db`).
        path: PathBuf,
        /// sled's error.
        source: sled::Error,
    },
    /// A read or write of the open database failed.
    #[error("crawl database {op} failed: {source}; check free disk space and the data directory's permissions")]
    Sled {
        /// What was being done ("batch write", "seen lookup", "flush", …).
        op: &'static str,
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
    /// fjall could not open (or create) the crawl index.
    #[error("cannot open the crawl index in {}: {source}; check the directory's permissions, free space and the file size limit (ulimit -f: it needs 64 MiB files)", path.display())]
    OpenIndex {
        /// The index directory (`<data dir>/index`).
        path: PathBuf,
        /// fjall's error.
        source: fjall::Error,
    },
    /// A read or write of the crawl index failed.
    #[error(
        "crawl index {op} failed: {source}; check free disk space and the data directory's permissions"
    )]
    Index {
        /// What was being done ("write", "flush", "scan", …).
        op: &'static str,
        /// fjall's error.
        source: fjall::Error,
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

    pub(crate) fn sled(op: &'static str) -> impl FnOnce(sled::Error) -> StoreError {
        move |source| StoreError::Sled { op, source }
    }

    pub(crate) fn index(op: &'static str) -> impl Fn(fjall::Error) -> StoreError {
        move |source| StoreError::Index { op, source }
    }
}

/// Named trees for small typed records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tree {
    /// Operator rules with their hit counters, by id.
    Rules,
    /// Trap alerts, by id.
    Alerts,
    /// What of each host survives a restart (pause, overrides, breaker, given up), by host key.
    Hosts,
    /// Crawl-wide records: settings, counters, elapsed time, seeds, recrawl pass, and the
    /// first URL of each content digest.
    Meta,
    /// Each host's sitemap files: how many were queued, which are pending, by host key.
    Sitemaps,
}

/// The crawl database. Cheap to clone: sled handles are reference counted.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

struct Inner {
    db: sled::Db,
    /// Queue, seen marks, page records, parked URLs (see `crawl_tree.rs`).
    crawl: CrawlTree,
    rules: sled::Tree,
    alerts: sled::Tree,
    hosts: sled::Tree,
    meta: sled::Tree,
    sitemaps: sled::Tree,
    /// Referrers and digests, outside sled (see `index.rs`).
    index: CrawlIndex,
    /// Referrers held back and how many each URL has (see `referrers.rs`),
    /// and the links counted since the last write (`inlinks.rs`).
    referrer_counts: Mutex<ReferrerCounts>,
    /// The group number of the next write of inlink counts.
    inlink_group: AtomicU64,
    /// The `#fragment` links written this run (`fragments.rs`).
    fragment_marks: Mutex<fragments::FragmentMarks>,
    /// Links not followed for scope or depth (see `query.rs`).
    filtered: sled::Tree,
    /// Which content digests are stored (see `digests.rs`).
    digests: digests::DigestIndex,
    pages: AtomicU64,
    /// The recrawl pass (see `previous.rs`): page records written over
    /// earlier ones keep those from pass 1 on.
    recrawl_pass: AtomicU32,
    /// Serialises batch application so the page counter stays exact.
    apply_lock: Mutex<()>,
    faults: DiskFaults,
}

/// Now in microseconds since the Unix epoch: later than any group number an
/// earlier opening of the store gave out (it gives out fewer than one a
/// microsecond).
fn unix_micros() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// A raw `(key, value)` pair of the crawl tree.
pub type RawEntry = (Vec<u8>, Vec<u8>);

impl Store {
    /// Opens (or creates) the database in `dir/db`.
    pub fn open(dir: &Path, cache_bytes: u64) -> Result<Store, StoreError> {
        Self::open_with_faults(dir, cache_bytes, DiskFaults::default())
    }

    /// [`Store::open`], its writes failing while `faults` says the disk is full.
    pub fn open_with_faults(
        dir: &Path,
        cache_bytes: u64,
        faults: DiskFaults,
    ) -> Result<Store, StoreError> {
        let path = dir.join("db");
        // sled creates its files with the umask's modes; the pages are private:
        // the directory is made 0700 first, its files 0600 once sled made them.
        let private_err = |e| StoreError::Open {
            path: path.clone(),
            source: sled::Error::Io(e),
        };
        private::create_private_dir_all(&path).map_err(private_err)?;
        let db = open_db(&path, cache_bytes)?;
        private::restrict_tree(&path).map_err(private_err)?;
        let open_tree = |name: &str| {
            db.open_tree(name)
                .map_err(|source| open_error(&path, source))
        };
        // Opened here, not at the first write: a crawl writes to it from its
        // first page on. fjall makes a 64 MiB (sparse) journal at once.
        let index = CrawlIndex::open(dir, cache_bytes)?;
        index::adopt_sled_tree(&index, &db, "crawl", index::Rows::Crawl)?;
        let crawl = CrawlTree::new(&index);
        let pages = match crawl.get(keys::META_PAGES, "read of the page count")? {
            Some(v) => decode_u64(&v, "page count")?,
            None => 0,
        };
        index::adopt_sled_tree(&index, &db, "referrers", index::Rows::Referrers)?;
        let meta = open_tree("meta")?;
        let recrawl_pass = Store::stored_pass(&meta)?;
        let inner = Inner {
            rules: open_tree("rules")?,
            alerts: open_tree("alerts")?,
            hosts: open_tree("hosts")?,
            meta,
            sitemaps: open_tree("sitemaps")?,
            index,
            referrer_counts: Mutex::default(),
            inlink_group: AtomicU64::new(unix_micros()),
            fragment_marks: Mutex::default(),
            filtered: open_tree("filtered")?,
            digests: Default::default(),
            crawl,
            db,
            pages: AtomicU64::new(pages),
            recrawl_pass: AtomicU32::new(recrawl_pass),
            apply_lock: Mutex::new(()),
            faults,
        };
        let store = Store {
            inner: Arc::new(inner),
        };
        digests::adopt_sled_rows(&store)?;
        Ok(store)
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

    /// Writes crawl-wide values (key, JSON) into the crawl tree in one
    /// batch, where the next [`Store::flush`] makes them durable with the
    /// pages written before them.
    pub(crate) fn put_progress(&self, values: &[(&[u8], Vec<u8>)]) -> Result<(), StoreError> {
        let mut batch = CrawlBatch::default();
        for (key, json) in values {
            batch.set_meta(key, json);
        }
        self.apply(batch)
    }

    /// Up to `limit` values [`Store::put_progress`] wrote under `prefix`,
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

    /// A value [`Store::put_progress`] wrote.
    pub(crate) fn get_progress<T: DeserializeOwned>(
        &self,
        key: &[u8],
    ) -> Result<Option<T>, StoreError> {
        match self.inner.crawl.get(key, "read of the crawl's progress")? {
            Some(v) => decode_json(&v, "crawl progress").map(Some),
            None => Ok(None),
        }
    }

    pub(crate) fn put<T: Serialize>(
        &self,
        tree: Tree,
        key: &[u8],
        value: &T,
    ) -> Result<(), StoreError> {
        let bytes = serde_json::to_vec(value).map_err(|source| StoreError::Encode {
            what: tree_name(tree),
            source,
        })?;
        self.tree(tree)
            .insert(key, bytes)
            .map_err(StoreError::sled("insert"))?;
        Ok(())
    }

    pub(crate) fn get<T: DeserializeOwned>(
        &self,
        tree: Tree,
        key: &[u8],
    ) -> Result<Option<T>, StoreError> {
        match self.tree(tree).get(key).map_err(StoreError::sled("get"))? {
            Some(v) => decode_json(&v, tree_name(tree)).map(Some),
            None => Ok(None),
        }
    }

    /// Whether `tree` holds `key`, without decoding its value.
    pub(crate) fn contains(&self, tree: Tree, key: &[u8]) -> Result<bool, StoreError> {
        self.tree(tree)
            .contains_key(key)
            .map_err(StoreError::sled("get"))
    }

    pub(crate) fn remove(&self, tree: Tree, key: &[u8]) -> Result<(), StoreError> {
        self.tree(tree)
            .remove(key)
            .map_err(StoreError::sled("remove"))?;
        Ok(())
    }

    /// Every record of `tree`, in key order.
    pub fn scan<T: DeserializeOwned>(&self, tree: Tree) -> Result<Vec<(Vec<u8>, T)>, StoreError> {
        let mut out = Vec::new();
        for item in self.tree(tree).iter() {
            let (k, v) = item.map_err(StoreError::sled("scan"))?;
            out.push((k.to_vec(), decode_json(&v, tree_name(tree))?));
        }
        Ok(out)
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

    /// Number of distinct URLs with a page record.
    pub fn pages_count(&self) -> usize {
        self.inner.pages.load(Ordering::Relaxed) as usize
    }

    /// Records pages outside a frontier operation (e.g. URLs refused at discovery).
    pub(crate) fn record_pages<'a>(
        &self,
        records: impl IntoIterator<Item = &'a PageRecord>,
    ) -> Result<(), StoreError> {
        let mut batch = CrawlBatch::default();
        for record in records {
            batch.record_page(record);
        }
        self.apply(batch)
    }

    /// [`Store::flush`], with everything held back for a larger write (the
    /// inlink counts) written first: at checkpoints and at the end.
    pub(crate) fn flush_all(&self) -> Result<(), StoreError> {
        self.write_pending_inlinks()?;
        self.flush()
    }

    /// Makes everything written so far durable (but the inlink counts of the
    /// last seconds, see `inlinks.rs`).
    pub(crate) fn flush(&self) -> Result<(), StoreError> {
        self.simulated_fault("flush")?;
        self.write_pending_referrers()?;
        if self.referrer_counts().inlinks.is_due() {
            self.write_pending_inlinks()?;
        }
        self.inner.index.persist()?;
        self.inner.db.flush().map_err(StoreError::sled("flush"))?;
        Ok(())
    }

    /// A write refused by [`DiskFaults`], reported as sled reports a full disk.
    fn simulated_fault(&self, op: &'static str) -> Result<(), StoreError> {
        self.inner
            .faults
            .take_write()
            .map_err(|e| StoreError::Sled {
                op,
                source: sled::Error::Io(e),
            })
    }

    /// Applies one batch atomically, keeping the page counter exact.
    pub(crate) fn apply(&self, batch: CrawlBatch) -> Result<(), StoreError> {
        let _guard = self
            .inner
            .apply_lock
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        self.simulated_fault("batch write")?;
        // One write per key, the last one, as a single atomic write needs.
        let mut writes: BTreeMap<Vec<u8>, Option<Vec<u8>>> = batch.writes.into_iter().collect();
        let new_pages = self.count_new_pages(&mut writes)?;
        let pages = self.inner.pages.load(Ordering::Relaxed) + new_pages;
        if new_pages > 0 {
            writes.insert(
                keys::META_PAGES.to_vec(),
                Some(pages.to_be_bytes().to_vec()),
            );
        }
        self.inner.index.write(index::Rows::Crawl, writes)?;
        self.inner.pages.store(pages, Ordering::Relaxed);
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

    fn tree(&self, tree: Tree) -> &sled::Tree {
        match tree {
            Tree::Rules => &self.inner.rules,
            Tree::Alerts => &self.inner.alerts,
            Tree::Hosts => &self.inner.hosts,
            Tree::Meta => &self.inner.meta,
            Tree::Sitemaps => &self.inner.sitemaps,
        }
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

/// sled releases its file lock only when its background threads let go of
/// the database, a moment after the last handle is dropped; a store closed
/// just before (a restart in the same process) is waited for briefly.
fn open_db(path: &Path, cache_bytes: u64) -> Result<sled::Db, StoreError> {
    const LOCK_RETRIES: u32 = 20;
    let mut attempt = 0;
    loop {
        let opened = sled::Config::new()
            .path(path)
            .cache_capacity(cache_bytes)
            .open()
            .map_err(|source| open_error(path, source));
        match opened {
            Err(StoreError::Locked { .. }) if attempt < LOCK_RETRIES => {
                attempt += 1;
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            other => return other,
        }
    }
}

fn open_error(path: &Path, source: sled::Error) -> StoreError {
    // sled reports a held lock as an io error with this text (sled 0.34 config.rs).
    if let sled::Error::Io(io) = &source {
        if io.to_string().contains("could not acquire lock") {
            return StoreError::Locked {
                path: path.parent().unwrap_or(path).to_path_buf(),
            };
        }
    }
    StoreError::Open {
        path: path.to_path_buf(),
        source,
    }
}

fn tree_name(tree: Tree) -> &'static str {
    match tree {
        Tree::Rules => "rule",
        Tree::Alerts => "alert",
        Tree::Hosts => "host state",
        Tree::Meta => "meta record",
        Tree::Sitemaps => "host's sitemaps",
    }
}

fn corrupt(what: &'static str, message: impl Into<String>) -> StoreError {
    StoreError::Corrupt {
        what,
        message: message.into(),
    }
}

fn decode_json<T: DeserializeOwned>(bytes: &[u8], what: &'static str) -> Result<T, StoreError> {
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
