//! Redis goes away mid-crawl (SIGKILL) and comes back (restarted on the same
//! port and append-only file): the workers pause and say why, start nothing
//! meanwhile, resume by themselves, and the crawl completes with every page
//! fetched once, except those in flight at the outage; both exit 0.

use crate::common;

use std::collections::{HashMap, HashSet};
use std::io::BufRead;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::cluster::{page_requests, worker_command, WORKER_LIMIT};
use common::{crawl, start_demo, test_config, Killed};
use crawldeck::cluster::redis_server::RedisServer;
use crawldeck::demo::SiteKind;
use tokio::time::Instant;

const SITES: [SiteKind; 3] = [SiteKind::Shop, SiteKind::DeepFinite, SiteKind::Params];
/// Longer than the lease TTL, so leases expire while Redis is down.
const OUTAGE: Duration = Duration::from_secs(4);

/// A headless worker; its stderr is collected line by line into `err`.
fn worker(redis: &RedisServer, dir: &Path, seeds: &[String]) -> (Killed, Arc<Mutex<String>>) {
    let mut child = worker_command(redis, "outage", dir, seeds, "40ms")
        .stderr(Stdio::piped())
        .spawn()
        .expect("crawldeck starts");
    let err = Arc::new(Mutex::new(String::new()));
    let pipe = child.stderr.take().expect("piped");
    let sink = Arc::clone(&err);
    // Ends with the process (its pipe closes).
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(pipe).lines().map_while(Result::ok) {
            let mut all = sink.lock().unwrap();
            all.push_str(&line);
            all.push('\n');
        }
    });
    (Killed(child), err)
}

/// Waits until `found` holds, checking every 20 ms, for at most `limit`.
async fn wait_for(limit: Duration, what: &str, mut found: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !found() {
        assert!(Instant::now() < deadline, "{what} within {limit:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `crawldeck status DIR --json`, parsed.
fn status(dir: &Path) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_crawldeck"))
        .arg("status")
        .arg(dir)
        .arg("--json")
        .output()
        .expect("status runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_pause_while_redis_is_down_and_finish_the_crawl_after_its_restart() {
    let reference: HashSet<_> = {
        let demo = start_demo(SITES.to_vec()).await;
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = test_config(&demo);
        // Workers of a shared crawl read no sitemaps.
        cfg.sitemaps.enabled = false;
        crawl(cfg, dir.path()).await;
        let pages = page_requests(&demo.log().records());
        demo.shutdown().await;
        pages.into_iter().collect()
    };
    let aof = tempfile::tempdir().unwrap();
    let mut redis = RedisServer::start_persistent(aof.path(), Duration::from_secs(300))
        .unwrap_or_else(|e| panic!("this test needs a local redis-server: {e}"));
    let demo = start_demo(SITES.to_vec()).await;
    let dirs: Vec<_> = (0..2).map(|_| tempfile::tempdir().unwrap()).collect();
    let seeds: Vec<String> = demo.seeds().iter().map(|u| u.to_string()).collect();
    let mut workers = vec![worker(&redis, dirs[0].path(), &seeds)];
    // The second joins once the first has shared the seeds.
    wait_for(Duration::from_secs(30), "the first worker fetches", || {
        !page_requests(&demo.log().records()).is_empty()
    })
    .await;
    workers.push(worker(&redis, dirs[1].path(), &[]));

    wait_for(
        Duration::from_secs(60),
        "the crawl gets a third done",
        || page_requests(&demo.log().records()).len() >= reference.len() / 3,
    )
    .await;
    redis.kill9().expect("redis-server killed");
    let killed_at = Instant::now();
    let url = redis.url();
    let reported = |err: &Arc<Mutex<String>>| {
        err.lock()
            .unwrap()
            .contains(&format!("waiting: Redis at {url}: "))
    };
    wait_for(
        Duration::from_secs(10),
        "both workers report the pause",
        || workers.iter().all(|(_, err)| reported(err)),
    )
    .await;
    for dir in &dirs {
        let why = status(dir.path())["paused_because"].to_string();
        assert!(
            why.contains("shared frontier unreachable: Redis at redis://127.0.0.1:")
                && why.contains("retrying in"),
            "{why}"
        );
    }
    tokio::time::sleep(OUTAGE.saturating_sub(killed_at.elapsed())).await;
    let restarted_at = Instant::now();
    redis.restart().expect("redis-server restarts on its port");

    for (mut child, err) in workers {
        let deadline = Instant::now() + WORKER_LIMIT;
        let status = loop {
            if let Some(status) = child.0.try_wait().unwrap() {
                break status;
            }
            assert!(Instant::now() < deadline, "a worker ran past the limit");
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        let err = err.lock().unwrap().clone();
        assert!(status.success(), "a worker failed ({status}): {err}");
    }
    let records = demo.log().records();
    demo.shutdown().await;
    for dir in &dirs {
        let log = std::fs::read_to_string(dir.path().join("crawldeck.log")).unwrap();
        assert!(
            log.contains("crawl paused: requests in flight finish")
                && log.contains("shared frontier answers again after"),
            "the log tells the pause and the resumption:\n{log}"
        );
    }

    // Nothing new starts while Redis is down (a dispatch may race the kill
    // by a moment; the first failed call pauses the worker).
    let grace = killed_at + Duration::from_millis(500);
    let during: Vec<_> = records
        .iter()
        .filter(|r| r.started > grace && r.started < restarted_at)
        .map(|r| &r.path_and_query)
        .collect();
    assert!(during.is_empty(), "requested during the outage: {during:?}");
    // Full coverage, each page once, except those in flight at the outage:
    // requested, or answered but not yet recorded in Redis (their lease may
    // expire and another worker take the URL before the held write is made).
    let all = page_requests(&records);
    let reached: HashSet<_> = all.iter().cloned().collect();
    let missing: Vec<_> = reference.difference(&reached).collect();
    assert!(missing.is_empty(), "never fetched: {missing:?}");
    let recorded_by = killed_at - Duration::from_secs(1);
    let in_flight_at_kill = records
        .iter()
        .filter(|r| r.started <= grace && r.finished.is_none_or(|f| f > recorded_by))
        .count();
    let mut counts: HashMap<&(SiteKind, String), usize> = HashMap::new();
    for r in &all {
        *counts.entry(r).or_default() += 1;
    }
    let again: Vec<_> = counts.iter().filter(|(_, n)| **n > 1).collect();
    assert!(
        again.len() <= in_flight_at_kill,
        "fetched twice: {again:?} ({in_flight_at_kill} in flight at the kill)"
    );
    println!(
        "pages {}, fetched again {}, in flight at the kill {in_flight_at_kill}",
        reached.len(),
        again.len()
    );
}
