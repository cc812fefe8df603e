//! The crawl's one database: an LSM tree (fjall, `<data dir>/index`). It
//! holds what a crawl writes on every page, mostly at random keys: the crawl
//! tree (queue, seen marks, page records, parked URLs; see `keys.rs`), who
//! links to each URL (`referrers.rs`), the first URL of each content digest
//! (`digests.rs`), the links left out (`query.rs`); and the small typed
//! records (rules, alerts, hosts, meta, sitemaps; see `records_key`). A
//! write is an append to a journal and a memtable, sorted into files in the
//! background; one write may span keyspaces and is atomic.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use fjall::compaction::Leveled;
use fjall::config::{BlockSizePolicy, FilterPolicy, PinningPolicy};
use fjall::{Database, Keyspace, KeyspaceCreateOptions, PersistMode};

use super::{private, StoreError};

/// The memtable of the referrers and digests: sorted into a file on disk
/// when it reaches this size (2 MiB: 15 MB less peak RSS than 8 MiB on the
/// shared bench, same CPU).
const MEMTABLE_BYTES: u64 = 2 * 1024 * 1024;
/// Journals kept before the oldest memtables are written out: each journal
/// byte not yet in a table is also in a memtable, in memory.
const MAX_JOURNALING_BYTES: u64 = 64 * 1024 * 1024;
/// The crawl tree's memtable: a queue key is removed soon after it is
/// written, and the pair often meets in memory. 4 MiB cost no CPU against
/// 8 on the bench, and 7 MB less peak RSS (docs/PERFORMANCE.md).
const CRAWL_MEMTABLE_BYTES: u64 = 4 * 1024 * 1024;
/// fjall's background threads. With one, flushes wait behind compactions
/// and sealed memtables pile up (a 200,000-page bench grew past 1 GB). With
/// two, fjall keeps its first worker for flushes by handing each compaction
/// it receives back to the queue at once, so while the second compacts the
/// first spins on the queue: 20 % of the crawl's CPU samples. A third takes
/// those compactions off the queue (1.5 % left).
const FJALL_WORKERS: usize = 3;
/// The size of the tables compactions write in the keyspaces with filters
/// (fjall's default: 64 MiB). A table's writer keeps the hash of every key
/// it writes until the filter is built: 8 bytes a key, 16–32 MB at once for
/// a 64 MiB table of the crawl tree's small rows, the peak of a long crawl.
const FILTERED_TABLE_BYTES: u64 = 16 * 1024 * 1024;
/// The size of the tables compactions write in the keyspaces read by
/// prefix (referrers and fragments; the inlink counts, read whole at
/// opening). The first two's keys are URLs, written in
/// random order, so every table flushed to level 0 overlaps all of level 1,
/// and each merge into level 1 rewrites it whole: with fjall's 64 MiB tables
/// (a level 1 of 256 MiB) against 2 MiB memtables, up to 33 bytes written
/// for each byte flushed. 8 MiB tables keep that to ~5, and add a level.
const PREFIX_READ_TABLE_BYTES: u64 = 8 * 1024 * 1024;
/// The keyspaces read by prefix merge their level 0 into level 1
/// only once it holds this many tables (fjall's default: 4), and each level
/// is [`LEVEL_RATIO`] times the one above it. Their keys arrive in random
/// order, so every merge rewrites most of the level below; merging 16
/// tables at once and smaller steps between levels write each byte fewer
/// times. In the first 100,000 pages of the million-page bench, where
/// nearly every link is new and gets its referrer rows, fjall's workers
/// used 18–21 s of CPU against 26–29 s with the defaults
/// (docs/PERFORMANCE.md). fjall keeps a keyspace's settings, so a data
/// directory keeps those it was made with.
const PREFIX_READ_L0_TABLES: u8 = 16;
/// How many times each level is the one above it, in the keyspaces that
/// merge level 0 late (fjall's default: 10).
const LEVEL_RATIO: f32 = 4.0;
/// The referrers wait for more: they arrive as ingested tables of a few MB
/// (`referrer_batch.rs`), never through a write batch, and each merge
/// rewrites level 1 whole. In the first 100,000 pages of the million-page
/// bench 28 took fjall's workers from 0.095–0.100 ms of CPU a page to
/// 0.078–0.083 (docs/PERFORMANCE.md). It stays below the level-0 tables at
/// which fjall halts write batches to a keyspace until a compaction, which
/// would never come before the threshold (the copy of an old sled
/// database writes referrers in batches).
const REFERRER_L0_TABLES: u8 = 28;
/// The crawl tree merges level 0 at 20 tables, not fjall's 4, and levels
/// grow 4 times, not 10: in the first tenth of the million-page bench each
/// page queues ~10 new URLs (a queue row and a seen mark each), and most
/// queue rows meet their removal in level 0 instead of in a rewrite of
/// level 1. fjall's workers spent 0.078 ms of CPU a page there with the
/// defaults, 0.064 with 16 tables, 0.049 with 24 (docs/PERFORMANCE.md).
/// At 20 fjall starts slowing write batches, and this keyspace takes them.
const CRAWL_L0_TABLES: u8 = 20;
/// fjall slows every write batch to a keyspace whose level 0 holds this
/// many runs, and halts it at [`FJALL_HALT_L0_RUNS`].
const FJALL_STALL_L0_RUNS: u8 = 20;
const _: () = assert!(CRAWL_L0_TABLES <= FJALL_STALL_L0_RUNS);
/// fjall halts a write batch while a keyspace's level 0 holds this many runs.
const FJALL_HALT_L0_RUNS: u8 = 30;
const _: () = assert!(REFERRER_L0_TABLES < FJALL_HALT_L0_RUNS);
/// The data blocks of the crawl tree and the content digests (fjall's
/// default: 4 KiB). Their block indexes stay in memory, an entry (the
/// block's last key) a block, so they grew with the crawl; 16 KiB blocks
/// keep a quarter of the entries. A lookup reads and decompresses 16 KiB
/// instead of 4: the seen check asks the store only when the Bloom filter
/// and the recent set could not answer, and a digest lookup mostly ends at
/// the filter.
const LOOKED_UP_BLOCK_BYTES: u32 = 16 * 1024;
/// The database's directory inside a data directory.
pub const INDEX_DIR: &str = "index";
/// Where earlier versions kept this database, with the referrers only.
const LEGACY_DIR: &str = "referrers";

