//! Scheduling: order, weighted levels, politeness, holds, concurrency.

use std::time::Duration;

use tokio::time::Instant;

use super::host::BUFFER_CAP;
use super::*;
use crate::engine::store::{PageOutcome, PageRecord};

pub(super) fn entry(host: &str, path: &str, priority: u8) -> FrontierEntry {
    FrontierEntry {
        url: format!("http://{host}/{path}"),
        host: host.to_string(),
        depth: 1,
        priority,
        redirects: 0,
    }
}

pub(super) fn record(e: &FrontierEntry) -> PageRecord {
    PageRecord::without_fetch(
        &e.url,
        &e.host,
        e.depth,
        0,
        PageOutcome::Fetched { status: 200 },
    )
}

pub(super) fn open_temp() -> (tempfile::TempDir, Store, Frontier) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), 8 << 20).unwrap();
    let frontier = Frontier::open(&store).unwrap();
    (dir, store, frontier)
}

/// Entries held in memory across all host buffers.
pub(super) fn buffered_entries(f: &Frontier) -> usize {
    f.hosts.iter().flatten().map(|h| h.buffered()).sum()
}

/// Hosts with queued URLs.
pub(super) fn queued_hosts(f: &Frontier) -> Vec<HostKey> {
    let hosts = f.hosts.iter().flatten();
    hosts
        .filter(|h| h.queued > 0)
        .map(|h| h.name.clone())
        .collect()
}

pub(super) fn host_in_flight(f: &Frontier, host: &str) -> u64 {
    f.host(host).map_or(0, |h| h.in_flight() as u64)
}

/// Leases and completes everything that is ready at `now`, in order.
pub(super) fn drain(f: &mut Frontier, now: Instant) -> Vec<String> {
    let mut urls = Vec::new();
    while let Some(lease) = f.next_ready(now) {
        f.complete(&lease, &record(&lease.entry), Vec::new())
            .unwrap();
        urls.push(lease.entry.url);
    }
    urls
}

#[test]
fn a_host_hands_out_by_priority_then_arrival() {
    let (_dir, _store, mut f) = open_temp();
    let now = Instant::now();
    f.push(vec![
        entry("a.example", "p2-first", 2),
        entry("a.example", "p0-first", 0),
        entry("a.example", "p2-second", 2),
        entry("a.example", "p0-second", 0),
        entry("a.example", "p9-clamped", 9),
    ])
    .unwrap();
    assert_eq!(f.front_queue_depths(), [2, 0, 2, 0, 1]);
    let lease = f.next_ready(now).unwrap();
    assert_eq!(lease.entry.url, "http://a.example/p0-first");
    // Arrives while the host is busy, ahead of the queued level-2 URLs.
    f.complete(
        &lease,
        &record(&lease.entry),
        vec![entry("a.example", "p1-late", 1)],
    )
    .unwrap();
    let order: Vec<String> = drain(&mut f, now)
        .into_iter()
        .map(|u| u.trim_start_matches("http://a.example/").to_string())
        .collect();
    assert_eq!(
        order,
        [
            "p0-second",
            "p1-late",
            "p2-first",
            "p2-second",
            "p9-clamped"
        ]
    );
    assert_eq!(f.len(), 0);
    assert_eq!(f.front_queue_depths(), [0; PRIORITY_LEVELS]);
}

#[test]
fn weighted_levels_favour_level_zero_and_serve_every_level() {
    let (_dir, _store, mut f) = open_temp();
    let now = Instant::now();
    for level in 0..PRIORITY_LEVELS as u8 {
        f.push(vec![entry(&format!("l{level}.example"), "x", level)])
            .unwrap();
    }
    let mut picks = [0u32; PRIORITY_LEVELS];
    for _ in 0..10_000 {
        let lease = f.next_ready(now).unwrap();
        picks[lease.entry.priority as usize] += 1;
        f.release(lease);
    }
    assert!(picks.windows(2).all(|w| w[0] > w[1]), "{picks:?}");
    assert!(picks[4] > 0, "level 4 starved: {picks:?}");
    assert!((3_500..4_500).contains(&picks[0]), "{picks:?}");
    assert_eq!(f.len(), 5);
    assert_eq!(f.in_flight(), 0);
}

#[test]
fn a_host_waiting_for_politeness_is_skipped_and_reported_as_wakeup() {
    let (_dir, _store, mut f) = open_temp();
    let now = Instant::now();
    f.push(vec![
        entry("slow.example", "1", 0),
        entry("fast.example", "1", 4),
    ])
    .unwrap();
    let later = now + Duration::from_secs(5);
    f.set_not_before("slow.example", later);
    let lease = f.next_ready(now).unwrap();
    assert_eq!(lease.entry.host, "fast.example");
    f.complete(&lease, &record(&lease.entry), Vec::new())
        .unwrap();
    assert!(f.next_ready(now).is_none());
    assert_eq!(f.next_wakeup(), Some(later));
    assert_eq!(f.host_activity("slow.example", now), HostActivity::Waiting);
    assert!(f.next_ready(later - Duration::from_millis(1)).is_none());
    let lease = f.next_ready(later).unwrap();
    assert_eq!(lease.entry.host, "slow.example");
    assert_eq!(f.next_wakeup(), None);
}

#[test]
fn the_host_that_waited_longest_goes_first_within_a_level() {
    let (_dir, _store, mut f) = open_temp();
    let t0 = Instant::now();
    for (host, offset) in [("c.example", 3), ("a.example", 1), ("b.example", 2)] {
        f.push(vec![entry(host, "1", 1)]).unwrap();
        f.set_not_before(host, t0 + Duration::from_secs(offset));
    }
    let now = t0 + Duration::from_secs(10);
    let hosts: Vec<String> = std::iter::from_fn(|| f.next_ready(now))
        .map(|l| l.entry.host)
        .collect();
    assert_eq!(hosts, ["a.example", "b.example", "c.example"]);
}

