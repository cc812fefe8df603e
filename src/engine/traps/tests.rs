//! Each trap pattern is raised with the right kind, within a stated number
//! of URLs, with a rule that covers the trap and not the normal pages.

use url::Url;

use super::sim::{assert_rule, crawl, distinct, only_alert};
use super::*;

#[test]
fn repeated_segments_from_a_relative_link_loop() {
    let cfg = TrapConfig::default();
    // Every page under /a/b/ links "a/b/" relative to itself.
    let sim = crawl(
        &cfg,
        &["http://loop.localhost:4000/"],
        50,
        |page, _| {
            if page.path() == "/" {
                vec!["/a/b/".into(), "/about".into()]
            } else if page.path().starts_with("/a/b/") {
                vec!["a/b/".into(), "/".into()]
            } else {
                vec![]
            }
        },
        distinct,
    );
    let (at, _, d) = only_alert(&sim, TrapKind::RepeatedSegments);
    // seed, /a/b/, /about, /a/b/a/b/, /a/b/a/b/a/b/
    assert!(at <= 5, "raised after {at} URLs");
    assert_eq!(d.host, "loop.localhost:4000");
    assert_eq!(d.rule.host.as_deref(), Some("loop.localhost:4000"));
    assert_rule(
        d,
        &[
            "http://loop.localhost:4000/a/b/a/b/a/b/",
            "http://loop.localhost:4000/a/b/a/b/a/b/a/b/x",
        ],
        &[
            "http://loop.localhost:4000/",
            "http://loop.localhost:4000/a/b/",
            "http://loop.localhost:4000/a/b/a/b/",
            "http://loop.localhost:4000/about",
        ],
    );
}

#[test]
fn repeated_single_segment_under_a_prefix() {
    let cfg = TrapConfig::default();
    let url = Url::parse("http://h.org/docs/x/x/x/page").unwrap();
    let d = path::repeated_segments(&cfg, "h.org", &url).expect("x/x/x");
    assert_rule(
        &d,
        &["http://h.org/docs/x/x/x", "http://h.org/docs/x/x/x/x?y=1"],
        &[
            "http://h.org/docs/x/x/",
            "http://h.org/x/x/x",
            "http://h.org/docs/y/x/x/x",
        ],
    );
    for ok in [
        "http://h.org/2020/10/10/ten",
        "http://h.org/a/b/a/b/c",
        "http://h.org/a/a/b",
    ] {
        assert!(
            path::repeated_segments(&cfg, "h.org", &Url::parse(ok).unwrap()).is_none(),
            "{ok}"
        );
    }
}

#[test]
fn depth_growth_chain_beyond_the_limit() {
    let cfg = TrapConfig::default();
    // Each page links one level deeper, forever.
    let sim = crawl(
        &cfg,
        &["http://deep.localhost:4000/"],
        100,
        |page, n| match page.path() {
            "/" => vec!["/t/".into(), "/about".into()],
            "/about" => vec![],
            _ => vec![format!("s{n}/")],
        },
        distinct,
    );
    let (at, _, d) = only_alert(&sim, TrapKind::DepthGrowth);
    // seed, /t/, /about, then one URL per level: depth 13 is the 15th URL.
    assert!(at <= 15, "raised after {at} URLs");
    assert!(d.evidence_count >= u64::from(path::MIN_GROWTH_HOPS));
    let deep13 = format!("http://deep.localhost:4000/t/{}", "a/".repeat(12));
    let deep12 = format!("http://deep.localhost:4000/t/{}", "a/".repeat(11));
    assert_rule(
        d,
        &[&deep13],
        &[
            &deep12,
            "http://deep.localhost:4000/about",
            "http://deep.localhost:4000/t/",
        ],
    );
}

