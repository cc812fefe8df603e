//! A host's circuit breaker is the crawl's, not a worker's: three worker
//! processes crawl the demo's flaky site (its page requests 6 to 30 fail);
//! once a breaker opened, every later failed request is a probe at least a
//! cooldown after the one before, whichever worker sends it (a worker that
//! counted failures from zero would send several in a row), from the demo
//! server's log.

use crate::common;

use std::time::Duration;

use common::cluster::{finish, run_ctl, start_three_with};
use common::start_demo;
use crawldeck::cluster::redis_server::RedisServer;
use crawldeck::demo::{RequestRecord, SiteKind};
use tokio::time::Instant;

const CRAWL: &str = "breakers";
/// The breaker's cooldown, not doubled (`max_cooldown` is the same).
const COOLDOWN: Duration = Duration::from_secs(1);
/// Failed requests after which the test has seen enough probes.
const FAILURES_SEEN: usize = 12;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_worker_requests_a_host_during_its_breakers_cooldown() {
    let redis = RedisServer::for_test();
    let demo = start_demo(vec![SiteKind::Flaky]).await;
    let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let config = dirs[0].path().join("breaker.toml");
    std::fs::write(
        &config,
        "[breaker]\ncooldown = \"1s\"\nmax_cooldown = \"1s\"\n",
    )
    .unwrap();
    let args = ["--config", config.to_str().unwrap()];
    let workers = start_three_with(&redis, CRAWL, &demo, &dirs, &args).await;

    let deadline = Instant::now() + Duration::from_secs(90);
    while failures(&demo.log().for_site(SiteKind::Flaky)).len() < FAILURES_SEEN {
        assert!(
            Instant::now() < deadline,
            "the flaky site never failed {FAILURES_SEEN} times"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let stopped = run_ctl(&redis, CRAWL, vec!["stop".into()]).await;
    assert!(stopped.status.success(), "{stopped:?}");
    for w in workers {
        finish(w).await;
    }
    let records = demo.log().for_site(SiteKind::Flaky);
    demo.shutdown().await;

    let failed = failures(&records);
    let gaps: Vec<Duration> = failed
        .windows(2)
        .map(|pair| {
            let before = pair[0].finished.unwrap_or(pair[0].started);
            pair[1].started.saturating_duration_since(before)
        })
        .collect();
    println!("gaps between failed requests: {gaps:?}");
    // The first gap of a cooldown is the first open; each gap after it is one.
    let opened = gaps
        .iter()
        .position(|gap| *gap >= COOLDOWN.mul_f64(0.8))
        .expect("a breaker opened");
    let probes = &gaps[opened..];
    assert!(probes.len() >= 4, "too few probes: {gaps:?}");
    assert!(
        probes.iter().all(|gap| *gap >= COOLDOWN.mul_f64(0.8)),
        "a request during a cooldown: {gaps:?}"
    );
}

/// Failed page requests (500 or a dropped connection), in order.
fn failures(records: &[RequestRecord]) -> Vec<RequestRecord> {
    let mut failed: Vec<RequestRecord> = records
        .iter()
        .filter(|r| r.path_and_query != "/robots.txt" && r.path_and_query != "/sitemap.xml")
        .filter(|r| r.status != 200)
        .cloned()
        .collect();
    failed.sort_by_key(|r| r.started);
    failed
}
