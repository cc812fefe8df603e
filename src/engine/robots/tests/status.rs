//! robots.txt fetching against a local server: one behaviour per `<case>.localhost`.

use std::time::Duration;

use axum::http::HeaderMap;
use axum::routing::get;
use axum::Router;

use super::super::*;
use crate::engine::config::CrawlConfig;
use crate::engine::fetch::test_server::TestServer;
/// One server, one behaviour per `<case>.localhost` name.
async fn robots_server() -> TestServer {
    let app = Router::new()
        .route(
            "/robots.txt",
            get(|headers: HeaderMap| async move { answer(&headers).await }),
        )
        .route(
            "/elsewhere.txt",
            get(|| async { "User-agent: *\nDisallow: /moved-rules\n" }),
        );
    TestServer::axum(app).await
}

async fn answer(headers: &HeaderMap) -> axum::response::Response {
    use axum::response::IntoResponse;
    let host = headers["host"].to_str().unwrap_or("");
    let (case, port) = host.split_once(".localhost:").unwrap_or(("", ""));
    let text = |status: u16, hdrs: Vec<(&'static str, String)>, body: String| {
        let mut r = axum::response::Response::builder().status(status);
        for (n, v) in hdrs {
            r = r.header(n, v);
        }
        r.body(axum::body::Body::from(body)).unwrap()
    };
    match case {
        "ok" => text(
            200,
            vec![("cache-control", "max-age=3600".into())],
            "User-agent: *\nDisallow: /private\nCrawl-delay: 2\n".into(),
        ),
        "plain" => "User-agent: crawldeck\nDisallow: /\n".into_response(),
        "moved" => text(
            301,
            vec![("location", format!("http://ok.localhost:{port}/robots.txt"))],
            String::new(),
        ),
        "relative" => text(
            302,
            vec![("location", "/elsewhere.txt".into())],
            String::new(),
        ),
        "loop" => text(302, vec![("location", "/robots.txt".into())], String::new()),
        "slowloop" => {
            tokio::time::sleep(Duration::from_secs(1)).await;
            text(302, vec![("location", "/robots.txt".into())], String::new())
        }
        "nowhere" => text(301, vec![], String::new()),
        "ftp" => text(
            301,
            vec![("location", "ftp://files.example/robots.txt".into())],
            String::new(),
        ),
        "unauth" => text(401, vec![], String::new()),
        "forbidden" => text(403, vec![], String::new()),
        "missing" => text(404, vec![], "not here".into()),
        "gone" => text(410, vec![], String::new()),
        "teapot" => text(418, vec![], String::new()),
        "error" => text(500, vec![], String::new()),
        "busy" => text(503, vec![("retry-after", "120".into())], String::new()),
        "throttled" => text(429, vec![("retry-after", "5".into())], String::new()),
        "slow" => {
            tokio::time::sleep(Duration::from_secs(5)).await;
            text(200, vec![], String::new())
        }
        "big" => {
            let mut body = "User-agent: *\nDisallow: /early\n".to_string();
            body.push_str(&"# padding\n".repeat(200));
            body.push_str("Disallow: /late\n");
            text(200, vec![], body)
        }
        _ => text(400, vec![], String::new()),
    }
}

fn setup() -> (Fetcher, RobotsConfig) {
    let mut cfg = CrawlConfig::default();
    cfg.fetch.read_timeout = Duration::from_millis(200);
    cfg.fetch.total_timeout = Duration::from_secs(2);
    cfg.robots.default_ttl = Duration::from_secs(555);
    cfg.robots.max_size = 512;
    // The test server is on loopback.
    cfg.fetch.allow_private = true;
    (Fetcher::new(&cfg).unwrap(), cfg.robots)
}

async fn judge(
    server: &TestServer,
    case: &str,
    cfg: &RobotsConfig,
    f: &Fetcher,
) -> (RobotsVerdict, Duration, Vec<u16>) {
    let origin = Url::parse(&format!(
        "http://{case}.localhost:{}/some/page?x=1",
        server.addr.port()
    ))
    .unwrap();
    fetch_robots(f, &origin, cfg, "crawldeck").await
}

