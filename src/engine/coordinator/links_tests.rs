use super::*;
use crate::engine::coordinator::admitted::{Outgoing, ADMIT_CHUNK};
use crate::engine::store::UrlKind;
use crate::engine::url_norm::UrlShape;

fn entry(url: &str) -> FrontierEntry {
    FrontierEntry {
        priority: 1,
        url: url.into(),
        host: url_norm::host_key(&Url::parse(url).expect("a URL")),
        depth: 0,
        redirects: 0,
        kind: UrlKind::Page,
    }
}

#[tokio::test]
async fn links_left_out_for_scope_keep_their_referrers() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_handle, mut c) = super::super::for_test(super::super::closed_port_config(), dir.path());
    let outside = Url::parse("http://elsewhere.example/x").expect("a URL");
    let pages = ["http://127.0.0.1:9/p1", "http://127.0.0.1:9/p2"];
    for page in pages {
        let parent = entry(page);
        let url = Url::parse(page).expect("a URL");
        let queued = c.admit_links(
            &url,
            &parent,
            Outgoing::whole(vec![(outside.clone(), UrlKind::Page)]),
            false,
        );
        assert!(queued.entries.is_empty(), "out of scope");
    }
    c.store.flush().expect("flushed");
    assert_eq!(
        c.store.referrers(outside.as_str()).expect("read"),
        pages,
        "which page links to that site?"
    );
}

#[tokio::test]
async fn a_link_too_deep_to_a_url_found_before_keeps_its_first_referrer() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_handle, mut c) = super::super::for_test(super::super::closed_port_config(), dir.path());
    let target = Url::parse("http://127.0.0.1:9/t").expect("a URL");
    let shallow = entry("http://127.0.0.1:9/p1");
    let url = Url::parse(&shallow.url).expect("a URL");
    assert_eq!(
        c.admit_links(
            &url,
            &shallow,
            Outgoing::whole(vec![(target.clone(), UrlKind::Page)]),
            false
        )
        .len(),
        1
    );
    c.store.flush().expect("flushed");
    let mut deep = entry("http://127.0.0.1:9/deep");
    deep.depth = c.cfg.max_depth;
    let url = Url::parse(&deep.url).expect("a URL");
    assert!(c
        .admit_links(
            &url,
            &deep,
            Outgoing::whole(vec![(target.clone(), UrlKind::Page)]),
            false
        )
        .entries
        .is_empty());
    c.store.flush().expect("flushed");
    assert_eq!(
        c.store.referrers(target.as_str()).expect("read"),
        ["http://127.0.0.1:9/p1", "http://127.0.0.1:9/deep"]
    );
}

#[tokio::test]
async fn resources_and_external_links_are_queued_as_checks_within_their_caps() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = super::super::closed_port_config();
    config.checks.external = true;
    config.checks.max_external_per_host = 2;
    let (_handle, mut c) = super::super::for_test(config, dir.path());
    let parent = entry("http://127.0.0.1:9/p");
    let url = Url::parse(&parent.url).expect("a URL");
    let u = |s: &str| Url::parse(s).expect("a URL");
    let links = vec![
        (u("http://127.0.0.1:9/next"), UrlKind::Page),
        // Found as a link first: a page, though the page also loads it.
        (u("http://127.0.0.1:9/both.css"), UrlKind::Page),
        (u("http://127.0.0.1:9/both.css"), UrlKind::Resource),
        // A denied extension does not stop a resource.
        (u("http://127.0.0.1:9/logo.png"), UrlKind::Resource),
        (u("http://elsewhere.example/1"), UrlKind::Page),
        (u("http://elsewhere.example/2"), UrlKind::Resource),
        (u("http://elsewhere.example/3"), UrlKind::Page),
    ];
    let queued = c
        .admit_links(&url, &parent, Outgoing::whole(links), false)
        .entries;
    let got: Vec<(&str, UrlKind)> = queued.iter().map(|e| (e.url.as_str(), e.kind)).collect();
    assert_eq!(
        got,
        [
            ("http://127.0.0.1:9/next", UrlKind::Page),
            ("http://127.0.0.1:9/both.css", UrlKind::Page),
            ("http://127.0.0.1:9/logo.png", UrlKind::Resource),
            ("http://elsewhere.example/1", UrlKind::External),
            ("http://elsewhere.example/2", UrlKind::External),
        ],
        "the third external URL of a host is past max_external_per_host"
    );
    assert_eq!(c.stats.counters().external_queued, 2);
    c.store.flush().expect("flushed");
    let left_out: Vec<String> = c
        .store
        .filtered_urls("http://elsewhere.example/")
        .map(|f| f.expect("read").url)
        .collect();
    assert_eq!(left_out, ["http://elsewhere.example/3"]);
}