#[test]
fn holds_and_max_in_flight_are_respected() {
    let (_dir, _store, mut f) = open_temp();
    let now = Instant::now();
    f.push(
        (0..4)
            .map(|i| entry("h.example", &i.to_string(), 0))
            .collect(),
    )
    .unwrap();
    for hold in [Hold::Paused, Hold::Breaker, Hold::Robots, Hold::Finished] {
        f.set_hold("h.example", hold, true);
        assert!(f.next_ready(now).is_none(), "{hold:?}");
        f.set_hold("h.example", hold, false);
    }
    f.set_hold("h.example", Hold::Paused, true);
    assert_eq!(
        f.host_activity("h.example", now),
        HostActivity::PausedByOperator
    );
    f.set_hold("h.example", Hold::Paused, false);

    assert_eq!(f.host_activity("h.example", now), HostActivity::Ready);
    assert_eq!(f.host_activity("unknown.example", now), HostActivity::Idle);
    assert_eq!(
        f.host_head("h.example", 2),
        ["http://h.example/0", "http://h.example/1"]
    );
    f.set_max_in_flight("h.example", 0);
    assert!(f.next_ready(now).is_none());
    assert_eq!(f.host_activity("h.example", now), HostActivity::Busy);

    f.set_max_in_flight("h.example", 2);
    let first = f.next_ready(now).unwrap();
    let second = f.next_ready(now).unwrap();
    assert!(f.next_ready(now).is_none());
    assert_eq!(f.host_activity("h.example", now), HostActivity::Busy);
    assert_eq!(host_in_flight(&f, "h.example"), 2);
    f.complete(&first, &record(&first.entry), Vec::new())
        .unwrap();
    let third = f.next_ready(now).unwrap();
    assert_ne!(third.entry.url, second.entry.url);
    assert_eq!(f.in_flight(), 2);
    assert_eq!(f.len(), 1);
}

#[test]
fn initial_holds_apply_to_new_hosts_and_are_announced() {
    let (_dir, _store, mut f) = open_temp();
    let now = Instant::now();
    f.set_initial_holds(&[Hold::Robots]);
    f.push(vec![entry("new.example", "1", 0)]).unwrap();
    assert_eq!(f.take_new_hosts(), ["new.example"]);
    assert!(f.next_ready(now).is_none());
    assert_eq!(
        f.host_activity("new.example", now),
        HostActivity::RobotsPending
    );
    f.set_hold("new.example", Hold::Robots, false);
    assert!(f.next_ready(now).is_some());
    assert!(f.take_new_hosts().is_empty());
}

#[test]
fn late_high_priority_urls_overflow_the_buffer_without_loss_or_repeats() {
    let (_dir, _store, mut f) = open_temp();
    let now = Instant::now();
    let host = "big.example";
    f.push(
        (0..100)
            .map(|i| entry(host, &format!("low{i}"), 4))
            .collect(),
    )
    .unwrap();
    let first = f.next_ready(now).unwrap();
    // More high-priority URLs than the buffer holds arrive while `first` is in flight.
    f.push(
        (0..80)
            .map(|i| entry(host, &format!("high{i}"), 0))
            .collect(),
    )
    .unwrap();
    assert!(buffered_entries(&f) <= BUFFER_CAP);
    f.complete(&first, &record(&first.entry), Vec::new())
        .unwrap();
    let rest = drain(&mut f, now);
    assert_eq!(rest.len(), 179);
    let expected_high: Vec<String> = (0..80).map(|i| format!("http://{host}/high{i}")).collect();
    assert_eq!(rest[..80], expected_high[..]);
    let expected_low: Vec<String> = (1..100).map(|i| format!("http://{host}/low{i}")).collect();
    assert_eq!(rest[80..], expected_low[..]);
    assert_eq!(f.len(), 0);
}

#[test]
fn idle_hosts_are_forgotten_unless_the_scheduler_set_something() {
    let (_dir, _store, mut f) = open_temp();
    let now = Instant::now();
    let urls = (0..100)
        .map(|h| entry(&format!("h{h}.example"), "only", 0))
        .collect();
    f.push(urls).unwrap();
    f.set_hold("paused.example", Hold::Paused, true);
    f.push(vec![entry("polite.example", "1", 0)]).unwrap();
    let lease = loop {
        let lease = f.next_ready(now).unwrap();
        if lease.entry.host == "polite.example" {
            break lease;
        }
        f.complete(&lease, &record(&lease.entry), Vec::new())
            .unwrap();
    };
    f.set_not_before("polite.example", now + Duration::from_secs(1));
    f.complete(&lease, &record(&lease.entry), Vec::new())
        .unwrap();
    drain(&mut f, now);
    // The paused host and the one whose delay has not passed are kept.
    assert_eq!(f.ids.len(), 2);
    assert_eq!(f.take_new_hosts().len(), 102);
}

#[test]
fn the_frontier_can_move_to_a_blocking_thread_behind_the_trait() {
    fn assert_send<T: Send + 'static>() {}
    assert_send::<Frontier>();
    assert_send::<Store>();
    assert_send::<Box<dyn FrontierStore>>();
    let (_dir, _store, f) = open_temp();
    let mut boxed: Box<dyn FrontierStore> = Box::new(f);
    assert_eq!(boxed.counts().unwrap(), FrontierCounts::default());
}
