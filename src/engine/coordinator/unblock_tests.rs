use super::*;
use crate::engine::control::{PatternKind, RuleSpec};
use crate::engine::coordinator::{closed_port_config, for_test};
use crate::engine::store::FilteredUrl;
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
                && done.outcome.as_deref().is_ok_and(|a| a.ends_with("before the crawl stopped")))
    });
    assert!(answered);
}
