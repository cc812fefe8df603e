use std::time::Duration;

use tokio::time::Instant;

use super::super::queue_for_test;
use super::*;
use crate::engine::config::CrawlConfig;
use crate::engine::telemetry::HostActivity;

const HOST: &str = "127.0.0.1:9";

/// A coordinator whose one host has a URL queued, nothing held, and answered
/// at `now`: its next request waits for its delay.
fn answered_host(
    cfg: CrawlConfig,
    dir: &std::path::Path,
) -> (crate::engine::EngineHandle, Coordinator) {
    let (handle, mut c) = super::super::for_test(cfg, dir);
    let now = Instant::now();
    queue_for_test(&mut c, &format!("http://{HOST}/a"));
    c.hosts.adopt(HOST, Some(&format!("http://{HOST}/")), now);
    for hold in [Hold::Robots, Hold::Paused, Hold::Breaker] {
        c.frontier.set_hold(HOST, hold, false).expect("hold lifted");
    }
    c.hosts
        .record_answer(HOST, 200, Duration::from_millis(5), None, now);
    c.schedule_next(HOST, now);
    (handle, c)
}

/// The frontier hands out `HOST`'s URL at `at` (asked in increasing time).
fn ready_at(c: &mut Coordinator, at: Instant) -> bool {
    let lease = c.frontier.next_ready(at).expect("frontier answers");
    lease
        .map(|l| c.frontier.release(l).expect("released"))
        .is_some()
}

fn run(c: &mut Coordinator, command: Command) -> Result<String, String> {
    handle(c, CommandId(1), command).expect("answered at once")
}

#[tokio::test(start_paused = true)]
async fn a_longer_host_delay_pushes_the_wait_back_and_a_shorter_one_brings_it_forward() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_handle, mut c) = answered_host(super::super::closed_port_config(), dir.path());
    let t0 = Instant::now();
    let delay = |d| Command::SetHostDelay {
        host: HOST.into(),
        delay: Some(d),
    };
    run(&mut c, delay(Duration::from_secs(45))).expect("throttled");
    assert!(!ready_at(&mut c, t0 + Duration::from_secs(44)));
    tokio::time::advance(Duration::from_secs(1)).await;
    let answer = run(&mut c, delay(Duration::from_millis(50))).expect("throttled");
    assert_eq!(answer, format!("{HOST}: delay 50ms"));
    assert!(ready_at(&mut c, t0 + Duration::from_secs(1)));
}

#[tokio::test(start_paused = true)]
async fn a_shorter_default_delay_cuts_the_wait_already_scheduled() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut cfg = super::super::closed_port_config();
    cfg.politeness.min_delay = Duration::from_secs(60);
    let (_handle, mut c) = answered_host(cfg, dir.path());
    let t0 = Instant::now();
    tokio::time::advance(Duration::from_secs(1)).await;
    run(&mut c, Command::SetGlobalDelay(Duration::from_millis(300))).expect("set");
    let shown = c.publish();
    let host = shown.hosts.iter().find(|h| h.host == HOST).expect("shown");
    assert_eq!(host.delay, Duration::from_millis(300));
    assert!(ready_at(&mut c, t0 + Duration::from_secs(1)));
}

#[tokio::test(start_paused = true)]
async fn a_delay_past_an_hour_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_handle, mut c) = super::super::for_test(super::super::closed_port_config(), dir.path());
    let week = Duration::from_secs(7 * 24 * 3600);
    let refused = run(&mut c, Command::SetGlobalDelay(week)).unwrap_err();
    assert_eq!(refused, "a delay of 7days is longer than the longest, 1h");
    assert_eq!(c.hosts.default_delay(), Duration::from_secs(1));
}

#[tokio::test(start_paused = true)]
async fn a_command_for_an_unmet_host_waits_for_it_without_making_a_row() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_handle, mut c) = super::super::for_test(super::super::closed_port_config(), dir.path());
    let ghost = "nosuch.host";
    let answer = run(&mut c, Command::Pause(Target::Host(ghost.into()))).expect("kept");
    assert!(
        answer.contains("no host nosuch.host in this crawl yet"),
        "{answer}"
    );
    let limit = Command::SetHostConcurrency {
        host: ghost.into(),
        max: Some(3),
    };
    run(&mut c, limit).expect("kept");
    assert!(run(&mut c, Command::ForceOpenBreaker(ghost.into())).is_err());
    c.adopt_new_hosts(Instant::now());
    let shown = c.publish();
    assert!(
        shown.hosts.iter().all(|h| h.host != ghost),
        "no row before it appears"
    );
    assert_eq!(shown.hosts_total, shown.hosts.len() as u32);
    assert!(!shown.hosts.is_empty(), "the seed's host is shown");

    // It appears: it comes paused, with its limit.
    queue_for_test(&mut c, &format!("http://{ghost}/a"));
    c.adopt_new_hosts(Instant::now());
    let shown = c.publish();
    let host = shown.hosts.iter().find(|h| h.host == ghost).expect("shown");
    assert_eq!(host.activity, HostActivity::PausedByOperator);
    assert_eq!(host.max_in_flight, 3);
}
