//! Link, title and meta-robots extraction: the CPU hot path, run by the
//! coordinator on the CPU pool. One pass over the bytes (`scan`), bounded, never panics.

mod bench;
mod blocks;
pub mod custom;
mod entities;
#[cfg(test)]
mod facts_tests;
mod fragments;
mod page_links;
#[cfg(test)]
mod real_html;
mod resources;
mod scan;
#[cfg(test)]
pub(crate) mod tests;

use std::borrow::Cow;

use encoding_rs::{Encoding, UTF_8};
use url::Url;

use crate::engine::dedup::{url_fingerprint, FingerprintMap};
use crate::engine::near_dup::TextFeatures;
use crate::engine::page_facts::{self, ExtractedValues, Hreflang, HtmlFacts};
use crate::engine::url_norm::{self, LinkBase, UrlShape};
use scan::{Tag, Visitor};

pub use bench::measure_extraction;
pub use fragments::{element_ids, fragment_found};
pub use page_links::PageLinks;

/// What extraction needs from the crawl's settings.
#[derive(Debug, Clone)]
pub struct ExtractOptions {
    /// The token `<meta name="...">` robots tags are honoured for (besides `robots`).
    pub product_token: String,
    /// Links kept per page.
    pub max_links: usize,
    /// Bytes of URL text kept per page: a long page URL with short relative
    /// links would otherwise cost up to `max_url_len` per link.
    pub max_link_bytes: usize,
    /// Longer URLs are dropped.
    pub max_url_len: usize,
    /// Resources (images, scripts, stylesheets, media, CSS `url()`) kept
    /// per page; 0 = none collected.
    pub max_resources: usize,
}

#[derive(Debug, Clone, Default)]
pub struct Extracted {
    /// Absolute, normalized, deduplicated, in document order, at most
    /// `max_links` of at most `max_link_bytes` together (compact: a dense
    /// page has hundreds of thousands).
    pub links: PageLinks,
    /// Links past either per-page cap (`max_links`, `max_link_bytes`), not
    /// followed; counted per occurrence, without resolving them.
    pub links_cut: usize,
    /// Links whose URL is longer than `max_url_len`, not followed.
    pub urls_too_long: usize,
    /// Resources the page loads, resolved and normalized like links, unique,
    /// in document order, at most `max_resources` (`resources::MAX_RESOURCE_BYTES`).
    pub resources: Vec<Url>,
    /// Resource references past those caps or longer than `max_url_len`, not checked.
    pub resources_cut: usize,
    /// Whitespace-collapsed, at most [`MAX_TITLE_CHARS`] characters.
    pub title: Option<String>,
    pub canonical: Option<Url>,
    pub directives: RobotsDirectives,
    /// The visible text's shingles, for the content fingerprint (`near_dup`).
    pub features: TextFeatures,
    /// Description, headings, word count, language alternates.
    pub facts: HtmlFacts,
    /// Where a `<meta http-equiv="refresh">` sends the reader, if elsewhere.
    pub refresh: Option<Url>,
    /// `<a href="page#part">` links: the page (without the fragment) and the
    /// fragment as written, each pair once, at most [`fragments::MAX_PER_PAGE`].
    pub fragments: Vec<(String, String)>,
    /// The values of the crawl's custom extractions (`custom`), one entry
    /// per extraction in force; set after this pass, only when there are some.
    pub custom: Vec<ExtractedValues>,
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
/// Visible text fed to the content measure: enough to characterise a page, bounded work.
const MAX_SIMHASH_TEXT: usize = 64 * 1024;
/// A page with more links gives back their growth slack (up to half their
/// memory) while they wait for admission; a normal page skips the copy.
const SHRINK_LINKS_ABOVE: usize = 4096;

/// `<link rel>` values that point at documents: only these are followed, so
/// a `rev="made"` mail address or an `author` contact is not fetched as a page.
const DOCUMENT_RELS: [&str; 21] = [
    "alternate",
    "amphtml",
    "canonical",
    "next",
    "prev",
    "previous",
    "first",
    "last",
    "up",
    "start",
    "index",
    "contents",
    "chapter",
    "section",
    "subsection",
    "appendix",
    "glossary",
    "help",
    "home",
    "copyright",
    "license",
];

/// `<link rel>` values that name resources, not pages (`alternate stylesheet`).
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
    encoding: &'static Encoding,
    base: LinkBase,
    base_seen: bool,
    links: PageLinks,
    /// The link being resolved, as text (its buffer kept).
    link_text: String,
    /// URL bytes of `links`, against `max_link_bytes`.
    link_bytes: usize,
    /// Each link's place in `links`, by its URL's fingerprint.
    index: FingerprintMap<usize>,
    /// A link did not fit `max_link_bytes`: the rest of the page is cut.
    full: bool,
    cut: usize,
    too_long: usize,
    resources: resources::Resources,
    title: Option<String>,
    canonical: Option<Url>,
    directives: RobotsDirectives,
    blocks: blocks::Blocks,
    text_budget: usize,
    facts: HtmlFacts,
    /// Open `<h1>` elements, and the first one's raw text while it is open.
    h1_open: u32,
    h1_raw: Option<Vec<u8>>,
    in_word: bool,
    refresh: Option<Url>,
    fragments: fragments::FragmentLinks,
}

