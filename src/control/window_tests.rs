//! Snapshots on the wire carry only the viewer's window of hosts.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use super::client::loopback;
use super::protocol::{encode, ServerMsg};
use crate::engine::host_order::ordered;
use crate::engine::host_window::{HostWindow, SortColumn};
use crate::engine::telemetry::{EngineEvent, HostView, Level, Snapshot};
use crate::engine::EngineHandle;

/// A frame with a 20-row window stays under this, however many hosts there are.
const WINDOW_FRAME_LIMIT: usize = 30 * 1024;

/// A crawl of `hosts` hosts, each with a queue head, robots.txt summary and
/// last error as wide as a real crawl's.
pub(super) fn wide_snapshot(hosts: usize) -> Snapshot {
    let views = (0..hosts)
        .map(|i| {
            let host = format!("host-{i:03}.bench.test");
            let mut view = HostView {
                queued: (i as u64 * 7919) % 1000,
                paused: i == 42,
                queue_head: (0..5)
                    .map(|p| format!("http://{host}/section/{p}/page-{i}.html?ref=index"))
                    .collect(),
                robots_summary: Some("14 rules, crawl-delay 2s, 1 sitemap".into()),
                host,
                ..HostView::default()
            };
            view.breaker.last_error = Some("connect: connection refused (os error 111)".into());
            view
        })
        .collect();
    Snapshot {
        hosts_total: hosts as u32,
        hosts: views,
        ..Snapshot::default()
    }
}

/// Waits (bounded) for a snapshot the test's condition accepts.
async fn next_where(
    snapshots: &mut watch::Receiver<Arc<Snapshot>>,
    ok: impl FnMut(&Arc<Snapshot>) -> bool,
) -> Arc<Snapshot> {
    let found = tokio::time::timeout(Duration::from_secs(10), snapshots.wait_for(ok)).await;
    found.expect("a matching snapshot in time").unwrap().clone()
}

fn frame_len(snapshot: &Arc<Snapshot>) -> usize {
    let msg = ServerMsg::Snapshot {
        snapshot: snapshot.clone(),
        dropped_events: 0,
    };
    encode(&msg).unwrap().len()
}

fn keys(snapshot: &Snapshot) -> Vec<&str> {
    snapshot.hosts.iter().map(|h| h.host.as_str()).collect()
}

#[tokio::test]
async fn a_viewer_gets_its_window_of_hosts_and_the_detail_it_opened() {
    let whole = wide_snapshot(300);
    let (handle, engine) = EngineHandle::channel();
    engine.snapshots.send_replace(Arc::new(whole.clone()));
    let mut viewer = loopback(handle).await.unwrap();

    // Before the viewer says its window: totals and paused hosts only.
    let first = next_where(&mut viewer.snapshots, |s| s.window.is_some()).await;
    assert!(first.hosts.is_empty());
    assert_eq!(first.hosts_total, 300);
    assert_eq!(first.paused_hosts(), ["host-042.bench.test"]);

    let mut window = HostWindow {
        rows: 20,
        ..HostWindow::default()
    };
    viewer.control.set_window(window.clone());
    let top = next_where(&mut viewer.snapshots, |s| s.hosts.len() == 20).await;
    let by_queue = ordered(&whole.hosts, SortColumn::Queued, false, "");
    let expected: Vec<&str> = by_queue[..20].iter().map(|h| h.host.as_str()).collect();
    assert_eq!(keys(&top), expected);
    assert!(top.hosts.iter().all(|h| h.queue_head.is_empty()));
    assert_eq!(top.window.as_ref().unwrap().matching, 300);
    let (small, big) = (frame_len(&top), frame_len(&Arc::new(whole.clone())));
    assert!(small < WINDOW_FRAME_LIMIT, "{small} bytes with 20 rows");
    assert!(small * 10 < big, "{small} bytes windowed, {big} whole");

    // Scrolling moves the window down the same order.
    window.first = 100;
    viewer.control.set_window(window.clone());
    let scrolled = next_where(&mut viewer.snapshots, |s| {
        s.window.as_ref().is_some_and(|w| w.first == 100)
    })
    .await;
    let expected: Vec<&str> = by_queue[100..120].iter().map(|h| h.host.as_str()).collect();
    assert_eq!(keys(&scrolled), expected);

    // Another sort brings other hosts; the filter narrows the list.
    window = HostWindow {
        sort: SortColumn::Host,
        reverse: true,
        filter: "HOST-1".into(),
        rows: 20,
        ..HostWindow::default()
    };
    viewer.control.set_window(window.clone());
    let sorted = next_where(&mut viewer.snapshots, |s| {
        s.hosts
            .first()
            .is_some_and(|h| h.host == "host-199.bench.test")
    })
    .await;
    assert_eq!(sorted.hosts.len(), 20);
    assert_eq!(sorted.hosts[19].host, "host-180.bench.test");
    assert_eq!(sorted.window.as_ref().unwrap().matching, 100);
    assert!(sorted.detail.is_none());

    // Opening a host's detail brings it in full, even off the window.
    window.detail = Some("host-007.bench.test".into());
    viewer.control.set_window(window);
    let detailed = next_where(&mut viewer.snapshots, |s| s.detail.is_some()).await;
    let detail = detailed.host_detail("host-007.bench.test").unwrap();
    assert_eq!(detail, &whole.hosts[7]);
    assert_eq!(detail.queue_head.len(), 5);
    assert!(frame_len(&detailed) < WINDOW_FRAME_LIMIT);
}

fn fetched(host: &str) -> EngineEvent {
    EngineEvent::Fetched {
        host: host.into(),
        url: format!("http://{host}/"),
        status: Some(200),
        latency: Duration::from_millis(5),
        bytes: 100,
        error: None,
    }
}

#[tokio::test]
async fn fetches_reach_a_viewer_only_for_the_host_whose_detail_is_open() {
    let (handle, engine) = EngineHandle::channel();
    engine.snapshots.send_replace(Arc::new(wide_snapshot(3)));
    let mut viewer = loopback(handle).await.unwrap();
    viewer.control.set_window(HostWindow {
        detail: Some("host-001.bench.test".into()),
        ..HostWindow::default()
    });
    // The server has the window once a snapshot carries its detail.
    next_where(&mut viewer.snapshots, |s| s.detail.is_some()).await;
    for host in [
        "host-000.bench.test",
        "host-001.bench.test",
        "host-002.bench.test",
    ] {
        engine.events.send(fetched(host)).await.unwrap();
    }
    let marker = EngineEvent::Log {
        level: Level::Info,
        message: "end".into(),
    };
    engine.events.send(marker.clone()).await.unwrap();
    let mut got = Vec::new();
    loop {
        let event = tokio::time::timeout(Duration::from_secs(10), viewer.events.recv()).await;
        let event = event.expect("events in time").expect("events open");
        if event == marker {
            break;
        }
        got.push(event);
    }
    assert_eq!(got, [fetched("host-001.bench.test")]);
}
