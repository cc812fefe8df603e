//! robots.txt edge cases of RFC 9309, end to end: each site below is its own
//! origin with its own robots.txt, crawled under a custom User-Agent, and what
//! was obeyed is read from the servers' request logs.

use crate::common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Request, State};
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use axum::Router;

const UA: &str = "AcmeBot/2.0 (+https://acme.example/bot)";

/// One test site: its robots.txt and the paths its home page links to.
struct Site {
    robots: Vec<u8>,
    links: Vec<String>,
    /// Paths requested, in order.
    log: Mutex<Vec<String>>,
}

async fn serve(State(site): State<Arc<Site>>, req: Request) -> Response {
    let path = req.uri().path().to_string();
    site.log.lock().unwrap().push(path.clone());
    match path.as_str() {
        "/robots.txt" => ([(CONTENT_TYPE, "text/plain")], site.robots.clone()).into_response(),
        "/" => {
            let links: String = site
                .links
                .iter()
                .map(|l| format!("<a href=\"{l}\">{l}</a>"))
                .collect();
            (
                [(CONTENT_TYPE, "text/html")],
                format!("<html><body>{links}</body></html>"),
            )
                .into_response()
        }
        _ => (
            [(CONTENT_TYPE, "text/html")],
            "<html><body>leaf</body></html>",
        )
            .into_response(),
    }
}

async fn start(robots: Vec<u8>, links: &[&str]) -> (String, Arc<Site>) {
    let site = Arc::new(Site {
        robots,
        links: links.iter().map(|l| l.to_string()).collect(),
        log: Mutex::default(),
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = Router::new().fallback(serve).with_state(site.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}/"), site)
}

/// A file of `lines` Disallow rules for `*`, `/blocked-0` … `/blocked-{lines-1}`.
fn many_rules(lines: usize) -> Vec<u8> {
    let mut text = String::from("User-agent: *\n");
    for n in 0..lines {
        text.push_str(&format!("Disallow: /blocked-{n}\n"));
    }
    text.into_bytes()
}

/// A file over the 500 KiB limit whose rule across the limit reads
/// `Disallow: /cut` once cut: parsed half, it would block `/cutlery`.
fn cut_at_the_limit() -> Vec<u8> {
    let limit = 500 * 1024;
    let mut text = String::from("User-agent: *\nDisallow: /kept\n");
    while text.len() < limit - 200 {
        text.push_str("# padding to reach the size limit of robots.txt\n");
    }
    let filler = limit - text.len() - "Disallow: /cut".len();
    text.push_str(&format!("#{}\n", "x".repeat(filler - 2)));
    text.push_str("Disallow: /cut-here-and-no-further\n");
    assert!(text.len() > limit);
    assert_eq!(&text.as_bytes()[limit - 14..limit], b"Disallow: /cut");
    text.into_bytes()
}

fn paths(site: &Site) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for path in site.log.lock().unwrap().iter() {
        *counts.entry(path.clone()).or_default() += 1;
    }
    counts
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bom_versioned_groups_long_files_and_cut_lines_follow_rfc_9309() {
    // A BOM, then a group naming us with a version: it applies, `*` does not.
    let bom = "\u{feff}User-agent: AcmeBot/2.0\nDisallow: /acme-only\n\n\
                   User-agent: *\nDisallow: /star-only\n"
        .as_bytes()
        .to_vec();
    let (bom_url, bom_site) = start(bom, &["/acme-only", "/star-only"]).await;
    let (many_url, many_site) =
        start(many_rules(1_500), &["/blocked-0", "/blocked-1499", "/open"]).await;
    let (cut_url, cut_site) = start(cut_at_the_limit(), &["/kept", "/cutlery"]).await;

    let dir = tempfile::tempdir().unwrap();
    let mut cfg = common::seeded_config(vec![bom_url, many_url, cut_url]);
    cfg.identity.user_agent = UA.into();
    let snap = common::crawl(cfg, dir.path()).await;

    let bom = paths(&bom_site);
    assert!(
        !bom.contains_key("/acme-only"),
        "our versioned group applies: {bom:?}"
    );
    assert!(
        bom.contains_key("/star-only"),
        "the * group does not: {bom:?}"
    );
    let many = paths(&many_site);
    for blocked in ["/blocked-0", "/blocked-1499"] {
        assert!(
            !many.contains_key(blocked),
            "rule 1,500 is applied too: {many:?}"
        );
    }
    assert!(many.contains_key("/open"), "{many:?}");
    let cut = paths(&cut_site);
    assert!(
        !cut.contains_key("/kept"),
        "rules before the limit apply: {cut:?}"
    );
    assert!(
        cut.contains_key("/cutlery"),
        "the cut line is dropped, not parsed half: {cut:?}"
    );
    for site in [&bom, &many, &cut] {
        assert_eq!(
            site.get("/robots.txt"),
            Some(&1),
            "one robots.txt fetch: {site:?}"
        );
    }
    let groups: Vec<&str> = snap
        .hosts
        .iter()
        .filter_map(|h| h.robots_summary.as_deref())
        .collect();
    assert!(
        groups.iter().any(|g| g.contains("our group applies")),
        "the host view says which group applied: {groups:?}"
    );
    assert!(
        groups.iter().any(|g| g.contains("group * applies")),
        "{groups:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_whose_urls_a_rule_took_does_not_hold_the_crawl_for_its_robots_txt() {
    let demo = common::start_demo(vec![crawldeck::demo::SiteKind::Shop]).await;
    // Nothing listens there: its robots.txt is postponed, retried with backoff.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut cfg = common::test_config(&demo);
    cfg.seeds.push(format!("http://127.0.0.1:{port}/gone.html"));
    // The default: ten minutes of retries before the host is given up.
    cfg.robots.give_up_after = crawldeck::engine::config::RobotsConfig::default().give_up_after;
    let dir = tempfile::tempdir().unwrap();
    let rule = format!(r"127\.0\.0\.1:{port}/");
    let snapshot = common::crawl_with_rule(cfg, dir.path(), &rule).await;
    assert_eq!(snapshot.finish_reason.as_deref(), Some("frontier empty"));
    assert!(snapshot.counters.pages_fetched > 10, "the shop was crawled");
    demo.shutdown().await;
}
