//! DOM work on an archived page (scraper): title, text lines, outline,
//! links and CSS selection. Off the hot path: the crawl's own extraction
//! stays the streaming one in `extract`.

use ego_tree::iter::Edge;
use scraper::{ElementRef, Html, Node, Selector};
use url::Url;

use crate::engine::css::parse_selector;

use super::{
    cap_chars, OutlineEntry, MAX_LINE_CHARS, MAX_OUTLINE, MAX_TEXT, MAX_TEXT_LINES,
    OUTLINE_TEXT_LINES,
};
use crate::engine::url_norm;

/// Longest line of the page's text; longer text is wrapped.
const WRAP: usize = 100;

/// Most elements `:select` lists.
pub const MAX_SELECTED: usize = 200;

/// Elements whose text is not shown.
const HIDDEN: [&str; 6] = ["script", "style", "noscript", "template", "head", "svg"];

/// A parsed page and the URL its links resolve against.
pub(super) struct Document {
    html: Html,
    base: Option<Url>,
}

/// A link as found: resolved, normalized, with its `rel=nofollow`.
pub(super) struct FoundLink {
    pub url: String,
    pub nofollow: bool,
}

/// The page's text: one line per text node, and the outline.
pub(super) struct PageText {
    pub lines: Vec<String>,
    pub outline: Vec<OutlineEntry>,
}

impl Document {
    pub fn parse(body: &str, url: &str) -> Document {
        let html = Html::parse_document(body);
        let page_url = Url::parse(url).ok();
        let base = first_attr(&html, "base[href]", "href")
            .and_then(|href| page_url.as_ref()?.join(&href).ok())
            .or(page_url);
        Document { html, base }
    }

    pub fn title(&self) -> Option<String> {
        let selector = Selector::parse("title").ok()?;
        let title = self.html.select(&selector).next()?;
        let text = collapse(&title.text().collect::<String>());
        (!text.is_empty()).then(|| cap_chars(&text, MAX_LINE_CHARS))
    }

    /// Visible text lines and the outline, in one walk (no recursion: any depth of nesting).
    pub fn text(&self) -> PageText {
        let mut text = PageText {
            lines: Vec::new(),
            outline: Vec::new(),
        };
        let mut hidden_depth = 0usize;
        let mut heading: Option<(u8, String)> = None;
        let mut bytes = 0usize;
        for edge in self.html.tree.root().traverse() {
            match edge {
                Edge::Open(node) => match node.value() {
                    Node::Element(e) if hidden_depth > 0 || HIDDEN.contains(&e.name()) => {
                        hidden_depth += 1;
                    }
                    Node::Element(e) => {
                        if let Some(level) = heading_level(e.name()) {
                            heading.get_or_insert((level, String::new()));
                        }
                    }
                    Node::Text(t) if hidden_depth == 0 => match &mut heading {
                        Some((_, words)) if words.len() < MAX_LINE_CHARS * 4 => {
                            words.push(' ');
                            words.push_str(t);
                        }
                        Some(_) => {}
                        None => text.push_line(&collapse(t), &mut bytes),
                    },
                    _ => {}
                },
                Edge::Close(node) => {
                    let Node::Element(e) = node.value() else {
                        continue;
                    };
                    if hidden_depth > 0 {
                        hidden_depth -= 1;
                    } else if heading_level(e.name()).is_some() {
                        if let Some((level, words)) = heading.take() {
                            text.push_heading(level, &collapse(&words), &mut bytes);
                        }
                    }
                }
            }
        }
        text
    }

