//! Behaviour every [`FrontierStore`] must have, as tests any implementation
//! can run unchanged: `frontier_conformance_tests!(opener)` expands to one
//! `#[test]` per property. The opener maps a directory to one frontier: the
//! same directory must reopen the same frontier (after the previous one was
//! dropped, like a killed process), a new directory must give an empty one.
//!
//! Time is explicit `Instant`s, never sleeps.

use std::cell::RefCell;
use std::collections::HashSet;
use std::path::Path;
use std::time::Duration;

use tokio::time::Instant;

use super::{Completion, FrontierEntry, FrontierStore, Hold, HostQueueView, Lease, LEVEL_WEIGHTS};
use crate::engine::store::{CrawlBatch, PageOutcome, PageRecord, StoreError, UrlKind};
use crate::engine::telemetry::{HostActivity, PRIORITY_LEVELS};

/// One `#[test]` per conformance property for the frontier `$open` opens.
macro_rules! frontier_conformance_tests {
    ($open:expr) => {
        $crate::engine::frontier::conformance::frontier_conformance_tests!(@each $open;
            a_host_hands_out_fifo_at_equal_priority,
            a_host_hands_out_by_priority_then_arrival,
            levels_are_chosen_by_weight_across_hosts,
            the_host_ready_longest_goes_first_within_a_level,
            not_before_keeps_a_host_out_until_it_passes,
            holds_keep_a_host_out_until_all_are_cleared,
            max_in_flight_limits_the_leases_of_a_host,
            new_hosts_start_held_and_are_announced_once,
            claim_unseen_admits_each_url_once,
            a_reopen_requeues_queued_and_leased_urls_but_not_completed_ones,
            order_and_sequence_survive_a_reopen,
            lease_endings_keep_the_counts_and_the_order,
            park_unpark_and_drop_parked_keep_the_counts,
            bulk_operations_leave_leased_urls_alone,
            a_host_scoped_removal_leaves_other_hosts_alone,
            stepwise_removal_and_release_cover_everything_in_bounded_steps,
            complete_all_ends_every_lease_and_queues_their_links,
            an_entrys_kind_survives_queue_lease_requeue_and_reopen,
        );
    };
    (@each $open:expr; $($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                $crate::engine::frontier::conformance::$name(&mut $open);
            }
        )*
    };
}
pub(crate) use frontier_conformance_tests;

/// A queue entry of `host` at `priority`.
pub(crate) fn entry(host: &str, path: &str, priority: u8) -> FrontierEntry {
    FrontierEntry {
        url: format!("http://{host}/{path}"),
        host: host.to_string(),
        depth: 1,
        priority,
        redirects: 0,
        kind: UrlKind::Page,
    }
}

/// A "fetched" record of `e`.
pub(crate) fn record(e: &FrontierEntry) -> PageRecord {
    PageRecord::without_fetch(
        &e.url,
        &e.host,
        e.depth,
        0,
        PageOutcome::Fetched { status: 200 },
    )
}

/// Leases and completes everything that is ready at `now`, in order.
pub(crate) fn drain(f: &mut impl FrontierStore, now: Instant) -> Vec<String> {
    let mut urls = Vec::new();
    while let Some(lease) = f.next_ready(now).unwrap() {
        f.complete(&lease, &record(&lease.entry), Vec::new())
            .unwrap();
        urls.push(lease.entry.url);
    }
    urls
}

fn lease(f: &mut impl FrontierStore, now: Instant) -> Lease {
    f.next_ready(now).unwrap().expect("a host is ready")
}

fn view(f: &mut impl FrontierStore, host: &str, now: Instant) -> HostQueueView {
    f.host_views(&[host], now, 5).unwrap().remove(0)
}

/// The view's head is a non-empty prefix of what the host hands out next.
fn assert_head(view: &HostQueueView, next: &[impl AsRef<str>]) {
    let next: Vec<&str> = next.iter().map(AsRef::as_ref).collect();
    let head: Vec<&str> = view.head.iter().map(String::as_str).collect();
    assert!(
        !head.is_empty() && next.starts_with(&head),
        "head {:?} is not a prefix of {next:?}",
        view.head
    );
}

fn queued(f: &mut impl FrontierStore) -> u64 {
    f.counts().unwrap().queued
}

