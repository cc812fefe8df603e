//! The shared robots.txt cache against a private redis-server and a loopback
//! server that counts its robots.txt requests.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::routing::get;
use axum::Router;

use super::*;
use crate::cluster::redis_server::RedisServer;
use crate::engine::config::CrawlConfig;
use crate::engine::fetch::test_server::TestServer;

const PREFIX: &str = "crawldeck:{t}:";

/// A server whose robots.txt answers `status` with a one-line Disallow,
/// counting requests.
async fn robots_server(status: u16) -> (TestServer, Arc<AtomicUsize>) {
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    let app = Router::new().route(
        "/robots.txt",
        get(move || {
            counter.fetch_add(1, Ordering::SeqCst);
            async move {
                axum::response::Response::builder()
                    .status(status)
                    .header("cache-control", "max-age=600")
                    .body(axum::body::Body::from(
                        "User-agent: *\nDisallow: /private\n",
                    ))
                    .unwrap()
            }
        }),
    );
    (TestServer::axum(app).await, hits)
}

fn setup() -> (Fetcher, RobotsConfig) {
    let mut cfg = CrawlConfig::default();
    cfg.fetch.total_timeout = Duration::from_secs(2);
    // The test server is on loopback.
    cfg.fetch.allow_private = true;
    (Fetcher::new(&cfg).unwrap(), cfg.robots)
}

fn worker(redis: &RedisServer) -> Arc<SharedRobots> {
    Arc::new(SharedRobots::new(&redis.redis_url(), PREFIX.into()).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_workers_fetch_an_origins_robots_txt_once_and_share_its_rules() {
    let redis = RedisServer::for_test();
    let (server, hits) = robots_server(200).await;
    let (fetcher, cfg) = setup();
    let (a, b) = (worker(&redis), worker(&redis));
    let origin = server.url("/");
    let ((va, ttl_a, _), (vb, ttl_b, _)) = tokio::join!(
        fetch_shared(&a, &fetcher, &origin, &cfg, "crawldeck"),
        fetch_shared(&b, &fetcher, &origin, &cfg, "crawldeck"),
    );
    assert_eq!(hits.load(Ordering::SeqCst), 1);
    for v in [&va, &vb] {
        assert!(!v.allowed(&server.url("/private/a")), "{v:?}");
        assert!(v.allowed(&server.url("/public")), "{v:?}");
    }
    // The fetcher's TTL is the header's; the other's is what is left of it.
    assert_eq!(ttl_a.max(ttl_b), Duration::from_secs(600));
    assert!(
        ttl_a.min(ttl_b) > Duration::from_secs(590),
        "{ttl_a:?} {ttl_b:?}"
    );
    // A third worker later: still no second request.
    let (vc, _, _) = fetch_shared(&worker(&redis), &fetcher, &origin, &cfg, "crawldeck").await;
    assert!(!vc.allowed(&server.url("/private/b")));
    assert_eq!(hits.load(Ordering::SeqCst), 1);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unavailable_answer_is_not_shared_and_a_missing_file_is() {
    let redis = RedisServer::for_test();
    let (fetcher, cfg) = setup();
    let (down, down_hits) = robots_server(503).await;
    for _ in 0..2 {
        let (v, _, _) =
            fetch_shared(&worker(&redis), &fetcher, &down.url("/"), &cfg, "crawldeck").await;
        assert!(matches!(v, RobotsVerdict::Unavailable { .. }), "{v:?}");
    }
    assert_eq!(down_hits.load(Ordering::SeqCst), 2);
    let (missing, missing_hits) = robots_server(404).await;
    for _ in 0..2 {
        let (v, _, _) = fetch_shared(
            &worker(&redis),
            &fetcher,
            &missing.url("/"),
            &cfg,
            "crawldeck",
        )
        .await;
        assert!(matches!(v, RobotsVerdict::AllowAll), "{v:?}");
    }
    assert_eq!(missing_hits.load(Ordering::SeqCst), 1);
    down.stop().await;
    missing.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_that_finds_the_lock_taken_waits_for_the_answer() {
    let redis = RedisServer::for_test();
    let (server, hits) = robots_server(200).await;
    let (fetcher, cfg) = setup();
    let origin = server.url("/");
    let name = origin.origin().ascii_serialization();
    let holder = worker(&redis);
    assert!(holder.try_lock(&name, Duration::from_secs(30)).unwrap());
    let waiter = worker(&redis);
    let wait = tokio::spawn({
        let (fetcher, cfg, origin) = (fetcher.clone(), cfg.clone(), origin.clone());
        async move { fetch_shared(&waiter, &fetcher, &origin, &cfg, "crawldeck").await }
    });
    // The holder's answer arrives: the waiter takes it without a request.
    let body = Shared::Body(b"User-agent: *\nDisallow: /held\n".to_vec());
    holder
        .store(&name, Some((&body, 200)), Duration::from_secs(60))
        .unwrap();
    let (v, ttl, fetched) = wait.await.unwrap();
    assert!(fetched.is_empty(), "the waiter made no request");
    assert!(!v.allowed(&server.url("/held/x")), "{v:?}");
    assert!(ttl <= Duration::from_secs(60));
    assert_eq!(hits.load(Ordering::SeqCst), 0);
    server.stop().await;
}
