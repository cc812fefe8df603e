use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderMap as AxumHeaders, StatusCode};
use axum::routing::get;
use axum::Router;

use super::test_server::TestServer;
use super::*;

fn config() -> CrawlConfig {
    let mut cfg = CrawlConfig::default();
    cfg.identity.from = Some("ops@example.org".into());
    cfg.fetch.connect_timeout = Duration::from_secs(2);
    cfg.fetch.read_timeout = Duration::from_millis(200);
    cfg.fetch.total_timeout = Duration::from_secs(5);
    // The test servers are on loopback; `guarded` covers the guard.
    cfg.fetch.allow_private = true;
    cfg
}

fn fetcher() -> Fetcher {
    Fetcher::new(&config()).unwrap()
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(data).unwrap();
    enc.finish().unwrap()
}

fn respond(
    status: u16,
    headers: &[(&str, &str)],
    body: impl Into<Body>,
) -> axum::response::Response {
    let mut builder = axum::response::Response::builder().status(status);
    for (n, v) in headers {
        builder = builder.header(*n, *v);
    }
    builder.body(body.into()).unwrap()
}

#[tokio::test]
async fn sends_identity_and_conditional_headers() {
    let seen: Arc<Mutex<Vec<AxumHeaders>>> = Arc::default();
    let log = seen.clone();
    let app = Router::new().route(
        "/page",
        get(move |headers: AxumHeaders| {
            let log = log.clone();
            async move {
                let matches = headers.get("if-none-match").is_some_and(|v| v == "\"v1\"");
                log.lock().unwrap().push(headers);
                if matches {
                    respond(304, &[("etag", "\"v1\"")], Body::empty())
                } else {
                    respond(
                        200,
                        &[
                            ("etag", "\"v1\""),
                            ("last-modified", "Sat, 21 Nov 2026 10:00:00 GMT"),
                        ],
                        "hello",
                    )
                }
            }
        }),
    );
    let server = TestServer::axum(app).await;
    let f = fetcher();
    let url = server.url("/page?q=1");

    let first = f.fetch(&url, None, 1024).await.unwrap();
    assert_eq!(first.status, 200);
    assert_eq!(&first.body[..], b"hello");
    assert_eq!(first.etag.as_deref(), Some("\"v1\""));
    assert_eq!(
        first.last_modified.as_deref(),
        Some("Sat, 21 Nov 2026 10:00:00 GMT")
    );
    assert_eq!(first.remote_ip, Some("127.0.0.1".parse().unwrap()));

    let validators = Validators {
        etag: first.etag.clone(),
        last_modified: first.last_modified.clone(),
    };
    let second = f.fetch(&url, Some(&validators), 1024).await.unwrap();
    assert_eq!(second.status, 304);
    assert!(second.body.is_empty());

    let seen = seen.lock().unwrap().clone();
    let h = &seen[0];
    assert_eq!(h["user-agent"], config().identity.user_agent.as_str());
    assert_eq!(h["from"], "ops@example.org");
    assert_eq!(h["accept"], ACCEPT);
    assert_eq!(h["accept-encoding"], ACCEPT_ENCODING);
    assert!(h.get("if-none-match").is_none());
    assert_eq!(seen[1]["if-none-match"], "\"v1\"");
    assert_eq!(
        seen[1]["if-modified-since"],
        "Sat, 21 Nov 2026 10:00:00 GMT"
    );

    let head = String::from_utf8(second.request_head.clone()).unwrap();
    assert!(head.starts_with("GET /page?q=1 HTTP/1.1\r\n"), "{head}");
    assert!(
        head.contains(&format!("host: {}\r\n", server.addr)),
        "{head}"
    );
    assert!(head.contains("if-none-match: \"v1\"\r\n"), "{head}");
    for (name, value) in ["user-agent", "from", "accept", "accept-encoding"]
        .map(|n| (n, seen[1][n].to_str().unwrap().to_string()))
    {
        // The WARC request record shows what actually went out.
        assert!(
            head.contains(&format!("{name}: {value}\r\n")),
            "{name} in {head}"
        );
    }
    assert!(head.ends_with("\r\n\r\n"));
    let resp_head = String::from_utf8(second.response_head.clone()).unwrap();
    assert!(
        resp_head.starts_with("HTTP/1.1 304 Not Modified\r\n"),
        "{resp_head}"
    );
    server.stop().await;
}

