//! The private-address guard end to end, on loopback only: the classifier
//! counts the seed's 127.0.0.1 as public and 127.0.0.2–127.0.0.5 as private,
//! link-local, metadata and CGNAT addresses, and a host table points names
//! at them. Links, redirects and a robots.txt redirect to them are never
//! connected to (their servers log nothing) and each refused URL is recorded
//! with its reason. A seed on a private address opens that class only. Even
//! a broken guard could only reach loopback.

use crate::common;

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::header::{CONTENT_TYPE, HOST, LOCATION};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Router;
use common::{pages, CRAWL_LIMIT};
use crawldeck::engine::address::{classify, AddressClass, AddressRules};
use crawldeck::engine::config::{CrawlConfig, Scope};
use crawldeck::engine::store::PageOutcome;
use crawldeck::engine::telemetry::{EngineEvent, Snapshot};
use crawldeck::engine::EngineOptions;

/// (Host header, path) of every request a server answered.
type Log = Arc<Mutex<Vec<(String, String)>>>;

/// Ports of the servers on 127.0.0.2..=127.0.0.5, by last octet.
#[derive(Clone)]
struct Net {
    seed: u16,
    traps: HashMap<u8, u16>,
}

impl Net {
    fn trap(&self, octet: u8, path: &str) -> String {
        format!("http://127.0.0.{octet}:{}{path}", self.traps[&octet])
    }
}

/// 127.0.0.1 is public; .2 private, .3 link-local, .4 metadata, .5 CGNAT.
fn test_class(ip: IpAddr) -> AddressClass {
    let v4 = match ip {
        IpAddr::V4(v4) => Some(v4),
        IpAddr::V6(v6) => v6.to_ipv4_mapped(),
    };
    match v4.map(|v4| v4.octets()) {
        Some([127, 0, 0, 1]) => AddressClass::Public,
        Some([127, 0, 0, 2]) => AddressClass::Private,
        Some([127, 0, 0, 3]) => AddressClass::LinkLocal,
        Some([127, 0, 0, 4]) => AddressClass::Metadata,
        Some([127, 0, 0, 5]) => AddressClass::Cgnat,
        _ => classify(ip),
    }
}

fn rules() -> AddressRules {
    let at = |octet: u8| IpAddr::V4(Ipv4Addr::new(127, 0, 0, octet));
    AddressRules::default()
        .with_classifier(Arc::new(test_class))
        .with_hosts(HashMap::from([
            ("intranet.test".to_string(), vec![at(2)]),
            ("metadata.test".to_string(), vec![at(4)]),
            // The refused address first: only the public one may be used.
            ("mixed.test".to_string(), vec![at(3), at(1)]),
        ]))
}

/// The links of the seed's home page, each refused but the last two.
fn links(net: &Net) -> Vec<String> {
    vec![
        net.trap(2, "/secret"),
        format!("http://intranet.test:{}/by-name", net.traps[&2]),
        format!("http://metadata.test:{}/latest/meta-data/", net.traps[&4]),
        format!("http://[::ffff:127.0.0.2]:{}/mapped", net.traps[&2]),
        format!("http://2130706434:{}/decimal", net.traps[&2]),
        format!("http://0.0.0.0:{}/zero", net.seed),
        "/redirect-out".to_string(),
        "/redirect-meta".to_string(),
        format!("http://mixed.test:{}/mixed", net.seed),
        "/plain".to_string(),
    ]
}

async fn seed_site(State((log, net)): State<(Log, Net)>, req: Request) -> Response {
    let host = req
        .headers()
        .get(HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("")
        .to_string();
    let path = req.uri().path().to_string();
    log.lock().unwrap().push((host, path.clone()));
    let redirect = |to: String| (StatusCode::FOUND, [(LOCATION, to)]).into_response();
    match path.as_str() {
        "/robots.txt" => (
            StatusCode::MOVED_PERMANENTLY,
            [(LOCATION, net.trap(5, "/robots.txt"))],
        )
            .into_response(),
        "/" => {
            let body: String = links(&net)
                .iter()
                .map(|l| format!("<a href=\"{l}\">x</a>"))
                .collect();
            ([(CONTENT_TYPE, "text/html")], body).into_response()
        }
        "/redirect-out" => redirect(net.trap(3, "/landing")),
        "/redirect-meta" => redirect(format!("http://metadata.test:{}/", net.traps[&4])),
        _ => ([(CONTENT_TYPE, "text/html")], "<p>ok</p>").into_response(),
    }
}

async fn trap(State(log): State<Log>, req: Request) -> &'static str {
    log.lock()
        .unwrap()
        .push((String::new(), req.uri().path().to_string()));
    "you should not be here"
}

