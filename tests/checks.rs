//! Resources and external links are checked, not crawled: judged by the demo
//! server's request log (methods, counts, order, gaps) and by the listings
//! of the real binary.

use crate::common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::{crawl, json_lines, pages, start_demo, test_config};
use crawldeck::demo::{
    RequestRecord, SiteKind, ELSEWHERE_DISALLOWED, ELSEWHERE_GONE, ELSEWHERE_NEVER, ELSEWHERE_OK,
    LINKS_PAGES, LINKS_RESOURCES_BROKEN, LINKS_RESOURCES_OK,
};
use crawldeck::engine::config::ResourcesMode;
use crawldeck::engine::store::{PageOutcome, PageRecord, UrlKind};

pub(crate) const DELAY: Duration = Duration::from_millis(40);

pub(crate) fn requests<'a>(
    log: &'a [RequestRecord],
    site: SiteKind,
    path: &str,
) -> Vec<&'a RequestRecord> {
    log.iter()
        .filter(|r| r.site == site && r.path_and_query == path)
        .collect()
}

/// One request at a time per host, each starting at least the delay after
/// the previous one finished.
pub(crate) fn assert_polite(log: &[RequestRecord], site: SiteKind) {
    let of_site: Vec<&RequestRecord> = log.iter().filter(|r| r.site == site).collect();
    assert_eq!(of_site[0].path_and_query, "/robots.txt", "{site:?}");
    for pair in of_site.windows(2) {
        let finished = pair[0].finished.expect("request finished");
        let gap = pair[1].started.saturating_duration_since(finished);
        assert!(
            gap >= DELAY - Duration::from_millis(5),
            "{site:?}: {} started {gap:?} after {} finished",
            pair[1].path_and_query,
            pair[0].path_and_query
        );
        assert_eq!(pair[1].in_flight_at_start, 1, "{site:?}");
    }
}

/// The record of the URL with this path.
pub(crate) fn record_of<'a>(records: &'a [PageRecord], path: &str) -> &'a PageRecord {
    records
        .iter()
        .find(|p| path_of(&p.url) == path)
        .unwrap_or_else(|| panic!("{path} recorded"))
}

/// The paths of the URLs with a response record in the crawl's WARC files.
pub(crate) fn archived_paths(dir: &std::path::Path) -> BTreeSet<String> {
    common::warc::response_uris(dir)
        .iter()
        .map(|uri| path_of(uri))
        .collect()
}

