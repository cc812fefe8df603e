use super::*;
use crate::engine::control::{PatternKind, RuleSpec};
use crate::engine::coordinator::{closed_port_config, for_test};
use crate::engine::store::{FilterReason, FilteredUrl};
use crate::engine::telemetry::EngineEvent;

/// Links a rule with no host kept out: more than a few chunks' worth.
const KEPT_OUT: usize = 3 * CHUNK + 17;

#[tokio::test]
async fn a_removal_walks_the_store_off_the_loop_and_returns_its_urls_a_chunk_per_turn() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (mut handle, mut c) = for_test(closed_port_config(), dir.path());
    let spec = RuleSpec {
        kind: PatternKind::Regex,
        pattern: "/kept-out/".into(),
        host: None,
    };
    let (rule_id, _) = c.add_rule(spec, "operator".into()).expect("rule added");
    let filtered: Vec<FilteredUrl> = (0..KEPT_OUT)
        .map(|n| FilteredUrl {
            url: format!("http://127.0.0.{}:9/kept-out/{n}", 1 + n % 3),
            host: format!("127.0.0.{}:9", 1 + n % 3),
            depth: 1,
            reason: FilterReason::Rule(rule_id),
            found_at_unix_ms: 0,
        })
        .collect();
    c.store.record_filtered(&filtered).expect("recorded");
    let queued_before = c.frontier.counts().expect("counts").queued;

    c.remove_rule(CommandId(7), rule_id)
        .expect("removal starts");
    assert_eq!(
        c.frontier.counts().expect("counts").queued,
        queued_before,
        "the command returns before any URL is queued: the walk is off the loop"
    );
    assert!(!c.returns.is_idle(), "the crawl does not end meanwhile");
    let mut turns = 0;
    while !c.returns.is_idle() {
        let walked = c.returns.recv().await.expect("the walk reports");
        if let Walked::Urls { urls, .. } = &walked {
            assert!(urls.len() <= CHUNK, "one turn queues at most a chunk");
            turns += 1;
        }
        c.apply_walked(walked);
    }
    assert!(turns >= 4, "{turns} turns");
    assert_eq!(
        c.frontier.counts().expect("counts").queued,
        queued_before + KEPT_OUT as u64
    );
    loop {
        match handle.events.try_recv().expect("an answer was sent") {
            EngineEvent::CommandDone(done) => {
                assert_eq!(done.id, CommandId(7));
                let answer = done.outcome.expect("removed");
                assert!(
                    answer.ends_with(&format!(
                        ": {KEPT_OUT} blocked URL(s) returned to the queue"
                    )),
                    "{answer}"
                );
                break;
            }
            _ => continue,
        }
    }
}

#[tokio::test]
async fn a_crawl_that_ends_during_a_removal_answers_it_and_stops_the_walk() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (mut handle, mut c) = for_test(closed_port_config(), dir.path());
    let spec = RuleSpec {
        kind: PatternKind::Regex,
        pattern: "/x/".into(),
        host: None,
    };
    let (rule_id, _) = c.add_rule(spec, "operator".into()).expect("rule added");
    c.remove_rule(CommandId(3), rule_id)
        .expect("removal starts");
    c.end_removals();
    assert!(c.returns.is_idle());
    assert!(c.returns.tx.is_closed(), "the walk sees the crawl is gone");
    let answered = std::iter::from_fn(|| handle.events.try_recv().ok()).any(|e| {
        matches!(e, EngineEvent::CommandDone(done)
            if done.id == CommandId(3)
                && done.outcome.as_deref().is_ok_and(|a| a.contains("before the crawl stopped")))
    });
    assert!(answered);
}

/// URLs a rule for every host blocked in the frontier, over two hosts.
const QUEUED: usize = 2 * 300;

/// A coordinator in `dir` where rule #id (for every host) blocked `QUEUED`
/// queued URLs and kept out `KEPT_OUT` links; returns it and the rule's id
/// and the frontier's queued count before the rule.
async fn blocked_by_a_rule(
    dir: &std::path::Path,
) -> (crate::engine::EngineHandle, Coordinator, u64, u64) {
    use crate::engine::control::Command;
    use crate::engine::frontier::conformance::entry as queued_entry;
    let (handle, mut c) = for_test(closed_port_config(), dir);
    let urls = ["127.0.0.2:9", "127.0.0.3:9"]
        .iter()
        .flat_map(|h| (0..QUEUED / 2).map(move |i| queued_entry(h, &format!("cal/{i}"), 1)));
    c.frontier.push(urls.collect()).expect("queued");
    let queued_before = c.frontier.counts().expect("counts").queued;
    let spec = RuleSpec {
        kind: PatternKind::Regex,
        pattern: "/cal/".into(),
        host: None,
    };
    let added = super::super::commands::handle(&mut c, CommandId(1), Command::AddRule(spec));
    assert_eq!(added, None, "a rule for every host sweeps");
    while !c.sweeps.is_idle() {
        c.sweep_step();
    }
    let rule_id = c.rules.views().last().expect("added").id;
    let filtered: Vec<FilteredUrl> = (0..KEPT_OUT)
        .map(|n| FilteredUrl {
            url: format!("http://127.0.0.4:9/cal/{n}"),
            host: "127.0.0.4:9".into(),
            depth: 1,
            reason: FilterReason::Rule(rule_id),
            found_at_unix_ms: 0,
        })
        .collect();
    c.store.record_filtered(&filtered).expect("recorded");
    let counts = c.frontier.counts().expect("counts");
    assert_eq!(counts.queued, queued_before - QUEUED as u64);
    (handle, c, rule_id, queued_before)
}

