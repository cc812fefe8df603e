//! The small typed trees (rules, alerts, hosts, meta, sitemaps): JSON values
//! in the index's `records` keyspace, each tree under a tag byte. Written
//! alone by [`Store::put`], or with a page batch by [`CrawlBatch::put`].

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::index::Rows;
use super::{decode_json, CrawlBatch, Store, StoreError};

/// Named trees for small typed records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tree {
    /// Operator rules with their hit counters, by id.
    Rules,
    /// Trap alerts, by id.
    Alerts,
    /// What of each host survives a restart (pause, overrides, breaker, given up), by host key.
    Hosts,
    /// Crawl-wide records: settings, seeds, recrawl pass, pending commands.
    Meta,
    /// Each host's sitemap files: how many were queued, which are pending, by host key.
    Sitemaps,
}

impl Tree {
    /// Every tree, with the name sled gave it in earlier versions.
    pub(super) const ALL: [(Tree, &'static str); 5] = [
        (Tree::Rules, "rules"),
        (Tree::Alerts, "alerts"),
        (Tree::Hosts, "hosts"),
        (Tree::Meta, "meta"),
        (Tree::Sitemaps, "sitemaps"),
    ];

    fn tag(self) -> u8 {
        match self {
            Tree::Rules => b'r',
            Tree::Alerts => b'a',
            Tree::Hosts => b'h',
            Tree::Meta => b'm',
            Tree::Sitemaps => b's',
        }
    }

    /// What a record of the tree is, for errors.
    fn record_name(self) -> &'static str {
        match self {
            Tree::Rules => "rule",
            Tree::Alerts => "alert",
            Tree::Hosts => "host state",
            Tree::Meta => "meta record",
            Tree::Sitemaps => "host's sitemaps",
        }
    }
}

/// The key of `key` of `tree` in the `records` keyspace.
pub(super) fn records_key(tree: Tree, key: &[u8]) -> Vec<u8> {
    let mut full = Vec::with_capacity(key.len() + 1);
    full.push(tree.tag());
    full.extend_from_slice(key);
    full
}

fn encode<T: Serialize>(tree: Tree, value: &T) -> Result<Vec<u8>, StoreError> {
    serde_json::to_vec(value).map_err(|source| StoreError::Encode {
        what: tree.record_name(),
        source,
    })
}

impl CrawlBatch {
    /// Writes a typed record in the same atomic write as the batch's rows.
    pub(crate) fn put<T: Serialize>(
        &mut self,
        tree: Tree,
        key: &[u8],
        value: &T,
    ) -> Result<(), StoreError> {
        let value = encode(tree, value)?;
        self.records.push((records_key(tree, key), Some(value)));
        Ok(())
    }
}

impl Store {
    /// Writes one typed record; durable at the next [`Store::flush`] (and
    /// past a `kill -9` at once, see `CrawlIndex::write_all`).
    pub(crate) fn put<T: Serialize>(
        &self,
        tree: Tree,
        key: &[u8],
        value: &T,
    ) -> Result<(), StoreError> {
        let value = encode(tree, value)?;
        let row = (records_key(tree, key), Some(value));
        self.inner.index.write(Rows::Records, [row])
    }

    pub(crate) fn get<T: DeserializeOwned>(
        &self,
        tree: Tree,
        key: &[u8],
    ) -> Result<Option<T>, StoreError> {
        let rows = self.inner.index.rows(Rows::Records);
        match rows
            .get(records_key(tree, key))
            .map_err(StoreError::index("read"))?
        {
            Some(v) => decode_json(&v, tree.record_name()).map(Some),
            None => Ok(None),
        }
    }

    /// Whether `tree` holds `key`, without decoding its value.
    pub(crate) fn contains(&self, tree: Tree, key: &[u8]) -> Result<bool, StoreError> {
        self.inner
            .index
            .rows(Rows::Records)
            .contains_key(records_key(tree, key))
            .map_err(StoreError::index("read"))
    }

    pub(crate) fn remove(&self, tree: Tree, key: &[u8]) -> Result<(), StoreError> {
        let row = (records_key(tree, key), None);
        self.inner.index.write(Rows::Records, [row])
    }