fn page(server: &TestServer, case: &str, path: &str) -> Url {
    Url::parse(&format!(
        "http://{case}.localhost:{}{path}",
        server.addr.port()
    ))
    .unwrap()
}

#[tokio::test]
async fn status_semantics_strict() {
    let server = robots_server().await;
    let (f, cfg) = setup();

    let (v, ttl, st) = judge(&server, "ok", &cfg, &f).await;
    assert!(matches!(v, RobotsVerdict::Parsed(_)), "{v:?}");
    assert!(!v.allowed(&page(&server, "ok", "/private/a")));
    assert!(v.allowed(&page(&server, "ok", "/public")));
    assert_eq!(v.crawl_delay(), Some(Duration::from_secs(2)));
    assert_eq!((ttl, st), (Duration::from_secs(3600), vec![200]));

    let (v, ttl, _) = judge(&server, "plain", &cfg, &f).await;
    assert!(!v.allowed(&page(&server, "plain", "/x")));
    assert_eq!(
        ttl,
        Duration::from_secs(555),
        "default ttl without caching headers"
    );

    let (v, _, st) = judge(&server, "moved", &cfg, &f).await;
    assert!(
        !v.allowed(&page(&server, "moved", "/private")),
        "rules of the redirect target apply"
    );
    assert_eq!(st, vec![301, 200]);
    let (v, _, st) = judge(&server, "relative", &cfg, &f).await;
    assert!(!v.allowed(&page(&server, "relative", "/moved-rules")));
    assert_eq!(st, vec![302, 200]);

    let (v, _, st) = judge(&server, "loop", &cfg, &f).await;
    assert!(matches!(v, RobotsVerdict::AllowAll), "{v:?}");
    assert_eq!(
        st.len(),
        MAX_REDIRECTS + 1,
        "initial request + 5 hops, then stop"
    );
    for case in ["nowhere", "ftp"] {
        let (v, _, st) = judge(&server, case, &cfg, &f).await;
        assert!(matches!(v, RobotsVerdict::AllowAll), "{case}: {v:?}");
        assert_eq!(st, vec![301], "{case}");
    }

    for case in ["unauth", "forbidden"] {
        let (v, ttl, _) = judge(&server, case, &cfg, &f).await;
        assert!(matches!(v, RobotsVerdict::DisallowAll), "{case}: {v:?}");
        assert!(!v.allowed(&page(&server, case, "/")));
        assert_eq!(ttl, Duration::from_secs(555));
    }
    for case in ["missing", "gone", "teapot"] {
        let (v, _, _) = judge(&server, case, &cfg, &f).await;
        assert!(matches!(v, RobotsVerdict::AllowAll), "{case}: {v:?}");
    }
    server.stop().await;
}

#[tokio::test]
async fn unavailable_cases_postpone() {
    let server = robots_server().await;
    let (f, cfg) = setup();
    let expect = [
        ("error", None, 500),
        ("busy", Some(Duration::from_secs(120)), 503),
        ("throttled", Some(Duration::from_secs(5)), 429),
        ("slow", None, NO_RESPONSE),
    ];
    for (case, retry, status) in expect {
        let (v, ttl, st) = judge(&server, case, &cfg, &f).await;
        match v {
            RobotsVerdict::Unavailable { retry_after } => assert_eq!(retry_after, retry, "{case}"),
            other => panic!("{case}: {other:?}"),
        }
        assert_eq!(ttl, Duration::ZERO);
        assert_eq!(st, vec![status], "{case}");
    }
    // Nobody listening at all.
    let dead = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = dead.local_addr().unwrap().port();
    drop(dead);
    let origin = Url::parse(&format!("http://dead.localhost:{port}/")).unwrap();
    let (v, _, st) = fetch_robots(&f, &origin, &cfg, "crawldeck").await;
    assert!(
        matches!(v, RobotsVerdict::Unavailable { retry_after: None }),
        "{v:?}"
    );
    assert_eq!(st, vec![NO_RESPONSE]);
    server.stop().await;
}

