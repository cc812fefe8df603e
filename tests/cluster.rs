//! One crawl, three worker processes (the real binary), one Redis: every
//! page is fetched once, never two requests at a time to one host across
//! the workers (from the demo server's log), and a worker killed with
//! SIGKILL has its hosts taken over once its leases expire.

use crate::common;

use std::collections::{HashMap, HashSet};
use std::process::Command;
use std::time::Duration;

use common::cluster::{finish, page_requests, shared, start_three, LEASE_TTL};
use common::{crawl, pages, start_demo, test_config};
use crawldeck::cluster::redis_server::RedisServer;
use crawldeck::demo::{DemoWeb, SiteKind};
use crawldeck::engine::store::{PageOutcome, PageRecord};
use tokio::time::Instant;

const SITES: [SiteKind; 4] = [
    SiteKind::Shop,
    SiteKind::DeepFinite,
    SiteKind::Params,
    SiteKind::Dupes,
];

/// The pages one uninterrupted single-process crawl of the sites requests.
async fn reference_requests() -> HashSet<(SiteKind, String)> {
    let demo = start_demo(SITES.to_vec()).await;
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = test_config(&demo);
    // Workers of a shared crawl read no sitemaps.
    cfg.sitemaps.enabled = false;
    crawl(cfg, dir.path()).await;
    let reference = page_requests(&demo.log().records()).into_iter().collect();
    demo.shutdown().await;
    reference
}

/// How many URLs the workers recorded, each in one worker's store only.
fn recorded_once(records: &[Vec<PageRecord>]) -> usize {
    let mut by_url: HashMap<&str, usize> = HashMap::new();
    for r in records.iter().flatten() {
        *by_url.entry(r.url.as_str()).or_default() += 1;
    }
    let twice: Vec<_> = by_url.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "recorded by two workers: {twice:?}");
    by_url.len()
}

/// Pages requested more than once.
fn repeated(all: &[(SiteKind, String)]) -> Vec<((SiteKind, String), usize)> {
    let mut counts: HashMap<(SiteKind, String), usize> = HashMap::new();
    for r in all {
        *counts.entry(r.clone()).or_default() += 1;
    }
    counts.into_iter().filter(|(_, n)| *n > 1).collect()
}

