//! Reads that no live worker can answer name the workers that are gone and
//! where their records are.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::{inspect, ReadServer};
use crate::cluster::redis_server::RedisServer;
use crate::engine::{ClusterTarget, Heartbeat};

const CRAWL: &str = "gone";

fn beat(server: &RedisServer, worker: &str, alive: bool, records: &str) {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let beat = Heartbeat {
        worker: worker.into(),
        at_ms: if alive { now } else { now - 60_000 },
        stale_after_ms: 30_000,
        records: records.into(),
        ..Heartbeat::default()
    };
    server.write_heartbeat(CRAWL, &beat);
}

#[test]
fn a_read_no_live_worker_answers_names_the_workers_gone_and_where_their_records_are() {
    let server = RedisServer::for_test();
    let target = ClusterTarget {
        url: server.redis_url(),
        crawl: CRAWL.into(),
        lease_ttl: Duration::from_secs(10),
        host_affinity: crate::engine::DEFAULT_HOST_AFFINITY,
    };
    beat(&server, "w2", false, "machine-b:/srv/crawl/w2");
    let url = "http://h.example/page";
    let err = inspect(&target, url).unwrap_err().to_string();
    assert!(err.contains("no live worker in crawl gone"), "{err}");
    assert!(
        err.contains("gone: w2 (records in machine-b:/srv/crawl/w2)"),
        "{err}"
    );

    // A live worker without the page: the answer still says where else to look.
    let dir = tempfile::tempdir().unwrap();
    crate::engine::store::Store::open(dir.path(), 1 << 20).unwrap();
    beat(&server, "w1", true, "machine-a:/srv/crawl/w1");
    let _reads = ReadServer::start(&target, "w1", dir.path()).unwrap();
    let err = inspect(&target, url).unwrap_err().to_string();
    assert!(
        err.contains("no live worker of crawl gone has a record of http://h.example/page"),
        "{err}"
    );
    assert!(
        err.contains("gone: w2 (records in machine-b:/srv/crawl/w2)"),
        "{err}"
    );
    assert!(
        !err.contains("w1 ("),
        "a live worker is not listed as gone: {err}"
    );
}
