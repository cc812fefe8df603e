//! Two or three workers of one crawl on a private redis-server: a breaker
//! opened on one is open on the others until the shared probe time; one
//! probe then goes out, and its success closes every worker's breaker.

use std::time::Duration;

use tokio::time::Instant;
use url::Url;

use super::super::{boot, closed_port_config, Coordinator};
use crate::cluster::redis_server::RedisServer;
use crate::engine::breaker::Outcome;
use crate::engine::frontier::ClusterTarget;
use crate::engine::hosts::FetchGate;
use crate::engine::robots::{RobotsAnswer, RobotsVerdict};
use crate::engine::telemetry::BreakerPhase;
use crate::engine::{EngineHandle, EngineOptions};

const HOST: &str = "127.0.0.1:9";

/// A worker of the crawl `crawl`, with the host in memory and its
/// robots.txt settled (so only the breaker decides a fetch).
fn worker(server: &RedisServer, crawl: &str, dir: &std::path::Path) -> (EngineHandle, Coordinator) {
    let (handle, ends) = EngineHandle::channel();
    let options = EngineOptions {
        wait_for_operator: true,
        cluster: Some(ClusterTarget {
            url: server.redis_url(),
            crawl: crawl.into(),
            lease_ttl: Duration::from_secs(30),
            host_affinity: crate::engine::DEFAULT_HOST_AFFINITY,
        }),
        ..Default::default()
    };
    let mut c = boot::build(closed_port_config(), dir, ends, options).expect("worker boots");
    let now = Instant::now();
    let origin = Url::parse(&format!("http://{HOST}/")).unwrap();
    c.hosts.adopt(HOST, Some(origin.as_str()), now);
    let answer = RobotsAnswer {
        verdict: RobotsVerdict::AllowAll,
        ttl: Duration::from_secs(3600),
        elapsed: Duration::ZERO,
    };
    c.hosts.settle_robots(HOST, &origin, answer, now);
    (handle, c)
}

/// Workers joining one crawl on a private redis-server.
struct Crawl {
    server: RedisServer,
    dirs: Vec<tempfile::TempDir>,
}

impl Crawl {
    fn new() -> Crawl {
        Crawl {
            server: RedisServer::for_test(),
            dirs: Vec::new(),
        }
    }

    /// A new worker (its handle kept alive by the caller), with a data
    /// directory of its own.
    fn join(&mut self) -> (EngineHandle, Coordinator) {
        let dir = tempfile::tempdir().unwrap();
        let joined = worker(&self.server, "breakers", dir.path());
        self.dirs.push(dir);
        joined
    }
}

/// Fails the host on `c` until its breaker opens; the probe time.
fn open_breaker(c: &mut Coordinator, now: Instant) -> Instant {
    for _ in 0..c.cfg.breaker.consecutive_failures {
        c.breaker_outcome(HOST, Outcome::Failure("HTTP 503".into()), now);
    }
    c.hosts.breaker_probe_at(HOST).expect("the breaker opened")
}

fn may_fetch(c: &mut Coordinator, at: Instant) -> bool {
    let url = Url::parse(&format!("http://{HOST}/a")).unwrap();
    matches!(c.hosts.check_fetch(HOST, &url, at), FetchGate::Go { .. })
}

fn phase(c: &Coordinator) -> BreakerPhase {
    match (c.hosts.breaker_down(HOST), c.hosts.breaker_probe_at(HOST)) {
        (false, _) => BreakerPhase::Closed,
        (true, Some(_)) => BreakerPhase::Open,
        (true, None) => BreakerPhase::HalfOpen,
    }
}

/// Equal up to the skew of two clocks made a moment apart in one process.
fn close_to(a: Instant, b: Instant) -> bool {
    a.max(b) - a.min(b) < Duration::from_millis(50)
}

#[tokio::test]
async fn a_breaker_opened_on_one_worker_is_open_on_the_others_until_one_probe_closes_it() {
    let mut crawl = Crawl::new();
    let ((_ha, mut a), (_hb, mut b)) = (crawl.join(), crawl.join());
    let now = Instant::now();
    let probe_at = open_breaker(&mut a, now);

    b.follow_shared_breakers(now);
    assert_eq!(phase(&b), BreakerPhase::Open);
    let followed = b
        .hosts
        .breaker_probe_at(HOST)
        .expect("b follows the open breaker");
    assert!(close_to(followed, probe_at), "{followed:?} vs {probe_at:?}");
    assert!(
        !may_fetch(&mut b, now),
        "b does not fetch during the cooldown"
    );
    assert!(!may_fetch(&mut b, followed - Duration::from_millis(1)));

    // The cooldown is over: b (holding the host now) sends the one probe.
    let due = followed.max(probe_at);
    assert!(may_fetch(&mut b, due));
    assert_eq!(phase(&b), BreakerPhase::HalfOpen);
    assert!(!may_fetch(&mut b, due), "one probe at a time");
    b.breaker_outcome(HOST, Outcome::Success, due);
    assert_eq!(phase(&b), BreakerPhase::Closed);

    // a follows the close: it neither waits for nor sends a probe of its own.
    a.follow_shared_breakers(due);
    assert_eq!(phase(&a), BreakerPhase::Closed);
    assert!(may_fetch(&mut a, due));
    assert_eq!(phase(&a), BreakerPhase::Closed);
}

#[tokio::test]
async fn a_failed_probe_on_another_worker_reopens_with_the_longer_cooldown_everywhere() {
    let mut crawl = Crawl::new();
    let ((_ha, mut a), (_hb, mut b)) = (crawl.join(), crawl.join());
    let now = Instant::now();
    let first = open_breaker(&mut a, now);
    b.follow_shared_breakers(now);
    let due = b.hosts.breaker_probe_at(HOST).unwrap().max(first);
    assert!(may_fetch(&mut b, due));
    // Counted as the probe, not as the first of a fresh run of failures.
    b.breaker_outcome(HOST, Outcome::Failure("HTTP 503".into()), due);
    assert_eq!(phase(&b), BreakerPhase::Open);
    let second = b.hosts.breaker_probe_at(HOST).unwrap();
    assert!(second - due > first - now, "the cooldown doubled");

    a.follow_shared_breakers(due);
    let followed = a.hosts.breaker_probe_at(HOST).expect("a stays open");
    assert!(close_to(followed, second));
    assert!(!may_fetch(&mut a, first.max(due)));
}

#[tokio::test]
async fn a_worker_that_dies_with_the_breaker_open_leaves_the_host_to_the_others_after_its_probe_time(
) {
    let mut crawl = Crawl::new();
    let (ha, mut a) = crawl.join();
    let now = Instant::now();
    let probe_at = open_breaker(&mut a, now);
    drop(a);
    drop(ha);

    // A worker new to the host reads its breaker as it adopts it.
    let (_hc, mut c) = crawl.join();
    c.adopt_shared_breakers(&[HOST], now);
    assert_eq!(phase(&c), BreakerPhase::Open);
    let followed = c.hosts.breaker_probe_at(HOST).unwrap();
    assert!(close_to(followed, probe_at));
    assert!(!may_fetch(&mut c, now));
    // Nobody closes it, but its time is up: c probes, and closes it.
    let due = followed.max(probe_at);
    assert!(may_fetch(&mut c, due));
    c.breaker_outcome(HOST, Outcome::Success, due);
    let shared = c.frontier.shared_breakers(&[HOST]).unwrap();
    assert_eq!(shared[0].as_ref().map(|s| s.open.is_none()), Some(true));
}
