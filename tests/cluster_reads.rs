//! The cluster view reads the workers' own records through Redis: a page
//! for the inspector from the worker that fetched it, the quarantine from
//! Redis with each URL's found-on page from the worker that found it, and a
//! host's list with each worker's rows. Two worker processes on the demo web.

use crate::common;

use std::time::Duration;

use common::cluster::{finish, run_ctl, worker_command, LEASE_TTL};
use common::{start_demo, Killed};
use crawldeck::cluster::reads;
use crawldeck::cluster::redis_server::RedisServer;
use crawldeck::demo::SiteKind;
use crawldeck::engine::url_norm::host_key;
use crawldeck::engine::ClusterTarget;
use crawldeck::results::window::{BandRequest, PageColumn};
use crawldeck::tui::HostList;
use tokio::time::Instant;

const CRAWL: &str = "reads";

/// Runs `read` off the test's runtime until it returns `Some`, or fails naming `what`.
async fn eventually<T: Send + 'static>(
    what: &str,
    read: impl Fn() -> Option<T> + Send + Sync + 'static,
) -> T {
    let read = std::sync::Arc::new(read);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let attempt = read.clone();
        if let Some(found) = tokio::task::spawn_blocking(move || attempt())
            .await
            .unwrap()
        {
            return found;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cluster_view_reads_pages_parked_urls_and_host_lists_from_the_workers() {
    let redis = RedisServer::for_test();
    let demo = start_demo(vec![SiteKind::Calendar, SiteKind::Deep, SiteKind::Shop]).await;
    let seeds: Vec<String> = demo.seeds().iter().map(|u| u.to_string()).collect();
    let dirs: Vec<_> = (0..2).map(|_| tempfile::tempdir().unwrap()).collect();
    let workers: Vec<Killed> = dirs
        .iter()
        .map(|d| {
            let child = worker_command(&redis, CRAWL, d.path(), &seeds, "50ms").spawn();
            Killed(child.expect("crawldeck starts"))
        })
        .collect();
    let target = ClusterTarget {
        url: redis.redis_url(),
        crawl: CRAWL.into(),
        lease_ttl: LEASE_TTL,
        host_affinity: crawldeck::engine::DEFAULT_HOST_AFFINITY,
    };

    // The inspector: the shop's first page, from whichever worker fetched it.
    let shop = demo.base_url(SiteKind::Shop).to_string();
    let (t, url) = (target.clone(), shop.clone());
    let page = eventually("the shop's first page", move || {
        reads::inspect(&t, &url).ok()
    })
    .await;
    assert_eq!(page.url, shop);
    assert_eq!(page.status, Some(200));
    let t = target.clone();
    let unknown = tokio::task::spawn_blocking(move || {
        reads::inspect(&t, "http://127.0.0.1:9/never-linked").unwrap_err()
    })
    .await
    .unwrap();
    assert!(
        unknown.to_string().contains(
            "no live worker of crawl reads has a record of http://127.0.0.1:9/never-linked"
        ),
        "{unknown:#}"
    );

    // The quarantine: a trap's parked URLs, found on the trap's pages.
    let t = target.clone();
    let quarantine = eventually(
        "parked calendar URLs with their found-on pages",
        move || {
            let read = reads::read_quarantine(&t).ok()?;
            let found_on = read
                .alerts
                .iter()
                .flat_map(|a| &a.urls)
                .any(|u| u.referrer.is_some() && u.referrer_fetched);
            found_on.then_some(read)
        },
    )
    .await;
    let alert = quarantine
        .alerts
        .first()
        .expect("an alert with parked URLs");
    assert!(alert.count >= alert.urls.len() as u64 && alert.count > 0);
    let trap_url = url::Url::parse(&alert.urls[0].url).unwrap();
    let trap_host = host_key(&trap_url);
    let trap_path = trap_url.path().split('/').nth(1).unwrap().to_string();
    assert!(
        alert.urls.iter().all(|u| u.url.contains(&trap_host)),
        "{alert:?}"
    );

    // A host's list: accepting the alert blocks its parked URLs.
    let accept = vec!["accept".into(), alert.alert_id.to_string()];
    let accepted = run_ctl(&redis, CRAWL, accept).await;
    assert!(accepted.status.success(), "{accepted:?}");
    let (t, host) = (target.clone(), trap_host.clone());
    let lines = eventually("the trap's blocked URLs", move || {
        let lines = reads::host_list(&t, &host, HostList::Blocked).ok()?;
        (lines.len() > 2).then_some(lines)
    })
    .await;
    assert!(lines[0].starts_with("worker "), "{lines:?}");
    let trap_dir = format!("/{trap_path}/");
    assert!(lines.iter().any(|l| l.contains(&trap_dir)), "{lines:?}");

    // The Pages view: every worker's pages in one order, and the audit's counts.
    let t = target.clone();
    let band = eventually("a band of the shop's pages from the workers", move || {
        let request = BandRequest {
            data_dir: Default::default(),
            filter: "shop.localhost status:200".into(),
            sort: PageColumn::Size,
            reverse: false,
            first: 0,
            rows: 50,
            count: true,
        };
        let band = reads::page_band(&t, &request).ok()?;
        (band.total >= 3).then_some(band)
    })
    .await;
    assert!(band.rows.iter().all(|r| r.url.contains("shop.localhost")));
    assert!(
        band.rows.windows(2).all(|w| w[0].size >= w[1].size),
        "largest first across workers"
    );
    let t = target.clone();
    // The shop's broken link, once a worker has fetched it.
    eventually(
        "the workers' audit finding the shop's broken link",
        move || {
            let findings = reads::audit(&t).ok()?;
            let broken = findings.iter().find(|f| f.check == "broken-links")?;
            (broken.urls >= 1).then_some(())
        },
    )
    .await;
    let t = target.clone();
    let too_deep = tokio::task::spawn_blocking(move || {
        let request = BandRequest {
            data_dir: Default::default(),
            filter: String::new(),
            sort: PageColumn::Url,
            reverse: false,
            first: reads::MAX_CLUSTER_RANK,
            rows: 10,
            count: true,
        };
        reads::page_band(&t, &request).unwrap_err().to_string()
    })
    .await
    .unwrap();
    assert!(too_deep.contains("narrow the filter"), "{too_deep}");

    let stopped = run_ctl(&redis, CRAWL, vec!["stop".into()]).await;
    assert!(stopped.status.success(), "{stopped:?}");
    for w in workers {
        finish(w).await;
    }
    demo.shutdown().await;
}
