use super::*;
use crate::engine::config::{CrawlConfig, TrapPolicy};
use crate::engine::control::{Command, PatternKind, RuleSpec};
use crate::engine::coordinator::{commands, for_test};
use crate::engine::frontier::conformance::{entry, record};
use crate::engine::telemetry::{EngineEvent, TrapKind};
use crate::engine::traps::Detection;
use crate::engine::EngineHandle;

const HOST: &str = "127.0.0.1:9";
/// Parked or queued URLs: several steps' worth.
const URLS: usize = 1000;

/// A coordinator whose frontier holds only `URLS` calendar URLs, parked by
/// an open alert (its id is returned).
fn parked_alert(dir: &std::path::Path) -> (EngineHandle, Coordinator, u64) {
    let (handle, mut c) = for_test(quarantine_config(), dir);
    c.frontier.drop_host(HOST, &record).expect("seed removed");
    let urls = (0..URLS).map(|i| entry(HOST, &format!("cal/{i}"), 1));
    c.frontier.push(urls.collect()).expect("queued");
    c.raise_alert(Detection {
        host: HOST.into(),
        kind: TrapKind::Counter,
        evidence_count: 10,
        samples: vec![format!("http://{HOST}/cal/1")],
        rule: RuleSpec {
            kind: PatternKind::Regex,
            pattern: r"^https?://127\.0\.0\.1:9/cal/\d+$".into(),
            host: Some(HOST.into()),
        },
    });
    let counts = c.frontier.counts().expect("counts");
    assert_eq!((counts.queued, counts.parked), (0, URLS as u64));
    let id = c.alerts.views().pop().expect("raised").id;
    (handle, c, id)
}

/// Settings that park what an alert's rule matches.
fn quarantine_config() -> CrawlConfig {
    let mut cfg = CrawlConfig {
        seeds: vec![format!("http://{HOST}/")],
        ..CrawlConfig::default()
    };
    cfg.traps.policy = TrapPolicy::Quarantine;
    cfg
}

/// Runs the sweeps to their end as the loop would, one step per turn, and
/// checks that no turn moves more than a step; returns the turns taken.
fn run_sweeps(c: &mut Coordinator) -> usize {
    let mut turns = 0;
    while !c.sweeps.is_idle() {
        let before = c.frontier.counts().expect("counts");
        c.sweep_step();
        let after = c.frontier.counts().expect("counts");
        let moved = before.queued.abs_diff(after.queued) + before.parked.abs_diff(after.parked);
        assert!(moved <= 2 * STEP as u64, "one turn moved {moved} URLs");
        turns += 1;
        assert!(turns < 100, "the sweep never ends");
    }
    turns
}

fn answer(handle: &mut EngineHandle, id: u64) -> Result<String, String> {
    std::iter::from_fn(|| handle.events.try_recv().ok())
        .find_map(|e| match e {
            EngineEvent::CommandDone(done) if done.id.0 == id => Some(done.outcome),
            _ => None,
        })
        .expect("answered")
}

#[tokio::test]
async fn accepting_an_alert_blocks_its_parked_urls_over_several_turns_and_the_crawl_waits() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (mut handle, mut c, alert) = parked_alert(dir.path());
    let command = Command::AcceptAlert {
        alert_id: alert,
        rule: None,
    };
    assert_eq!(commands::handle(&mut c, CommandId(1), command), None);
    assert_eq!(c.finished(), None, "the crawl waits for the sweep");
    let again = Command::DismissAlert { alert_id: alert };
    let refused = commands::handle(&mut c, CommandId(2), again);
    assert!(
        matches!(&refused, Some(Err(e)) if e.contains("being decided")),
        "{refused:?}"
    );
    assert!(run_sweeps(&mut c) >= URLS / STEP);
    let text = answer(&mut handle, 1).expect("accepted");
    assert!(text.contains(&format!("{URLS} URL(s) blocked")), "{text}");
    assert_eq!(c.frontier.counts().expect("counts").parked, 0);
    assert_eq!(
        c.alerts.get(alert).expect("kept").status,
        AlertStatus::Accepted
    );
    assert_eq!(c.stats.counters().blocked_by_rules, URLS as u64);
    assert_eq!(c.finished().as_deref(), Some("frontier empty"));
}

