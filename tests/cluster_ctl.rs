//! Operator commands across a shared crawl: `crawldeck ctl --redis` mid-crawl
//! reaches every worker process, each answers, and once the answers are in no
//! worker requests a URL the new rule matches (from the demo server's log).

use crate::common;

use std::collections::HashMap;
use std::process::Command;
use std::time::Duration;

use common::cluster::{finish, start_three, stored_alerts, worker_name};
use common::start_demo;
use crawldeck::cluster::redis_server::RedisServer;
use crawldeck::demo::SiteKind;
use crawldeck::engine::store::PageOutcome;
use crawldeck::engine::telemetry::TrapKind;
use tokio::time::Instant;

/// Shop product pages: `/p/…`.
const PATTERN: &str = "/p/";

/// `crawldeck ctl --redis … --crawl ctl WORDS…`, off the test's runtime.
async fn run_ctl(redis: &RedisServer, words: Vec<String>) -> std::process::Output {
    common::cluster::run_ctl(redis, "ctl", words).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blacklist_sent_with_ctl_stops_matching_urls_on_every_worker() {
    let redis = RedisServer::for_test();
    let demo = start_demo(vec![SiteKind::Shop, SiteKind::DeepFinite, SiteKind::Params]).await;
    let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let workers = start_three(&redis, "ctl", &demo, &dirs).await;

    // All three workers beating: slow the shop down on every worker, so
    // product pages are still queued when the rule comes.
    let deadline = Instant::now() + Duration::from_secs(60);
    while status_workers(&redis) < 3 {
        assert!(Instant::now() < deadline, "the workers never all beat");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let shop = demo.base_url(SiteKind::Shop);
    let shop_host = format!("{}:{}", shop.host_str().unwrap(), shop.port().unwrap());
    let throttle = vec!["throttle".into(), shop_host.clone(), "400ms".into()];
    let throttled = run_ctl(&redis, throttle).await;
    assert!(throttled.status.success(), "{throttled:?}");
    // Mid-crawl: product pages queued in Redis.
    let mut con = common::cluster::shared(&redis);
    while queued_matching(&mut con, &shop_host) < 8 {
        assert!(Instant::now() < deadline, "no product page was ever queued");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let sent = Instant::now();
    let out = run_ctl(&redis, vec!["blacklist".into(), PATTERN.into()]).await;
    let answered_at = Instant::now();
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("ctl answered in {:?}:\n{stdout}", answered_at - sent);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for dir in &dirs {
        let name = worker_name(dir.path());
        assert!(
            stdout.contains(&format!("{name}: rule #")),
            "{name} did not answer: {stdout}"
        );
    }
    // The rest of the crawl runs unthrottled: it only has to show that no
    // matching URL is requested any more.
    let unthrottle = vec!["throttle".into(), shop_host.clone(), "off".into()];
    assert!(run_ctl(&redis, unthrottle).await.status.success());
    for w in workers {
        finish(w).await;
    }
    let records = demo.log().records();
    demo.shutdown().await;

    let late: Vec<_> = records
        .iter()
        .filter(|r| r.path_and_query.contains(PATTERN) && r.started > answered_at)
        .map(|r| (&r.path_and_query, r.started - answered_at))
        .collect();
    assert!(late.is_empty(), "requested after the rule: {late:?}");
    // The rule had something to stop: queued product pages were blocked.
    let blocked = dirs
        .iter()
        .flat_map(|d| common::pages(d.path()))
        .filter(|p| p.url.contains(PATTERN) && matches!(p.outcome, PageOutcome::Blocked { .. }))
        .count();
    println!("{blocked} product pages blocked");
    assert!(blocked > 0, "no product page was left to block");
    // Each worker's log says who sent the command and which entry it was.
    for dir in &dirs {
        let log = std::fs::read_to_string(dir.path().join("crawldeck.log")).unwrap();
        assert!(
            log.contains(&format!("applied add rule {PATTERN} from ctl on ")),
            "{}",
            dir.path().display()
        );
        assert!(log.contains("(stream entry "), "{log}");
    }
}

/// URLs of `host` queued in Redis that the rule matches.
fn queued_matching(con: &mut redis::Connection, host: &str) -> usize {
    let queued: Vec<Vec<u8>> = redis::cmd("ZRANGE")
        .arg(format!("crawldeck:{{ctl}}:q:{host}"))
        .arg(0)
        .arg(-1)
        .query(con)
        .unwrap();
    queued
        .iter()
        .filter(|e| String::from_utf8_lossy(e).contains(PATTERN))
        .count()
}

/// Live workers, as `status --redis --json` counts them.
fn status_workers(redis: &RedisServer) -> usize {
    status_json(redis)["workers"]
        .as_array()
        .map_or(0, |ws| ws.iter().filter(|w| w["alive"] == true).count())
}

/// `status --redis --json` of the crawl, or null while it cannot be read.
fn status_json(redis: &RedisServer) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_crawldeck"))
        .args([
            "status",
            "--json",
            "--redis",
            &redis.url(),
            "--crawl",
            "ctl",
        ])
        .output()
        .expect("status runs");
    serde_json::from_slice(&out.stdout).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_alert_is_decided_by_its_number_alone_on_the_worker_that_raised_it() {
    let redis = RedisServer::for_test();
    let demo = start_demo(vec![SiteKind::Calendar, SiteKind::Deep, SiteKind::Shop]).await;
    let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let workers = start_three(&redis, "ctl", &demo, &dirs).await;

    let deadline = Instant::now() + Duration::from_secs(90);
    let (id, raised_by) = loop {
        if let Some(found) = open_alerts(&redis).into_iter().next() {
            break found;
        }
        assert!(Instant::now() < deadline, "no trap alert was raised");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let out = run_ctl(&redis, vec!["accept".into(), id.to_string()]).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.starts_with(&format!("{raised_by}: ")), "{stdout}");
    assert_eq!(
        stdout.lines().count(),
        1,
        "only {raised_by} decides: {stdout}"
    );
    while open_alerts(&redis).iter().any(|(open, _)| *open == id) {
        assert!(Instant::now() < deadline, "alert #{id} stayed open");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let unknown = run_ctl(&redis, vec!["dismiss".into(), "999".into()]).await;
    let stderr = String::from_utf8_lossy(&unknown.stderr);
    assert_eq!(unknown.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("has no alert #999"), "{stderr}");

    let stopped = run_ctl(&redis, vec!["stop".into()]).await;
    assert!(stopped.status.success(), "{stopped:?}");
    for w in workers {
        finish(w).await;
    }
    demo.shutdown().await;
    // Numbers come from the crawl: every worker that stored a number stored
    // the one trap it names (workers join the alerts of the others).
    let mut traps: HashMap<u64, (String, TrapKind, String)> = HashMap::new();
    for alert in dirs.iter().flat_map(|d| stored_alerts(d.path())) {
        let trap = (alert.host, alert.kind, alert.suggested_rule.pattern);
        let first = traps.entry(alert.id).or_insert_with(|| trap.clone());
        assert_eq!(*first, trap, "alert #{} names two traps", alert.id);
    }
}

/// The open alerts (number, worker) `status --redis --json` lists.
fn open_alerts(redis: &RedisServer) -> Vec<(u64, String)> {
    let status = status_json(redis);
    status["open_alerts"]
        .as_array()
        .map(|alerts| {
            alerts
                .iter()
                .filter_map(|a| Some((a["id"].as_u64()?, a["worker"].as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}
