use std::time::Duration;

use super::*;
use crate::engine::control::{PatternKind, RuleSpec};
use crate::engine::telemetry::{AlertStatus, BreakerPhase, TrapAlert, TrapKind};
use crate::engine::Heartbeat;

fn host(name: &str, fetched: u64, phase: BreakerPhase) -> HostView {
    let mut view = HostView {
        host: name.into(),
        queued: 40,
        quarantined: 6,
        fetched,
        in_flight: 1,
        req_per_sec: 1.5,
        activity: HostActivity::Busy,
        ..HostView::default()
    };
    view.status.s2xx = fetched;
    view.breaker.phase = phase;
    view
}

fn alert(id: u64, host: &str) -> TrapAlert {
    TrapAlert {
        id,
        host: host.into(),
        kind: TrapKind::Counter,
        evidence_count: 12,
        last_seen: 0,
        samples: vec![format!("http://{host}/cal/2031/01")],
        suggested_rule: RuleSpec {
            kind: PatternKind::Regex,
            pattern: "/cal/".into(),
            host: Some(host.into()),
        },
        matching_queued: 3,
        status: AlertStatus::Open,
        impact: None,
    }
}

fn worker_snapshot(pages: u64, state: CrawlState, hosts: Vec<HostView>) -> Snapshot {
    let mut s = Snapshot {
        state,
        pages_per_sec: 2.0,
        in_flight: 1,
        frontier_size: 999,
        hosts,
        ..Snapshot::default()
    };
    s.counters.pages_fetched = pages;
    s.counters.count_error("timeout");
    s.counters.resources_fetched = pages / 10;
    s.counters.resource_bytes = pages * 100;
    s
}

fn row(worker: &str, alive: bool) -> WorkerRow {
    WorkerRow {
        beat: Heartbeat {
            worker: worker.into(),
            version: "0.1.0".into(),
            pages: 10,
            pages_per_s: 2.0,
            hosts_held: 1,
            in_flight: 1,
            at_ms: 0,
            stale_after_ms: 30_000,
            records: String::new(),
            pid: 0,
            serving: false,
        },
        alive,
        last_beat_ms_ago: 400,
    }
}

fn reading() -> ClusterRead {
    let mut w1 = worker_snapshot(
        10,
        CrawlState::Paused,
        vec![
            host("shared.test", 3, BreakerPhase::Closed),
            host("one.test", 7, BreakerPhase::Closed),
        ],
    );
    w1.alerts = vec![alert(1, "one.test")];
    let mut w2 = worker_snapshot(
        20,
        CrawlState::Running,
        vec![host("shared.test", 5, BreakerPhase::Open)],
    );
    w2.alerts = vec![alert(3, "shared.test")];
    // Each worker reports the crawl's parked URLs of the hosts it knows.
    (w1.quarantined, w2.quarantined) = (12, 6);
    ClusterRead {
        crawl: "news".into(),
        source: "redis://127.0.0.1:6379/0 crawl news".into(),
        workers: vec![row("w1", true), row("w2", false)],
        snapshots: vec![("w1".into(), w1), ("w2".into(), w2)],
        held: HashMap::from([("shared.test".to_string(), "w2".to_string())]),
        queued: 77,
        in_flight: 2,
        parked: 12,
        hosts: 9,
        ..ClusterRead::default()
    }
}

