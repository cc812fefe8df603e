//! Who links to each URL: the page it was first found on and a few more.
//!
//! A crawl writes a referrer for nearly every new link of every page, at keys
//! in URL order: random inserts all over a growing key space. In sled they
//! cost as much CPU as the rest of the store together and, once they outgrew
//! sled's cache, its memory ran away (README, "Memory"). So they live in an
//! LSM tree of their own (fjall, `<data dir>/referrers`), where a write is an
//! append to a journal and a memtable, sorted into files in the background.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use fjall::{Database, Keyspace, KeyspaceCreateOptions, PersistMode};

use super::{keys, private, Store, StoreError};
use crate::engine::dedup::FingerprintSet;

/// Referrers kept per URL: the page it was first found on and a few more.
/// Bounded so that a link on every page (a site's menu) costs one read per
/// page, not an ever-growing value.
pub const MAX_REFERRERS: usize = 3;

/// Slots of the referrer counter, two bits each: 1 MiB whatever the crawl's
/// size, small enough to stay in a core's cache.
const COUNT_SLOTS: usize = 1 << 22;
/// Slots in a 64-byte cache line.
const LINE: usize = 256;
// A slot counts up to MAX_REFERRERS - 1 further referrers in two bits.
const _: () = assert!(MAX_REFERRERS - 1 <= 3);

/// Referrer writes applied together (one journal write each).
const REFERRER_BATCH: usize = 1024;
/// The memtable: sorted into a file on disk when it reaches this size
/// (2 MiB: 15 MB less peak RSS than 8 MiB on the shared bench, same CPU).
const MEMTABLE_BYTES: u64 = 2 * 1024 * 1024;
/// Block cache for reads (listings, the inspector); the crawl only writes.
const CACHE_BYTES: u64 = 1024 * 1024;

/// How many further referrers each URL has, estimated in fixed memory (a
/// count-min sketch over URL fingerprints, two probes, conservative update).
/// It only ever overestimates, so a URL never gets more than
/// `MAX_REFERRERS - 1` further referrers in a run, and checking a link costs
/// no read of the store. It starts empty on resume: a resumed crawl may add
/// that many again.
///
/// It also holds the referrer writes not applied yet, applied in groups of
/// [`REFERRER_BATCH`] and at every flush.
#[derive(Default)]
pub(super) struct ReferrerCounts {
    slots: Vec<u8>,
    pending: Vec<(Vec<u8>, Vec<u8>)>,
}

impl ReferrerCounts {
    /// Counts one more referrer of `fp`; false if it has its share already.
    fn admit(&mut self, fp: u64) -> bool {
        if self.slots.is_empty() {
            self.slots = vec![0; COUNT_SLOTS / 4];
        }
        // Both slots in one cache line: one miss per link, not two.
        let a = fp as usize & (COUNT_SLOTS - 1);
        let b = (a & !(LINE - 1)) | ((fp >> 32) as usize & (LINE - 1));
        let b = if b == a { a ^ 1 } else { b };
        let estimate = self.slot(a).min(self.slot(b));
        if usize::from(estimate) + 1 >= MAX_REFERRERS {
            return false;
        }
        for i in [a, b] {
            if self.slot(i) <= estimate {
                self.slots[i / 4] += 1 << (2 * (i % 4));
            }
        }
        true
    }

    fn slot(&self, i: usize) -> u8 {
        (self.slots[i / 4] >> (2 * (i % 4))) & 3
    }
}

/// The referrer rows of a data directory and the counts of this run.
pub(super) struct ReferrerIndex {
    /// `<data dir>/referrers`.
    path: PathBuf,
    /// Opened at the first use: fjall makes a 64 MiB (sparse) journal file
    /// at once, so a file size limit (`ulimit -f`) fails the first write,
    /// like any other write the disk refuses, not the start.
    lsm: Mutex<Option<Lsm>>,
    /// Rows written since the last persist: the store flushes with every
    /// group commit and command, and most find nothing new here to sync.
    unsynced: AtomicBool,
    counts: Mutex<ReferrerCounts>,
}

