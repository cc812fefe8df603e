//! The cluster view's hosts window through a real Redis: the workers
//! publish the rows a view shows, not only their busiest hosts.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::sync::watch;

use super::{start, ClusterReader, ViewOptions};
use crate::cluster::publish::SnapshotPublisher;
use crate::cluster::redis_server::RedisServer;
use crate::engine::frontier::Heartbeat;
use crate::engine::host_window::HostWindow;
use crate::engine::telemetry::{HostView, Snapshot};
use crate::engine::EngineHandle;

const CRAWL: &str = "windows";
const FAR: &str = "host-0420.example.org";

/// A worker's snapshot of 500 hosts, busiest first.
fn wide() -> Snapshot {
    let mut snapshot = Snapshot::default();
    for i in 0..500u64 {
        snapshot.hosts.push(HostView {
            host: format!("host-{i:04}.example.org"),
            queued: 500 - i,
            ..HostView::default()
        });
    }
    snapshot
}

/// A heartbeat that keeps worker `w1` alive for a minute.
fn beat(server: &RedisServer) {
    let at_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let beat = Heartbeat {
        worker: "w1".into(),
        at_ms,
        stale_after_ms: 60_000,
        ..Heartbeat::default()
    };
    server.write_heartbeat(CRAWL, &beat);
}

/// Waits (at most 20 s) for a merged snapshot that does or does not list `host`.
async fn wait_for(handle: &mut EngineHandle, host: &str, listed: bool) {
    let found = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            handle.snapshots.changed().await.expect("the view runs");
            let snap = handle.snapshots.borrow_and_update().clone();
            let has = snap.hosts.iter().any(|h| h.host == host);
            if !snap.hosts.is_empty() && has == listed {
                return;
            }
        }
    })
    .await;
    assert!(found.is_ok(), "{host} listed: {listed} never seen");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_views_window_brings_hosts_beyond_the_busiest_into_the_cluster_view() {
    let server = RedisServer::for_test();
    beat(&server);
    let (_keep, snapshots) = watch::channel(Arc::new(wide()));
    let publisher = SnapshotPublisher::start(&server.redis_url(), CRAWL, "w1", snapshots).unwrap();
    let reader = ClusterReader::new(&server.redis_url(), CRAWL).unwrap();
    let mut handle = start(reader, ViewOptions::default());
    // Without a window the worker publishes its busiest 100.
    wait_for(&mut handle, "host-0000.example.org", true).await;
    wait_for(&mut handle, FAR, false).await;
    // The operator filters the hosts table for a quiet host.
    handle.control.set_window(HostWindow {
        filter: "0420".into(),
        rows: 20,
        ..HostWindow::default()
    });
    wait_for(&mut handle, FAR, true).await;
    // Back to the busiest: the host leaves the published rows again.
    handle.control.set_window(HostWindow {
        rows: 20,
        ..HostWindow::default()
    });
    wait_for(&mut handle, FAR, false).await;
    drop(handle);
    publisher.stop();
}