pub(crate) fn a_host_hands_out_fifo_at_equal_priority<F: FrontierStore>(
    open: &mut impl FnMut(&Path) -> F,
) {
    let dir = tempfile::tempdir().unwrap();
    let mut f = open(dir.path());
    let now = Instant::now();
    let hosts = ["a.example", "b.example", "c.example"];
    // Interleaved batches, more per host than a small in-memory buffer holds.
    for batch in 0..30 {
        let entries = (0..10)
            .map(|i| {
                let n = batch * 10 + i;
                entry(hosts[n % 3], &format!("{n:03}"), 2)
            })
            .collect();
        f.push(entries).unwrap();
    }
    let order = drain(&mut f, now);
    assert_eq!(order.len(), 300);
    for host in hosts {
        let of_host: Vec<&String> = order.iter().filter(|u| u.contains(host)).collect();
        let mut sorted = of_host.clone();
        sorted.sort();
        assert_eq!(of_host, sorted, "{host} out of arrival order");
    }
}

pub(crate) fn a_host_hands_out_by_priority_then_arrival<F: FrontierStore>(
    open: &mut impl FnMut(&Path) -> F,
) {
    let dir = tempfile::tempdir().unwrap();
    let mut f = open(dir.path());
    let now = Instant::now();
    f.push(vec![
        entry("a.example", "p2-first", 2),
        entry("a.example", "p0-first", 0),
        entry("a.example", "p2-second", 2),
        entry("a.example", "p0-second", 0),
        entry("a.example", "p9-clamped", 9),
    ])
    .unwrap();
    assert_eq!(f.counts().unwrap().front_queues, [2, 0, 2, 0, 1]);
    let first = lease(&mut f, now);
    assert_eq!(first.entry.url, "http://a.example/p0-first");
    // Arrives while the host is busy, ahead of the queued level-2 URLs.
    f.complete(
        &first,
        &record(&first.entry),
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
    let counts = f.counts().unwrap();
    assert_eq!((counts.queued, counts.in_flight), (0, 0));
    assert_eq!(counts.front_queues, [0; PRIORITY_LEVELS]);
}

pub(crate) fn levels_are_chosen_by_weight_across_hosts<F: FrontierStore>(
    open: &mut impl FnMut(&Path) -> F,
) {
    let dir = tempfile::tempdir().unwrap();
    let mut f = open(dir.path());
    let now = Instant::now();
    for level in 0..PRIORITY_LEVELS as u8 {
        f.push(vec![entry(&format!("l{level}.example"), "x", level)])
            .unwrap();
    }
    const PICKS: u32 = 5_000;
    let mut picks = [0u32; PRIORITY_LEVELS];
    for _ in 0..PICKS {
        let lease = lease(&mut f, now);
        picks[lease.entry.priority as usize] += 1;
        f.release(lease).unwrap();
    }
    // Bounds are many standard deviations wide: any fair weighted choice passes.
    let total: u32 = LEVEL_WEIGHTS.iter().sum();
    for (level, (&got, weight)) in picks.iter().zip(LEVEL_WEIGHTS).enumerate() {
        let expected = PICKS * weight / total;
        let slack = expected / 4 + 40;
        assert!(
            got.abs_diff(expected) <= slack,
            "level {level}: {got} picks, expected about {expected}: {picks:?}"
        );
    }
    let counts = f.counts().unwrap();
    assert_eq!((counts.queued, counts.in_flight), (5, 0));
}

pub(crate) fn the_host_ready_longest_goes_first_within_a_level<F: FrontierStore>(
    open: &mut impl FnMut(&Path) -> F,
) {
    let dir = tempfile::tempdir().unwrap();
    let mut f = open(dir.path());
    let t0 = Instant::now();
    for (host, offset) in [("c.example", 3), ("a.example", 1), ("b.example", 2)] {
        f.push(vec![entry(host, "1", 1)]).unwrap();
        f.set_not_before(host, t0 + Duration::from_secs(offset))
            .unwrap();
    }
    let now = t0 + Duration::from_secs(10);
    let hosts: Vec<String> = std::iter::from_fn(|| f.next_ready(now).unwrap())
        .map(|l| l.entry.host)
        .collect();
    assert_eq!(hosts, ["a.example", "b.example", "c.example"]);
}

pub(crate) fn not_before_keeps_a_host_out_until_it_passes<F: FrontierStore>(
    open: &mut impl FnMut(&Path) -> F,
) {
    let dir = tempfile::tempdir().unwrap();
    let mut f = open(dir.path());
    let now = Instant::now();
    f.push(vec![
        entry("slow.example", "1", 0),
        entry("fast.example", "1", 4),
    ])
    .unwrap();
    let later = now + Duration::from_secs(5);
    f.set_not_before("slow.example", later).unwrap();
    let fast = lease(&mut f, now);
    assert_eq!(fast.entry.host, "fast.example");
    f.complete(&fast, &record(&fast.entry), Vec::new()).unwrap();
    assert!(f.next_ready(now).unwrap().is_none());
    assert_eq!(f.next_wakeup().unwrap(), Some(later));
    assert_eq!(
        view(&mut f, "slow.example", now).activity,
        HostActivity::Waiting
    );
    assert!(f
        .next_ready(later - Duration::from_millis(1))
        .unwrap()
        .is_none());
    assert_eq!(lease(&mut f, later).entry.host, "slow.example");
    assert_eq!(f.next_wakeup().unwrap(), None);
}

pub(crate) fn holds_keep_a_host_out_until_all_are_cleared<F: FrontierStore>(
    open: &mut impl FnMut(&Path) -> F,
) {
    let dir = tempfile::tempdir().unwrap();
    let mut f = open(dir.path());
    let now = Instant::now();
    let host = "h.example";
    f.push(vec![entry(host, "0", 0), entry(host, "1", 0)])
        .unwrap();
    let shown = [
        (Hold::Paused, HostActivity::PausedByOperator),
        (Hold::Breaker, HostActivity::BreakerOpen),
        (Hold::Robots, HostActivity::RobotsPending),
        (Hold::Finished, HostActivity::Finished),
    ];
    for (hold, activity) in shown {
        f.set_hold(host, hold, true).unwrap();
        assert!(f.next_ready(now).unwrap().is_none(), "{hold:?}");
        assert_eq!(f.next_wakeup().unwrap(), None, "{hold:?}");
        assert_eq!(view(&mut f, host, now).activity, activity);
        f.set_hold(host, hold, false).unwrap();
    }
    f.set_hold(host, Hold::Paused, true).unwrap();
    f.set_hold(host, Hold::Breaker, true).unwrap();
    f.set_hold(host, Hold::Paused, false).unwrap();
    assert!(f.next_ready(now).unwrap().is_none(), "one hold remains");
    f.set_hold(host, Hold::Breaker, false).unwrap();
    let v = view(&mut f, host, now);
    assert_eq!(v.activity, HostActivity::Ready);
    assert_head(&v, &["http://h.example/0", "http://h.example/1"]);
    assert_eq!(v.queued, 2);
    assert_eq!(lease(&mut f, now).entry.url, "http://h.example/0");
    let unknown = view(&mut f, "unknown.example", now);
    assert_eq!(unknown.activity, HostActivity::Idle);
    assert_eq!((unknown.queued, unknown.parked), (0, 0));
    assert!(unknown.head.is_empty());
}

pub(crate) fn max_in_flight_limits_the_leases_of_a_host<F: FrontierStore>(
    open: &mut impl FnMut(&Path) -> F,
) {
    let dir = tempfile::tempdir().unwrap();
    let mut f = open(dir.path());
    let now = Instant::now();
    let host = "h.example";
    f.push((0..4).map(|i| entry(host, &i.to_string(), 0)).collect())
        .unwrap();
    f.set_max_in_flight(host, 0).unwrap();
    assert!(f.next_ready(now).unwrap().is_none());
    assert_eq!(view(&mut f, host, now).activity, HostActivity::Busy);

    f.set_max_in_flight(host, 2).unwrap();
    let first = lease(&mut f, now);
    let second = lease(&mut f, now);
    assert!(f.next_ready(now).unwrap().is_none());
    let v = view(&mut f, host, now);
    assert_eq!(
        (v.activity, v.in_flight, v.queued),
        (HostActivity::Busy, 2, 2)
    );
    f.complete(&first, &record(&first.entry), Vec::new())
        .unwrap();
    let third = lease(&mut f, now);
    assert_ne!(third.entry.url, second.entry.url);
    let counts = f.counts().unwrap();
    assert_eq!((counts.queued, counts.in_flight), (1, 2));

    // The default applies to hosts without their own maximum.
    f.set_default_max_in_flight(3).unwrap();
    f.push(
        (0..4)
            .map(|i| entry("d.example", &i.to_string(), 0))
            .collect(),
    )
    .unwrap();
    let leased = std::iter::from_fn(|| f.next_ready(now).unwrap())
        .filter(|l| l.entry.host == "d.example")
        .count();
    assert_eq!(leased, 3);
}

pub(crate) fn new_hosts_start_held_and_are_announced_once<F: FrontierStore>(
    open: &mut impl FnMut(&Path) -> F,
) {
    let dir = tempfile::tempdir().unwrap();
    let mut f = open(dir.path());
    let now = Instant::now();
    f.set_initial_holds(&[Hold::Robots]);
    f.push(vec![
        entry("new.example", "1", 0),
        entry("new.example", "2", 0),
    ])
    .unwrap();
    assert_eq!(f.take_new_hosts().unwrap(), ["new.example"]);
    assert!(f.next_ready(now).unwrap().is_none());
    assert_eq!(
        view(&mut f, "new.example", now).activity,
        HostActivity::RobotsPending
    );
    f.set_hold("new.example", Hold::Robots, false).unwrap();
    assert!(f.next_ready(now).unwrap().is_some());
    assert!(f.take_new_hosts().unwrap().is_empty());
}

pub(crate) fn claim_unseen_admits_each_url_once<F: FrontierStore>(
    open: &mut impl FnMut(&Path) -> F,
) {
    let dir = tempfile::tempdir().unwrap();
    let now = Instant::now();
    let (a, b, c) = (
        "http://s.example/a",
        "http://s.example/b",
        "http://s.example/c",
    );
    {
        let mut f = open(dir.path());
        assert_eq!(f.claim_unseen(&[a, b, a]).unwrap(), [true, true, false]);
        assert_eq!(f.claim_unseen(&[b, c]).unwrap(), [false, true]);
        assert_eq!(f.claim_unseen(&[]).unwrap(), Vec::<bool>::new());
        f.push(vec![entry("s.example", "a", 0)]).unwrap();
        f.park_new(1, vec![entry("s.example", "b", 0)]).unwrap();
        // Pushed without a claim (seeds, recrawl): seen all the same.
        f.push(vec![entry("s.example", "pushed", 0)]).unwrap();
        assert_eq!(
            f.claim_unseen(&["http://s.example/pushed"]).unwrap(),
            [false]
        );
        let l = lease(&mut f, now);
        assert!(f.claim_unseen(&["http://s.example/out"]).unwrap()[0]);
        f.complete(&l, &record(&l.entry), vec![entry("s.example", "out", 0)])
            .unwrap();
    }
    let mut f = open(dir.path());
    let urls = [
        a,
        b,
        "http://s.example/pushed",
        "http://s.example/out",
        "http://s.example/never",
    ];
    assert_eq!(
        f.claim_unseen(&urls).unwrap(),
        [false, false, false, false, true]
    );
}

pub(crate) fn a_reopen_requeues_queued_and_leased_urls_but_not_completed_ones<F: FrontierStore>(
    open: &mut impl FnMut(&Path) -> F,
) {
    let dir = tempfile::tempdir().unwrap();
    let now = Instant::now();
    let all: Vec<FrontierEntry> = (0..30)
        .map(|i| {
            entry(
                &format!("h{}.example", i % 3),
                &i.to_string(),
                (i % 5) as u8,
            )
        })
        .collect();
    let mut completed = Vec::new();
    let mut leased_only = Vec::new();
    {
        let mut f = open(dir.path());
        f.set_default_max_in_flight(10).unwrap();
        f.push(all.clone()).unwrap();
        for i in 0..10 {
            let l = lease(&mut f, now);
            if i % 2 == 0 {
                let out = vec![entry("new.example", &format!("from{i}"), 1)];
                f.complete(&l, &record(&l.entry), out).unwrap();
                completed.push(l.entry.url);
            } else {
                leased_only.push(l.entry.url);
            }
        }
        // Dropped with five leases never ended, like a killed process.
    }
    let mut f = open(dir.path());
    let counts = f.counts().unwrap();
    assert_eq!((counts.queued, counts.in_flight), (30 - 5 + 5, 0));
    let requeued: HashSet<String> = drain(&mut f, now).into_iter().collect();
    assert_eq!(requeued.len(), 30);
    for url in &leased_only {
        assert!(requeued.contains(url), "lost {url}");
    }
    for url in &completed {
        assert!(!requeued.contains(url), "{url} handed out again");
    }
}

pub(crate) fn an_entrys_kind_survives_queue_lease_requeue_and_reopen<F: FrontierStore>(
    open: &mut impl FnMut(&Path) -> F,
) {
    let dir = tempfile::tempdir().unwrap();
    let now = Instant::now();
    let kinds = [UrlKind::Page, UrlKind::Resource, UrlKind::External];
    let of = |kind: UrlKind| FrontierEntry {
        kind,
        ..entry("k.example", kind.label(), 1)
    };
    {
        let mut f = open(dir.path());
        f.push(kinds.iter().map(|&k| of(k)).collect()).unwrap();
        // Out and back: a requeued check is still a check.
        let first = lease(&mut f, now);
        f.requeue(first).unwrap();
    }
    let mut f = open(dir.path());
    let mut got = Vec::new();
    while let Some(l) = f.next_ready(now).unwrap() {
        f.complete(&l, &record(&l.entry), Vec::new()).unwrap();
        got.push((l.entry.url.clone(), l.entry.kind));
    }
    got.sort();
    let mut want: Vec<_> = kinds.iter().map(|&k| (of(k).url, k)).collect();
    want.sort();
    assert_eq!(got, want);
}

pub(crate) fn order_and_sequence_survive_a_reopen<F: FrontierStore>(
    open: &mut impl FnMut(&Path) -> F,
) {
    let dir = tempfile::tempdir().unwrap();
    let now = Instant::now();
    {
        let mut f = open(dir.path());
        f.push(vec![
            entry("o.example", "first", 3),
            entry("o.example", "second", 3),
        ])
        .unwrap();
    }
    let mut f = open(dir.path());
    assert_eq!(view(&mut f, "o.example", now).queued, 2);
    f.push(vec![entry("o.example", "third", 3)]).unwrap();
    assert_eq!(
        drain(&mut f, now),
        [
            "http://o.example/first",
            "http://o.example/second",
            "http://o.example/third"
        ]
    );
}

pub(crate) fn lease_endings_keep_the_counts_and_the_order<F: FrontierStore>(
    open: &mut impl FnMut(&Path) -> F,
) {
    let dir = tempfile::tempdir().unwrap();
    let mut f = open(dir.path());
    let now = Instant::now();
    let host = "l.example";
    f.push((0..4).map(|i| entry(host, &i.to_string(), 1)).collect())
        .unwrap();
    f.set_max_in_flight(host, 2).unwrap();
    let url = |i: u32| format!("http://{host}/{i}");

    // Release: back where it was, at the head.
    let l0 = lease(&mut f, now);
    let l1 = lease(&mut f, now);
    assert_eq!(
        (l0.entry.url.clone(), l1.entry.url.clone()),
        (url(0), url(1))
    );
    let counts = f.counts().unwrap();
    assert_eq!((counts.queued, counts.in_flight), (2, 2));
    f.release(l0).unwrap();
    let counts = f.counts().unwrap();
    assert_eq!((counts.queued, counts.in_flight), (3, 1));
    assert_head(&view(&mut f, host, now), &[url(0), url(2), url(3)]);

    // Complete: gone from queued and in flight.
    f.complete(&l1, &record(&l1.entry), Vec::new()).unwrap();
    let counts = f.counts().unwrap();
    assert_eq!((counts.queued, counts.in_flight), (3, 0));

    // Requeue: to the back of the host's queue.
    let l0 = lease(&mut f, now);
    assert_eq!(l0.entry.url, url(0));
    f.requeue(l0.clone()).unwrap();
    let counts = f.counts().unwrap();
    assert_eq!((counts.queued, counts.in_flight), (3, 0));
    assert_head(&view(&mut f, host, now), &[url(2), url(3), url(0)]);

    // A lease ends once.
    for end in 0..3 {
        let err = match end {
            0 => f.complete(&l0, &record(&l0.entry), Vec::new()).err(),
            1 => f.release(l0.clone()).err(),
            _ => f.requeue(l0.clone()).err(),
        };
        assert!(
            matches!(err, Some(StoreError::UnknownLease { .. })),
            "{err:?}"
        );
    }
    assert_eq!(drain(&mut f, now), [url(2), url(3), url(0)]);
    assert_eq!(f.counts().unwrap(), Default::default());
}

pub(crate) fn park_unpark_and_drop_parked_keep_the_counts<F: FrontierStore>(
    open: &mut impl FnMut(&Path) -> F,
) {
    let dir = tempfile::tempdir().unwrap();
    let mut f = open(dir.path());
    let now = Instant::now();
    let host = "t.example";
    f.push((0..6).map(|i| entry(host, &format!("q{i}"), 2)).collect())
        .unwrap();
    let odd = |e: &FrontierEntry| e.url.ends_with(['1', '3', '5']);
    assert_eq!(f.park(7, host, &odd).unwrap(), 3);
    assert_eq!(f.park_new(7, vec![entry(host, "new", 0)]).unwrap(), 1);
    assert_eq!(f.park(8, host, &|_| true).unwrap(), 3);
    let counts = f.counts().unwrap();
    assert_eq!((counts.queued, counts.parked), (0, 7));
    assert_eq!(view(&mut f, host, now).parked, 7);
    assert!(f.next_ready(now).unwrap().is_none());

    let recorded = RefCell::new(Vec::new());
    let recording = |e: &FrontierEntry| {
        recorded.borrow_mut().push(e.url.clone());
        record(e)
    };
    assert_eq!(f.drop_parked(8, &recording).unwrap(), 3);
    let mut dropped = recorded.take();
    dropped.sort();
    assert_eq!(
        dropped,
        [
            "http://t.example/q0",
            "http://t.example/q2",
            "http://t.example/q4"
        ]
    );
    assert_eq!(f.counts().unwrap().parked, 4);
    assert_eq!(view(&mut f, host, now).parked, 4);

    assert_eq!(f.unpark(7).unwrap(), 4);
    let counts = f.counts().unwrap();
    assert_eq!((counts.queued, counts.parked), (4, 0));
    assert_eq!(view(&mut f, host, now).parked, 0);
    // Priority first, then the order in which they were first queued.
    assert_eq!(
        drain(&mut f, now),
        [
            "http://t.example/new",
            "http://t.example/q1",
            "http://t.example/q3",
            "http://t.example/q5"
        ]
    );
    assert_eq!(f.unpark(7).unwrap(), 0);
    assert_eq!(f.drop_parked(8, &record).unwrap(), 0);
}

pub(crate) fn bulk_operations_leave_leased_urls_alone<F: FrontierStore>(
    open: &mut impl FnMut(&Path) -> F,
) {
    let dir = tempfile::tempdir().unwrap();
    let mut f = open(dir.path());
    let now = Instant::now();
    f.push(vec![entry("x.example", "1", 0), entry("x.example", "2", 0)])
        .unwrap();
    let l = lease(&mut f, now);
    assert_eq!(f.drop_host("x.example", &record).unwrap(), 1);
    assert_eq!(f.park(3, "x.example", &|_| true).unwrap(), 0);
    assert_eq!(f.remove_matching(None, &|_| true, &record).unwrap(), 0);
    let counts = f.counts().unwrap();
    assert_eq!((counts.queued, counts.in_flight), (0, 1));
    f.complete(&l, &record(&l.entry), Vec::new()).unwrap();
    assert_eq!(f.counts().unwrap(), Default::default());
}

pub(crate) fn a_host_scoped_removal_leaves_other_hosts_alone<F: FrontierStore>(
    open: &mut impl FnMut(&Path) -> F,
) {
    let dir = tempfile::tempdir().unwrap();
    let mut f = open(dir.path());
    let now = Instant::now();
    let urls = ["a.example", "b.example"]
        .iter()
        .flat_map(|h| (0..3).map(move |i| entry(h, &format!("cal/{i}"), 1)))
        .chain([entry("a.example", "keep", 1)])
        .collect();
    f.push(urls).unwrap();
    let recorded = RefCell::new(Vec::new());
    let recording = |e: &FrontierEntry| {
        recorded.borrow_mut().push(e.url.clone());
        record(e)
    };
    let is_cal = |e: &FrontierEntry| e.url.contains("/cal/");
    assert_eq!(
        f.remove_matching(Some("a.example"), &is_cal, &recording)
            .unwrap(),
        3
    );
    let mut removed = recorded.take();
    removed.sort();
    assert_eq!(
        removed,
        [
            "http://a.example/cal/0",
            "http://a.example/cal/1",
            "http://a.example/cal/2"
        ]
    );
    let views = f.host_views(&["a.example", "b.example"], now, 5).unwrap();
    assert_eq!((views[0].queued, views[1].queued), (1, 3));
    assert_head(&views[0], &["http://a.example/keep"]);
    assert_eq!(queued(&mut f), 4);
    assert_eq!(f.remove_matching(None, &is_cal, &record).unwrap(), 3);
    assert_eq!(queued(&mut f), 1);
}

pub(crate) fn stepwise_removal_and_release_cover_everything_in_bounded_steps<F: FrontierStore>(
    open: &mut impl FnMut(&Path) -> F,
) {
    let dir = tempfile::tempdir().unwrap();
    let mut f = open(dir.path());
    let urls = ["a.example", "b.example", "c.example"]
        .iter()
        .flat_map(|h| (0..200).map(move |i| entry(h, &format!("{}/{i}", ["x", "y"][i % 2]), 1)))
        .collect();
    f.push(urls).unwrap();
    let is_x = |e: &FrontierEntry| e.url.contains("/x/");
    let (mut removed, mut steps) = (0, 0);
    let mut cursor = None;
    loop {
        let (n, next) = f
            .remove_matching_step(&is_x, &record, cursor.as_ref(), 100)
            .unwrap();
        assert!(n <= 100, "a step of 100 rows removed {n}");
        (removed, steps) = (removed + n, steps + 1);
        match next {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    assert_eq!(removed, 300);
    assert!(steps >= 6, "{steps} steps");
    assert_eq!(queued(&mut f), 300);

    assert_eq!(f.park(7, "a.example", &|_| true).unwrap(), 100);
    assert_eq!(f.park(8, "b.example", &|_| true).unwrap(), 100);
    let release = |f: &mut F, alert: u64, drop: bool| {
        let (mut total, mut steps) = (0, 0);
        loop {
            let recording: &dyn Fn(&FrontierEntry) -> PageRecord = &record;
            let (n, more) = f
                .release_parked_step(alert, drop.then_some(recording), 30)
                .unwrap();
            assert!(n <= 30, "a step of 30 released {n}");
            (total, steps) = (total + n, steps + 1);
            if !more {
                return (total, steps);
            }
        }
    };
    let (back, steps) = release(&mut f, 7, false);
    assert_eq!(back, 100);
    assert!(steps >= 4, "{steps} steps");
    let counts = f.counts().unwrap();
    assert_eq!((counts.queued, counts.parked), (200, 100));
    assert_eq!(release(&mut f, 8, true).0, 100);
    let counts = f.counts().unwrap();
    assert_eq!((counts.queued, counts.parked), (200, 0));
    assert_eq!(release(&mut f, 8, true).0, 0);
}

pub(crate) fn complete_all_ends_every_lease_and_queues_their_links<F: FrontierStore>(
    open: &mut impl FnMut(&Path) -> F,
) {
    let dir = tempfile::tempdir().unwrap();
    let now = Instant::now();
    let done_urls: Vec<String>;
    {
        let mut f = open(dir.path());
        f.set_default_max_in_flight(2).unwrap();
        f.push(
            (0..3)
                .map(|i| entry("a.example", &i.to_string(), 0))
                .collect(),
        )
        .unwrap();
        f.push(vec![entry("b.example", "0", 0)]).unwrap();
        let leases = [lease(&mut f, now), lease(&mut f, now), lease(&mut f, now)];
        done_urls = leases.iter().map(|l| l.entry.url.clone()).collect();
        let group: Vec<Completion> = leases
            .into_iter()
            .enumerate()
            .map(|(i, l)| Completion {
                record: record(&l.entry),
                outlinks: vec![entry("c.example", &format!("from{i}"), 0)],
                lease: l,
            })
            .collect();
        assert_eq!(f.complete_all(group, CrawlBatch::default()).unwrap(), 3);
        let counts = f.counts().unwrap();
        assert_eq!((counts.queued, counts.in_flight), (1 + 3, 0));
        // Dropped without a checkpoint, like a killed process.
    }
    let mut f = open(dir.path());
    let left: HashSet<String> = drain(&mut f, now).into_iter().collect();
    assert_eq!(left.len(), 4, "{left:?}");
    for url in &done_urls {
        assert!(!left.contains(url), "{url} handed out again");
    }
    for i in 0..3 {
        assert!(left.contains(&format!("http://c.example/from{i}")));
    }
}
