use std::time::Duration;

use super::*;
use crate::engine::robots::{RobotsRules, RobotsVerdict};
use crate::engine::telemetry::HostActivity;

fn table(dir: &std::path::Path) -> HostTable {
    let store = Store::open(dir, 1 << 20).expect("store");
    HostTable::new(
        store,
        PolitenessConfig::default(),
        BreakerConfig::default(),
        RobotsConfig::default(),
        Duration::from_millis(250),
    )
}

/// The frontier's side of a host with nothing queued.
fn idle_queue() -> HostQueueView {
    HostQueueView {
        queued: 0,
        in_flight: 0,
        parked: 0,
        activity: HostActivity::Idle,
        head: Vec::new(),
    }
}

fn url(s: &str) -> Url {
    Url::parse(s).expect("url")
}

#[tokio::test(start_paused = true)]
async fn robots_txt_is_settled_before_any_page_and_its_rules_apply() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut hosts = table(dir.path());
    let now = Instant::now();
    let holds = hosts.adopt("h.test", Some("http://h.test/a/b?c"), now);
    assert!(!holds.robots_settled, "a new host waits for robots.txt");
    assert!(matches!(
        hosts.check_fetch("h.test", &url("http://h.test/a"), now),
        FetchGate::RobotsUnsettled
    ));
    let origin = hosts
        .begin_robots("h.test", Instant::now())
        .expect("robots.txt fetched from the origin");
    assert_eq!(origin.as_str(), "http://h.test/");
    assert_eq!(
        hosts.begin_robots("h.test", Instant::now()),
        None,
        "one robots.txt request at a time"
    );

    let rules = RobotsRules::parse(
        b"User-agent: *\nDisallow: /private\n",
        "crawldeck",
        Duration::from_secs(60),
    );
    let settled = hosts.settle_robots(
        "h.test",
        &url("http://h.test/"),
        RobotsAnswer {
            verdict: RobotsVerdict::Parsed(rules),
            ttl: Duration::from_secs(3600),
            elapsed: Duration::from_millis(5),
        },
        now,
    );
    assert!(matches!(settled, Some(RobotsSettled::Open { .. })));
    assert!(matches!(
        hosts.check_fetch("h.test", &url("http://h.test/private/x"), now),
        FetchGate::RobotsDenied
    ));
    assert!(matches!(
        hosts.check_fetch("h.test", &url("http://h.test/public"), now),
        FetchGate::Go { probe: None }
    ));
    let later = now + Duration::from_secs(3601);
    assert!(
        matches!(
            hosts.check_fetch("h.test", &url("http://h.test/public"), later),
            FetchGate::RobotsUnsettled
        ),
        "expired rules are fetched again"
    );
}

#[tokio::test(start_paused = true)]
async fn an_open_breaker_holds_the_host_and_lets_one_probe_through() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut hosts = table(dir.path());
    let now = Instant::now();
    hosts.adopt("f.test", Some("http://f.test/"), now);
    hosts.settle_robots(
        "f.test",
        &url("http://f.test/"),
        answer(RobotsVerdict::AllowAll),
        now,
    );
    let opened = hosts
        .force_open_breaker("f.test", now)
        .expect("closed -> open");
    assert_eq!(opened.to, BreakerPhase::Open);
    assert!(hosts.breaker_down("f.test"));
    let Some(BreakerHold::Hold {
        newly: true,
        probe_at: Some(probe_at),
    }) = hosts.breaker_hold("f.test", now)
    else {
        panic!("an open breaker holds the host until a probe time");
    };
    assert!(matches!(
        hosts.check_fetch("f.test", &url("http://f.test/x"), now),
        FetchGate::BreakerHeld
    ));
    assert_eq!(hosts.probe_due("f.test", now), Some(Err(probe_at)));
    assert_eq!(hosts.probe_due("f.test", probe_at), Some(Ok(())));
    let FetchGate::Go { probe: Some(t) } =
        hosts.check_fetch("f.test", &url("http://f.test/x"), probe_at)
    else {
        panic!("after the cooldown one request goes out as the probe");
    };
    assert_eq!(t.to, BreakerPhase::HalfOpen);
}

