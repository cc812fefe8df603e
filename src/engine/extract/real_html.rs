//! The content measure (`near_dup`) on real documentation pages (tests/fixtures/real-docs: Python,
//! PostgreSQL, git and Rust std pages from Debian's packages, whole and
//! unedited), checked against the exact Jaccard of their shingles.

use std::collections::HashSet;
use std::path::Path;

use url::Url;

use super::{extract, ExtractOptions};
use crate::engine::dedup::hamming;
use crate::engine::near_dup::{Templates, TextFeatures};

const NEAR: u32 = 6;

fn read(site: &str, path: &str) -> String {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/real-docs")
        .join(site)
        .join(path);
    std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

fn features(site: &str, path: &str, html: &str) -> TextFeatures {
    let opts = ExtractOptions {
        product_token: "crawldeck".into(),
        max_links: 100_000,
        max_link_bytes: 1 << 25,
        max_url_len: 2048,
        max_resources: 0,
    };
    let url = Url::parse(&format!("http://{site}.localhost/{path}")).unwrap();
    extract(html.as_bytes(), &url, Some("text/html"), &opts).features
}

fn jaccard(a: &HashSet<u64>, b: &HashSet<u64>) -> f64 {
    a.intersection(b).count() as f64 / a.union(b).count().max(1) as f64
}

/// A site's pages fingerprinted as a crawl would: each page teaches the
/// template, then every page is measured against what the site taught.
fn site_prints(site: &str, pages: &[&str]) -> Vec<(String, TextFeatures, u64)> {
    let templates = Templates::default();
    let all: Vec<(String, TextFeatures)> = pages
        .iter()
        .map(|p| (p.to_string(), features(site, p, &read(site, p))))
        .collect();
    for (_, f) in &all {
        templates.fingerprint_page(site, f);
    }
    all.into_iter()
        .map(|(p, f)| {
            let print = templates.fingerprint_probe(site, &f);
            (p, f, print)
        })
        .collect()
}

fn assert_all_apart(site: &str, pages: &[&str]) {
    let prints = site_prints(site, pages);
    for (i, (a, fa, pa)) in prints.iter().enumerate() {
        for (b, fb, pb) in &prints[i + 1..] {
            let bits = hamming(*pa, *pb);
            let j = jaccard(&fa.main_shingles(), &fb.main_shingles());
            // Apart even at twice the default sensitivity.
            assert!(
                bits > 2 * NEAR,
                "{site}: {a} and {b} are {bits} bits apart (Jaccard of their main shingles {j:.2})"
            );
        }
    }
}

#[test]
fn unrelated_pages_of_one_site_are_not_near_duplicates() {
    assert_all_apart(
        "python",
        &[
            "library/pwd.html",
            "library/grp.html",
            "library/colorsys.html",
            "library/keyword.html",
        ],
    );
    assert_all_apart(
        "postgresql",
        &[
            "sql-dropindex.html",
            "sql-droptable.html",
            "functions-uuid.html",
            "functions-enum.html",
            "functions-sequence.html",
            "legalnotice.html",
        ],
    );
    assert_all_apart(
        "git",
        &[
            "git-add.html",
            "git-archive.html",
            "git-mv.html",
            "git-rm.html",
        ],
    );
}

/// Rust's type pages share long trait sections (72 % of the word 3-grams of
/// two unrelated error types): once the host's template is learnt, what is
/// left is each type's own text.
#[test]
fn api_reference_types_sharing_their_trait_sections_are_not_near_duplicates() {
    let rust = [
        "std/thread/struct.AccessError.html",
        "std/char/struct.ParseCharError.html",
        "std/io/struct.Sink.html",
        "std/io/struct.Empty.html",
        "std/marker/struct.PhantomPinned.html",
    ];
    let a = features("rust", rust[0], &read("rust", rust[0]));
    let b = features("rust", rust[1], &read("rust", rust[1]));
    assert!(jaccard(&a.main_shingles(), &b.main_shingles()) > 0.3);
    assert_all_apart("rust", &rust);
}

/// A page and its copy with another date, footer or session ids in its
/// links are near duplicates, at every site.
#[test]
fn a_page_and_its_altered_copy_are_near_duplicates() {
    let cases = [
        (
            "python",
            "library/pwd.html",
            "October 07, 2026",
            "March 3, 2027",
        ),
        ("git", "git-add.html", "Last updated", "Last changed"),
        (
            "postgresql",
            "functions-enum.html",
            "PostgreSQL 15",
            "PostgreSQL 15.9",
        ),
        (
            "rust",
            "std/io/struct.Sink.html",
            "href=\"",
            "href=\"?sid=9f3a1c2e04b7d6a8&amp;x=",
        ),
    ];
    for (site, page, from, to) in cases {
        let html = read(site, page);
        assert!(html.contains(from), "{site}/{page} has no {from:?}");
        let copy = html.replace(from, to);
        let templates = Templates::default();
        let original = templates.fingerprint_page(site, &features(site, page, &html));
        let altered = templates.fingerprint_page(site, &features(site, page, &copy));
        let bits = hamming(original.simhash, altered.simhash);
        assert!(bits <= NEAR, "{site}/{page} and its copy: {bits} bits");
        // The listing's check too: both hashes together within twice the bits.
        let both = bits + hamming(original.check, altered.check);
        assert!(
            both <= 2 * NEAR,
            "{site}/{page} and its copy: {both} bits of 128"
        );
        let whole = hamming(original.whole[0], altered.whole[0])
            + hamming(original.whole[1], altered.whole[1]);
        assert!(
            whole <= 2 * NEAR,
            "{site}/{page} and its copy as wholes: {whole} bits of 128"
        );
    }
}

/// One Rust intrinsic and its rounding variant, on two architectures'
/// pages: the rounding paragraph and each architecture's "Available on"
/// note are on hundreds of pages of the real site (here on six each, enough
/// to be template), so what is left of each page is the same description.
/// Near by distinctive text, they are a third apart as pages, and the
/// whole text's hashes keep them out of a near-duplicate group.
#[test]
fn a_function_and_its_rounding_variant_are_apart_as_wholes() {
    let site = "rust";
    let ops = ["add", "mask_add", "mul", "mask_mul", "div"];
    let plain = |op: &str| format!("core/arch/x86/fn._mm512_{op}_ps.html");
    let round = |op: &str| format!("core/arch/x86_64/fn._mm512_{op}_round_ps.html");
    let templates = Templates::default();
    let print =
        |page: &str| templates.fingerprint_page(site, &features(site, page, &read(site, page)));
    for op in ops {
        print(&plain(op));
        print(&round(op));
    }
    let (a, b) = (print(&plain("mask_sub")), print(&round("mask_sub")));
    let distinct = hamming(a.simhash, b.simhash) + hamming(a.check, b.check);
    assert!(
        distinct <= 2 * NEAR,
        "the same description: {distinct} bits of 128"
    );
    let whole = hamming(a.whole[0], b.whole[0]) + hamming(a.whole[1], b.whole[1]);
    assert!(
        whole > 2 * NEAR,
        "a third apart as pages: {whole} bits of 128"
    );
}

/// Two long source listings in rustdoc's markup: the line-number gutter
/// (1 to 8,000 on both) is no content, so the code decides, and unrelated
/// code is far apart.
#[test]
fn a_line_number_gutter_does_not_make_source_listings_alike() {
    let gutter: String = (1..=8000)
        .map(|n| format!("<span id=\"{n}\">{n}</span>\n"))
        .collect();
    let listing = |seed: u64| {
        let code: String = (0..30)
            .map(|i| {
                format!(
                    "let value_{seed}_{i} = compute_{}({i});\n",
                    seed * 7 + i % 13
                )
            })
            .collect();
        format!(
            "<html><body class=\"rustdoc source\"><div class=\"example-wrap\">\
             <pre class=\"line-numbers\">{gutter}</pre><pre class=\"rust\">{code}</pre>\
             </div></body></html>"
        )
    };
    let print = |page: &str, html: &str| {
        crate::engine::near_dup::fingerprint_alone(&features("rust", page, html))
    };
    let (a, b) = (listing(1), listing(2));
    let bits = hamming(print("src/a.rs.html", &a), print("src/b.rs.html", &b));
    assert!(bits > 2 * NEAR, "unrelated listings: {bits} bits");
    // Without the gutter's class its numbers are most of the text, and decide.
    let plain = |html: &str| html.replace("class=\"line-numbers\"", "class=\"numbers\"");
    let bits = hamming(
        print("src/a.rs.html", &plain(&a)),
        print("src/b.rs.html", &plain(&b)),
    );
    assert!(
        bits <= NEAR,
        "the gutter decides without its class: {bits} bits"
    );
}
