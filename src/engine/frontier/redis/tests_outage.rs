//! Redis out of reach: writes are held and made when it answers again, and
//! leases lost meanwhile lose no URL and repeat none.

use std::collections::BTreeSet;
use std::time::Duration;

use tokio::time::Instant;

use super::tests::{lone_worker, worker_in};
use super::RedisFrontier;
use crate::cluster::redis_server::RedisServer;
use crate::engine::frontier::conformance::{entry, record};
use crate::engine::frontier::{FrontierStore, Lease};
use crate::engine::store::{CrawlBatch, StoreError};

const TTL: Duration = Duration::from_secs(30);

/// Every URL the worker can take now, completing each.
fn drain(f: &mut RedisFrontier) -> Vec<String> {
    let mut urls = Vec::new();
    while let Some(lease) = f.next_ready(Instant::now()).unwrap() {
        f.complete(&lease, &record(&lease.entry), Vec::new())
            .unwrap();
        urls.push(lease.entry.url);
    }
    urls
}

fn take(f: &mut RedisFrontier) -> Lease {
    f.next_ready(Instant::now())
        .unwrap()
        .expect("a URL is ready")
}

#[test]
fn writes_held_through_a_lost_connection_are_made_in_order_when_redis_answers() {
    let (server, _dir, mut w) = lone_worker("held", TTL);
    w.set_default_max_in_flight(2).unwrap();
    w.push(["a", "b", "c"].map(|p| entry("h.example", p, 0)).to_vec())
        .unwrap();
    let (a, b) = (take(&mut w), take(&mut w));
    assert_eq!(w.counts().unwrap().in_flight, 2);

    // The server drops every client: the next call finds the connection gone.
    assert_eq!(
        server.command("CLIENT KILL TYPE normal").unwrap(),
        ":1",
        "the worker's connection was cut"
    );
    let links = [
        "http://h.example/x",
        "http://h.example/c",
        "http://h.example/a",
    ];
    assert_eq!(
        w.claim_unseen(&links).unwrap(),
        [true, true, true],
        "out of reach, every link counts as new for now"
    );
    let Some(StoreError::Unreachable {
        server: url,
        reason,
    }) = w.unreachable()
    else {
        panic!("the worker knows Redis is out of reach");
    };
    assert_eq!(url, server.url());
    assert_eq!(reason, "connection lost");

    // Writes that need no answer are held; the rest fail at once.
    let outlinks = links
        .iter()
        .map(|u| entry("h.example", u.rsplit('/').next().unwrap(), 0))
        .collect();
    w.complete(&a, &record(&a.entry), outlinks).unwrap();
    w.release(b.clone()).unwrap();
    w.set_not_before("h.example", Instant::now()).unwrap();
    assert_eq!(w.held_writes(), 3);
    let err = w.next_ready(Instant::now()).unwrap_err();
    assert!(err.is_unreachable(), "{err}");
    assert!(w.take_new_hosts().unwrap_err().is_unreachable());
    assert_eq!(w.counts().unwrap().queued, 1, "the last counts read");

    assert_eq!(w.reconnect().unwrap(), 3);
    assert!(w.unreachable().is_none());
    assert_eq!(w.held_writes(), 0);
    // a is done; b is back at the head; of the links only x was new (c is
    // queued, a fetched): nothing is lost and nothing comes twice.
    assert_eq!(
        drain(&mut w),
        [
            "http://h.example/b",
            "http://h.example/c",
            "http://h.example/x"
        ]
    );
    assert_eq!(w.counts().unwrap(), Default::default());
}

#[test]
fn a_redis_restart_that_lost_the_lease_loses_no_url_and_repeats_none() {
    let data = tempfile::tempdir().unwrap();
    let mut server = RedisServer::start_persistent(data.path(), Duration::from_secs(120))
        .unwrap_or_else(|e| panic!("this test needs a local redis-server: {e}"));
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut w1 = worker_in(&server, "restart", d1.path(), TTL);
    w1.push(["a", "b"].map(|p| entry("h.example", p, 0)).to_vec())
        .unwrap();
    let a = take(&mut w1);
    assert_eq!(a.entry.url, "http://h.example/a");
    assert_eq!(w1.claim_unseen(&["http://h.example/y"]).unwrap(), [true]);

    server.kill9().unwrap();
    // The fetch of a ends while Redis is down: its end is held.
    let y = vec![entry("h.example", "y", 0)];
    w1.complete(&a, &record(&a.entry), y).unwrap();
    let err = w1.next_ready(Instant::now()).unwrap_err();
    assert!(err.is_unreachable(), "{err}");
    assert!(
        w1.reconnect().unwrap_err().is_unreachable(),
        "still down: the held write stays held"
    );
    assert_eq!(w1.held_writes(), 1);

    server.restart().unwrap();
    // The outage outlasted the lease (deleted here rather than waited for):
    // another worker joins and its reaper puts a back in the queue.
    let lease_key = format!("DEL {}lease:h.example", super::key_prefix("restart"));
    assert_eq!(server.command(&lease_key).unwrap(), ":1");
    let mut w2 = worker_in(&server, "restart", d2.path(), TTL);
    assert_eq!(w2.counts().unwrap().queued, 2, "a is queued again, with b");

    // w1's held completion takes a out again and queues its link.
    assert_eq!(w1.reconnect().unwrap(), 1);
    let mut fetched: Vec<String> = drain(&mut w2);
    fetched.extend(drain(&mut w1));
    let fetched: BTreeSet<String> = fetched.into_iter().collect();
    assert_eq!(
        fetched,
        BTreeSet::from(["http://h.example/b".into(), "http://h.example/y".into()]),
        "b and the link, once each; a is not fetched again"
    );
    assert_eq!(w1.counts().unwrap(), Default::default());
}

