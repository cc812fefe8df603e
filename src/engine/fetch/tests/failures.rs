//! Hostile and broken peers: every one ends in a classified error, in bounded time.

use std::convert::Infallible;
use std::time::Duration;

use axum::body::Body;
use axum::routing::get;
use axum::Router;
use bytes::Bytes;
use tokio::io::AsyncWriteExt;

use super::super::test_server::{read_request_head, TestServer};
use super::super::*;
use super::{config, fetcher, gzip, respond};

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
    assert!(!ok.truncated);
    // Pages and robots.txt keep what fits instead, and say so.
    for path in ["/chunked", "/declared"] {
        let cut = f
            .fetch_with(&server.url(path), None, 1500, Overflow::Truncate)
            .await
            .unwrap();
        assert_eq!((cut.body.len(), cut.truncated), (1500, true), "{path}");
    }
    let whole = f
        .fetch_with(&server.url("/fits"), None, 1500, Overflow::Truncate)
        .await
        .unwrap();
    assert!(!whole.truncated);
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
    assert_eq!(err.kind, FetchErrorKind::TotalTimeout, "{err}");
    assert_eq!(err.kind.label(), "timeout");
    assert!(started.elapsed() < Duration::from_secs(3));
    server.stop().await;
}