/// fjall's handles (reference counted).
#[derive(Clone)]
struct Lsm {
    db: Database,
    rows: Keyspace,
}

impl ReferrerIndex {
    /// The index of the data directory `data_dir`, in `<data_dir>/referrers`.
    pub(super) fn new(data_dir: &Path) -> ReferrerIndex {
        ReferrerIndex {
            path: data_dir.join("referrers"),
            lsm: Mutex::default(),
            unsynced: AtomicBool::new(false),
            counts: Mutex::default(),
        }
    }

    fn open_error(&self, source: fjall::Error) -> StoreError {
        StoreError::OpenReferrers {
            path: self.path.clone(),
            source,
        }
    }

    /// fjall's handles, opening (or creating) the index, private to the user,
    /// on first use. A database closed just before in this process is waited
    /// for briefly.
    fn lsm(&self) -> Result<Lsm, StoreError> {
        const LOCK_RETRIES: u32 = 20;
        let mut lsm = self.lsm.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(open) = lsm.as_ref() {
            return Ok(open.clone());
        }
        let fresh = std::fs::read_dir(&self.path).map_or(true, |mut d| d.next().is_none());
        private::create_private_dir_all(&self.path)
            .map_err(|e| self.open_error(fjall::Error::Io(e)))?;
        let mut attempt = 0;
        let db = loop {
            // The journal lives only until its memtable is on disk: not
            // worth compressing.
            let opened = Database::builder(&self.path)
                .journal_compression(fjall::CompressionType::None)
                .cache_size(CACHE_BYTES)
                .worker_threads(1)
                .open();
            match opened {
                Err(fjall::Error::Locked) if attempt < LOCK_RETRIES => {
                    attempt += 1;
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
                Err(fjall::Error::Locked) => {
                    let data_dir = self.path.parent().unwrap_or(&self.path);
                    return Err(StoreError::Locked {
                        path: data_dir.to_path_buf(),
                    });
                }
                Err(e) => {
                    // A half-made index holds nothing, and fjall would not
                    // open it again: the next attempt starts afresh.
                    if fresh {
                        let _ = std::fs::remove_dir_all(&self.path);
                    }
                    return Err(self.open_error(e));
                }
                Ok(db) => break db,
            }
        };
        let rows = db
            .keyspace("referrers", || {
                KeyspaceCreateOptions::default().max_memtable_size(MEMTABLE_BYTES)
            })
            .map_err(|e| self.open_error(e))?;
        // Files of an earlier run that ended without closing the index.
        private::restrict_tree(&self.path).map_err(|e| self.open_error(fjall::Error::Io(e)))?;
        Ok(lsm.insert(Lsm { db, rows }).clone())
    }

    /// Moves the rows an earlier version kept in sled's `referrers` tree
    /// here, then drops that tree.
    pub(super) fn adopt_sled_rows(&self, db: &sled::Db) -> Result<(), StoreError> {
        const LEGACY_TREE: &str = "referrers";
        if !db
            .tree_names()
            .iter()
            .any(|name| name == LEGACY_TREE.as_bytes())
        {
            return Ok(());
        }
        let legacy = db
            .open_tree(LEGACY_TREE)
            .map_err(StoreError::sled("referrer import"))?;
        let mut rows = Vec::new();
        for item in legacy.iter() {
            let (key, value) = item.map_err(StoreError::sled("referrer import"))?;
            rows.push((key.to_vec(), value.to_vec()));
            if rows.len() >= REFERRER_BATCH {
                self.write(std::mem::take(&mut rows))?;
            }
        }
        self.write(rows)?;
        self.persist()?;
        db.drop_tree(LEGACY_TREE)
            .map_err(StoreError::sled("referrer import"))?;
        Ok(())
    }

    fn counts(&self) -> std::sync::MutexGuard<'_, ReferrerCounts> {
        self.counts
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn write(&self, rows: Vec<(Vec<u8>, Vec<u8>)>) -> Result<(), StoreError> {
        if rows.is_empty() {
            return Ok(());
        }
        let lsm = self.lsm()?;
        let mut batch = lsm.db.batch();
        for (key, value) in rows {
            batch.insert(&lsm.rows, key, value);
        }
        batch.commit().map_err(|source| StoreError::Referrers {
            op: "write",
            source,
        })?;
        self.unsynced.store(true, Ordering::Release);
        Ok(())
    }

    /// Makes what was written durable (nothing to do if nothing was).
    fn persist(&self) -> Result<(), StoreError> {
        if !self.unsynced.swap(false, Ordering::AcqRel) {
            return Ok(());
        }
        let lsm = self.lsm()?;
        lsm.db.persist(PersistMode::SyncData).map_err(|source| {
            self.unsynced.store(true, Ordering::Release);
            StoreError::Referrers {
                op: "flush",
                source,
            }
        })
    }

    /// Writes the referrers held back and makes all of them durable.
    pub(super) fn flush(&self) -> Result<(), StoreError> {
        let pending = std::mem::take(&mut self.counts().pending);
        self.write(pending)?;
        self.persist()
    }
}

impl Drop for ReferrerIndex {
    fn drop(&mut self) {
        let open = self.lsm.get_mut().unwrap_or_else(|p| p.into_inner()).take();
        if open.is_some() {
            // fjall makes its files with the umask's modes: once it has
            // stopped (its last handle gone), they are made private too.
            drop(open);
            let _ = private::restrict_tree(&self.path);
        }
    }
}

/// Key of a URL's first referrer: the URL and a 0 byte (URLs never hold one).
fn first_key(url: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(url.len() + 1);
    key.extend_from_slice(url.as_bytes());
    key.push(0);
    key
}

/// Key of a further referrer: the first key and the referring URL.
fn further_key(url: &str, parent: &str) -> Vec<u8> {
    let mut key = first_key(url);
    key.extend_from_slice(parent.as_bytes());
    key
}

impl Store {
    /// Records `parent` as a referrer of each link: the first referrer of a
    /// link never seen before (`true`), a further one (at most
    /// [`MAX_REFERRERS`]` - 1`) of the others. Writes only, no reads.
    pub(crate) fn add_referrers<'a>(
        &self,
        parent: &str,
        links: impl Iterator<Item = (&'a str, bool)>,
    ) -> Result<(), StoreError> {
        let index = &self.inner.referrers;
        let mut counts = index.counts();
        let order = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64)
            .to_be_bytes();
        let mut done = FingerprintSet::default();
        for (target, fresh) in links {
            let fingerprint = keys::url_fingerprint(target);
            if !done.insert(fingerprint) {
                continue;
            }
            if fresh {
                counts
                    .pending
                    .push((first_key(target), parent.as_bytes().to_vec()));
            } else if target != parent && counts.admit(fingerprint) {
                counts
                    .pending
                    .push((further_key(target, parent), order.to_vec()));
            }
        }
        if counts.pending.len() < REFERRER_BATCH {
            return Ok(());
        }
        let pending = std::mem::take(&mut counts.pending);
        drop(counts);
        index.write(pending)
    }

