//! Data directories of earlier versions, which kept a sled database in
//! `<data dir>/db` (at first everything, at last the small typed trees and
//! the links left out). On open its rows are copied into the index, made
//! durable, and the directory is renamed away, then removed. Until the
//! rename the copy starts over at every open: it only writes the values
//! sled holds, and nothing else writes before it ends, so a copy cut short
//! is simply done again.

use std::path::Path;

use super::index::{retry_while_locked, CrawlIndex, KeyspaceWrite, Rows};
use super::typed::{records_key, Tree};
use super::{corrupt, StoreError};

/// sled's directory inside a data directory.
pub(super) const SLED_DIR: &str = "db";
/// `db` once copied: a removal cut short is finished at the next open.
const ADOPTED_DIR: &str = "db.adopted";
/// Where earlier versions kept the digests: in sled's `meta` tree.
const DIGEST_PREFIX: &[u8] = b"digest/";
/// Bytes of rows per write: a directory of the usual size (typed trees,
/// links left out) is one atomic write; a larger one is copied in several,
/// which the start-over above makes safe, without holding it all in memory.
const WRITE_BYTES: usize = 64 << 20;

fn adopt_error(path: &Path) -> impl Fn(sled::Error) -> StoreError + '_ {
    move |source| StoreError::Adopt {
        path: path.to_path_buf(),
        source,
    }
}

/// Copies `<data_dir>/db` into `index` if it is there, then removes it.
pub(super) fn adopt(data_dir: &Path, index: &CrawlIndex) -> Result<(), StoreError> {
    let sled_dir = data_dir.join(SLED_DIR);
    let adopted = data_dir.join(ADOPTED_DIR);
    if sled_dir.is_dir() {
        copy_database(&sled_dir, index)?;
        let io = |e| adopt_error(&sled_dir)(sled::Error::Io(e));
        std::fs::rename(&sled_dir, &adopted).map_err(io)?;
        // The rename must not be undone by a power cut after later writes:
        // the copy would then run again over newer rows.
        std::fs::File::open(data_dir)
            .and_then(|d| d.sync_all())
            .map_err(io)?;
        tracing::info!("moved the sled database of an earlier version into the crawl index");
    }
    if adopted.exists() {
        if let Err(e) = std::fs::remove_dir_all(&adopted) {
            tracing::warn!("cannot remove {} (already copied): {e}", adopted.display());
        }
    }
    Ok(())
}

/// Every tree of the sled database in `path`, written into `index` and persisted.
fn copy_database(path: &Path, index: &CrawlIndex) -> Result<(), StoreError> {
    let db = open_sled(path)?;
    let mut writes = Writes::new(index);
    let trees = [
        ("crawl", Rows::Crawl),
        ("referrers", Rows::Referrers),
        ("filtered", Rows::Filtered),
    ];
    for (name, to) in trees {
        copy_tree(&db, path, name, &mut writes, |key, value| {
            Ok((to, key.to_vec(), Some(value.to_vec())))
        })?;
    }
    for (tree, name) in Tree::ALL {
        copy_tree(&db, path, name, &mut writes, |key, value| {
            typed_row(tree, key, value)
        })?;
    }
    writes.flush()?;
    index.persist()
}

/// A row of a typed tree; a digest of `meta` goes to the digests' keyspace.
fn typed_row(tree: Tree, key: &[u8], value: &[u8]) -> Result<KeyspaceWrite, StoreError> {
    match key.strip_prefix(DIGEST_PREFIX) {
        Some(digest) if tree == Tree::Meta => {
            let url: String = serde_json::from_slice(value)
                .map_err(|e| corrupt("content digest", e.to_string()))?;
            Ok((Rows::Digests, digest.to_vec(), Some(url.into_bytes())))
        }
        _ => Ok((Rows::Records, records_key(tree, key), Some(value.to_vec()))),
    }
}

/// sled's database, without its background flushes: it is only read. Its
/// lock is asked again for a while, as fjall's is (`retry_while_locked`).
fn open_sled(path: &Path) -> Result<sled::Db, StoreError> {
    // sled reports a held lock as an io error with this text (sled 0.34 config.rs).
    let locked = |e: &sled::Error| matches!(e, sled::Error::Io(io) if io.to_string().contains("could not acquire lock"));
    let opened = retry_while_locked(locked, || {
        sled::Config::new().path(path).flush_every_ms(None).open()
    });
    opened.map_err(|source| match &source {
        // An earlier version is running on the directory.
        e if locked(e) => StoreError::Locked {
            path: path.parent().unwrap_or(path).to_path_buf(),
        },
        _ => adopt_error(path)(source),
    })
}

fn copy_tree(
    db: &sled::Db,
    path: &Path,
    name: &str,
    writes: &mut Writes,
    row: impl Fn(&[u8], &[u8]) -> Result<KeyspaceWrite, StoreError>,
) -> Result<(), StoreError> {
    if !db.tree_names().iter().any(|tree| tree == name.as_bytes()) {
        return Ok(());
    }
    let tree = db.open_tree(name).map_err(adopt_error(path))?;
    for item in tree.iter() {
        let (key, value) = item.map_err(adopt_error(path))?;
        writes.push(row(&key, &value)?)?;
    }
    Ok(())
}