/// The index's keyspaces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Rows {
    Crawl,
    Referrers,
    Digests,
    Inlinks,
    Fragments,
    /// Links left out, by URL: written at the crawl's pace, read by URL
    /// prefix beside the page records, so a keyspace (and memtable) of its own.
    Filtered,
    /// The five small typed trees in one keyspace, each under a tag byte
    /// (`records_key`): a few KB written now and then and read whole at
    /// start, not worth a memtable, a journal share and files each.
    Records,
}

/// One write of [`CrawlIndex::write_all`]: the keyspace, the key, and a
/// value to insert or `None` to remove the key.
pub(super) type KeyspaceWrite = (Rows, Vec<u8>, Option<Vec<u8>>);

/// How often the crawl looks a keyspace's rows up by key, which decides
/// its filters.
#[derive(Clone, Copy, PartialEq, Eq)]
enum LookedUp {
    /// On the crawl's path: the seen check, a payload digest, a link left
    /// out before.
    Often,
    /// Now and then: a `#fragment` pair whose bit in the written pairs'
    /// bitmap is set but which has left the known set.
    Rarely,
    /// Never: read by prefix only, or whole.
    Never,
}

impl Rows {
    fn looked_up(self) -> LookedUp {
        match self {
            Rows::Crawl | Rows::Digests | Rows::Filtered | Rows::Records => LookedUp::Often,
            Rows::Fragments => LookedUp::Rarely,
            Rows::Referrers | Rows::Inlinks => LookedUp::Never,
        }
    }

