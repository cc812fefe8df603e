//! Link, title and meta-robots extraction: the CPU hot path, run by the
//! coordinator on the CPU pool. Streaming (lol_html), bounded, never panics.

mod bench;
mod entities;
#[cfg(test)]
mod tests;
mod visible_text;

use std::cell::RefCell;
use std::collections::HashMap;

use lol_html::html_content::{Element, TextChunk};
use lol_html::{element, text, AsciiCompatibleEncoding, HtmlRewriter, MemorySettings, Settings};
use url::Url;

use crate::engine::url_norm;

pub use bench::measure_extraction;

/// What extraction needs from the crawl's settings.
#[derive(Debug, Clone)]
pub struct ExtractOptions {
    /// The token `<meta name="...">` robots tags are honoured for (besides `robots`).
    pub product_token: String,
    /// Links kept per page.
    pub max_links: usize,
    /// Longer URLs are dropped.
    pub max_url_len: usize,
}

#[derive(Debug, Clone, Default)]
pub struct Extracted {
    /// Absolute, normalized, deduplicated, in document order, at most `max_links`.
    pub links: Vec<Link>,
    /// Links over the cap or over the URL length limit.
    pub links_dropped: usize,
    /// Whitespace-collapsed, at most [`MAX_TITLE_CHARS`] characters.
    pub title: Option<String>,
    pub canonical: Option<Url>,
    pub directives: RobotsDirectives,
    /// Simhash of the visible text, for near-duplicate detection.
    pub simhash: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    pub url: Url,
    /// `rel="nofollow"` on every occurrence of this URL.
    pub nofollow: bool,
}

/// Meta robots and X-Robots-Tag directives that apply to us.
#[derive(Default, Clone, Copy, PartialEq, Eq, Debug)]
pub struct RobotsDirectives {
    /// `noindex` (or `none`).
    pub noindex: bool,
    /// `nofollow` (or `none`): the page's links are not followed.
    pub nofollow: bool,
    /// `noarchive`/`nocache`: no WARC record is written.
    pub noarchive: bool,
}

/// Directives with a value after `:`; their name is not a user-agent prefix.
const PARAMETER_DIRECTIVES: [&str; 5] = [
    "max-snippet",
    "max-image-preview",
    "max-video-preview",
    "unavailable_after",
    "indexifembedded",
];

/// A user-agent name as `X-Robots-Tag` and meta robots prefix it.
fn is_agent_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

impl RobotsDirectives {
    /// Parses one meta `content` or `X-Robots-Tag` value. An `agent:` prefix
    /// scopes the directives that follow it to that agent; other agents' are ignored.
    pub fn parse(value: &str, product_token: &str) -> Self {
        let mut directives = RobotsDirectives::default();
        let mut applies = true;
        for part in value.split(',').take(64) {
            let mut directive = part.trim();
            if let Some((name, rest)) = directive.split_once(':') {
                let name = name.trim();
                if PARAMETER_DIRECTIVES
                    .iter()
                    .any(|p| p.eq_ignore_ascii_case(name))
                {
                    continue;
                }
                // A value's own colon ("unavailable_after: Friday, 25-Jun-2010 15:00:00")
                // is not an agent prefix: agent names are single tokens.
                if !is_agent_name(name) {
                    continue;
                }
                applies = name.eq_ignore_ascii_case(product_token);
                directive = rest.trim();
            }
            if !applies {
                continue;
            }
            for word in directive.split_ascii_whitespace() {
                match word.to_ascii_lowercase().as_str() {
                    "noindex" => directives.noindex = true,
                    "nofollow" => directives.nofollow = true,
                    "noarchive" | "nocache" => directives.noarchive = true,
                    "none" => {
                        directives.noindex = true;
                        directives.nofollow = true;
                    }
                    _ => {}
                }
            }
        }
        directives
    }

    /// The directives of a response's `X-Robots-Tag` lines; each line's agent
    /// prefix applies within that line only.
    pub fn from_headers<S: AsRef<str>>(values: &[S], product_token: &str) -> Self {
        values.iter().fold(Self::default(), |all, value| {
            all.merge(Self::parse(value.as_ref(), product_token))
        })
    }