impl<'a> State<'a> {
    fn new(
        opts: &'a ExtractOptions,
        encoding: &'static Encoding,
        base: &Url,
        body_len: usize,
    ) -> Self {
        State {
            opts,
            encoding,
            base: LinkBase::new(base.clone()),
            base_seen: false,
            links: PageLinks::default(),
            link_text: String::new(),
            link_bytes: 0,
            index: FingerprintMap::default(),
            full: false,
            cut: 0,
            too_long: 0,
            resources: resources::Resources::default(),
            title: None,
            canonical: None,
            directives: RobotsDirectives::default(),
            blocks: blocks::Blocks::for_page(body_len),
            text_budget: MAX_SIMHASH_TEXT,
            facts: HtmlFacts::default(),
            h1_open: 0,
            h1_raw: None,
            in_word: false,
            refresh: None,
            fragments: Default::default(),
        }
    }
}

impl State<'_> {
    /// An attribute value or a title as text, from the page's charset.
    fn decode<'b>(&self, raw: &'b [u8]) -> Cow<'b, str> {
        self.encoding.decode_without_bom_handling(raw).0
    }

    fn add_link(&mut self, raw_href: &[u8], nofollow: bool) {
        if self.full || self.links.len() >= self.opts.max_links {
            // Past a cap: counted without the cost of resolving.
            if !raw_href.trim_ascii().is_empty() {
                self.cut += 1;
            }
            return;
        }
        if raw_href.len() > self.opts.max_url_len.saturating_mul(4) {
            self.too_long += 1;
            return;
        }
        let text = self.decode(raw_href);
        let href = entities::decode(&text, true);
        // Written into a buffer kept from link to link: no allocation each.
        let mut url = std::mem::take(&mut self.link_text);
        url.clear();
        let shape = url_norm::resolve_text(&self.base, &href, &mut url);
        if href.contains('#') {
            self.fragments
                .add(self.base.url(), &href, shape.map(|_| url.as_str()));
        }
        if let Some(shape) = shape {
            self.add_resolved(&url, shape, nofollow);
        }
        self.link_text = url;
    }

    /// A link resolved: kept, or noted again (a URL is nofollow only if
    /// every occurrence says so).
    fn add_resolved(&mut self, url: &str, shape: UrlShape, nofollow: bool) {
        if url.len() > self.opts.max_url_len {
            self.too_long += 1;
            return;
        }
        let fingerprint = url_fingerprint(url);
        let indexed = self.index.get(&fingerprint).copied();
        if let Some(i) = indexed {
            if self.links.get(i).is_some_and(|l| l.url == url) {
                return self.links.found_again(i, nofollow);
            }
        }
        let kept = self.keep(url, shape, nofollow, fingerprint);
        // Another URL with the same fingerprint is kept, not indexed.
        if let (None, Some(index)) = (indexed, kept) {
            self.index.insert(fingerprint, index);
        }
    }

    /// Keeps a new link if its URL fits the byte budget, and gives its
    /// place; else the page's links from here on are cut.
    fn keep(
        &mut self,
        url: &str,
        shape: UrlShape,
        nofollow: bool,
        fingerprint: u64,
    ) -> Option<usize> {
        let bytes = self.link_bytes + url.len();
        let index = self.links.len();
        if bytes > self.opts.max_link_bytes || !self.links.push(url, nofollow, fingerprint, shape) {
            self.full = true;
            self.cut += 1;
            return None;
        }
        self.link_bytes = bytes;
        Some(index)
    }

    fn on_link_element(&mut self, tag: &Tag<'_>, attribute: &str) {
        let Some(href) = tag.attribute(attribute) else {
            return;
        };
        let rel = tag.attribute("rel").unwrap_or_default();
        let has_rel = |wanted: &str| {
            rel.split(|b| b.is_ascii_whitespace())
                .any(|token| token.eq_ignore_ascii_case(wanted.as_bytes()))
        };
        if tag.is("link") {
            if has_rel("alternate") {
                self.on_hreflang(tag, href);
            }
            if has_rel("canonical") && self.canonical.is_none() {
                let text = self.decode(href);
                self.canonical = url_norm::resolve(self.base.url(), &entities::decode(&text, true));
            }
            if resources::is_loaded_rel(has_rel) {
                self.add_resource(href);
            }
            let document = DOCUMENT_RELS.iter().any(|r| has_rel(r));
            if !document || RESOURCE_RELS.iter().any(|r| has_rel(r)) {
                return;
            }
        }
        self.add_link(href, has_rel("nofollow"));
    }

    fn on_base(&mut self, tag: &Tag<'_>) {
        if self.base_seen {
            return;
        }
        let Some(href) = tag.attribute("href") else {
            return;
        };
        self.base_seen = true;
        let text = self.decode(href);
        if let Some(base) = url_norm::resolve(self.base.url(), &entities::decode(&text, true)) {
            self.base = LinkBase::new(base);
        }
    }

    /// A language alternate: `<link rel="alternate" hreflang="de" href>`.
    fn on_hreflang(&mut self, tag: &Tag<'_>, href: &[u8]) {
        let Some(lang) = tag.attribute("hreflang") else {
            return;
        };
        let lang = self.decode(lang.trim_ascii()).into_owned();
        if self.facts.hreflang.len() >= page_facts::MAX_HREFLANG
            || lang.is_empty()
            || lang.chars().count() > page_facts::MAX_LANG_CHARS
            || href.len() > self.opts.max_url_len
        {
            return;
        }
        let text = self.decode(href);
        if let Some(url) = url_norm::resolve(self.base.url(), &entities::decode(&text, true)) {
            let url = url.to_string();
            self.facts.hreflang.push(Hreflang { lang, url });
        }
    }

    /// The decoded `content` of a meta tag.
    fn meta_content(&self, tag: &Tag<'_>) -> String {
        let raw = tag.attribute("content").unwrap_or_default();
        let text = self.decode(&raw[..raw.len().min(MAX_TITLE_RAW)]);
        entities::decode(&text, true).into_owned()
    }

    fn on_meta(&mut self, tag: &Tag<'_>) {
        if let Some(equiv) = tag.attribute("http-equiv") {
            if equiv.trim_ascii().eq_ignore_ascii_case(b"refresh") && self.refresh.is_none() {
                let content = self.meta_content(tag);
                self.refresh = refresh_target(&content)
                    .and_then(|target| url_norm::resolve(self.base.url(), target))
                    .filter(|target| target.as_str().len() <= self.opts.max_url_len);
            }
            return;
        }
        let Some(name) = tag.attribute("name") else {
            return;
        };
        let name = name.trim_ascii();
        if name.eq_ignore_ascii_case(b"description") {
            if self.facts.description.is_none() {
                let content = self.meta_content(tag);
                let description = page_facts::collapse(&content, page_facts::MAX_DESCRIPTION_CHARS);
                self.facts.description = Some(description).filter(|d| !d.is_empty());
            }
            return;
        }
        let token = self.opts.product_token.as_bytes();
        if name.eq_ignore_ascii_case(b"robots")
            || (!token.is_empty() && name.eq_ignore_ascii_case(token))
        {
            let content = self.decode(tag.attribute("content").unwrap_or_default());
            let parsed = RobotsDirectives::parse(&content, &self.opts.product_token);
            self.directives = self.directives.merge(parsed);
        }
    }

    /// The first `<title>`'s text, decoded, collapsed and capped.
    fn on_title(&mut self, content: &[u8]) {
        if self.title.is_some() {
            return;
        }
        let text = self.decode(&content[..content.len().min(MAX_TITLE_RAW)]);
        let title = page_facts::collapse(&entities::decode(&text, false), MAX_TITLE_CHARS);
        self.title = Some(title);
    }

    /// An `<h1>` starts: counted, and the first one's text captured.
    fn on_h1(&mut self) {
        self.facts.h1_count += 1;
        self.h1_open += 1;
        if self.facts.h1_count == 1 {
            self.h1_raw = Some(Vec::new());
        }
    }

    /// An `</h1>`: the first heading's text is done when its element closes.
    fn on_h1_end(&mut self) {
        self.h1_open = self.h1_open.saturating_sub(1);
        if self.h1_open == 0 {
            self.finish_h1();
        }
    }

    fn finish_h1(&mut self) {
        if let Some(raw) = self.h1_raw.take() {
            let text = self.decode(&raw);
            let h1 =
                page_facts::collapse(&entities::decode(&text, false), page_facts::MAX_H1_CHARS);
            self.facts.h1 = Some(h1).filter(|h| !h.is_empty());
        }
    }

    fn finish(mut self) -> Extracted {
        // An `<h1>` never closed holds the rest of the page (bounded).
        self.finish_h1();
        if self.links.len() > SHRINK_LINKS_ABOVE {
            self.links.shrink_to_fit();
        }
        Extracted {
            links: self.links,
            links_cut: self.cut,
            urls_too_long: self.too_long,
            resources: self.resources.urls,
            resources_cut: self.resources.cut,
            title: self.title.filter(|t| !t.is_empty()),
            canonical: self.canonical,
            directives: self.directives,
            features: self.blocks.features.finish(),
            facts: self.facts,
            refresh: self.refresh,
            fragments: self.fragments.finish(),
            custom: Vec::new(),
        }
    }
}

