use std::fmt::Write as _;

use super::*;

/// Extraction options for tests: small caps, 100 resources a page.
pub(crate) fn opts() -> ExtractOptions {
    ExtractOptions {
        product_token: "crawldeck".into(),
        max_links: 100,
        max_link_bytes: 1 << 20,
        max_url_len: 200,
        max_resources: 100,
    }
}

fn run(html: &str) -> Extracted {
    run_with(html, &opts())
}

fn run_with(html: &str, opts: &ExtractOptions) -> Extracted {
    let page = Url::parse("http://shop.localhost:40123/dir/page.html").unwrap();
    extract(html.as_bytes(), &page, Some("text/html"), opts)
}

fn urls(extracted: &Extracted) -> Vec<String> {
    extracted.links.iter().map(|l| l.url.to_string()).collect()
}

#[test]
fn every_link_source_in_document_order() {
    let got = run(
        r#"<html><head><link rel="alternate" href="/feed"><link rel="stylesheet" href="/s.css"></head>
        <body><a href="a1">x</a><map><area href="/area" alt=""></map>
        <iframe src="/frame-i"></iframe><frameset><frame src="/frame-f"></frameset>
        <a name="anchor-without-href">no</a><img src="/img.png"></body></html>"#,
    );
    assert_eq!(
        urls(&got),
        [
            "http://shop.localhost:40123/feed",
            "http://shop.localhost:40123/dir/a1",
            "http://shop.localhost:40123/area",
            "http://shop.localhost:40123/frame-i",
            "http://shop.localhost:40123/frame-f",
        ]
    );
    assert_eq!((got.links_cut, got.urls_too_long), (0, 0));
}

#[test]
fn only_the_first_base_href_counts() {
    let got = run(
        r#"<head><base href="http://cdn.localhost/root/"><base href="http://evil.localhost/"></head>
        <a href="x">1</a><a href="/y">2</a>"#,
    );
    assert_eq!(
        urls(&got),
        ["http://cdn.localhost/root/x", "http://cdn.localhost/y"]
    );
}