/// Applies the walks' chunks until every removal is answered.
async fn run_removals(c: &mut Coordinator) {
    while !c.returns.is_idle() {
        let walked = c.returns.recv().await.expect("the walk reports");
        c.apply_walked(walked);
    }
}

/// The log line that ends a resumed removal.
fn resumed_answer(handle: &mut crate::engine::EngineHandle) -> String {
    std::iter::from_fn(|| handle.events.try_recv().ok())
        .find_map(|e| match e {
            EngineEvent::Log { message, .. } if message.contains("returned to the queue") => {
                Some(message)
            }
            _ => None,
        })
        .expect("the resumed removal is logged")
}

#[tokio::test]
async fn a_removal_killed_after_a_chunk_resumes_on_restart_and_returns_each_url_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_handle, mut c, rule_id, queued_before) = blocked_by_a_rule(dir.path()).await;
    c.remove_rule(CommandId(2), rule_id)
        .expect("removal starts");
    let first = c.returns.recv().await.expect("a chunk");
    assert!(matches!(first, Walked::Urls { .. }), "{first:?}");
    c.apply_walked(first);
    let after_one = c.frontier.counts().expect("counts").queued;
    assert_eq!(after_one, queued_before - QUEUED as u64 + CHUNK as u64);
    // Killed: nothing more is applied, nothing is answered.
    drop(c);

    let (mut handle, mut c) = for_test(closed_port_config(), dir.path());
    assert!(!c.returns.is_idle(), "the removal resumes at boot");
    run_removals(&mut c).await;
    let counts = c.frontier.counts().expect("counts");
    assert_eq!(
        counts.queued,
        queued_before + KEPT_OUT as u64,
        "every blocked URL and kept-out link is queued once"
    );
    let answer = resumed_answer(&mut handle);
    let total = QUEUED + KEPT_OUT;
    assert!(
        answer.ends_with(&format!(": {total} blocked URL(s) returned to the queue")),
        "{answer}"
    );
    assert!(c.rules.views().is_empty(), "the rule stays removed");
    drop(c);
    let (_handle, c) = for_test(closed_port_config(), dir.path());
    assert!(
        c.returns.is_idle(),
        "a finished removal is not resumed again"
    );
}

#[tokio::test]
async fn a_chunk_killed_while_being_queued_is_not_queued_twice_on_restart() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_handle, mut c, rule_id, queued_before) = blocked_by_a_rule(dir.path()).await;
    c.remove_rule(CommandId(2), rule_id)
        .expect("removal starts");
    let (phase, urls) = loop {
        match c.returns.recv().await.expect("a chunk") {
            Walked::Urls {
                found: Found::Blocked,
                phase,
                urls,
                ..
            } => break (phase, urls),
            walked => c.apply_walked(walked),
        }
    };
    // The chunk is recorded and queued, then the process dies before its
    // progress is written.
    let mut op = c.journal.unblock(rule_id).cloned().expect("recorded");
    op.in_flight = Some(urls.clone());
    op.position = crate::engine::coordinator::journal::WalkPosition {
        phase,
        after: urls.last().map(|(url, _, _)| url.clone()),
    };
    c.journal.put_unblock(rule_id, op).expect("stored");
    assert_eq!(
        c.requeue(Found::Blocked, urls).expect("queued"),
        CHUNK as u64
    );
    drop(c);

    let (mut handle, mut c) = for_test(closed_port_config(), dir.path());
    run_removals(&mut c).await;
    assert_eq!(
        c.frontier.counts().expect("counts").queued,
        queued_before + KEPT_OUT as u64
    );
    let answer = resumed_answer(&mut handle);
    assert!(
        answer.ends_with(&format!(
            ": {} blocked URL(s) returned to the queue",
            QUEUED + KEPT_OUT
        )),
        "{answer}"
    );
}
