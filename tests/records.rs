//! What a page record keeps of what extraction found: the canonical URL and
//! how many links it had and how many the per-page cap cut; the cut shown by
//! `crawldeck pages` and counted in the crawl's counters; and a big index page
//! followed whole with the default caps.

use crate::common;

use std::path::Path;

use crawldeck::demo::SiteKind;
use crawldeck::engine::store::{PageOutcome, PageRecord};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn page_records_keep_the_canonical_url_and_the_links_past_the_cap() {
    let demo = common::start_demo(vec![SiteKind::Shop]).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let mut cfg = common::test_config(&demo);
    cfg.scope.max_links_per_page = 3;
    cfg.max_pages = 60;
    let snapshot = common::crawl(cfg, dir.path()).await;
    let pages = common::pages(dir.path());
    cut_links_are_counted_and_listed(&snapshot.counters, &pages, dir.path());

    let product = pages
        .iter()
        .find(|p| {
            p.url.contains("/p/") && matches!(p.outcome, PageOutcome::Fetched { status: 200 })
        })
        .expect("a product page was fetched");
    let canonical = product
        .canonical
        .as_deref()
        .expect("its canonical URL is kept");
    assert!(
        product.url.starts_with(canonical),
        "{canonical} is the page's plain URL ({})",
        product.url
    );
    assert!(
        pages.iter().any(|p| p.links_dropped > 0 && p.outlinks <= 3),
        "pages with more than 3 links record how many were left out"
    );
    assert!(
        pages
            .iter()
            .all(|p| p.links_dropped == 0 || p.outlinks <= 3),
        "a page that dropped links never queued more than the cap"
    );
    for p in pages.iter().filter(|p| p.simhash.is_some()) {
        let found = p.links_found.expect("an HTML page counts the links it had");
        assert!(
            found >= p.outlinks + p.links_dropped,
            "{}: {found} found, {} queued, {} past the cap",
            p.url,
            p.outlinks,
            p.links_dropped
        );
    }
    assert!(
        pages
            .iter()
            .any(|p| p.links_found > Some(0) && p.outlinks == 0),
        "links already seen are counted as found, not as queued"
    );
    drop(demo);
}

/// The counters and `crawldeck pages --json` say what the records keep.
fn cut_links_are_counted_and_listed(
    counters: &crawldeck::engine::telemetry::Counters,
    pages: &[PageRecord],
    dir: &Path,
) {
    let cut: Vec<&PageRecord> = pages.iter().filter(|p| p.links_dropped > 0).collect();
    let total: u64 = cut.iter().map(|p| u64::from(p.links_dropped)).sum();
    assert!(total > 0);
    assert_eq!(counters.links_cut, total);
    assert_eq!(counters.pages_cut, cut.len() as u64);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_crawldeck"))
        .args(["pages", dir.to_str().unwrap(), "--json"])
        .env_remove("RUST_LOG")
        .output()
        .expect("the binary runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed: std::collections::HashMap<String, u64> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .map(|row| {
            let n = row["links_cut"].as_u64().expect("every row has links_cut");
            (row["url"].as_str().unwrap().to_string(), n)
        })
        .collect();
    for p in pages {
        assert_eq!(
            listed.get(&p.url),
            Some(&u64::from(p.links_dropped)),
            "{}",
            p.url
        );
    }
}

/// Links in an API reference's index: `fn.<word>.html`, no numbers that a
/// trap detector would read as a counter.
const INDEX_LINKS: usize = 3_000;

fn index_word(mut n: usize) -> String {
    let mut word = String::new();
    loop {
        word.push(char::from(b'a' + (n % 26) as u8));
        n /= 26;
        if n == 0 {
            return word;
        }
    }
}

/// Serves `/`, an index of [`INDEX_LINKS`] functions; everything else is a 404.
async fn index_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/", listener.local_addr().unwrap());
    let mut body = String::from("<html><head><title>All items</title></head><body><ul>");
    for n in 0..INDEX_LINKS {
        let word = index_word(n);
        body.push_str(&format!("<li><a href=\"fn.{word}.html\">{word}</a></li>"));
    }
    body.push_str("</ul></body></html>");
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(serve_index(stream, body.clone()));
        }
    });
    base
}

async fn serve_index(mut stream: TcpStream, body: String) {
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let path = String::from_utf8_lossy(&head)
        .split(' ')
        .nth(1)
        .unwrap_or("")
        .to_string();
    let reply = match path.as_str() {
        "/" => format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ),
        _ => "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".into(),
    };
    let _ = stream.write_all(reply.as_bytes()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_index_of_3000_links_is_followed_whole_with_the_default_caps() {
    let base = index_server().await;
    let mut cfg = common::seeded_config(vec![base.clone()]);
    // The index only: its links are queued, not fetched (and no
    // /sitemap.xml queued beside them).
    cfg.max_pages = 1;
    cfg.sitemaps.enabled = false;
    let dir = tempfile::tempdir().expect("temp dir");
    let snapshot = common::crawl(cfg, dir.path()).await;
    let pages = common::pages(dir.path());
    let index = pages.iter().find(|p| p.url == base).expect("the index");
    assert_eq!(index.links_found, Some(INDEX_LINKS as u32));
    assert_eq!(index.links_dropped, 0, "no link cut");
    assert_eq!(index.outlinks, INDEX_LINKS as u32, "every link queued");
    assert_eq!(snapshot.frontier_size, INDEX_LINKS as u64);
    assert_eq!(
        (snapshot.counters.links_cut, snapshot.counters.pages_cut),
        (0, 0)
    );
    assert!(snapshot.alerts.is_empty(), "{:?}", snapshot.alerts);
}
