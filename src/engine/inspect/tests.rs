use super::html::Document;
use super::*;

const PAGE: &str = r#"<html><head><title> Shop  home </title><style>p{}</style></head>
<body><h1>Welcome</h1><p>First line</p><script>var x = "hidden";</script>
<h2>Offers <b>today</b></h2><div>Second<p>Third</p></div>
<a href="/a">a</a><a href="b?x=1#frag">b</a><a href="/a">again</a>
<a href="mailto:x@y">mail</a><a rel="nofollow" href="http://other.example/">o</a></body></html>"#;

#[test]
fn title_outline_and_text_skip_hidden_elements() {
    let doc = Document::parse(PAGE, "http://h.localhost/dir/");
    assert_eq!(doc.title().as_deref(), Some("Shop home"));
    let text = doc.text();
    let outline: Vec<(u8, &str)> = text
        .outline
        .iter()
        .map(|e| (e.level, e.text.as_str()))
        .collect();
    assert_eq!(
        &outline[..5],
        &[
            (1, "Welcome"),
            (0, "First line"),
            (2, "Offers today"),
            (0, "Second"),
            (0, "Third")
        ]
    );
    assert!(!text.lines.iter().any(|l| l.contains("hidden")));
}

#[test]
fn links_are_resolved_normalized_and_listed_once() {
    let doc = Document::parse(PAGE, "http://h.localhost/dir/");
    let links: Vec<(String, bool)> = doc
        .links()
        .into_iter()
        .map(|l| (l.url, l.nofollow))
        .collect();
    assert_eq!(
        links,
        vec![
            ("http://h.localhost/a".to_string(), false),
            ("http://h.localhost/dir/b?x=1".to_string(), false),
            ("http://other.example/".to_string(), true),
        ]
    );
}

#[test]
fn select_lists_matches_says_none_and_reports_bad_selectors() {
    let found = select(PAGE, "h2").unwrap();
    assert_eq!(found, vec!["<h2> Offers today".to_string()]);
    assert_eq!(select(PAGE, "table.none").unwrap(), Vec::<String>::new());
    let e = select(PAGE, "h2[").unwrap_err();
    assert!(e.to_string().starts_with("bad CSS selector `h2[`"), "{e}");
}

#[test]
fn a_huge_flat_or_deep_page_stays_within_the_caps() {
    let mut body = String::from("<html><body>");
    for i in 0..20_000 {
        body.push_str(&format!("<p>line {i} {}</p>", "x".repeat(600)));
    }
    body.push_str(&"<div>".repeat(5_000));
    let doc = Document::parse(&body, "http://h.localhost/");
    let text = doc.text();
    assert!(text.lines.len() <= MAX_TEXT_LINES);
    assert!(text.lines.iter().map(String::len).sum::<usize>() <= MAX_TEXT + 4 * MAX_LINE_CHARS);
    assert!(text
        .lines
        .iter()
        .all(|l| l.chars().count() <= MAX_LINE_CHARS + 1));
    assert!(text.outline.len() <= MAX_OUTLINE);
}

#[test]
fn the_diff_pairs_equal_lines_and_shows_the_differing_ones() {
    let lines = |s: &str| s.split(',').map(str::to_string).collect::<Vec<_>>();
    let rows = side_by_side(&lines("head,item 1,foot"), &lines("head,item 2,extra,foot"));
    let shown: Vec<(DiffSide, Option<&str>, Option<&str>)> = rows
        .iter()
        .map(|r| (r.side, r.left.as_deref(), r.right.as_deref()))
        .collect();
    assert_eq!(
        shown,
        vec![
            (DiffSide::Same, Some("head"), Some("head")),
            (DiffSide::Changed, Some("item 1"), Some("item 2")),
            (DiffSide::Changed, None, Some("extra")),
            (DiffSide::Same, Some("foot"), Some("foot")),
        ]
    );
}
