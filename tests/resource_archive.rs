//! `--resources fetch`: each in-scope resource is fetched once (GET) under
//! its host's politeness and archived as a response record with its body; a
//! stylesheet's `url()`s become resources; nothing inside a resource is
//! followed. Judged by the demo server's request log, the WARC files read
//! back and the page records.

use crate::checks::{archived_paths, assert_polite, path_of, record_of, requests, DELAY};
use crate::common;

use std::collections::BTreeSet;

use common::{crawl, pages, start_demo, test_config};
use crawldeck::demo::{
    SiteKind, LINKS_IN_RESOURCES, LINKS_PAGES, LINKS_RESOURCES_BROKEN, LINKS_RESOURCES_OK,
    LINKS_STYLESHEET_FONT, LINKS_STYLESHEET_LARGE,
};
use crawldeck::engine::config::ResourcesMode;
use crawldeck::engine::store::{read_response, PageOutcome, UrlKind};

/// The demo's pages are a few KiB; its large texture is 64 KiB.
const MAX_BODY: u64 = 32 * 1024;

/// Every resource the links site's pages and stylesheet name.
fn links_resources() -> Vec<&'static str> {
    LINKS_RESOURCES_OK
        .iter()
        .chain(&LINKS_RESOURCES_BROKEN)
        .chain(&[LINKS_STYLESHEET_FONT, LINKS_STYLESHEET_LARGE])
        .copied()
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fetched_resources_are_archived_once_each_with_their_bodies_and_never_parsed() {
    let demo = start_demo(vec![SiteKind::Links]).await;
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = test_config(&demo);
    cfg.checks.resources = ResourcesMode::Fetch;
    cfg.politeness.min_delay = DELAY;
    cfg.fetch.max_body = MAX_BODY;
    let snapshot = crawl(cfg, dir.path()).await;
    let log = demo.log().records();
    demo.shutdown().await;

    let resources = links_resources();
    for path in &resources {
        let got = requests(&log, SiteKind::Links, path);
        assert_eq!(
            got.len(),
            1,
            "{path}: fetched once, though both pages load it"
        );
        assert_eq!(got[0].method, "GET", "{path}");
    }
    for path in LINKS_IN_RESOURCES {
        assert!(
            requests(&log, SiteKind::Links, path).is_empty(),
            "{path}: a resource is never parsed for links"
        );
    }
    assert_polite(&log, SiteKind::Links);

    let archived = common::warc::responses(dir.path());
    let bodies = |path: &str| -> Vec<&[u8]> {
        archived
            .iter()
            .filter(|r| path_of(&r.uri) == path)
            .map(|r| r.body.as_slice())
            .collect()
    };
    let stylesheet = bodies("/style.css");
    assert_eq!(
        stylesheet.len(),
        1,
        "one response record for the stylesheet"
    );
    let css = String::from_utf8_lossy(stylesheet[0]);
    assert!(
        css.contains("@font-face") && css.contains(LINKS_STYLESHEET_FONT),
        "{css}"
    );
    let image = bodies("/img/ok.png");
    assert_eq!(image.len(), 1, "one response record for the image");
    assert!(image[0].starts_with(b"\x89PNG\r\n\x1a\n"), "{:?}", image[0]);
    assert_eq!(bodies(LINKS_STYLESHEET_FONT), [b"wOF2".as_slice()]);
    assert_eq!(
        bodies("/missing.css").len(),
        1,
        "a 404 is archived, as a page's"
    );
    assert!(
        bodies(LINKS_STYLESHEET_LARGE).is_empty(),
        "past fetch.max_body"
    );

    let records = pages(dir.path());
    let record = |path: &str| record_of(&records, path);
    for path in &resources {
        assert_eq!(record(path).kind, UrlKind::Resource, "{path}");
    }
    let at = record("/style.css")
        .warc
        .clone()
        .expect("its WARC location");
    let read = read_response(dir.path(), &at, 1 << 20).unwrap();
    assert_eq!(
        (read.status, read.body.as_slice()),
        (Some(200), stylesheet[0])
    );
    assert_eq!(record("/style.css").outlinks, 2, "its url()s, as resources");
    assert_eq!(
        record("/img/ok.png").content_type.as_deref(),
        Some("image/png")
    );
    assert!(
        matches!(&record(LINKS_STYLESHEET_LARGE).outcome,
            PageOutcome::Error { kind, .. } if kind == "body-too-large"),
        "{:?}",
        record(LINKS_STYLESHEET_LARGE).outcome
    );
    let crawled: BTreeSet<String> = records
        .iter()
        .filter(|p| p.kind == UrlKind::Page)
        .map(|p| path_of(&p.url))
        .collect();
    let mut want: BTreeSet<String> = LINKS_PAGES.iter().map(|p| p.to_string()).collect();
    want.insert("/sitemap.xml".into());
    assert_eq!(crawled, want, "no page comes from a resource");

    let counters = &snapshot.counters;
    let fetched = resources.len() as u64 - 1;
    assert_eq!(counters.resources_fetched, fetched, "{counters:?}");
    assert_eq!(
        (counters.checked, counters.pages_fetched),
        (0, 2),
        "{counters:?}"
    );
    let archived_bytes: u64 = resources
        .iter()
        .filter(|p| **p != LINKS_STYLESHEET_LARGE)
        .map(|p| record(p).bytes)
        .sum();
    assert_eq!(counters.resource_bytes, archived_bytes, "{counters:?}");
    assert!(counters.resource_bytes > stylesheet[0].len() as u64);
    assert_eq!(counters.errors_by_kind.get("body-too-large"), Some(&1));
}

