//! Tests of the demo web over loopback HTTP. Every test shuts its servers down.

mod faults;
mod sites;

use std::net::SocketAddr;
use std::time::Duration;

use super::{DemoOptions, DemoWeb, SiteKind};

pub(super) const TEST_UA: &str = "crawldeck/0.1 (+http://127.0.0.1/bot)";
pub(super) const TEST_FROM: &str = "ops@example.invalid";

/// A client that resolves every demo host to 127.0.0.1, follows no redirects
/// and does not decompress (so tests see the wire encoding).
pub(super) fn client(web: &DemoWeb) -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(
        reqwest::header::FROM,
        reqwest::header::HeaderValue::from_static(TEST_FROM),
    );
    let mut builder = reqwest::Client::builder()
        .no_proxy()
        .no_gzip()
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(TEST_UA)
        .default_headers(headers)
        .timeout(Duration::from_secs(30));
    for url in web.kinds().into_iter().map(|k| web.base_url(k)) {
        let host = url.host_str().expect("demo URLs have a host").to_string();
        builder = builder.resolve(&host, SocketAddr::from(([127, 0, 0, 1], 0)));
    }
    builder.build().expect("test client builds")
}

pub(super) async fn get(client: &reqwest::Client, url: &str) -> (u16, String) {
    let resp = client.get(url).send().await.expect("request succeeds");
    let status = resp.status().as_u16();
    (status, resp.text().await.expect("body reads"))
}

/// Every `href="…"` value on a page, raw.
pub(super) fn hrefs(html: &str) -> Vec<String> {
    html.split("href=\"")
        .skip(1)
        .filter_map(|s| s.split('"').next())
        .map(|s| s.replace("&amp;", "&"))
        .collect()
}

#[tokio::test]
async fn every_site_entry_page_answers_200_with_links() {
    let mut sites = DemoOptions::standard().sites;
    sites.extend([
        SiteKind::RobotsStatus(404),
        SiteKind::RedirectLoop,
        SiteKind::Hostile,
    ]);
    let web = DemoWeb::start(DemoOptions::only(&sites)).await.unwrap();
    let client = client(&web);
    for kind in &sites {
        let base = web.base_url(*kind);
        assert_eq!(
            base.host_str().unwrap(),
            format!("{}.localhost", kind.host_label())
        );
        let (status, body) = get(&client, base.as_str()).await;
        assert_eq!(status, 200, "{kind:?} entry page");
        assert!(!hrefs(&body).is_empty(), "{kind:?} entry page has links");
    }
    // Elsewhere is never a seed: it is the demo's off-scope host.
    assert_eq!(web.seeds().len(), sites.len() - 1);
    assert_eq!(web.log().count(), sites.len());
    web.shutdown().await;
}

#[test]
fn site_labels_are_unique_and_parse_back() {
    let all = SiteKind::catalogue();
    let labels: std::collections::HashSet<String> = all.iter().map(|k| k.host_label()).collect();
    assert_eq!(labels.len(), all.len());
    for kind in all
        .iter()
        .copied()
        .chain([SiteKind::Bench(7), SiteKind::RobotsStatus(418)])
    {
        assert_eq!(SiteKind::from_label(&kind.host_label()), Some(kind));
    }
    assert_eq!(SiteKind::from_label(" Shop "), Some(SiteKind::Shop));
    assert_eq!(SiteKind::from_label("nowhere"), None);
}

