//! The crawl's index: an LSM tree (fjall, `<data dir>/index`) for what a
//! crawl writes on every page, mostly at random keys, which sled's B-tree
//! made expensive: the crawl tree (queue, seen marks, page records, parked
//! URLs; see `keys.rs`), who links to each URL (`referrers.rs`) and the
//! first URL of each content digest (`digests.rs`). A write is an append to
//! a journal and a memtable, sorted into files in the background.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use fjall::config::PinningPolicy;
use fjall::{Database, Keyspace, KeyspaceCreateOptions, PersistMode};

use super::batch::Writes;
use super::{private, StoreError};

/// The memtable of the referrers and digests: sorted into a file on disk
/// when it reaches this size (2 MiB: 15 MB less peak RSS than 8 MiB on the
/// shared bench, same CPU).
const MEMTABLE_BYTES: u64 = 2 * 1024 * 1024;
/// Journals kept before the oldest memtables are written out: each journal
/// byte not yet in a table is also in a memtable, in memory.
const MAX_JOURNALING_BYTES: u64 = 64 * 1024 * 1024;
/// The crawl tree's memtable: a queue key is removed soon after it is
/// written, and the pair often meets in memory.
const CRAWL_MEMTABLE_BYTES: u64 = 8 * 1024 * 1024;
/// Where earlier versions kept this database, with the referrers only.
const LEGACY_DIR: &str = "referrers";

/// The index's keyspaces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Rows {
    Crawl,
    Referrers,
    Digests,
}

impl Rows {
    fn name(self) -> &'static str {
        match self {
            Rows::Crawl => "crawl",
            Rows::Referrers => "referrers",
            Rows::Digests => "digests",
        }
    }
}

pub(super) struct CrawlIndex {
    /// `<data dir>/index`.
    path: PathBuf,
    /// Block cache for reads (`storage.cache_bytes`).
    cache_bytes: u64,
    /// Opened by `Store::open`, which fails if it cannot be (fjall makes a
    /// 64 MiB journal file at once: a file size limit below that fails there).
    open: Mutex<Option<Handles>>,
    /// Rows written since the last persist: the store flushes with every
    /// group commit and command, and most find nothing new here to sync.
    unsynced: AtomicBool,
}

/// fjall's handles (reference counted).
#[derive(Clone)]
pub(super) struct Handles {
    db: Database,
    crawl: Keyspace,
    referrers: Keyspace,
    digests: Keyspace,
}

impl Handles {
    pub(super) fn rows(&self, rows: Rows) -> &Keyspace {
        match rows {
            Rows::Crawl => &self.crawl,
            Rows::Referrers => &self.referrers,
            Rows::Digests => &self.digests,
        }
    }
}

impl CrawlIndex {
    /// The index of the data directory `data_dir`, in `<data_dir>/index`.
    pub(super) fn new(data_dir: &Path, cache_bytes: u64) -> CrawlIndex {
        CrawlIndex {
            path: data_dir.join("index"),
            cache_bytes,
            open: Mutex::default(),
            unsynced: AtomicBool::new(false),
        }
    }

    fn open_error(&self, source: fjall::Error) -> StoreError {
        StoreError::OpenIndex {
            path: self.path.clone(),
            source,
        }
    }

