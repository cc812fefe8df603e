//! `crawldeck pages` and `crawldeck links` on a crawl of the demo web: the
//! real binary's output, parsed back with CSV and JSON readers; and a listing
//! of a crawl that is still running, read through its engine.

use crate::common;

use std::collections::{BTreeSet, HashSet};

use crawldeck::demo::{blog_disallowed_paths, SiteKind, SHOP_BROKEN_PATH, SHOP_NOINDEX_PATH};
use crawldeck::engine::telemetry::CrawlState;
use serde_json::Value;

use common::{json_lines, ok_stdout, run_binary as crawldeck};

fn path_of(url: &str) -> String {
    url::Url::parse(url).expect("a URL").path().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listings_of_the_demo_web() {
    let demo = common::start_demo(vec![
        SiteKind::Shop,
        SiteKind::Blog,
        SiteKind::Dupes,
        SiteKind::RedirectLoop,
    ])
    .await;
    let dir = tempfile::tempdir().expect("temp dir");
    common::crawl(common::test_config(&demo), dir.path()).await;
    let data = dir.path().to_str().expect("UTF-8 path").to_string();
    let shop = demo.base_url(SiteKind::Shop);
    let blog = demo.base_url(SiteKind::Blog);
    let loops = demo.base_url(SiteKind::RedirectLoop);
    tokio::task::spawn_blocking(move || {
        broken_links_name_their_referrers(&data);
        host_lists_keep_one_host(&data, &shop, &blog);
        redirect_chains_end_where_the_shop_moved(&data, &shop);
        a_redirect_loop_is_one_chain_that_says_so(&data, &loops);
        robots_listing_is_exactly_what_robots_kept_out(&data);
        near_duplicates_are_grouped(&data);
        csv_and_json_parse_back(&data);
        page_facts_are_listed_and_filtered(&data);
        the_audit_finds_the_demo_webs_problems(&data);
    })
    .await
    .expect("checks pass");
    drop(demo);
}

/// Response time, indexability with its reason, headings and words, and
/// the `--indexable` and `--missing` filters, on the shop's pages.
fn page_facts_are_listed_and_filtered(data: &str) {
    let pages = json_lines(&["pages", data, "--json"]);
    let by_path = |path: &str| {
        pages
            .iter()
            .find(|p| {
                let url = p["url"].as_str().unwrap();
                url.contains("shop") && path_of(url) == path && !url.contains('?')
            })
            .unwrap_or_else(|| panic!("{path} is listed"))
    };
    let noindex = by_path(SHOP_NOINDEX_PATH);
    assert_eq!(noindex["indexable"], false);
    assert_eq!(noindex["indexability"], "noindex (meta robots)");
    let inspected = ok_stdout(&["page", data, noindex["url"].as_str().unwrap()]);
    assert!(
        inspected.contains("index    no: noindex (meta robots)")
            && inspected.contains(" inlinks")
            && inspected.contains("h1       Not for the index"),
        "{inspected}"
    );
    let product = by_path("/p/tools-2.html");
    assert_eq!(product["indexable"], true, "{product}");
    assert_eq!(product["h1"], product["title"]);
    assert_eq!(product["h1_count"], 1);
    assert!(product["words"].as_u64().unwrap() >= 40, "{product}");
    assert!(product["links_out"].as_u64().unwrap() >= 3, "{product}");
    assert!(product["response_ms"].is_u64(), "{product}");
    // Linked from its list page and its two neighbours.
    assert_eq!(product["inlinks"], 3, "{product}");
    let home = by_path("/");
    assert!(
        home["inlinks"].as_u64().unwrap() >= 8,
        "category pages link home: {home}"
    );
    let variant = pages
        .iter()
        .find(|p| p["url"].as_str().unwrap().contains("?ref=list"))
        .expect("a product variant with a canonical");
    assert_eq!(variant["indexability"], "canonicalised", "{variant}");

    let not_indexable = json_lines(&["pages", data, "--indexable", "no", "--json"]);
    assert!(not_indexable.iter().all(|p| p["indexable"] == false));
    for path in [SHOP_NOINDEX_PATH, SHOP_BROKEN_PATH] {
        assert!(
            not_indexable
                .iter()
                .any(|p| path_of(p["url"].as_str().unwrap()) == path),
            "{path} is not indexable"
        );
    }
    let html_pages = pages.iter().filter(|p| p["h1_count"].is_u64()).count();
    let undescribed = json_lines(&["pages", data, "--missing", "description", "--json"]);
    assert_eq!(
        undescribed.len(),
        html_pages,
        "no demo page has a description"
    );
    assert!(json_lines(&["pages", data, "--missing", "h1,description", "--json"]).is_empty());
    let bad = crawldeck(&["pages", data, "--missing", "weight"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("title, description or h1"));
}

/// `crawldeck audit`: the summary's counts agree with the listings, and
/// `--show` lists a finding's URLs.
fn the_audit_finds_the_demo_webs_problems(data: &str) {
    let summary = json_lines(&["audit", data, "--json"]);
    let count = |check: &str| {
        summary
            .iter()
            .find(|f| f["check"] == check)
            .map_or(0, |f| f["urls"].as_u64().unwrap())
    };
    let broken = json_lines(&["links", data, "--broken", "--json"]);
    let loops = broken
        .iter()
        .filter(|b| b["error"] == "redirect loop")
        .count() as u64;
    let fragments = broken
        .iter()
        .filter(|b| b["error"] == "no such fragment")
        .count() as u64;
    assert_eq!(
        count("broken-links")
            + count("broken-resources")
            + count("broken-external")
            + count("redirect-loops")
            + count("broken-fragments"),
        broken.len() as u64
    );
    assert!(
        broken
            .iter()
            .all(|b| !b["url"].as_str().unwrap().ends_with("/sitemap.xml")),
        "a guessed sitemap that is absent is no broken link"
    );
    // Product pages link their neighbours' `#reviews`, which they lack.
    assert!(fragments > 0, "{broken:?}");
    assert_eq!(count("broken-fragments"), fragments);
    assert!(broken.iter().any(|b| b["url"]
        .as_str()
        .unwrap()
        .ends_with("/p/tools-2.html#reviews")));
    assert!(loops >= 2, "the loop site's two URLs: {broken:?}");
    assert_eq!(count("redirect-loops"), loops);
    let copies = json_lines(&["pages", data, "--fate", "duplicate", "--json"]);
    assert_eq!(count("exact-duplicates"), copies.len() as u64);
    assert!(count("near-duplicates") > 0, "{summary:?}");
    let undescribed = json_lines(&["pages", data, "--missing", "description", "--json"]);
    assert_eq!(count("missing-description"), undescribed.len() as u64);
    let urls: Vec<u64> = summary
        .iter()
        .map(|f| f["urls"].as_u64().unwrap())
        .collect();
    assert!(urls.windows(2).all(|w| w[0] >= w[1]), "ranked: {urls:?}");
    assert!(summary
        .iter()
        .all(|f| f["command"].as_str().unwrap().contains("--show")));

    let shown = json_lines(&["audit", data, "--show", "broken-links", "--json"]);
    let target = shown
        .iter()
        .find(|s| path_of(s["url"].as_str().unwrap()) == SHOP_BROKEN_PATH)
        .expect("the shop's broken link is shown");
    assert!(
        target["detail"]
            .as_str()
            .unwrap()
            .starts_with("404, linked from"),
        "{target}"
    );
    assert_eq!(shown.len() as u64, count("broken-links"));
    let limited = json_lines(&[
        "audit",
        data,
        "--show",
        "missing-description",
        "--limit",
        "3",
        "--json",
    ]);
    assert_eq!(limited.len(), 3);
    let bad = crawldeck(&["audit", data, "--show", "spelling"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("broken-links"));
}

fn broken_links_name_their_referrers(data: &str) {
    let broken = json_lines(&["links", data, "--broken", "--json"]);
    let target = broken
        .iter()
        .find(|b| path_of(b["url"].as_str().unwrap()) == SHOP_BROKEN_PATH)
        .unwrap_or_else(|| panic!("{SHOP_BROKEN_PATH} is listed as broken: {broken:?}"));
    assert_eq!(target["status"], 404);
    let referrers: BTreeSet<String> = target["referrers"]
        .as_array()
        .expect("referrers")
        .iter()
        .map(|r| path_of(r.as_str().unwrap()))
        .collect();
    assert_eq!(
        referrers,
        BTreeSet::from(["/about.html".into(), "/sale/".into()])
    );
    assert!(
        broken.iter().all(|b| b["error"] == "redirect loop"
            || b["status"].as_u64().is_none_or(|s| s >= 400)),
        "only 4xx, 5xx, failures and redirect loops are broken: {broken:?}"
    );
}

/// `--host` keeps one host's URLs: what the detail view's lists use.
fn host_lists_keep_one_host(data: &str, shop: &url::Url, blog: &url::Url) {
    let host_of = |u: &url::Url| format!("{}:{}", u.host_str().unwrap(), u.port().unwrap());
    let (shop_host, blog_host) = (host_of(shop), host_of(blog));
    let shop_broken = json_lines(&["links", data, "--broken", "--host", &shop_host, "--json"]);
    assert!(shop_broken
        .iter()
        .any(|b| path_of(b["url"].as_str().unwrap()) == SHOP_BROKEN_PATH));
    let blog_broken = json_lines(&["links", data, "--broken", "--host", &blog_host, "--json"]);
    assert!(blog_broken
        .iter()
        .all(|b| b["url"].as_str().unwrap().starts_with(blog.as_str())));
    let blog_pages = json_lines(&["pages", data, "--host", blog.as_str(), "--json"]);
    assert!(!blog_pages.is_empty());
    assert!(blog_pages.iter().all(|p| p["host"] == blog_host.as_str()));
}

fn redirect_chains_end_where_the_shop_moved(data: &str, shop: &url::Url) {
    let shop_host = format!("{}:{}", shop.host_str().unwrap(), shop.port().unwrap());
    let chains = json_lines(&["links", data, "--redirects", "--host", &shop_host, "--json"]);
    assert!(!chains.is_empty(), "the shop's /old-* pages redirect");
    for chain in &chains {
        let hops = chain["chain"].as_array().expect("hops");
        let from = path_of(hops[0]["url"].as_str().unwrap());
        let end = hops.last().unwrap();
        assert!(from.starts_with("/old-"), "{chain}");
        assert_eq!(hops[0]["status"], 301, "{chain}");
        assert_eq!(
            path_of(end["url"].as_str().unwrap()),
            from.replacen("/old-", "/", 1)
        );
        assert_eq!(end["status"], 200, "{chain}");
        assert!(hops[0]["url"].as_str().unwrap().starts_with(shop.as_str()));
    }
    let table = ok_stdout(&["links", data, "--redirects", "--host", &shop_host, "--tsv"]);
    assert!(table.contains("/old-about.html [301] → "), "{table}");
}

fn a_redirect_loop_is_one_chain_that_says_so(data: &str, site: &url::Url) {
    let host = format!("{}:{}", site.host_str().unwrap(), site.port().unwrap());
    let chains = json_lines(&["links", data, "--redirects", "--host", &host, "--json"]);
    let looped = chains
        .iter()
        .find(|c| path_of(c["from"].as_str().unwrap()) == "/a")
        .unwrap_or_else(|| panic!("the /a ↔ /b loop is listed: {chains:?}"));
    let hops: Vec<(String, Value)> = looped["chain"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| (path_of(h["url"].as_str().unwrap()), h["fate"].clone()))
        .collect();
    assert_eq!(hops.len(), 3, "{hops:?}");
    assert_eq!((hops[1].0.as_str(), hops[2].0.as_str()), ("/b", "/a"));
    assert_eq!(hops[2].1, "loop");
    // A link that can never resolve is broken too.
    let broken = json_lines(&["links", data, "--broken", "--host", &host, "--json"]);
    assert!(
        broken
            .iter()
            .any(|b| path_of(b["url"].as_str().unwrap()) == "/a" && b["error"] == "redirect loop"),
        "{broken:?}"
    );
    assert!(
        !chains
            .iter()
            .any(|c| path_of(c["from"].as_str().unwrap()) == "/b"),
        "one loop is one chain"
    );
}

fn robots_listing_is_exactly_what_robots_kept_out(data: &str) {
    let denied = json_lines(&[
        "pages", data, "--fate", "blocked", "--by", "robots", "--json",
    ]);
    let paths: BTreeSet<String> = denied
        .iter()
        .map(|p| {
            assert_eq!(p["reason"], "robots");
            assert!(p["status"].is_null(), "never fetched: {p}");
            path_of(p["url"].as_str().unwrap())
        })
        .collect();
    let expected: BTreeSet<String> = blog_disallowed_paths()
        .iter()
        .map(|p| p.to_string())
        .collect();
    assert_eq!(paths, expected);
}

fn near_duplicates_are_grouped(data: &str) {
    let groups = json_lines(&["pages", data, "--duplicates", "--json"]);
    let near = groups
        .iter()
        .filter(|g| g["kind"] == "near")
        .find(|g| {
            let urls = g["urls"].as_array().unwrap();
            urls.iter()
                .filter(|u| path_of(u.as_str().unwrap()).starts_with("/near/"))
                .count()
                >= 2
        })
        .unwrap_or_else(|| panic!("a near-duplicate group of the dupes host: {groups:?}"));
    assert_eq!(near["first"], near["urls"][0]);
    let exact = groups
        .iter()
        .find(|g| {
            g["kind"] == "exact" && path_of(g["first"].as_str().unwrap()).starts_with("/copy/")
        })
        .expect("the byte-identical copies form an exact group");
    assert!(exact["urls"].as_array().unwrap().len() >= 2);
}

fn csv_and_json_parse_back(data: &str) {
    let json = json_lines(&["pages", data, "--json"]);
    let csv_text = ok_stdout(&["pages", data, "--csv"]);
    let mut reader = csv::Reader::from_reader(csv_text.as_bytes());
    let headers = reader.headers().expect("a header line").clone();
    assert_eq!(&headers[0], "url");
    let rows: Vec<csv::StringRecord> = reader.records().map(|r| r.expect("a CSV row")).collect();
    assert_eq!(rows.len(), json.len(), "CSV and JSON list the same URLs");
    for (row, value) in rows.iter().zip(&json) {
        assert_eq!(&row[0], value["url"].as_str().unwrap());
        assert_eq!(row.len(), headers.len());
    }
    let statuses = json_lines(&["pages", data, "--status", "4xx", "--json"]);
    assert!(!statuses.is_empty());
    assert!(statuses
        .iter()
        .all(|p| (400..500).contains(&p["status"].as_u64().unwrap())));
    let limited = json_lines(&["pages", data, "--sort", "size", "--limit", "3", "--json"]);
    let sizes: Vec<u64> = limited
        .iter()
        .map(|p| p["size"].as_u64().unwrap())
        .collect();
    let largest = json
        .iter()
        .map(|p| p["size"].as_u64().unwrap())
        .max()
        .unwrap();
    assert_eq!(sizes.len(), 3);
    assert_eq!(sizes[0], largest);
    assert!(sizes.windows(2).all(|w| w[0] >= w[1]));
}

#[test]
fn bad_filters_and_missing_crawls_are_named() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().to_str().unwrap();
    let out = crawldeck(&["pages", data, "--status", "9xx"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("404,5xx"));
    let out = crawldeck(&["pages", data, "--fate", "lost"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("blocked"));
    let out = crawldeck(&["pages", data]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("holds no crawl"));
    assert!(
        !dir.path().join("index").exists(),
        "a listing creates nothing"
    );
}

#[test]
fn a_missing_dir_or_a_file_is_no_crawl_not_a_damaged_one() {
    let dir = tempfile::tempdir().expect("temp dir");
    let missing = dir.path().join("nonexistent");
    let file = dir.path().join("file");
    std::fs::write(&file, "x").unwrap();
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let cases = [
        (&missing, "does not exist"),
        (&file, "is not a directory"),
        (&empty, "holds no crawl (no index/ inside)"),
    ];
    for (path, why) in cases {
        let path = path.to_str().unwrap();
        for args in [
            vec!["pages", path],
            vec!["links", path, "--broken"],
            vec!["page", path, "http://a.example/"],
        ] {
            let out = crawldeck(&args);
            assert_eq!(out.status.code(), Some(1), "{args:?}");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(err.contains(&format!("{path} {why}")), "{err}");
            assert!(
                err.contains("give the --data directory of a crawl"),
                "{err}"
            );
            assert!(!err.contains("corrupt"), "{err}");
            assert!(!err.contains("damaged"), "{err}");
        }
    }
    assert!(!missing.exists(), "a listing creates nothing");

    // A crawl.toml without its index/ is a crawl that lost its database.
    std::fs::write(empty.join("crawl.toml"), "").unwrap();
    let out = crawldeck(&["pages", empty.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("corrupt data directory"), "{err}");
    assert!(err.contains("holds a crawl.toml but no index/"), "{err}");
}

/// While a crawl runs, its store is locked by the engine; a listing reads
/// through the engine's control socket and gets whole, ordered records.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_crawl_is_listed_through_its_engine() {
    let demo = common::start_demo(vec![SiteKind::Shop]).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let crawl = common::crawl_until(&demo, dir.path(), 40).await;
    let data = dir.path().to_str().unwrap().to_string();
    let (live, live_audit) = {
        let data = data.clone();
        tokio::task::spawn_blocking(move || {
            let pages = json_lines(&["pages", &data, "--json"]);
            (pages, json_lines(&["audit", &data, "--json"]))
        })
        .await
        .expect("listing runs")
    };
    let still_running = crawl.running.handle.snapshots.borrow().state != CrawlState::Done;
    assert!(
        !dir.path().join("results.sock").exists(),
        "one socket: the control socket serves the reads"
    );
    assert!(
        still_running,
        "the crawl was still running during the listing"
    );
    assert!(live.len() >= 40, "{} records", live.len());
    let urls: Vec<&str> = live.iter().map(|p| p["url"].as_str().unwrap()).collect();
    assert!(
        urls.windows(2).all(|w| w[0] < w[1]),
        "URL order, each URL once"
    );
    assert!(live
        .iter()
        .all(|p| p["fate"].is_string() && p["host"].is_string()));
    // The audit reads the running crawl too: every shop page lacks a description.
    let undescribed = live_audit
        .iter()
        .find(|f| f["check"] == "missing-description")
        .expect("the audit of a running crawl");
    assert!(
        undescribed["urls"].as_u64().unwrap() >= 30,
        "{live_audit:?}"
    );

    crawl.stop().await;
    assert!(
        !dir.path().join("control.sock").exists(),
        "the socket goes with the engine"
    );
    let after = tokio::task::spawn_blocking(move || json_lines(&["pages", &data, "--json"]))
        .await
        .expect("listing runs");
    let after_urls: HashSet<&str> = after.iter().map(|p| p["url"].as_str().unwrap()).collect();
    assert!(
        urls.iter().all(|u| after_urls.contains(u)),
        "nothing listed live is lost"
    );
    drop(demo);
}

/// Links an operator rule refuses when they are found are listed as blocked
/// by that rule, like the queued URLs a new rule removes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn links_a_rule_refuses_on_sight_are_listed_with_the_rule() {
    let demo = common::start_demo(vec![SiteKind::Shop]).await;
    let dir = tempfile::tempdir().unwrap();
    common::crawl_with_rule(common::test_config(&demo), dir.path(), "/p/lamps-").await;

    let data = dir.path().to_str().unwrap();
    let blocked = json_lines(&["pages", data, "--fate", "blocked", "--by", "rule", "--json"]);
    assert!(!blocked.is_empty(), "the lamps pages are listed");
    for row in &blocked {
        let url = row["url"].as_str().unwrap();
        assert!(url.contains("/p/lamps-"), "{row}");
        assert_eq!(row["reason"], "rule 1", "{row}");
    }
    let fetched = json_lines(&["pages", data, "--fate", "fetched", "--json"]);
    assert!(fetched
        .iter()
        .all(|row| !row["url"].as_str().unwrap().contains("/p/lamps-")));
}
