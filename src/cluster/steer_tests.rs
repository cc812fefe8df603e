use super::*;
use crate::cluster::merge::{ClusterRead, Merger};
use crate::cluster::status::WorkerRow;
use crate::engine::control::{PatternKind, RuleSpec, Target};
use crate::engine::telemetry::{AlertStatus, RuleView, Snapshot, TrapAlert, TrapKind};
use crate::engine::Heartbeat;

fn spec(pattern: &str) -> RuleSpec {
    RuleSpec {
        kind: PatternKind::Regex,
        pattern: pattern.into(),
        host: None,
    }
}

fn rule(id: u64, pattern: &str) -> RuleView {
    RuleView {
        id,
        spec: spec(pattern),
        hits: 1,
        origin: "operator".into(),
    }
}

fn alert(id: u64) -> TrapAlert {
    TrapAlert {
        id,
        host: "cal.test".into(),
        kind: TrapKind::Counter,
        evidence_count: 5,
        last_seen: 0,
        samples: Vec::new(),
        suggested_rule: spec("/cal/"),
        matching_queued: 0,
        status: AlertStatus::Open,
        impact: None,
    }
}

fn alive(worker: &str) -> WorkerRow {
    WorkerRow {
        beat: Heartbeat {
            worker: worker.into(),
            version: "0.1.0".into(),
            pages: 0,
            pages_per_s: 0.0,
            hosts_held: 0,
            in_flight: 0,
            at_ms: 0,
            stale_after_ms: 30_000,
            records: String::new(),
            pid: 0,
            serving: false,
        },
        alive: true,
        last_beat_ms_ago: 0,
    }
}

/// w1 has rules a, b (#1, #2); w2 has b, a (#1, #2) and alert #1.
fn merger() -> Merger {
    let w1 = Snapshot {
        rules: vec![rule(1, "a"), rule(2, "b")],
        ..Snapshot::default()
    };
    let w2 = Snapshot {
        rules: vec![rule(1, "b"), rule(2, "a")],
        alerts: vec![alert(1)],
        ..Snapshot::default()
    };
    let mut merger = Merger::default();
    merger.merge(&ClusterRead {
        workers: vec![alive("w1"), alive("w2")],
        snapshots: vec![("w1".into(), w1), ("w2".into(), w2)],
        ..ClusterRead::default()
    });
    merger
}

#[test]
fn alerts_go_to_their_worker_and_rules_are_removed_by_pattern() {
    let merger = merger();
    let accept = Command::AcceptAlert {
        alert_id: 1,
        rule: None,
    };
    assert_eq!(
        route(&accept, &merger),
        Ok(Route::To(vec![("w2".into(), accept.clone())]))
    );
    // Merged rule #2 is "b" (w1's #2, w2's #1): removed by its pattern.
    let remove = route(&Command::RemoveRule { rule_id: 2 }, &merger).unwrap();
    assert_eq!(remove, Route::RemoveRule(spec("b")));
    assert!(route(&Command::RemoveRule { rule_id: 7 }, &merger)
        .unwrap_err()
        .contains("no rule #7"));
    assert!(route(&Command::DismissAlert { alert_id: 9 }, &merger)
        .unwrap_err()
        .contains("no alert #9"));
    let pause = Command::Pause(Target::Global);
    assert_eq!(route(&pause, &merger), Ok(Route::All(pause.clone())));
}

#[test]
fn answers_say_who_applied_refused_or_stayed_silent() {
    let ok = |w: &str, s: &str| (w.to_string(), Ok(s.to_string()));
    assert_eq!(
        word(
            "pause crawl",
            &[ok("w1", "paused"), ok("w2", "paused")],
            &[]
        ),
        Ok("paused (applied by w1, w2)".into())
    );
    let refused = word(
        "pause crawl",
        &[ok("w1", "paused"), ("w2".into(), Err("read-only".into()))],
        &["w3"],
    )
    .unwrap_err();
    assert_eq!(
        refused,
        "w2 refused: read-only; no answer within 5s from w3; applied by w1"
    );
    let differing = word(
        "preview x",
        &[ok("w1", "3 queued"), ok("w2", "4 queued")],
        &[],
    );
    assert_eq!(
        differing,
        Ok("w1: 3 queued\nw2: 4 queued\n(applied by w1, w2)".into())
    );
    let nobody = word("pause crawl", &[], &[]).unwrap_err();
    assert!(
        nobody.starts_with("pause crawl: no live worker"),
        "{nobody}"
    );
}
