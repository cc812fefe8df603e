//! A disk that fills mid-crawl loses nothing: the crawl pauses (headless: stops
//! and fails) with the path and the error, the WARC files hold only whole
//! records, and once space is back the crawl ends with the same pages as a
//! crawl that never saw the fault, each archived. A configuration that cannot
//! be written after the engine started stops it cleanly, with the reason.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::Path;

use crawldeck::demo::SiteKind;
use crawldeck::engine::control::{Command, Target};
use crawldeck::engine::store::faults::DiskFaults;
use crawldeck::engine::store::PageOutcome;
use crawldeck::engine::telemetry::{CrawlState, Snapshot};
use crawldeck::engine::{EngineOptions, RunningEngine};
use crawldeck::headless::{self, HeadlessOptions};

/// Each page's URL with its outcome, as a crawl recorded them.
fn outcomes(dir: &Path) -> BTreeMap<String, String> {
    common::pages(dir)
        .into_iter()
        .map(|p| {
            let outcome = match p.outcome {
                // Resources are checked, never archived.
                PageOutcome::Fetched { status } if p.kind.is_check() => format!("checked {status}"),
                PageOutcome::Fetched { status } => format!("fetched {status}"),
                other => format!("{other:?}"),
            };
            (p.url, outcome)
        })
        .collect()
}

/// The target URI of every response record in the crawl's WARC files; fails
/// on a partial gzip member or a record cut short.
fn archived(dir: &Path) -> Vec<String> {
    common::warc::all_records(dir)
        .into_iter()
        .filter(|r| r.is("response"))
        .filter_map(|r| r.get("WARC-Target-URI").map(str::to_string))
        .collect()
}

/// Fails with the URLs whose outcome differs, not two whole maps.
fn assert_same_pages(got: &BTreeMap<String, String>, expected: &BTreeMap<String, String>) {
    let differing: Vec<String> = expected
        .iter()
        .filter(|(url, outcome)| got.get(*url) != Some(outcome))
        .map(|(url, outcome)| format!("{url}: expected {outcome}, got {:?}", got.get(url)))
        .chain(
            got.keys()
                .filter(|url| !expected.contains_key(*url))
                .map(|url| format!("{url}: not in the reference crawl")),
        )
        .collect();
    assert!(
        differing.is_empty(),
        "{} differ: {differing:#?}",
        differing.len()
    );
}

async fn start(
    dir: &Path,
    demo: &crawldeck::demo::DemoWeb,
    options: EngineOptions,
) -> RunningEngine {
    crawldeck::engine::start_with(
        common::test_config(demo),
        dir,
        std::future::pending(),
        options,
    )
    .await
    .expect("engine starts")
}

