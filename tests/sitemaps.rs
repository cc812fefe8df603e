//! Sitemaps on the demo `Audit` site, judged by the server's request log and
//! by `crawldeck pages` (the real binary): the index, a gzip-compressed and a
//! plain sitemap fetched once each, politely; the orphan and the 404 found
//! and reported; a host without a sitemap asked for `/sitemap.xml` once;
//! `--no-sitemaps` asks for none.

use crate::common;

use std::collections::{BTreeSet, HashMap};
use std::process::{Command, Stdio};
use std::time::Duration;

use crawldeck::control::results::Results;
use crawldeck::demo::{
    SiteKind, AUDIT_NOT_IN_SITEMAP, AUDIT_ORPHANS, AUDIT_PAGES, AUDIT_SITEMAP_FILES,
    AUDIT_SITEMAP_NOT_INDEXABLE,
};
use crawldeck::engine::store::PageOutcome;
use crawldeck::results::sitemaps::{self, Finding, SitemapAudit};
use crawldeck::results::{Format, Listing, Query};
use serde_json::Value;

/// No listing may take longer than this.
const LISTING_LIMIT: Duration = Duration::from_secs(60);

/// `crawldeck pages DIR ARGS --json`, killed by pid if it outlives the limit.
fn pages_json(dir: &str, args: &[&str]) -> Vec<Value> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_crawldeck"))
        .arg("pages")
        .arg(dir)
        .args(args)
        .arg("--json")
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let pid = child.id();
    let stdout = child.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || std::io::read_to_string(stdout));
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if started.elapsed() > LISTING_LIMIT {
            let _ = child.kill();
            panic!("pages {args:?} (pid {pid}) hangs");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "pages {args:?} failed");
    let out = reader.join().unwrap().expect("UTF-8 output");
    out.lines()
        .map(|l| serde_json::from_str(l).expect("JSON lines"))
        .collect()
}

fn paths(rows: &[Value]) -> BTreeSet<String> {
    rows.iter()
        .map(|r| {
            let url = url::Url::parse(r["url"].as_str().expect("url")).unwrap();
            url.path().to_string()
        })
        .collect()
}

fn set(paths: &[&str]) -> BTreeSet<String> {
    paths.iter().map(|p| p.to_string()).collect()
}

