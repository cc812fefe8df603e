//! Spider traps and a flaky host against the demo web, judged by the server's
//! request log: every trap raises an alert after a bounded number of requests
//! inside it, the normal pages next to it are still crawled, normal sites raise
//! nothing, and a failing host is left alone while its breaker is open.

use crate::common;

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use common::{crawl, start_demo, test_config};
use crawldeck::demo::{RequestRecord, SiteKind, FLAKY_FAILURES, FLAKY_OK_BEFORE};
use crawldeck::engine::telemetry::{AlertStatus, TrapKind};

fn path(r: &RequestRecord) -> &str {
    r.path_and_query.split('?').next().unwrap_or("")
}

/// Requests inside each trap before its alert parked the rest. The detectors
/// need a few dozen discovered URLs (see src/engine/traps); with one request in
/// flight per host, discovery runs ahead of fetching, so these bounds hold
/// with room to spare while still failing if quarantine stopped working.
const TRAP_BUDGET: usize = 60;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn traps_are_quarantined_and_normal_sites_stay_quiet() {
    let sites = vec![
        SiteKind::Calendar,
        SiteKind::Deep,
        SiteKind::Session,
        SiteKind::Dupes,
        SiteKind::Soft404,
        SiteKind::Facets,
        SiteKind::Shop,
        SiteKind::Params,
        SiteKind::DeepFinite,
    ];
    let demo = start_demo(sites).await;
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = test_config(&demo);
    cfg.politeness.min_delay = Duration::from_millis(5);
    // The detectors, not the depth limit, must stop the traps.
    cfg.max_depth = 1000;
    let snapshot = crawl(cfg, dir.path()).await;
    let log = demo.log();

    let host_of = |site: SiteKind| crawldeck::engine::url_norm::host_key(&demo.base_url(site));
    let alerts_for = |site: SiteKind| {
        let host = host_of(site);
        snapshot
            .alerts
            .iter()
            .filter(|a| a.host == host)
            .collect::<Vec<_>>()
    };
    let mut report = Vec::new();
    for (site, kinds, in_trap) in [
        (
            SiteKind::Calendar,
            vec![TrapKind::Counter],
            (|r: &RequestRecord| path(r).starts_with("/calendar/")) as fn(&RequestRecord) -> bool,
        ),
        (
            SiteKind::Deep,
            vec![TrapKind::RepeatedSegments, TrapKind::DepthGrowth],
            |r| path(r).starts_with("/docs/"),
        ),
        (
            SiteKind::Soft404,
            // The probe of a path that cannot exist got the same page back.
            vec![TrapKind::SoftNotFound],
            |r| path(r).starts_with("/x/"),
        ),
        (
            SiteKind::Facets,
            vec![TrapKind::QueryExplosion, TrapKind::NearDuplicates],
            |r| path(r) == "/search",
        ),
    ] {
        let alerts = alerts_for(site);
        assert!(
            alerts.iter().any(|a| kinds.contains(&a.kind)),
            "{site:?} raised {alerts:?}"
        );
        assert!(alerts.iter().all(|a| a.status == AlertStatus::Open));
        let spent = log.for_site(site).iter().filter(|r| in_trap(r)).count();
        report.push(format!("{site:?}: {spent} requests inside the trap"));
        assert!(
            spent <= TRAP_BUDGET,
            "{site:?}: {spent} requests inside the trap"
        );
    }
    eprintln!("{}", report.join("\n"));

    // The normal pages next to a trap are all crawled.
    for (site, prefix) in [
        (SiteKind::Calendar, "/events/"),
        (SiteKind::Deep, "/guide/"),
    ] {
        let fetched: HashSet<String> = log
            .for_site(site)
            .iter()
            .filter(|r| r.status == 200)
            .map(|r| path(r).to_string())
            .filter(|p| p.starts_with(prefix))
            .collect();
        assert_eq!(fetched.len(), 20, "{site:?} normal pages: {fetched:?}");
    }

    // Session ids are stripped during normalization: no trap, no alert, and
    // each of the 20 items behind them is fetched once under its plain URL.
    let session_log = log.for_site(SiteKind::Session);
    assert!(
        session_log
            .iter()
            .all(|r| !r.path_and_query.contains("sid=")),
        "a session id reached the server"
    );
    let items: Vec<&str> = session_log
        .iter()
        .map(path)
        .filter(|p| p.starts_with("/item/"))
        .collect();
    let distinct: HashSet<&str> = items.iter().copied().collect();
    assert_eq!((items.len(), distinct.len()), (20, 20), "{items:?}");
    assert!(alerts_for(SiteKind::Session).is_empty());

    // Duplicate content: an alert or no links followed from duplicates.
    assert!(
        snapshot.counters.duplicates >= 20,
        "{:?}",
        snapshot.counters
    );

    // No false positives on legitimate structure.
    for site in [SiteKind::Shop, SiteKind::Params, SiteKind::DeepFinite] {
        assert!(
            alerts_for(site).is_empty(),
            "{site:?}: {:?}",
            alerts_for(site)
        );
    }
    assert!(
        snapshot
            .finish_reason
            .as_deref()
            .unwrap_or("")
            .contains("quarantined"),
        "{:?}",
        snapshot.finish_reason
    );
    demo.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flaky_host_is_left_alone_while_open_and_finished_after_recovery() {
    let demo = start_demo(vec![SiteKind::Flaky]).await;
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = test_config(&demo);
    cfg.breaker.cooldown = Duration::from_millis(60);
    cfg.breaker.max_cooldown = Duration::from_millis(240);
    let snapshot = crawl(cfg, dir.path()).await;
    let records: Vec<RequestRecord> = demo
        .log()
        .for_site(SiteKind::Flaky)
        .into_iter()
        // Pages only: the host has no sitemap, and its /sitemap.xml answers 404.
        .filter(|r| r.path_and_query != "/robots.txt" && r.path_and_query != "/sitemap.xml")
        .collect();
    demo.shutdown().await;

    let failures: Vec<&RequestRecord> = records.iter().filter(|r| r.status != 200).collect();
    assert_eq!(
        failures.len(),
        FLAKY_FAILURES as usize,
        "the outage was seen"
    );
    // After the breaker opened (5 consecutive failures), requests come only as
    // probes, at least one cooldown apart (minus jitter) instead of every 20 ms.
    let opened_after = 5;
    for pair in failures[opened_after - 1..].windows(2) {
        let gap = pair[1]
            .started
            .saturating_duration_since(pair[0].finished.unwrap_or(pair[0].started));
        assert!(gap >= Duration::from_millis(50), "probe after {gap:?}");
    }
    // Every page was crawled once the host recovered.
    let mut ok: HashMap<&str, usize> = HashMap::new();
    for r in records.iter().filter(|r| r.status == 200) {
        *ok.entry(path(r)).or_default() += 1;
    }
    let requested: HashSet<&str> = records.iter().map(path).collect();
    let missing: Vec<_> = requested.iter().filter(|p| !ok.contains_key(*p)).collect();
    assert!(
        missing.is_empty(),
        "never fetched successfully: {missing:?}"
    );
    assert!(ok.len() >= 40 - FLAKY_OK_BEFORE as usize);
    assert_eq!(snapshot.frontier_size, 0);
}