#[test]
fn one_deep_link_from_a_shallow_page_is_not_growth() {
    let cfg = TrapConfig::default();
    let mut det = TrapDetector::new(&cfg);
    let home = Url::parse("http://h.org/").unwrap();
    let path: String = (0..20).map(|i| format!("s{i}/")).collect();
    let deep = Url::parse(&format!("http://h.org/{path}end")).unwrap();
    assert_eq!(det.on_discovered(&LinkParent::of(&home), &deep), None);
}

#[test]
fn query_explosion_on_one_path() {
    let cfg = TrapConfig::default();
    let sim = crawl(
        &cfg,
        &["http://search.localhost:4000/"],
        400,
        |page, n| {
            if page.path() == "/" {
                vec!["/search".into(), "/about".into()]
            } else if page.path() == "/search" {
                (0..5).map(|i| format!("/search?q=w{n}x{i}")).collect()
            } else {
                vec![]
            }
        },
        distinct,
    );
    let (at, _, d) = only_alert(&sim, TrapKind::QueryExplosion);
    // seed, /search, /about + 201 variants.
    assert!(
        at <= 3 + cfg.max_query_variants + 1,
        "raised after {at} URLs"
    );
    assert_eq!(d.evidence_count, cfg.max_query_variants as u64 + 1);
    assert_rule(
        d,
        &["http://search.localhost:4000/search?q=anything"],
        &[
            "http://search.localhost:4000/search",
            "http://search.localhost:4000/about",
            "http://search.localhost:4000/",
        ],
    );
}

#[test]
fn session_id_fresh_on_every_visit() {
    let cfg = TrapConfig::default();
    let pages = ["/", "/a", "/b", "/c", "/d", "/e"];
    // Each fetch starts a new session; its links all carry that session's id.
    let sim = crawl(
        &cfg,
        &["http://sess.localhost:4000/"],
        100,
        |_, n| {
            let sid = format!("{:016x}{:016x}", hash_str(&n.to_string()), n);
            pages.iter().map(|p| format!("{p}?sid={sid}")).collect()
        },
        distinct,
    );
    let (at, _, d) = only_alert(&sim, TrapKind::SessionId);
    assert!(
        at <= 6 * query::SESSION_VALUES + 1,
        "raised after {at} URLs"
    );
    assert_eq!(d.rule.pattern, "[?&]sid=");
    assert_rule(
        d,
        &["http://sess.localhost:4000/a?sid=0123456789abcdef0123456789abcdef"],
        &[
            "http://sess.localhost:4000/a",
            "http://sess.localhost:4000/?side=1",
            "http://sess.localhost:4000/",
        ],
    );
}

#[test]
fn jsessionid_path_parameter() {
    let cfg = TrapConfig::default();
    let sim = crawl(
        &cfg,
        &["http://j.localhost:4000/"],
        100,
        |_, n| {
            let sid = format!("A{:015X}B{:014}", hash_str(&n.to_string()) >> 4, n);
            ["/", "/shop", "/cart"]
                .iter()
                .map(|p| format!("{p};jsessionid={sid}"))
                .collect()
        },
        distinct,
    );
    let (at, _, d) = only_alert(&sim, TrapKind::SessionId);
    assert!(
        at <= 3 * query::SESSION_VALUES + 1,
        "raised after {at} URLs"
    );
    assert_eq!(d.rule.pattern, ";jsessionid=");
    assert_rule(
        d,
        &[],
        &["http://j.localhost:4000/shop", "http://j.localhost:4000/"],
    );
}

fn calendar_links(page: &Url) -> Vec<String> {
    let segs = segments(page);
    match segs.as_slice() {
        [] => vec!["/calendar/2024/05".into(), "/about".into()],
        ["calendar", y, m] => {
            let (y, m): (i32, i32) = (y.parse().unwrap(), m.parse().unwrap());
            let months = y * 12 + m - 1;
            [months - 1, months + 1]
                .iter()
                .map(|t| format!("/calendar/{}/{:02}", t / 12, t % 12 + 1))
                .collect()
        }
        _ => vec![],
    }
}

