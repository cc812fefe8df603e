//! Host affinity: the worker that last claimed a host keeps first call on
//! it, so its per-host knowledge stays whole, yet a crawl whose hosts all
//! went to one worker spreads, and a busy or dead owner's hosts move on.

use std::time::Duration;

use tokio::time::Instant;

use super::tests_alerts::Crawl;
use super::{key_prefix, RedisFrontier, DEFAULT_HOST_AFFINITY};
use crate::engine::frontier::conformance::{entry, record};
use crate::engine::frontier::{FrontierStore, Lease};

/// Clocks made a moment apart in one process map onto the crawl's with
/// some jitter.
const SKEW: Duration = Duration::from_millis(50);

fn done(f: &mut RedisFrontier, lease: &Lease, not_before: Instant) {
    f.set_not_before(&lease.entry.host, not_before).unwrap();
    f.complete(lease, &record(&lease.entry), Vec::new())
        .unwrap();
}

fn owners(crawl: &Crawl) -> Vec<(String, String)> {
    let key = format!("{}owner", key_prefix(crawl.name()));
    let mut owners: Vec<(String, String)> = redis::cmd("HGETALL")
        .arg(key)
        .query(&mut crawl.server.connection())
        .unwrap();
    owners.sort();
    owners
}

/// `w` pushes the hosts (new to the crawl, so leased to it: all its own),
/// takes the first URL of each, and pushes a second.
fn all_taken_by(w: &mut RedisFrontier, hosts: &[&str], now: Instant) -> Vec<Lease> {
    w.push(hosts.iter().map(|h| entry(h, "x", 0)).collect())
        .unwrap();
    let taken = hosts
        .iter()
        .map(|_| w.next_ready(now).unwrap().expect("the pusher takes each"))
        .collect();
    w.push(hosts.iter().map(|h| entry(h, "y", 0)).collect())
        .unwrap();
    taken
}

#[test]
fn a_due_host_waits_for_its_owner_before_another_worker_takes_it() {
    let mut crawl = Crawl::new("affine");
    let (mut w1, mut w2) = (crawl.join(), crawl.join());
    let now = Instant::now();
    // Each at its own level, so no take reads a batch.
    w1.push(vec![
        entry("one.example", "a", 0),
        entry("one.example", "b", 1),
    ])
    .unwrap();
    w2.push(vec![
        entry("two.example", "a", 0),
        entry("two.example", "b", 1),
    ])
    .unwrap();
    let mine1 = w1.next_ready(now).unwrap().expect("w1 takes its host");
    let mine2 = w2.next_ready(now).unwrap().expect("w2 takes its host");
    assert_eq!(
        (mine1.entry.host.as_str(), mine2.entry.host.as_str()),
        ("one.example", "two.example")
    );
    let due = now + Duration::from_secs(1);
    done(&mut w1, &mine1, due);
    done(&mut w2, &mine2, due);
    // Both given back by their workers' next claims.
    assert!(w1.next_ready(now).unwrap().is_none());
    assert!(w2.next_ready(now).unwrap().is_none());
    let after = due + SKEW;
    let next2 = w2.next_ready(after).unwrap().expect("w2's own host is due");
    assert_eq!(next2.entry.host, "two.example");
    assert!(
        w2.next_ready(after).unwrap().is_none(),
        "one.example is w1's first for a while"
    );
    let wake = w2.next_wakeup().unwrap().expect("w2 wakes for one.example");
    assert!(
        wake + SKEW >= due + DEFAULT_HOST_AFFINITY && wake <= due + DEFAULT_HOST_AFFINITY + SKEW,
        "w2 sleeps until w1's first call ends: {:?} after the host was due",
        wake.saturating_duration_since(due)
    );
    let next1 = w1
        .next_ready(after)
        .unwrap()
        .expect("w1 takes its own back");
    assert_eq!(next1.entry.host, "one.example");
    assert_eq!(
        owners(&crawl),
        [
            ("one.example".to_string(), w1.worker().to_string()),
            ("two.example".to_string(), w2.worker().to_string()),
        ]
    );
}

#[test]
fn hosts_that_all_went_to_one_worker_spread_to_the_others_at_once() {
    let mut crawl = Crawl::new("spread");
    let (mut w1, mut w2) = (crawl.join(), crawl.join());
    let now = Instant::now();
    let hosts = ["a.example", "b.example", "c.example", "d.example"];
    let fetched = all_taken_by(&mut w1, &hosts, now);
    for lease in &fetched {
        done(&mut w1, lease, now);
    }
    let first = w1.next_ready(now).unwrap().expect("w1 takes one again");
    assert!(owners(&crawl).iter().all(|(_, w)| w == w1.worker()));
    // An even share is two each: w2 takes two of w1's three due hosts at
    // once, and the third only once w1 let it wait past its first call.
    let mut taken = Vec::new();
    while let Some(lease) = w2.next_ready(now + SKEW).unwrap() {
        taken.push(lease.entry.host.clone());
    }
    assert_eq!(taken.len(), 2, "w2 took {taken:?}");
    assert!(!taken.contains(&first.entry.host));
    let third = w2
        .next_ready(now + DEFAULT_HOST_AFFINITY + SKEW * 2)
        .unwrap()
        .expect("w1 did not come back for its last one");
    assert!(!taken.contains(&third.entry.host) && third.entry.host != first.entry.host);
    let w2_owns = owners(&crawl)
        .into_iter()
        .filter(|(_, w)| w == w2.worker())
        .count();
    assert_eq!(w2_owns, 3);
}