#[tokio::test]
async fn dismissing_an_alert_returns_its_parked_urls_over_several_turns() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (mut handle, mut c, alert) = parked_alert(dir.path());
    let command = Command::DismissAlert { alert_id: alert };
    assert_eq!(commands::handle(&mut c, CommandId(1), command), None);
    assert_eq!(c.finished(), None, "the crawl waits for the sweep");
    assert!(run_sweeps(&mut c) >= URLS / STEP);
    let text = answer(&mut handle, 1).expect("dismissed");
    assert!(text.contains(&format!("{URLS} URL(s) back")), "{text}");
    let counts = c.frontier.counts().expect("counts");
    assert_eq!((counts.queued, counts.parked), (URLS as u64, 0));
    assert_eq!(
        c.alerts.get(alert).expect("kept").status,
        AlertStatus::Dismissed
    );
}

#[tokio::test]
async fn a_rule_for_every_host_blocks_queued_urls_over_several_turns() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (mut handle, mut c, _) = parked_alert(dir.path());
    let queued = ["127.0.0.2:9", "127.0.0.3:9"].iter().flat_map(|h| {
        (0..URLS).map(move |i| entry(h, &format!("{}/{i}", ["cal", "page"][i % 2]), 1))
    });
    c.frontier.push(queued.collect()).expect("queued");
    let rule = RuleSpec {
        kind: PatternKind::Regex,
        pattern: "/cal/".into(),
        host: None,
    };
    assert_eq!(
        commands::handle(&mut c, CommandId(1), Command::AddRule(rule)),
        None
    );
    assert!(run_sweeps(&mut c) >= 2 * URLS / STEP);
    let text = answer(&mut handle, 1).expect("added");
    assert!(
        text.contains(&format!("{URLS} queued URL(s) blocked")),
        "{text}"
    );
    let counts = c.frontier.counts().expect("counts");
    assert_eq!((counts.queued, counts.parked), (URLS as u64, URLS as u64));
}

#[tokio::test]
async fn removing_a_rule_during_its_sweep_stops_it_and_returns_what_it_blocked() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (mut handle, mut c) =
        for_test(crate::engine::coordinator::closed_port_config(), dir.path());
    let queued = ["127.0.0.2:9", "127.0.0.3:9"]
        .iter()
        .flat_map(|h| (0..URLS).map(move |i| entry(h, &format!("cal/{i}"), 1)));
    c.frontier.push(queued.collect()).expect("queued");
    let total = c.frontier.counts().expect("counts").queued;
    let rule = RuleSpec {
        kind: PatternKind::Regex,
        pattern: "/cal/".into(),
        host: None,
    };
    assert_eq!(
        commands::handle(&mut c, CommandId(1), Command::AddRule(rule)),
        None
    );
    c.sweep_step();
    let blocked = total - c.frontier.counts().expect("counts").queued;
    assert!(blocked > 0 && blocked <= STEP as u64, "{blocked}");
    let rule_id = c.rules.views().last().expect("added").id;
    c.remove_rule(CommandId(2), rule_id)
        .expect("removal starts");
    run_sweeps(&mut c);
    while !c.returns.is_idle() {
        let walked = c.returns.recv().await.expect("the walk reports");
        c.apply_walked(walked);
    }
    let text = answer(&mut handle, 2).expect("removed");
    assert!(
        text.contains(&format!("{blocked} blocked URL(s) returned")),
        "{text}"
    );
    assert_eq!(c.frontier.counts().expect("counts").queued, total);
}

/// The log line a resumed sweep ends with (it has no command to answer).
fn logged(handle: &mut EngineHandle, part: &str) -> String {
    std::iter::from_fn(|| handle.events.try_recv().ok())
        .find_map(|e| match e {
            EngineEvent::Log { message, .. } if message.contains(part) => Some(message),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no log line with {part:?}"))
}

/// URLs recorded as blocked by rule `rule_id`.
fn blocked_records(c: &Coordinator, rule_id: u64) -> usize {
    let mut n = 0;
    c.store
        .for_each_page(|p| {
            n += usize::from(
                matches!(p.outcome, PageOutcome::Blocked { rule_id: id, .. } if id == rule_id),
            );
        })
        .expect("pages read");
    n
}

#[tokio::test]
async fn an_accept_killed_after_a_step_resumes_on_restart_without_a_second_rule() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_handle, mut c, alert) = parked_alert(dir.path());
    let accept = Command::AcceptAlert {
        alert_id: alert,
        rule: None,
    };
    assert_eq!(commands::handle(&mut c, CommandId(1), accept), None);
    c.sweep_step();
    assert_eq!(
        c.frontier.counts().expect("counts").parked,
        (URLS - STEP) as u64
    );
    drop(c);

    let (mut handle, mut c) = for_test(quarantine_config(), dir.path());
    assert!(!c.sweeps.is_idle(), "the sweep resumes at boot");
    let again = Command::AcceptAlert {
        alert_id: alert,
        rule: None,
    };
    let refused = commands::handle(&mut c, CommandId(2), again);
    assert!(
        matches!(&refused, Some(Err(e)) if e.contains("being decided")),
        "{refused:?}"
    );
    run_sweeps(&mut c);
    let text = logged(&mut handle, "accepted");
    assert!(text.ends_with(&format!("{URLS} URL(s) blocked")), "{text}");
    assert_eq!(c.frontier.counts().expect("counts").parked, 0);
    assert_eq!(
        c.alerts.get(alert).expect("kept").status,
        AlertStatus::Accepted
    );
    let rules = c.rules.views();
    assert_eq!(rules.len(), 1, "{rules:?}");
    assert_eq!(blocked_records(&c, rules[0].id), URLS);
}

