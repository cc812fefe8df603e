//! The page inspector's data: a fetched page read back from its WARC record
//! and the store, off the crawl loop (a running engine's reader thread, or a
//! process of its own when no crawl runs). Everything is capped: a page
//! archived at any size yields at most [`MAX_BODY`] bytes of HTML and
//! bounded lists. Strings are as the network sent them; front ends strip
//! control characters before showing them.

mod diff;
mod fates;
mod html;
pub mod quarantine;

use std::path::Path;

use serde::{Deserialize, Serialize};

pub use super::css::{check_selector, SelectError};
pub use diff::{side_by_side, DiffRow, DiffSide};
pub use fates::LinkFate;
pub use html::{select, MAX_SELECTED};

use super::reads::{ExtraAnswer, ExtraRead};
use super::store::{read_response, PageOutcome, PageRecord, Store, StoreError, SOFT_404_PROBE};

/// Most body bytes read back from the archive.
pub const MAX_BODY: usize = 5 * 1024 * 1024;
/// Most bytes of text lines kept (for the outline and the diff).
pub const MAX_TEXT: usize = 1024 * 1024;
/// Most lines of text kept.
pub const MAX_TEXT_LINES: usize = 5_000;
/// Most characters of one line of text, heading or selected element.
pub const MAX_LINE_CHARS: usize = 400;
/// Most outline entries.
pub const MAX_OUTLINE: usize = 300;
/// Lines of body text the outline shows besides the headings.
pub const OUTLINE_TEXT_LINES: usize = 20;
/// Most links listed with their fate.
pub const MAX_LINKS: usize = 1_000;

/// One fetched page as the inspector shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PageInspection {
    /// The page's URL.
    pub url: String,
    /// What became of it (`fetched`, `duplicate`, …), from its record.
    pub outcome: String,
    /// The HTTP status, from the archive (or the record without one).
    pub status: Option<u16>,
    /// The response's header fields, from the archive.
    pub headers: Vec<(String, String)>,
    /// When it was fetched, in ms since the Unix epoch.
    pub fetched_at_unix_ms: u64,
    /// The `<title>`.
    pub title: Option<String>,
    /// Headings (level 1-6) and the first lines of text (level 0), in page order.
    pub outline: Vec<OutlineEntry>,
    /// The page's visible text, one line per text block (capped), for diffs.
    pub text: Vec<String>,
    /// The page's links with what became of each.
    pub links: Vec<InspectedLink>,
    /// The links past [`MAX_LINKS`], not listed.
    pub links_not_listed: usize,
    /// Links the crawl cut at the per-page cap and did not follow (the
    /// record's count).
    #[serde(default)]
    pub links_cut: u32,
    /// The body as archived (at most [`MAX_BODY`] bytes, as UTF-8), for `:select`.
    pub html: String,
    /// The archived body was longer than [`MAX_BODY`] and was cut.
    pub truncated: bool,
    /// Why there is no archived copy to show, if there is none.
    pub archive_note: Option<String>,
    /// The page's record, for its facts (indexability, headings, words, time).
    #[serde(default)]
    pub record: Option<PageRecord>,
    /// Crawled pages that link to it.
    #[serde(default)]
    pub inlinks: u32,
    /// The page it was first found on, then a few more (the store keeps a few).
    #[serde(default)]
    pub linked_from: Vec<String>,
}

/// A heading (`level` 1-6) or a line of text (`level` 0).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutlineEntry {
    /// 1-6 for `<h1>`-`<h6>`, 0 for text.
    pub level: u8,
    /// Its text, whitespace collapsed, capped.
    pub text: String,
}

/// A link of the page and what the crawl did with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InspectedLink {
    /// The link, resolved and normalized as the crawl keys it.
    pub url: String,
    /// What became of it.
    pub fate: LinkFate,
}

/// The inspector's reads of a running engine, answered on its reader
/// threads (`engine::reads`) so the crawl loop never waits on them.
pub(crate) const SOCKET_READS: &[ExtraRead] = &[
    ExtraRead {
        name: "inspect",
        read: ExtraAnswer::One(inspect_as_json),
    },
    ExtraRead {
        name: "quarantine",
        read: ExtraAnswer::One(quarantine_as_json),
    },
    ExtraRead {
        name: "parked",
        read: ExtraAnswer::Lines(parked_as_json),
    },
];

fn parked_as_json(
    store: &Store,
    _data_dir: &Path,
    _arg: &str,
) -> Result<super::store::Entries<serde_json::Value>, StoreError> {
    Ok(Box::new(quarantine::parked_entries(store).map(|entry| {
        serde_json::to_value(entry?).map_err(|source| StoreError::Encode {
            what: "parked URL",
            source,
        })
    })))
}

fn quarantine_as_json(
    store: &Store,
    _data_dir: &Path,
    _arg: &str,
) -> Result<serde_json::Value, StoreError> {
    serde_json::to_value(quarantine::read(store)?).map_err(|source| StoreError::Encode {
        what: "quarantine",
        source,
    })
}

fn inspect_as_json(
    store: &Store,
    data_dir: &Path,
    url: &str,
) -> Result<serde_json::Value, StoreError> {
    let page = inspect(store, data_dir, url)?;
    serde_json::to_value(page).map_err(|source| StoreError::Encode {
        what: "page inspection",
        source,
    })
}