    /// fjall's handles, opening (or creating) the index, private to the user,
    /// on first use. A database closed just before in this process is waited
    /// for briefly.
    pub(super) fn handles(&self) -> Result<Handles, StoreError> {
        const LOCK_RETRIES: u32 = 20;
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(handles) = open.as_ref() {
            return Ok(handles.clone());
        }
        let data_dir = self.path.parent().unwrap_or(&self.path);
        let legacy = data_dir.join(LEGACY_DIR);
        if legacy.is_dir() && !self.path.exists() {
            std::fs::rename(&legacy, &self.path)
                .map_err(|e| self.open_error(fjall::Error::Io(e)))?;
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
                .cache_size(self.cache_bytes)
                .max_journaling_size(MAX_JOURNALING_BYTES)
                .worker_threads(2)
                .open();
            match opened {
                Err(fjall::Error::Locked) if attempt < LOCK_RETRIES => {
                    attempt += 1;
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
                Err(fjall::Error::Locked) => {
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
        let keyspace = |rows: Rows| {
            let memtable = match rows {
                Rows::Crawl => CRAWL_MEMTABLE_BYTES,
                Rows::Referrers | Rows::Digests => MEMTABLE_BYTES,
            };
            // Filters and block indexes stay in memory (~2 bytes a key): read
            // through the cache, a large table's filter was read again for
            // nearly every lookup once the crawl outgrew the cache.
            db.keyspace(rows.name(), || {
                KeyspaceCreateOptions::default()
                    .max_memtable_size(memtable)
                    .filter_block_pinning_policy(PinningPolicy::all(true))
                    .index_block_pinning_policy(PinningPolicy::all(true))
            })
            .map_err(|e| self.open_error(e))
        };
        let handles = Handles {
            crawl: keyspace(Rows::Crawl)?,
            referrers: keyspace(Rows::Referrers)?,
            digests: keyspace(Rows::Digests)?,
            db,
        };
        // Files of an earlier run that ended without closing the index.
        private::restrict_tree(&self.path).map_err(|e| self.open_error(fjall::Error::Io(e)))?;
        Ok(open.insert(handles).clone())
    }

    /// Writes `rows` into `to`, atomically; durable at the next [`CrawlIndex::persist`].
    pub(super) fn write(&self, to: Rows, rows: Vec<(Vec<u8>, Vec<u8>)>) -> Result<(), StoreError> {
        if rows.is_empty() {
            return Ok(());
        }
        let handles = self.handles()?;
        let keyspace = handles.rows(to);
        let mut batch = handles.db.batch();
        for (key, value) in rows {
            batch.insert(keyspace, key, value);
        }
        batch.commit().map_err(|source| StoreError::Index {
            op: "write",
            source,
        })?;
        self.unsynced.store(true, Ordering::Release);
        Ok(())
    }

    /// Applies `writes` to the crawl tree atomically (the last write of a
    /// key counts); durable at the next [`CrawlIndex::persist`].
    pub(super) fn apply(&self, writes: Writes) -> Result<(), StoreError> {
        let last: BTreeMap<Vec<u8>, Option<Vec<u8>>> = writes.into_iter().collect();
        let handles = self.handles()?;
        let mut batch = handles.db.batch();
        for (key, value) in last {
            match value {
                Some(value) => batch.insert(&handles.crawl, key, value),
                None => batch.remove(&handles.crawl, key),
            }
        }
        batch.commit().map_err(StoreError::index("batch write"))?;
        self.unsynced.store(true, Ordering::Release);
        Ok(())
    }

    /// The value of `key` in `rows`.
    pub(super) fn get(&self, rows: Rows, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        let handles = self.handles()?;
        let value = handles
            .rows(rows)
            .get(key)
            .map_err(|source| StoreError::Index { op: "read", source })?;
        Ok(value.map(|v| v.to_vec()))
    }

    /// Makes what was written durable (nothing to do if nothing was).
    pub(super) fn persist(&self) -> Result<(), StoreError> {
        if !self.unsynced.swap(false, Ordering::AcqRel) {
            return Ok(());
        }
        let handles = self.handles()?;
        handles.db.persist(PersistMode::SyncData).map_err(|source| {
            self.unsynced.store(true, Ordering::Release);
            StoreError::Index {
                op: "flush",
                source,
            }
        })
    }

    #[cfg(test)]
    pub(super) fn unsynced(&self) -> bool {
        self.unsynced.load(Ordering::Acquire)
    }
}

impl Drop for CrawlIndex {
    fn drop(&mut self) {
        let open = self
            .open
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if open.is_some() {
            // fjall makes its files with the umask's modes: once it has
            // stopped (its last handle gone), they are made private too.
            drop(open);
            let _ = private::restrict_tree(&self.path);
        }
    }
}

/// Moves the sled tree `name` an earlier version kept into `to`, then drops
/// it. Interrupted, it starts again on the next open: the tree stays whole
/// until the index holds all of it durably.
pub(super) fn adopt_sled_tree(
    index: &CrawlIndex,
    db: &sled::Db,
    name: &str,
    to: Rows,
) -> Result<(), StoreError> {
    if !db.tree_names().iter().any(|tree| tree == name.as_bytes()) {
        return Ok(());
    }
    let legacy = db
        .open_tree(name)
        .map_err(StoreError::sled("import into the index"))?;
    adopt_sled_rows(index, to, &legacy, b"", |v| Ok(v.to_vec()))?;
    db.drop_tree(name)
        .map_err(StoreError::sled("import into the index"))?;
    Ok(())
}

/// Copies the rows an earlier version kept in sled (all of `tree`, or its
/// keys under `prefix`) into `to`, the prefix cut and each value through
/// `convert`, and makes them durable. The caller then removes them from sled.
pub(super) fn adopt_sled_rows(
    index: &CrawlIndex,
    to: Rows,
    tree: &sled::Tree,
    prefix: &[u8],
    convert: impl Fn(&[u8]) -> Result<Vec<u8>, StoreError>,
) -> Result<(), StoreError> {
    const ROWS_PER_WRITE: usize = 1024;
    let mut rows = Vec::new();
    for item in tree.scan_prefix(prefix) {
        let (key, value) = item.map_err(StoreError::sled("import into the index"))?;
        rows.push((key[prefix.len()..].to_vec(), convert(&value)?));
        if rows.len() >= ROWS_PER_WRITE {
            index.write(to, std::mem::take(&mut rows))?;
        }
    }
    index.write(to, rows)?;
    index.persist()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::store::Store;

    fn row(key: &str, value: &str) -> Vec<(Vec<u8>, Vec<u8>)> {
        vec![(key.as_bytes().to_vec(), value.as_bytes().to_vec())]
    }

    #[test]
    fn a_flush_syncs_the_index_only_after_a_write() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        store.flush().unwrap();
        let index = &store.inner.index;
        assert!(!index.unsynced(), "nothing to sync after an open");
        index.write(Rows::Digests, row("k", "v")).unwrap();
        assert!(index.unsynced());
        store.flush().unwrap();
        assert!(!index.unsynced());
        assert_eq!(index.get(Rows::Digests, b"k").unwrap(), Some(b"v".to_vec()));
        assert_eq!(
            index.get(Rows::Referrers, b"k").unwrap(),
            None,
            "keyspaces apart"
        );
    }

    #[test]
    fn the_index_of_an_earlier_version_is_moved_to_its_new_place() {
        let dir = tempfile::tempdir().unwrap();
        {
            let index = CrawlIndex::new(dir.path(), 1 << 20);
            index.write(Rows::Referrers, row("k", "v")).unwrap();
            index.persist().unwrap();
        }
        std::fs::rename(dir.path().join("index"), dir.path().join(LEGACY_DIR)).unwrap();
        let index = CrawlIndex::new(dir.path(), 1 << 20);
        assert_eq!(
            index.get(Rows::Referrers, b"k").unwrap(),
            Some(b"v".to_vec())
        );
        assert!(!dir.path().join(LEGACY_DIR).exists());
    }
}
