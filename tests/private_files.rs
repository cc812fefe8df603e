//! The data directory is private: after a short crawl the directory and
//! everything in it that crawldeck created are 0700 / 0600 (Unix).
#![cfg(unix)]

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use common::{crawl, start_demo, test_config};
use crawldeck::demo::SiteKind;

fn check_tree(path: &Path, wrong: &mut Vec<String>) {
    let meta = std::fs::symlink_metadata(path).unwrap();
    let mode = meta.permissions().mode() & 0o777;
    if meta.is_dir() {
        if mode != 0o700 {
            wrong.push(format!("{} is {mode:o}", path.display()));
        }
        for entry in std::fs::read_dir(path).unwrap() {
            check_tree(&entry.unwrap().path(), wrong);
        }
    } else if meta.is_file() && mode != 0o600 {
        wrong.push(format!("{} is {mode:o}", path.display()));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_directory_and_its_files_are_private_after_a_crawl() {
    let demo = start_demo(vec![SiteKind::Blog]).await;
    let tmp = tempfile::tempdir().unwrap();
    // The engine creates the directory itself (and its parent).
    let dir = tmp.path().join("crawls/blog");
    let cfg = test_config(&demo);
    let snapshot = crawl(cfg.clone(), &dir).await;
    assert!(snapshot.counters.pages_fetched > 0);
    cfg.save(&dir.join("crawl.toml")).unwrap();

    let mut wrong = Vec::new();
    check_tree(&dir, &mut wrong);
    assert!(wrong.is_empty(), "not private: {wrong:#?}");
    let warc = std::fs::read_dir(dir.join("warc")).unwrap().count();
    assert!(warc > 0, "the crawl wrote a WARC file");
    assert!(dir.join("index").is_dir());
    assert!(
        !dir.join("db").exists(),
        "a new crawl makes no sled database"
    );
    assert!(dir.join("crawl.toml").is_file());
    demo.shutdown().await;
}
