//! The TUI over a shared crawl, in a real pseudo-terminal: `attach --redis`
//! on two worker processes shows both in the workers pane, pauses and
//! resumes both through the command stream, and shows their pages summed;
//! `demo --cluster 2` starts its redis-server and two workers, shows them,
//! and leaves no process behind after `q`, nor after `kill -9`. Every
//! process is bounded in time and stopped by pid.

use crate::common;

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::cluster::{worker_command, WORKER_LIMIT};
use common::term::{inspect_a_parked_urls_found_on_page, Term, WAIT};
use common::Killed;
use crawldeck::cluster::redis_server::RedisServer;
use crawldeck::demo::SiteKind;

fn wait_until(what: &str, limit: Duration, pred: impl Fn() -> bool) {
    let deadline = Instant::now() + limit;
    while !pred() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A headless worker of the shared crawl `name`, JSON lines on its stdout.
fn worker(redis: &RedisServer, name: &str, dir: &Path, seeds: &[String]) -> Killed {
    let child = worker_command(redis, name, dir, seeds, "20ms")
        .arg("--json")
        .stdout(Stdio::piped())
        .spawn()
        .expect("crawldeck starts");
    Killed(child)
}

/// Waits for a worker's end (killing it past the limit) and returns the
/// pages its final summary counts.
fn summary_pages(mut worker: Killed) -> u64 {
    let deadline = Instant::now() + WORKER_LIMIT;
    while worker.0.try_wait().unwrap().is_none() {
        assert!(
            Instant::now() < deadline,
            "a worker ran past {WORKER_LIMIT:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut out = String::new();
    worker
        .0
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    let last = out.lines().last().expect("a summary line");
    let value: serde_json::Value = serde_json::from_str(last).unwrap();
    value["summary"]["pages"].as_u64().expect("summary.pages")
}

/// `n` as the TUI writes counts: 12,345.
fn with_commas(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn heartbeats(redis: &RedisServer, crawl: &str) -> usize {
    let answer = redis
        .command(&format!("HLEN crawldeck:{{{crawl}}}:beats"))
        .unwrap_or_default();
    answer.trim_start_matches(':').parse().unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attach_redis_shows_both_workers_steers_both_and_sums_their_pages() {
    let redis = RedisServer::for_test();
    let sites = vec![
        SiteKind::Shop,
        SiteKind::DeepFinite,
        SiteKind::Params,
        SiteKind::Dupes,
    ];
    let demo = common::start_demo(sites).await;
    let seeds: Vec<String> = demo.seeds().iter().map(|u| u.to_string()).collect();
    let dir = tempfile::tempdir().unwrap();
    let dirs = [dir.path().join("w1"), dir.path().join("w2")];
    let workers = [
        worker(&redis, "tui", &dirs[0], &seeds),
        worker(&redis, "tui", &dirs[1], &seeds),
    ];
    tokio::task::spawn_blocking(move || {
        wait_until("both heartbeats", WAIT, || heartbeats(&redis, "tui") == 2);
        let url = redis.url();
        let mut term = Term::spawn(&["attach", "--redis", &url, "--crawl", "tui"], 40, 150);
        term.wait_for("the cluster view", |s| s.contains("6 Workers"));
        term.press(b"6");
        term.wait_for("both workers alive", |s| s.contains("2 alive of 2"));
        let names: Vec<String> = dirs
            .iter()
            .map(|d| std::fs::read_to_string(d.join("cluster-worker")).unwrap())
            .collect();
        let screen = term.text();
        for name in &names {
            assert!(screen.contains(name.trim()), "{name} missing:\n{screen}");
        }
        // A command goes to every worker; the answer names who applied it.
        let applied_by_both =
            |s: &str| s.contains("applied by") && names.iter().all(|n| s.contains(n.trim()));
        term.press(b"p");
        term.wait_for("the pause applied by both workers", |s| {
            applied_by_both(s) && s.contains("PAUSED")
        });
        term.press(b"p");
        term.wait_for("the resume applied by both workers", |s| {
            applied_by_both(s) && s.contains("RUNNING")
        });
        let [w1, w2] = workers;
        let total = summary_pages(w1) + summary_pages(w2);
        assert!(total > 100, "the workers crawled the sites ({total} pages)");
        let shown = format!("pages {} ", with_commas(total));
        term.wait_for("the summed pages of the finished crawl", |s| {
            s.contains(&shown) && s.contains("DONE")
        });
        // The crawl is over: q leaves at once.
        term.press(b"q");
        assert!(term.wait_exit("q").success());
        drop(redis);
    })
    .await
    .unwrap();
    demo.shutdown().await;
}

/// The pids the demo logged for its redis-server and its workers.
fn logged_pids(log: &str) -> (u32, Vec<u32>) {
    let line = log
        .lines()
        .find(|l| l.contains("demo cluster started"))
        .expect("the demo logs its processes");
    let after = |marker: &str| &line[line.find(marker).expect(marker) + marker.len()..];
    let redis = after("redis_pid=Some(").split(')').next().unwrap();
    let workers = after("worker_pids=[").split(']').next().unwrap();
    (
        redis.parse().unwrap(),
        workers.split(", ").map(|p| p.parse().unwrap()).collect(),
    )
}

fn running(pid: u32) -> bool {
    // A zombie still has /proc/PID; its state is Z.
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

/// `demo --cluster 2` in a terminal, once both workers are alive; the pids
/// of its redis-server and workers, all running.
fn demo_cluster(data: &Path) -> (Term, Vec<u32>) {
    let mut term = Term::spawn(
        &["demo", "--cluster", "2", "--data", data.to_str().unwrap()],
        40,
        150,
    );
    term.wait_for("the cluster view", |s| s.contains("6 Workers"));
    term.press(b"6");
    term.wait_for("two workers alive", |s| s.contains("2 alive of 2"));
    let log = std::fs::read_to_string(data.join("crawldeck.log")).unwrap();
    let (redis_pid, worker_pids) = logged_pids(&log);
    assert_eq!(worker_pids.len(), 2, "{log}");
    let pids: Vec<u32> = worker_pids.into_iter().chain([redis_pid]).collect();
    for pid in &pids {
        assert!(running(*pid), "process {pid} runs during the demo");
    }
    (term, pids)
}

#[test]
fn demo_cluster_shows_its_workers_and_leaves_no_process_behind() {
    let dir = tempfile::tempdir().unwrap();
    let (mut term, pids) = demo_cluster(&dir.path().join("demo"));
    term.press(b"q");
    term.wait_for("the quit question", |s| s.contains("quit?"));
    term.press(b"y");
    assert!(term.wait_exit("q then y").success());
    for pid in &pids {
        assert!(!running(*pid), "process {pid} outlived the demo");
    }
}

#[test]
fn a_killed_demo_cluster_takes_its_processes_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let (mut term, pids) = demo_cluster(&dir.path().join("demo"));
    let demo = term.child.process_id().expect("a pid");
    let killed = Command::new("kill")
        .args(["-9", &demo.to_string()])
        .status();
    assert!(killed.unwrap().success());
    let _ = term.wait_exit("kill -9");
    // The workers checkpoint on their SIGTERM; the server stops at once.
    wait_until("the demo's processes to stop", WAIT, || {
        pids.iter().all(|pid| !running(*pid))
    });
}

#[test]
fn the_cluster_quarantine_lists_parked_urls_and_inspects_a_workers_page() {
    let dir = tempfile::tempdir().unwrap();
    let (mut term, _pids) = demo_cluster(&dir.path().join("demo"));
    // The parked URLs come from Redis, the found-on page from a worker.
    inspect_a_parked_urls_found_on_page(&mut term);
    term.press(b"q");
    term.wait_for("the quit question", |s| s.contains("quit?"));
    term.press(b"y");
    assert!(term.wait_exit("q then y").success());
}