/// Inspects the page of `url` in the crawl of `data_dir`; `None` if the
/// store has no record of it. A missing or unreadable archive copy is not an
/// error: the record's fields are shown with [`PageInspection::archive_note`].
pub fn inspect(
    store: &Store,
    data_dir: &Path,
    url: &str,
) -> Result<Option<PageInspection>, StoreError> {
    let Some(record) = store.page(url)? else {
        return unfetched(store, url);
    };
    let record_status = match &record.outcome {
        PageOutcome::Fetched { status } | PageOutcome::Redirect { status, .. } => Some(*status),
        PageOutcome::NotCrawled { reason } => probe_status(reason),
        _ => None,
    };
    let mut page = PageInspection {
        url: record.url.clone(),
        outcome: outcome_words(&record.outcome),
        status: record_status,
        headers: Vec::new(),
        fetched_at_unix_ms: record.fetched_at_unix_ms,
        title: record.title.clone(),
        outline: Vec::new(),
        text: Vec::new(),
        links: Vec::new(),
        links_not_listed: 0,
        links_cut: record.links_dropped,
        html: String::new(),
        truncated: false,
        archive_note: None,
        record: None,
        inlinks: store.inlinks(url),
        linked_from: store.referrers(url)?,
    };
    page.record = Some(record.clone());
    let Some(at) = &record.warc else {
        page.archive_note = Some(no_archive_reason(&record.outcome).into());
        return Ok(Some(page));
    };
    let archived = match read_response(data_dir, at, MAX_BODY) {
        Ok(archived) => archived,
        Err(e) => {
            page.archive_note = Some(format!("the archived copy cannot be read: {e}"));
            return Ok(Some(page));
        }
    };
    page.status = archived.status.or(record_status);
    page.headers = archived.headers;
    page.truncated = archived.truncated;
    page.html = decode_body(&page.headers, &archived.body);
    let doc = html::Document::parse(&page.html, &record.url);
    if page.title.is_none() {
        page.title = doc.title();
    }
    let text = doc.text();
    page.outline = text.outline;
    page.text = text.lines;
    let links = doc.links();
    page.links_not_listed = links.len().saturating_sub(MAX_LINKS);
    page.links = fates::of_links(store, links.into_iter().take(MAX_LINKS).collect())?;
    Ok(Some(page))
}

/// A URL found but not fetched (parked by an alert, queued, left out): what
/// became of it and the pages it was found on.
fn unfetched(store: &Store, url: &str) -> Result<Option<PageInspection>, StoreError> {
    let Some(fate) = fates::of_unrecorded(store, url)? else {
        return Ok(None);
    };
    let found_on = store.referrers(url)?;
    let note = match found_on.is_empty() {
        true => format!("not fetched ({})", fate.label()),
        false => format!(
            "not fetched ({}); found on {}",
            fate.label(),
            found_on.join(", ")
        ),
    };
    Ok(Some(PageInspection {
        url: url.to_string(),
        outcome: fate.label(),
        status: None,
        headers: Vec::new(),
        fetched_at_unix_ms: 0,
        title: None,
        outline: Vec::new(),
        text: Vec::new(),
        links: Vec::new(),
        links_not_listed: 0,
        links_cut: 0,
        html: String::new(),
        truncated: false,
        archive_note: Some(note),
        record: None,
        inlinks: store.inlinks(url),
        linked_from: found_on,
    }))
}

/// The body as text, in the charset its Content-Type names (as the crawl's
/// own extraction reads it), else UTF-8 with bad bytes replaced.
fn decode_body(headers: &[(String, String)], body: &[u8]) -> String {
    let charset = headers
        .iter()
        .filter(|(name, _)| name.eq_ignore_ascii_case("content-type"))
        .flat_map(|(_, value)| value.split(';').skip(1))
        .find_map(|param| {
            let (key, value) = param.split_once('=')?;
            key.trim()
                .eq_ignore_ascii_case("charset")
                .then(|| value.trim().trim_matches(['"', '\'']))
        });
    match charset.and_then(|c| encoding_rs::Encoding::for_label(c.as_bytes())) {
        Some(encoding) => encoding.decode_without_bom_handling(body).0.into_owned(),
        None => String::from_utf8_lossy(body).into_owned(),
    }
}

/// Why a page with this outcome has no archived copy.
fn no_archive_reason(outcome: &PageOutcome) -> &'static str {
    match outcome {
        PageOutcome::Fetched { .. }
        | PageOutcome::Duplicate { .. }
        | PageOutcome::NotModified { .. } => {
            "no archived copy (WARC off, noarchive, or fetched by an older crawldeck)"
        }
        PageOutcome::NotCrawled { reason } if probe_status(reason).is_some() => {
            "no archived copy of the probe (WARC off, or probed by an older crawldeck)"
        }
        _ => "no archived copy: the URL was not fetched",
    }
}

/// The record's outcome in words: a soft-404 probe says it was fetched, and
/// its verdict, rather than `not crawled`.
fn outcome_words(outcome: &PageOutcome) -> String {
    match outcome {
        PageOutcome::NotCrawled { reason } if probe_status(reason).is_some() => {
            format!("fetched as a {reason}")
        }
        PageOutcome::NotModified { pass } if *pass > 0 => format!("not modified in pass {pass}"),
        other => other.label().to_string(),
    }
}

/// The status a soft-404 probe's verdict starts with (`soft-404 probe: 200, …`);
/// `None` for a probe that got no answer, or another reason.
pub(crate) fn probe_status(reason: &str) -> Option<u16> {
    let verdict = reason.strip_prefix(SOFT_404_PROBE)?.strip_prefix(": ")?;
    verdict.split(',').next()?.parse().ok()
}

/// `s` cut to `max` characters, with `…` when cut.
pub(crate) fn cap_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests;