impl Visitor<'_> for State<'_> {
    fn text(&mut self, bytes: &[u8]) {
        if let Some(raw) = &mut self.h1_raw {
            let room = MAX_TITLE_RAW.saturating_sub(raw.len());
            raw.extend_from_slice(&bytes[..bytes.len().min(room)]);
        }
        // The measure's text and the word count in one pass; past the
        // measure's budget, the count alone.
        let (fed, rest) = bytes.split_at(bytes.len().min(self.text_budget));
        let words = self.blocks.features.feed_run(fed, &mut self.in_word)
            + page_facts::count_words(rest, &mut self.in_word);
        self.text_budget -= fed.len();
        self.facts.words = self.facts.words.saturating_add(words);
    }

    fn end_tag(&mut self, name: &[u8]) {
        self.blocks.end_tag(name);
        self.in_word = false;
        if name.eq_ignore_ascii_case(b"h1") {
            self.on_h1_end();
        }
    }

    fn start_tag(&mut self, tag: &Tag<'_>, content: Option<&[u8]>) {
        self.blocks.start_tag(tag);
        self.in_word = false;
        self.on_resources(tag, content);
        if tag.is("a") || tag.is("area") || tag.is("link") {
            self.on_link_element(tag, "href");
        } else if tag.is("frame") || tag.is("iframe") {
            self.on_link_element(tag, "src");
        } else if tag.is("base") {
            self.on_base(tag);
        } else if tag.is("meta") {
            self.on_meta(tag);
        } else if tag.is("title") {
            self.on_title(content.unwrap_or_default());
        } else if tag.is("h1") {
            self.on_h1();
        }
    }
}

