//! Custom extraction: the crawl's named CSS selectors (`[[extract]]`) run on
//! an HTML page parsed with scraper. Off the streaming pass (`scan` builds no
//! tree): only a crawl with extractions pays for the parse, on the CPU pool.
//! Bounded: values per extraction, bytes per value, bytes per page.

use ego_tree::iter::Edge;
use scraper::{ElementRef, Html, Node, Selector};

use crate::engine::config::ExtractionSpec;
use crate::engine::page_facts::{collapse, ExtractedValues};

/// Values kept per extraction per page; later matches are left out.
pub const MAX_MATCHES: usize = 16;
/// Bytes kept of one value; a longer one is cut on a character.
pub const MAX_VALUE_BYTES: usize = 1024;
/// Bytes of values kept per page, all extractions together.
pub const MAX_PAGE_BYTES: usize = 64 * 1024;
/// Raw text read from one element before collapsing (collapsing only shrinks).
const MAX_RAW_TEXT: usize = 4 * MAX_VALUE_BYTES;

/// The extractions in force, their selectors compiled once.
#[derive(Debug)]
pub struct Extractions {
    items: Vec<Compiled>,
}

#[derive(Debug)]
struct Compiled {
    name: String,
    selector: Selector,
    attribute: Option<String>,
}

impl Extractions {
    /// Compiles checked specs (`config::extract::check_list`).
    pub fn compile(specs: &[ExtractionSpec]) -> Result<Extractions, String> {
        let items = specs
            .iter()
            .map(|spec| {
                spec.check()?;
                let selector = crate::engine::css::parse_selector(&spec.selector)
                    .map_err(|e| format!("extraction {}: {e}", spec.name))?;
                Ok(Compiled {
                    name: spec.name.clone(),
                    selector,
                    attribute: spec.attribute.clone(),
                })
            })
            .collect::<Result<_, String>>()?;
        Ok(Extractions { items })
    }

    /// No extraction: pages are not parsed.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Each extraction's values on a page (one entry per extraction, empty
    /// when nothing matched). `content_type` and `<meta charset>` give the
    /// encoding, as for links.
    pub fn evaluate(&self, body: &[u8], content_type: Option<&str>) -> Vec<ExtractedValues> {
        if self.items.is_empty() {
            return Vec::new();
        }
        let encoding = super::page_encoding(body, content_type);
        let (text, _, _) = encoding.decode(body);
        let document = Html::parse_document(&text);
        let mut budget = MAX_PAGE_BYTES;
        self.items
            .iter()
            .map(|item| item.evaluate(&document, &mut budget))
            .collect()
    }
}

impl Compiled {
    fn evaluate(&self, document: &Html, budget: &mut usize) -> ExtractedValues {
        let mut found = ExtractedValues {
            name: self.name.clone(),
            ..Default::default()
        };
        for element in document.select(&self.selector) {
            if found.values.len() >= MAX_MATCHES {
                found.cut = true;
                break;
            }
            let Some((value, shortened)) = self.value_of(element) else {
                continue;
            };
            if value.len() > *budget {
                found.cut = true;
                break;
            }
            *budget -= value.len();
            found.cut |= shortened;
            found.values.push(value);
        }
        found
    }

    /// The element's attribute or text as one bounded line, and whether it
    /// was shortened; `None` when empty or without the attribute.
    fn value_of(&self, element: ElementRef<'_>) -> Option<(String, bool)> {
        let mut raw = String::new();
        let mut long = false;
        match &self.attribute {
            Some(attr) => raw.push_str(element.value().attr(attr)?),
            None => long = element_text(element, &mut raw),
        }
        let clean = crate::text::strip_control(&raw);
        let mut value = collapse(&clean, usize::MAX);
        if value.len() > MAX_VALUE_BYTES {
            let mut end = MAX_VALUE_BYTES;
            while !value.is_char_boundary(end) {
                end -= 1;
            }
            value.truncate(end);
            long = true;
        }
        (!value.is_empty()).then_some((value, long))
    }
}

/// Elements whose edges separate words, as a browser lays them out
/// (`<td>a</td><td>b</td>` is `a b`; `19,<b>99</b>` stays `19,99`).
const BLOCKS: [&str; 25] = [
    "address",
    "article",
    "aside",
    "blockquote",
    "br",
    "dd",
    "div",
    "dl",
    "dt",
    "figcaption",
    "footer",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "li",
    "nav",
    "p",
    "section",
    "td",
    "th",
    "tr",
];

/// Elements whose text is no reader's text.
const UNSEEN: [&str; 4] = ["script", "style", "template", "noscript"];

