//! A server that trickles a body (never idle long enough for the read
//! timeout) is cut at the total timeout, asked once more, and the URL ends as
//! a timeout error: it does not hold the crawl for `MAX_ATTEMPTS` full limits.

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{crawl, pages};
use crawldeck::engine::store::PageOutcome;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Serves `/` (a link to `/slow`), a 404 robots.txt and a trickling `/slow`;
/// logs every request path.
async fn trickling_server() -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/", listener.local_addr().unwrap());
    let log = Arc::new(Mutex::new(Vec::new()));
    let server_log = log.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(serve(stream, server_log.clone()));
        }
    });
    (base, log)
}

async fn serve(mut stream: TcpStream, log: Arc<Mutex<Vec<String>>>) {
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let text = String::from_utf8_lossy(&head);
    let path = text.split(' ').nth(1).unwrap_or("").to_string();
    log.lock().unwrap().push(path.clone());
    match path.as_str() {
        "/" => {
            let body = r#"<html><body><a href="/slow">slow</a></body></html>"#;
            let reply = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(reply.as_bytes()).await;
        }
        "/slow" => {
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 100000\r\nConnection: close\r\n\r\n")
                .await;
            // One byte every 50 ms: never idle for read_timeout, never done.
            for _ in 0..100_000 {
                if stream.write_all(b"x").await.is_err() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        _ => {
            let _ = stream
                .write_all(
                    b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                )
                .await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trickling_body_is_requested_twice_then_recorded_as_a_timeout() {
    let (base, log) = trickling_server().await;
    let mut cfg = common::seeded_config(vec![base.clone()]);
    cfg.politeness.min_delay = Duration::from_millis(20);
    cfg.fetch.read_timeout = Duration::from_millis(800);
    cfg.fetch.total_timeout = Duration::from_millis(400);
    // Every path trickles: a guessed /sitemap.xml would be a second timeout.
    cfg.sitemaps.enabled = false;
    let dir = tempfile::tempdir().unwrap();
    let snapshot = crawl(cfg, dir.path()).await;

    let requests = log.lock().unwrap().clone();
    let slow = requests.iter().filter(|p| p.as_str() == "/slow").count();
    assert_eq!(slow, 2, "requests: {requests:?}");
    assert_eq!(snapshot.counters.errors, 1);
    let by_kind: Vec<_> = snapshot.counters.errors_by_kind.iter().collect();
    assert_eq!(
        by_kind,
        [(&"timeout".to_string(), &1)],
        "one URL, two attempts"
    );
    let slow_url = format!("{base}slow");
    let record = pages(dir.path())
        .into_iter()
        .find(|p| p.url == slow_url)
        .expect("a record for /slow");
    match record.outcome {
        PageOutcome::Error { kind, message } => {
            assert_eq!(kind, "timeout", "{message}");
            assert!(message.contains("fetch.total_timeout"), "{message}");
        }
        other => panic!("{other:?}"),
    }
}