    /// Both sets of directives (a directive given anywhere applies).
    pub fn merge(self, other: Self) -> Self {
        RobotsDirectives {
            noindex: self.noindex || other.noindex,
            nofollow: self.nofollow || other.nofollow,
            noarchive: self.noarchive || other.noarchive,
        }
    }
}

pub const MAX_TITLE_CHARS: usize = 512;
/// Raw title bytes kept before decoding (entities shrink, never grow much).
const MAX_TITLE_RAW: usize = 8 * 1024;
/// Visible text fed to simhash: enough to characterise a page, bounded work.
const MAX_SIMHASH_TEXT: usize = 64 * 1024;
/// Parser buffers beyond this (a gigantic tag) end extraction with what was gathered.
const PARSER_MEMORY_LIMIT: usize = 4 * 1024 * 1024;
const WRITE_CHUNK: usize = 16 * 1024;

/// `<link rel>` values that name resources, not pages.
const RESOURCE_RELS: [&str; 9] = [
    "stylesheet",
    "icon",
    "preload",
    "prefetch",
    "preconnect",
    "dns-prefetch",
    "modulepreload",
    "manifest",
    "apple-touch-icon",
];

struct State<'a> {
    opts: &'a ExtractOptions,
    base: Url,
    base_seen: bool,
    links: Vec<Link>,
    index: HashMap<String, usize>,
    dropped: usize,
    title_raw: String,
    title_done: bool,
    canonical: Option<Url>,
    directives: RobotsDirectives,
}

impl State<'_> {
    fn add_link(&mut self, raw_href: &str, nofollow: bool) {
        if self.links.len() >= self.opts.max_links {
            // Over the cap: counted without the cost of resolving.
            if !raw_href.trim().is_empty() {
                self.dropped += 1;
            }
            return;
        }
        if raw_href.len() > self.opts.max_url_len.saturating_mul(4) {
            self.dropped += 1;
            return;
        }
        let href = entities::decode(raw_href, true);
        let Some(url) = url_norm::resolve(&self.base, &href) else {
            return;
        };
        if url.as_str().len() > self.opts.max_url_len {
            self.dropped += 1;
            return;
        }
        match self.index.get(url.as_str()) {
            // A URL is nofollow only if every occurrence says so.
            Some(&i) => self.links[i].nofollow &= nofollow,
            None => {
                self.index.insert(url.as_str().to_owned(), self.links.len());
                self.links.push(Link { url, nofollow });
            }
        }
    }

    fn on_link_element(&mut self, el: &Element, attribute: &str) {
        let Some(href) = el.get_attribute(attribute) else {
            return;
        };
        let rel = el.get_attribute("rel").unwrap_or_default();
        let has_rel = |wanted: &str| {
            rel.split_ascii_whitespace()
                .any(|token| token.eq_ignore_ascii_case(wanted))
        };
        if el.tag_name() == "link" {
            if has_rel("canonical") && self.canonical.is_none() {
                let decoded = entities::decode(&href, true);
                self.canonical = url_norm::resolve(&self.base, &decoded);
            }
            if RESOURCE_RELS.iter().any(|r| has_rel(r)) {
                return;
            }
        }
        self.add_link(&href, has_rel("nofollow"));
    }

    fn on_base(&mut self, el: &Element) {
        if self.base_seen {
            return;
        }
        self.base_seen = true;
        if let Some(href) = el.get_attribute("href") {
            if let Some(base) = url_norm::resolve(&self.base, &entities::decode(&href, true)) {
                self.base = base;
            }
        }
    }

    fn on_meta(&mut self, el: &Element) {
        let Some(name) = el.get_attribute("name") else {
            return;
        };
        let name = name.trim();
        let token = &self.opts.product_token;
        if name.eq_ignore_ascii_case("robots")
            || (!token.is_empty() && name.eq_ignore_ascii_case(token))
        {
            let content = el.get_attribute("content").unwrap_or_default();
            let parsed = RobotsDirectives::parse(&content, &self.opts.product_token);
            self.directives = self.directives.merge(parsed);
        }
    }

    fn on_title_text(&mut self, chunk: &TextChunk) {
        if self.title_done {
            return;
        }
        let room = MAX_TITLE_RAW.saturating_sub(self.title_raw.len());
        self.title_raw
            .push_str(truncate_chars(chunk.as_str(), room));
        if chunk.last_in_text_node() {
            self.title_done = true;
        }
    }

    fn finish(self, simhash: u64) -> Extracted {
        let title = (!self.title_raw.is_empty())
            .then(|| collapse_title(&entities::decode(&self.title_raw, false)))
            .filter(|t| !t.is_empty());
        Extracted {
            links: self.links,
            links_dropped: self.dropped,
            title,
            canonical: self.canonical,
            directives: self.directives,
            simhash,
        }
    }
}