    /// Every record of `tree`, in key order.
    pub fn scan<T: DeserializeOwned>(&self, tree: Tree) -> Result<Vec<(Vec<u8>, T)>, StoreError> {
        let mut out = Vec::new();
        for guard in self.inner.index.rows(Rows::Records).prefix([tree.tag()]) {
            let (k, v) = guard.into_inner().map_err(StoreError::index("scan"))?;
            out.push((k[1..].to_vec(), decode_json(&v, tree.record_name())?));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_records_round_trip_in_named_trees() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), 4 << 20).unwrap();
        store.put(Tree::Rules, b"r1", &vec!["a", "b"]).unwrap();
        store.put(Tree::Rules, b"r2", &vec!["c"]).unwrap();
        store.put(Tree::Alerts, b"r1", &vec!["other tree"]).unwrap();
        assert_eq!(
            store.get::<Vec<String>>(Tree::Rules, b"r1").unwrap(),
            Some(vec!["a".to_string(), "b".to_string()])
        );
        let all: Vec<(Vec<u8>, Vec<String>)> = store.scan(Tree::Rules).unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].0, b"r1");
        store.remove(Tree::Rules, b"r1").unwrap();
        assert_eq!(store.get::<Vec<String>>(Tree::Rules, b"r1").unwrap(), None);
        assert!(!store.contains(Tree::Rules, b"r1").unwrap());
        assert!(store.contains(Tree::Rules, b"r2").unwrap());
        assert_eq!(store.scan::<Vec<String>>(Tree::Alerts).unwrap().len(), 1);
        assert!(
            store.get::<u64>(Tree::Alerts, b"r1").is_err(),
            "type mismatch is an error"
        );
    }

    /// The child's half of the test below: set in its environment.
    const CHILD_DIR: &str = "CRAWLDECK_TYPED_WRITE_CHILD_DIR";

    #[test]
    fn a_typed_write_survives_kill_nine_without_a_flush() {
        use std::io::BufRead;
        use std::time::Duration;
        if let Some(dir) = std::env::var_os(CHILD_DIR) {
            let store = Store::open(std::path::Path::new(&dir), 1 << 20).unwrap();
            store.put(Tree::Rules, b"r1", &"kept").unwrap();
            println!("written");
            std::thread::sleep(Duration::from_secs(60));
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let name = "engine::store::typed::tests::a_typed_write_survives_kill_nine_without_a_flush";
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", name, "--nocapture", "--test-threads", "1"])
            .env(CHILD_DIR, dir.path())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let written = std::io::BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
                .any(|line| line.contains("written"));
            let _ = tx.send(written);
        });
        let written = rx.recv_timeout(Duration::from_secs(60));
        child.kill().unwrap(); // SIGKILL: no flush, no destructor
        child.wait().unwrap();
        assert_eq!(written, Ok(true), "the child wrote its record");
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        assert_eq!(
            store.get::<String>(Tree::Rules, b"r1").unwrap().as_deref(),
            Some("kept")
        );
    }

    #[test]
    fn a_typed_record_and_a_page_commit_in_one_write() {
        use crate::engine::store::{PageOutcome, PageRecord};
        let dir = tempfile::tempdir().unwrap();
        let url = "http://a.test/1";
        let record = PageRecord::without_fetch(url, "a.test", 1, 1, PageOutcome::RobotsDenied);
        {
            let store = Store::open(dir.path(), 1 << 20).unwrap();
            let mut batch = CrawlBatch::default();
            batch.record_page(&record);
            batch.put(Tree::Hosts, b"a.test", &"state").unwrap();
            batch
                .put(Tree::Hosts, b"a.test", &"last write wins")
                .unwrap();
            store.apply(batch).unwrap();
            store.flush().unwrap();
        }
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        assert_eq!(store.page(url).unwrap(), Some(record));
        assert_eq!(
            store.get::<String>(Tree::Hosts, b"a.test").unwrap(),
            Some("last write wins".to_string())
        );
    }
}