#[tokio::test]
async fn an_accept_killed_before_its_sweep_was_recorded_reuses_its_rule_when_done_again() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_handle, mut c, alert) = parked_alert(dir.path());
    let accept = || Command::AcceptAlert {
        alert_id: alert,
        rule: None,
    };
    assert_eq!(commands::handle(&mut c, CommandId(1), accept()), None);
    // Killed between storing the rule and recording the sweep.
    c.journal.end_sweep(0).expect("stored");
    drop(c);

    let (mut handle, mut c) = for_test(quarantine_config(), dir.path());
    assert!(c.sweeps.is_idle());
    assert_eq!(c.alerts.get(alert).expect("kept").status, AlertStatus::Open);
    assert_eq!(commands::handle(&mut c, CommandId(2), accept()), None);
    run_sweeps(&mut c);
    let text = answer(&mut handle, 2).expect("accepted");
    assert!(text.ends_with(&format!("{URLS} URL(s) blocked")), "{text}");
    let rules = c.rules.views();
    assert_eq!(rules.len(), 1, "no second identical rule: {rules:?}");
    assert_eq!(blocked_records(&c, rules[0].id), URLS);
}

#[tokio::test]
async fn a_dismissal_killed_after_a_step_resumes_on_restart_and_returns_each_url_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_handle, mut c, alert) = parked_alert(dir.path());
    let dismiss = Command::DismissAlert { alert_id: alert };
    assert_eq!(commands::handle(&mut c, CommandId(1), dismiss), None);
    c.sweep_step();
    drop(c);

    let (mut handle, mut c) = for_test(quarantine_config(), dir.path());
    run_sweeps(&mut c);
    let text = logged(&mut handle, "dismissed");
    assert!(text.contains(&format!("{URLS} URL(s) back")), "{text}");
    let counts = c.frontier.counts().expect("counts");
    assert_eq!((counts.queued, counts.parked), (URLS as u64, 0));
    assert_eq!(
        c.alerts.get(alert).expect("kept").status,
        AlertStatus::Dismissed
    );
}

#[tokio::test]
async fn a_rule_for_every_host_killed_during_its_sweep_resumes_from_its_cursor() {
    let dir = tempfile::tempdir().expect("temp dir");
    let cfg = crate::engine::coordinator::closed_port_config;
    let (_handle, mut c) = for_test(cfg(), dir.path());
    let queued = ["127.0.0.2:9", "127.0.0.3:9"].iter().flat_map(|h| {
        (0..URLS).map(move |i| entry(h, &format!("{}/{i}", ["cal", "page"][i % 2]), 1))
    });
    c.frontier.push(queued.collect()).expect("queued");
    let total = c.frontier.counts().expect("counts").queued;
    let rule = RuleSpec {
        kind: PatternKind::Regex,
        pattern: "/cal/".into(),
        host: None,
    };
    assert_eq!(
        commands::handle(&mut c, CommandId(1), Command::AddRule(rule)),
        None
    );
    c.sweep_step();
    drop(c);

    let (mut handle, mut c) = for_test(cfg(), dir.path());
    run_sweeps(&mut c);
    let text = logged(&mut handle, "queued URL(s) blocked");
    assert!(
        text.ends_with(&format!("{URLS} queued URL(s) blocked")),
        "{text}"
    );
    assert_eq!(
        c.frontier.counts().expect("counts").queued,
        total - URLS as u64
    );
    let rule_id = c.rules.views()[0].id;
    assert_eq!(blocked_records(&c, rule_id), URLS);
}
