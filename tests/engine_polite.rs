//! The engine against the demo web, judged by the server's own request log:
//! robots.txt first, nothing disallowed, per-host limits and delays kept,
//! no URL fetched twice.

use crate::common;

use std::collections::HashMap;
use std::time::Duration;

use common::{crawl, pages, start_demo, test_config};
use crawldeck::demo::{blog_allowed_paths, blog_disallowed_paths, SiteKind};
use crawldeck::engine::store::PageOutcome;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn polite_crawl_of_shop_and_blog() {
    let demo = start_demo(vec![SiteKind::Shop, SiteKind::Blog, SiteKind::Slow]).await;
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = test_config(&demo);
    cfg.politeness.min_delay = Duration::from_millis(40);
    let snapshot = crawl(cfg, dir.path()).await;
    let log = demo.log().records();
    demo.shutdown().await;

    assert!(
        snapshot.counters.pages_fetched > 100,
        "{:?}",
        snapshot.counters
    );
    assert_eq!(snapshot.frontier_size, 0);

    for site in [SiteKind::Shop, SiteKind::Blog, SiteKind::Slow] {
        let requests: Vec<_> = log.iter().filter(|r| r.site == site).collect();
        assert!(!requests.is_empty(), "{site:?} was crawled");
        // robots.txt before any page of the host.
        assert_eq!(requests[0].path_and_query, "/robots.txt", "{site:?}");
        // Never more than one request in flight per host (the default).
        let max = requests.iter().map(|r| r.in_flight_at_start).max().unwrap();
        assert_eq!(max, 1, "{site:?} had {max} requests in flight");
        // The per-host delay: the next request starts no earlier than
        // the previous one finished plus the delay.
        for pair in requests.windows(2) {
            let finished = pair[0].finished.expect("request finished");
            let gap = pair[1].started.saturating_duration_since(finished);
            assert!(
                gap >= Duration::from_millis(35),
                "{site:?}: {} started {gap:?} after {} finished",
                pair[1].path_and_query,
                pair[0].path_and_query
            );
        }
        // No URL twice.
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for r in &requests {
            *counts.entry(r.path_and_query.as_str()).or_default() += 1;
        }
        let twice: Vec<_> = counts.iter().filter(|(_, n)| **n > 1).collect();
        assert!(twice.is_empty(), "{site:?} fetched twice: {twice:?}");
        // Identification.
        assert!(requests.iter().all(|r| r
            .user_agent
            .as_deref()
            .unwrap_or("")
            .starts_with("crawldeck/")));
    }

    // The blog's robots.txt asks for a Crawl-delay (1 s x the demo's latency
    // scale of 0.1): its requests are at least that far apart.
    let blog_requests: Vec<_> = log.iter().filter(|r| r.site == SiteKind::Blog).collect();
    for pair in blog_requests.windows(2).skip(1) {
        let finished = pair[0].finished.expect("request finished");
        let gap = pair[1].started.saturating_duration_since(finished);
        assert!(
            gap >= Duration::from_millis(95),
            "Crawl-delay ignored: {gap:?}"
        );
    }

    let blog: Vec<&str> = log
        .iter()
        .filter(|r| r.site == SiteKind::Blog)
        .map(|r| r.path_and_query.as_str())
        .collect();
    for path in blog_disallowed_paths() {
        assert!(!blog.contains(path), "disallowed {path} was requested");
    }
    for path in blog_allowed_paths() {
        assert!(blog.contains(path), "allowed {path} was not requested");
    }

    let records = pages(dir.path());
    let denied = records
        .iter()
        .filter(|p| matches!(p.outcome, PageOutcome::RobotsDenied))
        .count();
    assert!(
        denied >= blog_disallowed_paths().len(),
        "denied URLs are recorded"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn robots_status_codes() {
    let sites = vec![
        SiteKind::RobotsStatus(401),
        SiteKind::RobotsStatus(403),
        SiteKind::RobotsStatus(404),
        SiteKind::RobotsStatus(410),
        SiteKind::RobotsFlaky,
    ];
    let demo = start_demo(sites).await;
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = test_config(&demo);
    cfg.robots.mode = crawldeck::engine::config::RobotsMode::Strict;
    crawl(cfg, dir.path()).await;
    let log = demo.log();
    let pages_of = |s| {
        log.for_site(s)
            .iter()
            .filter(|r| r.path_and_query != "/robots.txt")
            .count()
    };
    // 401/403 in strict mode: the whole site is off limits.
    assert_eq!(pages_of(SiteKind::RobotsStatus(401)), 0);
    assert_eq!(pages_of(SiteKind::RobotsStatus(403)), 0);
    // 404/410: no restrictions.
    assert!(pages_of(SiteKind::RobotsStatus(404)) >= 5);
    assert!(pages_of(SiteKind::RobotsStatus(410)) >= 5);
    // 503 postpones the host: no page before robots.txt answered 200.
    let flaky = log.for_site(SiteKind::RobotsFlaky);
    let first_ok = flaky
        .iter()
        .position(|r| r.path_and_query == "/robots.txt" && r.status == 200)
        .expect("robots.txt eventually answered 200");
    assert!(flaky[..first_ok]
        .iter()
        .all(|r| r.path_and_query == "/robots.txt"));
    assert!(
        flaky.len() > first_ok + 5,
        "the host was crawled after robots.txt recovered"
    );
    demo.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn robots_rfc9309_mode_allows_on_401() {
    let demo = start_demo(vec![SiteKind::RobotsStatus(401)]).await;
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = test_config(&demo);
    cfg.robots.mode = crawldeck::engine::config::RobotsMode::Rfc9309;
    crawl(cfg, dir.path()).await;
    let pages = demo
        .log()
        .for_site(SiteKind::RobotsStatus(401))
        .iter()
        .filter(|r| r.path_and_query != "/robots.txt")
        .count();
    assert!(pages >= 5, "rfc9309 treats 401 as no restrictions");
    demo.shutdown().await;
}
