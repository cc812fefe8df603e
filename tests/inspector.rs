//! The page inspector on a crawl of the demo web: a page read back from its
//! WARC record with its links' fates, the diff of two near duplicates,
//! `--select`, and a running crawl inspected through its engine.

use crate::common;

use crawldeck::demo::SiteKind;
use crawldeck::engine::inspect::{self, DiffSide, LinkFate, PageInspection};
use crawldeck::engine::store::Store;

use common::{ok_stdout, run_binary as crawldeck};

fn fate_of<'a>(page: &'a PageInspection, path: &str) -> &'a LinkFate {
    &page
        .links
        .iter()
        .find(|l| l.url.ends_with(path))
        .unwrap_or_else(|| panic!("{path} is among the links: {:#?}", page.links))
        .fate
}

/// A finished crawl of the shop and the duplicates site, with a rule
/// (`/c/lamps/`) added before the first fetch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_demo_page_is_inspected_with_its_links_fates_and_near_duplicates_diff() {
    let demo = common::start_demo(vec![SiteKind::Shop, SiteKind::Dupes]).await;
    let dir = tempfile::tempdir().unwrap();
    common::crawl_with_rule(common::test_config(&demo), dir.path(), "/c/lamps/$").await;
    let shop = demo.base_url(SiteKind::Shop);
    let dupes = demo.base_url(SiteKind::Dupes);
    drop(demo);

    let store = Store::open(dir.path(), 8 << 20).expect("store opens");
    let home = inspect::inspect(&store, dir.path(), shop.as_str())
        .expect("readable")
        .expect("the home page has a record");
    assert_eq!(home.status, Some(200));
    assert!(home
        .headers
        .iter()
        .any(|(name, value)| name.eq_ignore_ascii_case("content-type")
            && value.starts_with("text/html")));
    assert!(home.title.as_deref().is_some_and(|t| !t.is_empty()));
    assert!(
        home.outline.iter().any(|e| e.level == 1),
        "{:?}",
        home.outline
    );
    assert!(matches!(
        fate_of(&home, "/c/tools/"),
        LinkFate::Fetched {
            status: Some(200),
            ..
        }
    ));
    assert_eq!(
        fate_of(&home, "/c/lamps/"),
        &LinkFate::BlockedByRule { rule_id: 1 }
    );
    assert_eq!(
        fate_of(&home, "/img/banner.jpg"),
        &LinkFate::Filtered {
            reason: "extension".into()
        }
    );
    assert!(matches!(
        fate_of(&home, "/secret-nofollow.html"),
        LinkFate::NotFollowed { .. }
    ));

    let near = |n: u32| {
        let url = dupes.join(&format!("/near/{n}.html")).unwrap();
        inspect::inspect(&store, dir.path(), url.as_str())
            .unwrap()
            .expect("near copies are fetched")
    };
    let (two, three) = (near(2), near(3));
    let rows = inspect::side_by_side(&two.text, &three.text);
    let changed: Vec<_> = rows
        .iter()
        .filter(|r| r.side == DiffSide::Changed)
        .collect();
    assert!(!changed.is_empty(), "near copies differ somewhere");
    assert!(changed.len() < rows.len() / 2, "and are mostly the same");
    for row in &changed {
        if let Some(left) = &row.left {
            assert!(!three.text.contains(left), "{left} differs");
        }
    }
    assert!(rows.iter().any(|r| r.side == DiffSide::Same));
    drop(store);

    let data = dir.path().to_str().unwrap();
    let shown = ok_stdout(&["page", data, shop.as_str(), "--select", "table.none"]);
    assert!(shown.contains("status   200"), "{shown}");
    assert!(shown.contains("blocked by rule #1"), "{shown}");
    assert!(shown.contains("no element matches `table.none`"), "{shown}");
    let bad = crawldeck(&["page", data, shop.as_str(), "--select", "a["]);
    assert_eq!(
        bad.status.code(),
        Some(2),
        "a bad selector is a usage error"
    );
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("bad CSS selector `a[`"), "{err}");
    let (two_url, three_url) = (two.url.as_str(), three.url.as_str());
    let diff = ok_stdout(&["page", data, two_url, "--diff", three_url]);
    let differing = changed[0].left.as_deref().or(changed[0].right.as_deref());
    assert!(
        diff.lines()
            .any(|l| l.starts_with('|') && l.contains(&differing.unwrap()[..20])),
        "{diff}"
    );
    let missing = crawldeck(&["page", data, "http://nowhere.localhost/"]);
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("has no record of"));
}

/// While a crawl runs, `crawldeck page` reads through its engine's socket.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_crawl_is_inspected_through_its_engine() {
    let demo = common::start_demo(vec![SiteKind::Shop]).await;
    let dir = tempfile::tempdir().unwrap();
    let crawl = common::crawl_until(&demo, dir.path(), 5).await;
    let data = dir.path().to_str().unwrap().to_string();
    let home = demo.base_url(SiteKind::Shop).to_string();
    let shown = tokio::task::spawn_blocking(move || ok_stdout(&["page", &data, &home]))
        .await
        .unwrap();
    assert!(
        dir.path().join("control.sock").exists(),
        "read while running"
    );
    assert!(shown.contains("status   200"), "{shown}");
    assert!(shown.contains("links ("), "{shown}");
    crawl.stop().await;
    drop(demo);
}
