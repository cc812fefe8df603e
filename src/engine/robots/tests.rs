use std::time::Duration;

use axum::http::HeaderMap;
use axum::routing::get;
use axum::Router;

use super::*;
use crate::config::CrawlConfig;
use crate::engine::fetch::test_server::TestServer;

const MAX_DELAY: Duration = Duration::from_secs(30);

fn rules(token: &str, txt: &str) -> RobotsRules {
    RobotsRules::parse(txt.as_bytes(), token, MAX_DELAY)
}

fn ok(rules: &RobotsRules, path: &str) -> bool {
    rules.allowed(&Url::parse(&format!("http://www.joes-hardware.com{path}")).unwrap())
}

// The HTTP guide's first example: Slurp and Webcrawler may crawl all but /private.
const GUIDE: &str = "\
# this robots.txt file allows Slurp & Webcrawler to crawl
# the public parts of our site, but no other robots...

User-Agent: slurp
User-Agent: webcrawler
Disallow: /private

User-Agent: *
Disallow:
";

#[test]
fn guide_example_groups() {
    for bot in ["slurp", "Webcrawler"] {
        let r = rules(bot, GUIDE);
        assert!(!ok(&r, "/private"), "{bot}");
        assert!(!ok(&r, "/private/x.html"), "{bot}");
        assert!(ok(&r, "/index.html"), "{bot}");
    }
    // Anyone else: the `*` group with an empty Disallow, i.e. everything.
    let r = rules("crawldeck", GUIDE);
    assert!(ok(&r, "/private"));
    assert!(ok(&r, "/"));
}

#[test]
fn group_names_match_case_insensitively() {
    let r = rules(
        "crawldeck",
        "User-agent: CrawlDeck\nDisallow: /x\n\nUser-agent: *\nDisallow: /\n",
    );
    assert!(!ok(&r, "/x"));
    assert!(ok(&r, "/y"));
    // No group for us and none for `*`: no restrictions.
    let r = rules("crawldeck", "User-agent: badBot\nDisallow: /\n");
    assert!(ok(&r, "/anything"));
    let r = rules("badbot", "User-agent: badBot\nDisallow: /\n");
    assert!(!ok(&r, "/anything"));
}

#[test]
fn marys_antiques() {
    let txt = "\
User-Agent: Suzy-Spider
Disallow: /dynamic
Allow: /private/suzy-stuff
Disallow: /private

User-Agent: Furniture-Finder
Allow: /dynamic/check-inventory
Disallow: /dynamic
Disallow: /private

User-Agent: *
Disallow: /dynamic
Disallow: /private
";
    let suzy = rules("suzy-spider", txt);
    assert!(!ok(&suzy, "/dynamic/page"));
    assert!(ok(&suzy, "/private/suzy-stuff/list.html"));
    assert!(!ok(&suzy, "/private/mary.html"));
    let finder = rules("Furniture-Finder", txt);
    assert!(ok(&finder, "/dynamic/check-inventory?item=chair"));
    assert!(!ok(&finder, "/dynamic/other"));
    let us = rules("crawldeck", txt);
    assert!(!ok(&us, "/dynamic/check-inventory"));
    assert!(!ok(&us, "/private/suzy-stuff"));
    assert!(ok(&us, "/catalog.html"));
}

#[test]
fn allow_wins_by_length_not_by_order() {
    for txt in [
        "User-agent: *\nAllow: /private/ok\nDisallow: /private\n",
        "User-agent: *\nDisallow: /private\nAllow: /private/ok\n",
    ] {
        let r = rules("crawldeck", txt);
        assert!(ok(&r, "/private/ok/page"), "{txt}");
        assert!(!ok(&r, "/private/no"), "{txt}");
    }
    // Same length: Allow wins (RFC 9309 §2.2.2).
    let r = rules(
        "crawldeck",
        "User-agent: *\nDisallow: /page\nAllow: /page\n",
    );
    assert!(ok(&r, "/page"));
}

#[test]
fn disallow_tmp_is_a_prefix() {
    let r = rules("crawldeck", "User-agent: *\nDisallow: /tmp\n");
    for path in [
        "/tmp",
        "/tmp/",
        "/tmp.html",
        "/tmpfile",
        "/tmp/pliers.html",
        "/tmpspc/stuff.txt",
    ] {
        assert!(!ok(&r, path), "{path}");
    }
    assert!(ok(&r, "/tm"));
    assert!(ok(&r, "/TMP"), "matching is case-sensitive");
    let r = rules("crawldeck", "User-agent: *\nDisallow: /tmp/\n");
    assert!(ok(&r, "/tmp"));
    assert!(!ok(&r, "/tmp/a.html"));
}

#[test]
fn empty_disallow_and_allow_all() {
    assert!(ok(&rules("crawldeck", "User-agent: *\nDisallow:\n"), "/a"));
    assert!(ok(&rules("crawldeck", "User-agent: *\nAllow: /\n"), "/a"));
    assert!(!ok(
        &rules("crawldeck", "User-agent: *\nDisallow: /\n"),
        "/a"
    ));
    assert!(ok(&rules("crawldeck", ""), "/a"));
    // robots.txt itself is always allowed.
    assert!(ok(
        &rules("crawldeck", "User-agent: *\nDisallow: /\n"),
        "/robots.txt"
    ));
}

