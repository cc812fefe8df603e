//! Triage an operator can trust, judged from the demo server's request log:
//! a trap next to real pages in the same directory is contained while every
//! real page is fetched, the suggested rule matches none of them, the
//! soft-404 probe is sent once, and removing a rule returns what it blocked.

use crate::common;

use std::collections::HashSet;
use std::time::Duration;

use common::{crawl, start_demo, test_config};
use crawldeck::demo::{archive_real_paths, RequestRecord, SiteKind, MANUAL_PAGES};
use crawldeck::engine::config::CrawlConfig;
use crawldeck::engine::control::{Command, PatternKind, RuleSpec};
use crawldeck::engine::telemetry::{EngineEvent, TrapAlert, TrapKind};
use crawldeck::engine::{EngineOptions, RunningEngine};
use regex::Regex;

/// Requests inside a trap before its alert parked the rest (as in tests/traps.rs).
const TRAP_BUDGET: usize = 60;

fn path(r: &RequestRecord) -> &str {
    r.path_and_query.split('?').next().unwrap_or("")
}

fn config(demo: &crawldeck::demo::DemoWeb) -> CrawlConfig {
    let mut cfg = test_config(demo);
    cfg.politeness.min_delay = Duration::from_millis(2);
    // The detectors, not the depth limit, must stop the traps.
    cfg.max_depth = 1000;
    cfg
}

/// Paths answered 200.
fn fetched(log: &[RequestRecord]) -> HashSet<String> {
    log.iter()
        .filter(|r| r.status == 200)
        .map(|r| path(r).to_string())
        .collect()
}

