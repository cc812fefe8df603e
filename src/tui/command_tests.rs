use super::*;

fn engine(line: &str) -> Command {
    match parse(line) {
        Ok(CommandLine::Engine(c)) => c,
        other => panic!("{line}: {other:?}"),
    }
}

#[test]
fn parses_every_command() {
    assert_eq!(
        engine("blacklist /cal/\\d+"),
        Command::AddRule(RuleSpec {
            kind: PatternKind::Regex,
            pattern: "/cal/\\d+".into(),
            host: None
        })
    );
    assert_eq!(
        engine("glob *?sid=* Shop.localhost:8080"),
        Command::AddRule(RuleSpec {
            kind: PatternKind::Glob,
            pattern: "*?sid=*".into(),
            host: Some("shop.localhost:8080".into())
        })
    );
    assert_eq!(
        engine("throttle shop.localhost 500ms"),
        Command::SetHostDelay {
            host: "shop.localhost".into(),
            delay: Some(Duration::from_millis(500))
        }
    );
    assert_eq!(
        engine("throttle shop.localhost off"),
        Command::SetHostDelay {
            host: "shop.localhost".into(),
            delay: None
        }
    );
    assert_eq!(
        engine("throttle * 2s"),
        Command::SetGlobalDelay(Duration::from_secs(2))
    );
    assert_eq!(
        engine("concurrency a.localhost 2"),
        Command::SetHostConcurrency {
            host: "a.localhost".into(),
            max: Some(2)
        }
    );
    assert_eq!(engine("concurrency * 8"), Command::SetGlobalConcurrency(8));
    assert_eq!(engine("rate 5"), Command::SetGlobalRate(Some(5.0)));
    assert_eq!(engine("rate off"), Command::SetGlobalRate(None));
    assert_eq!(engine("pause"), Command::Pause(Target::Global));
    assert_eq!(
        engine("pause a.localhost"),
        Command::Pause(Target::Host("a.localhost".into()))
    );
    assert_eq!(engine("resume"), Command::Resume(Target::Global));
    assert_eq!(
        engine("seed http://blog.localhost:8080/"),
        Command::AddSeed("http://blog.localhost:8080/".into())
    );
    assert_eq!(
        engine("reset a.localhost"),
        Command::ResetBreaker("a.localhost".into())
    );
    assert_eq!(
        engine("open a.localhost"),
        Command::ForceOpenBreaker("a.localhost".into())
    );
    assert_eq!(
        engine("accept #3"),
        Command::AcceptAlert {
            alert_id: 3,
            rule: None
        }
    );
    assert_eq!(engine("dismiss 4"), Command::DismissAlert { alert_id: 4 });
    assert_eq!(engine("unrule 7"), Command::RemoveRule { rule_id: 7 });
    assert_eq!(parse("quit"), Ok(CommandLine::Quit));
    assert_eq!(parse("freeze"), Ok(CommandLine::Freeze));
}

#[test]
fn select_takes_the_rest_of_the_line_as_its_selector() {
    assert_eq!(
        parse("select  div > a.next[href]"),
        Ok(CommandLine::Select("div > a.next[href]".into()))
    );
    assert!(parse("select").unwrap_err().contains("select CSS"));
}

#[test]
fn extract_takes_a_name_a_selector_with_spaces_and_an_attribute() {
    assert_eq!(
        engine("extract crumbs=nav.breadcrumbs li > a@href"),
        Command::AddExtraction(ExtractionSpec {
            name: "crumbs".into(),
            selector: "nav.breadcrumbs li > a".into(),
            attribute: Some("href".into()),
        })
    );
    assert!(parse("extract").unwrap_err().contains("extract NAME=CSS"));
    let bad_css = parse("extract price=div[").unwrap_err();
    assert!(bad_css.contains("bad CSS selector"), "{bad_css}");
    let bad_name = parse("extract 9=.price").unwrap_err();
    assert!(bad_name.contains("extraction name"), "{bad_name}");
}