#[test]
fn calendar_running_both_ways() {
    let cfg = TrapConfig::default();
    let sim = crawl(
        &cfg,
        &["http://cal.localhost:4000/"],
        200,
        |p, _| calendar_links(p),
        distinct,
    );
    let (at, _, d) = only_alert(&sim, TrapKind::Counter);
    // Two URLs per hop (one each way): 25 hops past the first month.
    let bound = 3 + 2 * (cfg.max_counter_run + 1);
    assert!(at <= bound, "raised after {at} URLs, bound {bound}");
    // The months vary, the path around them stays literal.
    assert_eq!(
        d.rule.pattern,
        r"^https?://cal\.localhost:4000/calendar/\d+/\d+$"
    );
    assert_rule(
        d,
        &[
            "http://cal.localhost:4000/calendar/2031/01",
            "http://cal.localhost:4000/calendar/1999/12",
        ],
        &[
            "http://cal.localhost:4000/calendar/",
            "http://cal.localhost:4000/about",
            "http://cal.localhost:4000/",
        ],
    );
}

#[test]
fn endless_page_counter() {
    let cfg = TrapConfig::default();
    let sim = crawl(
        &cfg,
        &["http://pages.localhost:4000/items?page=1"],
        400,
        |page, _| {
            let Some(q) = page.query() else {
                return vec![];
            };
            let n: u64 = q[5..].parse().unwrap();
            vec![format!("/items?page={}", n + 1), "/about".into()]
        },
        distinct,
    );
    let (at, _, d) = only_alert(&sim, TrapKind::Counter);
    let bound = 2 + cfg.max_counter_run * counter::PLAIN_COUNTER_FACTOR + 1;
    assert!(at <= bound, "raised after {at} URLs, bound {bound}");
    assert_rule(
        d,
        &["http://pages.localhost:4000/items?page=5000"],
        &[
            "http://pages.localhost:4000/items",
            "http://pages.localhost:4000/about",
        ],
    );
}

#[test]
fn near_duplicates_under_one_prefix() {
    let cfg = TrapConfig::default();
    let base = 0x0123_4567_89ab_cdefu64;
    let sim = crawl(
        &cfg,
        &["http://dup.localhost:4000/"],
        100,
        |page, n| {
            if page.path() == "/" {
                vec!["/about".into(), "/p/start".into()]
            } else if page.path().starts_with("/p/") {
                vec![format!("/p/item-{n}/view"), format!("/p/item-{n}/print")]
            } else {
                vec![]
            }
        },
        |u| {
            if u.path().starts_with("/p/") {
                // Same template: one bit off the base, so at most 2 bits apart.
                Some(base ^ (1u64 << (hash_str(u.as_str()) % 64)))
            } else {
                distinct(u)
            }
        },
    );
    let (_, fetched, d) = only_alert(&sim, TrapKind::NearDuplicates);
    // The 21st similar page raises it; / and /about fetched besides.
    assert!(
        fetched <= 2 + cfg.max_near_duplicates + 1,
        "after {fetched} pages"
    );
    assert_eq!(d.evidence_count, cfg.max_near_duplicates as u64 + 1);
    assert_rule(
        d,
        &["http://dup.localhost:4000/p/item-9999/print"],
        &[
            "http://dup.localhost:4000/about",
            "http://dup.localhost:4000/",
        ],
    );
}