/// A response extraction reads: HTML by its media type, or no type at all.
pub(crate) fn is_html(content_type: Option<&str>) -> bool {
    content_type.is_none_or(|ct| {
        let mime = ct.split(';').next().unwrap_or("").trim();
        mime.is_empty()
            || mime
                .as_bytes()
                .windows(4)
                .any(|w| w.eq_ignore_ascii_case(b"html"))
    })
}

/// The encoding a page is read in: the header's charset, else a `<meta
/// charset>` (without one in the header a page may still name one), else UTF-8.
pub(crate) fn page_encoding(body: &[u8], content_type: Option<&str>) -> &'static Encoding {
    encoding_of(content_type)
        .or_else(|| scan::meta_charset(body).and_then(ascii_compatible))
        .unwrap_or(UTF_8)
}

/// The charset parameter of a content type, if it names an ASCII-compatible one.
fn encoding_of(content_type: Option<&str>) -> Option<&'static Encoding> {
    let charset = content_type?.split(';').skip(1).find_map(|param| {
        let (key, value) = param.split_once('=')?;
        key.trim()
            .eq_ignore_ascii_case("charset")
            .then(|| value.trim().trim_matches(['"', '\'']))
    })?;
    ascii_compatible(charset.as_bytes())
}

/// The encoding a label names, unless markup cannot be read in it (UTF-16):
/// then the page is read as UTF-8, as browsers do for a `<meta>` naming one.
fn ascii_compatible(label: &[u8]) -> Option<&'static Encoding> {
    Encoding::for_label_no_replacement(label.trim_ascii()).filter(|e| e.is_ascii_compatible())
}