#[tokio::test(start_paused = true)]
async fn a_breaker_change_is_stored_with_the_next_group_of_pages() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut hosts = table(dir.path());
    let now = Instant::now();
    hosts.adopt("f.test", Some("http://f.test/"), now);
    hosts
        .force_open_breaker("f.test", now)
        .expect("closed -> open");
    hosts.breaker_changed("f.test");
    let stored = |hosts: &HostTable| hosts.store.get::<HostRecord>(Tree::Hosts, b"f.test");
    assert!(stored(&hosts).unwrap().is_none(), "not before the group");
    save_figures(&mut hosts);
    assert!(stored(&hosts).unwrap().is_some());
    let mut again = CrawlBatch::default();
    hosts.state_to_save(&mut again).expect("encoded");
    assert!(again.is_empty(), "stored once");
}

/// Stores the changed hosts' figures and records, as the coordinator's sync does.
fn save_figures(hosts: &mut HostTable) {
    let mut batch = CrawlBatch::default();
    hosts.state_to_save(&mut batch).expect("encoded");
    hosts.store.apply(batch).expect("stored");
    hosts.state_saved();
}

#[tokio::test(start_paused = true)]
async fn idle_hosts_leave_memory_past_the_cap_and_come_back_with_their_settings() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut hosts = table(dir.path());
    hosts.resident_cap = 2;
    let now = Instant::now();
    for host in ["a.test", "b.test", "c.test", "d.test"] {
        hosts.adopt(host, Some(&format!("http://{host}/")), now);
    }
    hosts
        .set_delay_override("a.test", Some(Duration::from_secs(7)))
        .expect("stored");
    hosts.set_paused("b.test", true).expect("stored");
    hosts
        .give_up(
            "c.test",
            PageOutcome::NotCrawled {
                reason: "kept failing".into(),
            },
        )
        .expect("stored");
    hosts.count_recorded("a.test", Some(200), false);
    hosts.fetch_started("d.test", now);
    assert!(
        hosts.eviction_candidates().is_empty(),
        "figures not stored yet: nobody leaves"
    );
    save_figures(&mut hosts);
    let candidates = hosts.eviction_candidates();
    assert_eq!(candidates.len(), 2, "down to the cap");
    assert!(
        !candidates.contains(&"d.test".to_string()),
        "a host with a request in flight stays"
    );
    let keys: Vec<&str> = candidates.iter().map(String::as_str).collect();
    assert_eq!(hosts.evict(&keys).unwrap(), 2);
    assert_eq!(hosts.hosts.len(), 2);
    assert!(
        hosts.eviction_candidates().is_empty(),
        "at the cap: nothing leaves"
    );
    hosts.resident_cap = 0;
    hosts.fetch_ended("d.test");
    save_figures(&mut hosts);
    let all = hosts.eviction_candidates();
    let keys: Vec<&str> = all.iter().map(String::as_str).collect();
    hosts.evict(&keys).unwrap();
    assert!(hosts.hosts.is_empty());
    for host in ["a.test", "b.test", "c.test"] {
        hosts.adopt(host, None, now);
    }
    let view = |hosts: &mut HostTable, name: &str| {
        let queue = idle_queue();
        hosts.view(name, now, queue).expect("host in memory")
    };
    assert_eq!(
        view(&mut hosts, "a.test").delay_override,
        Some(Duration::from_secs(7))
    );
    assert!(view(&mut hosts, "b.test").paused);
    assert!(
        hosts.finished_reason("c.test").is_some(),
        "a given-up host stays given up"
    );
    let a = view(&mut hosts, "a.test");
    assert_eq!((a.fetched, a.status.s2xx), (1, 1), "its figures come back");

    let mut resumed = HostTable::new(
        hosts.store.clone(),
        PolitenessConfig::default(),
        BreakerConfig::default(),
        RobotsConfig::default(),
        Duration::from_millis(250),
    );
    assert_eq!(resumed.restore_met(0).unwrap(), 4, "every host met");
    assert_eq!(view(&mut resumed, "a.test").fetched, 1);
}