/// A crawl under [`rules`]: the settings it printed, its final snapshot and
/// its fetch errors (url, error) from the events the host view is fed from.
async fn crawl(
    mut cfg: CrawlConfig,
    dir: &std::path::Path,
) -> (Vec<String>, Snapshot, Vec<(String, String)>) {
    cfg.scope.mode = Scope::Any;
    cfg.politeness.min_delay = Duration::from_millis(10);
    cfg.politeness.delay_factor = 0.0;
    cfg.fetch.connect_timeout = Duration::from_secs(2);
    cfg.fetch.total_timeout = Duration::from_secs(5);
    cfg.storage.cache_bytes = 8 * 1024 * 1024;
    let options = EngineOptions {
        address_rules: rules(),
        ..EngineOptions::default()
    };
    let running = crawldeck::engine::start_with(cfg, dir, std::future::pending(), options)
        .await
        .expect("engine starts");
    let mut events = running.handle.events;
    let collected = tokio::spawn(async move {
        let mut errors = Vec::new();
        while let Some(event) = events.recv().await {
            if let EngineEvent::Fetched {
                url,
                error: Some(error),
                ..
            } = event
            {
                errors.push((url, error));
            }
        }
        errors
    });
    let snap = tokio::time::timeout(CRAWL_LIMIT, running.done)
        .await
        .expect("crawl ends within the limit")
        .unwrap()
        .unwrap();
    (running.settings, snap, collected.await.unwrap())
}

