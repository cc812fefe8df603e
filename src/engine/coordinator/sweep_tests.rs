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
    let mut cfg = CrawlConfig {
        seeds: vec![format!("http://{HOST}/")],
        ..CrawlConfig::default()
    };
    cfg.traps.policy = TrapPolicy::Quarantine;
    let (handle, mut c) = for_test(cfg, dir);
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