/// Rows gathered into writes of up to [`WRITE_BYTES`].
struct Writes<'a> {
    index: &'a CrawlIndex,
    rows: Vec<KeyspaceWrite>,
    bytes: usize,
}

impl<'a> Writes<'a> {
    fn new(index: &'a CrawlIndex) -> Self {
        Writes {
            index,
            rows: Vec::new(),
            bytes: 0,
        }
    }

    fn push(&mut self, row: KeyspaceWrite) -> Result<(), StoreError> {
        self.bytes += row.1.len() + row.2.as_ref().map_or(0, Vec::len);
        self.rows.push(row);
        if self.bytes >= WRITE_BYTES {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), StoreError> {
        self.bytes = 0;
        self.index.write_all(std::mem::take(&mut self.rows))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::store::{
        keys, record_codec, FilterReason, FilteredUrl, PageOutcome, PageRecord, Store,
    };

    const URL: &str = "http://a.test/1";
    const DIGEST: [u8; 20] = [9; 20];

    fn page() -> PageRecord {
        PageRecord::without_fetch(
            URL,
            "a.test",
            1,
            1_700_000_000_000,
            PageOutcome::RobotsDenied,
        )
    }

    fn filtered() -> FilteredUrl {
        FilteredUrl {
            url: "http://b.test/x".into(),
            host: "b.test".into(),
            depth: 3,
            reason: FilterReason::Depth,
            found_at_unix_ms: 1,
        }
    }

    /// A data directory as the last version with sled left it: the crawl
    /// tree (here one page) in the index, the rest in `db/`; and a digest
    /// from the version before, in sled's `meta` tree.
    fn old_layout(dir: &Path) {
        let index = CrawlIndex::open(dir, 1 << 20).unwrap();
        let page_row = (keys::page_key(URL), Some(record_codec::encode(&page())));
        let count_row = (keys::META_PAGES.to_vec(), Some(1u64.to_be_bytes().to_vec()));
        index.write(Rows::Crawl, [page_row, count_row]).unwrap();
        index.persist().unwrap();
        drop(index);
        let db = sled::open(dir.join(SLED_DIR)).unwrap();
        let json = |v: &str| serde_json::to_vec(v).unwrap();
        for (_, name) in Tree::ALL {
            let tree = db.open_tree(name).unwrap();
            tree.insert(b"k", json(&format!("{name} value"))).unwrap();
        }
        let meta = db.open_tree("meta").unwrap();
        let digest_key = [DIGEST_PREFIX, &DIGEST].concat();
        meta.insert(digest_key, json("http://a.test/old")).unwrap();
        let filtered_tree = db.open_tree("filtered").unwrap();
        let value = serde_json::to_vec(&filtered()).unwrap();
        filtered_tree
            .insert(filtered().url.as_bytes(), value)
            .unwrap();
        db.flush().unwrap();
    }

    fn reads_back(dir: &Path) {
        let store = Store::open(dir, 1 << 20).unwrap();
        for (tree, name) in Tree::ALL {
            let all: Vec<(Vec<u8>, String)> = store.scan(tree).unwrap();
            assert_eq!(all, [(b"k".to_vec(), format!("{name} value"))], "{name}");
        }
        assert_eq!(store.page(URL).unwrap(), Some(page()));
        assert!(store.has_pages());
        assert_eq!(store.count_pages(), 1);
        assert_eq!(
            store.filtered_url(&filtered().url).unwrap(),
            Some(filtered())
        );
        let first = store.first_url_with_digest(&DIGEST, "http://a.test/new");
        assert_eq!(first.unwrap().as_deref(), Some("http://a.test/old"));
        assert!(!dir.join(SLED_DIR).exists(), "sled's directory is gone");
        assert!(!dir.join(ADOPTED_DIR).exists());
    }

    #[test]
    fn an_old_layout_reads_back_after_open_and_after_a_second_open() {
        let dir = tempfile::tempdir().unwrap();
        old_layout(dir.path());
        reads_back(dir.path());
        reads_back(dir.path());
    }

    #[test]
    fn a_copy_whose_rename_was_lost_is_made_again_harmlessly() {
        let dir = tempfile::tempdir().unwrap();
        old_layout(dir.path());
        let kept = dir.path().join("kept");
        copy_dir(&dir.path().join(SLED_DIR), &kept);
        reads_back(dir.path());
        // As if the process died after the copy was persisted, before the rename.
        std::fs::rename(&kept, dir.path().join(SLED_DIR)).unwrap();
        reads_back(dir.path());
        // As if it died after the rename, before the removal.
        std::fs::create_dir(dir.path().join(ADOPTED_DIR)).unwrap();
        reads_back(dir.path());
    }

    #[test]
    fn a_new_crawl_makes_no_sled_directory() {
        let dir = tempfile::tempdir().unwrap();
        Store::open(dir.path(), 1 << 20).unwrap();
        assert!(dir.path().join("index").is_dir());
        assert!(!dir.path().join(SLED_DIR).exists());
        assert!(Store::exists_in(dir.path()));
    }

    fn copy_dir(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for entry in std::fs::read_dir(from).unwrap() {
            let entry = entry.unwrap();
            let target = to.join(entry.file_name());
            if entry.file_type().unwrap().is_dir() {
                copy_dir(&entry.path(), &target);
            } else {
                std::fs::copy(entry.path(), target).unwrap();
            }
        }
    }
}
