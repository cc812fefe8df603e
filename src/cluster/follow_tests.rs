//! The follower against a private redis-server and a fake engine that
//! answers every command with its label.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::*;
use crate::cluster::redis_server::RedisServer;
use crate::engine::control::{PatternKind, RuleSpec, Target};
use crate::engine::telemetry::{RuleView, TrapAlert};
use crate::engine::EngineHandle;

const CRAWL: &str = "follow";

fn rule(pattern: &str) -> RuleSpec {
    RuleSpec {
        kind: PatternKind::Regex,
        pattern: pattern.into(),
        host: None,
    }
}

/// A fake engine behind a hub: records the commands it gets, answers each,
/// and shows `alerts` in its snapshot. Dropping the returned sender stops it.
fn fake_engine(
    alerts: Vec<TrapAlert>,
    rules: Vec<RuleView>,
) -> (
    Hub,
    Arc<Mutex<Vec<Command>>>,
    tokio::sync::oneshot::Sender<()>,
) {
    let (handle, mut ends) = EngineHandle::channel();
    let got = Arc::new(Mutex::new(Vec::new()));
    let seen = got.clone();
    ends.snapshots.send_replace(Arc::new(Snapshot {
        alerts,
        rules,
        ..Snapshot::default()
    }));
    let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = &mut stopped => break,
                Some((id, command)) = ends.commands.recv() => {
                    let outcome = Ok(format!("did {}", command.label()));
                    seen.lock().unwrap().push(command);
                    let _ = ends.events.send(EngineEvent::CommandDone(CommandResult { id, outcome })).await;
                }
            }
        }
        // Dropping the ends closes the hub's events: the follower stops.
    });
    (Hub::new(handle), got, stop)
}

/// A stream id as a pair that orders like the stream.
fn order(id: &str) -> (u64, u64) {
    let (ms, seq) = id.split_once('-').unwrap_or((id, "0"));
    (ms.parse().unwrap(), seq.parse().unwrap())
}

/// Waits (bounded) until `worker`'s cursor reaches `entry` (or passes it).
async fn cursor_at(con: &mut redis::Connection, worker: &str, entry: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let at = commands::cursor(con, CRAWL, worker).unwrap();
        if at.is_some_and(|at| order(&at) >= order(entry)) {
            return;
        }
        assert!(Instant::now() < deadline, "{worker} never reached {entry}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// An entry with an explicit (old) id, as if sent long before the worker started.
fn old_entry(con: &mut redis::Connection, id: &str, command: &Command) {
    let _: String = redis::cmd("XADD")
        .arg(commands::stream_key(CRAWL))
        .arg(id)
        .arg("cmd")
        .arg(serde_json::to_string(command).unwrap())
        .arg("from")
        .arg("ctl on old pid 1")
        .query(con)
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_joining_worker_replays_state_and_answers_live_commands_once() {
    let server = RedisServer::for_test();
    let mut con = server.connection();
    old_entry(&mut con, "1000-1", &Command::AddRule(rule("old")));
    old_entry(&mut con, "1000-2", &Command::Shutdown);
    let (hub, got, stop) = fake_engine(Vec::new(), Vec::new());
    start(&hub, &server.target(CRAWL), "w1".into(), false).unwrap();
    let pause = Command::Pause(Target::Global);
    let live = commands::publish(&mut con, CRAWL, &pause, "ctl on here pid 2", None).unwrap();
    let other = commands::publish(&mut con, CRAWL, &Command::Checkpoint, "t", Some("w2")).unwrap();
    cursor_at(&mut con, "w1", &other).await;
    // The old rule is replayed, the old stop is not; w2's checkpoint is not w1's.
    assert_eq!(
        *got.lock().unwrap(),
        [Command::AddRule(rule("old")), pause.clone()]
    );
    assert_eq!(
        commands::answers(&mut con, CRAWL, &live).unwrap(),
        [("w1".to_string(), Ok("did pause crawl".to_string()))]
    );
    assert!(commands::answers(&mut con, CRAWL, "1000-2")
        .unwrap()
        .is_empty());

    // Restarted with the same name: nothing is applied twice.
    drop(stop);
    let (hub, got, _stop) = fake_engine(Vec::new(), Vec::new());
    // The old follower notices within one blocking read.
    tokio::time::sleep(BLOCK + Duration::from_millis(200)).await;
    start(&hub, &server.target(CRAWL), "w1".into(), false).unwrap();
    let next = commands::publish(&mut con, CRAWL, &Command::Checkpoint, "t", None).unwrap();
    cursor_at(&mut con, "w1", &next).await;
    assert_eq!(*got.lock().unwrap(), [Command::Checkpoint]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shared_rule_is_removed_by_its_pattern_under_this_workers_number() {
    let server = RedisServer::for_test();
    let mut con = server.connection();
    let view = RuleView {
        id: 7,
        spec: rule("cal/"),
        hits: 0,
        origin: "operator".into(),
    };
    let (hub, got, _stop) = fake_engine(Vec::new(), vec![view]);
    start(&hub, &server.target(CRAWL), "w1".into(), false).unwrap();
    let by_pattern = commands::publish_remove_rule(&mut con, CRAWL, &rule("cal/"), "t").unwrap();
    let by_number = commands::publish(
        &mut con,
        CRAWL,
        &Command::RemoveRule { rule_id: 7 },
        "t",
        None,
    )
    .unwrap();
    cursor_at(&mut con, "w1", &by_number).await;
    assert_eq!(*got.lock().unwrap(), [Command::RemoveRule { rule_id: 7 }]);
    assert_eq!(
        commands::answers(&mut con, CRAWL, &by_pattern).unwrap(),
        [("w1".to_string(), Ok("did remove rule #7".to_string()))]
    );
    let refused = commands::answers(&mut con, CRAWL, &by_number).unwrap();
    assert!(
        matches!(&refused[0].1, Err(why) if why.contains("rule numbers differ between workers")),
        "{refused:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_started_paused_crawls_once_replayed_unless_the_crawl_is_paused() {
    let server = RedisServer::for_test();
    let mut con = server.connection();
    old_entry(&mut con, "1000-1", &Command::AddRule(rule("old")));
    let (hub, got, _stop) = fake_engine(Vec::new(), Vec::new());
    start(&hub, &server.target(CRAWL), "w1".into(), true).unwrap();
    cursor_at(&mut con, "w1", "1000-1").await;
    let resumed = [
        Command::AddRule(rule("old")),
        Command::Resume(Target::Global),
    ];
    let deadline = Instant::now() + Duration::from_secs(10);
    while got.lock().unwrap().len() < 2 {
        assert!(Instant::now() < deadline, "never resumed");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(*got.lock().unwrap(), resumed);

    // The operator paused the crawl: a worker that joins stays paused.
    old_entry(&mut con, "1000-2", &Command::Pause(Target::Global));
    old_entry(&mut con, "1000-3", &Command::AddRule(rule("later")));
    let (hub, got, _stop) = fake_engine(Vec::new(), Vec::new());
    start(&hub, &server.target(CRAWL), "w2".into(), true).unwrap();
    cursor_at(&mut con, "w2", "1000-3").await;
    let last = commands::publish(&mut con, CRAWL, &Command::Checkpoint, "t", None).unwrap();
    cursor_at(&mut con, "w2", &last).await;
    assert_eq!(
        *got.lock().unwrap(),
        [
            Command::AddRule(rule("old")),
            Command::Pause(Target::Global),
            Command::AddRule(rule("later")),
            Command::Checkpoint
        ]
    );
}
