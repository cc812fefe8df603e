//! Hostile input ends as recorded per-URL errors, never a hang or a panic.

use crate::common;

use common::{crawl, pages, start_demo, test_config};
use crawldeck::demo::SiteKind;
use crawldeck::engine::store::PageOutcome;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redirect_loops_bombs_and_stalls_are_recorded_errors() {
    let demo = start_demo(vec![SiteKind::RedirectLoop, SiteKind::Hostile]).await;
    let dir = tempfile::tempdir().unwrap();
    let cfg = test_config(&demo);
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
    assert!(
        errors.iter().any(|(_, k)| k.contains("body")),
        "an oversized body or gzip bomb is a recorded error: {errors:?}"
    );
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