    /// The `a` and `area` links, resolved, normalized, each once, in page order.
    pub fn links(&self) -> Vec<FoundLink> {
        let Ok(selector) = Selector::parse("a[href], area[href]") else {
            return Vec::new();
        };
        let mut seen = std::collections::HashSet::new();
        let mut links = Vec::new();
        for element in self.html.select(&selector) {
            let Some(mut url) = element
                .attr("href")
                .and_then(|href| self.base.as_ref()?.join(href.trim()).ok())
            else {
                continue;
            };
            if !matches!(url.scheme(), "http" | "https") {
                continue;
            }
            url_norm::normalize(&mut url);
            let url = String::from(url);
            if seen.insert(url.clone()) {
                links.push(FoundLink {
                    url,
                    nofollow: is_nofollow(&element),
                });
            }
        }
        links
    }
}

impl PageText {
    /// A text node: into the outline (first lines only) and, wrapped, into the text.
    fn push_line(&mut self, line: &str, bytes: &mut usize) {
        if line.is_empty() {
            return;
        }
        let body_lines = self.outline.iter().filter(|e| e.level == 0).count();
        if body_lines < OUTLINE_TEXT_LINES && self.outline.len() < MAX_OUTLINE {
            self.outline.push(OutlineEntry {
                level: 0,
                text: cap_chars(line, MAX_LINE_CHARS),
            });
        }
        self.push_wrapped(line, bytes);
    }

    fn push_heading(&mut self, level: u8, words: &str, bytes: &mut usize) {
        if words.is_empty() {
            return;
        }
        if self.outline.len() < MAX_OUTLINE {
            self.outline.push(OutlineEntry {
                level,
                text: cap_chars(words, MAX_LINE_CHARS),
            });
        }
        // A heading is a line of the text too, so diffs see it.
        let hashes = "#".repeat(usize::from(level));
        self.push_wrapped(&format!("{hashes} {words}"), bytes);
    }

    /// Adds `text` as lines of at most [`WRAP`] characters, cut between
    /// words, so a diff shows where a long paragraph differs.
    fn push_wrapped(&mut self, text: &str, bytes: &mut usize) {
        let mut line = String::new();
        for word in text.split(' ') {
            let full = !line.is_empty() && line.chars().count() + 1 + word.chars().count() > WRAP;
            if full && !self.push_text_line(std::mem::take(&mut line), bytes) {
                return;
            }
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(&cap_chars(word, WRAP));
        }
        if !line.is_empty() {
            self.push_text_line(line, bytes);
        }
    }

    /// False once the text is full.
    fn push_text_line(&mut self, line: String, bytes: &mut usize) -> bool {
        if *bytes >= MAX_TEXT || self.lines.len() >= MAX_TEXT_LINES {
            return false;
        }
        *bytes += line.len();
        self.lines.push(line);
        true
    }
}

/// The text of each element of `html` matching the CSS `selector` (at most
/// [`MAX_SELECTED`], each capped), as `<name> text`.
pub fn select(html: &str, selector: &str) -> Result<Vec<String>, crate::engine::css::SelectError> {
    let parsed = parse_selector(selector)?;
    let document = Html::parse_document(html);
    let found = document
        .select(&parsed)
        .take(MAX_SELECTED)
        .map(|element| {
            let text = collapse(&element.text().take(1_000).collect::<String>());
            cap_chars(
                &format!("<{}> {text}", element.value().name()),
                MAX_LINE_CHARS,
            )
        })
        .collect();
    Ok(found)
}

fn heading_level(name: &str) -> Option<u8> {
    match name.as_bytes() {
        [b'h', d @ b'1'..=b'6'] => Some(d - b'0'),
        _ => None,
    }
}

fn is_nofollow(element: &ElementRef) -> bool {
    element.attr("rel").is_some_and(|rel| {
        rel.split_ascii_whitespace()
            .any(|r| r.eq_ignore_ascii_case("nofollow"))
    })
}

fn first_attr(html: &Html, css: &str, attr: &str) -> Option<String> {
    let selector = Selector::parse(css).ok()?;
    let found = html.select(&selector).next()?.attr(attr)?.to_string();
    Some(found)
}

/// Whitespace runs as one space, trimmed.
fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
