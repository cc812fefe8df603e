use super::*;

fn entry(url: &str) -> FrontierEntry {
    FrontierEntry {
        priority: 1,
        url: url.into(),
        host: url_norm::host_key(&Url::parse(url).expect("a URL")),
        depth: 0,
        redirects: 0,
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
        let queued = c.admit_links(&url, &parent, vec![outside.clone()], false);
        assert!(queued.is_empty(), "out of scope");
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
        c.admit_links(&url, &shallow, vec![target.clone()], false)
            .len(),
        1
    );
    c.store.flush().expect("flushed");
    let mut deep = entry("http://127.0.0.1:9/deep");
    deep.depth = c.cfg.max_depth;
    let url = Url::parse(&deep.url).expect("a URL");
    assert!(c
        .admit_links(&url, &deep, vec![target.clone()], false)
        .is_empty());
    c.store.flush().expect("flushed");
    assert_eq!(
        c.store.referrers(target.as_str()).expect("read"),
        ["http://127.0.0.1:9/p1", "http://127.0.0.1:9/deep"]
    );
}