    /// The referrers of `url`: the page it was first found on, then the
    /// others in the order they were found (at most [`MAX_REFERRERS`]).
    pub fn referrers(&self, url: &str) -> Result<Vec<String>, StoreError> {
        let mut entries = ReferrerEntries::new(&self.inner.referrers, &first_key(url))?;
        Ok(entries
            .next()
            .transpose()?
            .map(|(_, r)| r)
            .unwrap_or_default())
    }

    /// `(url, referrers)` for URLs starting with `url_prefix`, in URL order.
    pub fn referrer_entries(
        &self,
        url_prefix: &str,
    ) -> super::query::Entries<(String, Vec<String>)> {
        match ReferrerEntries::new(&self.inner.referrers, url_prefix.as_bytes()) {
            Ok(entries) => Box::new(entries),
            Err(e) => Box::new(std::iter::once(Err(e))),
        }
    }
}

type Rows = std::iter::Peekable<Box<dyn Iterator<Item = fjall::Result<fjall::KvPair>> + Send>>;

/// The referrer keys of one URL after another, gathered per URL. Keys sort
/// by URL first (the 0 byte sorts before any URL character), so one URL's
/// keys are adjacent and URLs come in the order page records do.
struct ReferrerEntries {
    inner: Rows,
}

impl ReferrerEntries {
    fn new(index: &ReferrerIndex, prefix: &[u8]) -> Result<ReferrerEntries, StoreError> {
        let lsm = index.lsm()?;
        let rows: Box<dyn Iterator<Item = _> + Send> =
            Box::new(lsm.rows.prefix(prefix).map(|guard| guard.into_inner()));
        Ok(ReferrerEntries {
            inner: rows.peekable(),
        })
    }
}