#[tokio::test]
async fn conditional_headers_are_off_when_configured_off() {
    let seen: Arc<Mutex<Vec<AxumHeaders>>> = Arc::default();
    let log = seen.clone();
    let app = Router::new().route(
        "/",
        get(move |headers: AxumHeaders| {
            let log = log.clone();
            async move {
                log.lock().unwrap().push(headers);
                "ok"
            }
        }),
    );
    let server = TestServer::axum(app).await;
    let mut cfg = config();
    cfg.fetch.conditional_requests = false;
    let f = Fetcher::new(&cfg).unwrap();
    let v = Validators {
        etag: Some("\"x\"".into()),
        last_modified: None,
    };
    f.fetch(&server.url("/"), Some(&v), 1024).await.unwrap();
    assert!(seen.lock().unwrap()[0].get("if-none-match").is_none());
    server.stop().await;
}

#[tokio::test]
async fn gzip_body_is_decoded_and_headers_are_read() {
    let page = b"<html><title>t</title>".repeat(50);
    let compressed = gzip(&page);
    let app = Router::new().route(
        "/",
        get(move || {
            let compressed = compressed.clone();
            async move {
                respond(
                    200,
                    &[
                        ("content-encoding", "gzip"),
                        ("content-type", "text/html; charset=utf-8"),
                        ("x-robots-tag", "noindex"),
                        ("x-robots-tag", "crawldeck: nofollow"),
                        ("cache-control", "max-age=60"),
                    ],
                    compressed,
                )
            }
        }),
    );
    let server = TestServer::axum(app).await;
    let r = fetcher()
        .fetch(&server.url("/"), None, 1 << 20)
        .await
        .unwrap();
    assert_eq!(&r.body[..], &page[..]);
    assert_eq!(r.content_type.as_deref(), Some("text/html; charset=utf-8"));
    assert_eq!(r.x_robots_tag, vec!["noindex", "crawldeck: nofollow"]);
    assert_eq!(r.cache_max_age, Some(Duration::from_secs(60)));
    server.stop().await;
}

#[tokio::test]
async fn redirect_is_returned_with_resolved_location() {
    let app = Router::new().route(
        "/a/b",
        get(|| async { respond(301, &[("location", "../c?x=1")], Body::empty()) }),
    );
    let server = TestServer::axum(app).await;
    let r = fetcher()
        .fetch(&server.url("/a/b"), None, 1024)
        .await
        .unwrap();
    assert_eq!(r.status, 301);
    assert_eq!(r.location, Some(server.url("/c?x=1")));
    assert_eq!(r.final_url, server.url("/a/b"));
    server.stop().await;
}

#[tokio::test]
async fn credentials_in_a_location_are_dropped() {
    let app = Router::new().route(
        "/a",
        get(|| async {
            respond(
                302,
                &[("location", "http://alice:s3cret@other.localhost/b")],
                Body::empty(),
            )
        }),
    );
    let server = TestServer::axum(app).await;
    let r = fetcher()
        .fetch(&server.url("/a"), None, 1024)
        .await
        .unwrap();
    assert_eq!(r.status, 302);
    assert_eq!(
        r.location.map(|l| l.to_string()),
        Some("http://other.localhost/b".to_string())
    );
    server.stop().await;
}

#[tokio::test]
async fn retry_after_is_parsed() {
    let app = Router::new().route(
        "/",
        get(|| async {
            (
                StatusCode::SERVICE_UNAVAILABLE,
                [("retry-after", "7")],
                "busy",
            )
        }),
    );
    let server = TestServer::axum(app).await;
    let r = fetcher().fetch(&server.url("/"), None, 1024).await.unwrap();
    assert_eq!(r.status, 503);
    assert_eq!(r.retry_after, Some(Duration::from_secs(7)));
    server.stop().await;
}

