//! The crawl loop's handling of answers: retries, a host's turn.

use super::*;

#[tokio::test]
async fn a_hosts_next_request_need_not_wait_for_its_last_pages_write() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_handle, mut c) = super::super::for_test(super::super::closed_port_config(), dir.path());
    // No fetch is started: the test takes the lease and answers it.
    let now = Instant::now();
    queued(&mut c, &["next"], now);
    let first = c.frontier.next_ready(now).unwrap().expect("the seed");
    assert!(
        c.frontier.next_ready(now).unwrap().is_none(),
        "one at a time"
    );
    c.slots.start_page();
    c.hosts.fetch_started(HOST, now);
    c.handle_work(Work::Page {
        lease: first,
        result: Err(FetchError {
            kind: FetchErrorKind::Decode,
            message: "bad gzip".into(),
            elapsed: std::time::Duration::ZERO,
        }),
    });
    assert!(!c.group_commit.is_empty(), "the page waits for its group");
    // Past the politeness delay the answer set.
    let later = Instant::now() + std::time::Duration::from_secs(600);
    let second = c.frontier.next_ready(later).unwrap();
    assert_eq!(
        second.map(|l| l.entry.url),
        Some(format!("http://{HOST}/next")),
        "the host's turn ended with the answer"
    );
}

#[tokio::test]
async fn a_group_waits_while_a_request_is_in_flight_and_no_longer() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_handle, mut c) = super::super::for_test(super::super::closed_port_config(), dir.path());
    let now = Instant::now();
    queued(&mut c, &[], now);
    // Adopted by `queued`: the loop's steps start no robots.txt request.
    c.frontier.take_new_hosts().expect("new hosts");
    let lease = c.frontier.next_ready(now).unwrap().expect("the seed");
    let url = lease.entry.url.clone();
    c.slots.start_page();
    c.hosts.fetch_started(HOST, now);
    // Another host's request, still out.
    c.slots.start_page();
    c.handle_work(Work::Page {
        lease,
        result: Err(FetchError {
            kind: FetchErrorKind::Decode,
            message: "bad gzip".into(),
            elapsed: std::time::Duration::ZERO,
        }),
    });
    c.step(Instant::now());
    assert!(
        !c.group_commit.is_empty(),
        "the answer waits for pages to share its write"
    );

    c.slots.end_page();
    c.step(Instant::now());
    assert!(
        c.group_commit.is_empty(),
        "nothing in flight: no page can join the group, it does not wait"
    );
    assert!(
        c.store.page(&url).unwrap().is_some(),
        "its record is stored"
    );
}

#[test]
fn a_total_timeout_is_retried_once_other_host_failures_twice() {
    let mut retries = Retries::default();
    let (max, counts_while_down) = retry_policy(Some(FetchErrorKind::TotalTimeout));
    assert!(counts_while_down);
    assert!(retries.try_again(1, max), "first total timeout: one retry");
    assert!(!retries.try_again(1, max), "second: recorded as an error");

    for kind in [
        Some(FetchErrorKind::Timeout),
        Some(FetchErrorKind::Connect),
        Some(FetchErrorKind::Reset),
        None,
    ] {
        let (max, counts_while_down) = retry_policy(kind);
        assert_eq!(max, MAX_ATTEMPTS);
        assert!(!counts_while_down);
        let fp = 2;
        assert!(retries.try_again(fp, max));
        assert!(retries.try_again(fp, max));
        assert!(!retries.try_again(fp, max), "{kind:?}");
        retries.forget(fp);
    }
}

#[test]
fn a_url_that_already_failed_gets_no_extra_retry_after_a_total_timeout() {
    let mut retries = Retries::default();
    let (max, _) = retry_policy(Some(FetchErrorKind::Connect));
    assert!(retries.try_again(7, max));
    let (max, _) = retry_policy(Some(FetchErrorKind::TotalTimeout));
    assert!(!retries.try_again(7, max));
}

const HOST: &str = "127.0.0.1:9";

/// `paths` of `HOST` queued, the host adopted, nothing holding it.
fn queued(c: &mut Coordinator, paths: &[&str], now: Instant) {
    use crate::engine::frontier::{FrontierEntry, Hold};
    use crate::engine::store::UrlKind;
    for path in paths {
        let url = format!("http://{HOST}/{path}");
        let host = crate::engine::url_norm::host_key(&url::Url::parse(&url).unwrap());
        let entry = FrontierEntry {
            priority: 1,
            url,
            host,
            depth: 1,
            redirects: 0,
            kind: UrlKind::Page,
        };
        c.frontier.push(vec![entry]).expect("queued");
    }
    c.hosts.adopt(HOST, Some(&format!("http://{HOST}/")), now);
    for hold in [Hold::Robots, Hold::Paused, Hold::Breaker] {
        c.frontier.set_hold(HOST, hold, false).expect("hold lifted");
    }
}

/// A host answered at `t0`, its page processed until `t0 + 300 ms`.
#[tokio::test(start_paused = true)]
async fn a_hosts_delay_runs_from_its_answer_not_from_the_end_of_processing() {
    use std::time::Duration;

    use crate::engine::fetch::Response;

    let dir = tempfile::tempdir().expect("temp dir");
    let mut cfg = super::super::closed_port_config();
    cfg.politeness.min_delay = Duration::from_secs(1);
    cfg.politeness.delay_factor = 0.0;
    let (_handle, mut c) = super::super::for_test(cfg, dir.path());
    let t0 = Instant::now();
    queued(&mut c, &["a", "b"], t0);
    let lease = c.frontier.next_ready(t0).unwrap().expect("a URL ready");
    let page = Fetched::answer(Response::for_test(
        &lease.entry.url,
        200,
        "text/plain",
        b"x",
    ));
    assert_eq!(page.answered_at, t0);

    tokio::time::advance(Duration::from_millis(300)).await;
    c.page_fetched(lease, page, Instant::now());
    c.sync();

    let ready = |c: &mut Coordinator, at| c.frontier.next_ready(at).unwrap().is_some();
    assert!(!ready(&mut c, t0 + Duration::from_millis(999)));
    assert!(
        ready(&mut c, t0 + Duration::from_millis(1000)),
        "due a second after the answer"
    );
}

/// Over a cluster, a dead worker's probe comes back to the shared queue.
#[tokio::test(start_paused = true)]
async fn another_workers_probe_is_recorded_as_not_sent_not_fetched_as_a_page() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut cfg = super::super::closed_port_config();
    // The seed on a host of its own: `HOST` holds only the probe.
    cfg.seeds = vec!["http://127.0.0.1:10/".into()];
    let (_handle, mut c) = super::super::for_test(cfg, dir.path());
    let now = Instant::now();
    let probe = "crawldeck-probe-00ff00ff00ff00ff.html";
    queued(&mut c, &[probe], now);
    // Sent as a page, it would have no record until its answer.
    // Adopted above, with robots.txt settled: dispatch leases the probe.
    c.frontier.take_new_hosts().expect("new hosts");
    c.dispatch(now);
    c.sync();
    let url = format!("http://{HOST}/{probe}");
    let record = c.store.page(&url).unwrap().expect("recorded");
    match record.outcome {
        PageOutcome::NotCrawled { reason } => {
            assert!(
                reason.starts_with(crate::engine::store::SOFT_404_PROBE),
                "{reason}"
            )
        }
        other => panic!("{other:?}"),
    }
}
