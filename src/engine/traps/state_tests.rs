//! Alert de-duplication, bounded state and helpers.

use url::Url;

use super::*;

#[test]
fn an_alert_is_raised_once_and_suppress_silences_it() {
    let cfg = TrapConfig::default();
    let mut det = TrapDetector::new(&cfg);
    let parent = Url::parse("http://h.org/").unwrap();
    let first = Url::parse("http://h.org/x/x/x").unwrap();
    let d = det
        .on_discovered(&LinkParent::of(&parent), &first)
        .expect("raised");
    assert_eq!(
        det.on_discovered(
            &LinkParent::of(&parent),
            &Url::parse("http://h.org/x/x/x/x").unwrap()
        ),
        None
    );
    // Another prefix is another rule.
    let other = Url::parse("http://h.org/y/y/y").unwrap();
    let d2 = det
        .on_discovered(&LinkParent::of(&parent), &other)
        .expect("different rule");
    assert_ne!(d.rule, d2.rule);
    // Dismissed before it was raised: never raised.
    let mut det = TrapDetector::new(&cfg);
    det.suppress("h.org", &d.rule);
    assert_eq!(det.on_discovered(&LinkParent::of(&parent), &first), None);
    assert!(det
        .on_discovered(&LinkParent::of(&parent), &other)
        .is_some());
    // Restored after a restart.
    let mut det = TrapDetector::new(&cfg);
    det.mark_raised("h.org", d.kind, &d.rule);
    assert_eq!(det.on_discovered(&LinkParent::of(&parent), &first), None);
}

#[test]
fn exact_copies_are_left_to_dedup_not_called_near_duplicates() {
    let cfg = TrapConfig::default();
    let pages = cfg.max_near_duplicates * 3;
    // Copies listed by one page, not begetting one another: a suspect for
    // the soft-404 probe, not an alert.
    let run = |exact_copy: bool| {
        let mut det = TrapDetector::new(&cfg);
        (0..pages)
            .filter_map(|i| {
                let u = Url::parse(&format!("http://h.org/copies/{i}.html")).unwrap();
                assert_eq!(det.on_fetched(&u, Some(0xfeed), 1, exact_copy), None);
                det.take_suspect()
            })
            .map(|d| d.kind)
            .collect::<Vec<_>>()
    };
    assert!(run(false).contains(&TrapKind::NearDuplicates));
    assert!(!run(true).contains(&TrapKind::NearDuplicates));
}

#[test]
fn hosts_tracked_are_bounded() {
    let cfg = TrapConfig::default();
    let mut det = TrapDetector::new(&cfg);
    for i in 0..(MAX_HOSTS * 3) {
        let u = Url::parse(&format!("http://h{i}.org/list?q={i}")).unwrap();
        det.on_discovered(&LinkParent::of(&u), &u);
        det.on_fetched(&u, Some(i as u64), 3, false);
    }
    let tracked = det.hosts_tracked();
    assert!(
        tracked <= MAX_HOSTS && tracked > MAX_HOSTS * 7 / 8,
        "{tracked}"
    );
    // The host used last is among them.
    let last = Url::parse(&format!("http://h{}.org/", MAX_HOSTS * 3 - 1)).unwrap();
    let before = det.hosts_tracked();
    det.on_fetched(&last, Some(1), 0, false);
    assert_eq!(det.hosts_tracked(), before);
}

#[test]
fn hosts_crawled_in_turn_keep_their_evidence() {
    // A polite crawl of many sites asks each host in turn: a calendar on
    // every one of them, one month a turn.
    let cfg = TrapConfig::default();
    let mut det = TrapDetector::new(&cfg);
    let hosts = 1500;
    let mut raised = vec![false; hosts];
    for month in 0..cfg.max_counter_run as i32 + 10 {
        for (h, raised) in raised.iter_mut().enumerate() {
            let url = |m: i32| {
                let m = 2024 * 12 + m;
                Url::parse(&format!(
                    "http://cal{h}.org/calendar/{}/{:02}",
                    m / 12,
                    m % 12 + 1
                ))
                .unwrap()
            };
            if let Some(d) = det.on_discovered(&LinkParent::of(&url(month)), &url(month + 1)) {
                assert_eq!(d.kind, TrapKind::Counter);
                *raised = true;
            }
        }
    }
    let missed = raised.iter().filter(|r| !**r).count();
    assert_eq!(missed, 0, "{missed} of {hosts} calendars never raised");
}

#[test]
fn a_gen_map_given_a_smaller_cap_holds_no_more_than_two_generations_of_it() {
    let mut m: GenMap<u32, u32> = GenMap::new(64);
    for i in 0..64 {
        m.insert(i, i);
    }
    m.set_cap(4);
    for i in 100..110 {
        m.insert(i, i);
    }
    assert!(m.len() <= 8, "{} entries", m.len());
    assert_eq!(m.get(&109), Some(&mut 109));
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

#[test]
fn odd_urls_never_panic() {
    let cfg = TrapConfig {
        max_counter_run: 1,
        max_query_variants: 1,
        max_segment_repeats: 2,
        max_path_depth: 1,
        budget_window: 1,
        max_new_urls_per_page: 0.0,
        ..TrapConfig::default()
    };
    let mut det = TrapDetector::new(&cfg);
    let long_digits = "9".repeat(500);
    let many_params: String = (0..500).map(|i| format!("p{i}={i}&")).collect();
    let many_numbers: String = (0..100).map(|i| format!("/{i}")).collect();
    let urls = [
        "http://h.org/".to_string(),
        "http://h.org/é/ü/%FF/%00?ä=ö#frag".to_string(),
        format!("http://h.org/{long_digits}?n={long_digits}"),
        format!("http://h.org/list?{many_params}"),
        format!("http://h.org{many_numbers}"),
        format!("http://h.org{many_numbers}?x=1"),
        "http://[::1]:8080/a;b;c=;=d?&&=&a".to_string(),
        "http://127.0.0.1/;jsessionid=?sid=".to_string(),
        "data:text/plain,hello".to_string(),
        "mailto:someone@example.org".to_string(),
        "http://h.org/a/a/a/a/a/a".to_string(),
    ];
    let parsed: Vec<Url> = urls.iter().map(|u| Url::parse(u).unwrap()).collect();
    for parent in &parsed {
        for child in &parsed {
            det.on_discovered(&LinkParent::of(parent), child);
        }
        det.on_fetched(parent, Some(0), 1000, false);
        det.on_fetched(parent, None, usize::MAX, false);
    }
}

#[test]
fn a_raised_trap_seen_again_is_reported_once_with_its_latest_evidence() {
    let mut det = TrapDetector::new(&TrapConfig::default());
    let parent = Url::parse("http://h.org/").unwrap();
    let deep = |n: usize| Url::parse(&format!("http://h.org/x/x/x/{n}")).unwrap();
    let d = det
        .on_discovered(&LinkParent::of(&parent), &deep(0))
        .expect("raised");
    assert!(det.take_repeats().is_empty(), "nothing seen again yet");
    for n in 1..5 {
        assert_eq!(
            det.on_discovered(&LinkParent::of(&parent), &deep(n)),
            None,
            "no second alert"
        );
    }
    let repeats = det.take_repeats();
    assert_eq!(repeats.len(), 1, "{repeats:?}");
    let ((host, kind, pattern), evidence) = &repeats[0];
    assert_eq!(
        (host.as_str(), *kind, pattern),
        ("h.org", d.kind, &d.rule.pattern)
    );
    assert!(*evidence >= d.evidence_count);
    assert!(det.take_repeats().is_empty(), "taken");
}
