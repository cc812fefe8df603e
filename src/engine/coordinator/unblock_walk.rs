//! The store walk of a rule removal, on its own thread: what the removed
//! rule kept out or blocked, in URL order, sent to the loop in chunks.

use tokio::sync::mpsc;

use super::{Found, Walked, CHECK_EVERY, CHUNK};
use crate::engine::coordinator::journal::{Stored, WalkPosition};
use crate::engine::store::{FilterReason, PageOutcome, Store, StoreError};

/// The walk goes through, per prefix, the `filtered` tree then the page
/// records, in URL order; a phase numbers one of these.
pub(super) fn phase(prefix_index: usize, found: Found) -> usize {
    2 * prefix_index + usize::from(found == Found::Blocked)
}

/// Reads what rule `rule_id` blocked under `prefixes`, after `start`, and
/// sends it in chunks; stops early once the crawl loop no longer listens.
pub(super) fn walk(
    store: &Store,
    rule_id: u64,
    prefixes: &[String],
    start: &WalkPosition,
    tx: &mpsc::Sender<Walked>,
) {
    let result = walk_trees(store, rule_id, prefixes, start, tx);
    let _ = tx.blocking_send(Walked::Done { rule_id, result });
}

fn walk_trees(
    store: &Store,
    rule_id: u64,
    prefixes: &[String],
    start: &WalkPosition,
    tx: &mpsc::Sender<Walked>,
) -> Result<(), StoreError> {
    let mut out = Chunker::new(rule_id, tx);
    // Whether a URL in `phase` was applied before the restart.
    let done = |phase: usize, url: &str| {
        phase < start.phase
            || (phase == start.phase && start.after.as_deref().is_some_and(|a| url <= a))
    };
    for (i, prefix) in prefixes.iter().enumerate() {
        out.phase = phase(i, Found::Filtered);
        for (read, filtered) in store.filtered_urls(prefix).enumerate() {
            if read % CHECK_EVERY == 0 && tx.is_closed() {
                return Ok(());
            }
            let filtered = filtered?;
            if filtered.reason == FilterReason::Rule(rule_id) && !done(out.phase, &filtered.url) {
                out.add((filtered.url, filtered.host, filtered.depth));
            }
        }
        out.send();
        out.phase = phase(i, Found::Blocked);
        for (read, page) in store.page_records(prefix).enumerate() {
            if read % CHECK_EVERY == 0 && tx.is_closed() {
                return Ok(());
            }
            let page = match page {
                Ok(page) => page,
                Err(StoreError::Corrupt { .. }) => continue,
                Err(e) => return Err(e),
            };
            if blocked_by(&page.outcome, rule_id) && !done(out.phase, &page.url) {
                out.add((page.url, page.host, page.depth));
            }
        }
        out.send();
    }
    Ok(())
}

/// Gathers a walk's finds into chunks of [`CHUNK`], one phase at a time.
struct Chunker<'a> {
    rule_id: u64,
    tx: &'a mpsc::Sender<Walked>,
    phase: usize,
    urls: Vec<Stored>,
}

impl<'a> Chunker<'a> {
    fn new(rule_id: u64, tx: &'a mpsc::Sender<Walked>) -> Self {
        Chunker {
            rule_id,
            tx,
            phase: 0,
            urls: Vec::new(),
        }
    }

    fn add(&mut self, url: Stored) {
        self.urls.push(url);
        if self.urls.len() >= CHUNK {
            self.send();
        }
    }

    fn send(&mut self) {
        let urls = std::mem::take(&mut self.urls);
        if !urls.is_empty() {
            let found = if self.phase % 2 == 0 {
                Found::Filtered
            } else {
                Found::Blocked
            };
            // A closed channel: the crawl ended, and the walk stops at its next check.
            let _ = self.tx.blocking_send(Walked::Urls {
                rule_id: self.rule_id,
                found,
                phase: self.phase,
                urls,
            });
        }
    }
}

pub(super) fn blocked_by(outcome: &PageOutcome, rule_id: u64) -> bool {
    matches!(outcome, PageOutcome::Blocked { rule_id: id, .. } if *id == rule_id)
}