/// Appends the element's visible text to `raw` (a space at block edges), at
/// most [`MAX_RAW_TEXT`] bytes; true when it stopped there.
fn element_text(element: ElementRef<'_>, raw: &mut String) -> bool {
    let mut unseen = 0usize;
    for edge in element.traverse() {
        let (node, open) = match edge {
            Edge::Open(node) => (node, true),
            Edge::Close(node) => (node, false),
        };
        match node.value() {
            Node::Text(text) if open && unseen == 0 => raw.push_str(text),
            Node::Element(e) if UNSEEN.contains(&e.name()) => match open {
                true => unseen += 1,
                false => unseen = unseen.saturating_sub(1),
            },
            Node::Element(e) if BLOCKS.contains(&e.name()) => raw.push(' '),
            _ => {}
        }
        if raw.len() > MAX_RAW_TEXT {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn extractions(specs: &[&str]) -> Extractions {
        let specs: Vec<_> = specs
            .iter()
            .map(|s| ExtractionSpec::parse(s).unwrap())
            .collect();
        Extractions::compile(&specs).unwrap()
    }

    const SHOP_PAGE: &str = r#"<!doctype html><html><head>
        <meta charset="utf-8"><title>Lamp</title>
        <meta property="og:image" content=" https://shop.example/lamp.jpg ">
        </head><body>
        <nav class="crumbs"><a href="/">Home</a> › <a href="/lights/">Lights</a></nav>
        <h1>Desk   lamp</h1>
        <p class="price" data-sku="L-1">€ 19,<b>99</b></p>
        <span class="price"></span>
        <table><tr><td>Watt</td><td>40<script>w()</script></td></tr></table>
        <script>var price = 1;</script>
        </body></html>"#;

    #[test]
    fn text_and_attributes_of_real_ish_html_in_document_order() {
        let found = extractions(&[
            "price=.price",
            "sku=.price@data-sku",
            "image=meta[property=\"og:image\"]@content",
            "crumbs=nav.crumbs a",
            "specs=table td",
            "table=table",
            "missing=.nowhere",
        ])
        .evaluate(SHOP_PAGE.as_bytes(), Some("text/html"));
        let values = |i: usize| (found[i].name.as_str(), found[i].values.clone());
        // The empty `<span class="price">` gives no value.
        assert_eq!(values(0), ("price", vec!["€ 19,99".to_string()]));
        assert_eq!(values(1), ("sku", vec!["L-1".to_string()]));
        assert_eq!(values(2).1, ["https://shop.example/lamp.jpg"]);
        assert_eq!(values(3).1, ["Home", "Lights"]);
        assert_eq!(values(4).1, ["Watt", "40"]);
        assert_eq!(values(5).1, ["Watt 40"], "cells stay apart");
        assert_eq!(values(6), ("missing", vec![]));
        assert!(found.iter().all(|f| !f.cut));
    }

    #[test]
    fn a_page_in_latin1_is_decoded_by_its_charset() {
        let body = b"<html><body><h1>Caf\xe9</h1></body></html>";
        let found = extractions(&["h=h1"]).evaluate(body, Some("text/html; charset=iso-8859-1"));
        assert_eq!(found[0].values, ["Café"]);
    }

    #[test]
    fn matches_values_and_pages_are_bounded_and_the_cut_is_recorded() {
        let items: String = (0..40).map(|i| format!("<li>item {i}</li>")).collect();
        let long = "é".repeat(MAX_VALUE_BYTES);
        let page =
            format!("<ul>{items}</ul><p id=long>{long}</p><p id=ctl>a\u{1b}[2J\u{7}b\tc</p>");
        let found =
            extractions(&["li=li", "long=#long", "ctl=#ctl"]).evaluate(page.as_bytes(), None);
        assert_eq!(found[0].values.len(), MAX_MATCHES);
        assert_eq!(found[0].values[15], "item 15");
        assert!(found[0].cut, "matches past the cap are recorded as cut");
        assert!(found[1].values[0].len() <= MAX_VALUE_BYTES);
        assert_eq!(found[1].values[0].chars().count(), MAX_VALUE_BYTES / 2);
        assert!(found[1].cut);
        assert_eq!(
            found[2].values,
            ["a[2Jb c"],
            "control characters never stored"
        );
        assert!(!found[2].cut);

        // 32 extractions of 16 values of 1 KiB would be 512 KiB: the page keeps 64.
        let big: String = (0..16)
            .map(|_| format!("<p>{}</p>", "x".repeat(1024)))
            .collect();
        let specs: Vec<String> = (0..8).map(|i| format!("p{i}=p")).collect();
        let specs: Vec<&str> = specs.iter().map(String::as_str).collect();
        let found = extractions(&specs).evaluate(big.as_bytes(), None);
        let kept: usize = found.iter().flat_map(|f| &f.values).map(String::len).sum();
        assert!(kept <= MAX_PAGE_BYTES, "{kept}");
        assert_eq!(found[3].values.len(), 16);
        assert!(found[4].values.is_empty() && found[4].cut);
    }

    #[test]
    fn hostile_markup_does_not_panic() {
        let deep = "<div>".repeat(20_000) + "x";
        let found = extractions(&["d=div > div > div"]).evaluate(deep.as_bytes(), None);
        assert_eq!(found[0].values.len(), MAX_MATCHES);
        let found = extractions(&["a=a@href"]).evaluate(b"\xff\xfe<a href=\"\x00\">", None);
        assert!(found[0].values.is_empty());
    }

    #[test]
    fn a_bad_selector_does_not_compile() {
        let spec = ExtractionSpec {
            name: "x".into(),
            selector: "p:nonsense(".into(),
            attribute: None,
        };
        let e = Extractions::compile(&[spec]).unwrap_err();
        assert!(e.starts_with("extraction x: bad CSS selector"), "{e}");
    }
}