fn assert_one_request_per_host(demo: &DemoWeb) {
    for site in SITES {
        assert_eq!(
            demo.log().max_in_flight(site),
            1,
            "{site:?} had two requests in flight at once"
        );
        // The workers share robots.txt answers through Redis: one fetch per host.
        let robots = demo
            .log()
            .for_site(site)
            .iter()
            .filter(|r| r.path_and_query == "/robots.txt")
            .count();
        assert_eq!(robots, 1, "{site:?}: robots.txt fetched {robots} times");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_workers_crawl_everything_once_and_one_request_per_host_at_a_time() {
    let reference = reference_requests().await;
    let redis = RedisServer::for_test();
    let demo = start_demo(SITES.to_vec()).await;
    let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let before = redis_calls(&redis);
    let workers = start_three(&redis, "three", &demo, &dirs).await;
    for w in workers {
        finish(w).await;
    }
    let (scripts, commands) = redis_calls(&redis);
    let (scripts, commands) = (scripts - before.0, commands - before.1);
    let status = cluster_status(&redis, "three");
    let log = demo.log().records();
    let all = page_requests(&log);
    assert_one_request_per_host(&demo);
    demo.shutdown().await;

    let reached: HashSet<_> = all.iter().cloned().collect();
    let missing: Vec<_> = reference.difference(&reached).collect();
    assert!(missing.is_empty(), "never fetched: {missing:?}");
    assert_eq!(repeated(&all), [], "fetched twice");
    // Each URL has one record, in one worker's store, and every page
    // requested has one. A worker may also record URLs it never requested
    // (its soft-404 probe, a URL parked after its claim, a connection that
    // failed before the server saw it): those are not-crawled or error records.
    let records: Vec<_> = dirs.iter().map(|d| pages(d.path())).collect();
    let per_worker: Vec<usize> = records.iter().map(Vec::len).collect();
    let recorded = recorded_once(&records);
    let requested: HashSet<(String, String)> = log
        .iter()
        .filter(|r| r.path_and_query != "/robots.txt")
        .map(|r| (r.host_header.clone(), r.path_and_query.clone()))
        .collect();
    let as_request = |p: &PageRecord| {
        let url = url::Url::parse(&p.url).expect("a recorded URL parses");
        let query = url.query().map(|q| format!("?{q}")).unwrap_or_default();
        (p.host.clone(), format!("{}{query}", url.path()))
    };
    let keys: HashSet<_> = records.iter().flatten().map(as_request).collect();
    let unrecorded: Vec<_> = requested.difference(&keys).collect();
    assert!(
        unrecorded.is_empty(),
        "requested, never recorded: {unrecorded:?}"
    );
    let unrequested: Vec<_> = records
        .iter()
        .flatten()
        .filter(|p| !requested.contains(&as_request(p)))
        .map(|p| (&p.url, &p.outcome))
        .collect();
    println!("pages per worker: {per_worker:?}, not requested: {unrequested:?}");
    assert!(
        unrequested.iter().all(|(_, outcome)| matches!(
            outcome,
            PageOutcome::NotCrawled { .. } | PageOutcome::Error { .. }
        )),
        "recorded as answered but never requested: {unrequested:?}"
    );
    assert!(
        per_worker.iter().filter(|&&n| n > 0).count() >= 2,
        "the work was shared: {per_worker:?}"
    );
    // The status of the crawl, from Redis alone: done, three workers gone.
    assert_eq!(
        (status["queued"].as_u64(), status["in_flight"].as_u64()),
        (Some(0), Some(0)),
        "{status}"
    );
    assert!(
        status["seen"].as_u64().unwrap() >= reached.len() as u64,
        "{status}"
    );
    let beats = status["workers"].as_array().unwrap();
    assert_eq!(beats.len(), 3, "{status}");
    let pages_beaten: u64 = beats.iter().map(|w| w["pages"].as_u64().unwrap()).sum();
    assert_eq!(pages_beaten, recorded as u64, "{status}");
    assert!(beats.iter().all(|w| w["alive"] == false), "{status}");
    // A worker's directory is not resumed by mistake as a crawl of its own.
    let alone = Command::new(env!("CARGO_BIN_EXE_crawldeck"))
        .args(["crawl", "--headless", "--data"])
        .arg(dirs[1].path())
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&alone.stderr);
    assert!(!alone.status.success(), "{err}");
    assert!(
        err.contains("--redis redis://127.0.0.1:") && err.contains("--crawl three"),
        "{err}"
    );
    // Round trips stay batched: a handful of scripts per page, not one per
    // URL seen. Idle workers' polling is counted too and grows with the
    // machine's load (9-12 seen), hence the margin.
    let pages = reached.len() as f64;
    println!(
        "Redis per page: {:.1} script calls, {:.1} commands in all (scripts' own included)",
        scripts as f64 / pages,
        commands as f64 / pages
    );
    assert!(
        scripts as f64 / pages < 20.0,
        "{scripts} script calls for {pages} pages"
    );
}

/// `crawldeck status --redis … --crawl NAME --json`, parsed.
fn cluster_status(redis: &RedisServer, name: &str) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_crawldeck"))
        .args(["status", "--json", "--redis", &redis.url(), "--crawl", name])
        .output()
        .expect("status runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

/// `(script calls, all commands)` the server has run so far, from INFO commandstats.
fn redis_calls(redis: &RedisServer) -> (u64, u64) {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(&mut shared(redis))
        .unwrap();
    let mut scripts = 0;
    let mut all = 0;
    for line in info.lines() {
        let Some((name, stats)) = line
            .strip_prefix("cmdstat_")
            .and_then(|l| l.split_once(':'))
        else {
            continue;
        };
        let calls: u64 = stats
            .split(',')
            .find_map(|kv| kv.strip_prefix("calls="))
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        all += calls;
        if name == "evalsha" || name == "eval" {
            scripts += calls;
        }
    }
    (scripts, all)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_workers_hosts_are_taken_over_and_the_crawl_completes() {
    let reference = reference_requests().await;
    let redis = RedisServer::for_test();
    let demo = start_demo(SITES.to_vec()).await;
    let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let mut workers = start_three(&redis, "killed", &demo, &dirs).await;

    // Mid-crawl, kill a worker that holds a host.
    let mut con = shared(&redis);
    let deadline = Instant::now() + Duration::from_secs(60);
    let (victim, held) = loop {
        assert!(
            Instant::now() < deadline,
            "no worker ever held a host mid-crawl"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
        if page_requests(&demo.log().records()).len() < reference.len() / 3 {
            continue;
        }
        let held: HashMap<String, String> = redis::cmd("HGETALL")
            .arg("crawldeck:{killed}:held")
            .query(&mut con)
            .unwrap();
        let found = dirs.iter().enumerate().find_map(|(i, d)| {
            let id = std::fs::read_to_string(d.path().join("cluster-worker")).ok()?;
            let hosts: Vec<String> = held
                .iter()
                .filter(|(_, w)| **w == id.trim())
                .map(|(h, _)| h.clone())
                .collect();
            (!hosts.is_empty()).then_some((i, hosts))
        });
        if let Some(found) = found {
            break found;
        }
    };
    let killed_at = Instant::now();
    let mut dead = workers.remove(victim);
    dead.0.kill().expect("SIGKILL");
    dead.0.wait().unwrap();
    for w in workers {
        finish(w).await;
    }
    let records = demo.log().records();
    let all = page_requests(&records);
    assert_one_request_per_host(&demo);
    demo.shutdown().await;

    let reached: HashSet<_> = all.iter().cloned().collect();
    let missing: Vec<_> = reference.difference(&reached).collect();
    assert!(
        missing.is_empty(),
        "lost with the killed worker: {missing:?}"
    );
    // Only what the dead worker had in flight (one URL per host it held).
    let again = repeated(&all);
    assert!(
        again.len() <= held.len(),
        "fetched again: {again:?}, held {held:?}"
    );
    for host in &held {
        let after: Vec<Instant> = records
            .iter()
            .filter(|r| &r.host_header == host && r.started > killed_at)
            .map(|r| r.started)
            .collect();
        let Some(first) = after.iter().min() else {
            continue; // Its queue was empty: nothing to take over.
        };
        let waited = *first - killed_at;
        // The lease runs out, then the next reaper pass (a third of it) requeues.
        assert!(
            waited <= LEASE_TTL + LEASE_TTL / 3 + Duration::from_secs(1),
            "{host} waited {waited:?} after the kill"
        );
    }
}