#[test]
fn counters_and_rates_are_summed_and_queues_come_from_the_shared_frontier() {
    let merged = Merger::default().merge(&reading());
    assert_eq!(merged.counters.pages_fetched, 30);
    assert_eq!(merged.counters.errors, 2);
    assert_eq!(merged.counters.errors_by_kind["timeout"], 2);
    assert_eq!(merged.counters.resources_fetched, 3);
    assert_eq!(merged.counters.resource_bytes, 3000);
    assert_eq!(merged.pages_per_sec, 4.0);
    assert_eq!(merged.in_flight, 2);
    assert_eq!(merged.frontier_size, 77, "not one worker's count");
    assert_eq!(
        merged.quarantined, 12,
        "the crawl's count, not a sum of copies"
    );
    assert_eq!(
        merged.host_detail("shared.test").unwrap().quarantined,
        6,
        "a host's parked URLs are counted once by the crawl"
    );
    // A URL a worker serves from its batch is in flight, though still queued in Redis.
    let batch_served = ClusterRead {
        in_flight: 1,
        ..reading()
    };
    assert_eq!(Merger::default().merge(&batch_served).frontier_size, 76);
    assert_eq!(merged.hosts_total, 9);
    assert_eq!(merged.state, CrawlState::Running, "one worker still runs");
    let cluster = merged.cluster.as_ref().unwrap();
    assert_eq!(cluster.crawl, "news");
    let workers: Vec<(&str, bool)> = cluster
        .workers
        .iter()
        .map(|w| (w.worker.as_str(), w.alive))
        .collect();
    assert_eq!(workers, [("w1", true), ("w2", false)]);
}

#[test]
fn hosts_merge_by_key_with_the_holders_breaker_and_summed_fetches() {
    let merged = Merger::default().merge(&reading());
    assert_eq!(merged.hosts.len(), 2);
    let shared = merged.host_detail("shared.test").unwrap();
    assert_eq!(shared.fetched, 8);
    assert_eq!(shared.status.s2xx, 8);
    assert_eq!(shared.in_flight, 2);
    assert_eq!(shared.queued, 40, "one shared queue, not two");
    assert_eq!(shared.breaker.phase, BreakerPhase::Open, "the holder's");
    let cluster = merged.cluster.unwrap();
    assert_eq!(
        cluster.held_by.get("shared.test").map(String::as_str),
        Some("w2")
    );
    assert_eq!(cluster.held_by.get("one.test"), None);
}

#[test]
fn alerts_keep_the_numbers_the_crawl_gave_them() {
    let mut merger = Merger::default();
    let first = merger.merge(&reading());
    let ids: Vec<(u64, &str)> = first
        .alerts
        .iter()
        .map(|a| (a.id, a.host.as_str()))
        .collect();
    assert_eq!(ids, [(1, "one.test"), (3, "shared.test")]);
    let named = &first.cluster.as_ref().unwrap().alert_workers;
    assert_eq!((named[&1].as_str(), named[&3].as_str()), ("w1", "w2"));
    // w2 is gone: its alert is decided by a live worker with a copy, else by w2.
    assert_eq!(merger.alert_decider(3), Some("w2"));
    assert_eq!(merger.alert_decider(1), Some("w1"));
    assert_eq!(merger.alert_decider(2), None);
}

#[test]
fn one_alert_per_number_with_every_workers_evidence() {
    let mut read = reading();
    // w2 raised #1 too late to matter: w1 raised it, w2 joined it with its own evidence.
    let mut joined = alert(1, "one.test");
    joined.evidence_count = 30;
    joined.matching_queued = 5;
    joined.last_seen = 99;
    joined.samples = vec![
        "http://one.test/cal/2031/01".into(),
        "http://one.test/cal/1999/12".into(),
    ];
    joined.impact = Some(Default::default());
    read.snapshots[1].1.alerts.push(joined);
    read.alert_raisers = HashMap::from([(1, "w2".to_string()), (3, "w2".to_string())]);
    let mut merger = Merger::default();
    let merged = merger.merge(&read);
    assert_eq!(merged.alerts.len(), 2, "{:?}", merged.alerts);
    let one = &merged.alerts[0];
    assert_eq!(
        (one.id, one.evidence_count, one.matching_queued),
        (1, 42, 8)
    );
    assert_eq!(one.last_seen, 99);
    assert_eq!(
        one.samples,
        ["http://one.test/cal/2031/01", "http://one.test/cal/1999/12"]
    );
    assert!(one.impact.is_some(), "the raiser's impact");
    let named = &merged.cluster.as_ref().unwrap().alert_workers;
    assert_eq!(named[&1], "w2", "named after its raiser");
    // w2 is gone, w1 lives and has a copy: w1 decides.
    assert_eq!(merger.alert_decider(1), Some("w1"));

    // Decided on one worker before the others: the merged alert is decided.
    read.snapshots[0].1.alerts[0].status = AlertStatus::Accepted;
    let merged = merger.merge(&read);
    assert_eq!(merged.alerts[0].status, AlertStatus::Accepted);
}