/// The longest prefix of `s` with at most `max_bytes` bytes, on a char boundary.
fn truncate_chars(s: &str, max_bytes: usize) -> &str {
    if s.len() <= max_bytes {
        return s;
    }
    let mut end = max_bytes;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

fn collapse_title(raw: &str) -> String {
    let mut out = String::new();
    for word in raw.split_whitespace().flat_map(|w| w.split('\u{a0}')) {
        if word.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    match out.char_indices().nth(MAX_TITLE_CHARS) {
        Some((cut, _)) => out[..cut].to_string(),
        None => out,
    }
}

fn is_html(content_type: Option<&str>) -> bool {
    content_type.is_none_or(|ct| {
        let mime = ct
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        mime.is_empty() || mime.contains("html")
    })
}

/// The charset parameter of a content type, if lol_html can parse with it.
fn encoding_of(content_type: Option<&str>) -> Option<AsciiCompatibleEncoding> {
    let charset = content_type?.split(';').skip(1).find_map(|param| {
        let (key, value) = param.split_once('=')?;
        key.trim()
            .eq_ignore_ascii_case("charset")
            .then(|| value.trim().trim_matches(['"', '\'']))
    })?;
    let encoding = encoding_rs::Encoding::for_label_no_replacement(charset.as_bytes())?;
    AsciiCompatibleEncoding::new(encoding)
}

/// Extracts links, title, canonical URL, meta robots and a text simhash.
/// Never fails: on a parser error it returns what was gathered up to it.
pub fn extract(
    body: &[u8],
    page_url: &Url,
    content_type: Option<&str>,
    opts: &ExtractOptions,
) -> Extracted {
    let state = RefCell::new(State {
        opts,
        base: page_url.clone(),
        base_seen: false,
        links: Vec::new(),
        index: HashMap::new(),
        dropped: 0,
        title_raw: String::new(),
        title_done: false,
        canonical: None,
        directives: RobotsDirectives::default(),
    });
    if !is_html(content_type) {
        return state.into_inner().finish(0);
    }
    let header_encoding = encoding_of(content_type);
    let settings = Settings::new()
        .with_strict(false)
        .with_encoding(header_encoding.unwrap_or_else(AsciiCompatibleEncoding::utf_8))
        // Without a charset in the header, a <meta charset> may still name one.
        .with_adjust_charset_on_meta_tag(header_encoding.is_none())
        .with_memory_settings(
            MemorySettings::new().with_max_allowed_memory_usage(PARSER_MEMORY_LIMIT),
        )
        .append_element_content_handler(element!("base[href]", |el| {
            state.borrow_mut().on_base(el);
            Ok(())
        }))
        .append_element_content_handler(element!("a[href], area[href], link[href]", |el| {
            state.borrow_mut().on_link_element(el, "href");
            Ok(())
        }))
        .append_element_content_handler(element!("frame[src], iframe[src]", |el| {
            state.borrow_mut().on_link_element(el, "src");
            Ok(())
        }))
        .append_element_content_handler(element!("meta[name]", |el| {
            state.borrow_mut().on_meta(el);
            Ok(())
        }))
        .append_element_content_handler(text!("title", |chunk| {
            state.borrow_mut().on_title_text(chunk);
            Ok(())
        }));
    let mut rewriter = HtmlRewriter::new(settings, |_: &[u8]| {});
    let completed = body
        .chunks(WRITE_CHUNK)
        .all(|chunk| rewriter.write(chunk).is_ok());
    if completed {
        // An error here only means the tail was malformed; what we have stands.
        let _ = rewriter.end();
    } else {
        drop(rewriter);
    }
    state
        .into_inner()
        .finish(visible_text::simhash(body, MAX_SIMHASH_TEXT))
}
