//! The conformance suite against Redis, and what only a shared frontier has:
//! leases between workers, and the reaper.

use std::path::Path;
use std::time::Duration;

use tokio::time::Instant;

use super::{ClusterTarget, RedisFrontier, DEFAULT_HOST_AFFINITY};
use crate::cluster::redis_server::RedisServer;
use crate::engine::dedup::url_fingerprint;
use crate::engine::frontier::conformance::{entry, frontier_conformance_tests, record};
use crate::engine::frontier::{FrontierStore, Lease};
use crate::engine::store::Store;

/// A frontier per directory: the crawl is named after the directory and the
/// local store (page records) lives in it.
fn opener(server: &RedisServer, ttl: Duration) -> impl FnMut(&Path) -> RedisFrontier + '_ {
    move |dir| {
        let name = format!(
            "t{:x}",
            crate::engine::dedup::url_fingerprint(&dir.display().to_string())
        );
        worker_in(server, &name, dir, ttl)
    }
}

/// A Redis server of its own and one worker of `crawl` on it, with its data
/// directory (kept alive by the caller).
pub(super) fn lone_worker(
    crawl: &str,
    ttl: Duration,
) -> (RedisServer, tempfile::TempDir, RedisFrontier) {
    let server = RedisServer::for_test();
    let dir = tempfile::tempdir().unwrap();
    let worker = worker_in(&server, crawl, dir.path(), ttl);
    (server, dir, worker)
}

pub(super) fn worker_in(
    server: &RedisServer,
    crawl: &str,
    dir: &Path,
    ttl: Duration,
) -> RedisFrontier {
    let store = Store::open(dir, 1 << 20).unwrap();
    let target = ClusterTarget {
        url: server.redis_url(),
        crawl: crawl.to_string(),
        lease_ttl: ttl,
        host_affinity: crate::engine::DEFAULT_HOST_AFFINITY,
    };
    RedisFrontier::open(&target, dir, &store).unwrap()
}

mod conformance {
    use super::*;

    fn open_redis() -> impl FnMut(&Path) -> RedisFrontier {
        let server = RedisServer::for_test();
        move |dir| opener(&server, Duration::from_secs(30))(dir)
    }

    frontier_conformance_tests!(open_redis());
}

#[test]
fn a_host_is_leased_to_one_worker_at_a_time() {
    let server = RedisServer::for_test();
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut w1 = worker_in(&server, "shared", d1.path(), Duration::from_secs(30));
    let mut w2 = worker_in(&server, "shared", d2.path(), Duration::from_secs(30));
    let now = Instant::now();
    // Each at its own level, so no take reads a batch (which would keep the
    // host with w1 for its next URLs: see `tests_batch`).
    w1.push(
        (0..3)
            .map(|i| entry("one.example", &i.to_string(), i))
            .collect(),
    )
    .unwrap();
    w1.push(vec![entry("two.example", "0", 0)]).unwrap();
    let first = w1.next_ready(now).unwrap().expect("w1 gets a host");
    // w2 may take the other host, never the one w1 has in flight.
    let second = w2.next_ready(now).unwrap().expect("w2 gets the other host");
    assert_ne!(first.entry.host, second.entry.host);
    assert!(w2.next_ready(now).unwrap().is_none());
    // Done and given back: now w2 may take w1's host, after its not-before.
    w1.set_not_before(&first.entry.host, now + Duration::from_secs(1))
        .unwrap();
    w1.complete(&first, &record(&first.entry), Vec::new())
        .unwrap();
    assert!(
        w1.next_ready(now).unwrap().is_none(),
        "w1 is waiting out the delay"
    );
    assert!(
        w2.next_ready(now).unwrap().is_none(),
        "so is w2: the delay is shared"
    );
    // Each worker maps its clock to the crawl's on its own: allow for the jitter.
    let later = now + Duration::from_millis(1010);
    w2.complete(&second, &record(&second.entry), Vec::new())
        .unwrap();
    assert!(
        w2.next_ready(later).unwrap().is_none(),
        "w1 has first call on its host for a while after it is due"
    );
    let third = w2
        .next_ready(later + DEFAULT_HOST_AFFINITY)
        .unwrap()
        .expect("w1 let it wait past its first call");
    assert_eq!(third.entry.host, first.entry.host);
    assert_eq!(w2.counts().unwrap().queued, 1);
}

