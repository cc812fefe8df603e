use std::time::Duration;

use super::*;
use crate::engine::control::{Command, PatternKind};
use crate::engine::coordinator::{closed_port_config, for_test};
use crate::engine::frontier::conformance::entry;
use crate::engine::telemetry::EngineEvent;
use crate::engine::EngineHandle;

/// Queued URLs of the test frontier; every third is under /cal/.
const QUEUED: usize = 30_000;

fn unbounded() -> PreviewBudget {
    PreviewBudget {
        time: Duration::from_secs(3600),
        rows: u64::MAX,
    }
}

fn cal() -> RuleSpec {
    RuleSpec {
        kind: PatternKind::Regex,
        pattern: "/cal/".into(),
        host: None,
    }
}

/// The answers sent so far, by command id.
fn answers(handle: &mut EngineHandle) -> Vec<(u64, Result<String, String>)> {
    std::iter::from_fn(|| handle.events.try_recv().ok())
        .filter_map(|e| match e {
            EngineEvent::CommandDone(done) => Some((done.id.0, done.outcome)),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_preview_runs_off_the_loop_which_keeps_handling_commands_meanwhile() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (mut handle, mut c) = for_test(closed_port_config(), dir.path());
    let queued: Vec<_> = (0..QUEUED)
        .map(|i| match i % 3 {
            0 => entry("127.0.0.2:9", &format!("cal/{i}"), 1),
            _ => entry("127.0.0.2:9", &format!("page/{i}"), 1),
        })
        .collect();
    c.frontier.push(queued).expect("queued");
    let before = c.frontier.counts().expect("counts").queued;

    assert_eq!(
        c.request_preview(CommandId(1), cal(), unbounded()),
        None,
        "the preview is answered later, from its own thread"
    );
    // The loop goes on while the scan runs: a command changes the frontier.
    let seed = super::super::commands::handle(
        &mut c,
        CommandId(2),
        Command::AddSeed("http://127.0.0.3:9/".into()),
    );
    assert!(matches!(seed, Some(Ok(_))), "{seed:?}");
    assert_eq!(c.frontier.counts().expect("counts").queued, before + 1);
    // Requests made meanwhile wait; the newest replaces a waiting one.
    assert_eq!(c.request_preview(CommandId(3), cal(), unbounded()), None);
    assert_eq!(c.request_preview(CommandId(4), cal(), unbounded()), None);
    let superseded = answers(&mut handle);
    assert!(
        matches!(&superseded[..], [(3, Err(e))] if e.contains("superseded")),
        "{superseded:?}"
    );

    let mut finished = 0;
    while c.previews.running.is_some() {
        let done = c.previews.recv().await.expect("the preview answers");
        c.finish_preview(done);
        finished += 1;
    }
    assert_eq!(finished, 2, "the waiting preview ran after the first");
    let done = answers(&mut handle);
    let ids: Vec<u64> = done.iter().map(|(id, _)| *id).collect();
    assert_eq!(ids, [1, 4]);
    for (id, answer) in done {
        let text = answer.expect("previewed");
        assert!(
            text.contains(&format!("matches {} queued", QUEUED / 3)) && !text.contains("sampled"),
            "preview {id}: {text}"
        );
    }
}

#[tokio::test]
async fn a_preview_thread_stops_at_its_budget_and_says_sampled() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (mut handle, mut c) = for_test(closed_port_config(), dir.path());
    let queued: Vec<_> = (0..2000)
        .map(|i| entry("127.0.0.2:9", &format!("cal/{i}"), 1))
        .collect();
    c.frontier.push(queued).expect("queued");
    let budget = PreviewBudget {
        time: Duration::from_secs(3600),
        rows: 600,
    };
    assert_eq!(c.request_preview(CommandId(1), cal(), budget), None);
    let done = c.previews.recv().await.expect("the preview answers");
    c.finish_preview(done);
    let done = answers(&mut handle);
    let [(1, Ok(text))] = &done[..] else {
        panic!("{done:?}");
    };
    assert!(text.contains("sampled: stopped after"), "{text}");
}

#[tokio::test]
async fn an_invalid_pattern_is_refused_at_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_handle, mut c) = for_test(closed_port_config(), dir.path());
    let spec = RuleSpec {
        kind: PatternKind::Regex,
        pattern: "(".into(),
        host: None,
    };
    let answer = c.request_preview(CommandId(1), spec, unbounded());
    assert!(matches!(answer, Some(Err(_))), "{answer:?}");
    assert!(c.previews.running.is_none());
}

#[tokio::test]
async fn a_preview_on_the_redis_frontier_runs_off_the_loop_through_its_own_connection() {
    let server = crate::cluster::redis_server::RedisServer::for_test();
    let dir = tempfile::tempdir().expect("temp dir");
    let (mut handle, ends) = crate::engine::EngineHandle::channel();
    let options = crate::engine::EngineOptions {
        cluster: Some(crate::engine::frontier::ClusterTarget {
            url: server.redis_url(),
            crawl: "preview".into(),
            lease_ttl: Duration::from_secs(30),
            host_affinity: crate::engine::DEFAULT_HOST_AFFINITY,
        }),
        ..Default::default()
    };
    let mut c = super::super::boot::build(closed_port_config(), dir.path(), ends, options)
        .expect("coordinator builds on Redis");
    let queued: Vec<_> = (0..3000)
        .map(|i| match i % 3 {
            0 => entry("127.0.0.2:9", &format!("cal/{i}"), 1),
            _ => entry("127.0.0.2:9", &format!("page/{i}"), 1),
        })
        .collect();
    c.frontier.push(queued).expect("queued");
    let before = c.frontier.counts().expect("counts").queued;

    assert_eq!(
        c.request_preview(CommandId(1), cal(), unbounded()),
        None,
        "the preview is answered later, from its own thread"
    );
    // The thread reads through a connection of its own; the loop keeps the
    // frontier's and goes on meanwhile.
    let seed = super::super::commands::handle(
        &mut c,
        CommandId(2),
        Command::AddSeed("http://127.0.0.3:9/".into()),
    );
    assert!(matches!(seed, Some(Ok(_))), "{seed:?}");
    assert_eq!(c.frontier.counts().expect("counts").queued, before + 1);

    let done = c.previews.recv().await.expect("the preview answers");
    c.finish_preview(done);
    let done = answers(&mut handle);
    let [(1, Ok(text))] = &done[..] else {
        panic!("{done:?}");
    };
    assert!(
        text.contains("matches 1000 queued") && !text.contains("sampled"),
        "{text}"
    );
}
