use std::convert::Infallible;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderMap as AxumHeaders, StatusCode};
use axum::routing::get;
use axum::Router;
use bytes::Bytes;
use tokio::io::AsyncWriteExt;

use super::test_server::{read_request_head, TestServer};
use super::*;

fn config() -> CrawlConfig {
    let mut cfg = CrawlConfig::default();
    cfg.identity.from = Some("ops@example.org".into());
    cfg.fetch.connect_timeout = Duration::from_secs(2);
    cfg.fetch.read_timeout = Duration::from_millis(200);
    cfg.fetch.total_timeout = Duration::from_secs(5);
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
async fn gzip_bomb_stops_at_the_cap() {
    // 32 MiB of zeros compress to ~32 KiB; the cap applies to what comes out.
    let bomb = gzip(&vec![0u8; 32 << 20]);
    assert!(bomb.len() < 64 * 1024);
    let app = Router::new().route(
        "/",
        get(move || {
            let bomb = bomb.clone();
            async move { respond(200, &[("content-encoding", "gzip")], bomb) }
        }),
    );
    let server = TestServer::axum(app).await;
    let err = fetcher()
        .fetch(&server.url("/"), None, 1 << 20)
        .await
        .unwrap_err();
    assert_eq!(err.kind, FetchErrorKind::BodyTooLarge, "{err}");
    assert!(err.message.contains("1048576 byte limit"), "{err}");
    server.stop().await;
}

#[tokio::test]
async fn oversized_plain_bodies_are_refused() {
    let app = Router::new()
        .route("/declared", get(|| async { vec![b'a'; 4096] }))
        .route(
            "/chunked",
            get(|| async {
                let parts = (0..8).map(|_| Ok::<_, Infallible>(Bytes::from(vec![b'b'; 1024])));
                Body::from_stream(futures_util::stream::iter(parts))
            }),
        )
        .route("/fits", get(|| async { vec![b'c'; 1000] }));
    let server = TestServer::axum(app).await;
    let f = fetcher();
    for path in ["/declared", "/chunked"] {
        let err = f.fetch(&server.url(path), None, 1000).await.unwrap_err();
        assert_eq!(err.kind, FetchErrorKind::BodyTooLarge, "{path}: {err}");
    }
    let ok = f.fetch(&server.url("/fits"), None, 1000).await.unwrap();
    assert_eq!(ok.body.len(), 1000);
    // robots.txt keeps what fits instead.
    let cut = f
        .fetch_with(&server.url("/chunked"), None, 1500, Overflow::Truncate)
        .await
        .unwrap();
    assert_eq!(cut.body.len(), 1500);
    server.stop().await;
}

#[tokio::test]
async fn stalled_body_times_out_after_read_timeout() {
    let server = TestServer::raw(|mut stream| async move {
        read_request_head(&mut stream).await;
        let _ = stream
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789")
            .await;
        // Say nothing more; the client must give up on its own.
        tokio::time::sleep(Duration::from_secs(5)).await;
    })
    .await;
    let started = std::time::Instant::now();
    let err = fetcher()
        .fetch(&server.url("/"), None, 1024)
        .await
        .unwrap_err();
    assert_eq!(err.kind, FetchErrorKind::Timeout, "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert!(
        err.elapsed >= Duration::from_millis(200),
        "{:?}",
        err.elapsed
    );
    server.stop().await;
}

#[tokio::test]
async fn silent_server_times_out() {
    let server = TestServer::raw(|mut stream| async move {
        read_request_head(&mut stream).await;
        tokio::time::sleep(Duration::from_secs(5)).await;
    })
    .await;
    let err = fetcher()
        .fetch(&server.url("/"), None, 1024)
        .await
        .unwrap_err();
    assert_eq!(err.kind, FetchErrorKind::Timeout, "{err}");
    assert!(err.kind.is_host_failure());
    server.stop().await;
}

#[tokio::test]
async fn connection_reset_is_reported_as_reset() {
    for partial in [
        &b""[..],
        b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nabc",
    ] {
        let server = TestServer::raw(move |mut stream| async move {
            read_request_head(&mut stream).await;
            let _ = stream.write_all(partial).await;
            let _ = stream.flush().await;
            // SO_LINGER 0: close with RST instead of FIN.
            let _ = stream.set_zero_linger();
            drop(stream);
        })
        .await;
        let err = fetcher()
            .fetch(&server.url("/"), None, 4096)
            .await
            .unwrap_err();
        assert_eq!(
            err.kind,
            FetchErrorKind::Reset,
            "after {} bytes: {err}",
            partial.len()
        );
        assert!(err.kind.is_host_failure());
        server.stop().await;
    }
}

#[tokio::test]
async fn refused_connection_is_connect() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let url = Url::parse(&format!("http://{addr}/")).unwrap();
    let err = fetcher().fetch(&url, None, 1024).await.unwrap_err();
    assert_eq!(err.kind, FetchErrorKind::Connect, "{err}");
    assert!(err.message.contains(&addr.to_string()), "{err}");
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

#[test]
fn host_failures_are_connect_timeout_reset() {
    use FetchErrorKind::*;
    for kind in [Connect, Timeout, Reset] {
        assert!(kind.is_host_failure());
    }
    for kind in [BodyTooLarge, Decode, InvalidUrl, Other] {
        assert!(!kind.is_host_failure());
    }
}

#[tokio::test]
async fn corrupt_gzip_is_decode() {
    let app = Router::new().route(
        "/",
        get(|| async {
            respond(
                200,
                &[("content-encoding", "gzip")],
                "this is not gzip at all",
            )
        }),
    );
    let server = TestServer::axum(app).await;
    let err = fetcher()
        .fetch(&server.url("/"), None, 1024)
        .await
        .unwrap_err();
    assert_eq!(err.kind, FetchErrorKind::Decode, "{err}");
    assert!(!err.kind.is_host_failure());
    server.stop().await;
}

#[tokio::test]
async fn too_many_response_headers_fail() {
    let server = TestServer::raw(|mut stream| async move {
        read_request_head(&mut stream).await;
        let mut head = String::from("HTTP/1.1 200 OK\r\n");
        for i in 0..MAX_RESPONSE_HEADERS + 10 {
            head.push_str(&format!("x-h{i}: v\r\n"));
        }
        head.push_str("content-length: 2\r\n\r\nok");
        let _ = stream.write_all(head.as_bytes()).await;
    })
    .await;
    let err = fetcher()
        .fetch(&server.url("/"), None, 1024)
        .await
        .unwrap_err();
    assert_eq!(err.kind, FetchErrorKind::Other, "{err}");
    server.stop().await;
}

#[tokio::test]
async fn trickling_body_hits_the_total_timeout() {
    let server = TestServer::raw(|mut stream| async move {
        read_request_head(&mut stream).await;
        let _ = stream
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n")
            .await;
        // One byte every 50 ms: never idle for read_timeout, never done.
        for _ in 0..1000 {
            if stream.write_all(b"x").await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    let mut cfg = config();
    cfg.fetch.total_timeout = Duration::from_millis(600);
    let started = std::time::Instant::now();
    let err = Fetcher::new(&cfg)
        .unwrap()
        .fetch(&server.url("/"), None, 4096)
        .await
        .unwrap_err();
    assert_eq!(err.kind, FetchErrorKind::Timeout, "{err}");
    assert!(started.elapsed() < Duration::from_secs(3));
    server.stop().await;
}
