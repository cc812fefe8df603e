//! Page resources found in the same pass as links: images (with `srcset`),
//! scripts, stylesheets and icons, media, embeds and CSS `url()`. They are
//! checked by the crawl, never parsed for links; bounded like links, with
//! what is cut counted.

use memchr::memchr;
use url::Url;

use super::scan::Tag;
use super::{entities, State};
use crate::engine::dedup::{url_fingerprint, FingerprintMap};
use crate::engine::url_norm;

/// URL bytes of one page's resources: their count cap bounds their fixed cost.
pub const MAX_RESOURCE_BYTES: usize = 256 * 1024;
/// Bytes of CSS (a `<style>` element or a `style` attribute) searched for `url()`.
const MAX_CSS_SCAN: usize = 64 * 1024;
/// Bytes of a fetched stylesheet searched for `url()`.
pub const MAX_STYLESHEET_SCAN: usize = 1024 * 1024;
/// Candidates read from one `srcset`.
const MAX_SRCSET_CANDIDATES: usize = 32;

/// `<link rel>` values whose target is a resource the page loads.
const LOADED_RELS: [&str; 6] = [
    "stylesheet",
    "icon",
    "preload",
    "modulepreload",
    "apple-touch-icon",
    "manifest",
];

/// A page's resources: unique, in document order, at most `max_resources`.
#[derive(Default)]
pub(super) struct Resources {
    pub urls: Vec<Url>,
    index: FingerprintMap<()>,
    bytes: usize,
    /// Resource references past a cap or longer than `max_url_len`.
    pub cut: usize,
}

/// Whether a `<link>` with these rel tokens loads a resource.
pub(super) fn is_loaded_rel(has_rel: impl Fn(&str) -> bool) -> bool {
    LOADED_RELS.iter().any(|r| has_rel(r))
}

impl State<'_> {
    /// The resource attributes of a start tag, and CSS in `<style>` or `style=""`.
    pub(super) fn on_resources(&mut self, tag: &Tag<'_>, content: Option<&[u8]>) {
        if self.opts.max_resources == 0 {
            return;
        }
        let attributes: &[&str] = match tag.name.len() {
            3 if tag.is("img") => &["src", "srcset"],
            5 if tag.is("embed") || tag.is("track") || tag.is("audio") => &["src"],
            5 if tag.is("video") => &["src", "poster"],
            6 if tag.is("script") => &["src"],
            6 if tag.is("source") => &["src", "srcset"],
            6 if tag.is("object") => &["data"],
            5 if tag.is("style") => {
                self.css_urls(content.unwrap_or_default(), MAX_CSS_SCAN);
                &[]
            }
            _ => &[],
        };
        for name in attributes {
            if let Some(value) = tag.attribute(name) {
                if name.ends_with("srcset") {
                    self.srcset(value);
                } else {
                    self.add_resource(value);
                }
            }
        }
        // `style` attributes are rare: a cheap look for `(` before parsing.
        if memchr(b'(', tag.raw_attributes()).is_some() {
            if let Some(style) = tag.attribute("style") {
                self.css_urls(style, MAX_CSS_SCAN);
            }
        }
    }

    /// Each candidate URL of a `srcset` (`a.jpg 1x, b.jpg 2x`).
    fn srcset(&mut self, value: &[u8]) {
        for url in srcset_urls(value).take(MAX_SRCSET_CANDIDATES) {
            self.add_resource(url);
        }
    }

    /// Each `@import "..."` and `url(...)` of a fetched stylesheet.
    pub(super) fn stylesheet_urls(&mut self, css: &[u8]) {
        if self.opts.max_resources > 0 {
            let css = &css[..css.len().min(MAX_STYLESHEET_SCAN)];
            self.css_imports(css);
            self.css_urls(css, MAX_STYLESHEET_SCAN);
        }
    }

    /// `@import "x.css"`: a stylesheet named by a string, which `url()`
    /// scanning misses (`@import url(x.css)` is left to it).
    fn css_imports(&mut self, css: &[u8]) {
        let mut at = 0;
        while let Some(i) = memchr::memmem::find(&css[at..], b"@import") {
            at += i + b"@import".len();
            let rest = &css[at..];
            let start = rest.iter().position(|b| !b.is_ascii_whitespace());
            if start.is_some_and(|s| matches!(rest[s], b'"' | b'\'')) {
                let (url, end) = css_url(rest);
                at += end;
                self.add_resource(url);
            }
        }
    }

    /// Each `url(...)` in the first `max_scan` bytes of CSS text.
    fn css_urls(&mut self, css: &[u8], max_scan: usize) {
        let css = &css[..css.len().min(max_scan)];
        let mut at = 0;
        while let Some(i) = memchr(b'(', &css[at..]) {
            let open = at + i;
            at = open + 1;
            if open < 3 || !css[open - 3..open].eq_ignore_ascii_case(b"url") {
                continue;
            }
            let (url, end) = css_url(&css[at..]);
            at += end;
            self.add_resource(url);
        }
    }

    /// Resolves, normalizes and keeps one resource reference within the caps.
    pub(super) fn add_resource(&mut self, raw: &[u8]) {
        if raw.trim_ascii().is_empty() {
            return;
        }
        if self.resources.urls.len() >= self.opts.max_resources
            || self.resources.bytes >= MAX_RESOURCE_BYTES
        {
            self.resources.cut += 1;
            return;
        }
        if raw.len() > self.opts.max_url_len.saturating_mul(4) {
            self.resources.cut += 1;
            return;
        }
        let text = self.decode(raw);
        let href = entities::decode(&text, true);
        let Some(url) = url_norm::resolve(self.base.url(), &href) else {
            return;
        };
        if url.as_str().len() > self.opts.max_url_len {
            self.resources.cut += 1;
            return;
        }
        let fingerprint = url_fingerprint(url.as_str());
        if self.resources.index.insert(fingerprint, ()).is_some() {
            return;
        }
        self.resources.bytes += url.as_str().len();
        self.resources.urls.push(url);
    }
}

