//! The guard at the fetcher: refused addresses are never connected to, for
//! IP literals (checked before the request) and for names (checked by the
//! resolver the client calls). Only loopback servers; the classifier makes
//! some loopback addresses count as private.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::{AtomicU64, Ordering};

use super::*;
use crate::engine::address::{AddressClass, AddressRules};

/// A server on 127.0.0.1 that counts its requests.
async fn counting_server() -> (TestServer, Arc<AtomicU64>) {
    let hits = Arc::new(AtomicU64::new(0));
    let counter = hits.clone();
    let app = Router::new().fallback(move || {
        counter.fetch_add(1, Ordering::SeqCst);
        async { "hello" }
    });
    (TestServer::axum(app).await, hits)
}

fn guarded_config() -> CrawlConfig {
    let mut cfg = config();
    cfg.fetch.allow_private = false;
    cfg
}

#[tokio::test]
async fn literals_and_names_on_refused_addresses_are_never_connected_to() {
    let (server, hits) = counting_server().await;
    let port = server.addr.port();
    let f = Fetcher::new(&guarded_config()).unwrap();
    for url in [
        format!("http://127.0.0.1:{port}/"),
        format!("http://[::ffff:127.0.0.1]:{port}/"),
        format!("http://2130706433:{port}/"),
        format!("http://shop.localhost:{port}/"),
    ] {
        let err = f
            .fetch(&Url::parse(&url).unwrap(), None, 1024)
            .await
            .unwrap_err();
        assert_eq!(err.kind, FetchErrorKind::PrivateAddress, "{url}: {err}");
        assert!(err.message.contains("loopback"), "{err}");
        assert!(!err.kind.is_host_failure());
    }
    assert_eq!(hits.load(Ordering::SeqCst), 0);

    // A seed on loopback opens loopback.
    f.guard()
        .add_seed(&Url::parse("http://blog.localhost/").unwrap());
    let url = Url::parse(&format!("http://127.0.0.1:{port}/")).unwrap();
    assert_eq!(f.fetch(&url, None, 1024).await.unwrap().status, 200);
    assert_eq!(hits.load(Ordering::SeqCst), 1);
    server.stop().await;
}

#[tokio::test]
async fn a_name_connects_only_to_its_admitted_addresses() {
    let (server, hits) = counting_server().await;
    let port = server.addr.port();
    let rules = AddressRules::default()
        .with_classifier(Arc::new(|ip: IpAddr| match ip {
            IpAddr::V4(v4) if v4 == Ipv4Addr::LOCALHOST => AddressClass::Public,
            _ => AddressClass::Metadata,
        }))
        .with_hosts(HashMap::from([
            (
                "mixed.test".to_string(),
                vec!["127.0.0.4".parse().unwrap(), "127.0.0.1".parse().unwrap()],
            ),
            (
                "inside.test".to_string(),
                vec!["127.0.0.4".parse().unwrap()],
            ),
        ]));
    let f = Fetcher::with_rules(&guarded_config(), &rules).unwrap();

    let inside = Url::parse(&format!("http://inside.test:{port}/")).unwrap();
    let err = f.fetch(&inside, None, 1024).await.unwrap_err();
    assert_eq!(err.kind, FetchErrorKind::PrivateAddress, "{err}");
    assert!(
        err.message.contains("127.0.0.4 (link-local (metadata))"),
        "{err}"
    );
    assert_eq!(hits.load(Ordering::SeqCst), 0);

    // Something listens on the refused address too, and must see nothing.
    let refused = std::net::TcpListener::bind(("127.0.0.4", port)).unwrap();
    refused.set_nonblocking(true).unwrap();
    let mixed = Url::parse(&format!("http://mixed.test:{port}/")).unwrap();
    let r = f.fetch(&mixed, None, 1024).await.unwrap();
    assert_eq!(r.remote_ip, Some(IpAddr::V4(Ipv4Addr::LOCALHOST)));
    assert_eq!(hits.load(Ordering::SeqCst), 1);
    // A connection would be waiting in the backlog by now.
    let knock = refused.accept().map(|(_, peer)| peer);
    assert!(
        matches!(&knock, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "127.0.0.4 was connected to: {knock:?}"
    );
    server.stop().await;
}