#[test]
fn a_url_requeued_while_its_fetch_was_out_may_end_twice_but_not_three_times() {
    let (server, _dir, mut w) = lone_worker("twice", TTL);
    w.push(["a", "b"].map(|p| entry("h.example", p, 0)).to_vec())
        .unwrap();
    let first = take(&mut w);
    // The lease runs out while a is fetched (a long outage, a stalled
    // worker): the worker's own reaper queues a again, and it takes it again.
    let expire = format!("DEL {}lease:h.example", super::key_prefix("twice"));
    assert_eq!(server.command(&expire).unwrap(), ":1");
    w.last_upkeep = None;
    let second = take(&mut w);
    assert_eq!(second.entry.url, first.entry.url);

    w.complete(&first, &record(&first.entry), Vec::new())
        .unwrap();
    w.complete(&second, &record(&second.entry), Vec::new())
        .unwrap();
    let err = w
        .complete(&second, &record(&second.entry), Vec::new())
        .unwrap_err();
    assert!(matches!(err, StoreError::UnknownLease { .. }), "{err}");
    assert_eq!(drain(&mut w), ["http://h.example/b"]);
    assert_eq!(w.counts().unwrap(), Default::default());
}

#[test]
fn a_group_of_lease_ends_survives_lost_scripts_and_a_lost_connection() {
    use crate::engine::frontier::Completion;
    let (server, _dir, mut w) = lone_worker("group", TTL);
    w.set_default_max_in_flight(2).unwrap();
    let paths = ["a", "b", "c", "d"];
    w.push(paths.map(|p| entry("h.example", p, 0)).to_vec())
        .unwrap();
    let group = |w: &mut RedisFrontier| -> Vec<Completion> {
        (0..2)
            .map(|_| {
                let lease = take(w);
                let record = record(&lease.entry);
                Completion {
                    lease,
                    record,
                    outlinks: Vec::new(),
                }
            })
            .collect()
    };
    // A restarted server has no scripts: the pipeline loads them and goes again.
    let first = group(&mut w);
    assert_eq!(server.command("SCRIPT FLUSH").unwrap(), "+OK");
    w.complete_all(first, CrawlBatch::default()).unwrap();
    assert_eq!(w.counts().unwrap().in_flight, 0);
    let second = group(&mut w);
    server.command("CLIENT KILL TYPE normal").unwrap();
    w.complete_all(second, CrawlBatch::default()).unwrap();
    assert_eq!(w.held_writes(), 2, "held while Redis is out of reach");
    assert_eq!(w.reconnect().unwrap(), 2);
    assert_eq!(w.counts().unwrap().queued, 0);
    assert!(drain(&mut w).is_empty(), "every URL ended once");
}

#[test]
fn writes_held_when_a_worker_stops_are_made_at_its_next_start() {
    let (server, dir, mut w) = lone_worker("kept", TTL);
    w.push(["a", "b"].map(|p| entry("h.example", p, 0)).to_vec())
        .unwrap();
    let a = take(&mut w);
    assert_eq!(server.command("CLIENT KILL TYPE normal").unwrap(), ":1");
    let outlinks = vec![entry("h.example", "x", 0)];
    w.complete(&a, &record(&a.entry), outlinks).unwrap();
    assert_eq!(w.held_writes(), 1, "a's end waits for the server");
    // Stopped (or killed) before Redis answered again.
    drop(w);

    let mut again = worker_in(&server, "kept", dir.path(), TTL);
    assert_eq!(again.held_writes(), 0);
    // a's end was made before its lease was reaped: a is not fetched again,
    // and its link is queued.
    assert_eq!(
        drain(&mut again),
        ["http://h.example/b", "http://h.example/x"]
    );
}
