//! Stopping a crawl in the middle, then resuming it: the same pages are
//! reached and nothing is lost. After `kill -9` only what was in flight is
//! fetched again; after Ctrl-C (SIGINT) the crawl checkpoints and nothing is.

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

/// A headless crawl of `seeds` (none: resume) in `dir`, fast but polite.
fn crawl_command(dir: &std::path::Path, seeds: &[String]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_crawldeck"));
    cmd.args([
        "crawl",
        "--headless",
        "--delay",
        "20ms",
        "--delay-factor",
        "0",
    ])
    .arg("--data")
    .arg(dir)
    .args(seeds)
    .stdout(Stdio::null());
    cmd
}

#[derive(Clone, Copy, Debug)]
enum Stop {
    Kill,
    Interrupt,
}

/// Crawls, stops the process a third of the way in, resumes it to the end,
/// and returns the pages fetched more than once.
async fn stop_and_resume(stop: Stop) -> Vec<((SiteKind, String), usize)> {
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
    let mut first = crawl_command(dir.path(), &seeds)
        .stderr(Stdio::null())
        .spawn()
        .expect("crawldeck starts");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while page_requests(&demo.log().records()).len() < reference.len() / 3 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "first run made no progress"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    match stop {
        Stop::Kill => first.kill().expect("SIGKILL"),
        Stop::Interrupt => {
            let sent = Command::new("kill")
                .args(["-INT", &first.id().to_string()])
                .status()
                .expect("kill -INT");
            assert!(sent.success());
        }
    }
    let status = tokio::task::spawn_blocking(move || first.wait().unwrap())
        .await
        .unwrap();
    if let Stop::Interrupt = stop {
        assert!(
            status.success(),
            "Ctrl-C checkpoints and exits 0: {status:?}"
        );
    }

    let resumed = tokio::task::spawn_blocking({
        let dir = dir.path().to_path_buf();
        move || {
            crawl_command(&dir, &[])
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
    assert!(
        missing.is_empty(),
        "{stop:?}: lost after resume: {missing:?}"
    );
    let mut counts: HashMap<(SiteKind, String), usize> = HashMap::new();
    for r in all {
        *counts.entry(r).or_default() += 1;
    }
    counts.into_iter().filter(|(_, n)| *n > 1).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_nine_then_resume_refetches_only_what_was_in_flight() {
    let again = stop_and_resume(Stop::Kill).await;
    // One request in flight per host at most, two hosts.
    assert!(again.len() <= 2, "fetched again after resume: {again:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_checkpoints_and_resume_fetches_nothing_twice() {
    let again = stop_and_resume(Stop::Interrupt).await;
    assert!(again.is_empty(), "fetched again after resume: {again:?}");
}
