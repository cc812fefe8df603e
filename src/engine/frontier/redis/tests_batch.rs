//! A take's batch: served by the leaseholder without a round trip, still
//! queued in Redis, so a dead worker, a removal or a pause loses nothing and
//! serves nothing twice.

use std::time::Duration;

use tokio::time::Instant;

use super::tests::{lone_worker, worker_in};
use super::{key_prefix, RedisFrontier, TAKE_BATCH};
use crate::cluster::redis_server::RedisServer;
use crate::engine::frontier::conformance::{entry, record};
use crate::engine::frontier::{FrontierStore, Hold, Lease};

const TTL: Duration = Duration::from_secs(30);

/// Scripts the server has run (EVAL and EVALSHA calls).
fn script_calls(server: &RedisServer) -> u64 {
    let mut con = redis::Client::open(server.url())
        .unwrap()
        .get_connection()
        .unwrap();
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(&mut con)
        .unwrap();
    ["cmdstat_evalsha:calls=", "cmdstat_eval:calls="]
        .iter()
        .filter_map(|field| {
            let at = info.find(field)? + field.len();
            let digits: String = info[at..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            digits.parse::<u64>().ok()
        })
        .sum()
}

fn take(f: &mut RedisFrontier) -> Lease {
    f.next_ready(Instant::now())
        .unwrap()
        .expect("a URL is ready")
}

fn done(f: &mut RedisFrontier, lease: &Lease) {
    f.complete(lease, &record(&lease.entry), Vec::new())
        .unwrap();
}

/// The paths of every URL the worker can take now, completing each.
fn drain(f: &mut RedisFrontier) -> Vec<String> {
    let mut paths = Vec::new();
    while let Some(lease) = f.next_ready(Instant::now()).unwrap() {
        done(f, &lease);
        paths.push(path(&lease).to_string());
    }
    paths
}

fn path(lease: &Lease) -> &str {
    lease.entry.url.trim_start_matches("http://h.example/")
}

/// Queues `host`'s URLs `/0` to `/{n-1}`, all at level 0.
fn push_numbered(f: &mut RedisFrontier, host: &str, n: usize) {
    f.push((0..n).map(|i| entry(host, &i.to_string(), 0)).collect())
        .unwrap();
}

#[test]
fn the_leaseholder_serves_a_takes_batch_without_a_round_trip() {
    let server = RedisServer::for_test();
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut w1 = worker_in(&server, "batch", d1.path(), TTL);
    let mut w2 = worker_in(&server, "batch", d2.path(), TTL);
    let mut urls: Vec<_> = (0..10)
        .map(|i| entry("h.example", &i.to_string(), 0))
        .collect();
    urls.push(entry("h.example", "late", 1));
    w1.push(urls).unwrap();
    // The first take claims the host (and loads the script, which counts as
    // a call of its own); lease upkeep is done by then, not during the rest.
    let first = take(&mut w1);
    done(&mut w1, &first);
    let mut order = vec![path(&first).to_string()];
    for i in 1..=TAKE_BATCH {
        let before = script_calls(&server);
        let lease = take(&mut w1);
        let scripts = script_calls(&server) - before;
        // The batch is served; the take after it claims again.
        let expected = u64::from(i == TAKE_BATCH);
        assert_eq!(scripts, expected, "take {i} ({})", lease.entry.url);
        assert!(
            w2.next_ready(Instant::now()).unwrap().is_none(),
            "w1 holds the host"
        );
        done(&mut w1, &lease);
        order.push(path(&lease).to_string());
    }
    assert_eq!(order, ["0", "1", "2", "3", "4", "5", "6", "7", "8"]);
    // A batch holds one level: the level-1 URL comes after every level-0 one.
    assert_eq!(drain(&mut w1), ["9", "late"]);
    let counts = w1.counts().unwrap();
    assert_eq!((counts.queued, counts.in_flight), (0, 0));
}

#[test]
fn a_dead_leaseholders_batch_goes_to_the_next_worker_and_nothing_is_fetched_twice() {
    let server = RedisServer::for_test();
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    {
        let mut dead = worker_in(&server, "heir", d1.path(), TTL);
        push_numbered(&mut dead, "h.example", 5);
        let a = take(&mut dead);
        done(&mut dead, &a);
        let b = take(&mut dead);
        // Served from the batch: no write, still queued in Redis.
        assert_eq!(path(&b), "1");
        let counts = dead.counts().unwrap();
        assert_eq!((counts.queued, counts.in_flight), (3, 1));
        done(&mut dead, &b);
        let in_flight = take(&mut dead);
        assert_eq!(path(&in_flight), "2");
        // Dropped with 2 in flight and 3 and 4 in its batch, like a killed process.
    }
    // The lease lapses (deleted here rather than waited for); the heir's reaper runs at open.
    let lease_key = format!("DEL {}lease:h.example", key_prefix("heir"));
    assert_eq!(server.command(&lease_key).unwrap(), ":1");
    let mut heir = worker_in(&server, "heir", d2.path(), TTL);
    assert_eq!(
        drain(&mut heir),
        ["2", "3", "4"],
        "only the URL in flight is fetched again"
    );
    assert_eq!(heir.counts().unwrap(), Default::default());
}

#[test]
fn removals_and_a_pause_stop_a_batch_and_leave_its_served_url_alone() {
    let (_server, _dir, mut w) = lone_worker("rules", TTL);
    push_numbered(&mut w, "h.example", 6);
    let first = take(&mut w);
    done(&mut w, &first);
    let served = take(&mut w);
    assert_eq!(path(&served), "1");
    let view = &w.host_views(&["h.example"], Instant::now(), 1).unwrap()[0];
    assert_eq!((view.queued, view.in_flight), (4, 1));
    assert_eq!(
        view.head,
        ["http://h.example/2"],
        "the served URL is not queued"
    );
    // A blacklist of the whole host: the batch is not served, the URL out stays out.
    let removed = w.remove_matching(None, &|_| true, &|e| record(e)).unwrap();
    assert_eq!(removed, 4);
    done(&mut w, &served);
    assert!(w.next_ready(Instant::now()).unwrap().is_none());
    assert_eq!(w.counts().unwrap(), Default::default());

    // A pause applied by this worker stops the batch at once.
    push_numbered(&mut w, "p.example", 4);
    let p0 = take(&mut w);
    done(&mut w, &p0);
    w.set_hold("p.example", Hold::Paused, true).unwrap();
    assert!(w.next_ready(Instant::now()).unwrap().is_none(), "paused");
    w.set_hold("p.example", Hold::Paused, false).unwrap();
    let p1 = take(&mut w);
    assert_eq!(p1.entry.url, "http://p.example/1");
}

#[test]
fn an_answered_lease_lets_the_leaseholder_serve_the_hosts_next_url_before_it_ends() {
    let (_server, _dir, mut w) = lone_worker("answered", TTL);
    push_numbered(&mut w, "h.example", 4);
    let first = take(&mut w);
    assert!(
        w.next_ready(Instant::now()).unwrap().is_none(),
        "one request a host"
    );
    w.answered(&first);
    let second = take(&mut w);
    assert_eq!(path(&second), "1", "served from the batch");
    assert!(
        w.next_ready(Instant::now()).unwrap().is_none(),
        "the second request is out"
    );
    assert_eq!(w.counts().unwrap().in_flight, 2, "both leases are out");
    done(&mut w, &second);
    done(&mut w, &first);
    assert_eq!(drain(&mut w), ["2", "3"]);
    assert_eq!(w.counts().unwrap(), Default::default());
}

#[test]
fn a_not_before_written_while_an_answered_lease_is_out_is_not_undone_by_its_end() {
    let (server, _dir, mut w) = lone_worker("nb-answered", TTL);
    let shared_nb = || {
        let key = format!("HGET {}nb h.example", key_prefix("nb-answered"));
        server.command(&key).unwrap()
    };
    push_numbered(&mut w, "h.example", 3);
    let now = Instant::now();
    let first = w.next_ready(now).unwrap().expect("a URL is ready");
    // The first answer's wait: kept for its lease's end.
    w.set_not_before("h.example", now).unwrap();
    assert_eq!(shared_nb(), "$-1", "not written yet");
    w.answered(&first);
    let second = w.next_ready(now).unwrap().expect("served from the batch");
    // The second answer's wait, with two leases out: written at once.
    w.set_not_before("h.example", now + TTL / 4).unwrap();
    let later = shared_nb();
    assert_ne!(later, "$-1");
    done(&mut w, &first);
    assert_eq!(
        shared_nb(),
        later,
        "the first lease's end keeps the later wait"
    );
    done(&mut w, &second);
}