#[tokio::test]
async fn dot_localhost_resolves_without_the_system_resolver() {
    let app = Router::new().route(
        "/",
        get(|headers: AxumHeaders| async move { headers["host"].to_str().unwrap().to_string() }),
    );
    let server = TestServer::axum(app).await;
    let f = fetcher();
    let url = Url::parse(&format!("http://shop.localhost:{}/", server.addr.port())).unwrap();
    let r = f.fetch(&url, None, 1024).await.unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(r.body, format!("shop.localhost:{}", server.addr.port()));
    assert_eq!(f.dns_lookups(), 0);
    server.stop().await;
}

#[tokio::test]
async fn invalid_urls_are_refused_before_any_request() {
    let f = fetcher();
    let ftp = Url::parse("ftp://example.org/file").unwrap();
    assert_eq!(
        f.fetch(&ftp, None, 1).await.unwrap_err().kind,
        FetchErrorKind::InvalidUrl
    );
    let long = Url::parse(&format!("http://127.0.0.1:9/{}", "a".repeat(MAX_URL_LEN))).unwrap();
    let err = f.fetch(&long, None, 1).await.unwrap_err();
    assert_eq!(err.kind, FetchErrorKind::InvalidUrl);
    assert!(err.message.len() < 700, "{}", err.message.len());
    assert_eq!(f.dns_lookups(), 0);
}

#[test]
fn setup_rejects_unsendable_identity() {
    let mut cfg = CrawlConfig::default();
    cfg.identity.user_agent = "bad\nagent".into();
    assert!(matches!(
        Fetcher::new(&cfg),
        Err(FetchSetupError::UserAgent(_))
    ));
}

mod failures;
mod guarded;

#[test]
fn a_body_in_one_chunk_is_kept_as_it_came_and_more_are_joined_in_order() {
    let mut one = super::Body::new(64);
    assert_eq!(one.len(), 0);
    let chunk = Bytes::from(vec![b'a'; 100]);
    let at = chunk.as_ptr();
    one.push(chunk);
    let kept = one.into_bytes();
    assert_eq!(kept.as_ptr(), at, "not copied");
    assert_eq!(kept.len(), 100);

    let mut several = super::Body::new(1000);
    for part in [&b"first "[..], b"second ", b"third"] {
        several.push(Bytes::copy_from_slice(part));
    }
    assert_eq!(several.len(), 18);
    assert_eq!(&several.into_bytes()[..], b"first second third");
    assert!(super::Body::new(10).into_bytes().is_empty());
}

#[tokio::test]
async fn a_check_is_a_head_and_falls_back_to_a_cut_get_when_head_is_refused() {
    let methods: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = methods.clone();
    let app = Router::new()
        .route(
            "/img.png",
            get(|| async { respond(200, &[], vec![7u8; 5000]) }),
        )
        .route(
            "/no-head",
            axum::routing::any(move |method: axum::http::Method| {
                let log = log.clone();
                async move {
                    log.lock().unwrap().push(method.to_string());
                    match method {
                        axum::http::Method::HEAD => respond(405, &[], Body::empty()),
                        _ => respond(200, &[("content-type", "text/plain")], vec![b'x'; 1 << 20]),
                    }
                }
            }),
        );
    let server = TestServer::axum(app).await;
    let f = fetcher();

    let head = f.check(&server.url("/img.png")).await.unwrap();
    assert_eq!((head.status, head.body.len()), (200, 0));
    assert_eq!(head.content_length, Some(5000), "the size the server gives");
    assert!(head.request_head.starts_with(b"HEAD /img.png "));

    let refused = f.check(&server.url("/no-head")).await.unwrap();
    assert_eq!(refused.status, 200);
    assert!(
        refused.body.len() as u64 <= CHECK_GET_BYTES,
        "the GET's body is cut"
    );
    assert_eq!(*methods.lock().unwrap(), ["HEAD", "GET"]);
}
