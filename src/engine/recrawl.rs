//! Recrawl passes: every page a finished crawl holds is fetched again with
//! the validators of its last fetch (If-None-Match, If-Modified-Since), so an
//! unchanged page costs a 304 and no body.

use url::Url;

use super::archive::EarlierFetch;
use super::fetch::Validators;
use super::frontier::{FrontierEntry, FrontierStore};
use super::prioritize::priority;
use super::store::{PageOutcome, PageRecord, Store, StoreError};
use super::EngineError;

/// Frontier entries pushed per batch while a pass is queued.
const PUSH_CHUNK: usize = 4096;

/// Pages worth fetching again: the ones that had content.
fn had_content(outcome: &PageOutcome) -> bool {
    match outcome {
        PageOutcome::Fetched { status } => (200..300).contains(status),
        PageOutcome::NotModified { .. } | PageOutcome::Duplicate { .. } => true,
        _ => false,
    }
}

/// Queues every page with content for a new pass; returns the pass number
/// and how many URLs were queued. A crawl with URLs still queued must end
/// first: queueing its pages again would fetch some of them twice.
pub fn start_pass(
    store: &Store,
    frontier: &mut dyn FrontierStore,
) -> Result<(u32, usize), EngineError> {
    let store_err = |e: StoreError| EngineError::Store(e.to_string());
    if !store.has_pages() {
        return Err(EngineError::Config(
            "--recrawl needs a crawl to fetch again, and this data directory holds no pages yet \
             (start it without --recrawl)"
                .into(),
        ));
    }
    let queued = frontier.counts().map_err(store_err)?.queued;
    if queued > 0 {
        return Err(EngineError::Config(format!(
            "--recrawl: this crawl still has {} URLs queued; run it to the end without \
             --recrawl first",
            queued
        )));
    }
    let mut chunk = Vec::new();
    let mut queued = 0;
    let mut failed = None;
    store
        .for_each_page(|page| {
            // Checks (resources, external URLs) are not asked again: a
            // recrawl pass is of pages, by their validators.
            if failed.is_some() || !had_content(&page.outcome) || page.kind.is_check() {
                return;
            }
            let Ok(url) = Url::parse(&page.url) else {
                return;
            };
            chunk.push(FrontierEntry {
                kind: page.kind,
                priority: priority(&url, page.depth),
                url: page.url,
                host: page.host,
                depth: page.depth,
                redirects: 0,
            });
            if chunk.len() == PUSH_CHUNK {
                match frontier.push(std::mem::take(&mut chunk)) {
                    Ok(n) => queued += n,
                    Err(e) => failed = Some(e),
                }
            }
        })
        .map_err(store_err)?;
    if let Some(e) = failed {
        return Err(store_err(e));
    }
    queued += frontier.push(chunk).map_err(store_err)?;
    let pass = store.start_recrawl_pass().map_err(store_err)?;
    Ok((pass, queued))
}

/// The recrawl pass the crawl in `store` is in (0: its first crawl).
pub fn current_pass(store: &Store) -> Result<u32, StoreError> {
    Ok(store.recrawl_pass())
}

/// A URL's last fetch: its validators, for a conditional request, and
/// its record, which a 304 refers to.
pub(crate) fn earlier_fetch(store: &Store, url: &str) -> Option<EarlierFetch> {
    let page = store.page(url).ok().flatten()?;
    let validators = (page.etag.is_some() || page.last_modified.is_some()).then_some(Validators {
        etag: page.etag,
        last_modified: page.last_modified,
    });
    Some(EarlierFetch {
        validators,
        warc: page.warc,
        bytes: page.bytes,
    })
}

/// A 304 has no body: the page is still what its last fetch stored.
pub fn keep_unchanged_page(store: &Store, record: &mut PageRecord) {
    let Ok(Some(previous)) = store.page(&record.url) else {
        return;
    };
    if matches!(previous.outcome, PageOutcome::Duplicate { .. }) {
        // Still the same body, so still a duplicate of the same page.
        record.outcome = previous.outcome;
    }
    record.title = previous.title;
    record.canonical = previous.canonical;
    record.links_dropped = previous.links_dropped;
    record.content_digest = previous.content_digest;
    record.bytes = previous.bytes;
    record.outlinks = previous.outlinks;
    record.links_found = previous.links_found;
    record.content_type = previous.content_type;
    record.simhash = previous.simhash;
    record.facts = previous.facts;
    // Values of the body kept, by the extractions in force when it was fetched.
    record.custom = previous.custom;
    // The meta robots is in the body kept; a 304 need not repeat headers.
    record.noindex = previous.noindex.or(record.noindex);
    // A 304 is archived as a revisit without a body: the page is the earlier record.
    record.warc = previous.warc.or(record.warc.take());
    record.etag = record.etag.take().or(previous.etag);
    record.last_modified = record.last_modified.take().or(previous.last_modified);
}