#[tokio::test]
async fn log_records_headers_and_in_flight_counts() {
    let web = DemoWeb::start(DemoOptions::only(&[SiteKind::Hostile]))
        .await
        .unwrap();
    let client = client(&web);
    let base = web.base_url(SiteKind::Hostile);
    let stall = base.join("/stall.html").unwrap();
    // Stalled bodies keep their requests in flight, deterministically.
    let first = client.get(stall.clone()).send().await.unwrap();
    let second = client.get(stall).send().await.unwrap();
    assert_eq!(first.status(), 200);
    let (status, _) = get(&client, base.as_str()).await;
    assert_eq!(status, 200);

    let log = web.log().clone();
    let records = log.for_site(SiteKind::Hostile);
    assert_eq!(records.len(), 3);
    let in_flight: Vec<usize> = records.iter().map(|r| r.in_flight_at_start).collect();
    assert_eq!(in_flight, vec![1, 2, 3]);
    assert_eq!(log.max_in_flight(SiteKind::Hostile), 3);
    assert_eq!(log.in_flight(SiteKind::Hostile), 2);
    let index = &records[2];
    assert_eq!(index.path_and_query, "/");
    assert_eq!(index.method, "GET");
    assert_eq!(index.status, 200);
    assert_eq!(index.user_agent.as_deref(), Some(TEST_UA));
    assert_eq!(index.from.as_deref(), Some(TEST_FROM));
    assert_eq!(
        index.host_header,
        base[url::Position::BeforeHost..url::Position::AfterPort]
    );
    assert!(index.finished.is_some_and(|f| f >= index.started));
    assert!(
        records[0].finished.is_none(),
        "the stalled body is still open"
    );

    // Shutdown ends stalled bodies: the clients see an error, not a hang.
    web.shutdown().await;
    assert!(first.bytes().await.is_err());
    assert!(second.bytes().await.is_err());
    assert_eq!(log.in_flight(SiteKind::Hostile), 0);
    assert!(log.records().iter().all(|r| r.finished.is_some()));
}

#[tokio::test]
async fn shutdown_stops_every_listener() {
    let web = DemoWeb::start(DemoOptions::only(&[SiteKind::Shop, SiteKind::Blog]))
        .await
        .unwrap();
    let ports: Vec<u16> = web.kinds().iter().filter_map(|k| web.port(*k)).collect();
    assert_eq!(ports.len(), 2);
    for port in &ports {
        assert!(tokio::net::TcpStream::connect(("127.0.0.1", *port))
            .await
            .is_ok());
    }
    web.shutdown().await;
    for port in &ports {
        let refused = tokio::net::TcpStream::connect(("127.0.0.1", *port)).await;
        assert!(refused.is_err(), "port {port} still accepts connections");
    }
}

#[tokio::test]
async fn bench_pages_are_20kb_with_50_links_and_all_reachable() {
    let web = DemoWeb::start_bench(400, 2).await.unwrap();
    let client = client(&web);
    let start = web.base_url(SiteKind::Bench(0));
    let mut seen = std::collections::HashSet::new();
    let mut queue = std::collections::VecDeque::from([start.clone()]);
    seen.insert(start.to_string());
    let mut cross_host = 0;
    while let Some(url) = queue.pop_front() {
        let resp = client.get(url.clone()).send().await.unwrap();
        assert_eq!(resp.status(), 200, "{url}");
        assert!(resp.headers().get("content-encoding").is_none());
        let body = resp.text().await.unwrap();
        assert!(
            (18_000..=22_500).contains(&body.len()),
            "{url}: {} bytes",
            body.len()
        );
        let links = hrefs(&body);
        assert_eq!(links.len(), 50, "{url}");
        for link in links {
            let target = url.join(&link).unwrap();
            if target.host_str() != url.host_str() {
                cross_host += 1;
            }
            if seen.insert(target.to_string()) {
                queue.push_back(target);
            }
        }
    }
    // 200 pages on each host, every one reached from host 0's front page and answered 200.
    assert_eq!(seen.len(), 400);
    assert!(cross_host > 0);
    assert_eq!(web.log().count(), 400);
    assert_eq!(
        web.log().dropped(),
        400,
        "counted, not kept: memory stays flat"
    );
    let (status, _) = get(&client, start.join("/p/200.html").unwrap().as_str()).await;
    assert_eq!(status, 404, "pages beyond the host's count do not exist");
    web.shutdown().await;
}
