//! Worker processes of a shared crawl (the real binary) on a test
//! redis-server: started, joined and bounded in time.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crawldeck::cluster::redis_server::RedisServer;
use crawldeck::demo::{DemoWeb, RequestRecord, SiteKind};
use crawldeck::engine::store::{Store, Tree};
use crawldeck::engine::telemetry::TrapAlert;
use tokio::time::Instant;

use super::Killed;

/// How long a worker holds a host without renewing its lease.
pub const LEASE_TTL: Duration = Duration::from_secs(2);
/// No worker may run longer than this.
pub const WORKER_LIMIT: Duration = Duration::from_secs(150);

/// The command line of a headless worker of the shared crawl `name`
/// (seeds: the first one), `delay` between two requests to a host, stdout
/// and stderr discarded until the caller pipes one of them. It exits when
/// the crawl is over.
pub fn worker_command(
    redis: &RedisServer,
    name: &str,
    dir: &Path,
    seeds: &[String],
    delay: &str,
) -> Command {
    let mut command = serving_worker_command(redis, name, dir, seeds, delay);
    command.arg("--exit-when-done");
    command
}

/// [`worker_command`] of a worker that stays, once the crawl is over, to
/// serve its records until it is stopped.
pub fn serving_worker_command(
    redis: &RedisServer,
    name: &str,
    dir: &Path,
    seeds: &[String],
    delay: &str,
) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_crawldeck"));
    command
        .args([
            "crawl",
            "--headless",
            "--delay",
            delay,
            "--delay-factor",
            "0",
        ])
        .args(["--redis", &redis.url(), "--crawl", name])
        .arg("--lease-ttl")
        .arg(format!("{}s", LEASE_TTL.as_secs()))
        .arg("--data")
        .arg(dir)
        .args(seeds)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
}

/// A headless worker of the shared crawl `name` (seeds: the first one),
/// its stderr piped, with `args` added to its command line.
pub fn worker_with(
    redis: &RedisServer,
    name: &str,
    dir: &Path,
    seeds: &[String],
    args: &[&str],
) -> Killed {
    let child = worker_command(redis, name, dir, seeds, "20ms")
        .args(args)
        .stderr(Stdio::piped())
        .spawn()
        .expect("crawldeck starts");
    Killed(child)
}

/// The site's pages requested: not robots.txt, and not soft-404 probes, whose
/// random paths differ between crawls (each worker probes on its own).
pub fn page_requests(records: &[RequestRecord]) -> Vec<(SiteKind, String)> {
    records
        .iter()
        .filter(|r| r.path_and_query != "/robots.txt")
        .filter(|r| !r.path_and_query.starts_with("/crawldeck-probe-"))
        .map(|r| (r.site, r.path_and_query.clone()))
        .collect()
}

/// A connection to the test's Redis.
pub fn shared(redis: &RedisServer) -> redis::Connection {
    redis::Client::open(redis.url())
        .unwrap()
        .get_connection_with_timeout(Duration::from_secs(5))
        .expect("the test's redis-server answers")
}

/// Starts the first worker with the seeds, waits until they are shared,
/// then starts the other two, which join without seeds.
pub async fn start_three(
    redis: &RedisServer,
    name: &str,
    demo: &DemoWeb,
    dirs: &[tempfile::TempDir],
) -> Vec<Killed> {
    start_three_with(redis, name, demo, dirs, &[]).await
}

/// [`start_three`], each worker with `args` on its command line.
pub async fn start_three_with(
    redis: &RedisServer,
    name: &str,
    demo: &DemoWeb,
    dirs: &[tempfile::TempDir],
    args: &[&str],
) -> Vec<Killed> {
    let seeds: Vec<String> = demo.seeds().iter().map(|u| u.to_string()).collect();
    let mut workers = vec![worker_with(redis, name, dirs[0].path(), &seeds, args)];
    let mut con = shared(redis);
    let key = format!("crawldeck:{{{name}}}:seeds");
    let deadline = Instant::now() + Duration::from_secs(30);
    while redis::cmd("SCARD")
        .arg(&key)
        .query::<usize>(&mut con)
        .unwrap()
        < seeds.len()
    {
        assert!(
            Instant::now() < deadline,
            "the first worker never shared its seeds"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for dir in &dirs[1..] {
        workers.push(worker_with(redis, name, dir.path(), &[], args));
    }
    workers
}

/// Waits for a worker to exit and returns its stderr; kills it (by pid,
/// through the guard) if it outlives the limit.
pub async fn finish(mut worker: Killed) -> String {
    let deadline = Instant::now() + WORKER_LIMIT;
    loop {
        if let Some(status) = worker.0.try_wait().unwrap() {
            let mut err = String::new();
            if let Some(mut pipe) = worker.0.stderr.take() {
                use std::io::Read;
                let _ = pipe.read_to_string(&mut err);
            }
            assert!(status.success(), "a worker failed ({status}): {err}");
            return err;
        }
        assert!(
            Instant::now() < deadline,
            "a worker ran past {WORKER_LIMIT:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The trap alerts a worker stored (its store reopened after it ended).
pub fn stored_alerts(dir: &Path) -> Vec<TrapAlert> {
    let store = Store::open(dir, 8 * 1024 * 1024).expect("the worker's store reopens");
    store
        .scan::<TrapAlert>(Tree::Alerts)
        .expect("alerts readable")
        .into_iter()
        .map(|(_, alert)| alert)
        .collect()
}

/// The name a worker keeps in its data directory.
pub fn worker_name(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("cluster-worker"))
        .expect("a worker names itself in its data directory")
        .trim()
        .to_string()
}

/// `crawldeck ctl --redis … --crawl CRAWL WORDS…`, off the test's runtime.
pub async fn run_ctl(redis: &RedisServer, crawl: &str, words: Vec<String>) -> std::process::Output {
    let (url, crawl) = (redis.url(), crawl.to_string());
    tokio::task::spawn_blocking(move || ctl(&url, &crawl, &words))
        .await
        .unwrap()
}

fn ctl(redis_url: &str, crawl: &str, words: &[String]) -> std::process::Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_crawldeck"))
        .args(["ctl", "--redis", redis_url, "--crawl", crawl])
        .args(words)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ctl starts");
    // ctl waits at most 5 s for answers; kill it by pid if it hangs.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().expect("ctl output")
}