    /// How fjall makes this keyspace; an existing one keeps the settings it
    /// was made with.
    fn create_options(self) -> KeyspaceCreateOptions {
        let memtable = match self {
            Rows::Crawl => CRAWL_MEMTABLE_BYTES,
            Rows::Referrers
            | Rows::Digests
            | Rows::Inlinks
            | Rows::Fragments
            | Rows::Filtered
            | Rows::Records => MEMTABLE_BYTES,
        };
        let options = KeyspaceCreateOptions::default()
            .max_memtable_size(memtable)
            .compaction_strategy(Arc::new(self.compaction()));
        let options = match self.looked_up() {
            // Filters and block indexes stay in memory (~2 bytes a key):
            // read through the cache, a large table's filter was read again
            // for nearly every lookup once the crawl outgrew the cache.
            LookedUp::Often => options
                .filter_block_pinning_policy(PinningPolicy::all(true))
                .index_block_pinning_policy(PinningPolicy::all(true)),
            // Filters through the cache, nothing pinned: without them each
            // lookup read a block of every level-0 table (up to 16), 0.8 %
            // of the shared bench's CPU for ~4,400 lookups in 50,000 pages
            // (docs/PERFORMANCE.md).
            LookedUp::Rarely => options
                .filter_block_pinning_policy(PinningPolicy::all(false))
                .index_block_pinning_policy(PinningPolicy::all(false)),
            // A filter would never be asked, and pinned, these rows'
            // indexes grew memory with every page (inlinks were ~50 rows a
            // page); fjall's default pins the first two levels' indexes, 11
            // MB for referrers and inlinks early in a million-page bench.
            LookedUp::Never => options
                .filter_policy(FilterPolicy::disabled())
                .index_block_pinning_policy(PinningPolicy::all(false)),
        };
        let large_blocks = BlockSizePolicy::all(LOOKED_UP_BLOCK_BYTES);
        match self {
            // Its last level, most of its keys, has no filter: a seen mark
            // the Bloom filter could not rule out is mostly there, as is
            // the record a recrawl pass writes over (docs/PERFORMANCE.md).
            Rows::Crawl => options
                .data_block_size_policy(large_blocks)
                .expect_point_read_hits(true),
            Rows::Digests => options.data_block_size_policy(large_blocks),
            Rows::Referrers | Rows::Inlinks | Rows::Fragments | Rows::Filtered | Rows::Records => {
                options
            }
        }
    }

    /// When level 0 merges into level 1, how large each level grows, and the
    /// size of the tables compactions write.
    fn compaction(self) -> Leveled {
        let merged_late = |l0_tables, table_bytes| {
            Leveled::default()
                .with_table_target_size(table_bytes)
                .with_l0_threshold(l0_tables)
                .with_level_ratio_policy(vec![LEVEL_RATIO])
        };
        match self {
            Rows::Crawl => merged_late(CRAWL_L0_TABLES, FILTERED_TABLE_BYTES),
            Rows::Referrers => merged_late(REFERRER_L0_TABLES, PREFIX_READ_TABLE_BYTES),
            Rows::Inlinks | Rows::Fragments => {
                merged_late(PREFIX_READ_L0_TABLES, PREFIX_READ_TABLE_BYTES)
            }
            Rows::Digests | Rows::Filtered | Rows::Records => {
                Leveled::default().with_table_target_size(FILTERED_TABLE_BYTES)
            }
        }
    }

    fn name(self) -> &'static str {
        match self {
            Rows::Crawl => "crawl",
            Rows::Referrers => "referrers",
            Rows::Digests => "digests",
            Rows::Inlinks => "inlinks",
            Rows::Fragments => "fragments",
            Rows::Filtered => "filtered",
            Rows::Records => "records",
        }
    }
}

pub(super) struct CrawlIndex {
    /// `<data dir>/index`.
    path: PathBuf,
    /// Taken only by `Drop`, to close fjall before its files are restricted.
    handles: Option<Handles>,
    /// Rows written since the last persist: the store flushes with every
    /// group commit and command, and not all of them find something new.
    unsynced: AtomicBool,
}

/// fjall's handles.
struct Handles {
    db: Database,
    crawl: Keyspace,
    referrers: Keyspace,
    digests: Keyspace,
    inlinks: Keyspace,
    fragments: Keyspace,
    filtered: Keyspace,
    records: Keyspace,
}

fn open_error(path: &Path, source: fjall::Error) -> StoreError {
    StoreError::OpenIndex {
        path: path.to_path_buf(),
        source,
    }
}