#[test]
fn escapes_compare_as_the_characters_they_encode() {
    for rule in ["/~joe", "/%7Ejoe", "/%7ejoe"] {
        let r = rules("crawldeck", &format!("User-agent: *\nDisallow: {rule}\n"));
        for path in ["/~joe/index.html", "/%7Ejoe/index.html", "/%7ejoe/"] {
            assert!(!ok(&r, path), "rule {rule} vs {path}");
        }
        assert!(ok(&r, "/joe"));
    }
    // %2F is not a slash.
    let r = rules("crawldeck", "User-agent: *\nDisallow: /a%2Fb\n");
    assert!(ok(&r, "/a/b"));
    assert!(!ok(&r, "/a%2fb"));
    assert_eq!(normalize_escapes("/%7e%2f%41%zz%"), "/~%2FA%zz%");
}

#[test]
fn wildcards_and_end_anchor() {
    let r = rules(
        "crawldeck",
        "User-agent: *\nDisallow: /*.php$\nDisallow: /private*/\n",
    );
    assert!(!ok(&r, "/index.php"));
    assert!(!ok(&r, "/a/b/c.php"));
    assert!(ok(&r, "/index.php?x=1"));
    assert!(ok(&r, "/index.phps"));
    assert!(!ok(&r, "/private-stuff/x"));
    assert!(ok(&r, "/private-stuff"));
}

#[test]
fn crawl_delay_and_sitemaps() {
    let txt = "User-agent: crawldeck\nCrawl-delay: 2.5\nDisallow: /x\n\nSitemap: https://example.org/sitemap.xml\n";
    let r = rules("crawldeck", txt);
    assert_eq!(r.crawl_delay(), Some(Duration::from_millis(2500)));
    assert_eq!(r.sitemaps(), ["https://example.org/sitemap.xml"]);
    let r = rules("crawldeck", "User-agent: *\nCrawl-delay: 3600\n");
    assert_eq!(r.crawl_delay(), Some(MAX_DELAY));
    for bad in ["-5", "0", "soon", "NaN", "1e40"] {
        let r = rules("crawldeck", &format!("User-agent: *\nCrawl-delay: {bad}\n"));
        assert!(r.crawl_delay().is_none_or(|d| d <= MAX_DELAY), "{bad}");
    }
}

#[test]
fn hostile_files_do_not_panic() {
    let mut junk: Vec<u8> = (0..=255u8).cycle().take(100_000).collect();
    junk.extend_from_slice(b"\nUser-agent: *\nDisallow: /x\n");
    let r = RobotsRules::parse(&junk, "crawldeck", MAX_DELAY);
    let _ = ok(&r, "/x");
    // A pattern too large to compile is dropped; the other rules still apply.
    let huge = format!(
        "User-agent: *\nDisallow: /a{}$\nDisallow: /secret\n",
        "*b".repeat(20_000)
    );
    let r = rules("crawldeck", &huge);
    assert_eq!(r.dropped_lines(), 1);
    assert!(!ok(&r, "/secret"));
    assert!(ok(&r, "/public"));
}

// --- status handling against a local server -------------------------------------

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
}

#[test]
fn robots_url_is_the_origin_root() {
    let u = Url::parse("https://user:pw@Example.org:8443/a/b?c#d").unwrap();
    assert_eq!(
        robots_url(&u).unwrap().as_str(),
        "https://example.org:8443/robots.txt"
    );
}

#[test]
fn rule_count_is_capped_within_our_group() {
    let mut txt = String::from("User-agent: *\n");
    for i in 0..5000 {
        txt.push_str(&format!("Disallow: /star{i}*x$\n"));
    }
    txt.push_str("\nUser-agent: crawldeck\nDisallow: /ours\n");
    for i in 0..(rules::MAX_RULES + 10) {
        txt.push_str(&format!("Disallow: /r{i}*x$\n"));
    }
    let started = std::time::Instant::now();
    let r = rules("crawldeck", &txt);
    // The `*` group does not count against our cap; ours is cut at MAX_RULES.
    assert_eq!(r.dropped_lines(), 11);
    assert!(!ok(&r, "/ours"));
    assert!(!ok(&r, "/r5/ax"));
    assert!(ok(&r, "/star5/ax"));
    // Not a timing assertion on speed, a guard against the unbounded case (seconds).
    assert!(started.elapsed() < Duration::from_secs(20));
}

#[test]
fn field_spellings_and_line_endings_follow_the_parser() {
    let txt = "User Agent: crawldeck\rDissallow /a%7e\r\nallow : /a~/ok # comment\n";
    let r = rules("crawldeck", txt);
    assert!(!ok(&r, "/a~/x"));
    assert!(ok(&r, "/a~/ok"));
    assert!(ok(&r, "/b"));
    // Rules before any User-agent line belong to no group.
    let r = rules("crawldeck", "Disallow: /x\nUser-agent: *\nDisallow: /y\n");
    assert!(ok(&r, "/x"));
    assert!(!ok(&r, "/y"));
    // No User-agent lines at all: the rules apply to everyone.
    assert!(!ok(&rules("crawldeck", "Disallow: /x\n"), "/x"));
}