#[test]
fn a_crawl_is_done_when_every_worker_is_and_faults_name_their_worker() {
    let mut read = reading();
    for (_, s) in &mut read.snapshots {
        s.state = CrawlState::Done;
        s.finish_reason = Some("frontier empty".into());
    }
    read.snapshots[1].1.fault = Some("disk full".into());
    let merged = Merger::default().merge(&read);
    assert_eq!(merged.state, CrawlState::Done);
    assert_eq!(
        merged.finish_reason.as_deref(),
        Some("w1: frontier empty; w2: frontier empty")
    );
    assert_eq!(merged.fault.as_deref(), Some("w2: disk full"));
    let empty = Merger::default().merge(&ClusterRead::default());
    assert_eq!(empty.state, CrawlState::Starting);
}

#[test]
fn a_worker_that_ended_keeps_its_pages_and_shows_as_gone() {
    let mut merger = Merger::default();
    merger.merge(&reading());
    let mut later = reading();
    later.snapshots.retain(|(w, _)| w == "w2");
    later.workers.retain(|r| r.beat.worker == "w2");
    let merged = merger.merge(&later);
    assert_eq!(merged.counters.pages_fetched, 30, "w1's pages still count");
    assert_eq!(merged.pages_per_sec, 2.0, "only w2 fetches");
    assert_eq!(merged.state, CrawlState::Running);
    assert_eq!(merged.alerts.len(), 2);
    let workers = &merged.cluster.as_ref().unwrap().workers;
    let w1 = workers.iter().find(|w| w.worker == "w1").unwrap();
    assert!(!w1.alive);
    let shared = merged.host_detail("shared.test").unwrap();
    assert_eq!(shared.fetched, 5, "an ended worker holds no host");
}

#[test]
fn hosts_by_state_take_held_hosts_from_their_holder_and_the_rest_from_the_schedule() {
    let mut read = reading();
    read.hosts = 20;
    (read.unheld_ready, read.unheld_waiting) = (7, 3);
    // one.test is busy in w1's last row, but nobody holds it now: the
    // schedule counts it; the held shared.test counts as its holder sees it.
    let merged = Merger::default().merge(&read);
    assert_eq!((merged.hosts_ready, merged.hosts_waiting), (7, 3 + 1));
    assert_eq!(merged.hosts_total, 20);
}

#[test]
fn a_hosts_breaker_is_the_crawls_not_its_rows_worker() {
    let open = SharedBreakerState {
        probe_in: Some(Duration::from_secs(20)),
        last_error: Some("HTTP 503".into()),
    };
    let closed = SharedBreakerState {
        probe_in: None,
        last_error: None,
    };
    let mut read = reading();
    read.breakers = HashMap::from([
        ("one.test".to_string(), open),
        ("shared.test".to_string(), closed),
    ]);
    for view in &mut read.snapshots[0].1.hosts {
        view.activity = HostActivity::Ready;
    }
    let merged = Merger::default().merge(&read);
    // w1 has not followed the breaker another worker opened yet.
    let one = merged.host_detail("one.test").unwrap();
    assert_eq!(one.breaker.phase, BreakerPhase::Open);
    assert_eq!(one.breaker.next_probe_in, Some(Duration::from_secs(20)));
    assert_eq!(one.breaker.last_error.as_deref(), Some("HTTP 503"));
    assert_eq!(one.activity, HostActivity::BreakerOpen);
    assert_eq!(merged.hosts_breaker_open, 1);
    // The holder's row is older than the close another worker's probe made.
    let shared = merged.host_detail("shared.test").unwrap();
    assert_eq!(shared.breaker.phase, BreakerPhase::Closed);
    assert_eq!(shared.breaker.next_probe_in, None);
}