/// Opens fjall's database at `path`, waiting briefly for one being closed
/// meanwhile on another thread of this process (a close on this thread has
/// waited already: `wait_for_release`). A new one that fails to open is
/// removed: it holds nothing, and fjall would not open it again.
fn open_database(path: &Path, cache_bytes: u64, fresh: bool) -> Result<Database, fjall::Error> {
    let locked = |e: &fjall::Error| matches!(e, fjall::Error::Locked);
    let opened = retry_while_locked(locked, || {
        // The journal lives only until its memtable is on disk: not worth compressing.
        Database::builder(path)
            .journal_compression(fjall::CompressionType::None)
            .cache_size(cache_bytes)
            .max_journaling_size(MAX_JOURNALING_BYTES)
            .worker_threads(FJALL_WORKERS)
            .open()
    });
    if let Err(e) = &opened {
        if fresh && !locked(e) {
            let _ = std::fs::remove_dir_all(path);
        }
    }
    opened
}

/// Times [`retry_while_locked`] asks again, 50 ms apart: about a second.
const LOCK_RETRIES: u32 = 20;
const LOCK_RETRY_PAUSE: std::time::Duration = std::time::Duration::from_millis(50);

/// `open`, asked again for about a second while it fails with a held lock:
/// a database closed just before in this process may let its lock go from
/// its own threads a moment later. Another process's lock is reported then.
pub(super) fn retry_while_locked<T, E>(
    is_locked: impl Fn(&E) -> bool,
    mut open: impl FnMut() -> Result<T, E>,
) -> Result<T, E> {
    for _ in 0..LOCK_RETRIES {
        match open() {
            Err(e) if is_locked(&e) => std::thread::sleep(LOCK_RETRY_PAUSE),
            opened => return opened,
        }
    }
    open()
}

impl CrawlIndex {
    /// Opens (or creates) the index of `data_dir`, `<data_dir>/index`,
    /// private to the user. fjall makes a 64 MiB (sparse) journal file at
    /// once, so a file size limit below that fails here. A database closed
    /// just before in this process is waited for briefly.
    pub(super) fn open(data_dir: &Path, cache_bytes: u64) -> Result<CrawlIndex, StoreError> {
        let path = data_dir.join(INDEX_DIR);
        let io_error = |e| open_error(&path, fjall::Error::Io(e));
        let legacy = data_dir.join(LEGACY_DIR);
        if legacy.is_dir() && !path.exists() {
            std::fs::rename(&legacy, &path).map_err(io_error)?;
        }
        let fresh = std::fs::read_dir(&path).map_or(true, |mut d| d.next().is_none());
        private::create_private_dir_all(&path).map_err(io_error)?;
        let db = open_database(&path, cache_bytes, fresh).map_err(|e| match e {
            fjall::Error::Locked => StoreError::Locked {
                path: data_dir.to_path_buf(),
            },
            e => open_error(&path, e),
        })?;
        let keyspace = |rows: Rows| {
            db.keyspace(rows.name(), || rows.create_options())
                .map_err(|e| open_error(&path, e))
        };
        let handles = Handles {
            crawl: keyspace(Rows::Crawl)?,
            referrers: keyspace(Rows::Referrers)?,
            digests: keyspace(Rows::Digests)?,
            inlinks: keyspace(Rows::Inlinks)?,
            fragments: keyspace(Rows::Fragments)?,
            filtered: keyspace(Rows::Filtered)?,
            records: keyspace(Rows::Records)?,
            db,
        };
        // Files of an earlier run that ended without closing the index.
        private::restrict_tree(&path).map_err(io_error)?;
        Ok(CrawlIndex {
            path,
            handles: Some(handles),
            unsynced: AtomicBool::new(false),
        })
    }

    fn handles(&self) -> &Handles {
        self.handles.as_ref().expect("open until dropped")
    }

    pub(super) fn rows(&self, rows: Rows) -> &Keyspace {
        let handles = self.handles();
        match rows {
            Rows::Crawl => &handles.crawl,
            Rows::Referrers => &handles.referrers,
            Rows::Digests => &handles.digests,
            Rows::Inlinks => &handles.inlinks,
            Rows::Fragments => &handles.fragments,
            Rows::Filtered => &handles.filtered,
            Rows::Records => &handles.records,
        }
    }