/// `(url, referring URL)` of a key; the referring URL is empty in a first-referrer key.
fn split_key(key: &[u8]) -> Result<(&str, &str), StoreError> {
    let at = key
        .iter()
        .position(|b| *b == 0)
        .ok_or_else(|| super::corrupt("referrer key", "no separator"))?;
    let text = |b| std::str::from_utf8(b).map_err(|_| super::corrupt("referrer key", "not UTF-8"));
    Ok((text(&key[..at])?, text(&key[at + 1..])?))
}

impl Iterator for ReferrerEntries {
    type Item = Result<(String, Vec<String>), StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        let scan_error = |source| StoreError::Referrers { op: "scan", source };
        let (key, value) = match self.inner.next()? {
            Ok(kv) => kv,
            Err(e) => return Some(Err(scan_error(e))),
        };
        let mut first = None;
        let mut further: Vec<(Vec<u8>, String)> = Vec::new();
        let mut take = |key: &[u8], value: &[u8]| -> Result<String, StoreError> {
            let (url, parent) = split_key(key)?;
            if parent.is_empty() {
                first = Some(String::from_utf8_lossy(value).into_owned());
            } else {
                further.push((value.to_vec(), parent.to_string()));
            }
            Ok(url.to_string())
        };
        let url = match take(&key, &value) {
            Ok(u) => u,
            Err(e) => return Some(Err(e)),
        };
        loop {
            let same = match self.inner.peek() {
                Some(Ok((k, _))) => split_key(k).is_ok_and(|(u, _)| u == url),
                _ => false,
            };
            if !same {
                break;
            }
            match self.inner.next() {
                Some(Ok((k, v))) => {
                    if let Err(e) = take(&k, &v) {
                        return Some(Err(e));
                    }
                }
                Some(Err(e)) => return Some(Err(scan_error(e))),
                None => break,
            }
        }
        further.sort();
        let mut list: Vec<String> = first.into_iter().collect();
        for (_, parent) in further {
            if list.len() >= MAX_REFERRERS {
                break;
            }
            if !list.contains(&parent) {
                list.push(parent);
            }
        }
        Some(Ok((url, list)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn referrers_keep_the_first_and_a_bounded_number_more() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        let (target, other) = ("http://a.example/t", "http://a.example/t/x");
        store
            .add_referrers(
                "http://a.example/p0",
                [(target, true), (other, true)].into_iter(),
            )
            .unwrap();
        for n in 1..10 {
            let parent = format!("http://a.example/p{n}");
            let links = [(target, false), (target, false), (other, false)];
            store.add_referrers(&parent, links.into_iter()).unwrap();
        }
        store.flush().unwrap();
        let refs = store.referrers(target).unwrap();
        assert_eq!(refs.len(), MAX_REFERRERS, "{refs:?}");
        assert_eq!(refs[0], "http://a.example/p0", "the first-found page leads");
        assert!(refs.iter().all(|r| r.starts_with("http://a.example/p")));
        assert!(store.referrers("http://a.example/none").unwrap().is_empty());
        assert!(store.referrers("http://a.example/").unwrap().is_empty());
        let entries: Vec<(String, usize)> = store
            .referrer_entries("http://a.example/")
            .map(|e| e.map(|(url, refs)| (url, refs.len())).unwrap())
            .collect();
        assert_eq!(
            entries,
            [
                (target.to_string(), MAX_REFERRERS),
                (other.to_string(), MAX_REFERRERS)
            ]
        );
    }

    #[test]
    fn the_referrer_count_never_lets_a_url_past_its_share() {
        let mut counts = ReferrerCounts::default();
        let admitted = (0..100).filter(|_| counts.admit(42)).count();
        assert_eq!(admitted, MAX_REFERRERS - 1);
        assert!(counts.admit(43), "another URL has its own count");
    }

    #[test]
    fn packed_counts_of_many_urls_stay_apart() {
        let mut counts = ReferrerCounts::default();
        let urls: Vec<u64> = (0..50_000u64)
            .map(|i| keys::url_fingerprint(&format!("http://a.test/{i}")))
            .collect();
        let mut admitted = vec![0usize; urls.len()];
        for _ in 0..MAX_REFERRERS + 1 {
            for (n, &fp) in admitted.iter_mut().zip(&urls) {
                *n += usize::from(counts.admit(fp));
            }
        }
        assert!(admitted.iter().all(|&n| n < MAX_REFERRERS));
        let full = admitted.iter().filter(|&&n| n == MAX_REFERRERS - 1).count();
        assert!(
            full * 100 >= urls.len() * 99,
            "{full} of {} got their share",
            urls.len()
        );
    }

    #[test]
    fn referrers_survive_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = Store::open(dir.path(), 1 << 20).unwrap();
            let links = [("http://a.example/t", true)];
            store
                .add_referrers("http://a.example/p", links.into_iter())
                .unwrap();
            store.flush().unwrap();
        }
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        assert_eq!(
            store.referrers("http://a.example/t").unwrap(),
            ["http://a.example/p"]
        );
    }

    #[test]
    fn referrers_an_earlier_version_kept_in_sled_move_to_the_index() {
        let dir = tempfile::tempdir().unwrap();
        {
            let db = sled::open(dir.path().join("db")).unwrap();
            let legacy = db.open_tree("referrers").unwrap();
            let target = "http://a.example/t";
            legacy
                .insert(first_key(target), "http://a.example/p0")
                .unwrap();
            legacy
                .insert(
                    further_key(target, "http://a.example/p1"),
                    &7u64.to_be_bytes(),
                )
                .unwrap();
            db.flush().unwrap();
        }
        let expected = ["http://a.example/p0", "http://a.example/p1"];
        {
            let store = Store::open(dir.path(), 1 << 20).unwrap();
            assert_eq!(store.referrers("http://a.example/t").unwrap(), expected);
            let trees = store.inner.db.tree_names();
            assert!(
                !trees.iter().any(|name| name == b"referrers"),
                "sled's tree is gone"
            );
        }
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        assert_eq!(store.referrers("http://a.example/t").unwrap(), expected);
    }

    #[test]
    fn a_flush_syncs_the_index_only_after_a_write() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        store.flush().unwrap();
        assert!(
            !dir.path().join("referrers").exists(),
            "no index is made for nothing"
        );
        let index = &store.inner.referrers;
        let row = (
            first_key("http://a.example/t"),
            b"http://a.example/p".to_vec(),
        );
        index.write(vec![row]).unwrap();
        assert!(index.unsynced.load(Ordering::Acquire));
        store.flush().unwrap();
        assert!(!index.unsynced.load(Ordering::Acquire));
        assert_eq!(
            store.referrers("http://a.example/t").unwrap(),
            ["http://a.example/p"]
        );
    }
}
