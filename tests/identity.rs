//! A crawl under the operator's own User-Agent answers to its product token:
//! robots.txt groups, meta robots and X-Robots-Tag written for `acmebot` are
//! obeyed, those for other bots are not. Asserted from the server's request log.

use crate::common;

use std::sync::{Arc, Mutex};

use axum::extract::{Request, State};
use axum::http::header::{HeaderName, HeaderValue, CONTENT_TYPE, USER_AGENT};
use axum::response::{IntoResponse, Response};
use axum::Router;

const UA: &str = "AcmeBot/2.0 (+https://acme.example/bot)";

/// (path, User-Agent) of every request, in order.
type Log = Arc<Mutex<Vec<(String, String)>>>;

const ROBOTS: &str = "\
User-agent: *
Disallow: /star-only

User-agent: acmebot
Disallow: /acme-only
";

fn html(head: &str, link: &str) -> String {
    format!("<html><head>{head}</head><body><a href=\"{link}\">next</a></body></html>")
}

async fn serve(State(log): State<Log>, req: Request) -> Response {
    let path = req.uri().path().to_string();
    let ua = req
        .headers()
        .get(USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    log.lock().unwrap().push((path.clone(), ua));
    let page = |body: String| ([(CONTENT_TYPE, "text/html")], body).into_response();
    let tagged = |tag: &'static str, link: &str| {
        (
            [
                (CONTENT_TYPE, HeaderValue::from_static("text/html")),
                (
                    HeaderName::from_static("x-robots-tag"),
                    HeaderValue::from_static(tag),
                ),
            ],
            html("", link),
        )
            .into_response()
    };
    match path.as_str() {
        "/robots.txt" => ([(CONTENT_TYPE, "text/plain")], ROBOTS).into_response(),
        "/" => page(
            [
                "/acme-only",
                "/star-only",
                "/meta-ours",
                "/meta-other",
                "/meta-generic",
                "/header-ours",
                "/header-other",
                "/header-generic",
            ]
            .iter()
            .map(|p| format!("<a href=\"{p}\">{p}</a>"))
            .collect(),
        ),
        "/meta-ours" => page(html(
            r#"<meta name="AcmeBot" content="nofollow">"#,
            "/from-meta-ours",
        )),
        "/meta-other" => page(html(
            r#"<meta name="googlebot" content="nofollow">"#,
            "/from-meta-other",
        )),
        "/meta-generic" => page(html(
            r#"<meta name="robots" content="nofollow">"#,
            "/from-meta-generic",
        )),
        "/header-ours" => tagged("ACMEBOT: noindex, nofollow", "/from-header-ours"),
        "/header-other" => tagged("googlebot: noindex, nofollow", "/from-header-other"),
        "/header-generic" => tagged("nofollow", "/from-header-generic"),
        _ => page(html("", "/")),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_custom_user_agent_answers_to_its_product_token_everywhere() {
    let log: Log = Arc::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = Router::new().fallback(serve).with_state(log.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });

    let dir = tempfile::tempdir().unwrap();
    let mut cfg = common::seeded_config(vec![format!("http://{addr}/")]);
    // What `--user-agent` sets; the token is left to be derived.
    cfg.identity.user_agent = UA.into();
    let snap = common::crawl(cfg, dir.path()).await;

    assert_eq!(snap.product_token, "acmebot");
    assert_eq!(snap.user_agent, UA);
    let log = log.lock().unwrap().clone();
    let paths: Vec<&str> = log.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(paths.first(), Some(&"/robots.txt"), "{paths:?}");
    assert!(log.iter().all(|(_, ua)| ua == UA), "{log:?}");
    for fetched in [
        "/",
        "/star-only",
        "/meta-ours",
        "/meta-other",
        "/from-meta-other",
        "/header-ours",
        "/header-other",
        "/from-header-other",
    ] {
        assert!(paths.contains(&fetched), "{fetched} not fetched: {paths:?}");
    }
    for never in [
        "/acme-only",
        "/from-meta-ours",
        "/from-meta-generic",
        "/from-header-ours",
        "/from-header-generic",
    ] {
        assert!(!paths.contains(&never), "{never} was fetched: {paths:?}");
    }
}
