//! Hostile input ends as recorded per-URL errors, or pages cut at the body
//! cap, never a hang or a panic.

use crate::common;

use common::{crawl, pages, start_demo, test_config};
use crawldeck::demo::SiteKind;
use crawldeck::engine::store::PageOutcome;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redirect_loops_bombs_and_stalls_are_recorded_and_bounded() {
    let demo = start_demo(vec![SiteKind::RedirectLoop, SiteKind::Hostile]).await;
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = test_config(&demo);
    let cap = cfg.fetch.max_body;
    // The 100,000-link page is cut at the body cap and read: its first
    // links are enough (each a 404 under the politeness delay).
    cfg.scope.max_links_per_page = 100;
    let snapshot = crawl(cfg, dir.path()).await;
    let log = demo.log().records();
    demo.shutdown().await;

    let records = pages(dir.path());
    let errors: Vec<_> = records
        .iter()
        .filter_map(|p| match &p.outcome {
            PageOutcome::Error { kind, .. } => Some((p.url.as_str(), kind.as_str())),
            _ => None,
        })
        .collect();
    // Oversized bodies, declared or not, a gzip bomb and the 3 MB page of
    // links are kept up to the cap (after decompression) and recorded as cut.
    for path in [
        "/huge.html",
        "/huge-declared.html",
        "/bomb.html",
        "/many-links.html",
    ] {
        let page = records
            .iter()
            .find(|p| p.url.ends_with(path))
            .unwrap_or_else(|| panic!("{path} is recorded"));
        assert!(
            // The two 50 MB pages share their first megabyte: one is the
            // other's duplicate.
            matches!(
                page.outcome,
                PageOutcome::Fetched { status: 200 } | PageOutcome::Duplicate { .. }
            ) && page.truncated
                && page.bytes == cap,
            "{path} cut at {cap} bytes: {page:?}"
        );
    }
    assert_eq!(snapshot.counters.bodies_cut, 4);
    assert!(
        errors.iter().any(|(_, k)| k.contains("timeout")),
        "a stalled body is a recorded timeout: {errors:?}"
    );
    // Redirect loop: each URL of the loop is fetched once, then the crawl moves on.
    let mut loop_paths: Vec<&str> = log
        .iter()
        .filter(|r| r.site == SiteKind::RedirectLoop && r.path_and_query != "/robots.txt")
        .map(|r| r.path_and_query.as_str())
        .collect();
    let total = loop_paths.len();
    loop_paths.sort();
    loop_paths.dedup();
    assert_eq!(total, loop_paths.len(), "no redirect target fetched twice");
    // The long chain stops at max_redirects hops.
    assert!(
        total <= 10 + 1 + 3 + 2,
        "{total} requests to the redirect site"
    );
    assert!(snapshot.counters.redirects > 0);
    assert!(
        errors.iter().any(|(_, k)| *k == "bad-redirect"),
        "a 3xx without a Location is a recorded error: {errors:?}"
    );
    // The summary's counts are the listing's.
    let mut by_kind = std::collections::BTreeMap::new();
    for (_, kind) in &errors {
        *by_kind.entry(kind.to_string()).or_insert(0u64) += 1;
    }
    let counted: std::collections::BTreeMap<String, u64> = snapshot
        .counters
        .errors_by_kind
        .iter()
        .map(|(k, n)| (k.to_string(), *n))
        .collect();
    assert_eq!(counted, by_kind);
}
