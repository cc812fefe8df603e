//! A serving worker against a private redis-server: its heartbeat, its
//! answers on the command stream, its cursor left alone.

use std::time::{Duration, Instant};

use super::*;
use crate::cluster::redis_server::RedisServer;
use crate::cluster::status::{read_workers, WorkerRow};
use crate::engine::control::Target;

const CRAWL: &str = "served";

/// `worker`'s row once `ok` holds of it (bounded).
fn row_when(
    con: &mut redis::Connection,
    worker: &str,
    ok: impl Fn(&WorkerRow) -> bool,
) -> WorkerRow {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let rows = read_workers(con, CRAWL).unwrap();
        if let Some(row) = rows.into_iter().find(|r| r.beat.worker == worker && ok(r)) {
            return row;
        }
        assert!(Instant::now() < deadline, "{worker}'s heartbeat never came");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `worker`'s answer to `entry` (bounded).
fn answer_of(con: &mut redis::Connection, entry: &str, worker: &str) -> Answer {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let answers = commands::answers(con, CRAWL, entry).unwrap();
        if let Some((_, answer)) = answers.into_iter().find(|(w, _)| w == worker) {
            return answer;
        }
        assert!(Instant::now() < deadline, "{worker} never answered {entry}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_serving_worker_beats_refuses_commands_and_ends_on_stop() {
    let server = RedisServer::for_test();
    let mut con = server.connection();
    // As the crawl left it: 42 pages, a last heartbeat stale at once, and
    // its cursor on the last entry it applied.
    let last = Heartbeat {
        worker: "w1".into(),
        pages: 42,
        ..Heartbeat::default()
    };
    let beats = format!("{}beats", key_prefix(CRAWL));
    let _: () = redis::cmd("HSET")
        .arg(&beats)
        .arg("w1")
        .arg(serde_json::to_string(&last).unwrap())
        .query(&mut con)
        .unwrap();
    let applied = commands::publish(&mut con, CRAWL, &Command::Checkpoint, "t", None).unwrap();
    commands::record(&mut con, CRAWL, &applied, "w1", None).unwrap();
    // Sent after the crawl ended here, before serving began: answered too.
    let pause = Command::Pause(Target::Global);
    let missed = commands::publish(&mut con, CRAWL, &pause, "t", None).unwrap();

    let dir = tempfile::tempdir().unwrap();
    let mut serving = Serving::start(&server.target(CRAWL), "w1", dir.path()).unwrap();
    let row = row_when(&mut con, "w1", |r| r.alive && r.beat.serving);
    assert_eq!(row.beat.pages, 42);
    assert_eq!(row.beat.pid, std::process::id());
    assert_eq!(row.beat.records, records_at(dir.path()));

    let refused = answer_of(&mut con, &missed, "w1").unwrap_err();
    assert!(
        refused.contains("the crawl is over on this worker"),
        "{refused}"
    );
    assert!(refused.contains("--crawl served stop"), "{refused}");
    let elsewhere =
        commands::publish(&mut con, CRAWL, &Command::Checkpoint, "t", Some("w2")).unwrap();
    let stop = commands::publish(&mut con, CRAWL, &Command::Shutdown, "t", None).unwrap();
    assert_eq!(answer_of(&mut con, &stop, "w1"), Ok(STOPPED.to_string()));
    assert!(commands::answers(&mut con, CRAWL, &elsewhere)
        .unwrap()
        .is_empty());
    tokio::time::timeout(Duration::from_secs(10), serving.stop_asked())
        .await
        .expect("the stop reaches the worker");
    // Nothing was applied: a later start of the worker replays from here.
    assert_eq!(
        commands::cursor(&mut con, CRAWL, "w1").unwrap(),
        Some(applied)
    );

    drop(serving);
    let row = row_when(&mut con, "w1", |r| !r.alive);
    assert!(!row.beat.serving);
    assert_eq!(row.beat.pages, 42);
}
