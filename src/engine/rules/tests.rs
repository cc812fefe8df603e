use super::*;

fn regex(p: &str) -> RuleSpec {
    RuleSpec {
        kind: PatternKind::Regex,
        pattern: p.to_string(),
        host: None,
    }
}

fn glob(p: &str) -> RuleSpec {
    RuleSpec {
        kind: PatternKind::Glob,
        pattern: p.to_string(),
        host: None,
    }
}

fn on_host(mut spec: RuleSpec, host: &str) -> RuleSpec {
    spec.host = Some(host.to_string());
    spec
}

#[test]
fn regex_matches_anywhere_in_the_url() {
    let mut rules = RuleSet::new();
    rules
        .add(1, regex(r"/calendar/\d{4}"), "operator".into())
        .unwrap();
    assert_eq!(
        rules.matches(
            "http://cal.localhost:4000/calendar/2031/01",
            "cal.localhost:4000"
        ),
        Some(1)
    );
    assert_eq!(
        rules.matches("http://other.org/x/calendar/1999", "other.org"),
        Some(1)
    );
    assert_eq!(
        rules.matches("http://cal.localhost:4000/calendar/", "cal.localhost:4000"),
        None
    );
}

#[test]
fn glob_matches_the_whole_url_and_star_crosses_slashes() {
    let mut rules = RuleSet::new();
    rules
        .add(1, glob("http://shop.localhost/cart/*"), "operator".into())
        .unwrap();
    assert_eq!(
        rules.matches("http://shop.localhost/cart/a/b/c?x=1", "shop.localhost"),
        Some(1)
    );
    // Whole URL: a prefix elsewhere does not match.
    assert_eq!(
        rules.matches("http://evil.org/http://shop.localhost/cart/x", "evil.org"),
        None
    );
    assert_eq!(
        rules.matches("http://shop.localhost/cart", "shop.localhost"),
        None
    );

    let mut rules = RuleSet::new();
    rules.add(2, glob("*.pdf"), "operator".into()).unwrap();
    assert_eq!(rules.matches("http://a.org/docs/x/y.pdf", "a.org"), Some(2));
    assert_eq!(
        rules.matches("http://a.org/docs/x/y.pdf?dl=1", "a.org"),
        None
    );
    rules
        .add(3, glob("http://a.org/{tag,label}/*"), "operator".into())
        .unwrap();
    assert_eq!(rules.matches("http://a.org/label/rust", "a.org"), Some(3));
}

#[test]
fn host_scoped_rules_only_match_their_host() {
    let mut rules = RuleSet::new();
    rules
        .add(
            1,
            on_host(regex(r"[?&]sort="), "Shop.localhost:4000"),
            "operator".into(),
        )
        .unwrap();
    assert_eq!(
        rules.matches(
            "http://shop.localhost:4000/list?sort=price",
            "shop.localhost:4000"
        ),
        Some(1)
    );
    assert_eq!(
        rules.matches(
            "http://blog.localhost:4000/list?sort=price",
            "blog.localhost:4000"
        ),
        None
    );
    assert_eq!(
        rules.get(1).unwrap().spec().host.as_deref(),
        Some("shop.localhost:4000"),
        "host is stored lowercase"
    );
    assert!(rules
        .get(1)
        .unwrap()
        .is_match("http://shop.localhost:4000/?sort=1", "SHOP.localhost:4000"));
    assert!(!rules
        .get(1)
        .unwrap()
        .is_match("http://shop.localhost:4000/?sort=1", "other"));
}

#[test]
fn first_rule_in_insertion_order_wins_across_global_and_host_rules() {
    let mut rules = RuleSet::new();
    rules
        .add(10, on_host(regex("/a/"), "h.org"), "operator".into())
        .unwrap();
    rules.add(20, regex("/a/"), "operator".into()).unwrap();
    rules.add(30, regex("/b/"), "operator".into()).unwrap();
    rules
        .add(40, on_host(regex("/b/"), "h.org"), "operator".into())
        .unwrap();
    assert_eq!(rules.matches("http://h.org/a/", "h.org"), Some(10));
    assert_eq!(rules.matches("http://x.org/a/", "x.org"), Some(20));
    assert_eq!(rules.matches("http://h.org/b/", "h.org"), Some(30));
    assert_eq!(rules.matches("http://h.org/c/", "h.org"), None);
}

