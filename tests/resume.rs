//! `kill -9` in the middle of a crawl, then resume: the same pages are reached,
//! nothing is lost, and only what was in flight at the kill is fetched again.

mod common;

use std::collections::{HashMap, HashSet};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{crawl, start_demo, test_config};
use crawldeck::demo::{RequestRecord, SiteKind};

fn page_requests(records: &[RequestRecord]) -> Vec<(SiteKind, String)> {
    records
        .iter()
        .filter(|r| r.path_and_query != "/robots.txt")
        .map(|r| (r.site, r.path_and_query.clone()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_nine_then_resume_loses_nothing() {
    let sites = vec![SiteKind::Shop, SiteKind::DeepFinite];
    // Reference: a clean, uninterrupted crawl.
    let reference_demo = start_demo(sites.clone()).await;
    let reference_dir = tempfile::tempdir().unwrap();
    crawl(test_config(&reference_demo), reference_dir.path()).await;
    let reference: HashSet<_> = page_requests(&reference_demo.log().records())
        .into_iter()
        .collect();
    reference_demo.shutdown().await;

    let demo = start_demo(sites).await;
    let dir = tempfile::tempdir().unwrap();
    let seeds: Vec<String> = demo.seeds().iter().map(|u| u.to_string()).collect();
    let bin = env!("CARGO_BIN_EXE_crawldeck");
    let mut first = Command::new(bin)
        .args([
            "crawl",
            "--headless",
            "--delay",
            "20ms",
            "--delay-factor",
            "0",
        ])
        .arg("--data")
        .arg(dir.path())
        .args(&seeds)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("crawldeck starts");
    // Let it crawl a while, then kill it without warning.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while page_requests(&demo.log().records()).len() < reference.len() / 3 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "first run made no progress"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    first.kill().expect("SIGKILL");
    first.wait().unwrap();
    let before_kill = page_requests(&demo.log().records()).len();

    let resumed = tokio::task::spawn_blocking({
        let dir = dir.path().to_path_buf();
        move || {
            Command::new(bin)
                .args([
                    "crawl",
                    "--headless",
                    "--delay",
                    "20ms",
                    "--delay-factor",
                    "0",
                ])
                .arg("--data")
                .arg(&dir)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .output()
                .expect("resume runs")
        }
    });
    let output = tokio::time::timeout(Duration::from_secs(120), resumed)
        .await
        .expect("resumed crawl ends")
        .unwrap();
    assert!(
        output.status.success(),
        "resume failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let all = page_requests(&demo.log().records());
    demo.shutdown().await;

    let reached: HashSet<_> = all.iter().cloned().collect();
    let missing: Vec<_> = reference.difference(&reached).collect();
    assert!(missing.is_empty(), "lost after resume: {missing:?}");
    let mut counts: HashMap<&(SiteKind, String), usize> = HashMap::new();
    for r in &all {
        *counts.entry(r).or_default() += 1;
    }
    let again: Vec<_> = counts.iter().filter(|(_, n)| **n > 1).collect();
    // One request in flight per host at most: two hosts.
    assert!(
        again.len() <= 2,
        "fetched again after resume (killed after {before_kill} requests): {again:?}"
    );
}
