//! `pages`, `links` and `audit --redis URL --crawl NAME`: a shared crawl
//! listed from all its workers at once. Three worker processes on the demo
//! web, one killed with SIGKILL mid-crawl: while the other two live, their
//! rows come through Redis and the dead one's from its data directory; once
//! the crawl is over, the listing is every page the workers requested (from
//! the demo server's log) and its broken links are a single-process crawl's.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use common::cluster::{finish, page_requests, run_ctl, shared, start_three, worker_name};
use common::{crawl, json_lines, run_binary, start_demo, test_config};
use crawldeck::cluster::redis_server::RedisServer;
use crawldeck::cluster::status::read_workers;
use crawldeck::demo::{DemoWeb, SiteKind};
use tokio::time::Instant;

const CRAWL: &str = "listed";

const SITES: [SiteKind; 3] = [SiteKind::Shop, SiteKind::DeepFinite, SiteKind::Dupes];

/// A URL without its port: each demo web listens on ports of its own.
fn portless(url: &str) -> String {
    let u = url::Url::parse(url).unwrap_or_else(|e| panic!("{url}: {e}"));
    let query = u.query().map(|q| format!("?{q}")).unwrap_or_default();
    format!("{}{}{query}", u.host_str().unwrap(), u.path())
}

/// The broken targets `links --broken --json` lists: URL → status or error.
fn broken(args: &[&str]) -> BTreeMap<String, String> {
    broken_targets(args, true)
}

/// [`broken`], each with a referrer if `whole` (a worker's own listing may
/// have a target another worker found).
fn broken_targets(args: &[&str], whole: bool) -> BTreeMap<String, String> {
    json_lines(args)
        .iter()
        .map(|row| {
            let referrers = row["referrers"].as_array().map_or(0, Vec::len);
            assert!(
                referrers > 0 || !whole,
                "a broken target with no referrer: {row}"
            );
            let why = match &row["status"] {
                serde_json::Value::Null => row["error"].as_str().unwrap_or_default().to_string(),
                status => status.to_string(),
            };
            (portless(row["url"].as_str().unwrap()), why)
        })
        .collect()
}

/// The broken links of one uninterrupted single-process crawl of the
/// sites, and the URLs its audit counts under broken-links.
async fn reference_broken() -> (BTreeMap<String, String>, u64) {
    let demo = start_demo(SITES.to_vec()).await;
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = test_config(&demo);
    // Workers of a shared crawl read no sitemaps.
    cfg.sitemaps.enabled = false;
    crawl(cfg, dir.path()).await;
    demo.shutdown().await;
    let data = dir.path().to_str().unwrap().to_string();
    tokio::task::spawn_blocking(move || {
        let audit = json_lines(&["audit", &data, "--json"]);
        let links = broken(&["links", &data, "--broken", "--json"]);
        (links, broken_links_urls(&audit))
    })
    .await
    .unwrap()
}

/// The URLs an audit's JSON counts under broken-links.
fn broken_links_urls(audit: &[serde_json::Value]) -> u64 {
    let found = audit.iter().find(|f| f["check"] == "broken-links");
    let found = found.expect("the audit finds the broken links");
    found["urls"].as_u64().unwrap()
}

/// `pages … --json` rows by URL; each URL once, in URL order.
fn pages_by_url(args: Vec<String>) -> BTreeMap<String, serde_json::Value> {
    listed(args).0
}