/// The URLs of a `srcset`: each candidate is a URL, then descriptors up to a comma.
fn srcset_urls(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = value;
    std::iter::from_fn(move || {
        let start = rest
            .iter()
            .position(|b| !b.is_ascii_whitespace() && *b != b',')?;
        rest = &rest[start..];
        let end = rest
            .iter()
            .position(u8::is_ascii_whitespace)
            .unwrap_or(rest.len());
        let mut url = &rest[..end];
        rest = &rest[end..];
        if url.ends_with(b",") {
            // `a.jpg,b.jpg`: the comma ends the candidate, no descriptors.
            while let [head @ .., b','] = url {
                url = head;
            }
        } else {
            let next = memchr(b',', rest).map_or(rest.len(), |i| i + 1);
            rest = &rest[next..];
        }
        Some(url)
    })
}

/// The URL inside `url(` … `)` (quoted or not) and the bytes it took.
fn css_url(after_paren: &[u8]) -> (&[u8], usize) {
    let start = after_paren
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(after_paren.len());
    let rest = &after_paren[start..];
    match rest.first() {
        Some(&quote @ (b'"' | b'\'')) => {
            let end = memchr(quote, &rest[1..]).map_or(rest.len(), |i| i + 1);
            (&rest[1..end], start + end)
        }
        _ => {
            let end = memchr(b')', rest).unwrap_or(rest.len());
            (rest[..end].trim_ascii(), start + end)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{extract, ExtractOptions, Extracted};
    use super::*;

    fn run(html: &str, max_resources: usize) -> Extracted {
        let opts = ExtractOptions {
            product_token: "crawldeck".into(),
            max_links: 100,
            max_link_bytes: 1 << 20,
            max_url_len: 200,
            max_resources,
        };
        let page = Url::parse("http://shop.localhost:40123/dir/page.html").unwrap();
        extract(html.as_bytes(), &page, Some("text/html"), &opts)
    }

    fn paths(got: &Extracted) -> Vec<&str> {
        got.resources.iter().map(|u| &u.as_str()[27..]).collect()
    }

    #[test]
    fn every_resource_source_in_document_order_once_each() {
        let got = run(
            r#"<head><link rel="stylesheet" href="/s.css"><link rel="shortcut icon" href="/i.ico">
            <link rel=preload href=/f.woff2><link rel=modulepreload href=m.js>
            <link rel=apple-touch-icon href=/t.png><link rel=manifest href=/app.webmanifest>
            <link rel=prefetch href=/not-loaded><link rel=next href=/page-2>
            <style>body { background: url( "/bg.png" ) } .a{background:URL(a.gif)}
            .d{background:url(data:image/png;base64,AAAA)}</style>
            <script src="/app.js"></script></head>
            <body><img src="/a.jpg" srcset="/a-2x.jpg 2x, /a-3x.jpg 3x"><img src="/a.jpg">
            <picture><source srcset="/p.webp 1x,/p2.webp 2x"><source src=/s.mp4></picture>
            <video src=/v.mp4 poster=/poster.jpg><track src=/subs.vtt></video><audio src=/a.mp3></audio>
            <embed src=/e.swf><object data=/o.svg></object>
            <div style="background-image: url('/div.png')">x</div><a href="/link">l</a></body>"#,
            100,
        );
        assert_eq!(
            paths(&got),
            [
                "/s.css",
                "/i.ico",
                "/f.woff2",
                "/dir/m.js",
                "/t.png",
                "/app.webmanifest",
                "/bg.png",
                "/dir/a.gif",
                "/app.js",
                "/a.jpg",
                "/a-2x.jpg",
                "/a-3x.jpg",
                "/p.webp",
                "/p2.webp",
                "/s.mp4",
                "/v.mp4",
                "/poster.jpg",
                "/subs.vtt",
                "/a.mp3",
                "/e.swf",
                "/o.svg",
                "/div.png",
            ]
        );
        let links: Vec<&str> = got.links.iter().map(|l| &l.url[27..]).collect();
        assert_eq!(links, ["/page-2", "/link"], "resources are not links");
        assert_eq!(got.resources_cut, 0);
    }

    #[test]
    fn resources_past_the_cap_are_counted_and_none_are_taken_when_off() {
        let html: String = (0..10).map(|i| format!("<img src=/i{i}.png>")).collect();
        let got = run(&html, 3);
        assert_eq!(paths(&got), ["/i0.png", "/i1.png", "/i2.png"]);
        assert_eq!(got.resources_cut, 7);
        let long = format!("<img src=/{}.png>", "x".repeat(300));
        assert_eq!(run(&long, 3).resources_cut, 1, "longer than max_url_len");
        let off = run(&html, 0);
        assert_eq!((off.resources.len(), off.resources_cut), (0, 0));
    }

    #[test]
    fn css_is_searched_only_up_to_its_cap() {
        let filler = "a".repeat(MAX_CSS_SCAN);
        let html = format!("<style>.x{{background:url(/in.png)}}{filler}url(/past.png)</style>");
        assert_eq!(paths(&run(&html, 10)), ["/in.png"]);
    }

    #[test]
    fn a_fetched_stylesheets_urls_resolve_against_it_within_the_caps() {
        let opts = |max_resources| ExtractOptions {
            max_resources,
            ..super::super::tests::opts()
        };
        let sheet = Url::parse("http://shop.localhost:40123/css/site.css").unwrap();
        let css = b"@import url(base.css);\n@import 'print.css' print;\n@font-face { src: url('../fonts/a.woff2') }\n\
            .x { background: url(/bg.png) } .y { background: url(/bg.png) }\n\
            .z { background: url(data:image/png;base64,AAAA) } /* <a href=/no.html> */";
        let (urls, cut) =
            super::super::stylesheet_resources(css, &sheet, Some("text/css"), &opts(10));
        let got: Vec<&str> = urls.iter().map(|u| &u.as_str()[27..]).collect();
        assert_eq!(
            got,
            [
                "/css/print.css",
                "/css/base.css",
                "/fonts/a.woff2",
                "/bg.png"
            ]
        );
        assert_eq!(cut, 0);
        let (urls, cut) = super::super::stylesheet_resources(css, &sheet, None, &opts(1));
        assert_eq!(
            (urls.len(), cut),
            (1, 5),
            "each reference past max_resources counted"
        );
        let (urls, _) = super::super::stylesheet_resources(css, &sheet, None, &opts(0));
        assert!(urls.is_empty(), "resources off");
        let filler = "a".repeat(MAX_STYLESHEET_SCAN);
        let long = format!("url(/in.png){filler}url(/past.png)");
        let (urls, _) =
            super::super::stylesheet_resources(long.as_bytes(), &sheet, None, &opts(10));
        assert_eq!(urls.len(), 1, "only the first MiB is read");
        assert!(super::super::is_css(Some("Text/CSS; charset=utf-8")));
        assert!(!super::super::is_css(Some("text/html")) && !super::super::is_css(None));
    }

    #[test]
    fn srcset_candidates_with_and_without_descriptors() {
        let got: Vec<&[u8]> =
            srcset_urls(b" a.jpg 1x, b.jpg 2x,c.jpg , d.jpg, e.jpg 640w ,, f.jpg").collect();
        let want: [&[u8]; 6] = [b"a.jpg", b"b.jpg", b"c.jpg", b"d.jpg", b"e.jpg", b"f.jpg"];
        assert_eq!(got, want);
        // As the HTML standard reads it, a comma inside a URL is part of it.
        let got: Vec<&[u8]> = srcset_urls(b"x.jpg,y.jpg 2x").collect();
        let want: [&[u8]; 1] = [b"x.jpg,y.jpg"];
        assert_eq!(got, want);
        assert_eq!(srcset_urls(b"  ,, ").count(), 0);
    }

    #[test]
    fn css_url_quoted_unquoted_and_unclosed() {
        assert_eq!(css_url(b"'a b.png') x").0, b"a b.png");
        assert_eq!(css_url(b" \"q.png\")").0, b"q.png");
        assert_eq!(css_url(b" bg.gif ) x").0, b"bg.gif");
        assert_eq!(css_url(b"never-closed").0, b"never-closed");
        assert_eq!(css_url(b"'open").0, b"open");
    }
}