#[test]
fn a_dead_workers_urls_return_after_its_lease_expires() {
    let server = RedisServer::for_test();
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let ttl = Duration::from_millis(1500);
    let now = Instant::now();
    {
        let mut dead = worker_in(&server, "reaped", d1.path(), ttl);
        dead.push(vec![entry("h.example", "a", 0), entry("h.example", "b", 0)])
            .unwrap();
        let lease = dead.next_ready(now).unwrap().expect("a URL");
        assert_eq!(lease.entry.url, "http://h.example/a");
        // A link of the page, claimed but not yet queued when the worker dies.
        assert_eq!(
            dead.claim_unseen(&["http://h.example/link"]).unwrap(),
            [true]
        );
        // Dropped holding the lease, like a killed process.
    }
    let mut heir = worker_in(&server, "reaped", d2.path(), ttl);
    assert!(
        heir.next_ready(now).unwrap().is_none(),
        "the lease still holds"
    );
    assert_eq!(
        heir.counts().unwrap().queued,
        2,
        "a + b are still the crawl's work"
    );
    // Real time: the lease is a Redis key with a TTL.
    std::thread::sleep(ttl + Duration::from_millis(150));
    heir.last_upkeep = None;
    let lease = heir
        .next_ready(Instant::now())
        .unwrap()
        .expect("taken over");
    assert_eq!(lease.entry.url, "http://h.example/a", "back at the head");
    // Fetched again, the page finds its link anew; queued URLs stay seen.
    assert_eq!(
        heir.claim_unseen(&["http://h.example/link", "http://h.example/b"])
            .unwrap(),
        [true, false]
    );
}

/// Two workers of `crawl` in `dirs`: the first takes page `a` of
/// h.example and stalls past its lease (its key lapses), and the second's
/// reaper puts the page back in the queue. → (stalled, its page, heir).
fn stalled_on_a_page(
    server: &RedisServer,
    crawl: &str,
    dirs: [&Path; 2],
) -> (RedisFrontier, Lease, RedisFrontier) {
    let ttl = Duration::from_secs(30);
    let mut heir = worker_in(server, crawl, dirs[1], ttl);
    let mut stalled = worker_in(server, crawl, dirs[0], ttl);
    stalled.push(vec![entry("h.example", "a", 0)]).unwrap();
    let page = stalled.next_ready(Instant::now()).unwrap().expect("a URL");
    let mut con = redis::Client::open(server.url())
        .unwrap()
        .get_connection()
        .unwrap();
    let lease = format!("{}lease:h.example", super::key_prefix(crawl));
    redis::cmd("DEL").arg(lease).query::<()>(&mut con).unwrap();
    assert_eq!(heir.reap(false).unwrap(), 1, "the page is queued again");
    (stalled, page, heir)
}

#[test]
fn a_page_whose_lease_lapsed_claims_no_links_so_its_next_fetch_finds_them() {
    let server = RedisServer::for_test();
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (stalled, page, mut heir) = stalled_on_a_page(&server, "dies", [d1.path(), d2.path()]);
    let links = ["http://h.example/link"];
    {
        let mut stalled = stalled;
        // It goes on with the page it holds no lease of any more: its link
        // is new to it, but not claimed...
        let found = stalled.claim_page_links(&page.entry.host, &links.map(url_fingerprint));
        assert_eq!(found.unwrap(), [true]);
        // ...for it dies (SIGKILL) before the page's lease end, and holds no
        // lease whose lapse would have the reaper unsee its claims.
    }
    heir.last_upkeep = None;
    let again = heir.next_ready(Instant::now()).unwrap();
    let again = again.expect("the page again");
    assert_eq!(again.entry.url, "http://h.example/a");
    let found = heir.claim_page_links(&again.entry.host, &links.map(url_fingerprint));
    assert_eq!(found.unwrap(), [true]);
    // Under its lease the heir claims it: a third look finds it seen.
    assert_eq!(heir.claim_unseen(&links).unwrap(), [false]);
}

#[test]
fn a_stalled_worker_that_lives_queues_its_pages_links_at_the_lease_end() {
    let server = RedisServer::for_test();
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (mut stalled, page, mut heir) = stalled_on_a_page(&server, "lives", [d1.path(), d2.path()]);
    let link = entry("h.example", "link", 0);
    let found = stalled.claim_page_links(&page.entry.host, &[url_fingerprint(&link.url)]);
    assert_eq!(found.unwrap(), [true]);
    let queued = stalled.complete(&page, &record(&page.entry), vec![link.clone()]);
    assert_eq!(queued.unwrap(), 1, "the link is queued once");
    assert_eq!(heir.counts().unwrap().queued, 1, "the page is done");
}

