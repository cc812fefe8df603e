//! Page records: what became of each URL that left the frontier.

use serde::{Deserialize, Serialize};

use crate::engine::page_facts::{ExtractedValues, HtmlFacts, NoindexSource};

/// What a URL was queued as: a page (fetched in full, its links followed) or
/// a check (requested once for its status, never parsed).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum UrlKind {
    /// Fetched in full; its links are followed.
    #[default]
    Page,
    /// A resource an in-scope page loads (image, script, stylesheet…).
    Resource,
    /// An out-of-scope URL an in-scope page links to (`checks.external`).
    External,
}

impl UrlKind {
    /// Every kind.
    pub const ALL: [UrlKind; 3] = [UrlKind::Page, UrlKind::Resource, UrlKind::External];

    /// The name listings use: `page`, `resource`, `external`.
    pub fn label(self) -> &'static str {
        match self {
            UrlKind::Page => "page",
            UrlKind::Resource => "resource",
            UrlKind::External => "external",
        }
    }

    /// Requested for its status only: no links taken, nothing archived.
    pub fn is_check(self) -> bool {
        self != UrlKind::Page
    }
}

fn is_page(kind: &UrlKind) -> bool {
    *kind == UrlKind::Page
}

/// One per URL that left the frontier (fetched, failed, blocked, given up…).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageRecord {
    /// The normalized absolute URL; the record's key.
    pub url: String,
    /// The URL's host key (`host`, or `host:port` off the scheme's default port).
    pub host: String,
    /// Link hops from a seed (seeds are 0; a redirect target keeps its source's depth).
    pub depth: u32,
    /// When the URL left the frontier (fetch done or given up), in ms since the Unix epoch.
    pub fetched_at_unix_ms: u64,
    /// What became of the URL.
    pub outcome: PageOutcome,
    /// The `<title>` of an HTML 2xx page; `None` for anything else or a page without one.
    pub title: Option<String>,
    /// SHA-1 of a 2xx body as `sha1:` + base32 (the WARC payload digest); `None` for other
    /// answers and URLs without a fetch.
    pub content_digest: Option<String>,
    /// The answer's ETag, sent back as If-None-Match in a recrawl pass.
    pub etag: Option<String>,
    /// The answer's Last-Modified, sent back as If-Modified-Since in a recrawl pass.
    pub last_modified: Option<String>,
    /// Body bytes after content decoding; 0 without a fetch.
    pub bytes: u64,
    /// Links of the page newly queued in the frontier (not those already seen, filtered,
    /// blocked or parked); a redirect's Location counts as one.
    pub outlinks: u32,
    /// The page's `<link rel=canonical>`, resolved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canonical: Option<String>,
    /// Links past the per-page caps (`scope.max_links_per_page`,
    /// `scope.max_link_bytes_per_page`), not followed; per occurrence, so a
    /// link repeated past the cap counts each time. Listed as `links_cut`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub links_dropped: u32,
    /// The answer's media type (`text/html`, without parameters); `None` without an answer
    /// or a Content-Type header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    /// Simhash of an HTML 2xx page's visible text, for near-duplicate groups.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub simhash: Option<u64>,
    /// The simhash's second hash (`near_dup::Fingerprint`); `None` in
    /// records written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub simhash_check: Option<u64>,
    /// Both hashes of the whole main text, template included
    /// (`near_dup::Fingerprint::whole`); `None` in records written before
    /// they were kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub simhash_whole: Option<[u64; 2]>,
    /// The body was cut at `fetch.max_body`: the record is of its start.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    /// Links found on an HTML 2xx page, followed or not (unlike `outlinks`), past the cap
    /// included; `None` for other answers and for records written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub links_found: Option<u32>,
    /// Where the answer's WARC response record is, to read the page back; `None` for
    /// URLs without an archived answer and records stored before this was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warc: Option<WarcLocation>,
    /// Milliseconds from sending the request to the body's last byte; `None`
    /// without an answer and for records stored before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_ms: Option<u32>,
    /// Where the answer's `noindex` came from, if it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noindex: Option<NoindexSource>,
    /// Description, headings, word count and language alternates of an HTML
    /// 2xx page (`page_facts`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub facts: Option<HtmlFacts>,
    /// What each custom extraction in force when the page was fetched found
    /// on it (`[[extract]]`); empty for pages fetched before there were any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub custom: Vec<ExtractedValues>,
    /// Page, or a resource or external URL that was only checked.
    #[serde(default, skip_serializing_if = "is_page")]
    pub kind: UrlKind,
}