#[tokio::test(start_paused = true)]
async fn expired_rules_stay_in_force_when_their_refetch_fails() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut hosts = table(dir.path());
    let summary = |hosts: &mut HostTable, now: Instant| {
        let queue = idle_queue();
        let view = hosts.view("k.test", now, queue).expect("host in memory");
        view.robots_summary.expect("a settled host has a summary")
    };
    hosts.adopt("k.test", Some("http://k.test/"), Instant::now());
    hosts
        .begin_robots("k.test", Instant::now())
        .expect("first fetch");
    let rules = RobotsRules::parse(
        b"User-agent: *\nDisallow: /private\n",
        "crawldeck",
        Duration::from_secs(60),
    );
    hosts.settle_robots(
        "k.test",
        &url("http://k.test/"),
        answer(RobotsVerdict::Parsed(rules)),
        Instant::now(),
    );

    tokio::time::advance(Duration::from_secs(3601)).await;
    let now = Instant::now();
    assert!(matches!(
        hosts.check_fetch("k.test", &url("http://k.test/public"), now),
        FetchGate::RobotsUnsettled
    ));
    hosts
        .begin_robots("k.test", Instant::now())
        .expect("expired rules are fetched again");
    assert!(summary(&mut hosts, now).contains("refetching"));
    let failed = hosts.settle_robots(
        "k.test",
        &url("http://k.test/"),
        answer(RobotsVerdict::Unavailable { retry_after: None }),
        now,
    );
    let Some(RobotsSettled::KeptAfterFailure {
        age,
        attempts: 1,
        retry_at: Some(retry_at),
    }) = failed
    else {
        panic!(
            "a failed refetch keeps the rules: {}",
            summary(&mut hosts, now)
        );
    };
    assert_eq!(age, Duration::from_secs(3601));
    assert!(retry_at > now, "retried later, with the backoff");
    assert!(
        matches!(
            hosts.check_fetch("k.test", &url("http://k.test/public"), now),
            FetchGate::Go { .. }
        ),
        "the host keeps crawling"
    );
    assert!(
        matches!(
            hosts.check_fetch("k.test", &url("http://k.test/private/x"), now),
            FetchGate::RobotsDenied
        ),
        "under the kept rules"
    );
    let text = summary(&mut hosts, now);
    assert!(
        text.contains("refetch failed") && text.contains("keeping rules from 1h 1s ago"),
        "{text}"
    );

    // The retry fails too: still in force, one more attempt counted.
    tokio::time::advance(retry_at - now).await;
    let now = Instant::now();
    hosts
        .begin_robots("k.test", Instant::now())
        .expect("the retry goes out");
    assert_eq!(
        hosts.begin_robots("k.test", Instant::now()),
        None,
        "one request at a time"
    );
    assert!(matches!(
        hosts.check_fetch("k.test", &url("http://k.test/public"), now),
        FetchGate::Go { .. }
    ));
    assert!(matches!(
        hosts.settle_robots(
            "k.test",
            &url("http://k.test/"),
            answer(RobotsVerdict::Unavailable { retry_after: None }),
            now,
        ),
        Some(RobotsSettled::KeptAfterFailure { attempts: 2, .. })
    ));

    // It comes back: the new rules replace the kept ones.
    hosts.begin_robots("k.test", Instant::now()).expect("retry");
    let rules = RobotsRules::parse(
        b"User-agent: *\nDisallow: /new\n",
        "crawldeck",
        Duration::from_secs(60),
    );
    assert!(matches!(
        hosts.settle_robots(
            "k.test",
            &url("http://k.test/"),
            answer(RobotsVerdict::Parsed(rules)),
            now,
        ),
        Some(RobotsSettled::Open { .. })
    ));
    assert!(matches!(
        hosts.check_fetch("k.test", &url("http://k.test/private/x"), now),
        FetchGate::Go { .. }
    ));
    assert!(!summary(&mut hosts, now).contains("refetch failed"));
}

