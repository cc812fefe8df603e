use super::html::Document;
use super::*;
use std::path::Path;

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
fn a_selector_the_parser_calls_unexpected_is_named_in_words() {
    let e = select(PAGE, "h1 >>> a").unwrap_err();
    assert_eq!(
        e.to_string(),
        "bad CSS selector `h1 >>> a`: dangling combinator"
    );
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
    assert!(text.lines.iter().map(String::len).sum::<usize>() <= MAX_TEXT + 4 * 101);
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

/// Archives `body` as the answer to `url` and records its page, as a crawl does.
fn archived_page(dir: &Path, url: &str, body: &[u8]) -> Store {
    let at = crate::engine::store::warc::WarcWriter::archive_html(dir, url, body);
    let store = Store::open(dir, 1 << 20).unwrap();
    let mut record = crate::engine::store::PageRecord::without_fetch(
        url,
        "h.localhost",
        0,
        1,
        PageOutcome::Fetched { status: 200 },
    );
    record.warc = Some(at);
    store.record_pages(&[record]).unwrap();
    store
}

#[test]
fn a_six_megabyte_page_opens_within_the_caps() {
    let dir = tempfile::tempdir().unwrap();
    let mut body = String::from("<html><head><title>Big</title></head><body><h1>Top</h1>");
    let mut i = 0;
    while body.len() < 6 * 1024 * 1024 {
        body.push_str(&format!("<p>paragraph {i}</p><a href=\"/p/{i}\">{i}</a>\n"));
        i += 1;
    }
    let url = "http://h.localhost/";
    let store = archived_page(dir.path(), url, body.as_bytes());
    let page = inspect(&store, dir.path(), url).unwrap().expect("a record");
    assert_eq!(page.status, Some(200));
    assert_eq!(page.title.as_deref(), Some("Big"));
    assert!(page.truncated);
    assert!(page.html.len() <= MAX_BODY);
    assert!(page.text.iter().map(String::len).sum::<usize>() <= MAX_TEXT + 101);
    assert!(page.outline.len() <= MAX_OUTLINE);
    assert_eq!(page.links.len(), MAX_LINKS);
    assert!(page.links_not_listed > 0);
    let selected = select(&page.html, "p").unwrap();
    assert_eq!(selected.len(), MAX_SELECTED);
}

#[test]
fn a_page_without_an_archived_copy_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), 1 << 20).unwrap();
    let record = crate::engine::store::PageRecord::without_fetch(
        "http://h.localhost/x",
        "h.localhost",
        1,
        1,
        PageOutcome::RobotsDenied,
    );
    store.record_pages(&[record]).unwrap();
    let page = inspect(&store, dir.path(), "http://h.localhost/x")
        .unwrap()
        .unwrap();
    assert!(page.archive_note.unwrap().contains("not fetched"));
    assert!(inspect(&store, dir.path(), "http://h.localhost/none")
        .unwrap()
        .is_none());
}

#[test]
fn parked_queued_and_unknown_links_get_their_fates() {
    use crate::engine::frontier::{encode_entry, FrontierEntry};
    use crate::engine::store::{keys, CrawlBatch};
    let dir = tempfile::tempdir().unwrap();
    let body = br#"<a href="/parked">p</a><a href="/queued">q</a><a href="/never">n</a>"#;
    let store = archived_page(dir.path(), "http://h.localhost/", body);
    let mut batch = CrawlBatch::default();
    let parked = FrontierEntry {
        url: "http://h.localhost/parked".into(),
        host: "h.localhost".into(),
        depth: 1,
        priority: 0,
        redirects: 0,
        kind: crate::engine::store::UrlKind::Page,
    };
    batch.enqueue(&keys::parked_key(7, 1), &encode_entry(&parked));
    batch.mark_seen("http://h.localhost/parked");
    batch.mark_seen("http://h.localhost/queued");
    store.apply(batch).unwrap();
    let page = inspect(&store, dir.path(), "http://h.localhost/")
        .unwrap()
        .unwrap();
    let fates: Vec<(&str, &LinkFate)> = page
        .links
        .iter()
        .map(|l| (l.url.as_str(), &l.fate))
        .collect();
    assert_eq!(
        fates[0],
        (
            "http://h.localhost/parked",
            &LinkFate::ParkedByAlert { alert_id: 7 }
        )
    );
    assert_eq!(fates[1], ("http://h.localhost/queued", &LinkFate::Queued));
    assert!(matches!(fates[2].1, LinkFate::NotFollowed { .. }));
    // A parked URL itself: not fetched, with what holds it.
    let parked = inspect(&store, dir.path(), "http://h.localhost/parked")
        .unwrap()
        .expect("found by the crawl");
    assert_eq!(parked.outcome, "parked by alert #7");
    assert!(parked.archive_note.unwrap().starts_with("not fetched"));
    assert!(inspect(&store, dir.path(), "http://h.localhost/never")
        .unwrap()
        .is_none());
}

#[test]
fn a_body_is_read_in_the_charset_its_content_type_names() {
    let headers = vec![(
        "Content-Type".to_string(),
        "text/html; charset=ISO-8859-1".to_string(),
    )];
    assert_eq!(decode_body(&headers, b"caf\xe9"), "caf\u{e9}");
    assert_eq!(decode_body(&[], b"caf\xc3\xa9"), "caf\u{e9}");
}

#[test]
fn a_damaged_archive_is_a_note_not_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let url = "http://h.localhost/";
    let store = archived_page(dir.path(), url, b"<title>T</title>");
    let mut record = store.page(url).unwrap().unwrap();
    let at = record.warc.as_mut().unwrap();
    at.offset += 3;
    store.record_pages(&[record]).unwrap();
    let page = inspect(&store, dir.path(), url).unwrap().unwrap();
    let note = page.archive_note.expect("a note");
    assert!(note.contains("cannot be read"), "{note}");
    assert_eq!(page.status, Some(200), "the record's fields remain");
}

