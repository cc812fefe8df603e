use std::collections::{HashSet, VecDeque};

use url::Url;

use super::*;

/// A breadth-first crawl of a simulated site: `links(page, fetch_no)` gives a
/// page's hrefs, `simhash(page)` its content fingerprint.
pub(super) struct Sim {
    pub det: TrapDetector,
    pub seen: HashSet<String>,
    /// URLs discovered so far (seeds included).
    pub discovered: usize,
    pub fetched: usize,
    pub alerts: Vec<Alerted>,
}

/// A detection and how far the crawl was when it was raised.
#[derive(Debug)]
pub(super) struct Alerted {
    pub discovered: usize,
    pub fetched: usize,
    pub detection: Detection,
}

pub(super) fn crawl(
    cfg: &TrapConfig,
    seeds: &[&str],
    max_fetches: usize,
    links: impl Fn(&Url, usize) -> Vec<String>,
    simhash: impl Fn(&Url) -> Option<u64>,
) -> Sim {
    let mut sim = Sim {
        det: TrapDetector::new(cfg),
        seen: HashSet::new(),
        discovered: 0,
        fetched: 0,
        alerts: Vec::new(),
    };
    let mut queue: VecDeque<(Url, u32)> = VecDeque::new();
    for s in seeds {
        let u = Url::parse(s).unwrap();
        sim.seen.insert(u.to_string());
        sim.discovered += 1;
        queue.push_back((u, 0));
    }
    while let Some((page, depth)) = queue.pop_front() {
        if sim.fetched >= max_fetches {
            break;
        }
        sim.fetched += 1;
        let mut new_links = 0;
        for href in links(&page, sim.fetched) {
            let Ok(mut child) = page.join(&href) else {
                continue;
            };
            child.set_fragment(None);
            if !sim.seen.insert(child.to_string()) {
                continue;
            }
            sim.discovered += 1;
            new_links += 1;
            if let Some(detection) = sim.det.on_discovered(&page, &child, depth + 1) {
                sim.alerts.push(Alerted {
                    discovered: sim.discovered,
                    fetched: sim.fetched,
                    detection,
                });
            }
            queue.push_back((child, depth + 1));
        }
        if let Some(detection) = sim.det.on_fetched(&page, simhash(&page), new_links) {
            sim.alerts.push(Alerted {
                discovered: sim.discovered,
                fetched: sim.fetched,
                detection,
            });
        }
    }
    sim
}

/// Distinct pages: fingerprints far apart.
pub(super) fn distinct(url: &Url) -> Option<u64> {
    Some(hash_str(url.as_str()))
}

/// The detection's rule matches its samples and the trap URLs, and none of
/// the normal pages.
pub(super) fn assert_rule(d: &Detection, traps: &[&str], normal: &[&str]) {
    let rule = RuleSet::compile(&d.rule).expect("suggested rule compiles");
    assert!(!d.samples.is_empty() && d.samples.len() <= MAX_SAMPLES);
    for s in d
        .samples
        .iter()
        .map(String::as_str)
        .chain(traps.iter().copied())
    {
        assert!(
            rule.is_match(s, &d.host),
            "rule {} misses trap URL {s}",
            d.rule.pattern
        );
    }
    for s in normal {
        assert!(
            !rule.is_match(s, &d.host),
            "rule {} matches normal page {s}",
            d.rule.pattern
        );
    }
}

/// The first alert, which must be of `kind`: (URLs discovered, pages fetched, detection).
fn only_alert(sim: &Sim, kind: TrapKind) -> (usize, usize, &Detection) {
    let a = sim
        .alerts
        .first()
        .unwrap_or_else(|| panic!("no {kind:?} alert"));
    assert_eq!(a.detection.kind, kind, "first alert: {a:?}");
    (a.discovered, a.fetched, &a.detection)
}

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
            "http://h.org/docs/x/x/xy",
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
    assert_eq!(det.on_discovered(&home, &deep, 1), None);
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

