//! Content of the catalogue sites: robots rules, shop features, traps and the
//! finite sites' sizes.

use std::collections::{HashSet, VecDeque};
use std::io::Read as _;

use url::Url;

use super::{client, get, hrefs};
use crate::demo::{blog_allowed_paths, blog_disallowed_paths, DemoOptions, DemoWeb, SiteKind};

/// A naive same-host crawl (no robots, no nofollow), skipping images; returns
/// every URL that answered 200. `limit` bounds it on trap sites.
async fn crawl_site(client: &reqwest::Client, base: &Url, limit: usize) -> HashSet<String> {
    let mut seen = HashSet::from([base.to_string()]);
    let mut ok = HashSet::new();
    let mut queue = VecDeque::from([base.clone()]);
    while let Some(url) = queue.pop_front() {
        if ok.len() >= limit {
            break;
        }
        let (status, body) = get(client, url.as_str()).await;
        if status != 200 {
            continue;
        }
        ok.insert(url.to_string());
        // Honour the first <base href>, as a crawler must.
        let base_href = body
            .split("<base href=\"")
            .nth(1)
            .and_then(|s| s.split('"').next());
        let page_base = base_href
            .and_then(|b| url.join(b).ok())
            .unwrap_or_else(|| url.clone());
        for link in hrefs(&body) {
            if body.contains(&format!("<base href=\"{link}\"")) {
                continue;
            }
            let Ok(mut target) = page_base.join(&link) else {
                continue;
            };
            target.set_fragment(None);
            if target.host_str() == base.host_str()
                && target.port() == base.port()
                && !target.path().ends_with(".jpg")
                && seen.insert(target.to_string())
            {
                queue.push_back(target);
            }
        }
    }
    ok
}

#[tokio::test]
async fn blog_robots_txt_holds_the_guide_rules_and_the_site_links_every_path() {
    let web = DemoWeb::start(DemoOptions::only(&[SiteKind::Blog]))
        .await
        .unwrap();
    let client = client(&web);
    let base = web.base_url(SiteKind::Blog);
    let (status, robots) = get(&client, base.join("/robots.txt").unwrap().as_str()).await;
    assert_eq!(status, 200);
    for line in [
        "User-Agent: slurp",
        "User-Agent: crawldeck",
        "Allow: /tmp/public/",
        "Disallow: /tmp\n",
        "Disallow: /%7Efred/",
        "Disallow:  # nothing",
        "Crawl-delay: 0",
    ] {
        assert!(
            robots.contains(line),
            "robots.txt lacks {line:?}:\n{robots}"
        );
    }
    let sitemap = format!("Sitemap: {}", base.join("/sitemap.xml").unwrap());
    assert!(robots.contains(&sitemap));
    assert!(robots.find("Allow: /tmp/public/") < robots.find("Disallow: /tmp\n"));

    // Cross-check with an RFC 9309 matcher, except the %-escape cases it does not decode.
    let robot = texting_robots::Robot::new("crawldeck", robots.as_bytes()).unwrap();
    for path in blog_allowed_paths() {
        assert!(robot.allowed(path), "{path} should be allowed");
    }
    for path in blog_disallowed_paths().iter().filter(|p| !p.contains('~')) {
        assert!(!robot.allowed(path), "{path} should be disallowed");
    }

    let (_, index) = get(&client, base.as_str()).await;
    let linked: HashSet<String> = hrefs(&index)
        .iter()
        .map(|h| crate::demo::html::percent_decode(h))
        .collect();
    for path in blog_disallowed_paths().iter().chain(blog_allowed_paths()) {
        assert!(
            *path == "/" || linked.contains(*path),
            "index does not link {path}"
        );
        let (status, _) = get(&client, base.join(path).unwrap().as_str()).await;
        assert_eq!(status, 200, "{path}");
    }
    assert!(
        hrefs(&index).iter().any(|h| h.starts_with("/%7E")),
        "an escaped spelling is linked"
    );
    web.shutdown().await;
}