/// `kill -9` in the middle of the resources, then a resume: a resource whose
/// record was committed is not fetched again, the one in flight may be, and
/// every resource ends up archived.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_kill_nine_only_the_resource_in_flight_is_fetched_again() {
    let demo = start_demo(vec![SiteKind::Links]).await;
    let dir = tempfile::tempdir().unwrap();
    let seeds: Vec<String> = demo.seeds().iter().map(|u| u.to_string()).collect();
    let resource_gets = |demo: &crawldeck::demo::DemoWeb| {
        demo.log()
            .records()
            .into_iter()
            .filter(|r| r.method == "GET" && !r.path_and_query.ends_with(".html"))
            .filter(|r| !["/", "/robots.txt", "/sitemap.xml"].contains(&r.path_and_query.as_str()))
            .map(|r| r.path_and_query)
            .collect::<Vec<String>>()
    };
    let mut first = common::Killed(
        crate::resume::crawl_command(dir.path(), &seeds)
            .args(["--resources", "fetch"])
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("crawldeck starts"),
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while resource_gets(&demo).len() < 4 {
        assert!(std::time::Instant::now() < deadline, "no progress");
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    first.0.kill().expect("SIGKILL");
    let _ = first.0.wait();
    let before_resume = resource_gets(&demo).len();
    assert!(
        before_resume < 10,
        "killed before the last resource: {before_resume}"
    );

    let resume = crate::resume::crawl_command(dir.path(), &[]);
    let output = crate::resume::run_bounded(resume, std::time::Duration::from_secs(120)).await;
    assert!(
        output.status.success(),
        "resume failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let gets = resource_gets(&demo);
    demo.shutdown().await;

    let mut counts = std::collections::BTreeMap::<&str, usize>::new();
    for path in &gets {
        *counts.entry(path.as_str()).or_default() += 1;
    }
    let again: Vec<_> = counts.iter().filter(|(_, n)| **n > 1).collect();
    assert!(again.len() <= 1, "one request in flight at most: {again:?}");
    assert!(counts.values().all(|n| *n <= 2), "{counts:?}");
    let archived = archived_paths(dir.path());
    for path in LINKS_RESOURCES_OK.iter().chain(&[LINKS_STYLESHEET_FONT]) {
        assert!(counts.contains_key(path), "{path} fetched: {counts:?}");
        assert!(archived.contains(*path), "{path} archived");
    }
}

/// A WARC write that fails while a resource is archived pauses the crawl
/// with the reason, as a page's does; once space is back every resource
/// ends up archived.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_while_archiving_a_resource_pauses_the_crawl_and_loses_nothing() {
    use crawldeck::engine::control::{Command, Target};
    use crawldeck::engine::store::faults::DiskFaults;
    use crawldeck::engine::RunningEngine;

    let demo = start_demo(vec![SiteKind::Links]).await;
    let resources = links_resources();
    let mut resource_faults = 0;
    // Writes before the fault: past the pages'; a group of pages takes a
    // few (the WARC buffer's drain, the batch, the flushes), so the groups
    // holding resources are covered.
    for writes in 10..24 {
        let requests_before = demo.log().records().len();
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = test_config(&demo);
        cfg.checks.resources = ResourcesMode::Fetch;
        let faults = DiskFaults::full_after(writes);
        let RunningEngine {
            mut handle, done, ..
        } = common::start_faulted(cfg, dir.path(), &faults).await;
        let fault = common::paused_on_fault(&mut handle)
            .await
            .fault
            .unwrap_or_default();
        let warc_fault = fault.contains("cannot write to the WARC file")
            || (fault.starts_with("archiving ")
                && !LINKS_PAGES.iter().any(|p| fault.contains(&format!("{p}:"))));
        faults.heal();
        handle.control.send(Command::Resume(Target::Global));
        tokio::time::timeout(common::CRAWL_LIMIT, done)
            .await
            .expect("the crawl ends after the resume")
            .expect("no panic")
            .expect("no engine error");
        drop(handle);
        // A resource whose record the failed write held is fetched again.
        let log = demo.log().records();
        let refetched = resources
            .iter()
            .any(|path| requests(&log[requests_before..], SiteKind::Links, path).len() > 1);
        resource_faults += usize::from(warc_fault && refetched);
        let archived = archived_paths(dir.path());
        for record in pages(dir.path()) {
            let fetched = matches!(record.outcome, PageOutcome::Fetched { .. });
            let path = path_of(&record.url);
            assert!(
                !fetched || record.warc.is_some(),
                "{path} recorded without its WARC location ({fault})"
            );
            if fetched && record.kind == UrlKind::Resource {
                assert!(archived.contains(&path), "{path} not archived ({fault})");
            }
        }
    }
    demo.shutdown().await;
    assert!(resource_faults > 0, "no fault hit a resource's record");
}
