use super::*;
use crate::engine::page_facts::{HtmlFacts, NoindexSource};
use crate::engine::store::{PageOutcome, PageRecord, SOFT_404_PROBE};
use crate::results::rows::RuleOrigins;

fn record(url: &str, outcome: PageOutcome) -> PageRecord {
    PageRecord::without_fetch(url, "h.example", 1, 0, outcome)
}

fn side(p: PageRecord) -> Side {
    Side::of(Row::of_page(p, &RuleOrigins::default())).expect("compared")
}

fn page(url: &str, title: &str) -> PageRecord {
    let mut p = record(url, PageOutcome::Fetched { status: 200 });
    p.title = Some(title.into());
    p.facts = Some(HtmlFacts {
        h1: Some("Heading".into()),
        ..HtmlFacts::default()
    });
    p
}

fn kinds(changes: &[Change]) -> Vec<(ChangeKind, Option<&str>, Option<&str>)> {
    changes
        .iter()
        .map(|c| (c.change, c.old.as_deref(), c.new.as_deref()))
        .collect()
}

const URL: &str = "http://h.example/a";

#[test]
fn an_unchanged_url_makes_no_change_whatever_its_time() {
    let old = page(URL, "A");
    let mut new = old.clone();
    new.fetched_at_unix_ms = 99;
    new.response_ms = Some(40);
    new.bytes = 12;
    assert_eq!(changes(Some(&side(old)), Some(&side(new))), []);
    // A recrawl's 304 holds the same content: no change either.
    let mut unchanged = page(URL, "A");
    unchanged.outcome = PageOutcome::NotModified { pass: 1 };
    assert_eq!(
        changes(Some(&side(page(URL, "A"))), Some(&side(unchanged))),
        []
    );
}

#[test]
fn a_url_in_one_crawl_is_added_or_removed_or_a_broken_link_new_or_fixed() {
    let ok = side(page(URL, "A"));
    let gone = side(record(URL, PageOutcome::Fetched { status: 404 }));
    assert_eq!(
        kinds(&changes(None, Some(&ok))),
        [(ChangeKind::Added, None, Some("200"))]
    );
    assert_eq!(
        kinds(&changes(Some(&ok), None)),
        [(ChangeKind::Removed, Some("200"), None)]
    );
    assert_eq!(
        kinds(&changes(None, Some(&gone))),
        [(ChangeKind::Broken, None, Some("404"))]
    );
    assert_eq!(
        kinds(&changes(Some(&gone), None)),
        [(ChangeKind::Fixed, Some("404"), None)]
    );
    assert_eq!(changes(None, None), []);
}

#[test]
fn a_page_that_turns_404_is_one_broken_change_not_five() {
    let ok = side(page(URL, "A"));
    let mut gone = side(record(URL, PageOutcome::Fetched { status: 404 }));
    gone.linked_from = Some("http://h.example/".into());
    let found = changes(Some(&ok), Some(&gone));
    assert_eq!(
        kinds(&found),
        [(ChangeKind::Broken, Some("200"), Some("404"))]
    );
    assert_eq!(found[0].linked_from.as_deref(), Some("http://h.example/"));
    assert_eq!(
        kinds(&changes(Some(&gone), Some(&ok))),
        [(ChangeKind::Fixed, Some("404"), Some("200"))]
    );
    // Broken both times with another status: a status change.
    let failed = side(record(
        URL,
        PageOutcome::Error {
            kind: "timeout".into(),
            message: "slow".into(),
        },
    ));
    assert_eq!(
        kinds(&changes(Some(&gone), Some(&failed))),
        [(ChangeKind::Status, Some("404"), Some("error: timeout"))]
    );
    // A block is a state too.
    let denied = side(record(URL, PageOutcome::RobotsDenied));
    assert_eq!(
        kinds(&changes(Some(&ok), Some(&denied))),
        [(ChangeKind::Status, Some("200"), Some("blocked: robots"))]
    );
}