#[tokio::test]
async fn shop_has_base_href_nofollow_canonical_and_redirects() {
    let web = DemoWeb::start(DemoOptions::only(&[SiteKind::Shop, SiteKind::Blog]))
        .await
        .unwrap();
    let client = client(&web);
    let base = web.base_url(SiteKind::Shop);
    let (_, index) = get(&client, base.as_str()).await;
    assert!(index.contains("rel=\"nofollow\""));
    assert!(index.contains("&amp;page=1"));
    assert!(index.contains(".jpg"));
    assert!(index.contains("#top"));
    assert!(
        index.contains(web.base_url(SiteKind::Blog).as_str()),
        "links to the blog"
    );

    let (_, category) = get(&client, base.join("/c/lamps/").unwrap().as_str()).await;
    assert!(category.contains("<base href=\"/c/lamps/list/\">"));
    let (status, _) = get(&client, base.join("/c/lamps/list/1.html").unwrap().as_str()).await;
    assert_eq!(status, 200);

    let (_, meta) = get(&client, base.join("/meta-nofollow.html").unwrap().as_str()).await;
    assert!(meta.contains("<meta name=\"robots\" content=\"nofollow\">"));
    let (_, product) = get(&client, base.join("/p/lamps-3.html").unwrap().as_str()).await;
    let canonical = base.join("/p/lamps-3.html").unwrap();
    assert!(product.contains(&format!("<link rel=\"canonical\" href=\"{canonical}\">")));

    let moved = client
        .get(base.join("/old-sale/").unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(moved.status(), 301);
    assert_eq!(
        moved.headers()["location"],
        base.join("/sale/").unwrap().as_str()
    );

    // The hidden pages are linked only from the meta-nofollow page.
    let pages = crawl_site(&client, &base, 1000).await;
    assert!((300..=450).contains(&pages.len()), "{} pages", pages.len());
    web.shutdown().await;
}

#[tokio::test]
async fn shop_answers_304_on_matching_validators_and_gzips_when_accepted() {
    let web = DemoWeb::start(DemoOptions::only(&[SiteKind::Shop]))
        .await
        .unwrap();
    let client = client(&web);
    let url = web
        .base_url(SiteKind::Shop)
        .join("/p/tools-7.html")
        .unwrap();
    let plain = client.get(url.clone()).send().await.unwrap();
    let etag = plain.headers()["etag"].to_str().unwrap().to_string();
    let last_modified = plain.headers()["last-modified"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(plain.headers().get("content-encoding").is_none());
    let plain_body = plain.text().await.unwrap();

    let zipped = client
        .get(url.clone())
        .header("accept-encoding", "gzip, br")
        .send()
        .await
        .unwrap();
    assert_eq!(zipped.headers()["content-encoding"], "gzip");
    let compressed = zipped.bytes().await.unwrap();
    let mut unzipped = String::new();
    flate2::read::GzDecoder::new(&compressed[..])
        .read_to_string(&mut unzipped)
        .unwrap();
    assert_eq!(unzipped, plain_body);

    let by_etag = client
        .get(url.clone())
        .header("if-none-match", &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(by_etag.status(), 304);
    assert!(by_etag.bytes().await.unwrap().is_empty());
    let by_date = client
        .get(url.clone())
        .header("if-modified-since", &last_modified)
        .send()
        .await
        .unwrap();
    assert_eq!(by_date.status(), 304);
    let stale = client
        .get(url)
        .header("if-none-match", "\"other\"")
        .send()
        .await
        .unwrap();
    assert_eq!(stale.status(), 200);

    let records = web.log().for_site(SiteKind::Shop);
    assert_eq!(records[2].if_none_match.as_deref(), Some(etag.as_str()));
    assert_eq!(
        records[3].if_modified_since.as_deref(),
        Some(last_modified.as_str())
    );
    assert_eq!(
        records.iter().map(|r| r.status).collect::<Vec<_>>(),
        [200, 200, 304, 304, 200]
    );
    web.shutdown().await;
}

#[tokio::test]
async fn finite_sites_have_the_documented_sizes() {
    let kinds = [
        SiteKind::Params,
        SiteKind::DeepFinite,
        SiteKind::Dupes,
        SiteKind::Slow,
    ];
    let web = DemoWeb::start(DemoOptions::only(&kinds)).await.unwrap();
    let client = client(&web);
    let count = |k| {
        let base = web.base_url(k);
        let client = client.clone();
        async move { crawl_site(&client, &base, 10_000).await.len() }
    };
    assert_eq!(count(SiteKind::Params).await, 1 + 100 + 20);
    assert_eq!(count(SiteKind::DeepFinite).await, 1 + 150);
    assert_eq!(count(SiteKind::Dupes).await, 1 + 30 + 30 + 20);
    assert_eq!(count(SiteKind::Slow).await, 1 + 30);

    let dupes = web.base_url(SiteKind::Dupes);
    let (_, a) = get(&client, dupes.join("/copy/1.html").unwrap().as_str()).await;
    let (_, b) = get(&client, dupes.join("/copy/9.html").unwrap().as_str()).await;
    let (_, c) = get(&client, dupes.join("/near/1.html").unwrap().as_str()).await;
    let (_, d) = get(&client, dupes.join("/near/2.html").unwrap().as_str()).await;
    assert_eq!(a, b);
    assert_ne!(c, d);
    assert_eq!(c.len(), d.len());
    web.shutdown().await;
}

#[tokio::test]
async fn trap_sites_generate_urls_without_end() {
    let kinds = [
        SiteKind::Calendar,
        SiteKind::Deep,
        SiteKind::Session,
        SiteKind::Soft404,
    ];
    let web = DemoWeb::start(DemoOptions::only(&kinds)).await.unwrap();
    let client = client(&web);
    for kind in kinds {
        let pages = crawl_site(&client, &web.base_url(kind), 150).await;
        assert_eq!(pages.len(), 150, "{kind:?} keeps producing new pages");
    }
    let cal = web.base_url(SiteKind::Calendar);
    let (_, dec) = get(&client, cal.join("/calendar/2026/12/").unwrap().as_str()).await;
    assert!(dec.contains("/calendar/2027/01/") && dec.contains("/calendar/2026/11/"));

    let deep = web.base_url(SiteKind::Deep);
    let (_, docs) = get(&client, deep.join("/docs/a/b/").unwrap().as_str()).await;
    assert!(docs.contains("href=\"a/\"") && docs.contains("href=\"b/\""));

    let session = web.base_url(SiteKind::Session);
    let (_, one) = get(&client, session.as_str()).await;
    let (_, two) = get(&client, session.as_str()).await;
    let sid = |page: &str| page.split("sid=").nth(1).map(|s| s[..32].to_string());
    let (sid1, sid2) = (sid(&one).unwrap(), sid(&two).unwrap());
    assert!(sid1.chars().all(|c| c.is_ascii_hexdigit()));
    assert_ne!(sid1, sid2);

    let soft = web.base_url(SiteKind::Soft404);
    let (status, _) = get(&client, soft.join("/no/such/page").unwrap().as_str()).await;
    assert_eq!(status, 200);
    web.shutdown().await;
}