fn only_alert(alerts: &[TrapAlert], host: &str) -> TrapAlert {
    let of_host: Vec<&TrapAlert> = alerts.iter().filter(|a| a.host == host).collect();
    assert_eq!(of_host.len(), 1, "one alert per trap: {of_host:?}");
    of_host[0].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn soft_404_next_to_real_pages_is_probed_once_and_its_rule_spares_them() {
    let demo = start_demo(vec![SiteKind::Manual]).await;
    let dir = tempfile::tempdir().unwrap();
    let snapshot = crawl(config(&demo), dir.path()).await;
    let log = demo.log().for_site(SiteKind::Manual);
    let base = demo.base_url(SiteKind::Manual);
    let host = crawldeck::engine::url_norm::host_key(&base);
    demo.shutdown().await;

    let ok = fetched(&log);
    let real: Vec<String> = (1..=MANUAL_PAGES)
        .map(|n| format!("/docs/page-{n}.html"))
        .collect();
    let missing: Vec<&String> = real.iter().filter(|p| !ok.contains(*p)).collect();
    assert!(missing.is_empty(), "real pages never fetched: {missing:?}");
    let in_trap: Vec<&str> = log
        .iter()
        .map(path)
        .filter(|p| p.starts_with("/docs/gone-"))
        .collect();
    assert!(
        !in_trap.is_empty() && in_trap.len() <= TRAP_BUDGET,
        "{} requests inside the trap",
        in_trap.len()
    );

    eprintln!(
        "manual: {} requests inside the trap, {} real pages fetched",
        in_trap.len(),
        real.len()
    );
    let probes: Vec<&RequestRecord> = log
        .iter()
        .filter(|r| path(r).starts_with("/crawldeck-probe-"))
        .collect();
    assert_eq!(probes.len(), 1, "one probe: {probes:?}");
    let alert = only_alert(&snapshot.alerts, &host);
    assert_eq!(alert.kind, TrapKind::SoftNotFound, "{alert:?}");
    assert_eq!(alert.kind.label(), "soft 404");
    let probe_url = base.join(path(probes[0])).unwrap();
    assert_eq!(alert.samples.first(), Some(&probe_url.to_string()));

    let rule = Regex::new(&alert.suggested_rule.pattern).unwrap();
    for p in &real {
        let url = base.join(p).unwrap();
        assert!(!rule.is_match(url.as_str()), "{} matches {url}", rule);
    }
    for p in &in_trap {
        let url = base.join(p).unwrap();
        assert!(rule.is_match(url.as_str()), "{} misses {url}", rule);
    }
    let impact = alert.impact.expect("the alert measured its rule");
    assert_eq!(impact.good_fetched, 0, "{impact:?}");
    assert!(impact.parked > 0, "{impact:?}");
    assert!(impact.summary().contains("; 0 fetched good pages match"));

    // The inspector shows the probe that decided the alert as fetched, with its body.
    let store = crawldeck::engine::store::Store::open(dir.path(), 1 << 20).unwrap();
    let page = crawldeck::engine::inspect::inspect(&store, dir.path(), probe_url.as_str())
        .unwrap()
        .expect("the probe's record");
    assert_eq!(page.status, Some(200), "{page:?}");
    assert!(
        page.outcome.starts_with("fetched as a soft-404 probe: 200"),
        "{}",
        page.outcome
    );
    assert_eq!(page.archive_note, None);
    assert!(!page.text.is_empty(), "the probe's body is shown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trap_inside_a_directory_of_real_pages_gets_a_rule_without_collateral() {
    let demo = start_demo(vec![SiteKind::Archive]).await;
    let dir = tempfile::tempdir().unwrap();
    let snapshot = crawl(config(&demo), dir.path()).await;
    let log = demo.log().for_site(SiteKind::Archive);
    let base = demo.base_url(SiteKind::Archive);
    let host = crawldeck::engine::url_norm::host_key(&base);
    demo.shutdown().await;

    let ok = fetched(&log);
    let real = archive_real_paths();
    let missing: Vec<&String> = real.iter().filter(|p| !ok.contains(*p)).collect();
    assert!(missing.is_empty(), "real pages never fetched: {missing:?}");

    let alert = only_alert(&snapshot.alerts, &host);
    assert_eq!(alert.kind, TrapKind::NearDuplicates, "{alert:?}");
    let rule = Regex::new(&alert.suggested_rule.pattern).unwrap();
    // What a rule for the trap's directory would have blocked.
    let naive = Regex::new(&format!("^https?://{}/archive/", regex::escape(&host))).unwrap();
    let (mut naive_hits, mut rule_hits) = (0, 0);
    for p in &real {
        let url = base.join(p).unwrap();
        naive_hits += usize::from(naive.is_match(url.as_str()));
        rule_hits += usize::from(rule.is_match(url.as_str()));
    }
    assert_eq!(naive_hits, real.len());
    assert_eq!(rule_hits, 0, "{rule} blocks real pages");
    assert_eq!(
        alert.impact.as_ref().map(|i| i.good_fetched),
        Some(0),
        "{:?}",
        alert.impact
    );

    // The probe found a real 404: the alert keeps its kind.
    let probes: Vec<&RequestRecord> = log
        .iter()
        .filter(|r| path(r).starts_with("/crawldeck-probe-"))
        .collect();
    assert_eq!(probes.len(), 1, "{probes:?}");
    assert_eq!(probes[0].status, 404);
}

/// Waits until `pred` holds for the demo's request log.
async fn wait_for_log(demo: &crawldeck::demo::DemoWeb, pred: impl Fn(&[RequestRecord]) -> bool) {
    let deadline = tokio::time::Instant::now() + common::CRAWL_LIMIT;
    while !pred(&demo.log().for_site(SiteKind::Manual)) {
        assert!(tokio::time::Instant::now() < deadline, "timed out");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removing_a_rule_returns_the_urls_it_blocked_and_they_are_fetched() {
    let demo = start_demo(vec![SiteKind::Manual]).await;
    let dir = tempfile::tempdir().unwrap();
    let base = demo.base_url(SiteKind::Manual);
    let host = crawldeck::engine::url_norm::host_key(&base);
    let options = EngineOptions {
        // The open soft-404 alert keeps the crawl waiting for the operator.
        wait_for_operator: true,
        ..EngineOptions::default()
    };
    let RunningEngine {
        mut handle, done, ..
    } = crawldeck::engine::start_with(config(&demo), dir.path(), std::future::pending(), options)
        .await
        .expect("engine starts");
    // Topics 100-199 are blocked before any of them is found.
    handle.control.send(Command::AddRule(RuleSpec {
        kind: PatternKind::Regex,
        pattern: r"/docs/page-1\d\d\.html$".into(),
        host: Some(host.clone()),
    }));
    let blocked: HashSet<String> = (100..200).map(|n| format!("/docs/page-{n}.html")).collect();
    let others: Vec<String> = (1..=MANUAL_PAGES)
        .map(|n| format!("/docs/page-{n}.html"))
        .filter(|p| !blocked.contains(p))
        .collect();
    wait_for_log(&demo, |log| {
        let ok = fetched(log);
        others.iter().all(|p| ok.contains(p))
    })
    .await;
    let before = fetched(&demo.log().for_site(SiteKind::Manual));
    assert!(before.is_disjoint(&blocked), "a blocked page was fetched");

    let removal = handle.control.send(Command::RemoveRule { rule_id: 1 });
    let answer = tokio::time::timeout(common::CRAWL_LIMIT, async {
        loop {
            match handle.events.recv().await {
                Some(EngineEvent::CommandDone(done)) if done.id == removal => return done.outcome,
                Some(_) => {}
                None => panic!("engine stopped"),
            }
        }
    })
    .await
    .expect("the removal is answered");
    let answer = answer.expect("the rule is removed");
    assert!(
        answer.contains(": 100 blocked URL(s) returned to the queue"),
        "{answer}"
    );
    wait_for_log(&demo, |log| {
        let ok = fetched(log);
        blocked.iter().all(|p| ok.contains(p))
    })
    .await;
    // Each returned page was fetched once.
    let log = demo.log().for_site(SiteKind::Manual);
    for p in &blocked {
        let n = log.iter().filter(|r| path(r) == p).count();
        assert_eq!(n, 1, "{p} requested {n} times");
    }

    handle.control.send(Command::Shutdown);
    tokio::time::timeout(common::CRAWL_LIMIT, done)
        .await
        .expect("crawl stops")
        .expect("no panic")
        .expect("no engine error");
    drop(handle);
    demo.shutdown().await;
}

/// The number `k` of a generated archive tag page `/archive/tag-<word>-<k>.html`.
fn trap_number(path: &str) -> Option<u64> {
    let rest = path.strip_prefix("/archive/tag-")?.strip_suffix(".html")?;
    rest.split_once('-')?.1.parse().ok()
}

/// The engine's answer to command `id`.
async fn answer_to(
    handle: &mut crawldeck::engine::EngineHandle,
    id: crawldeck::engine::control::CommandId,
) -> String {
    tokio::time::timeout(common::CRAWL_LIMIT, async {
        loop {
            match handle.events.recv().await {
                Some(EngineEvent::CommandDone(done)) if done.id == id => {
                    return done.outcome.expect("the command succeeds")
                }
                Some(_) => {}
                None => panic!("engine stopped"),
            }
        }
    })
    .await
    .expect("the command is answered")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removing_an_accepted_alerts_rule_returns_the_urls_it_blocked() {
    let demo = start_demo(vec![SiteKind::Archive]).await;
    let dir = tempfile::tempdir().unwrap();
    let options = EngineOptions {
        wait_for_operator: true,
        ..EngineOptions::default()
    };
    let RunningEngine {
        mut handle, done, ..
    } = crawldeck::engine::start_with(config(&demo), dir.path(), std::future::pending(), options)
        .await
        .expect("engine starts");
    // Waiting for the operator: nothing queued or in flight, one open alert.
    let alert_id = tokio::time::timeout(common::CRAWL_LIMIT, async {
        loop {
            handle.snapshots.changed().await.expect("engine runs");
            let s = handle.snapshots.borrow().clone();
            if s.frontier_size == 0 && s.in_flight == 0 && s.alerts.len() == 1 {
                return s.alerts[0].id;
            }
        }
    })
    .await
    .expect("the crawl waits on its alert");

    let fetched_numbers = |log: &[RequestRecord]| -> Vec<u64> {
        log.iter().filter_map(|r| trap_number(path(r))).collect()
    };
    let before = fetched_numbers(&demo.log().for_site(SiteKind::Archive));
    // Every story links tag page n; every tag page k links k+1 and k+2.
    let mut parked: HashSet<u64> = (1..=150).collect();
    parked.extend(before.iter().flat_map(|k| [k + 1, k + 2]));
    for k in &before {
        parked.remove(k);
    }
    assert!(!parked.is_empty());

    // Paused, or the crawl would end once the alert is decided.
    handle
        .control
        .send(Command::Pause(crawldeck::engine::control::Target::Global));
    let accept = handle.control.send(Command::AcceptAlert {
        alert_id,
        rule: None,
    });
    let accepted = answer_to(&mut handle, accept).await;
    assert!(
        accepted.ends_with(&format!("{} URL(s) blocked", parked.len())),
        "{accepted} ({} parked)",
        parked.len()
    );
    let removal = handle.control.send(Command::RemoveRule { rule_id: 1 });
    let removed = answer_to(&mut handle, removal).await;
    assert!(
        removed.ends_with(&format!(
            ": {} blocked URL(s) returned to the queue",
            parked.len()
        )),
        "{removed}"
    );
    handle
        .control
        .send(Command::Resume(crawldeck::engine::control::Target::Global));
    // They are fetched, once each (the trap grows again meanwhile: stop it).
    let deadline = tokio::time::Instant::now() + common::CRAWL_LIMIT;
    loop {
        let now: HashSet<u64> = fetched_numbers(&demo.log().for_site(SiteKind::Archive))
            .into_iter()
            .collect();
        if parked.is_subset(&now) {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "timed out");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    handle.control.send(Command::Shutdown);
    tokio::time::timeout(common::CRAWL_LIMIT, done)
        .await
        .expect("crawl stops")
        .expect("no panic")
        .expect("no engine error");
    drop(handle);
    let all = fetched_numbers(&demo.log().for_site(SiteKind::Archive));
    for k in &parked {
        assert_eq!(all.iter().filter(|n| *n == k).count(), 1, "tag page {k}");
    }
    demo.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_command_for_a_host_the_crawl_has_not_met_says_so() {
    use crawldeck::engine::RunOverrides;

    let demo = start_demo(vec![SiteKind::Shop]).await;
    let shop = crawldeck::engine::url_norm::host_key(&demo.seeds()[0]);
    let without_port = shop.split(':').next().unwrap().to_string();
    assert_ne!(shop, without_port, "the demo's hosts have ports");
    let dir = tempfile::tempdir().unwrap();
    let options = EngineOptions {
        overrides: RunOverrides {
            paused: Some(true),
            ..RunOverrides::default()
        },
        ..EngineOptions::default()
    };
    let RunningEngine {
        mut handle, done, ..
    } = crawldeck::engine::start_with(config(&demo), dir.path(), std::future::pending(), options)
        .await
        .expect("engine starts");
    let delay = |host: &str| Command::SetHostDelay {
        host: host.to_string(),
        delay: Some(Duration::from_secs(3)),
    };
    let id = handle.control.send(delay(&without_port));
    let typo = answer_to(&mut handle, id).await;
    assert!(
        typo.contains(&format!("no host {without_port} in this crawl yet"))
            && typo.contains(&format!("did you mean {shop}?")),
        "{typo}"
    );
    let id = handle.control.send(delay(&shop));
    let known = answer_to(&mut handle, id).await;
    assert!(!known.contains("no host"), "{known}");

    handle.control.send(Command::Shutdown);
    tokio::time::timeout(common::CRAWL_LIMIT, done)
        .await
        .expect("the engine stops")
        .unwrap()
        .unwrap();
    demo.shutdown().await;
}
