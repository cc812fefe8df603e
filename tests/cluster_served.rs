//! A shared crawl's workers stay, once the crawl is over, to serve their
//! records: three worker processes on the demo web finish the crawl and go
//! on answering `pages --redis` through Redis (no data directory read),
//! refuse commands that would crawl, and end on SIGTERM or `ctl stop`.

use crate::common;

use std::collections::BTreeSet;
use std::process::Stdio;
use std::time::Duration;

use common::cluster::{
    finish, page_requests, run_ctl, serving_worker_command, shared, worker_name,
};
use common::{start_demo, Killed};
use crawldeck::cluster::redis_server::RedisServer;
use crawldeck::cluster::status::read_workers;
use crawldeck::demo::SiteKind;
use tokio::time::Instant;

const CRAWL: &str = "served";

fn redis_args(redis: &RedisServer, verb: &str, more: &[&str]) -> Vec<String> {
    let mut args = vec![verb.to_string(), "--redis".into(), redis.url()];
    args.extend(["--crawl".into(), CRAWL.into()]);
    args.extend(more.iter().map(|s| s.to_string()));
    args
}

/// `crawldeck ARGS` off the test's runtime: its stdout and stderr.
async fn run(args: Vec<String>) -> (String, String) {
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = common::run_binary(&args);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{args:?} failed: {err}");
        (String::from_utf8(out.stdout).unwrap(), err)
    })
    .await
    .unwrap()
}

/// The URLs of `pages … --json` output.
fn urls(json_lines: &str) -> BTreeSet<String> {
    json_lines
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .map(|row| row["url"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_shared_crawl_is_listed_through_its_serving_workers_until_stopped() {
    let redis = RedisServer::for_test();
    let demo = start_demo(vec![SiteKind::Shop, SiteKind::DeepFinite]).await;
    let seeds: Vec<String> = demo.seeds().iter().map(|u| u.to_string()).collect();
    let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let mut workers: Vec<Killed> = dirs
        .iter()
        .map(|d| {
            let mut command = serving_worker_command(&redis, CRAWL, d.path(), &seeds, "20ms");
            let child = command.stderr(Stdio::piped()).spawn();
            Killed(child.expect("crawldeck starts"))
        })
        .collect();

    // The crawl ends; every worker stays, serving.
    let mut con = shared(&redis);
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let rows = read_workers(&mut con, CRAWL).unwrap();
        if rows.len() == 3 && rows.iter().all(|r| r.alive && r.beat.serving) {
            break;
        }
        for w in &mut workers {
            assert!(w.0.try_wait().unwrap().is_none(), "a worker exited");
        }
        assert!(
            Instant::now() < deadline,
            "the workers never served: {rows:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let requested: BTreeSet<String> = page_requests(&demo.log().records())
        .into_iter()
        .map(|(site, path)| demo.base_url(site).join(&path).unwrap().to_string())
        .collect();
    assert!(requested.len() > 20, "{} pages requested", requested.len());

    // Listed through Redis from every worker, as their own listings together.
    let (listing, said) = run(redis_args(&redis, "pages", &["--json"])).await;
    for dir in &dirs {
        let through = format!("{} through Redis", worker_name(dir.path()));
        assert!(said.contains(&through), "{said}");
    }
    assert!(!said.contains("(gone)"), "{said}");
    let merged = urls(&listing);
    let mut each = BTreeSet::new();
    for dir in &dirs {
        let data = dir.path().to_str().unwrap().to_string();
        each.extend(urls(
            &run(vec!["pages".into(), data, "--json".into()]).await.0,
        ));
    }
    assert_eq!(merged, each);
    let unlisted: Vec<_> = requested.difference(&merged).collect();
    assert!(unlisted.is_empty(), "requested, not listed: {unlisted:?}");
    // One page, inspected from whichever worker fetched it.
    let shop = demo.base_url(SiteKind::Shop).to_string();
    let (page, _) = run(redis_args(&redis, "page", &[&shop, "--json"])).await;
    let page: serde_json::Value = serde_json::from_str(&page).unwrap();
    assert_eq!(
        (page["url"].as_str(), page["status"].as_u64()),
        (Some(&*shop), Some(200))
    );
    let (status, _) = run(redis_args(&redis, "status", &[])).await;
    assert_eq!(status.matches(" serving ").count(), 3, "{status}");

    // A command that would crawl is refused with the way on.
    let paused = run_ctl(&redis, CRAWL, vec!["pause".into()]).await;
    let out = String::from_utf8_lossy(&paused.stdout);
    assert_eq!(paused.status.code(), Some(1), "{out}");
    assert_eq!(
        out.matches("the crawl is over on this worker").count(),
        3,
        "{out}"
    );
    assert!(out.contains("--crawl served stop"), "{out}");

    // SIGTERM ends one, quietly (there is no crawl left to stop); `ctl
    // stop` the others.
    let mut workers = workers.into_iter();
    let first = workers.next().unwrap();
    let pid = rustix::process::Pid::from_raw(first.0.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let err = finish(first).await;
    assert!(!err.contains("finishing requests in flight"), "{err}");
    let stopped = run_ctl(&redis, CRAWL, vec!["stop".into()]).await;
    let out = String::from_utf8_lossy(&stopped.stdout);
    assert!(stopped.status.success(), "{out}");
    assert_eq!(
        out.matches("stopped serving its records").count(),
        2,
        "{out}"
    );
    for w in workers {
        let err = finish(w).await;
        assert!(err.contains("this worker serves its records"), "{err}");
    }
    let rows = read_workers(&mut con, CRAWL).unwrap();
    assert!(rows.iter().all(|r| !r.alive && !r.beat.serving), "{rows:?}");
    let (listing, said) = run(redis_args(&redis, "pages", &["--json"])).await;
    assert_eq!(urls(&listing), merged);
    assert_eq!(said.matches("(gone)").count(), 3, "{said}");
    let out = common::run_binary(&as_str(&redis_args(&redis, "page", &[&shop])));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("no live worker in crawl served"), "{err}");
    assert!(err.contains(dirs[0].path().to_str().unwrap()), "{err}");
    demo.shutdown().await;
}

fn as_str(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}
