//! What a page record keeps of what extraction found: the canonical URL and
//! how many links it had and how many the per-page cap left out.

use crate::common;

use crawldeck::demo::SiteKind;
use crawldeck::engine::store::PageOutcome;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn page_records_keep_the_canonical_url_and_the_links_past_the_cap() {
    let demo = common::start_demo(vec![SiteKind::Shop]).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let mut cfg = common::test_config(&demo);
    cfg.scope.max_links_per_page = 3;
    cfg.max_pages = 60;
    common::crawl(cfg, dir.path()).await;
    let pages = common::pages(dir.path());

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