fn answer(verdict: RobotsVerdict) -> RobotsAnswer {
    RobotsAnswer {
        verdict,
        ttl: Duration::from_secs(3600),
        elapsed: Duration::ZERO,
    }
}

fn disallow(path: &str) -> RobotsVerdict {
    let body = format!("User-agent: *\nDisallow: {path}\n");
    RobotsVerdict::Parsed(RobotsRules::parse(
        body.as_bytes(),
        "crawldeck",
        Duration::from_secs(60),
    ))
}

#[tokio::test(start_paused = true)]
async fn http_and_https_of_one_host_each_obey_their_own_robots_txt() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut hosts = table(dir.path());
    let now = Instant::now();
    hosts.adopt("o.test", Some("http://o.test/"), now);
    let http = hosts.begin_robots("o.test", now).expect("the host's own");
    assert_eq!(http.as_str(), "http://o.test/");
    hosts.settle_robots("o.test", &http, answer(disallow("/http-only")), now);
    assert!(matches!(
        hosts.check_fetch("o.test", &url("http://o.test/http-only"), now),
        FetchGate::RobotsDenied
    ));

    // The https origin has a robots.txt of its own, fetched when its first URL comes up.
    assert!(matches!(
        hosts.check_fetch("o.test", &url("https://o.test/http-only"), now),
        FetchGate::RobotsUnsettled
    ));
    let https = hosts
        .begin_robots("o.test", now)
        .expect("the other scheme's");
    assert_eq!(https.as_str(), "https://o.test/");
    assert_eq!(
        hosts.begin_robots("o.test", now),
        None,
        "one request at a time"
    );
    let settled = hosts.settle_robots("o.test", &https, answer(disallow("/https-only")), now);
    assert!(matches!(settled, Some(RobotsSettled::Open { .. })));
    for (target, denied) in [
        ("https://o.test/http-only", false),
        ("https://o.test/https-only", true),
        ("http://o.test/https-only", false),
        ("http://o.test/http-only", true),
    ] {
        let gate = hosts.check_fetch("o.test", &url(target), now);
        assert_eq!(matches!(gate, FetchGate::RobotsDenied), denied, "{target}");
    }
    let view = hosts.view("o.test", now, idle_queue()).expect("in memory");
    let summary = view.robots_summary.expect("summary");
    assert!(summary.contains("; https: robots.txt parsed"), "{summary}");

    // Each origin expires and is fetched again on its own.
    tokio::time::advance(Duration::from_secs(3601)).await;
    let later = Instant::now();
    assert_eq!(hosts.begin_robots("o.test", later), Some(http));
    assert_eq!(hosts.begin_robots("o.test", later), Some(https));
}

#[tokio::test(start_paused = true)]
async fn the_other_scheme_forbidden_denies_its_urls_without_giving_up_the_host() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut hosts = table(dir.path());
    let now = Instant::now();
    hosts.adopt("p.test", Some("https://p.test/"), now);
    let own = hosts.begin_robots("p.test", now).expect("own");
    hosts.settle_robots("p.test", &own, answer(RobotsVerdict::AllowAll), now);
    hosts.check_fetch("p.test", &url("http://p.test/a"), now);
    let other = hosts.begin_robots("p.test", now).expect("other");
    assert_eq!(other.as_str(), "http://p.test/");
    let settled = hosts.settle_robots("p.test", &other, answer(RobotsVerdict::DisallowAll), now);
    assert!(matches!(settled, Some(RobotsSettled::OriginClosed)));
    assert!(matches!(
        hosts.check_fetch("p.test", &url("http://p.test/a"), now),
        FetchGate::RobotsDenied
    ));
    assert!(matches!(
        hosts.check_fetch("p.test", &url("https://p.test/a"), now),
        FetchGate::Go { .. }
    ));
    assert_eq!(hosts.finished_reason("p.test"), None, "the host goes on");
}
