//! The page facts extraction finds in the same pass as the links.

use super::*;

fn run(html: &str) -> Extracted {
    let opts = ExtractOptions {
        product_token: "crawldeck".into(),
        max_links: 100,
        max_link_bytes: 1 << 20,
        max_url_len: 200,
        max_resources: 100,
    };
    let page = Url::parse("http://docs.localhost/guide/page.html").unwrap();
    extract(html.as_bytes(), &page, Some("text/html"), &opts)
}

#[test]
fn description_first_h1_and_the_count_of_h1s() {
    let got = run(
        r#"<head><meta name="Description" content=" A  guide&amp;more
        "><meta name="description" content="second"></head>
        <body><h1 class="t">Install <em>it</em>&nbsp;now</h1><p>x</p><H1>Again</H1></body>"#,
    );
    assert_eq!(got.facts.description.as_deref(), Some("A guide&more"));
    assert_eq!(got.facts.h1.as_deref(), Some("Install it now"));
    assert_eq!(got.facts.h1_count, 2);
}

#[test]
fn a_page_without_them_has_none_and_an_empty_one_is_missing() {
    let got = run(r#"<meta name="description" content="  "><h1> </h1><p>one two</p>"#);
    assert_eq!(got.facts.description, None);
    assert_eq!(got.facts.h1, None, "an empty heading is no heading text");
    assert_eq!(got.facts.h1_count, 1);
    let none = run("<p>text</p>");
    assert_eq!((none.facts.h1_count, none.facts.h1.as_ref()), (0, None));
}

#[test]
fn an_h1_never_closed_is_bounded() {
    let html = format!("<h1>{}", "word ".repeat(10_000));
    let got = run(&html);
    let h1 = got.facts.h1.unwrap();
    assert!(h1.chars().count() <= crate::engine::page_facts::MAX_H1_CHARS);
    assert!(h1.starts_with("word word"));
}

#[test]
fn words_count_visible_text_not_scripts_styles_or_titles() {
    let got = run("<title>not counted here</title><style>p { x: y }</style>\
         <script>var a = 1;</script><p>One two</p><p>three <b>fo</b>ur</p>");
    // `fo` and `ur` are cut by markup: counted as two words, as a
    // markup-blind counter would.
    assert_eq!(got.facts.words, 5);
}

#[test]
fn hreflang_alternates_resolved_bounded_and_still_followed() {
    let mut html = String::from(
        r#"<link rel="alternate" hreflang="de" href="../de/page.html">
        <link rel="alternate" hreflang="x-default" href="/">
        <link rel="alternate" href="/feed.xml">"#,
    );
    for i in 0..40 {
        html.push_str(&format!(
            r#"<link rel="alternate" hreflang="l{i}" href="/l{i}">"#
        ));
    }
    let got = run(&html);
    let hreflang = &got.facts.hreflang;
    assert_eq!(hreflang.len(), crate::engine::page_facts::MAX_HREFLANG);
    assert_eq!(hreflang[0].lang, "de");
    assert_eq!(hreflang[0].url, "http://docs.localhost/de/page.html");
    assert_eq!(hreflang[1].url, "http://docs.localhost/");
    assert!(got
        .links
        .iter()
        .any(|l| l.url == "http://docs.localhost/de/page.html"));
}

#[test]
fn a_meta_refresh_names_its_target() {
    let target = |content: &str| {
        let html = format!(r#"<meta http-equiv="Refresh" content="{content}">"#);
        run(&html).refresh.map(|u| u.to_string())
    };
    let next = Some("http://docs.localhost/guide/next.html".to_string());
    assert_eq!(target("0; url=next.html"), next);
    assert_eq!(target("0;URL='next.html'"), next);
    assert_eq!(target("5, url = 'next.html' "), next);
    assert_eq!(target("3.5 next.html"), next);
    assert_eq!(target("30"), None, "a refresh of the page itself");
    assert_eq!(target("soon; url=next.html"), None, "no delay, no refresh");
    assert_eq!(target("0; url="), None);
}

#[test]
fn fragment_links_keep_their_page_and_fragment_once() {
    let got = run(
        r##"<a href="other.html#install">1</a><a href="other.html#install">again</a>
        <a href="#local">2</a><a href="#">top</a><a href="#top">top</a>
        <a href="/x#%C3%A9t%C3%A9">3</a><a href="plain.html">4</a>"##,
    );
    let pairs: Vec<(String, String)> = got
        .fragments
        .iter()
        .map(|(page, f)| (page.to_string(), f.clone()))
        .collect();
    let pair = |p: &str, f: &str| (p.to_string(), f.to_string());
    assert_eq!(
        pairs,
        [
            pair("http://docs.localhost/guide/other.html", "install"),
            pair("http://docs.localhost/guide/page.html", "local"),
            pair("http://docs.localhost/x", "%C3%A9t%C3%A9"),
        ]
    );
}

#[test]
fn a_page_offers_its_ids_and_anchor_names_to_fragments() {
    let ids = element_ids(
        r#"<h2 id="install">I</h2><a name="legacy"></a><p id='été'>x</p><div name="not-an-anchor">"#
            .as_bytes(),
        Some("text/html"),
    );
    assert!(fragment_found("install", &ids));
    assert!(fragment_found("legacy", &ids));
    assert!(
        fragment_found("%C3%A9t%C3%A9", &ids),
        "percent-decoded as a browser does"
    );
    assert!(!fragment_found("not-an-anchor", &ids));
    assert!(!fragment_found("Install", &ids), "ids are case-sensitive");
}