#[test]
fn relative_base_resolves_against_the_page() {
    let got = run(r#"<base href="../other/"><a href="z">1</a>"#);
    assert_eq!(urls(&got), ["http://shop.localhost:40123/other/z"]);
}

#[test]
fn entities_in_hrefs_are_decoded_before_joining() {
    let got = run(
        r#"<a href="/s?a=1&amp;b=2">1</a><a href="/s?a=1&#38;c=3">2</a>
        <a href="/s?a=1&#x26;d=4">3</a><a href="/s?a=1&copy=5">4</a>"#,
    );
    assert_eq!(
        urls(&got),
        [
            "http://shop.localhost:40123/s?a=1&b=2",
            "http://shop.localhost:40123/s?a=1&c=3",
            "http://shop.localhost:40123/s?a=1&d=4",
            "http://shop.localhost:40123/s?a=1&copy=5",
        ]
    );
}

#[test]
fn duplicates_fragments_and_non_http_links_are_skipped() {
    let got = run(
        r##"<a href="/p">1</a><a href="/p#x">2</a><a href="http://SHOP.localhost:40123/./p">3</a>
        <a href="javascript:void(0)">j</a><a href="mailto:a@b">m</a><a href="tel:1">t</a>
        <a href="data:text/html,x">d</a><a href="#top">t</a><a href="">e</a>"##,
    );
    assert_eq!(urls(&got), ["http://shop.localhost:40123/p"]);
    assert_eq!(got.links_cut, 0);
}

#[test]
fn rel_nofollow_among_several_tokens() {
    let got = run(
        r#"<a href="/a" rel="noopener NoFollow">1</a><a href="/b" rel="noopener">2</a>
        <a href="/c" rel="nofollow">3</a><a href="/c">3 again</a>"#,
    );
    let flags: Vec<bool> = got.links.iter().map(|l| l.nofollow).collect();
    // /c is followable because one occurrence does not say nofollow.
    assert_eq!(flags, [true, false, false]);
}

#[test]
fn misnested_anchors_give_each_href_once() {
    let got = run(
        r#"<p><a href="/one"><b>bold <a href="/two">inner</b> tail</a></a></p><a href="/one">again</a>"#,
    );
    assert_eq!(
        urls(&got),
        [
            "http://shop.localhost:40123/one",
            "http://shop.localhost:40123/two"
        ]
    );
}

#[test]
fn meta_robots_variants() {
    let d = |html: &str| run(html).directives;
    let none = RobotsDirectives::default();
    assert_eq!(d(r#"<meta name="robots" content="index, follow">"#), none);
    assert_eq!(
        d(r#"<meta name="ROBOTS" content="NOINDEX, nofollow">"#),
        RobotsDirectives {
            noindex: true,
            nofollow: true,
            noarchive: false
        }
    );
    assert_eq!(
        d(r#"<meta name="robots" content="none">"#),
        RobotsDirectives {
            noindex: true,
            nofollow: true,
            noarchive: false
        }
    );
    assert_eq!(
        d(r#"<meta name="CrawlDeck" content="noarchive">"#),
        RobotsDirectives {
            noarchive: true,
            ..none
        }
    );
    assert_eq!(d(r#"<meta name="googlebot" content="noindex">"#), none);
    assert_eq!(
        d(r#"<meta name="robots" content="nofollow"><meta name="crawldeck" content="noindex">"#),
        RobotsDirectives {
            noindex: true,
            nofollow: true,
            noarchive: false
        }
    );
    assert_eq!(d(r#"<meta content="noindex">"#), none);
}

#[test]
fn directive_values_with_agent_prefixes() {
    let p = |v: &str| RobotsDirectives::parse(v, "crawldeck");
    let none = RobotsDirectives::default();
    assert_eq!(p("all"), none);
    assert_eq!(
        p("crawldeck: nofollow"),
        RobotsDirectives {
            nofollow: true,
            ..none
        }
    );
    assert_eq!(p("otherbot: noindex"), none);
    assert_eq!(p("otherbot: noindex, nofollow"), none);
    assert_eq!(
        p("otherbot: noindex, crawldeck: noarchive, nofollow"),
        RobotsDirectives {
            nofollow: true,
            noarchive: true,
            ..none
        }
    );
    assert_eq!(
        p("max-snippet: 20, noindex"),
        RobotsDirectives {
            noindex: true,
            ..none
        }
    );
    assert_eq!(p("unavailable_after: 2026-01-01, none"), p("none"));
    assert_eq!(p(""), none);
    let a = RobotsDirectives {
        noindex: true,
        ..none
    };
    let b = RobotsDirectives {
        noarchive: true,
        ..none
    };
    assert_eq!(
        a.merge(b),
        RobotsDirectives {
            noindex: true,
            nofollow: false,
            noarchive: true
        }
    );
}

#[test]
fn meta_robots_for_a_custom_product_token() {
    let acme = ExtractOptions {
        product_token: "acmebot".into(),
        ..opts()
    };
    let d = |html: &str| run_with(html, &acme).directives;
    let none = RobotsDirectives::default();
    let nofollow = RobotsDirectives {
        nofollow: true,
        ..none
    };
    assert_eq!(d(r#"<meta name="acmebot" content="nofollow">"#), nofollow);
    assert_eq!(d(r#"<meta name="AcmeBot" content="NoFollow">"#), nofollow);
    assert_eq!(d(r#"<meta name="robots" content="nofollow">"#), nofollow);
    assert_eq!(d(r#"<meta name="googlebot" content="nofollow">"#), none);
    assert_eq!(d(r#"<meta name="crawldeck" content="nofollow">"#), none);
    assert_eq!(
        d(r#"<meta name="robots" content="googlebot: nofollow">"#),
        none
    );
    assert_eq!(
        d(r#"<meta name="robots" content="ACMEBOT: nofollow">"#),
        nofollow
    );
}

#[test]
fn x_robots_tag_lines_for_us_for_others_and_for_everyone() {
    let h = |lines: &[&str]| RobotsDirectives::from_headers(lines, "acmebot");
    let none = RobotsDirectives::default();
    let both = RobotsDirectives {
        noindex: true,
        nofollow: true,
        ..none
    };
    assert_eq!(h(&["acmebot: noindex, nofollow"]), both);
    assert_eq!(h(&["AcmeBot: noindex, nofollow"]), both);
    assert_eq!(h(&["noindex, nofollow"]), both);
    assert_eq!(h(&["googlebot: noindex, nofollow"]), none);
    assert_eq!(h(&["crawldeck: noindex, nofollow"]), none);
    assert_eq!(h(&[]), none);
    // Each line stands alone: another bot's prefix does not swallow the next line.
    assert_eq!(
        h(&["googlebot: noarchive", "noindex", "acmebot: nofollow"]),
        both
    );
    assert_eq!(
        h(&["googlebot: noindex", "otherbot: nofollow"]),
        none,
        "only other bots"
    );
    // A date's colon is no agent prefix.
    assert_eq!(
        h(&["unavailable_after: Friday, 25-Jun-2010 15:00:00 PST, noindex, nofollow"]),
        both
    );
}

#[test]
fn title_is_decoded_collapsed_and_capped() {
    let got = run("<title>\n  Caf&eacute;   &amp;\tbar </title><title>second</title>");
    assert_eq!(got.title.as_deref(), Some("Café & bar"));
    let long = format!("<title>{}</title>", "é".repeat(2000));
    let title = run(&long).title.unwrap();
    assert_eq!(title.chars().count(), MAX_TITLE_CHARS);
    assert_eq!(run("<p>no title</p>").title, None);
    assert_eq!(run("<title>   </title>").title, None);
}

#[test]
fn canonical_is_resolved_and_first_wins() {
    let got =
        run(r#"<link rel="canonical" href="/c?a=1&amp;b=2"><link rel="canonical" href="/other">"#);
    assert_eq!(
        got.canonical.unwrap().as_str(),
        "http://shop.localhost:40123/c?a=1&b=2"
    );
}

#[test]
fn link_cap_and_url_length_cap_count_apart() {
    let mut html = String::new();
    for i in 0..10 {
        let _ = write!(html, "<a href=\"/p{i}\">{i}</a>");
    }
    let _ = write!(html, "<a href=\"/{}\">long</a>", "x".repeat(300));
    let small = ExtractOptions {
        max_links: 4,
        ..opts()
    };
    let got = run_with(&html, &small);
    assert_eq!(got.links.len(), 4);
    // Past the cap nothing is resolved: the long one counts as cut.
    assert_eq!((got.links_cut, got.urls_too_long), (7, 0));
    let got = run(&html);
    assert_eq!(got.links.len(), 10);
    assert_eq!((got.links_cut, got.urls_too_long), (0, 1));
}

/// The defaults' promise: every link of a dense page as big as the default
/// body cap, the densest markup included.
#[test]
fn the_defaults_take_every_link_of_a_dense_five_mib_page() {
    use crate::engine::config::{
        FetchConfig, DEFAULT_MAX_LINKS_PER_PAGE, DEFAULT_MAX_LINK_BYTES_PER_PAGE,
    };
    let max_body = usize::try_from(FetchConfig::default().max_body).unwrap();
    let mut html = String::with_capacity(max_body);
    let mut n = 0;
    // `<a href=k3f>`: ~13 bytes a link, each URL distinct.
    while html.len() + 16 < max_body {
        html.push_str("<a href=");
        let mut k: usize = n;
        loop {
            html.push(char::from_digit((k % 36) as u32, 36).unwrap());
            k /= 36;
            if k == 0 {
                break;
            }
        }
        html.push('>');
        n += 1;
    }
    let defaults = ExtractOptions {
        max_links: DEFAULT_MAX_LINKS_PER_PAGE,
        max_link_bytes: DEFAULT_MAX_LINK_BYTES_PER_PAGE,
        max_url_len: 2048,
        ..opts()
    };
    let got = run_with(&html, &defaults);
    assert!(n > 350_000, "{n} links in {} bytes", html.len());
    assert_eq!(got.links.len(), n);
    assert_eq!(got.links_cut, 0);
    // Compact: their text and 24 bytes each (an end, a fingerprint, a
    // shape), no growth slack (a `Vec` of `Url`s took ~100 bytes each
    // besides the text, ~65 MB here).
    let overhead = got.links.heap_bytes() - got.links.text_bytes();
    assert!(
        overhead <= 24 * n,
        "{overhead} bytes besides the URLs' text for {n} links"
    );
}

#[test]
fn the_link_bytes_budget_cuts_a_long_base_with_short_links() {
    // Each 4-byte href resolves to a ~1 KB URL under this base.
    let base = format!("http://h.localhost/{}/", "d".repeat(1000));
    let mut html = format!("<base href=\"{base}\">");
    for i in 0..100 {
        let _ = write!(html, "<a href=x{i:02}>");
    }
    let budget = ExtractOptions {
        max_link_bytes: 10 * (base.len() + 3),
        max_url_len: 2048,
        ..opts()
    };
    let got = run_with(&html, &budget);
    assert_eq!(got.links.len(), 10);
    assert_eq!(got.links_cut, 90);
    let kept: usize = got.links.iter().map(|l| l.url.len()).sum();
    assert!(kept <= budget.max_link_bytes);
    assert!(got.links.get(9).unwrap().url.ends_with("/x09"));
}

#[test]
fn garbage_and_hostile_input_never_panics() {
    let page = Url::parse("http://h.localhost/").unwrap();
    let mut seed: u64 = 0x2545_F491_4F6C_DD1D;
    let mut noise = Vec::with_capacity(200_000);
    for _ in 0..200_000 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        noise.push(b"<>&\"'=/ a\xff\x00#;"[(seed % 13) as usize]);
    }
    let _ = extract(&noise, &page, Some("text/html"), &opts());
    let _ = extract(b"\xff\xfe\x00<a href=\"\xc3\x28\">", &page, None, &opts());
    let _ = extract(
        b"<a href=\"http://[::1\">x</a><a href=\"http://%zz/\">",
        &page,
        None,
        &opts(),
    );
    // A gigantic unterminated tag hits the parser memory limit: gathered links survive.
    let mut huge = b"<a href=\"/kept\">k</a><a href=\"".to_vec();
    huge.extend(std::iter::repeat_n(b'x', 6 * 1024 * 1024));
    let got = extract(&huge, &page, None, &opts());
    assert_eq!(got.links.len(), 1);
    assert_eq!(got.links.get(0).unwrap().url, "http://h.localhost/kept");
}

#[test]
fn non_html_content_is_not_parsed() {
    let page = Url::parse("http://h.localhost/f").unwrap();
    let got = extract(b"<a href=\"/x\">", &page, Some("application/pdf"), &opts());
    assert!(got.links.is_empty());
    let got = extract(
        b"<a href=\"/x\">",
        &page,
        Some("application/xhtml+xml"),
        &opts(),
    );
    assert_eq!(got.links.len(), 1);
}

#[test]
fn header_and_meta_charsets_are_honoured() {
    let page = Url::parse("http://h.localhost/").unwrap();
    // "Caf\xe9" is windows-1252 for "Café".
    let body = b"<title>Caf\xe9</title><a href=\"/caf\xe9\">x</a>";
    let got = extract(
        body,
        &page,
        Some("text/html; charset=\"ISO-8859-1\""),
        &opts(),
    );
    assert_eq!(got.title.as_deref(), Some("Café"));
    assert_eq!(
        got.links.get(0).unwrap().url,
        "http://h.localhost/caf%C3%A9"
    );
    let with_meta = b"<meta charset=\"windows-1252\"><title>Caf\xe9</title>";
    let got = extract(with_meta, &page, Some("text/html"), &opts());
    assert_eq!(got.title.as_deref(), Some("Café"));
}

#[test]
fn simhash_covers_visible_text_only() {
    let a = run("<p>the quick brown fox jumps over the lazy dog again and again</p>");
    let b = run(
        "<script>var x = 'different words entirely';</script><style>p{}</style>\
                 <p>The quick brown fox jumps over the lazy dog again and again</p>",
    );
    let alone = crate::engine::near_dup::fingerprint_alone;
    assert_eq!(alone(&a.features), alone(&b.features));
    let c = run("<p>completely unrelated sentence about sled databases and frontier queues</p>");
    assert!(crate::engine::dedup::hamming(alone(&a.features), alone(&c.features)) > 8);
}

#[test]
fn measurement_runs_on_the_sample_page() {
    let page = bench::sample_page();
    assert!(
        (20_000..26_000).contains(&page.len()),
        "sample page is {} bytes",
        page.len()
    );
    let m = measure_extraction(3);
    assert_eq!(m.pages, 3);
    assert!(
        (45..=55).contains(&m.links_per_page),
        "{} links",
        m.links_per_page
    );
    assert_eq!(m.page_bytes, page.len());
}

#[test]
fn markup_that_is_not_a_tag_yields_no_link() {
    let got = run(
        r#"<!-- <a href="/in-comment">x</a> --><script>document.write('<a href="/in-script">')</script>
        <title><a href="/in-title"></title><textarea><a href="/in-textarea"></textarea>
        <style>a[href="/in-style"]{}</style><noscript><a href="/in-noscript">kept</a></noscript>
        <A HREF=/upper>x</A><a
        href = '/spaced' >y</a><a title="a > b" href="/after-quoted-gt">z</a>"#,
    );
    assert_eq!(
        urls(&got),
        [
            "http://shop.localhost:40123/in-noscript",
            "http://shop.localhost:40123/upper",
            "http://shop.localhost:40123/spaced",
            "http://shop.localhost:40123/after-quoted-gt",
        ]
    );
    assert_eq!(got.title.as_deref(), Some("<a href=\"/in-title\">"));
}

#[test]
fn link_elements_followed_only_for_document_relations() {
    // A mail address without `mailto:` behind rev="made" resolved to a 404 on every page.
    let got = run(r#"<head><link rev="made" href="user@lists.example.org">
        <link rel="author" href="/me"><link rel="search" href="/os.xml">
        <link rel="Next" href="/p2"><link rel="prev" href="/p0">
        <link rel="canonical" href="/canon"><link rel="alternate nofollow" href="/feed">
        <link href="/no-rel"></head>"#);
    assert_eq!(
        urls(&got),
        [
            "http://shop.localhost:40123/p2",
            "http://shop.localhost:40123/p0",
            "http://shop.localhost:40123/canon",
            "http://shop.localhost:40123/feed",
        ]
    );
    assert!(got.links.get(3).unwrap().nofollow);
}
