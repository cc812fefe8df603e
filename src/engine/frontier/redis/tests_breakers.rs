//! Breakers are the crawl's: one worker's change is every other worker's
//! news, read at most a bounded number of hosts a look, and a host's record
//! is readable by a worker that adopts it later.

use std::time::Duration;

use tokio::time::Instant;

use super::tests_alerts::Crawl;
use super::DEFAULT_HOST_AFFINITY;
use crate::engine::breaker::OpenBreaker;
use crate::engine::frontier::conformance::{entry, record};
use crate::engine::frontier::{FrontierStore, Hold};

fn open_until(probe_at: Instant) -> OpenBreaker {
    OpenBreaker {
        probe_at,
        failing_since: probe_at - Duration::from_secs(30),
        reopen_level: 1,
        cooldown: Duration::from_secs(30),
        last_error: Some("HTTP 503".into()),
    }
}

fn hosts_of(news: &[(String, crate::engine::frontier::SharedBreaker)]) -> Vec<&str> {
    news.iter().map(|(h, _)| h.as_str()).collect()
}

#[test]
fn a_breaker_change_is_news_to_the_other_workers_only_and_read_once() {
    let mut crawl = Crawl::new("breakers");
    let (mut w1, mut w2) = (crawl.join(), crawl.join());
    let probe_at = Instant::now() + Duration::from_secs(60);
    w1.share_breaker(
        "down.example",
        Some(&open_until(probe_at)),
        "3 consecutive failures",
    )
    .unwrap();
    assert!(w1.breaker_news().unwrap().is_empty(), "its own change");
    let news = w2.breaker_news().unwrap();
    assert_eq!(hosts_of(&news), ["down.example"]);
    let shared = &news[0].1;
    assert_eq!(
        (shared.by.as_str(), shared.reason.as_str()),
        (w1.worker(), "3 consecutive failures")
    );
    let open = shared.open.as_ref().expect("open");
    assert_eq!(
        (open.reopen_level, open.cooldown),
        (1, Duration::from_secs(30))
    );
    let skew = open.probe_at.max(probe_at) - open.probe_at.min(probe_at);
    assert!(skew < Duration::from_millis(50), "{skew:?}");
    w2.look_at_breakers_now();
    assert!(w2.breaker_news().unwrap().is_empty(), "read once");

    // w2's probe closed it: w1 is told, w2 is not.
    w2.share_breaker("down.example", None, "probe succeeded")
        .unwrap();
    w2.look_at_breakers_now();
    assert!(w2.breaker_news().unwrap().is_empty());
    w1.look_at_breakers_now();
    let news = w1.breaker_news().unwrap();
    assert_eq!(hosts_of(&news), ["down.example"]);
    assert_eq!(news[0].1.open, None);
    // A worker that joins later reads the record of a host it adopts.
    let mut w3 = crawl.join();
    let read = w3
        .shared_breakers(&["down.example", "never.example"])
        .unwrap();
    assert_eq!(read[0].as_ref().map(|b| b.by.as_str()), Some(w2.worker()));
    assert_eq!(read[1], None);
}

#[test]
fn a_look_reads_a_bounded_number_of_hosts_and_the_next_the_rest() {
    let mut crawl = Crawl::new("many");
    let (mut w1, mut w2) = (crawl.join(), crawl.join());
    let probe_at = Instant::now() + Duration::from_secs(60);
    for i in 0..70 {
        w1.share_breaker(
            &format!("h{i}.example"),
            Some(&open_until(probe_at)),
            "failing",
        )
        .unwrap();
    }
    let first = w2.breaker_news().unwrap();
    w2.look_at_breakers_now();
    let second = w2.breaker_news().unwrap();
    assert_eq!((first.len(), second.len()), (64, 6));
    w2.look_at_breakers_now();
    assert!(w2.breaker_news().unwrap().is_empty());
}

#[test]
fn no_worker_takes_the_host_of_an_open_breaker_before_its_probe_time_and_its_claimer_reads_it() {
    let mut crawl = Crawl::new("cooldown");
    let (mut w1, mut w2) = (crawl.join(), crawl.join());
    let now = Instant::now();
    w1.push(vec![
        entry("down.example", "a", 0),
        entry("down.example", "b", 0),
    ])
    .unwrap();
    let lease = w1.next_ready(now).unwrap().expect("w1 takes the host");
    let probe_at = now + Duration::from_secs(60);
    w1.set_not_before("down.example", probe_at).unwrap();
    w1.share_breaker("down.example", Some(&open_until(probe_at)), "failing")
        .unwrap();
    w1.set_hold("down.example", Hold::Breaker, true).unwrap();
    w1.complete(&lease, &record(&lease.entry), Vec::new())
        .unwrap();
    // Held here, so given back by w1's next claim.
    assert!(w1.next_ready(now).unwrap().is_none());
    assert!(w2
        .next_ready(now + Duration::from_secs(59))
        .unwrap()
        .is_none());
    // w1 has first call on its host for a while; then up to the skew of two
    // clocks made a moment apart in one process.
    let due = probe_at + DEFAULT_HOST_AFFINITY + Duration::from_millis(50);
    let probe = w2.next_ready(due).unwrap().expect("w2 probes when due");
    assert_eq!(probe.entry.host, "down.example");
    // The claim read the host's breaker: w2 follows it though it never
    // looked at the news.
    let claimed = w2
        .claimed_breaker("down.example")
        .expect("read with the claim");
    assert_eq!(claimed.by, w1.worker());
    assert!(claimed.open.is_some());
    assert_eq!(w2.claimed_breaker("down.example"), None, "taken once");
}

#[test]
fn a_reader_sees_a_shared_breaker_on_the_crawls_clock() {
    let mut crawl = Crawl::new("reader");
    let mut w1 = crawl.join();
    let now = Instant::now();
    w1.share_breaker(
        "down.example",
        Some(&open_until(now + Duration::from_secs(60))),
        "x",
    )
    .unwrap();
    w1.share_breaker("up.example", None, "probe succeeded")
        .unwrap();
    let mut con = redis::Client::open(crawl.server.url())
        .unwrap()
        .get_connection()
        .unwrap();
    let key = super::breakers_key(&super::key_prefix("reader"));
    let mut state = |host: &str| {
        let json: String = redis::cmd("HGET")
            .arg(&key)
            .arg(host)
            .query(&mut con)
            .unwrap();
        super::shared_breaker_state(&json, w1.clock.score(now)).unwrap()
    };
    let down = state("down.example");
    let probe_in = down.probe_in.expect("open");
    assert!(probe_in.abs_diff(Duration::from_secs(60)) < Duration::from_millis(1));
    assert_eq!(down.last_error.as_deref(), Some("HTTP 503"));
    assert_eq!(state("up.example").probe_in, None);
}