async fn serve(addr: &str, app: Router) -> u16 {
    let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    port
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn links_redirects_and_robots_redirects_to_private_addresses_are_never_connected_to() {
    let mut trap_logs = HashMap::new();
    let mut traps = HashMap::new();
    for octet in 2..=5u8 {
        let log: Log = Arc::default();
        let app = Router::new().fallback(trap).with_state(log.clone());
        traps.insert(octet, serve(&format!("127.0.0.{octet}:0"), app).await);
        trap_logs.insert(octet, log);
    }
    let seed_log: Log = Arc::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let net = Net {
        seed: listener.local_addr().unwrap().port(),
        traps,
    };
    let app = Router::new()
        .fallback(seed_site)
        .with_state((seed_log.clone(), net.clone()));
    tokio::spawn(async move { axum::serve(listener, app).await });

    let dir = tempfile::tempdir().unwrap();
    let cfg = CrawlConfig {
        seeds: vec![format!("http://127.0.0.1:{}/", net.seed)],
        ..CrawlConfig::default()
    };
    let (settings, snap, fetch_errors) = crawl(cfg, dir.path()).await;
    assert!(
        settings
            .iter()
            .any(|l| l
                == "private addresses refused (no seed is on one; --allow-private allows them)"),
        "{settings:?}"
    );

    for (octet, log) in &trap_logs {
        let log = log.lock().unwrap();
        assert!(log.is_empty(), "127.0.0.{octet} was asked for {log:?}");
    }
    let seed_log = seed_log.lock().unwrap().clone();
    let paths: Vec<&str> = seed_log.iter().map(|(_, p)| p.as_str()).collect();
    for fetched in [
        "/robots.txt",
        "/",
        "/redirect-out",
        "/redirect-meta",
        "/plain",
    ] {
        assert!(paths.contains(&fetched), "{fetched} not fetched: {paths:?}");
    }
    // mixed.test was reached on its public address only.
    let mixed_host = format!("mixed.test:{}", net.seed);
    assert!(
        seed_log.contains(&(mixed_host, "/mixed".into())),
        "{seed_log:?}"
    );
    assert!(!paths.contains(&"/zero"), "{paths:?}");

    let mut refused: HashMap<String, String> = pages(dir.path())
        .into_iter()
        .filter_map(|p| match p.outcome {
            PageOutcome::Error { kind, message } if kind == "private-address" => {
                Some((p.url, message))
            }
            _ => None,
        })
        .collect();
    // Each host met asks for /sitemap.xml: the guard refuses those too.
    let sitemaps = refused.len();
    refused.retain(|url, _| !url.ends_with("/sitemap.xml"));
    let sitemaps = sitemaps - refused.len();
    assert!(sitemaps > 0, "sitemap fetches go through the guard");
    let fetch_errors: Vec<_> = fetch_errors
        .into_iter()
        .filter(|(u, _)| !u.ends_with("/sitemap.xml"))
        .collect();
    let expect = [
        (net.trap(2, "/secret"), "private (RFC 1918)"),
        (
            format!("http://intranet.test:{}/by-name", net.traps[&2]),
            "private (RFC 1918)",
        ),
        (
            format!("http://metadata.test:{}/latest/meta-data/", net.traps[&4]),
            "link-local (metadata)",
        ),
        (
            format!("http://[::ffff:7f00:2]:{}/mapped", net.traps[&2]),
            "private (RFC 1918)",
        ),
        (net.trap(2, "/decimal"), "private (RFC 1918)"),
        (format!("http://0.0.0.0:{}/zero", net.seed), "unspecified"),
        (net.trap(3, "/landing"), "link-local address"),
        (
            format!("http://metadata.test:{}/", net.traps[&4]),
            "link-local (metadata)",
        ),
    ];
    for (url, class) in &expect {
        let message = refused
            .get(url)
            .unwrap_or_else(|| panic!("{url} not recorded as refused: {refused:?}"));
        assert!(message.contains(class), "{url}: {message}");
        // The host view's recent fetches come from these events.
        assert!(
            fetch_errors
                .iter()
                .any(|(u, e)| u == url && e.starts_with("private-address: ")),
            "{url}: {fetch_errors:?}"
        );
    }
    assert_eq!(refused.len(), expect.len(), "{refused:?}");
    // Refused once each: not retried, and not counted against a failing host.
    assert_eq!(fetch_errors.len(), expect.len(), "{fetch_errors:?}");
    assert_eq!(
        snap.counters.refused_private,
        (expect.len() + sitemaps) as u64
    );
    assert!(snap.counters.errors >= expect.len() as u64);
    let trap_host = format!("127.0.0.2:{}", net.traps[&2]);
    let host = snap.hosts.iter().find(|h| h.host == trap_host);
    let host = host.unwrap_or_else(|| panic!("{trap_host} not in {:?}", snap.hosts));
    // `/secret`, `/decimal` and `/sitemap.xml`; the other names of
    // 127.0.0.2 are hosts of their own.
    assert_eq!(host.status.refused, 3, "{host:?}");
    let why = host.last_refusal.as_deref().unwrap_or_default();
    assert!(why.contains("private (RFC 1918)"), "{why}");
    assert!(snap
        .hosts
        .iter()
        .all(|h| h.breaker.consecutive_failures == 0));
}

/// A site on 127.0.0.2 (private) whose home page links to another private
/// server and to a link-local one.
async fn intranet_site(
    State((log, other, trap)): State<(Log, u16, u16)>,
    req: Request,
) -> Response {
    let path = req.uri().path().to_string();
    log.lock().unwrap().push((String::new(), path.clone()));
    let body = match path.as_str() {
        "/" => format!(
            "<a href=\"/page\">p</a><a href=\"http://127.0.0.2:{other}/other\">o</a>\
             <a href=\"http://127.0.0.3:{trap}/link-local\">l</a>"
        ),
        _ => "<p>ok</p>".to_string(),
    };
    ([(CONTENT_TYPE, "text/html")], body).into_response()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_seed_on_a_private_address_opens_that_class_and_no_other() {
    let trap_log: Log = Arc::default();
    let app = Router::new().fallback(trap).with_state(trap_log.clone());
    let trap_port = serve("127.0.0.3:0", app).await;
    let other_log: Log = Arc::default();
    let app = Router::new().fallback(trap).with_state(other_log.clone());
    let other_port = serve("127.0.0.2:0", app).await;
    let site_log: Log = Arc::default();
    let app =
        Router::new()
            .fallback(intranet_site)
            .with_state((site_log.clone(), other_port, trap_port));
    let port = serve("127.0.0.2:0", app).await;

    let dir = tempfile::tempdir().unwrap();
    // A name: its class is learned by resolving it when the crawl starts.
    let cfg = CrawlConfig {
        seeds: vec![format!("http://intranet.test:{port}/")],
        ..CrawlConfig::default()
    };
    let (settings, _, fetch_errors) = crawl(cfg, dir.path()).await;
    assert!(
        settings
            .iter()
            .any(|l| l.contains("1 seed name(s) to resolve")),
        "{settings:?}"
    );

    let paths =
        |log: &Log| -> Vec<String> { log.lock().unwrap().iter().map(|(_, p)| p.clone()).collect() };
    assert_eq!(
        paths(&site_log),
        ["/robots.txt", "/", "/sitemap.xml", "/page"],
        "the seed's host"
    );
    assert_eq!(
        paths(&other_log),
        ["/robots.txt", "/other", "/sitemap.xml"],
        "another private address"
    );
    assert!(paths(&trap_log).is_empty(), "link-local was asked");
    let link_local = format!("http://127.0.0.3:{trap_port}/link-local");
    assert!(
        fetch_errors
            .iter()
            .any(|(u, e)| u == &link_local && e.contains("is a link-local address")),
        "{fetch_errors:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loopback_seeds_with_the_real_classification_still_crawl_the_demo_web() {
    let demo = common::start_demo(vec![
        crawldeck::demo::SiteKind::Shop,
        crawldeck::demo::SiteKind::Blog,
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = common::test_config(&demo);
    cfg.max_pages = 60;
    assert!(!cfg.fetch.allow_private);
    let snap = common::crawl(cfg, dir.path()).await;
    assert!(snap.counters.pages_fetched >= 60, "{:?}", snap.counters);
    let refused: Vec<_> = pages(dir.path())
        .into_iter()
        .filter(
            |p| matches!(&p.outcome, PageOutcome::Error { kind, .. } if kind == "private-address"),
        )
        .collect();
    assert!(refused.is_empty(), "{refused:?}");
    assert!(demo.log().count() > 0);
    demo.shutdown().await;
}
