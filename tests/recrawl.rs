//! A recrawl pass fetches every page with content again, conditionally: the
//! demo shop answers 304 to matching validators, and the pages keep what the
//! first pass stored.

use crate::common;

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use common::{pages, start_demo, test_config, CRAWL_LIMIT};
use crawldeck::demo::SiteKind;
use crawldeck::engine::config::CrawlConfig;
use crawldeck::engine::store::{PageOutcome, UrlKind};
use crawldeck::engine::telemetry::Snapshot;
use crawldeck::engine::{EngineError, EngineOptions};

async fn run(cfg: CrawlConfig, dir: &Path, recrawl: bool) -> Result<Snapshot, EngineError> {
    let options = EngineOptions {
        recrawl,
        ..EngineOptions::default()
    };
    let running = crawldeck::engine::start_with(cfg, dir, std::future::pending(), options).await?;
    tokio::time::timeout(CRAWL_LIMIT, running.done)
        .await
        .expect("crawl ends within the limit")
        .expect("engine task does not panic")
}

/// Pages with a body: fetched ones and duplicates of them.
fn has_content(outcome: &PageOutcome) -> bool {
    matches!(
        outcome,
        PageOutcome::Fetched { status: 200 } | PageOutcome::Duplicate { .. }
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recrawl_asks_conditionally_and_keeps_every_page() {
    let demo = start_demo(vec![SiteKind::Shop]).await;
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = test_config(&demo);
    cfg.politeness.min_delay = Duration::from_millis(5);

    let refused = run(cfg.clone(), dir.path(), true).await;
    assert!(
        matches!(&refused, Err(EngineError::Config(m)) if m.contains("holds no pages")),
        "a recrawl of nothing is refused: {:?}",
        refused.map(|s| s.counters)
    );

    run(cfg.clone(), dir.path(), false)
        .await
        .expect("first pass runs");
    let first: HashMap<String, _> = pages(dir.path())
        .into_iter()
        .map(|p| (p.url.clone(), p))
        .collect();
    // Resources the shop's pages load are checked, not recrawled.
    let with_content = first
        .values()
        .filter(|p| has_content(&p.outcome) && p.kind == UrlKind::Page)
        .count();
    assert!(
        with_content > 300,
        "the shop has ~370 pages: {with_content}"
    );
    let first_pass_requests = demo.log().for_site(SiteKind::Shop).len();

    let second = run(cfg, dir.path(), true).await.expect("recrawl pass runs");
    let log = demo.log();
    let pass: Vec<_> = log.for_site(SiteKind::Shop)[first_pass_requests..]
        .iter()
        .filter(|r| r.path_and_query != "/robots.txt")
        .cloned()
        .collect();
    assert_eq!(pass.len(), with_content, "each page with content once");
    for request in &pass {
        assert!(
            request.if_none_match.is_some() && request.if_modified_since.is_some(),
            "{} was not conditional",
            request.path_and_query
        );
        assert_eq!(request.status, 304, "{}", request.path_and_query);
    }
    assert_eq!(second.counters.not_modified as usize, with_content);
    assert_eq!(
        second.counters.pages_fetched as usize, with_content,
        "the pass counts its own pages"
    );

    let after = pages(dir.path());
    assert_eq!(after.len(), first.len(), "no page lost or added");
    for page in after {
        let before = &first[&page.url];
        if has_content(&before.outcome) && before.kind == UrlKind::Page {
            let expected = match &before.outcome {
                PageOutcome::Duplicate { .. } => before.outcome.clone(),
                _ => PageOutcome::NotModified { pass: 1 },
            };
            assert_eq!(page.outcome, expected, "{}", page.url);
            assert_eq!(page.title, before.title, "{}", page.url);
            assert_eq!(page.content_digest, before.content_digest, "{}", page.url);
            assert_eq!(page.etag, before.etag, "{}", page.url);
        } else {
            assert_eq!(page.outcome, before.outcome, "{}", page.url);
        }
    }
    demo.shutdown().await;
}