#[test]
fn delays_are_bounded_and_a_zero_rate_is_no_cap() {
    let too_long = "bad delay \"99999h\": at most 1h between two requests to a host";
    assert_eq!(parse("throttle * 99999h"), Err(too_long.into()));
    assert_eq!(parse("throttle a.example 99999h"), Err(too_long.into()));
    assert_eq!(
        engine("throttle * 1h"),
        Command::SetGlobalDelay(Duration::from_secs(3600))
    );
    assert_eq!(engine("rate 0"), Command::SetGlobalRate(None));
    assert_eq!(engine("rate 0.5"), Command::SetGlobalRate(Some(0.5)));
    assert!(parse("rate 10001").is_err());
}

#[test]
fn bad_input_says_what_is_wrong() {
    assert_eq!(
        parse("throttle a 500"),
        Err("\"500\" needs a unit, e.g. 500ms or 2s".into())
    );
    assert!(parse("blacklist (unclosed")
        .unwrap_err()
        .starts_with("invalid regex"));
    assert!(parse("glob a[").unwrap_err().starts_with("invalid glob"));
    assert_eq!(
        parse("rate -1"),
        Err("bad rate \"-1\": pages per second up to 10000 (0 or off: no cap)".into())
    );
    assert_eq!(
        parse("seed ftp://x/"),
        Err("bad seed URL \"ftp://x/\": only http and https are crawled".into())
    );
    assert_eq!(parse("accept"), Err("usage: :accept ID".into()));
    assert_eq!(
        parse("throttle"),
        Err("usage: :throttle HOST|* DURATION|off".into())
    );
    assert_eq!(
        parse("frobnicate"),
        Err("unknown command \":frobnicate\" (Tab completes command names)".into())
    );
}

#[test]
fn regex_size_is_limited() {
    let spec = RuleSpec {
        kind: PatternKind::Regex,
        pattern: "(a{1000}){1000}".into(),
        host: None,
    };
    assert!(validate_rule(&spec)
        .unwrap_err()
        .starts_with("invalid regex"));
}

#[test]
fn tab_completes_commands_and_hosts() {
    let hosts = [
        "shop.localhost:8080",
        "shop2.localhost:8080",
        "blog.localhost:8080",
    ];
    assert_eq!(complete("thr", &hosts), ("throttle ".to_string(), vec![]));
    let (line, many) = complete("re", &hosts);
    assert_eq!(line, "res");
    assert_eq!(many, ["resume", "reset"]);
    assert_eq!(
        complete("throttle bl", &hosts),
        ("throttle blog.localhost:8080 ".to_string(), vec![])
    );
    let (line, many) = complete("pause sh", &hosts);
    assert_eq!(line, "pause shop");
    assert_eq!(many.len(), 2);
    // No completion for arguments that are not hosts.
    assert_eq!(complete("rate 5", &hosts), ("rate 5".to_string(), vec![]));
}

#[test]
fn breaker_thresholds_per_host() {
    use crate::engine::control::BreakerThresholds;
    assert_eq!(
        parse("breaker shop.test 3 10s").unwrap(),
        CommandLine::Engine(Command::SetHostBreaker {
            host: "shop.test".into(),
            thresholds: Some(BreakerThresholds {
                consecutive_failures: 3,
                cooldown: Duration::from_secs(10),
            }),
        })
    );
    assert_eq!(
        parse("breaker shop.test off").unwrap(),
        CommandLine::Engine(Command::SetHostBreaker {
            host: "shop.test".into(),
            thresholds: None,
        })
    );
    assert!(parse("breaker shop.test 0")
        .unwrap_err()
        .contains("failure count"));
    assert!(parse("breaker").unwrap_err().starts_with("usage: :breaker"));
}

#[test]
fn preview_takes_a_regex_or_a_glob_and_an_optional_host() {
    assert_eq!(
        engine("preview /cal/\\d+"),
        Command::Preview(RuleSpec {
            kind: PatternKind::Regex,
            pattern: "/cal/\\d+".into(),
            host: None
        })
    );
    assert_eq!(
        engine("preview glob:*?sid=* Shop.test"),
        Command::Preview(RuleSpec {
            kind: PatternKind::Glob,
            pattern: "*?sid=*".into(),
            host: Some("shop.test".into())
        })
    );
    assert!(!engine("preview x").is_mutating(), "allowed read-only");
    let err = parse("preview cal(").unwrap_err();
    assert!(err.contains("invalid regex \"cal(\""), "{err}");
    assert_eq!(
        parse("preview").unwrap_err(),
        "usage: :preview REGEX|glob:PATTERN [HOST]"
    );
}