#[tokio::test]
async fn a_dense_pages_links_are_admitted_a_chunk_at_a_time_and_all_queued() {
    use crate::engine::extract::PageLinks;
    let dir = tempfile::tempdir().expect("temp dir");
    let (_handle, mut c) = super::super::for_test(super::super::closed_port_config(), dir.path());
    let parent = entry("http://127.0.0.1:9/index");
    let url = Url::parse(&parent.url).expect("a URL");
    let n = 2 * ADMIT_CHUNK + 100;
    let mut links = PageLinks::default();
    for i in 0..n {
        let link = format!("http://127.0.0.1:9/fn{i}");
        let fingerprint = crate::engine::dedup::url_fingerprint(&link);
        links.push(&link, false, fingerprint, UrlShape::of(&link));
    }
    // The page also loads its first link's URL: still one referral.
    let both = Url::parse("http://127.0.0.1:9/fn0").expect("a URL");
    let resource = Url::parse("http://127.0.0.1:9/app.js").expect("a URL");
    let whole = vec![
        (both.clone(), UrlKind::Resource),
        (resource, UrlKind::Resource),
    ];
    let queued_before = c.frontier.counts().expect("counts").queued;

    let admitted = c.admit_links(&url, &parent, Outgoing { links, whole }, false);

    assert_eq!(admitted.len(), n + 1, "every link and the other resource");
    assert_eq!(admitted.count(|k| !k.is_check()), n);
    assert!(
        admitted.entries.len() <= ADMIT_CHUNK,
        "only the last chunk waits for the page's completion: {}",
        admitted.entries.len()
    );
    let queued = (c.frontier.counts().expect("counts").queued - queued_before) as usize;
    assert_eq!(
        queued + admitted.entries.len(),
        n + 1,
        "earlier chunks are queued"
    );
    c.store.flush_all().expect("flushed");
    assert_eq!(
        c.store.referrers(both.as_str()).expect("read"),
        [parent.url.as_str()]
    );
    assert_eq!(c.store.inlinks(both.as_str()), 1);
}

#[tokio::test]
async fn a_rule_of_one_host_blocks_its_links_and_no_other_hosts() {
    use crate::engine::control::{PatternKind, RuleSpec};
    let dir = tempfile::tempdir().expect("temp dir");
    let mut cfg = super::super::closed_port_config();
    cfg.scope.mode = crate::engine::config::Scope::Any;
    let (_handle, mut c) = super::super::for_test(cfg, dir.path());
    let rule = |host: &str| RuleSpec {
        kind: PatternKind::Regex,
        pattern: "/private/".into(),
        host: Some(host.into()),
    };
    c.rules
        .add(rule("127.0.0.1:9"), "test".into())
        .expect("rule added");
    let parent = entry("http://127.0.0.1:9/p");
    let links: Vec<(Url, UrlKind)> = [
        "http://127.0.0.1:9/private/a",
        "http://127.0.0.1:9/public/b",
        "http://other.example/private/c",
    ]
    .iter()
    .map(|u| (Url::parse(u).expect("a URL"), UrlKind::Page))
    .collect();
    let url = Url::parse(&parent.url).expect("a URL");
    let admitted = c.admit_links(&url, &parent, Outgoing::whole(links), false);
    let queued: Vec<(&str, &str)> = admitted
        .entries
        .iter()
        .map(|e| (e.url.as_str(), e.host.as_str()))
        .collect();
    assert_eq!(
        queued,
        [
            ("http://127.0.0.1:9/public/b", "127.0.0.1:9"),
            ("http://other.example/private/c", "other.example"),
        ]
    );
    assert_eq!(c.stats.counters().blocked_by_rules, 1);
}
