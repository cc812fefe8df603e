//! A host stays with the worker that fetched it (host affinity), so what a
//! worker learns of a host is whole: three worker processes on the demo web
//! each keep their hosts' pages, and the calendar trap is alerted after
//! about as many of its pages as one process fetches.

use crate::common;

use common::cluster::{finish, page_requests, start_three_with, stored_alerts};
use common::start_demo;
use crawldeck::cluster::redis_server::RedisServer;
use crawldeck::demo::SiteKind;
use crawldeck::engine::store::PageOutcome;
use crawldeck::engine::telemetry::TrapKind;

const CRAWL: &str = "affine";
/// Requests inside the calendar trap one process makes before its alert
/// stops them (`traps.rs`), twice: the first worker holds every host at
/// first and gives some to the others, evidence and all.
const TRAP_BUDGET: usize = 2 * 60;
const SITES: [SiteKind; 3] = [SiteKind::Calendar, SiteKind::Shop, SiteKind::Deep];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_host_stays_with_one_worker_and_its_trap_is_seen_as_one_process_sees_it() {
    let redis = RedisServer::for_test();
    let demo = start_demo(SITES.to_vec()).await;
    let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    // As long as the tests' lease: a loaded machine's late claim keeps its host.
    // The detectors, not the depth limit, must stop the trap.
    let args = ["--host-affinity", "2s", "--max-depth", "1000"];
    let workers = start_three_with(&redis, CRAWL, &demo, &dirs, &args).await;
    for w in workers {
        finish(w).await;
    }
    let records = demo.log().records();
    let origins: Vec<(SiteKind, String)> = SITES
        .iter()
        .map(|&kind| (kind, demo.base_url(kind).origin().ascii_serialization()))
        .collect();
    demo.shutdown().await;

    // Pages fetched per site and worker, from each worker's records.
    let mut fetched = vec![[0usize; 3]; SITES.len()];
    for (w, dir) in dirs.iter().enumerate() {
        for page in common::pages(dir.path()) {
            if !matches!(page.outcome, PageOutcome::Fetched { .. }) {
                continue;
            }
            if let Some(site) = origins.iter().position(|(_, o)| page.url.starts_with(o)) {
                fetched[site][w] += 1;
            }
        }
    }
    // Each host's pages went to one worker, but for those the first worker
    // (which pushed the seeds, so held every host) may have given to the
    // others to even the load (without affinity: under half).
    let total: usize = fetched.iter().flatten().sum();
    let by_main_worker: usize = fetched.iter().filter_map(|w| w.iter().max()).sum();
    println!("pages fetched per site and worker: {fetched:?}; {by_main_worker} of {total} by their host's main worker");
    assert!(
        by_main_worker * 100 >= total * 85,
        "hosts moved between workers: {fetched:?} (pages per site and worker)"
    );
    // ... and did: the three hosts are not all one worker's.
    let main_worker = |pages: &[usize; 3]| (0..3).max_by_key(|&w| pages[w]);
    let mains: std::collections::BTreeSet<_> = fetched.iter().map(main_worker).collect();
    assert!(mains.len() > 1, "one worker kept every host: {fetched:?}");

    // The calendar's evidence stayed whole: alerted, within about what one
    // process spends inside the trap (without affinity: over a thousand
    // requests and no alert, each worker seeing a third of the pages).
    let in_trap = page_requests(&records)
        .into_iter()
        .filter(|(site, path)| *site == SiteKind::Calendar && path.starts_with("/calendar/"))
        .count();
    let alerted = dirs
        .iter()
        .flat_map(|d| stored_alerts(d.path()))
        .any(|a| a.kind == TrapKind::Counter && a.host.starts_with("calendar."));
    println!("requests inside the calendar trap: {in_trap}, alerted: {alerted}");
    assert!(alerted, "the calendar trap was never alerted");
    assert!(
        in_trap <= TRAP_BUDGET,
        "{in_trap} requests inside the calendar trap"
    );
}
