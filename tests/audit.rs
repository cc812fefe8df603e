//! `crawldeck audit` on the demo `Audit` site, through the real binary: each
//! check finds exactly the pages the site plants for it, `--show` names
//! them, and the page facts and the meta refresh show in `pages` and `links`.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};

use crawldeck::demo::{SiteKind, AUDIT_NOT_IN_SITEMAP, AUDIT_ORPHANS, AUDIT_SITEMAP_NOT_INDEXABLE};

use common::{json_lines, run_binary as crawldeck};

fn path(url: &str) -> String {
    let url = url::Url::parse(url).expect("a URL");
    match url.fragment() {
        Some(f) => format!("{}#{f}", url.path()),
        None => url.path().to_string(),
    }
}

fn shown(data: &str, check: &str) -> BTreeSet<String> {
    json_lines(&["audit", data, "--show", check, "--json"])
        .iter()
        .map(|s| path(s["url"].as_str().unwrap()))
        .collect()
}

fn set(paths: &[&str]) -> BTreeSet<String> {
    paths.iter().map(|p| p.to_string()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_finds_what_the_audit_site_plants() {
    let demo = common::start_demo(vec![SiteKind::Audit]).await;
    let dir = tempfile::tempdir().expect("temp dir");
    common::crawl(common::test_config(&demo), dir.path()).await;
    let data = dir.path().to_str().unwrap().to_string();
    tokio::task::spawn_blocking(move || {
        each_check_finds_its_pages(&data);
        facts_and_the_meta_refresh_are_listed(&data);
    })
    .await
    .expect("checks pass");
    drop(demo);
}

fn each_check_finds_its_pages(data: &str) {
    let summary = json_lines(&["audit", data, "--json"]);
    let counts: BTreeMap<String, u64> = summary
        .iter()
        .map(|f| {
            (
                f["check"].as_str().unwrap().to_string(),
                f["urls"].as_u64().unwrap(),
            )
        })
        .collect();
    let expected: &[(&str, &[&str])] = &[
        ("broken-links", &["/gone.html", "/retired.html"]),
        ("canonical-not-indexable", &["/canonical-elsewhere.html"]),
        ("noindex-linked", &["/private-note.html"]),
        ("broken-fragments", &["/about.html#team"]),
        (
            "duplicate-titles",
            &["/products/3.html", "/products/4.html"],
        ),
        ("missing-title", &["/untitled.html"]),
        ("missing-h1", &["/untitled.html"]),
        ("multiple-h1", &["/guide.html"]),
        ("links-to-redirects", &["/moved.html"]),
        ("sitemap-orphans", AUDIT_ORPHANS),
        ("sitemap-not-indexable", AUDIT_SITEMAP_NOT_INDEXABLE),
        ("missing-from-sitemap", AUDIT_NOT_IN_SITEMAP),
    ];
    for (check, pages) in expected {
        assert_eq!(shown(data, check), set(pages), "--show {check}");
        assert_eq!(
            counts.get(*check),
            Some(&(pages.len() as u64)),
            "{check}: {summary:?}"
        );
    }
    // Every HTML page but the guide lacks a description.
    let html_pages = json_lines(&["pages", data, "--missing", "description", "--json"]);
    assert_eq!(counts["missing-description"], html_pages.len() as u64);
    assert!(!shown(data, "missing-description").contains("/guide.html"));
    for absent in [
        "redirect-loops",
        "redirect-chains",
        "exact-duplicates",
        "slow-pages",
    ] {
        assert!(!counts.contains_key(absent), "{absent}: {summary:?}");
    }
    let fragment = json_lines(&["links", data, "--broken", "--json"])
        .into_iter()
        .find(|b| b["error"] == "no such fragment")
        .expect("the missing fragment is a broken link");
    assert_eq!(path(fragment["url"].as_str().unwrap()), "/about.html#team");
    assert_eq!(
        path(fragment["referrers"][0].as_str().unwrap()),
        "/guide.html"
    );
}

fn facts_and_the_meta_refresh_are_listed(data: &str) {
    let pages = json_lines(&["pages", data, "--json"]);
    let page = |p: &str| {
        pages
            .iter()
            .find(|r| path(r["url"].as_str().unwrap()) == p)
            .unwrap_or_else(|| panic!("{p} listed"))
    };
    let guide = page("/guide.html");
    assert_eq!(guide["description"], "How to use the demo.");
    assert_eq!(
        (guide["h1"].as_str(), guide["h1_count"].as_u64()),
        (Some("Guide"), Some(2))
    );
    let note = page("/private-note.html");
    assert_eq!(note["indexability"], "noindex (meta robots)");
    assert!(note["inlinks"].as_u64().unwrap() >= 10, "{note}");
    let moved = page("/moved.html");
    assert_eq!(
        (moved["fate"].as_str(), moved["status"].as_u64()),
        (Some("redirect"), Some(200))
    );
    assert_eq!(moved["reason"], "meta refresh");
    assert_eq!(path(moved["detail"].as_str().unwrap()), "/about.html");
    let chains = json_lines(&["links", data, "--redirects", "--json"]);
    let chain = chains
        .iter()
        .find(|c| path(c["from"].as_str().unwrap()) == "/moved.html")
        .expect("the meta refresh is a chain");
    assert_eq!(chain["chain"][0]["fate"], "meta refresh");
    assert_eq!(
        path(chain["chain"][1]["url"].as_str().unwrap()),
        "/about.html"
    );
    let table = String::from_utf8(crawldeck(&["links", data, "--redirects"]).stdout).unwrap();
    assert!(table.contains("[200 meta refresh]"), "{table}");
}