#[test]
fn random_looking_values() {
    for yes in [
        "0123456789abcdef0123",
        "a8F3kQ9zLm2Xp7Rt",
        "5f2b8c1d9e7a6b4c3d2e1f0a",
    ] {
        assert!(query::random_looking(yes), "{yes}");
    }
    for no in [
        "short1a",
        "my-long-product-name",
        "2023102512301234",
        "deadbeefcafebabedead",
        "Summer-Sale-Collection",
        "price:asc,name:desc",
    ] {
        assert!(!query::random_looking(no), "{no}");
    }
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
    assert_eq!(d.rule.pattern, r"^http://cal\.localhost:4000/calendar/\d");
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
        &["http://dup.localhost:4000/p/x/y"],
        &[
            "http://dup.localhost:4000/about",
            "http://dup.localhost:4000/",
        ],
    );
}

#[test]
fn soft_404_host_blows_its_budget() {
    let cfg = TrapConfig::default();
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
        distinct,
    );
    let (_, fetched, d) = only_alert(&sim, TrapKind::HostBudget);
    // Window full at 50 pages: / (6 new links), 5 pages with none, 44 with 40.
    assert!(fetched <= cfg.budget_window, "after {fetched} pages");
    assert_rule(
        d,
        &["http://soft.localhost:4000/missing/zzz"],
        &[
            "http://soft.localhost:4000/page3",
            "http://soft.localhost:4000/",
        ],
    );
}

#[test]
fn an_alert_is_raised_once_and_suppress_silences_it() {
    let cfg = TrapConfig::default();
    let mut det = TrapDetector::new(&cfg);
    let parent = Url::parse("http://h.org/").unwrap();
    let first = Url::parse("http://h.org/x/x/x").unwrap();
    let d = det.on_discovered(&parent, &first, 1).expect("raised");
    assert_eq!(
        det.on_discovered(&parent, &Url::parse("http://h.org/x/x/x/x").unwrap(), 1),
        None
    );
    // Another prefix is another rule.
    let other = Url::parse("http://h.org/y/y/y").unwrap();
    let d2 = det
        .on_discovered(&parent, &other, 1)
        .expect("different rule");
    assert_ne!(d.rule, d2.rule);
    // Dismissed before it was raised: never raised.
    let mut det = TrapDetector::new(&cfg);
    det.suppress("h.org", &d.rule);
    assert_eq!(det.on_discovered(&parent, &first, 1), None);
    assert!(det.on_discovered(&parent, &other, 1).is_some());
    // Restored after a restart.
    let mut det = TrapDetector::new(&cfg);
    det.mark_raised("h.org", d.kind, &d.rule);
    assert_eq!(det.on_discovered(&parent, &first, 1), None);
}

#[test]
fn hosts_tracked_are_bounded() {
    let cfg = TrapConfig::default();
    let mut det = TrapDetector::new(&cfg);
    for i in 0..(MAX_HOSTS * 3) {
        let u = Url::parse(&format!("http://h{i}.org/list?q={i}")).unwrap();
        det.on_discovered(&u, &u, 1);
        det.on_fetched(&u, Some(i as u64), 3);
    }
    assert_eq!(det.hosts_tracked(), MAX_HOSTS);
}

#[test]
fn gen_map_forgets_the_least_recently_used() {
    let mut m: GenMap<u32, u32> = GenMap::new(4);
    for k in 0..4 {
        m.insert(k, k);
    }
    m.insert(4, 4); // 0..4 become old
    assert_eq!(m.get(&0).copied(), Some(0)); // promoted
    for k in 5..8 {
        m.insert(k, k); // young: 4, 0, 5, 6 full, then 7 rotates
    }
    assert!(m.len() <= 8);
    assert_eq!(m.get(&0).copied(), Some(0));
    assert_eq!(m.get(&1), None, "1 was never touched again");
}

#[test]
fn host_key_includes_non_default_port() {
    assert_eq!(
        host_key(&Url::parse("http://Shop.Localhost:4000/x").unwrap()).unwrap(),
        "shop.localhost:4000"
    );
    assert_eq!(
        host_key(&Url::parse("https://example.org:443/").unwrap()).unwrap(),
        "example.org"
    );
}
