//! The local frontier's own behaviour: bounded head buffers, forgetting idle hosts,
//! thread safety; and the conformance suite run against the local frontier.

use std::path::Path;
use std::time::Duration;

use tokio::time::Instant;

pub(super) use super::conformance::{drain, entry, record};
use super::host::BUFFER_CAP;
use super::*;

/// The local frontier of `dir` (the conformance suite's opener).
pub(super) fn open_dir(dir: &Path) -> Frontier {
    let store = Store::open(dir, 8 << 20).unwrap();
    Frontier::open(&store).unwrap()
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

mod conformance {
    super::super::conformance::frontier_conformance_tests!(super::open_dir);
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

#[test]
fn a_host_gets_a_second_request_only_when_no_idle_host_is_ready() {
    let (_dir, _store, mut f) = open_temp();
    let now = Instant::now();
    f.set_default_max_in_flight(4);
    f.push(
        (0..4)
            .map(|i| entry("a.example", &i.to_string(), 0))
            .collect(),
    )
    .unwrap();
    f.push(vec![entry("b.example", "0", 0), entry("c.example", "0", 0)])
        .unwrap();
    // a.example has waited longest, so it goes first; then the idle hosts,
    // though a.example has waited longer than they have.
    f.set_not_before("a.example", now);
    f.set_not_before("b.example", now + Duration::from_millis(5));
    f.set_not_before("c.example", now + Duration::from_millis(5));
    let later = now + Duration::from_millis(10);
    let hosts: Vec<String> = (0..4)
        .map(|_| f.next_ready(later).unwrap().entry.host)
        .collect();
    assert_eq!(hosts, ["a.example", "b.example", "c.example", "a.example"]);
}

#[test]
fn an_idle_host_at_a_low_level_goes_before_a_busy_host_at_a_high_one() {
    let (_dir, _store, mut f) = open_temp();
    let now = Instant::now();
    f.set_default_max_in_flight(4);
    f.push(
        (0..20)
            .map(|i| entry("busy.example", &i.to_string(), 0))
            .collect(),
    )
    .unwrap();
    assert_eq!(f.next_ready(now).unwrap().entry.host, "busy.example");
    // Level 0 weighs 40 and level 4 weighs 3: by weight alone, the busy
    // host's URLs would go first nearly every time.
    let idle: Vec<FrontierEntry> = (0..10)
        .map(|i| entry(&format!("idle{i}.example"), "0", 4))
        .collect();
    f.push(idle).unwrap();
    for _ in 0..10 {
        assert_ne!(f.next_ready(now).unwrap().entry.host, "busy.example");
    }
    assert_eq!(f.next_ready(now).unwrap().entry.host, "busy.example");
}

#[test]
fn an_answered_lease_frees_its_host_for_the_next_request_until_it_completes() {
    let (_dir, _store, mut f) = open_temp();
    let now = Instant::now();
    let host = "one.example";
    f.push((0..3).map(|i| entry(host, &i.to_string(), 0)).collect())
        .unwrap();
    let first = f.next_ready(now).unwrap();
    assert!(f.next_ready(now).is_none(), "one request a host");

    f.answered(&first);
    f.answered(&first);
    assert_eq!(host_in_flight(&f, host), 0, "answered once, however told");
    let second = f.next_ready(now).unwrap();
    assert_eq!(second.entry.url, format!("http://{host}/1"));
    assert!(f.next_ready(now).is_none(), "the second one is out");
    assert_eq!(f.in_flight(), 2, "both leases are out until completed");

    // Nothing left to hand out, nothing in flight: the host is kept while
    // its answered lease waits for completion.
    f.answered(&second);
    let third = f.next_ready(now).unwrap();
    f.answered(&third);
    f.complete(&third, &record(&third.entry), Vec::new())
        .unwrap();
    f.complete(&second, &record(&second.entry), Vec::new())
        .unwrap();
    assert!(f.ids.contains_key(host));
    f.complete(&first, &record(&first.entry), Vec::new())
        .unwrap();
    assert_eq!((f.in_flight(), f.len()), (0, 0));
    assert!(!f.ids.contains_key(host), "forgotten once its leases ended");
}

#[test]
fn may_have_seen_is_certain_of_a_no_before_and_after_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let (claimed, queued, never) = (
        "http://s.example/claimed",
        "http://s.example/queued",
        "http://s.example/never",
    );
    {
        let mut f = open_dir(dir.path());
        assert!(!f.may_have_seen(claimed) && !f.may_have_seen(queued));
        f.claim_unseen(&[claimed, queued]).unwrap();
        f.push(vec![entry("s.example", "queued", 0)]).unwrap();
        assert!(f.may_have_seen(claimed) && f.may_have_seen(queued));
        assert!(!f.may_have_seen(never));
    }
    // Only the queued URL's mark was written: a claim alone is forgotten.
    let f = open_dir(dir.path());
    assert!(f.may_have_seen(queued));
    assert!(!f.may_have_seen(claimed) && !f.may_have_seen(never));
}