fn query(dir: &std::path::Path) -> Query {
    Query::new(dir.to_path_buf(), Listing::Pages, Format::Json)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_sites_sitemaps_are_read_politely_and_reported() {
    let demo = common::start_demo(vec![SiteKind::Audit, SiteKind::RobotsStatus(404)]).await;
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = common::test_config(&demo);
    cfg.politeness.min_delay = Duration::from_millis(40);
    let snapshot = common::crawl(cfg, dir.path()).await;
    let log = demo.log().for_site(SiteKind::Audit);
    let plain = demo.log().for_site(SiteKind::RobotsStatus(404));
    demo.shutdown().await;

    // robots.txt first, one request at a time, the delay kept, nothing twice:
    // the sitemap files took their turns like pages.
    assert_eq!(log[0].path_and_query, "/robots.txt");
    assert_eq!(log.iter().map(|r| r.in_flight_at_start).max(), Some(1));
    for pair in log.windows(2) {
        let gap = pair[1]
            .started
            .saturating_duration_since(pair[0].finished.expect("finished"));
        assert!(
            gap >= Duration::from_millis(35),
            "{gap:?} before {}",
            pair[1].path_and_query
        );
    }
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for r in &log {
        *counts.entry(r.path_and_query.as_str()).or_default() += 1;
    }
    assert!(counts.values().all(|n| *n == 1), "a URL twice: {counts:?}");
    for file in AUDIT_SITEMAP_FILES {
        assert_eq!(counts.get(file), Some(&1), "{file} fetched once");
    }
    assert!(
        !counts.contains_key("/sitemap.xml"),
        "robots.txt named the sitemaps"
    );
    for orphan in AUDIT_ORPHANS {
        assert!(
            counts.contains_key(orphan),
            "{orphan} found through the sitemaps"
        );
    }
    // robots.txt 404: no Sitemap lines, so /sitemap.xml is asked for, once.
    let guessed = plain.iter().filter(|r| r.path_and_query == "/sitemap.xml");
    assert_eq!(guessed.count(), 1);

    let data = dir.path().to_str().unwrap().to_string();
    let records = common::pages(dir.path());
    let record = |path: &str| {
        records
            .iter()
            .find(|p| p.url.ends_with(path) && p.host.starts_with("audit."))
            .unwrap_or_else(|| panic!("{path} recorded"))
    };
    assert_eq!(
        record("/sitemaps/pages.xml.gz").outcome,
        PageOutcome::Fetched { status: 200 }
    );
    assert_eq!(
        record("/gone.html").outcome,
        PageOutcome::Fetched { status: 404 }
    );
    let missing = records.iter().find(|p| p.url.ends_with("/sitemap.xml"));
    assert_eq!(
        missing.expect("guess recorded").outcome,
        PageOutcome::Fetched { status: 404 },
        "a guessed sitemap that is absent is recorded as the 404 it is"
    );
    assert!(
        !snapshot.counters.errors_by_kind.contains_key("sitemap"),
        "and is no error: {:?}",
        snapshot.counters.errors_by_kind
    );

    let audit = demo_audit(&data).await;
    assert_eq!(
        audit,
        SitemapAudit {
            hosts_with_sitemap: 1,
            sitemap_urls: 13,
            orphans: AUDIT_ORPHANS.len() as u64,
            not_ok: AUDIT_SITEMAP_NOT_INDEXABLE.len() as u64,
            missing: AUDIT_NOT_IN_SITEMAP.len() as u64,
        }
    );
    tokio::task::spawn_blocking(move || the_listing_tells_how_each_url_was_found(&data))
        .await
        .unwrap();
}

/// The audit's counts and lists, through the library.
async fn demo_audit(data: &str) -> SitemapAudit {
    let dir = std::path::PathBuf::from(data);
    tokio::task::spawn_blocking(move || {
        let results = Results::open(&dir).expect("results open");
        let q = query(&dir);
        let mut listed = Vec::new();
        sitemaps::list(&results, &q, Finding::Missing, |row| {
            listed.push(url::Url::parse(&row.url).unwrap().path().to_string());
            Ok(())
        })
        .unwrap();
        assert_eq!(listed, AUDIT_NOT_IN_SITEMAP);
        sitemaps::audit(&results, &q).expect("audit")
    })
    .await
    .unwrap()
}

fn the_listing_tells_how_each_url_was_found(data: &str) {
    let orphans = pages_json(data, &["--found-by", "sitemap"]);
    assert_eq!(paths(&orphans), set(AUDIT_ORPHANS));
    let gone = orphans
        .iter()
        .find(|r| r["url"].as_str().unwrap().ends_with("/gone.html"))
        .unwrap();
    assert_eq!(gone["status"], 404);
    let files = pages_json(data, &["--found-by", "sitemap-file"]);
    let mut expected = set(AUDIT_SITEMAP_FILES);
    expected.insert("/sitemap.xml".into());
    assert_eq!(paths(&files), expected);
    let links_only = pages_json(data, &["--found-by", "links"]);
    let host = |r: &Value| r["host"].as_str().unwrap().starts_with("audit.");
    let links_only: Vec<Value> = links_only.into_iter().filter(host).collect();
    // And what no sitemap should list: a noindex page, a meta refresh, the
    // 404 a canonical names.
    let mut unlisted = set(AUDIT_NOT_IN_SITEMAP);
    unlisted.extend(["/private-note.html", "/moved.html", "/retired.html"].map(String::from));
    assert_eq!(paths(&links_only), unlisted);
    let all = pages_json(data, &[]);
    let audit_pages = all
        .iter()
        .filter(|r| host(r) && r["status"] == 200 && r["found_by"] != "sitemap-file");
    assert_eq!(audit_pages.count(), AUDIT_PAGES);
    let home = all
        .iter()
        .find(|r| host(r) && path_is(r, "/"))
        .expect("home listed");
    assert_eq!(home["found_by"], "both", "the seed: linked and listed");
}

fn path_is(row: &Value, path: &str) -> bool {
    url::Url::parse(row["url"].as_str().unwrap()).is_ok_and(|u| u.path() == path)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_sitemaps_fetches_no_sitemap() {
    let demo = common::start_demo(vec![SiteKind::Audit, SiteKind::RobotsStatus(404)]).await;
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = common::test_config(&demo);
    cfg.sitemaps.enabled = false;
    common::crawl(cfg, dir.path()).await;
    let requested: Vec<String> = demo
        .log()
        .records()
        .iter()
        .map(|r| r.path_and_query.clone())
        .collect();
    demo.shutdown().await;
    for file in AUDIT_SITEMAP_FILES.iter().chain(&["/sitemap.xml"]) {
        assert!(!requested.iter().any(|p| p == file), "{file} requested");
    }
    for orphan in AUDIT_ORPHANS {
        assert!(!requested.iter().any(|p| p == orphan), "{orphan} requested");
    }
    let data = dir.path().to_str().unwrap().to_string();
    tokio::task::spawn_blocking(move || {
        assert!(pages_json(&data, &["--found-by", "sitemap"]).is_empty());
        let all = pages_json(&data, &[]);
        assert!(all
            .iter()
            .all(|r| r["found_by"] == "links" || r["found_by"] == "seed"));
    })
    .await
    .unwrap();
}