pub(crate) fn path_of(url: &str) -> String {
    url::Url::parse(url).expect("a URL").path().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resources_and_external_links_are_checked_once_with_head_and_never_followed() {
    let demo = start_demo(vec![SiteKind::Links, SiteKind::Elsewhere]).await;
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = test_config(&demo);
    cfg.checks.external = true;
    cfg.politeness.min_delay = DELAY;
    let snapshot = crawl(cfg, dir.path()).await;
    let log = demo.log().records();
    demo.shutdown().await;

    for path in LINKS_PAGES {
        let got = requests(&log, SiteKind::Links, path);
        assert_eq!(got.len(), 1, "{path}");
        assert_eq!(got[0].method, "GET", "{path} is a page");
    }
    for path in LINKS_RESOURCES_OK.iter().chain(&LINKS_RESOURCES_BROKEN) {
        let got = requests(&log, SiteKind::Links, path);
        assert_eq!(got.len(), 1, "{path} is checked once");
        assert_eq!(got[0].method, "HEAD", "{path}");
    }
    for path in [ELSEWHERE_OK, ELSEWHERE_GONE] {
        let got = requests(&log, SiteKind::Elsewhere, path);
        assert_eq!(got.len(), 1, "{path} is checked once");
        assert_eq!(got[0].method, "HEAD", "{path}");
    }
    let elsewhere: Vec<&str> = log
        .iter()
        .filter(|r| r.site == SiteKind::Elsewhere)
        .map(|r| r.path_and_query.as_str())
        .collect();
    assert_eq!(
        elsewhere.len(),
        3,
        "robots.txt and two checks: {elsewhere:?}"
    );
    assert!(
        !elsewhere.contains(&ELSEWHERE_DISALLOWED),
        "robots.txt obeyed"
    );
    for path in ELSEWHERE_NEVER {
        assert!(
            !elsewhere.contains(&path),
            "{path}: a check's links are not followed"
        );
    }
    assert_polite(&log, SiteKind::Links);
    assert_polite(&log, SiteKind::Elsewhere);

    let counters = &snapshot.counters;
    assert_eq!(counters.pages_fetched, 2, "{counters:?}");
    assert_eq!(counters.checked, 11, "{counters:?}");
    assert_eq!(counters.resources_fetched, 0, "{counters:?}");
    let archived = archived_paths(dir.path());
    let mut want: BTreeSet<String> = LINKS_PAGES.iter().map(|p| p.to_string()).collect();
    want.extend(["/sitemap.xml".into(), "/robots.txt".into()]);
    assert_eq!(
        archived, want,
        "pages, the sitemap and robots.txt only: a checked resource is never archived"
    );
    let records = pages(dir.path());
    let record = |site_path: &str| record_of(&records, site_path);
    assert_eq!(record("/img/missing.png").kind, UrlKind::Resource);
    assert_eq!(
        record("/img/missing.png").outcome,
        PageOutcome::Fetched { status: 404 }
    );
    assert_eq!(
        record("/img/ok.png").content_type.as_deref(),
        Some("image/png")
    );
    assert_eq!(record(ELSEWHERE_GONE).kind, UrlKind::External);
    assert_eq!(
        record(ELSEWHERE_DISALLOWED).outcome,
        PageOutcome::RobotsDenied
    );

    let data = dir.path().to_str().unwrap();
    let broken = json_lines(&["links", data, "--broken", "--json"]);
    let listed: BTreeSet<(String, String, u64)> = broken
        .iter()
        .map(|b| {
            (
                path_of(b["url"].as_str().unwrap()),
                b["kind"].as_str().unwrap().to_string(),
                b["status"].as_u64().unwrap(),
            )
        })
        .collect();
    let want: BTreeSet<(String, String, u64)> = [
        ("/img/missing.png", "resource"),
        ("/missing.css", "resource"),
        (ELSEWHERE_GONE, "external"),
    ]
    .into_iter()
    .map(|(p, k)| (p.to_string(), k.to_string(), 404))
    .collect();
    assert_eq!(listed, want);
    let referrers: BTreeSet<String> = broken[0]["referrers"]
        .as_array()
        .expect("referrers")
        .iter()
        .map(|r| path_of(r.as_str().unwrap()))
        .collect();
    assert_eq!(
        referrers,
        BTreeSet::from(["/".into(), "/about.html".into()])
    );

    let audit = json_lines(&["audit", data, "--json"]);
    let count = |check: &str| {
        audit
            .iter()
            .find(|f| f["check"] == check)
            .map_or(0, |f| f["urls"].as_u64().unwrap())
    };
    assert_eq!(
        (
            count("broken-links"),
            count("broken-resources"),
            count("broken-external")
        ),
        (0, 2, 1)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resources_off_and_no_external_checks_request_neither() {
    let demo = start_demo(vec![SiteKind::Links, SiteKind::Elsewhere]).await;
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = test_config(&demo);
    cfg.checks.resources = ResourcesMode::Off;
    crawl(cfg, dir.path()).await;
    let log = demo.log().records();
    demo.shutdown().await;

    let links: BTreeSet<&str> = log
        .iter()
        .filter(|r| r.site == SiteKind::Links)
        .map(|r| r.path_and_query.as_str())
        .collect();
    // robots.txt names no sitemap: the guessed one is asked for once.
    let mut want = BTreeSet::from(["/robots.txt", "/sitemap.xml"]);
    want.extend(LINKS_PAGES);
    assert_eq!(links, want, "pages only");
    assert!(
        log.iter().all(|r| r.site != SiteKind::Elsewhere),
        "no external request without --check-external"
    );
    // The two pages and the guessed sitemap's record; nothing checked.
    let kinds: Vec<UrlKind> = pages(dir.path()).iter().map(|p| p.kind).collect();
    assert_eq!(
        kinds,
        [UrlKind::Page, UrlKind::Page, UrlKind::Page],
        "the two pages and /sitemap.xml, nothing checked"
    );
}
