//! A worker's rows through Redis: whole and in order, never more than
//! `QUEUED` chunks ahead of the reader, stopped when the reader goes away,
//! and a failure handed to the reader as its error.

use std::sync::mpsc;
use std::time::Duration;

use super::*;
use crate::cluster::redis_server::RedisServer;

fn connection(server: &RedisServer) -> redis::Connection {
    let client = redis::Client::open(server.url()).unwrap();
    let con = client
        .get_connection_with_timeout(Duration::from_secs(5))
        .unwrap();
    con.set_read_timeout(Some(ROW_WAIT + Duration::from_secs(2)))
        .unwrap();
    con
}

/// Streams `rows` onto `reply` on a thread; the receiver hears when it ends.
fn streaming(
    server: &RedisServer,
    reply: &str,
    rows: Vec<Result<String, String>>,
) -> mpsc::Receiver<()> {
    let (done, ended) = mpsc::channel();
    let (mut con, reply) = (connection(server), reply.to_string());
    std::thread::spawn(move || {
        stream(&mut con, &reply, Ok(Box::new(rows.into_iter()))).unwrap();
        let _ = done.send(());
    });
    ended
}

fn rows(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| format!("\"row {i:06} {}\"", "x".repeat(90)))
        .collect()
}

#[test]
fn a_long_read_arrives_whole_in_order_and_only_a_few_chunks_ahead() {
    let server = RedisServer::for_test();
    let sent = rows(10_000);
    let ended = streaming(
        &server,
        "reply:long",
        sent.iter().cloned().map(Ok).collect(),
    );
    let mut con = connection(&server);
    // Nobody reads yet: the worker stops at QUEUED chunks.
    let mut queued = 0;
    for _ in 0..100 {
        std::thread::sleep(Duration::from_millis(20));
        queued = redis::cmd("LLEN")
            .arg("reply:long")
            .query(&mut con)
            .unwrap();
    }
    assert_eq!(queued, QUEUED);
    assert!(ended.try_recv().is_err(), "the worker waits for its reader");
    let got: Vec<String> = reply(con, "reply:long".into(), "w1")
        .map(Result::unwrap)
        .collect();
    assert_eq!(got, sent);
    ended.recv_timeout(Duration::from_secs(10)).unwrap();
}

#[test]
fn a_reader_that_goes_away_stops_the_worker() {
    let server = RedisServer::for_test();
    let ended = streaming(
        &server,
        "reply:left",
        rows(10_000).into_iter().map(Ok).collect(),
    );
    let mut reply = reply(connection(&server), "reply:left".into(), "w1");
    assert!(reply.next().unwrap().is_ok());
    drop(reply);
    ended
        .recv_timeout(Duration::from_secs(10))
        .expect("the worker stops at its next chunk");
}

#[test]
fn a_failed_read_is_the_readers_error_after_the_rows_before_it() {
    let server = RedisServer::for_test();
    let rows = vec![Ok("1".to_string()), Err("the store is gone".to_string())];
    let ended = streaming(&server, "reply:failed", rows);
    let mut reply = reply(connection(&server), "reply:failed".into(), "w1");
    assert_eq!(reply.next(), Some(Ok("1".into())));
    assert_eq!(
        reply.next(),
        Some(Err("worker w1: the store is gone".into()))
    );
    assert_eq!(reply.next(), None);
    ended.recv_timeout(Duration::from_secs(10)).unwrap();
}

#[test]
fn a_gone_workers_directory_is_read_only_where_it_holds_that_worker() {
    let dir = tempfile::tempdir().unwrap();
    let records = format!("elsewhere:{}", dir.path().display());
    assert_eq!(own_dir(&records, "w1"), None, "no worker there");
    std::fs::write(dir.path().join("cluster-worker"), "w1\n").unwrap();
    assert_eq!(own_dir(&records, "w1"), Some(dir.path().to_path_buf()));
    assert_eq!(own_dir(&records, "w2"), None, "another worker's");
    assert_eq!(own_dir("", "w1"), None);
}
