//! Trap alerts are the crawl's, not a worker's: three worker processes on
//! the demo web raise one alert per trap, every worker joins it
//! (and parks the trap's URLs), one `ctl accept N` with no `--worker`
//! decides it on all of them, and from then on no worker requests a URL of
//! its rule (from the demo server's log).

use crate::common;

use std::collections::HashMap;
use std::time::Duration;

use common::cluster::{finish, run_ctl, shared, start_three, stored_alerts, worker_name};
use common::start_demo;
use crawldeck::cluster::redis_server::RedisServer;
use crawldeck::demo::SiteKind;
use crawldeck::engine::store::PageOutcome;
use crawldeck::engine::telemetry::{AlertStatus, Snapshot, TrapAlert, TrapKind};
use tokio::time::Instant;

const CRAWL: &str = "traps";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trap_is_one_alert_on_every_worker_and_one_accept_stops_it_everywhere() {
    let redis = RedisServer::for_test();
    let demo = start_demo(vec![SiteKind::Calendar, SiteKind::Deep, SiteKind::Shop]).await;
    let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let workers = start_three(&redis, CRAWL, &demo, &dirs).await;
    let mut con = shared(&redis);

    // The first trap alert, once every worker lists it under one number.
    let deadline = Instant::now() + Duration::from_secs(90);
    while !dirs
        .iter()
        .all(|d| d.path().join("cluster-worker").exists())
    {
        assert!(
            Instant::now() < deadline,
            "the workers never named themselves"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let names: Vec<String> = dirs.iter().map(|d| worker_name(d.path())).collect();
    let id = loop {
        let snaps = snapshots(&mut con, &names);
        let first = snaps.iter().flat_map(|s| &s.alerts).map(|a| a.id).min();
        let held = snaps
            .iter()
            .filter(|s| {
                s.alerts
                    .iter()
                    .any(|a| Some(a.id) == first && a.status == AlertStatus::Open)
            })
            .count();
        if let Some(id) = first.filter(|_| held == names.len()) {
            break id;
        }
        assert!(
            Instant::now() < deadline,
            "the workers never all held one alert: {first:?} on {held}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let out = run_ctl(&redis, CRAWL, vec!["accept".into(), id.to_string()]).await;
    let answered_at = Instant::now();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(&format!("alert #{id} accepted")),
        "{stdout}"
    );

    // Every worker applies the one decision.
    loop {
        let snaps = snapshots(&mut con, &names);
        let accepted = snaps
            .iter()
            .filter(|s| {
                s.alerts
                    .iter()
                    .any(|a| a.id == id && a.status == AlertStatus::Accepted)
            })
            .count();
        if accepted == names.len() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "alert #{id} accepted on {accepted} of {} workers",
            names.len()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let stopped = run_ctl(&redis, CRAWL, vec!["stop".into()]).await;
    assert!(stopped.status.success(), "{stopped:?}");
    for w in workers {
        finish(w).await;
    }
    let records = demo.log().records();
    demo.shutdown().await;

    // One alert per trap: the workers stored each trap (host, detector,
    // rule) under one number, and this one accepted with the same rule.
    let stored: Vec<Vec<TrapAlert>> = dirs.iter().map(|d| stored_alerts(d.path())).collect();
    let mut traps: HashMap<(String, TrapKind, String), Vec<u64>> = HashMap::new();
    for alert in stored.iter().flatten() {
        let trap = (
            alert.host.clone(),
            alert.kind,
            alert.suggested_rule.pattern.clone(),
        );
        let ids = traps.entry(trap).or_default();
        if !ids.contains(&alert.id) {
            ids.push(alert.id);
        }
    }
    println!("alerts by trap across workers: {traps:?}");
    assert!(traps.values().all(|ids| ids.len() == 1), "{traps:?}");
    let copies: Vec<&TrapAlert> = stored.iter().flatten().filter(|a| a.id == id).collect();
    assert_eq!(copies.len(), names.len(), "{copies:?}");
    assert!(copies.iter().all(|a| a.status == AlertStatus::Accepted));
    let rule = &copies[0].suggested_rule;
    assert!(copies.iter().all(|a| a.suggested_rule == *rule));

    // After the accept no worker asks for a URL of the rule.
    let matcher = regex::Regex::new(&rule.pattern).expect("the rule is a regex");
    let trap: Vec<_> = records
        .iter()
        .filter(|r| matcher.is_match(&format!("http://{}{}", r.host_header, r.path_and_query)))
        .collect();
    let late: Vec<_> = trap
        .iter()
        .filter(|r| r.started > answered_at)
        .map(|r| &r.path_and_query)
        .collect();
    println!(
        "{} requests inside the trap across three workers, {} after the accept",
        trap.len(),
        late.len()
    );
    assert!(late.is_empty(), "requested after the accept: {late:?}");
    // The accept had something to stop: parked URLs, recorded as blocked
    // by the worker that parked them.
    let blocked: Vec<usize> = dirs
        .iter()
        .map(|d| {
            common::pages(d.path())
                .iter()
                .filter(|p| matcher.is_match(&p.url))
                .filter(|p| matches!(p.outcome, PageOutcome::Blocked { .. }))
                .count()
        })
        .collect();
    println!("URLs of the rule blocked per worker: {blocked:?}");
    assert!(blocked.iter().sum::<usize>() > 0, "nothing was blocked");
}

/// The workers' published snapshots, those that parse.
fn snapshots(con: &mut redis::Connection, names: &[String]) -> Vec<Snapshot> {
    let keys: Vec<String> = names
        .iter()
        .map(|w| format!("crawldeck:{{{CRAWL}}}:snapshot:{w}"))
        .collect();
    let texts: Vec<Option<String>> = redis::cmd("MGET").arg(&keys).query(con).unwrap();
    texts
        .into_iter()
        .flatten()
        .filter_map(|t| serde_json::from_str(&t).ok())
        .collect()
}
