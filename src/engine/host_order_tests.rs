use super::*;
use crate::engine::host_window::{MAX_FILTER_CHARS, MAX_WINDOW_ROWS};

fn host(name: &str, queued: u64) -> HostView {
    HostView {
        host: name.into(),
        queued,
        queue_head: vec![format!("http://{name}/next")],
        robots_summary: Some("2 rules".into()),
        last_refusal: Some("loopback".into()),
        ..HostView::default()
    }
}

fn snapshot() -> Snapshot {
    Snapshot {
        hosts: vec![host("c.test", 5), host("a.test", 9), host("b.test", 5)],
        hosts_total: 3,
        ..Snapshot::default()
    }
}

fn names(hosts: &[HostView]) -> Vec<&str> {
    hosts.iter().map(|h| h.host.as_str()).collect()
}

#[test]
fn ties_are_broken_by_host_so_every_order_is_total() {
    let s = snapshot();
    let by_queue: Vec<&str> = ordered(&s.hosts, SortColumn::Queued, false, "")
        .iter()
        .map(|h| h.host.as_str())
        .collect();
    assert_eq!(by_queue, ["a.test", "b.test", "c.test"]);
    let reversed: Vec<&str> = ordered(&s.hosts, SortColumn::Queued, true, "")
        .iter()
        .map(|h| h.host.as_str())
        .collect();
    assert_eq!(reversed, ["c.test", "b.test", "a.test"]);
    assert_eq!(ordered(&s.hosts, SortColumn::Host, false, "B.T").len(), 1);
}

#[test]
fn a_window_holds_its_rows_without_detail_fields_and_the_detail_host_in_full() {
    let s = snapshot();
    let window = HostWindow {
        first: 1,
        rows: 1,
        detail: Some("c.test".into()),
        ..HostWindow::default()
    };
    let cut = s.windowed(&window);
    assert_eq!(names(&cut.hosts), ["b.test"]);
    let row = &cut.hosts[0];
    assert_eq!(row.queued, 5);
    assert!(row.queue_head.is_empty() && row.robots_summary.is_none());
    assert!(row.last_refusal.is_none());
    assert_eq!(cut.host_detail("c.test"), Some(&s.hosts[0]));
    assert_eq!(cut.host_detail("a.test"), None);
    let info = cut.window.as_ref().unwrap();
    assert_eq!((info.first, info.matching, info.listed), (1, 3, 3));
    assert_eq!(cut.hosts_total, 3);
    // Past the end: no rows, and the first row is where the list ends.
    let past = s.windowed(&HostWindow {
        first: 10,
        rows: 5,
        ..HostWindow::default()
    });
    assert!(past.hosts.is_empty());
    assert_eq!(past.window.unwrap().first, 3);
}

#[test]
fn paused_hosts_are_named_with_or_without_a_window() {
    let mut s = snapshot();
    s.hosts[2].paused = true;
    assert_eq!(s.paused_hosts(), ["b.test"]);
    assert_eq!(
        s.windowed(&HostWindow::default()).paused_hosts(),
        ["b.test"]
    );
}

#[test]
fn what_a_viewer_asks_for_is_bounded() {
    let asked = HostWindow {
        first: usize::MAX,
        rows: usize::MAX,
        filter: "é".repeat(MAX_FILTER_CHARS * 4),
        ..HostWindow::default()
    }
    .bounded();
    assert_eq!(asked.rows, MAX_WINDOW_ROWS);
    assert_eq!(asked.first, MAX_WINDOW_ROWS);
    assert_eq!(asked.filter.chars().count(), MAX_FILTER_CHARS);
}