    /// Applies `writes` to `to` atomically, a value to insert or `None` to
    /// remove the key, each key at most once; durable at the next
    /// [`CrawlIndex::persist`].
    pub(super) fn write(
        &self,
        to: Rows,
        writes: impl IntoIterator<Item = (Vec<u8>, Option<Vec<u8>>)>,
    ) -> Result<(), StoreError> {
        self.write_all(writes.into_iter().map(|(key, value)| (to, key, value)))
    }

    /// [`CrawlIndex::write`] across keyspaces: one atomic write, each
    /// (keyspace, key) at most once. Handed to the operating system before
    /// it returns (fjall's default), so it survives `kill -9` at once.
    pub(super) fn write_all(
        &self,
        writes: impl IntoIterator<Item = KeyspaceWrite>,
    ) -> Result<(), StoreError> {
        let mut batch = self.handles().db.batch();
        for (to, key, value) in writes {
            let keyspace = self.rows(to);
            match value {
                Some(value) => batch.insert(keyspace, key, value),
                None => batch.remove(keyspace, key),
            }
        }
        if batch.is_empty() {
            return Ok(());
        }
        batch.commit().map_err(StoreError::index("write"))?;
        self.unsynced.store(true, Ordering::Release);
        Ok(())
    }

    /// Writes `rows`, sorted by key and each key once, as tables of `to`
    /// directly (fjall's ingestion): no journal, no memtable. Newer than
    /// every row already there.
    pub(super) fn ingest<'a>(
        &self,
        to: Rows,
        rows: impl Iterator<Item = (&'a [u8], &'a [u8])>,
    ) -> Result<(), StoreError> {
        let error = StoreError::index("ingest");
        let mut ingestion = self.rows(to).start_ingestion().map_err(&error)?;
        for (key, value) in rows {
            ingestion.write(key, value).map_err(&error)?;
        }
        ingestion.finish().map_err(error)
    }

    /// Makes what was written durable (nothing to do if nothing was).
    pub(super) fn persist(&self) -> Result<(), StoreError> {
        if !self.unsynced.swap(false, Ordering::AcqRel) {
            return Ok(());
        }
        let synced = self.handles().db.persist(PersistMode::SyncData);
        synced.map_err(|source| {
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
        drop(self.handles.take());
        // fjall's workers let the database go once they finish what they
        // were doing: until then its lock is held (an open of the same
        // directory fails with `Locked`) and files may still be written.
        wait_for_release(&self.path.join(FJALL_LOCK_FILE));
        // fjall makes its files with the umask's modes: now that it has
        // stopped, they are made private too.
        let _ = private::restrict_tree(&self.path);
    }
}

/// fjall's lock file in the database's directory, held while it is open.
const FJALL_LOCK_FILE: &str = "lock";
/// How long a closing database is waited for; a worker in a long merge on
/// a slow disk may take longer, and the directory is then left to it.
const RELEASE_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Waits (up to [`RELEASE_WAIT`]) until no one holds the lock at `lock`.
fn wait_for_release(lock: &Path) {
    let started = std::time::Instant::now();
    let Ok(file) = std::fs::File::open(lock) else {
        return;
    };
    loop {
        // Stable since 1.89; fjall itself needs 1.90.
        #[allow(clippy::incompatible_msrv)]
        match file.try_lock() {
            // Taken, so free; `file` lets it go as it is dropped.
            Ok(()) => return,
            Err(std::fs::TryLockError::WouldBlock) if started.elapsed() < RELEASE_WAIT => {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::store::Store;

    fn row(key: &str, value: &str) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
        vec![(key.as_bytes().to_vec(), Some(value.as_bytes().to_vec()))]
    }

    fn get(index: &CrawlIndex, rows: Rows, key: &[u8]) -> Option<Vec<u8>> {
        index.rows(rows).get(key).unwrap().map(|v| v.to_vec())
    }

    #[test]
    fn keyspaces_looked_up_by_key_have_filters_pinned_only_on_the_crawls_path() {
        let all = [
            Rows::Crawl,
            Rows::Referrers,
            Rows::Digests,
            Rows::Inlinks,
            Rows::Fragments,
            Rows::Filtered,
            Rows::Records,
        ];
        for rows in all {
            let options = rows.create_options();
            let filtered = options.filter_policy != FilterPolicy::disabled();
            let pinned = options.filter_block_pinning_policy == PinningPolicy::all(true);
            let expected = match rows.looked_up() {
                LookedUp::Often => (true, true),
                LookedUp::Rarely => (true, false),
                LookedUp::Never => (false, false),
            };
            assert_eq!((filtered, pinned), expected, "{}", rows.name());
        }
        assert!(Rows::Fragments.looked_up() == LookedUp::Rarely);
    }

    #[test]
    #[allow(clippy::incompatible_msrv)]
    fn a_closing_database_is_waited_for_until_its_lock_is_free() {
        let dir = tempfile::tempdir().unwrap();
        let lock = dir.path().join(FJALL_LOCK_FILE);
        let held = std::fs::File::create(&lock).unwrap();
        held.try_lock().unwrap();
        let (done, waited) = std::sync::mpsc::channel();
        let waiter = std::thread::spawn(move || {
            wait_for_release(&lock);
            done.send(()).unwrap();
        });
        let a_while = std::time::Duration::from_millis(100);
        assert!(waited.recv_timeout(a_while).is_err(), "held: still waiting");
        drop(held);
        waited
            .recv_timeout(RELEASE_WAIT)
            .expect("let go: the wait ends");
        waiter.join().unwrap();
    }

    #[test]
    fn a_held_lock_is_asked_again_for_a_while_and_other_errors_are_not() {
        let locked_then_open = |locks: u32| {
            let mut calls = 0;
            let opened = retry_while_locked(
                |e: &&str| *e == "locked",
                || {
                    calls += 1;
                    if calls <= locks {
                        Err("locked")
                    } else {
                        Ok(calls)
                    }
                },
            );
            (opened, calls)
        };
        assert_eq!(locked_then_open(0), (Ok(1), 1));
        assert_eq!(locked_then_open(2), (Ok(3), 3), "let go a moment later");
        let always = locked_then_open(u32::MAX);
        assert_eq!(always, (Err("locked"), LOCK_RETRIES + 1), "held: reported");
        let mut calls = 0;
        let other = retry_while_locked(
            |e: &&str| *e == "locked",
            || -> Result<(), &str> {
                calls += 1;
                Err("corrupt")
            },
        );
        assert_eq!((other, calls), (Err("corrupt"), 1), "not asked again");
    }

    #[test]
    #[allow(clippy::incompatible_msrv)]
    fn a_store_closed_opens_again_at_once() {
        let dir = tempfile::tempdir().unwrap();
        for n in 0..10u8 {
            let index = CrawlIndex::open(dir.path(), 1 << 20).unwrap();
            index.write(Rows::Crawl, row("k", &n.to_string())).unwrap();
            drop(index);
            // Free when the drop returns, not after the open's retries.
            let lock = dir.path().join(INDEX_DIR).join(FJALL_LOCK_FILE);
            let lock = std::fs::File::open(lock).unwrap();
            lock.try_lock()
                .expect("the lock is free once the store is dropped");
        }
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
        assert_eq!(get(index, Rows::Digests, b"k"), Some(b"v".to_vec()));
        assert_eq!(get(index, Rows::Referrers, b"k"), None, "keyspaces apart");
    }

    #[test]
    fn the_index_of_an_earlier_version_is_moved_to_its_new_place() {
        let dir = tempfile::tempdir().unwrap();
        {
            let index = CrawlIndex::open(dir.path(), 1 << 20).unwrap();
            index.write(Rows::Referrers, row("k", "v")).unwrap();
            index.persist().unwrap();
        }
        std::fs::rename(dir.path().join("index"), dir.path().join(LEGACY_DIR)).unwrap();
        let index = CrawlIndex::open(dir.path(), 1 << 20).unwrap();
        assert_eq!(get(&index, Rows::Referrers, b"k"), Some(b"v".to_vec()));
        assert!(!dir.path().join(LEGACY_DIR).exists());
    }
}