/// `pages … --json` rows by URL, and what the command said on stderr.
fn listed(args: Vec<String>) -> (BTreeMap<String, serde_json::Value>, String) {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run_binary(&args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{args:?} failed: {err}");
    let rows: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let urls: Vec<&str> = rows.iter().map(|r| r["url"].as_str().unwrap()).collect();
    assert!(
        urls.windows(2).all(|w| w[0] < w[1]),
        "not in URL order, or a URL twice"
    );
    let rows = rows
        .into_iter()
        .map(|r| (r["url"].as_str().unwrap().to_string(), r))
        .collect();
    (rows, err)
}

fn redis_args(redis: &RedisServer, verb: &str, more: &[&str]) -> Vec<String> {
    let mut args = vec![verb.to_string(), "--redis".into(), redis.url()];
    args.extend(["--crawl".into(), CRAWL.into()]);
    args.extend(more.iter().map(|s| s.to_string()));
    args
}

/// What a row says of its URL's fetch, the same from any worker.
fn fetch_of(row: &serde_json::Value) -> (String, String, String) {
    let text = |k: &str| row[k].to_string();
    (text("status"), text("fate"), text("title"))
}

/// Waits until `ok` holds of the workers' heartbeats.
async fn wait_for_workers(
    redis: &RedisServer,
    what: &str,
    ok: impl Fn(&[crawldeck::cluster::status::WorkerRow]) -> bool,
) {
    let mut con = shared(redis);
    let deadline = Instant::now() + Duration::from_secs(60);
    while !ok(&read_workers(&mut con, CRAWL).unwrap()) {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Kills, by pid, a worker that has recorded pages, once the crawl is under
/// way; returns its index.
async fn kill_one(
    redis: &RedisServer,
    demo: &DemoWeb,
    dirs: &[tempfile::TempDir],
    workers: &mut Vec<common::Killed>,
) -> usize {
    let mut con = shared(redis);
    let deadline = Instant::now() + Duration::from_secs(60);
    let victim = loop {
        assert!(Instant::now() < deadline, "no worker recorded pages");
        tokio::time::sleep(Duration::from_millis(20)).await;
        if page_requests(&demo.log().records()).len() < 30 {
            continue;
        }
        let rows = read_workers(&mut con, CRAWL).unwrap();
        let busy = rows.iter().find(|r| r.alive && r.beat.pages >= 3);
        let Some(busy) = busy else { continue };
        break dirs
            .iter()
            .position(|d| worker_name(d.path()) == busy.beat.worker)
            .expect("a worker of this test");
    };
    let mut dead = workers.remove(victim);
    dead.0.kill().expect("SIGKILL");
    dead.0.wait().unwrap();
    victim
}

/// The union of each worker's own listing (`pages DIR`), as merged by URL.
fn each_dir_pages(dirs: &[tempfile::TempDir]) -> BTreeMap<String, serde_json::Value> {
    let mut all = BTreeMap::new();
    for dir in dirs {
        let data = dir.path().to_str().unwrap().to_string();
        for (url, row) in pages_by_url(vec!["pages".into(), data, "--json".into()]) {
            let keep = all
                .get(&url)
                .is_none_or(|had: &serde_json::Value| had["fate"] == "blocked");
            if keep {
                all.insert(url, row);
            }
        }
    }
    all
}

fn same_fetches(
    merged: &BTreeMap<String, serde_json::Value>,
    each: &BTreeMap<String, serde_json::Value>,
) -> bool {
    merged.keys().eq(each.keys())
        && merged
            .iter()
            .all(|(url, row)| fetch_of(row) == fetch_of(&each[url]))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shared_crawl_is_listed_from_all_its_workers_one_of_them_killed() {
    let (reference, audited) = reference_broken().await;
    assert!(!reference.is_empty(), "the demo sites have broken links");
    let redis = RedisServer::for_test();
    let demo = start_demo(SITES.to_vec()).await;
    let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let mut workers = start_three(&redis, CRAWL, &demo, &dirs).await;
    let victim = kill_one(&redis, &demo, &dirs, &mut workers).await;
    let killed = worker_name(dirs[victim].path());

    // Paused and settled: two live workers read through Redis, the dead
    // one from its directory, equal the workers' own listings together.
    let paused = run_ctl(&redis, CRAWL, vec!["pause".into()]).await;
    assert!(paused.status.success(), "{paused:?}");
    wait_for_workers(&redis, "the killed worker gone, the others idle", |rows| {
        rows.iter().all(|r| match r.beat.worker == killed {
            true => !r.alive,
            false => r.alive && r.beat.in_flight == 0,
        })
    })
    .await;
    let args = redis_args(&redis, "pages", &["--json"]);
    let (live, dirs) = tokio::task::spawn_blocking(move || {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let ((merged, said), each) = (listed(args.clone()), each_dir_pages(&dirs));
            if same_fetches(&merged, &each) || std::time::Instant::now() > deadline {
                return ((merged, said, each), dirs);
            }
            std::thread::sleep(Duration::from_millis(300));
        }
    })
    .await
    .unwrap();
    let (merged, said, each) = live;
    for dir in &dirs {
        let worker = worker_name(dir.path());
        let source = match worker == killed {
            true => format!("{worker} from {} (gone)", dir.path().display()),
            false => format!("{worker} through Redis"),
        };
        assert!(said.contains(&source), "{said}");
    }
    let (redis, dirs) = tokio::task::spawn_blocking(move || {
        live_links_and_audit(&redis, &dirs);
        (redis, dirs)
    })
    .await
    .unwrap();
    let differ: Vec<_> = merged
        .iter()
        .filter(|(url, row)| each.get(*url).map(fetch_of) != Some(fetch_of(row)))
        .map(|(url, _)| url)
        .chain(each.keys().filter(|url| !merged.contains_key(*url)))
        .collect();
    assert!(differ.is_empty(), "the listings differ on {differ:?}");

    // To the end: every page requested is listed, and the broken links are
    // a single-process crawl's.
    let resumed = run_ctl(&redis, CRAWL, vec!["resume".into()]).await;
    assert!(resumed.status.success(), "{resumed:?}");
    for w in workers {
        finish(w).await;
    }
    let requested: BTreeSet<String> = page_requests(&demo.log().records())
        .into_iter()
        .map(|(site, path)| portless(demo.base_url(site).join(&path).unwrap().as_str()))
        .collect();
    demo.shutdown().await;
    let (redis, dirs) = tokio::task::spawn_blocking(move || {
        let reference = (reference, audited);
        listed_when_all_are_gone(&redis, &dirs, &requested, &reference, &killed);
        (redis, dirs)
    })
    .await
    .unwrap();
    drop((redis, dirs));
}

/// `links --broken` and `audit` through Redis while two workers live: the
/// broken targets of the workers' own listings together, and the broken
/// `#fragment` links one worker found to a page another fetched, which
/// neither worker's own listing can judge.
fn live_links_and_audit(redis: &RedisServer, dirs: &[tempfile::TempDir]) {
    let mut each = BTreeMap::new();
    for dir in dirs {
        let data = dir.path().to_str().unwrap();
        let own = broken_targets(&["links", data, "--broken", "--json"], false);
        each.extend(own);
    }
    let args = redis_args(redis, "links", &["--broken", "--json"]);
    let merged = broken(&as_str(&args));
    for (url, why) in &merged {
        match each.get(url) {
            Some(own) => assert_eq!(own, why, "{url}"),
            None => assert_eq!(why, "no such fragment", "{url}: only in the merged listing"),
        }
    }
    let unlisted: Vec<_> = each.keys().filter(|u| !merged.contains_key(*u)).collect();
    assert!(
        unlisted.is_empty(),
        "not in the merged listing: {unlisted:?}"
    );
    // The audit reads every verb through Redis (fragment checks: the pages'
    // archives, read by the workers that hold them).
    let audit = json_lines(&as_str(&redis_args(redis, "audit", &["--json"])));
    let commands = audit.iter().map(|f| f["command"].as_str().unwrap());
    assert!(commands.clone().all(|c| c.contains("--redis")), "{audit:?}");
    assert!(
        merged.is_empty() || commands.count() > 0,
        "broken links, and the audit found nothing"
    );
}

/// The checks once every worker is gone: their directories are read.
fn listed_when_all_are_gone(
    redis: &RedisServer,
    dirs: &[tempfile::TempDir],
    requested: &BTreeSet<String>,
    (reference, audited): &(BTreeMap<String, String>, u64),
    killed: &str,
) {
    let rows = pages_by_url(redis_args(redis, "pages", &["--json"]));
    let fetched: BTreeSet<String> = rows
        .values()
        .filter(|r| r["fate"] != "blocked" && r["fate"] != "parked")
        .map(|r| portless(r["url"].as_str().unwrap()))
        .filter(|u| !u.contains("/crawldeck-probe-"))
        .collect();
    let unlisted: Vec<_> = requested.difference(&fetched).collect();
    let unrequested: Vec<_> = fetched.difference(requested).collect();
    assert!(
        unlisted.is_empty() && unrequested.is_empty(),
        "requested, not listed: {unlisted:?}; listed, not requested: {unrequested:?}"
    );
    let csv = common::ok_stdout(&as_str(&redis_args(redis, "pages", &["--csv"])));
    let mut lines = csv.lines();
    assert!(lines.next().unwrap().starts_with("url,status,"));
    let csv_urls: Vec<&str> = lines.map(|l| l.split(',').next().unwrap()).collect();
    let json_urls: Vec<&str> = rows.keys().map(String::as_str).collect();
    assert_eq!(csv_urls, json_urls, "CSV and JSON list the same URLs");

    let args = redis_args(redis, "links", &["--broken", "--json"]);
    assert_eq!(&broken(&as_str(&args)), reference);
    let audit = json_lines(&as_str(&redis_args(redis, "audit", &["--json"])));
    assert_eq!(broken_links_urls(&audit), *audited);
    let command = audit[0]["command"].as_str().unwrap();
    assert!(command.contains("--redis") && command.contains("--crawl listed"));

    gone_elsewhere_is_named(redis, dirs, killed);
}

/// A gone worker whose directory this machine cannot read is named, and
/// nothing is listed without it.
fn gone_elsewhere_is_named(redis: &RedisServer, dirs: &[tempfile::TempDir], killed: &str) {
    let dir = dirs
        .iter()
        .map(|d| d.path())
        .find(|d| worker_name(d) == killed)
        .unwrap();
    let moved = dir.with_extension("moved");
    std::fs::rename(dir, &moved).unwrap();
    let out = run_binary(&as_str(&redis_args(redis, "pages", &[])));
    std::fs::rename(&moved, dir).unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let named = format!("worker {killed} on ");
    assert!(err.contains(&named), "{err}");
    assert!(
        err.contains(&format!("data directory {}", dir.display())),
        "{err}"
    );
    assert!(
        err.contains("last heartbeat") && err.contains(" pid "),
        "{err}"
    );
    assert!(out.stdout.is_empty(), "nothing listed without a worker");
}

fn as_str(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

#[test]
fn no_such_crawl_or_no_redis_is_named() {
    let redis = RedisServer::for_test();
    let nosuch = ["pages", "--redis", &redis.url(), "--crawl", "nosuch"];
    let out = run_binary(&nosuch);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("no crawl nosuch in the Redis at"), "{err}");
    let url = redis.url();
    drop(redis);
    let out = run_binary(&["links", "--broken", "--redis", &url, "--crawl", "x"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("check that the Redis server is running"),
        "{err}"
    );
    let usage: [&[&str]; 3] = [
        &["pages", "--redis", "http://127.0.0.1/", "--crawl", "x"],
        &["audit", "--redis", &url],
        &["pages", "/tmp", "--redis", &url, "--crawl", "x"],
    ];
    for args in usage {
        let out = run_binary(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
}