#[tokio::test]
async fn rfc9309_mode_allows_on_401_403() {
    let server = robots_server().await;
    let (f, mut cfg) = setup();
    cfg.mode = RobotsMode::Rfc9309;
    for case in ["unauth", "forbidden"] {
        let (v, _, _) = judge(&server, case, &cfg, &f).await;
        assert!(matches!(v, RobotsVerdict::AllowAll), "{case}: {v:?}");
    }
    server.stop().await;
}

#[tokio::test]
async fn large_robots_is_truncated_and_parsed() {
    let server = robots_server().await;
    let (f, cfg) = setup();
    let (v, _, st) = judge(&server, "big", &cfg, &f).await;
    assert_eq!(st, vec![200]);
    assert!(!v.allowed(&page(&server, "big", "/early")));
    // Past max_size (512 bytes): not seen.
    assert!(v.allowed(&page(&server, "big", "/late")));
    server.stop().await;
}

#[tokio::test(start_paused = true)]
async fn the_whole_redirect_chain_has_one_deadline() {
    let server = robots_server().await;
    let mut cfg = CrawlConfig::default();
    cfg.fetch.read_timeout = Duration::from_secs(10);
    // Each hop (1 s) fits in it; the six requests of the chain (6 s) do not.
    cfg.fetch.total_timeout = Duration::from_secs(3);
    cfg.fetch.allow_private = true;
    let f = Fetcher::new(&cfg).unwrap();
    let started = tokio::time::Instant::now();
    let (v, ttl, st) = judge(&server, "slowloop", &cfg.robots, &f).await;
    let took = started.elapsed();
    assert!(
        matches!(v, RobotsVerdict::Unavailable { .. }),
        "out of time is unavailable, not a finished chain: {v:?} {st:?}"
    );
    assert_eq!(ttl, Duration::ZERO);
    assert_eq!(st.last(), Some(&NO_RESPONSE), "{st:?}");
    assert!(
        st.len() <= MAX_REDIRECTS,
        "cut before the hop limit: {st:?}"
    );
    assert!(
        took <= Duration::from_millis(3100),
        "one deadline: {took:?}"
    );
    server.stop().await;
}

#[test]
fn ttl_bounds() {
    let cfg = RobotsConfig::default();
    assert_eq!(ttl_from(None, &cfg), Duration::from_secs(24 * 3600));
    assert_eq!(ttl_from(Some(Duration::ZERO), &cfg), MIN_HEADER_TTL);
    assert_eq!(
        ttl_from(Some(Duration::from_secs(u32::MAX as u64)), &cfg),
        MAX_TTL
    );
    let long_default = RobotsConfig {
        default_ttl: Duration::from_secs(365 * 24 * 3600),
        ..cfg
    };
    assert_eq!(ttl_from(None, &long_default), MAX_TTL);
    // RFC 9309 §2.4: cached rules are reused for at most 24 hours.
    assert_eq!(MAX_TTL, Duration::from_secs(24 * 3600));
    let a_week = Some(Duration::from_secs(7 * 24 * 3600));
    assert_eq!(ttl_from(a_week, &cfg), Duration::from_secs(24 * 3600));
}

#[test]
fn robots_url_is_the_origin_root() {
    let u = Url::parse("https://user:pw@Example.org:8443/a/b?c#d").unwrap();
    assert_eq!(
        robots_url(&u).unwrap().as_str(),
        "https://example.org:8443/robots.txt"
    );
}

/// With no seed on loopback, a loopback robots.txt is refused before any
/// connection: no file for now, asked again after a minute rather than a day.
#[tokio::test]
async fn a_robots_txt_on_a_refused_address_allows_all_briefly() {
    let server = robots_server().await;
    let (_, cfg) = setup();
    let mut crawl = CrawlConfig::default();
    crawl.fetch.allow_private = false;
    let guarded = Fetcher::new(&crawl).unwrap();
    let (v, ttl, st) = judge(&server, "forbidden", &cfg, &guarded).await;
    assert!(matches!(v, RobotsVerdict::AllowAll), "{v:?}");
    assert_eq!(ttl, MIN_HEADER_TTL);
    assert!(st.is_empty(), "no answer came: {st:?}");
}