#[test]
fn an_owner_with_more_hosts_hands_those_it_gives_back_to_a_worker_asking_for_hosts() {
    let mut crawl = Crawl::new("handed");
    let (mut w1, mut w2) = (crawl.join(), crawl.join());
    let now = Instant::now();
    let hosts = ["a.example", "b.example", "c.example", "d.example"];
    let fetched = all_taken_by(&mut w1, &hosts, now);
    // w2 asks while w1 holds every host: nothing for it yet.
    assert!(w2.next_ready(now).unwrap().is_none());
    let due = now + Duration::from_secs(1);
    for lease in &fetched {
        done(&mut w1, lease, due);
    }
    // Given back before the hosts are due: two of the four go to w2.
    assert!(w1.next_ready(now).unwrap().is_none());
    let owned_by = |w: &RedisFrontier| {
        let all = owners(&crawl);
        all.into_iter().filter(|(_, o)| o == w.worker()).count()
    };
    assert_eq!((owned_by(&w1), owned_by(&w2)), (2, 2));
    // When they are due, w1 asking first takes only its own two.
    let after = due + SKEW;
    let mut w1_took = Vec::new();
    while let Some(lease) = w1.next_ready(after).unwrap() {
        w1_took.push(lease.entry.host.clone());
    }
    let mut w2_took = Vec::new();
    while let Some(lease) = w2.next_ready(after).unwrap() {
        w2_took.push(lease.entry.host.clone());
    }
    assert_eq!(
        (w1_took.len(), w2_took.len()),
        (2, 2),
        "{w1_took:?} {w2_took:?}"
    );
}

#[test]
fn a_host_taken_back_from_a_slow_receiver_is_not_handed_over_again() {
    let mut crawl = Crawl::new("once");
    let (mut w1, mut w2) = (crawl.join(), crawl.join());
    let now = Instant::now();
    let hosts = ["a.example", "b.example"];
    let fetched = all_taken_by(&mut w1, &hosts, now);
    // At another level, so no take reads it with a batch.
    w1.push(hosts.iter().map(|h| entry(h, "z", 1)).collect())
        .unwrap();
    assert!(w2.next_ready(now).unwrap().is_none());
    for lease in &fetched {
        done(&mut w1, lease, now);
    }
    // Two to none: one host goes to w2 with the give-back.
    let first = w1.next_ready(now).unwrap().expect("w1 takes its own");
    let name = w2.worker().to_string();
    let w2_owns = |crawl: &Crawl| -> Vec<String> {
        let all = owners(crawl).into_iter();
        all.filter(|(_, w)| *w == name).map(|(h, _)| h).collect()
    };
    let handed = w2_owns(&crawl);
    assert_eq!(handed.len(), 1);
    assert_ne!(handed[0], first.entry.host);
    // w2 does not come for it: past the grace, w1 takes it back.
    let late = now + DEFAULT_HOST_AFFINITY + SKEW * 2;
    done(&mut w1, &first, late + Duration::from_secs(10));
    let back = w1.next_ready(late).unwrap().expect("w1 takes it back");
    assert_eq!(back.entry.host, handed[0]);
    done(&mut w1, &back, late);
    // w2 asks again, and w1 gives the host back owning two to none: it
    // stays w1's.
    assert!(w2.next_ready(late).unwrap().is_none());
    drop(w1.next_ready(late).unwrap());
    assert_eq!(w2_owns(&crawl), Vec::<String>::new(), "handed over twice");
}

#[test]
fn no_host_is_handed_to_a_worker_that_stopped_asking() {
    let mut crawl = Crawl::new("quiet");
    let (mut w1, mut w2) = (crawl.join(), crawl.join());
    let now = Instant::now();
    let hosts = ["a.example", "b.example", "c.example"];
    let fetched = all_taken_by(&mut w1, &hosts, now);
    assert!(w2.next_ready(now).unwrap().is_none());
    // w2 last asked longer ago than a working worker would.
    let later = now + Duration::from_secs(5);
    for lease in &fetched {
        done(&mut w1, lease, later + Duration::from_secs(1));
    }
    assert!(w1.next_ready(later).unwrap().is_none());
    assert!(owners(&crawl).iter().all(|(_, w)| w == w1.worker()));
}

#[test]
fn a_host_with_no_urls_left_and_a_dead_workers_hosts_are_nobodys() {
    let mut crawl = Crawl::new("unowned");
    let (mut w1, mut w2) = (crawl.join(), crawl.join());
    let now = Instant::now();
    w1.push(vec![entry("done.example", "a", 0)]).unwrap();
    let lease = w1.next_ready(now).unwrap().unwrap();
    done(&mut w1, &lease, now);
    assert!(w1.next_ready(now).unwrap().is_none());
    assert_eq!(owners(&crawl), [], "a finished host is forgotten");
    // w1 takes a host and stops asking (a dead worker): once its lease
    // expires, the reaper frees the host for anyone, with no grace to wait.
    w1.push(vec![
        entry("left.example", "a", 0),
        entry("left.example", "b", 1),
    ])
    .unwrap();
    let fetched = w1.next_ready(now).unwrap().unwrap();
    done(&mut w1, &fetched, now);
    drop(w1.next_ready(now).unwrap().expect("w1 takes the second"));
    let key = format!("{}lease:left.example", key_prefix(crawl.name()));
    let _: () = redis::cmd("DEL")
        .arg(key)
        .query(&mut crawl.server.connection())
        .unwrap();
    let heir = w2
        .next_ready(now + SKEW)
        .unwrap()
        .expect("the reaped host is free");
    assert_eq!(heir.entry.host, "left.example");
    assert_eq!(
        owners(&crawl),
        [("left.example".to_string(), w2.worker().to_string())]
    );
}
