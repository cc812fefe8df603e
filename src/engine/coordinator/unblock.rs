//! Removing a rule returns what it blocked: links it kept out when they were
//! found (the `filtered` tree, never claimed as seen) go through the seen
//! check like new links; queued or parked URLs it removed (page records
//! `Blocked` by it, already seen) are queued again as they were. Neither can
//! be fetched twice: the first kind is claimed once, the second was never
//! fetched and is no longer in the frontier.
//!
//! A rule with no host can have blocked URLs anywhere in a big crawl, so the
//! store walk runs on its own thread and hands its finds to the loop in
//! chunks of [`CHUNK`]; the loop applies one chunk per turn and answers the
//! command, with the count, once the walk is done.

use std::collections::HashMap;

use tokio::sync::mpsc;
use url::Url;

use super::Coordinator;
use crate::engine::control::CommandId;
use crate::engine::frontier::FrontierEntry;
use crate::engine::prioritize::priority;
use crate::engine::rules::describe;
use crate::engine::store::{FilterReason, PageOutcome, PageRecord, Store, StoreError};

/// URLs per chunk: what one loop turn queues again (about 10 ms of sled
/// writes; fetch results are served first).
const CHUNK: usize = 256;
/// Records the walk reads between checks that the crawl still listens.
const CHECK_EVERY: usize = 4096;
/// Chunks the walk may be ahead of the loop.
const CHUNKS_AHEAD: usize = 16;

/// A URL as stored: `(url, host, depth)`.
type Stored = (String, String, u32);

/// Where the walk found a URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Found {
    /// A link the rule kept out when it was found (never claimed as seen).
    Filtered,
    /// A queued or parked URL the rule removed (seen, never fetched).
    Blocked,
}

/// What a walk reports to the loop.
#[derive(Debug)]
pub(super) enum Walked {
    Urls {
        rule_id: u64,
        found: Found,
        urls: Vec<Stored>,
    },
    Done {
        rule_id: u64,
        result: Result<(), StoreError>,
    },
}

/// A removal whose blocked URLs are still coming back.
struct Pending {
    answer_to: CommandId,
    text: String,
    returned: u64,
    failed: Option<StoreError>,
}

/// Rule removals under way: the walks' channel and what each has returned.
pub(super) struct Returns {
    tx: mpsc::Sender<Walked>,
    rx: mpsc::Receiver<Walked>,
    pending: HashMap<u64, Pending>,
}

impl Default for Returns {
    fn default() -> Self {
        let (tx, rx) = mpsc::channel(CHUNKS_AHEAD);
        Returns {
            tx,
            rx,
            pending: HashMap::new(),
        }
    }
}

impl Returns {
    /// The next chunk or end of a walk.
    pub(super) async fn recv(&mut self) -> Option<Walked> {
        self.rx.recv().await
    }

    /// No removal is under way.
    pub(super) fn is_idle(&self) -> bool {
        self.pending.is_empty()
    }
}

impl Coordinator {
    /// Removes a rule and starts returning the URLs it blocked; the command
    /// is answered when they are back ([`Coordinator::apply_walked`]).
    pub(super) fn remove_rule(&mut self, answer_to: CommandId, rule_id: u64) -> Result<(), String> {
        let spec = self.rules.remove(rule_id)?;
        self.sweeps.forget_rule(rule_id);
        let prefixes = match &spec.host {
            Some(host) => vec![format!("http://{host}/"), format!("https://{host}/")],
            None => vec![String::new()],
        };
        let (store, tx) = (self.store.clone(), self.returns.tx.clone());
        std::thread::Builder::new()
            .name(format!("unblock-{rule_id}"))
            .spawn(move || walk(&store, rule_id, &prefixes, &tx))
            .map_err(|e| {
                format!("rule #{rule_id} removed, but the URLs it blocked were not returned: {e}")
            })?;
        let text = describe(&spec);
        self.returns.pending.insert(
            rule_id,
            Pending {
                answer_to,
                text: format!("rule #{rule_id} removed ({text})"),
                returned: 0,
                failed: None,
            },
        );
        Ok(())
    }

    /// Applies one chunk of a walk, or answers its removal when it is done.
    pub(super) fn apply_walked(&mut self, walked: Walked) {
        match walked {
            Walked::Urls {
                rule_id,
                found,
                urls,
            } => {
                let failed = self
                    .returns
                    .pending
                    .get(&rule_id)
                    .map(|p| p.failed.is_some());
                if failed != Some(false) {
                    return;
                }
                let outcome = self.requeue(found, urls);
                let Some(pending) = self.returns.pending.get_mut(&rule_id) else {
                    return;
                };
                match outcome {
                    Ok(n) => pending.returned += n,
                    Err(e) => pending.failed = Some(e),
                }
            }
            Walked::Done { rule_id, result } => {
                let Some(p) = self.returns.pending.remove(&rule_id) else {
                    return;
                };
                let answer = match p.failed.map_or(result, Err) {
                    Ok(()) => Ok(format!(
                        "{}: {} blocked URL(s) returned to the queue",
                        p.text, p.returned
                    )),
                    Err(e) => {
                        let answer = format!(
                            "{}, but returning the URLs it blocked failed after {}: {e}",
                            p.text, p.returned
                        );
                        self.storage_failed("returning a removed rule's blocked URLs", e);
                        Err(answer)
                    }
                };
                self.outbox.answer(p.answer_to, answer);
            }
        }
    }