#[test]
fn hits_are_counted_per_rule_and_shown_in_views() {
    let mut rules = RuleSet::new();
    rules.add(1, regex("/a/"), "operator".into()).unwrap();
    rules.add(2, glob("*/b/*"), "alert #3".into()).unwrap();
    for _ in 0..3 {
        rules.matches("http://h.org/a/", "h.org");
    }
    rules.matches("http://h.org/b/x", "h.org");
    rules.matches("http://h.org/none", "h.org");
    rules.add_hits(2, 10);
    let views = rules.views();
    assert_eq!(views.len(), 2);
    assert_eq!(
        (views[0].id, views[0].hits, views[0].origin.as_str()),
        (1, 3, "operator")
    );
    assert_eq!(
        (views[1].id, views[1].hits, views[1].origin.as_str()),
        (2, 11, "alert #3")
    );
    assert_eq!(views[1].spec, glob("*/b/*"));
}

#[test]
fn remove_stops_matching_and_keeps_the_others() {
    let mut rules = RuleSet::new();
    rules.add(1, regex("/a/"), "operator".into()).unwrap();
    rules.add(2, regex("/b/"), "operator".into()).unwrap();
    rules
        .add(3, on_host(regex("/c/"), "h.org"), "operator".into())
        .unwrap();
    assert_eq!(rules.remove(1), Some(regex("/a/")));
    assert_eq!(rules.remove(1), None);
    assert_eq!(rules.matches("http://h.org/a/", "h.org"), None);
    assert_eq!(rules.matches("http://h.org/b/", "h.org"), Some(2));
    assert_eq!(rules.matches("http://h.org/c/", "h.org"), Some(3));
    assert_eq!(rules.remove(3).unwrap().host.as_deref(), Some("h.org"));
    assert_eq!(rules.matches("http://h.org/c/", "h.org"), None);
    assert_eq!(rules.len(), 1);
}

#[test]
fn duplicate_ids_are_refused() {
    let mut rules = RuleSet::new();
    rules.add(1, regex("/a/"), "operator".into()).unwrap();
    let err = rules.add(1, regex("/b/"), "operator".into()).unwrap_err();
    assert!(err.contains("rule #1 already exists"), "{err}");
    assert_eq!(rules.len(), 1);
}

#[test]
fn bad_regex_message_names_the_pattern_and_the_problem() {
    let err = RuleSet::compile(&regex("cal(")).unwrap_err();
    assert!(
        err.starts_with("invalid regex \"cal(\": unclosed group — "),
        "{err}"
    );
    let err = RuleSet::compile(&regex("[a-")).unwrap_err();
    assert!(
        err.starts_with("invalid regex \"[a-\": unclosed character class — "),
        "{err}"
    );
    assert!(!err.contains('\n'), "one line: {err}");
}

#[test]
fn bad_glob_message_names_the_pattern_and_the_problem() {
    let err = RuleSet::compile(&glob("http://a/[abc")).unwrap_err();
    assert!(
        err.starts_with("invalid glob \"http://a/[abc\": unclosed character class"),
        "{err}"
    );
    assert!(err.contains(" — "), "{err}");
    let err = RuleSet::compile(&glob("http://a/{x,y")).unwrap_err();
    assert!(
        err.starts_with("invalid glob \"http://a/{x,y\": unclosed alternate group"),
        "{err}"
    );
}

#[test]
fn huge_and_empty_patterns_are_refused() {
    let err = RuleSet::compile(&regex(r"(\w{100}){100}")).unwrap_err();
    assert!(err.contains("compiled size over"), "{err}");
    assert!(err.contains("simplify"), "{err}");
    let err = RuleSet::compile(&regex("  ")).unwrap_err();
    assert!(err.starts_with("empty regex pattern"), "{err}");
    let long = "a".repeat(MAX_PATTERN_LEN + 1);
    let err = RuleSet::compile(&regex(&long)).unwrap_err();
    assert!(err.contains("too long"), "{err}");
    assert!(err.len() < 300, "the pattern is shortened in the message");
}

#[test]
fn many_rules_match_through_the_set() {
    let mut rules = RuleSet::new();
    for i in 0..60u64 {
        rules
            .add(i, regex(&format!("/section{i}/")), "operator".into())
            .unwrap();
    }
    assert_eq!(
        rules.matches("http://h.org/section42/page", "h.org"),
        Some(42)
    );
    assert_eq!(rules.matches("http://h.org/section60/page", "h.org"), None);
    assert!(rules.global.is_some());
}