#[test]
fn near_duplicates_beside_as_many_distinct_pages_are_suspected() {
    // Every real page under /p/ links one dead /p/gone-N.html that answers
    // the same "not found" page: half of the prefix's pages are copies. They
    // do not link one another, so they are left to a soft-404 probe.
    let cfg = TrapConfig::default();
    let sim = crawl(
        &cfg,
        &["http://mixed.localhost:4000/p/1.html"],
        200,
        |page, _| {
            let n: u64 = page
                .path()
                .strip_prefix("/p/")
                .and_then(|p| p.strip_suffix(".html"))
                .and_then(|p| p.parse().ok())
                .unwrap_or(0);
            if n == 0 {
                return vec![];
            }
            vec![format!("/p/{}.html", n + 1), format!("/p/gone-{n}.html")]
        },
        |u| {
            if u.path().starts_with("/p/gone-") {
                Some(0x0bad_f00d_0bad_f00d ^ (1 << (hash_str(u.as_str()) % 64)))
            } else {
                distinct(u)
            }
        },
    );
    assert!(sim.alerts.is_empty(), "{:?}", sim.alerts);
    let suspect = sim.suspects.first().expect("suspected");
    let (fetched, d) = (suspect.fetched, &suspect.detection);
    assert_eq!(d.kind, TrapKind::NearDuplicates);
    assert!(
        fetched <= 2 * (cfg.max_near_duplicates + 2),
        "after {fetched} pages"
    );
    assert_rule(
        d,
        &["http://mixed.localhost:4000/p/gone-9999.html"],
        &["http://mixed.localhost:4000/p/7.html"],
    );
}

/// Pages under `/missing/` share one template (a soft 404); the others differ.
fn soft_404_template(url: &Url) -> Option<u64> {
    if url.path().starts_with("/missing/") {
        Some(0x0bad_f00d_0bad_f00d)
    } else {
        distinct(url)
    }
}

#[test]
fn soft_404_host_blows_its_budget() {
    // With the near-duplicate detector out of the way, the budget alone must
    // catch a host that hands out new URLs for the same page.
    let cfg = TrapConfig {
        max_near_duplicates: 10_000,
        ..TrapConfig::default()
    };
    let sim = crawl(
        &cfg,
        &["http://soft.localhost:4000/"],
        200,
        |page, n| {
            if page.path().starts_with("/missing/") {
                (0..40).map(|i| format!("/missing/r{n}x{i}")).collect()
            } else if page.path() == "/" {
                (0..5)
                    .map(|i| format!("/page{i}"))
                    .chain(["/missing/start".to_string()])
                    .collect()
            } else {
                vec!["/".into()]
            }
        },
        soft_404_template,
    );
    let (_, fetched, d) = only_alert(&sim, TrapKind::HostBudget);
    // Window full at 50 pages: / (6 new links), 5 pages with none, 44 with 40.
    assert!(fetched <= cfg.budget_window, "after {fetched} pages");
    assert_rule(
        d,
        &["http://soft.localhost:4000/missing/r977x12"],
        &[
            "http://soft.localhost:4000/page3",
            "http://soft.localhost:4000/",
        ],
    );
}

#[test]
fn session_id_with_an_unknown_name() {
    let cfg = TrapConfig::default();
    let pages = ["/", "/a", "/b", "/c", "/d", "/e", "/f"];
    let sim = crawl(
        &cfg,
        &["http://anon.localhost:4000/"],
        100,
        |_, n| {
            let token = format!("{:016x}{:016x}", hash_str(&n.to_string()), n);
            pages.iter().map(|p| format!("{p}?v=1&k={token}")).collect()
        },
        distinct,
    );
    let (at, _, d) = only_alert(&sim, TrapKind::SessionId);
    assert!(
        at <= 7 * query::SESSION_VALUES + 1,
        "raised after {at} URLs"
    );
    assert_eq!(d.rule.pattern, "[?&]k=");
    assert_rule(
        d,
        &[],
        &[
            "http://anon.localhost:4000/a?v=1",
            "http://anon.localhost:4000/",
        ],
    );
}

#[test]
fn a_large_site_growing_with_distinct_pages_blows_no_budget() {
    // Every page brings 45 new URLs, far over `max_new_urls_per_page`, as a
    // big site does while its crawl grows; the pages all differ.
    let cfg = TrapConfig::default();
    let sim = crawl(
        &cfg,
        &["http://big.localhost:4000/"],
        400,
        |_, n| (0..45).map(|i| format!("/item/{n}/{i}.html")).collect(),
        distinct,
    );
    assert!(sim.alerts.is_empty(), "{:?}", sim.alerts);
}