    /// The crawl ended during a walk: its removal is answered with what came
    /// back; the rest stays recorded as blocked by the removed rule.
    pub(super) fn end_removals(&mut self) {
        // The walks stop at their next check and let go of the store.
        self.returns.rx.close();
        for (_, p) in std::mem::take(&mut self.returns.pending) {
            let answer = format!(
                "{}: {} blocked URL(s) returned to the queue before the crawl stopped",
                p.text, p.returned
            );
            self.outbox.answer(p.answer_to, Ok(answer));
        }
    }

    /// Queues `urls` again unless another rule blocks them; how many went back.
    fn requeue(&mut self, found: Found, mut urls: Vec<Stored>) -> Result<u64, StoreError> {
        urls.retain(|(url, host, _)| self.rules.matches(url, host).is_none());
        let entries: Vec<FrontierEntry> = match found {
            Found::Filtered => {
                let keys: Vec<&str> = urls.iter().map(|(url, _, _)| url.as_str()).collect();
                let fresh = self.frontier.claim_unseen(&keys)?;
                self.store.forget_filtered(&keys)?;
                urls.iter()
                    .zip(fresh)
                    .filter_map(|(link, fresh)| fresh.then(|| entry(link)).flatten())
                    .collect()
            }
            Found::Blocked => urls.iter().filter_map(entry).collect(),
        };
        let returned = entries.len() as u64;
        self.frontier.push(entries)?;
        Ok(returned)
    }
}

/// Reads what rule `rule_id` blocked under `prefixes` and sends it in chunks;
/// stops early once the crawl loop no longer listens.
fn walk(store: &Store, rule_id: u64, prefixes: &[String], tx: &mpsc::Sender<Walked>) {
    let result = walk_trees(store, rule_id, prefixes, tx);
    let _ = tx.blocking_send(Walked::Done { rule_id, result });
}

fn walk_trees(
    store: &Store,
    rule_id: u64,
    prefixes: &[String],
    tx: &mpsc::Sender<Walked>,
) -> Result<(), StoreError> {
    let mut out = Chunker::new(rule_id, tx);
    for prefix in prefixes {
        for (read, filtered) in store.filtered_urls(prefix).enumerate() {
            if read % CHECK_EVERY == 0 && tx.is_closed() {
                return Ok(());
            }
            let filtered = filtered?;
            if filtered.reason == FilterReason::Rule(rule_id) {
                out.add(
                    Found::Filtered,
                    (filtered.url, filtered.host, filtered.depth),
                );
            }
        }
        for (read, raw) in store.raw_page_records(prefix).enumerate() {
            if read % CHECK_EVERY == 0 && tx.is_closed() {
                return Ok(());
            }
            let Ok(page) = serde_json::from_slice::<PageRecord>(&raw?) else {
                continue;
            };
            if matches!(page.outcome, PageOutcome::Blocked { rule_id: id, .. } if id == rule_id) {
                out.add(Found::Blocked, (page.url, page.host, page.depth));
            }
        }
    }
    out.flush_all();
    Ok(())
}

/// Gathers a walk's finds into chunks of [`CHUNK`] per kind.
struct Chunker<'a> {
    rule_id: u64,
    tx: &'a mpsc::Sender<Walked>,
    filtered: Vec<Stored>,
    blocked: Vec<Stored>,
}

impl<'a> Chunker<'a> {
    fn new(rule_id: u64, tx: &'a mpsc::Sender<Walked>) -> Self {
        Chunker {
            rule_id,
            tx,
            filtered: Vec::new(),
            blocked: Vec::new(),
        }
    }

    fn add(&mut self, found: Found, url: Stored) {
        let list = match found {
            Found::Filtered => &mut self.filtered,
            Found::Blocked => &mut self.blocked,
        };
        list.push(url);
        if list.len() >= CHUNK {
            self.send(found);
        }
    }

    fn send(&mut self, found: Found) {
        let urls = std::mem::take(match found {
            Found::Filtered => &mut self.filtered,
            Found::Blocked => &mut self.blocked,
        });
        if !urls.is_empty() {
            // A closed channel: the crawl ended, and the walk stops at its next check.
            let _ = self.tx.blocking_send(Walked::Urls {
                rule_id: self.rule_id,
                found,
                urls,
            });
        }
    }

    fn flush_all(&mut self) {
        self.send(Found::Filtered);
        self.send(Found::Blocked);
    }
}

/// A frontier entry for a stored `(url, host, depth)`.
fn entry((url, host, depth): &Stored) -> Option<FrontierEntry> {
    let parsed = Url::parse(url).ok()?;
    Some(FrontierEntry {
        priority: priority(&parsed, *depth),
        url: url.clone(),
        host: host.clone(),
        depth: *depth,
        redirects: 0,
    })
}

#[cfg(test)]
#[path = "unblock_tests.rs"]
mod tests;
