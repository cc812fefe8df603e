//! Store-backed operations: counters that match a fresh scan of the store, and
//! memory bounded by the head buffers.

use std::collections::HashSet;

use tokio::time::Instant;

use super::host::BUFFER_CAP;
use super::tests::{
    buffered_entries, drain, entry, host_in_flight, open_temp, queued_hosts, record,
};
use super::*;
use crate::engine::store::{CrawlBatch, PageOutcome, PageRecord};

/// Counters must equal what a fresh scan of the store finds (leases count as
/// queued there, as after a crash).
fn assert_counts_match_store(f: &Frontier, store: &Store) {
    let fresh = Frontier::open(store).unwrap();
    assert_eq!(fresh.len(), f.len() + f.in_flight(), "len");
    let mut depths = f.front_queue_depths();
    assert_eq!(depths.iter().sum::<u64>(), f.len());
    // In-flight entries are back in their levels after a fresh open.
    let fresh_depths = fresh.front_queue_depths();
    for (d, fresh_d) in depths.iter_mut().zip(fresh_depths) {
        assert!(*d <= fresh_d, "depths {depths:?} vs {fresh_depths:?}");
    }
    for host in queued_hosts(&fresh) {
        assert_eq!(
            fresh.host_queued(&host),
            f.host_queued(&host) + host_in_flight(f, &host),
            "{host}"
        );
    }
    assert_eq!(fresh.parked, f.parked, "parked per alert");
    assert_eq!(fresh.parked_by_host, f.parked_by_host, "parked per host");
}

fn blocked(e: &FrontierEntry) -> PageRecord {
    PageRecord::without_fetch(
        &e.url,
        &e.host,
        e.depth,
        0,
        PageOutcome::Blocked {
            rule_id: 9,
            rule: "glob */cal/*".into(),
        },
    )
}

#[test]
fn counters_stay_exact_through_every_operation() {
    let (_dir, store, mut f) = open_temp();
    let now = Instant::now();
    let mut urls = Vec::new();
    for host in ["a.example", "b.example", "c.example"] {
        for i in 0..40 {
            let path = if i % 4 == 0 {
                format!("cal/{i}")
            } else {
                format!("p{i}")
            };
            urls.push(entry(host, &path, (i % 5) as u8));
        }
    }
    assert_eq!(f.push(urls).unwrap(), 120);
    assert_counts_match_store(&f, &store);

    let lease = f.next_ready(now).unwrap();
    let outlinks = vec![entry("d.example", "new", 0), entry("a.example", "new", 1)];
    assert_eq!(
        f.complete(&lease, &record(&lease.entry), outlinks).unwrap(),
        2
    );
    let in_flight = f.next_ready(now).unwrap();
    assert_counts_match_store(&f, &store);

    let is_cal = |e: &FrontierEntry| e.url.contains("/cal/");
    let parked = f.park(1, "a.example", &is_cal).unwrap();
    assert!(parked >= 9, "{parked}");
    assert_eq!(f.parked[&1], parked);
    assert_eq!(f.host_parked("a.example"), parked);
    assert_eq!(
        f.park_new(1, vec![entry("a.example", "cal/new", 0)])
            .unwrap(),
        1
    );
    assert_counts_match_store(&f, &store);

    let removed = f.remove_matching(None, &is_cal, &blocked).unwrap();
    assert!(removed >= 18, "{removed}");
    assert!(queued_hosts(&f)
        .iter()
        .all(|h| !f.host_head(h, 64).iter().any(|u| u.contains("/cal/"))));
    assert_counts_match_store(&f, &store);

    assert_eq!(f.unpark(1).unwrap(), parked + 1);
    assert!(!f.parked.contains_key(&1));
    assert_eq!(f.host_parked("a.example"), 0);
    assert_counts_match_store(&f, &store);

    let before = f.len();
    let dropped = f.drop_host("b.example", &blocked).unwrap();
    assert_eq!(f.host_queued("b.example"), 0);
    assert_eq!(f.len(), before - dropped);
    assert_counts_match_store(&f, &store);

    f.complete(&in_flight, &record(&in_flight.entry), Vec::new())
        .unwrap();
    let rest = drain(&mut f, now);
    assert_eq!(f.len(), 0);
    assert_eq!(f.in_flight(), 0);
    assert_eq!(buffered_entries(&f), 0);
    let unique: HashSet<&String> = rest.iter().collect();
    assert_eq!(unique.len(), rest.len(), "a URL was handed out twice");
    // 120 pushed + 2 outlinks + 1 parked directly: each left with exactly one record.
    assert_eq!(store.count_pages(), 123);
}

#[test]
fn memory_stays_bounded_with_200k_queued_urls_over_50_hosts() {
    let (_dir, store, mut f) = open_temp();
    let now = Instant::now();
    f.set_default_max_in_flight(4);
    let hosts: Vec<String> = (0..50).map(|h| format!("host{h}.example")).collect();
    for chunk in 0..200 {
        let batch = (0..1000)
            .map(|i| {
                let n = chunk * 1000 + i;
                entry(&hosts[n % 50], &format!("page/{n}"), (n % 5) as u8)
            })
            .collect();
        f.push(batch).unwrap();
        assert!(buffered_entries(&f) <= 50 * BUFFER_CAP);
    }
    assert_eq!(f.len(), 200_000);
    for _ in 0..5_000 {
        let lease = f.next_ready(now).unwrap();
        f.complete(&lease, &record(&lease.entry), Vec::new())
            .unwrap();
        assert!(buffered_entries(&f) <= 50 * BUFFER_CAP);
    }
    assert_eq!(f.len(), 195_000);
    assert_eq!(queued_hosts(&f).len(), 50);
    assert_eq!(store.count_pages(), 5_000);
}

#[test]
fn a_failed_group_write_records_nothing_and_leaves_links_unclaimed() {
    use crate::engine::store::faults::DiskFaults;

    let dir = tempfile::tempdir().unwrap();
    // One write for the push below; the group's write finds the disk full.
    let faults = DiskFaults::full_after(1);
    let store = Store::open_with_faults(dir.path(), 8 << 20, faults.clone()).unwrap();
    let mut f = Frontier::open(&store).unwrap();
    f.set_default_max_in_flight(4);
    f.push(
        (0..2)
            .map(|i| entry("a.example", &i.to_string(), 0))
            .collect(),
    )
    .unwrap();
    let now = Instant::now();
    let leases = [
        f.try_next_ready(now).unwrap().expect("ready"),
        f.try_next_ready(now).unwrap().expect("ready"),
    ];
    let link = "http://b.example/new";
    assert_eq!(f.claim_unseen(&[link]).unwrap(), [true]);
    let group: Vec<Completion> = leases
        .iter()
        .map(|l| Completion {
            lease: l.clone(),
            record: record(&l.entry),
            outlinks: vec![entry("b.example", "new", 0)],
        })
        .collect();

    assert!(
        f.complete_all(group, CrawlBatch::default()).is_err(),
        "the disk is full"
    );
    assert_eq!(f.in_flight(), 2, "every lease is still out");
    for l in &leases {
        assert!(
            store.page(&l.entry.url).unwrap().is_none(),
            "nothing recorded"
        );
    }
    faults.heal();
    assert_eq!(
        f.claim_unseen(&[link]).unwrap(),
        [true],
        "the link was never marked seen in the store"
    );
    for l in leases {
        f.try_release(l).unwrap();
    }
    assert_counts_match_store(&f, &store);
}