/// Extracts links, title, canonical URL, meta robots, the text's shingles
/// and the page's facts (`page_facts`).
/// Never fails: whatever the markup, it returns what it found.
pub fn extract(
    body: &[u8],
    page_url: &Url,
    content_type: Option<&str>,
    opts: &ExtractOptions,
) -> Extracted {
    if !is_html(content_type) {
        return Extracted::default();
    }
    let encoding = page_encoding(body, content_type);
    let mut state = State::new(opts, encoding, page_url, body.len());
    scan::scan(body, &mut state);
    state.finish()
}

/// Whether a content type names a stylesheet (`text/css`).
pub(crate) fn is_css(content_type: Option<&str>) -> bool {
    content_type.is_some_and(|ct| {
        ct.split(';')
            .next()
            .unwrap_or("")
            .trim()
            .eq_ignore_ascii_case("text/css")
    })
}

/// The `url()` and `@import "…"` references of a fetched stylesheet (fonts,
/// background images, imported stylesheets), resolved against its URL like a page's
/// resources, unique, within the same caps (`max_resources`, URL bytes)
/// and the file's first MiB; the second value counts those cut. Nothing
/// else of the file is read.
pub fn stylesheet_resources(
    css: &[u8],
    url: &Url,
    content_type: Option<&str>,
    opts: &ExtractOptions,
) -> (Vec<Url>, usize) {
    let encoding = encoding_of(content_type).unwrap_or(UTF_8);
    let mut state = State::new(opts, encoding, url, 0);
    state.stylesheet_urls(css);
    (state.resources.urls, state.resources.cut)
}

/// The URL of a meta refresh's `content` (`5; url='next.html'`), after the
/// HTML standard's "shared declarative refresh steps"; `None` without one.
fn refresh_target(content: &str) -> Option<&str> {
    let rest = content.trim_start();
    let after_delay = rest.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
    if after_delay.len() == rest.len() {
        return None;
    }
    let rest = after_delay.trim_start();
    let rest = rest.strip_prefix([';', ',']).unwrap_or(rest).trim_start();
    let rest = match rest.get(..3) {
        Some(word) if word.eq_ignore_ascii_case("url") => {
            match rest[3..].trim_start().strip_prefix('=') {
                Some(value) => value.trim_start(),
                None => rest,
            }
        }
        _ => rest,
    };
    let target = match rest.chars().next() {
        Some(quote @ ('"' | '\'')) => {
            let inner = &rest[1..];
            &inner[..inner.find(quote).unwrap_or(inner.len())]
        }
        _ => rest,
    };
    let target = target.trim();
    (!target.is_empty()).then_some(target)
}
