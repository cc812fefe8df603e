use std::time::Duration;

use super::*;
use crate::engine::control::{PatternKind, RuleSpec};
use crate::engine::frontier::conformance::{entry, record};
use crate::engine::frontier::Frontier;
use crate::engine::rules::RuleSet;
use crate::engine::store::PageRecord;

/// 1500 queued URLs of a.test (every third under /cal/), 20 of b.test under /cal/,
/// 4 of a.test's parked, 5 fetched and 1 failed page of a.test's /cal/.
fn known_crawl() -> (tempfile::TempDir, Store, Frontier) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), 8 << 20).unwrap();
    let mut frontier = Frontier::open(&store).unwrap();
    let a = (0..1500).map(|i| match i % 3 {
        0 => entry("a.test", &format!("cal/{i}"), 1),
        _ => entry("a.test", &format!("page/{i}"), 1),
    });
    let b = (0..20).map(|i| entry("b.test", &format!("cal/{i}"), 1));
    frontier.push(a.chain(b).collect()).unwrap();
    let park: Vec<_> = (0..4)
        .map(|i| entry("a.test", &format!("trap/cal/{i}"), 1))
        .collect();
    frontier.park_new(7, park).unwrap();
    let mut pages: Vec<PageRecord> = (0..5)
        .map(|i| record(&entry("a.test", &format!("old/cal/{i}"), 1)))
        .collect();
    let mut failed = record(&entry("a.test", "old/cal/failed", 1));
    failed.outcome = PageOutcome::Error {
        kind: "timeout".into(),
        message: "timed out".into(),
    };
    pages.push(failed);
    store.record_pages(&pages).unwrap();
    (dir, store, frontier)
}

fn rule(kind: PatternKind, pattern: &str, host: Option<&str>) -> CompiledRule {
    RuleSet::compile(&RuleSpec {
        kind,
        pattern: pattern.into(),
        host: host.map(str::to_string),
    })
    .unwrap()
}

fn unbounded() -> PreviewBudget {
    PreviewBudget {
        time: Duration::from_secs(3600),
        rows: u64::MAX,
    }
}

#[test]
fn counts_queued_parked_and_fetched_matches_per_host() {
    let (_dir, store, mut frontier) = known_crawl();
    let found = preview(
        &mut frontier,
        &store,
        &rule(PatternKind::Regex, "/cal/", None),
        unbounded(),
    )
    .unwrap();
    assert!(!found.sampled);
    assert_eq!(found.scanned, 1520 + 4 + 6);
    let a = Counts {
        queued: 500,
        parked: 4,
        fetched: 5,
    };
    let b = Counts {
        queued: 20,
        parked: 0,
        fetched: 0,
    };
    assert_eq!(
        found.total,
        Counts {
            queued: 520,
            parked: 4,
            fetched: 5
        }
    );
    let hosts: Vec<_> = found
        .hosts
        .iter()
        .map(|(h, c, _)| (h.as_str(), *c))
        .collect();
    assert_eq!(hosts, [("a.test", a), ("b.test", b)], "most matches first");
    for (host, _, examples) in &found.hosts {
        assert_eq!(examples.len(), EXAMPLES, "{host}");
        assert!(examples.iter().all(|u| u.contains("/cal/")), "{examples:?}");
    }
    let lines = found.lines("regex /cal/");
    assert_eq!(
        lines[0],
        "regex /cal/ matches 520 queued, 4 parked, 5 fetched URL(s)"
    );
    assert_eq!(lines[1], "  a.test: 500 queued, 4 parked, 5 fetched");
}

#[test]
fn a_host_limited_glob_counts_only_that_host() {
    let (_dir, store, mut frontier) = known_crawl();
    let glob = rule(PatternKind::Glob, "http://*/cal/*", Some("b.test"));
    let found = preview(&mut frontier, &store, &glob, unbounded()).unwrap();
    assert_eq!(
        found.total,
        Counts {
            queued: 20,
            parked: 0,
            fetched: 0
        }
    );
    assert_eq!(found.hosts.len(), 1);
}

#[test]
fn a_pattern_matching_nothing_says_zero() {
    let (_dir, store, mut frontier) = known_crawl();
    let found = preview(
        &mut frontier,
        &store,
        &rule(PatternKind::Regex, "nowhere", None),
        unbounded(),
    )
    .unwrap();
    assert_eq!(found.total, Counts::default());
    assert!(found.hosts.is_empty() && !found.sampled);
    assert_eq!(
        found.lines("regex nowhere"),
        ["regex nowhere matches 0 queued, 0 parked, 0 fetched URL(s)"]
    );
}

#[test]
fn a_spent_budget_answers_with_a_marked_sample() {
    let (_dir, store, mut frontier) = known_crawl();
    let cal = rule(PatternKind::Regex, "/cal/", None);
    let by_rows = PreviewBudget {
        time: Duration::from_secs(3600),
        rows: 1,
    };
    let found = preview(&mut frontier, &store, &cal, by_rows).unwrap();
    assert!(found.sampled);
    assert_eq!(found.scanned, CHUNK as u64, "stops after the first chunk");
    assert!(found.total.queued > 0 && found.total.queued < 520);
    assert!(
        found.lines("regex /cal/")[0].contains("≥ "),
        "{:?}",
        found.lines("x")
    );

    let by_time = PreviewBudget {
        time: Duration::ZERO,
        rows: u64::MAX,
    };
    let found = preview(&mut frontier, &store, &cal, by_time).unwrap();
    assert!(found.sampled && found.scanned == 0, "{found:?}");
}

#[test]
fn a_catastrophic_regex_is_refused_or_runs_in_linear_time() {
    // Too big to compile: refused with a message, before any scan.
    let huge = RuleSet::compile(&RuleSpec {
        kind: PatternKind::Regex,
        pattern: "(?:a{1000}){1000}".into(),
        host: None,
    });
    assert!(huge.is_err());
    // A backtracking engine's classic: linear here, so the whole crawl is read.
    let (_dir, store, mut frontier) = known_crawl();
    let nested = rule(PatternKind::Regex, "^(a+)+$|(x*)*y", None);
    let found = preview(&mut frontier, &store, &nested, PreviewBudget::default()).unwrap();
    assert_eq!(found.total, Counts::default());
}

#[test]
fn a_preview_changes_nothing() {
    let (_dir, store, mut frontier) = known_crawl();
    let before = frontier.counts().unwrap();
    let cal = rule(PatternKind::Regex, "/cal/", None);
    preview(&mut frontier, &store, &cal, unbounded()).unwrap();
    assert_eq!(frontier.counts().unwrap(), before);
    assert_eq!(store.count_pages(), 6);
}