/// One WARC record in the data directory's `warc/`: its file and its gzip member.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WarcLocation {
    /// The file's name (`crawldeck-00003.warc.gz`), never a path.
    pub file: String,
    /// Where the record's gzip member starts in the file.
    pub offset: u64,
    /// The member's compressed length.
    pub length: u64,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// What became of a URL that left the frontier.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum PageOutcome {
    /// An HTTP answer recorded as it came: a 2xx page, a 4xx, or a 5xx/429 after the last
    /// attempt.
    Fetched {
        /// The HTTP status.
        status: u16,
    },
    /// A 304 to a recrawl pass's conditional request: unchanged since the last fetch, whose
    /// title, digest, size and link count the record keeps.
    NotModified {
        /// The recrawl pass that asked (1 for the first `--recrawl`); 0 in
        /// records written before it was kept.
        #[serde(default)]
        pass: u32,
    },
    /// A 3xx whose Location was followed as a link (within `fetch.max_redirects`),
    /// or an HTML 2xx page whose `<meta http-equiv="refresh">` was.
    Redirect {
        /// The 3xx status, or the 2xx of a meta refresh.
        status: u16,
        /// The Location, resolved against the URL.
        location: String,
    },
    /// An HTML 2xx page with the same body (SHA-1) as a page stored earlier; its links were
    /// not followed.
    Duplicate {
        /// The URL first stored with that body.
        of: String,
    },
    /// No usable answer: a transport error after its attempts, a bad redirect, or a stored
    /// URL that no longer parses.
    Error {
        /// Short class: `connect`, `timeout`, `reset`, `body-too-large`, `decode`,
        /// `invalid-url`, `other`, `bad-redirect`, `too-many-redirects`.
        kind: String,
        /// What happened, in words.
        message: String,
    },
    /// robots.txt disallows the URL, or forbids the whole host (401/403 in strict mode).
    RobotsDenied,
    /// Removed from the queue (or from quarantine) by an operator rule or an accepted trap
    /// alert's rule.
    Blocked {
        /// `RuleView::id` of the rule.
        rule_id: u64,
        /// The rule in words (`regex ^/a on h`).
        rule: String,
    },
    /// The URL's host was given up before it was fetched, or the URL was a
    /// soft-404 probe (its reason then starts with [`SOFT_404_PROBE`]).
    NotCrawled {
        /// Why, in words ("robots.txt never became available", "host kept failing for 30m
        /// (breaker)", …).
        reason: String,
    },
}

impl PageOutcome {
    /// A short word for listings and exports.
    pub fn label(&self) -> &'static str {
        match self {
            PageOutcome::Fetched { .. } => "fetched",
            PageOutcome::NotModified { .. } => "not modified",
            PageOutcome::Redirect { .. } => "redirect",
            PageOutcome::Duplicate { .. } => "duplicate",
            PageOutcome::Error { .. } => "error",
            PageOutcome::RobotsDenied => "robots denied",
            PageOutcome::Blocked { .. } => "blocked",
            PageOutcome::NotCrawled { .. } => "not crawled",
        }
    }
}

/// How a soft-404 probe's record reason starts (then `: verdict`).
pub const SOFT_404_PROBE: &str = "soft-404 probe";

/// Longest media type a record keeps; a longer header is cut (it comes from the network).
const MAX_CONTENT_TYPE: usize = 100;

impl PageRecord {
    /// Keeps the media type of a Content-Type header: no parameters, bounded, lowercase.
    pub fn set_content_type(&mut self, header: Option<&str>) {
        self.content_type = header.map(|h| {
            let media = h.split(';').next().unwrap_or("").trim();
            let mut end = media.len().min(MAX_CONTENT_TYPE);
            while !media.is_char_boundary(end) {
                end -= 1;
            }
            media[..end].to_ascii_lowercase()
        });
    }

    /// A record for a URL that left the frontier without a fetch.
    pub fn without_fetch(
        url: &str,
        host: &str,
        depth: u32,
        now_unix_ms: u64,
        outcome: PageOutcome,
    ) -> Self {
        PageRecord {
            url: url.to_string(),
            host: host.to_string(),
            depth,
            fetched_at_unix_ms: now_unix_ms,
            outcome,
            title: None,
            content_digest: None,
            etag: None,
            last_modified: None,
            bytes: 0,
            outlinks: 0,
            canonical: None,
            links_dropped: 0,
            content_type: None,
            simhash: None,
            simhash_check: None,
            simhash_whole: None,
            truncated: false,
            links_found: None,
            warc: None,
            response_ms: None,
            noindex: None,
            facts: None,
            custom: Vec::new(),
            kind: UrlKind::Page,
        }
    }
}