#[test]
fn redirects_are_compared_by_target() {
    let to = |target: &str| {
        side(record(
            URL,
            PageOutcome::Redirect {
                status: 301,
                location: target.into(),
            },
        ))
    };
    let (b, c) = (to("http://h.example/b"), to("http://h.example/c"));
    assert_eq!(
        kinds(&changes(Some(&b), Some(&c))),
        [(
            ChangeKind::Redirect,
            Some("http://h.example/b"),
            Some("http://h.example/c")
        )]
    );
    assert_eq!(
        kinds(&changes(Some(&side(page(URL, "A"))), Some(&b))),
        [
            (ChangeKind::Status, Some("200"), Some("301")),
            (ChangeKind::Redirect, None, Some("http://h.example/b")),
        ]
    );
}

#[test]
fn page_facts_are_compared_between_2xx_pages_each_kind_once() {
    assert!(
        ChangeKind::ALL.windows(2).all(|w| w[0] < w[1]),
        "ALL in listing order"
    );
    let old = page(URL, "A");
    let mut new = page(URL, "B");
    new.canonical = Some("http://h.example/b".into());
    new.facts = Some(HtmlFacts {
        h1: Some("Other".into()),
        description: Some("About it".into()),
        ..HtmlFacts::default()
    });
    assert_eq!(
        kinds(&changes(Some(&side(old.clone())), Some(&side(new)))),
        [
            (ChangeKind::Title, Some("A"), Some("B")),
            (ChangeKind::Canonical, None, Some("http://h.example/b")),
            (
                ChangeKind::Indexability,
                Some("indexable"),
                Some("canonicalised")
            ),
            (ChangeKind::Description, None, Some("About it")),
            (ChangeKind::H1, Some("Heading"), Some("Other")),
        ]
    );
    let mut noindex = old.clone();
    noindex.noindex = Some(NoindexSource::Meta);
    assert_eq!(
        kinds(&changes(Some(&side(old)), Some(&side(noindex)))),
        [(
            ChangeKind::Indexability,
            Some("indexable"),
            Some("noindex (meta robots)")
        )]
    );
}

#[test]
fn soft_404_probes_are_not_compared() {
    let probe = record(
        "http://h.example/zq81-not-here",
        PageOutcome::NotCrawled {
            reason: format!("{SOFT_404_PROBE}: 404, a real not-found"),
        },
    );
    assert_eq!(Side::of(Row::of_page(probe, &RuleOrigins::default())), None);
}

#[test]
fn pairs_follow_url_order_and_keep_errors() {
    let s = |url: &str| Ok::<_, String>(side(page(url, "T")));
    let old = vec![s("http://h/a"), s("http://h/c"), s("http://h/d")];
    let new = vec![s("http://h/b"), s("http://h/c"), s("http://h/e")];
    let pairs: Vec<(Option<String>, Option<String>)> =
        Paired::new(old.into_iter(), new.into_iter())
            .map(|p| {
                let (o, n) = p.unwrap();
                (o.map(|o| o.url), n.map(|n| n.url))
            })
            .collect();
    let u = |s: &str| Some(format!("http://h/{s}"));
    assert_eq!(
        pairs,
        [
            (u("a"), None),
            (None, u("b")),
            (u("c"), u("c")),
            (u("d"), None),
            (None, u("e")),
        ]
    );
    let broken = vec![s("http://h/a"), Err("read failed".to_string())];
    let results: Vec<_> = Paired::new(broken.into_iter(), std::iter::empty()).collect();
    assert!(results[1].as_ref().is_err_and(|e| e == "read failed"));
}

#[test]
fn only_lists_parse_and_name_the_kinds() {
    assert_eq!(
        ChangeKind::parse_list("Title, broken").unwrap(),
        [ChangeKind::Title, ChangeKind::Broken]
    );
    let err = ChangeKind::parse_list("titles").unwrap_err();
    assert!(
        err.contains("added, removed, broken, fixed, status"),
        "{err}"
    );
}