/// Every fetched page with a body has a response record; nothing else does.
fn assert_every_page_archived(dir: &Path, pages: &BTreeMap<String, String>) {
    let uris = archived(dir);
    let unique: BTreeSet<&String> = uris.iter().collect();
    let fetched: BTreeSet<&String> = pages
        .iter()
        .filter(|(_, o)| o.starts_with("fetched 2"))
        .map(|(u, _)| u)
        .collect();
    assert!(
        fetched.is_subset(&unique),
        "pages recorded but not archived: {:?}",
        fetched.difference(&unique).take(5).collect::<Vec<_>>()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_pauses_the_crawl_and_it_resumes_with_nothing_lost() {
    let demo = common::start_demo(vec![SiteKind::Shop]).await;
    let reference = tempfile::tempdir().unwrap();
    common::crawl(common::test_config(&demo), reference.path()).await;
    let expected = outcomes(reference.path());

    let dir = tempfile::tempdir().unwrap();
    let faults = DiskFaults::full_after(60);
    let options = EngineOptions {
        wait_for_operator: true,
        disk_faults: faults.clone(),
        ..EngineOptions::default()
    };
    let RunningEngine {
        mut handle, done, ..
    } = start(dir.path(), &demo, options).await;
    let paused = tokio::time::timeout(common::CRAWL_LIMIT, async {
        loop {
            handle.snapshots.changed().await.expect("engine runs");
            let s: Snapshot = (**handle.snapshots.borrow()).clone();
            if s.fault.is_some() && s.state == CrawlState::Paused && s.in_flight == 0 {
                return s;
            }
        }
    })
    .await
    .expect("the crawl pauses on the fault");
    let fault = paused.fault.as_deref().unwrap();
    assert!(fault.contains("No space left on device"), "{fault}");
    assert!(
        fault.contains(&dir.path().display().to_string()),
        "names the path: {fault}"
    );
    assert!(paused.counters.pages_fetched < expected.len() as u64);
    archived(dir.path()); // whole records only, while the engine holds the files

    faults.heal();
    handle.control.send(Command::Resume(Target::Global));
    let last = tokio::time::timeout(common::CRAWL_LIMIT, done)
        .await
        .expect("the crawl ends after the resume")
        .expect("no panic")
        .expect("no engine error");
    assert_eq!(last.fault, None);
    assert_eq!(last.finish_reason.as_deref(), Some("frontier empty"));
    drop(handle);
    let got = outcomes(dir.path());
    assert_same_pages(&got, &expected);
    assert_every_page_archived(dir.path(), &got);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headless_stops_on_a_full_disk_with_the_reason_and_the_next_run_finishes() {
    let demo = common::start_demo(vec![SiteKind::Shop]).await;
    let reference = tempfile::tempdir().unwrap();
    common::crawl(common::test_config(&demo), reference.path()).await;
    let expected = outcomes(reference.path());

    let dir = tempfile::tempdir().unwrap();
    let options = EngineOptions {
        disk_faults: DiskFaults::full_after(45),
        ..EngineOptions::default()
    };
    let RunningEngine { handle, done, .. } = start(dir.path(), &demo, options).await;
    let opts = HeadlessOptions {
        data_dir: dir.path().to_path_buf(),
        ..HeadlessOptions::default()
    };
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let run = headless::run_with(handle, done, opts, &mut out, &mut err);
    let failed = tokio::time::timeout(common::CRAWL_LIMIT, run)
        .await
        .expect("headless run ends")
        .expect_err("a storage fault fails the run");
    let message = format!("{failed:#}");
    assert!(message.contains("storage fault"), "{message}");
    assert!(message.contains("No space left on device"), "{message}");
    assert!(message.contains("run the same command again"), "{message}");
    let summary = String::from_utf8_lossy(&err);
    assert!(
        summary.contains("storage fault"),
        "the summary says why: {summary}"
    );
    archived(dir.path());

    common::crawl(common::test_config(&demo), dir.path()).await;
    let got = outcomes(dir.path());
    assert_same_pages(&got, &expected);
    assert_every_page_archived(dir.path(), &got);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configuration_that_cannot_be_kept_stops_the_started_crawl_cleanly() {
    let demo = common::start_demo(vec![SiteKind::Shop]).await;
    let dir = tempfile::tempdir().unwrap();
    // The engine starts, then its crawl.toml cannot be written.
    std::fs::create_dir(dir.path().join("crawl.toml")).unwrap();
    let seed = demo.seeds()[0].to_string();
    let data = dir.path().to_str().unwrap();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_crawldeck"))
        .args(["crawl", "--headless", "--data", data, &seed])
        .env_remove("RUST_LOG")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("crawldeck starts");
    let mut crawl = common::Killed(child);
    let deadline = tokio::time::Instant::now() + common::CRAWL_LIMIT;
    let status = loop {
        if let Some(status) = crawl.0.try_wait().unwrap() {
            break status;
        }
        assert!(tokio::time::Instant::now() < deadline, "the command ends");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    let mut err = String::new();
    crawl
        .0
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(
        err.contains("cannot write config file") && err.contains("writable"),
        "{err}"
    );
    assert_eq!(err.matches("Is a directory").count(), 1, "said once: {err}");
    assert!(
        !err.contains("panicked"),
        "the engine stopped, not cut off: {err}"
    );
    demo.shutdown().await;
}