#[test]
fn the_quarantine_groups_parked_urls_by_alert_with_their_found_on_page() {
    use crate::engine::frontier::{encode_entry, FrontierEntry};
    use crate::engine::store::{keys, CrawlBatch};
    let dir = tempfile::tempdir().unwrap();
    let store = archived_page(dir.path(), "http://h.localhost/", b"<a href=\"/t/1\">t</a>");
    let mut batch = CrawlBatch::default();
    let parked = |alert: u64, seq: u64, url: &str| {
        let entry = FrontierEntry {
            url: url.into(),
            host: "h.localhost".into(),
            depth: 1,
            priority: 0,
            redirects: 0,
            kind: crate::engine::store::UrlKind::Page,
        };
        (keys::parked_key(alert, seq), encode_entry(&entry))
    };
    let mut rows = vec![
        parked(4, 1, "http://h.localhost/t/1"),
        parked(4, 2, "http://h.localhost/t/2"),
    ];
    for seq in 0..(quarantine::MAX_URLS_PER_ALERT as u64 + 5) {
        rows.push(parked(9, seq, &format!("http://h.localhost/s/{seq}")));
    }
    for (key, value) in &rows {
        batch.enqueue(key, value);
    }
    store.apply(batch).unwrap();
    let links = [("http://h.localhost/t/1", true)];
    store
        .add_referrers("http://h.localhost/", links.into_iter())
        .unwrap();
    let links = [("http://h.localhost/t/2", true)];
    store
        .add_referrers("http://h.localhost/gone", links.into_iter())
        .unwrap();
    store.flush().unwrap();

    let read = quarantine::read(&store).unwrap();
    assert!(!read.cut);
    let ids: Vec<(u64, u64)> = read.alerts.iter().map(|a| (a.alert_id, a.count)).collect();
    assert_eq!(
        ids,
        [(4, 2), (9, quarantine::MAX_URLS_PER_ALERT as u64 + 5)]
    );
    let first = &read.alerts[0].urls;
    assert_eq!(first[0].url, "http://h.localhost/t/1");
    assert_eq!(first[0].referrer.as_deref(), Some("http://h.localhost/"));
    assert!(first[0].referrer_fetched);
    // Found on a page the crawl has no record of: known, but not fetched.
    assert_eq!(
        first[1].referrer.as_deref(),
        Some("http://h.localhost/gone")
    );
    assert!(!first[1].referrer_fetched);
    let second = &read.alerts[1].urls;
    assert_eq!(second.len(), quarantine::MAX_URLS_PER_ALERT);
    assert_eq!(second[0].referrer, None);

    // The listing's walk: every parked URL, alert by alert, unbounded.
    let all: Vec<quarantine::ParkedEntry> = quarantine::parked_entries(&store)
        .map(Result::unwrap)
        .collect();
    assert_eq!(all.len(), rows.len());
    assert_eq!(all[0].alert_id, 4);
    assert_eq!(all[0].found_on, ["http://h.localhost/"]);
    assert_eq!((all[1].depth, all[1].host.as_str()), (1, "h.localhost"));
    assert!(all[2..]
        .iter()
        .all(|p| p.alert_id == 9 && p.found_on.is_empty()));
}

#[test]
fn an_archived_soft_404_probe_shows_as_fetched_with_its_status_and_body() {
    let dir = tempfile::tempdir().unwrap();
    let url = "http://h.localhost/crawldeck-probe-0a1b.html";
    let store = archived_page(dir.path(), url, b"<title>Not here</title><p>Sorry</p>");
    let mut record = store.page(url).unwrap().unwrap();
    let reason = format!("{SOFT_404_PROBE}: 200, same content as the suspect pages: soft 404");
    record.outcome = PageOutcome::NotCrawled { reason };
    store.record_pages(&[record.clone()]).unwrap();
    let page = inspect(&store, dir.path(), url).unwrap().unwrap();
    assert_eq!(page.status, Some(200));
    assert!(
        page.outcome.starts_with("fetched as a soft-404 probe: 200"),
        "{}",
        page.outcome
    );
    assert_eq!(page.archive_note, None);
    assert!(page.html.contains("Sorry"), "{}", page.html);

    // Probed by an older crawldeck: no copy, but the status it answered.
    record.warc = None;
    store.record_pages(&[record]).unwrap();
    let page = inspect(&store, dir.path(), url).unwrap().unwrap();
    assert_eq!(page.status, Some(200));
    assert!(page.archive_note.unwrap().contains("of the probe"));
}

#[test]
fn a_link_with_its_parameters_in_another_order_has_the_fetched_ones_fate() {
    use crate::engine::store::{CrawlBatch, PageOutcome, PageRecord};
    let dir = tempfile::tempdir().unwrap();
    let body = br#"<a href="/s?b=2&amp;a=1">reordered</a>"#;
    let store = archived_page(dir.path(), "http://h.localhost/", body);
    let fetched = "http://h.localhost/s?a=1&b=2";
    let outcome = PageOutcome::Fetched { status: 200 };
    let record = PageRecord::without_fetch(fetched, "h.localhost", 1, 0, outcome);
    store.record_pages(&[record]).unwrap();
    let mut batch = CrawlBatch::default();
    batch.mark_seen(fetched);
    store.apply(batch).unwrap();
    let page = inspect(&store, dir.path(), "http://h.localhost/")
        .unwrap()
        .unwrap();
    assert_eq!(
        page.links[0].fate.label(),
        "followed: fetched (as http://h.localhost/s?a=1&b=2) 200"
    );
}
