use url::Url;

use super::*;
use crate::engine::config::ResourcesMode;
use crate::engine::url_norm;

fn entry(url: &str, kind: UrlKind) -> FrontierEntry {
    FrontierEntry {
        priority: 1,
        url: url.into(),
        host: url_norm::host_key(&Url::parse(url).expect("a URL")),
        depth: 1,
        redirects: 0,
        kind,
    }
}

#[tokio::test]
async fn only_resources_are_fetched_and_only_in_fetch_mode() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = super::super::closed_port_config();
    let (_handle, c) = super::super::for_test(config.clone(), dir.path());
    let image = entry("http://127.0.0.1:9/a.png", UrlKind::Resource);
    assert!(!c.is_fetched_resource(&image), "checked by default");
    drop(c);
    config.checks.resources = ResourcesMode::Fetch;
    let dir = tempfile::tempdir().expect("temp dir");
    let (_handle, c) = super::super::for_test(config, dir.path());
    assert!(c.is_fetched_resource(&image));
    for kind in [UrlKind::Page, UrlKind::External] {
        assert!(
            !c.is_fetched_resource(&entry("http://127.0.0.1:9/x", kind)),
            "{kind:?}"
        );
    }
}

#[tokio::test]
async fn a_stylesheets_urls_are_resources_until_the_crawls_cap_and_the_rest_are_cut() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = super::super::closed_port_config();
    config.checks.resources = ResourcesMode::Fetch;
    let (_handle, mut c) = super::super::for_test(config, dir.path());
    let u = |s: &str| Url::parse(s).expect("a URL");
    let sheet = Extracted {
        resources: vec![
            u("http://127.0.0.1:9/f.woff2"),
            u("http://127.0.0.1:9/bg.png"),
        ],
        resources_cut: 1,
        ..Extracted::default()
    };
    let out = c.stylesheet_outgoing(&sheet);
    assert!(out.links.is_empty(), "no links, only resources");
    assert_eq!(
        out.whole,
        [
            (u("http://127.0.0.1:9/f.woff2"), UrlKind::Resource),
            (u("http://127.0.0.1:9/bg.png"), UrlKind::Resource),
        ]
    );
    assert_eq!(c.stats.counters().resources_cut, 1);
    c.stats.count().stylesheet_resources = MAX_STYLESHEET_RESOURCES - 1;
    let out = c.stylesheet_outgoing(&sheet);
    assert_eq!(out.whole.len(), 1, "one left under the cap");
    assert_eq!(c.stats.counters().resources_cut, 3);
    c.stats.count().stylesheet_resources = MAX_STYLESHEET_RESOURCES;
    assert!(c.stylesheet_outgoing(&sheet).whole.is_empty());
}