#[test]
fn the_seen_check_of_a_page_with_thousands_of_links_answers_each_once() {
    let (_server, _dir, mut w) = lone_worker("many", Duration::from_secs(30));
    // Over two chunks of the script's SMISMEMBER and SADD, one URL twice.
    let mut urls: Vec<String> = (0..2500).map(|i| format!("http://m.example/{i}")).collect();
    urls.push("http://m.example/1999".into());
    let refs: Vec<&str> = urls.iter().map(String::as_str).collect();
    let fresh = w.claim_unseen(&refs).unwrap();
    assert_eq!(fresh.len(), 2501);
    assert!(fresh[..2500].iter().all(|&f| f));
    assert!(!fresh[2500], "the second spelling in the same call is seen");
    let again = w.claim_unseen(&refs[1000..1002]).unwrap();
    assert_eq!(again, [false, false]);
}

#[test]
fn hosts_nobody_holds_are_counted_by_whether_they_are_due() {
    let server = RedisServer::for_test();
    let dir = tempfile::tempdir().unwrap();
    let mut reader = super::RedisReader::for_crawl(&server.redis_url(), "sched");
    assert_eq!(reader.unheld_hosts().unwrap(), (0, 0), "no crawl yet");
    let mut w = worker_in(&server, "sched", dir.path(), Duration::from_secs(30));
    w.push(vec![
        entry("due.example", "a", 0),
        entry("later.example", "a", 1),
    ])
    .unwrap();
    assert_eq!(reader.unheld_hosts().unwrap(), (0, 0), "both held by w");
    // Given back with its next allowed time a minute away: it waits.
    w.set_not_before("later.example", Instant::now() + Duration::from_secs(60))
        .unwrap();
    assert_eq!(reader.unheld_hosts().unwrap(), (0, 1));
    // Stopped: w gives the other back too, due at once.
    drop(w);
    assert_eq!(reader.unheld_hosts().unwrap(), (1, 1));
    // A lost connection fails one read; the next connects again. The
    // dropped worker's socket may not be closed on the server's side yet,
    // so one or two connections are cut, the reader's among them.
    let cut = server.command("CLIENT KILL TYPE normal").unwrap();
    assert!(cut == ":1" || cut == ":2", "{cut}");
    assert!(reader.unheld_hosts().unwrap_err().is_unreachable());
    assert_eq!(reader.unheld_hosts().unwrap(), (1, 1));
}

#[test]
fn a_next_allowed_time_beyond_half_a_lease_is_shared_at_once() {
    let ttl = Duration::from_secs(10);
    let (server, _dir, mut w) = lone_worker("nb", ttl);
    w.push(vec![
        entry("soon.example", "a", 0),
        entry("late.example", "a", 0),
    ])
    .unwrap();
    let shared_nb = |host: &str| {
        let key = format!("HGET {}nb {host}", super::key_prefix("nb"));
        server.command(&key).unwrap()
    };
    let now = Instant::now();
    let (a, b) = (
        w.next_ready(now).unwrap().unwrap(),
        w.next_ready(now).unwrap().unwrap(),
    );
    let (soon, late) = match a.entry.host.as_str() {
        "soon.example" => (a, b),
        _ => (b, a),
    };
    // Within half the TTL: kept for the lease's end, which writes it.
    w.set_not_before("soon.example", now + ttl / 4).unwrap();
    assert_eq!(shared_nb("soon.example"), "$-1", "not written yet");
    // Beyond it (a long Crawl-delay): the lease could lapse first if this
    // worker died, so it is written now.
    w.set_not_before("late.example", now + ttl).unwrap();
    assert_ne!(shared_nb("late.example"), "$-1", "written at once");
    for lease in [soon, late] {
        w.complete(&lease, &record(&lease.entry), Vec::new())
            .unwrap();
    }
    assert_ne!(
        shared_nb("soon.example"),
        "$-1",
        "written by the lease's end"
    );
}

#[test]
fn parked_urls_are_counted_over_every_workers_key_and_listed_up_to_the_cap() {
    let server = RedisServer::for_test();
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut w1 = worker_in(&server, "parked", d1.path(), Duration::from_secs(30));
    let mut w2 = worker_in(&server, "parked", d2.path(), Duration::from_secs(30));
    let parked = |n: usize, from: &str| {
        (0..n)
            .map(|i| entry("trap.example", &format!("{from}/{i}"), 0))
            .collect()
    };
    assert_eq!(w1.park_new(7, parked(3, "w1")).unwrap(), 3);
    assert_eq!(w2.park_new(7, parked(2, "w2")).unwrap(), 2);
    assert_eq!(w2.park_new(9, parked(1, "w2")).unwrap(), 1);
    let mut reader = super::RedisReader::for_crawl(&server.redis_url(), "parked");
    let (groups, cut) = reader.parked_by_alert(1, 2).unwrap();
    assert!(cut, "alert 9 is left out");
    assert_eq!(groups.len(), 1);
    assert_eq!((groups[0].alert_id, groups[0].count), (7, 5));
    // The cap holds across both keys: the second key adds nothing once it is reached.
    assert_eq!(groups[0].entries.len(), 2);
}
