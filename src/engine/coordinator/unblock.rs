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
//!
//! The removal is kept in the journal (`journal.rs`) with how far its walk
//! is applied, so a crawl killed during it resumes the walk at boot. A chunk
//! of once-queued URLs is recorded before it is queued: after a crash, its
//! copies already back in the frontier are taken out first (recorded as
//! blocked again), then it is applied again, so no URL is queued twice.

use std::collections::{HashMap, HashSet};

use tokio::sync::mpsc;
use url::Url;

use super::journal::{PendingUnblock, Stored, WalkPosition};
use super::results::record_for;
use super::Coordinator;
use crate::engine::control::CommandId;
use crate::engine::frontier::FrontierEntry;
use crate::engine::prioritize::priority;
use crate::engine::rules::describe;
use crate::engine::store::StoreError;
use crate::engine::telemetry::Level;
use walk::{blocked_by, walk};

/// URLs per chunk: what one loop turn queues again (about 10 ms of store
/// writes; fetch results are served first).
const CHUNK: usize = 256;
/// Records the walk reads between checks that the crawl still listens.
const CHECK_EVERY: usize = 4096;
/// Chunks the walk may be ahead of the loop.
const CHUNKS_AHEAD: usize = 16;

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
        /// Where the walk found them (see [`phase`]).
        phase: usize,
        urls: Vec<Stored>,
    },
    Done {
        rule_id: u64,
        result: Result<(), StoreError>,
    },
}

/// A removal whose blocked URLs are still coming back.
struct Pending {
    /// None: resumed after a restart, answered in the log.
    answer_to: Option<CommandId>,
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
        let spec = self
            .rules
            .views()
            .into_iter()
            .find(|r| r.id == rule_id)
            .ok_or_else(|| format!("no rule #{rule_id}"))?
            .spec;
        let op = PendingUnblock {
            host: spec.host.clone(),
            text: format!("rule #{rule_id} removed ({})", describe(&spec)),
            returned: 0,
            position: WalkPosition::default(),
            in_flight: None,
        };
        // Recorded first: a crash after the removal still returns its URLs.
        self.journal.put_unblock(rule_id, op.clone()).map_err(|e| {
            format!("rule #{rule_id} not removed: recording the removal failed: {e}")
        })?;
        if let Err(e) = self.rules.remove(rule_id) {
            self.end_unblock_record(rule_id);
            return Err(e);
        }
        self.forget_rule_in_sweeps(rule_id);
        self.start_walk(Some(answer_to), rule_id, op)
    }

    /// Resumes the removals an earlier run left unfinished (logged when done).
    pub(super) fn resume_removals(&mut self, left: Vec<(u64, PendingUnblock)>) {
        for (rule_id, mut op) in left {
            self.outbox.log(
                Level::Info,
                format!(
                    "{}: returning its blocked URLs, resumed after a restart",
                    op.text
                ),
            );
            if let Some(chunk) = op.in_flight.take() {
                match self.redo_chunk(rule_id, chunk) {
                    Ok(n) => op.returned += n,
                    Err(e) => {
                        self.storage_failed("returning a removed rule's blocked URLs", e);
                        continue;
                    }
                }
                if let Err(e) = self.journal.put_unblock(rule_id, op.clone()) {
                    self.storage_failed("recording a rule removal's progress", e);
                }
            }
            if let Err(e) = self.start_walk(None, rule_id, op) {
                self.outbox.log(Level::Error, e);
            }
        }
    }

    /// Starts (or resumes at `op.position`) the walk of removal `rule_id`.
    fn start_walk(
        &mut self,
        answer_to: Option<CommandId>,
        rule_id: u64,
        op: PendingUnblock,
    ) -> Result<(), String> {
        let prefixes = match &op.host {
            Some(host) => vec![format!("http://{host}/"), format!("https://{host}/")],
            None => vec![String::new()],
        };
        let (store, tx) = (self.store.clone(), self.returns.tx.clone());
        let start = op.position.clone();
        std::thread::Builder::new()
            .name(format!("unblock-{rule_id}"))
            .spawn(move || walk(&store, rule_id, &prefixes, &start, &tx))
            .map_err(|e| {
                format!("rule #{rule_id} removed, but the URLs it blocked were not returned: {e}")
            })?;
        self.returns.pending.insert(
            rule_id,
            Pending {
                answer_to,
                text: op.text,
                returned: op.returned,
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
                phase,
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
                let outcome = self.apply_chunk(rule_id, found, phase, urls);
                let Some(pending) = self.returns.pending.get_mut(&rule_id) else {
                    return;
                };
                match outcome {
                    Ok(n) => pending.returned += n,
                    Err(e) => pending.failed = Some(e),
                }
            }
            Walked::Done { rule_id, result } => self.finish_removal(rule_id, result),
        }
    }

    /// Queues one chunk again, recording it in the journal before (once-queued
    /// URLs) and the walk's position after.
    fn apply_chunk(
        &mut self,
        rule_id: u64,
        found: Found,
        phase: usize,
        urls: Vec<Stored>,
    ) -> Result<u64, StoreError> {
        let Some(mut op) = self.journal.unblock(rule_id).cloned() else {
            return Ok(0);
        };
        op.position = WalkPosition {
            phase,
            after: urls.last().map(|(url, _, _)| url.clone()),
        };
        if found == Found::Blocked {
            op.in_flight = Some(urls.clone());
            self.journal.put_unblock(rule_id, op.clone())?;
        }
        let n = self.requeue(found, urls)?;
        op.returned += n;
        op.in_flight = None;
        self.journal.put_unblock(rule_id, op)?;
        Ok(n)
    }

    /// A chunk of once-queued URLs that was being queued when the crawl
    /// stopped: the copies that made it into the frontier are taken out
    /// (recorded as blocked again), then those still blocked are queued.
    fn redo_chunk(&mut self, rule_id: u64, chunk: Vec<Stored>) -> Result<u64, StoreError> {
        let urls: HashSet<&str> = chunk.iter().map(|(url, _, _)| url.as_str()).collect();
        let hosts: HashSet<&str> = chunk.iter().map(|(_, host, _)| host.as_str()).collect();
        let mut outcome = None;
        for (url, _, _) in &chunk {
            let page = self.store.page(url)?;
            if let Some(p) = page.filter(|p| blocked_by(&p.outcome, rule_id)) {
                outcome = Some(p.outcome);
                break;
            }
        }
        // None still blocked: every URL of the chunk was fetched meanwhile.
        let Some(outcome) = outcome else {
            return Ok(0);
        };
        for host in hosts {
            self.frontier.remove_matching(
                Some(host),
                &|e| urls.contains(e.url.as_str()),
                &|e| record_for(e, outcome.clone()),
            )?;
        }
        let mut still_blocked = Vec::new();
        for stored in chunk {
            let page = self.store.page(&stored.0)?;
            if page.is_some_and(|p| blocked_by(&p.outcome, rule_id)) {
                still_blocked.push(stored);
            }
        }
        self.requeue(Found::Blocked, still_blocked)
    }

    /// Answers removal `rule_id` once its walk is done.
    fn finish_removal(&mut self, rule_id: u64, result: Result<(), StoreError>) {
        let Some(p) = self.returns.pending.remove(&rule_id) else {
            return;
        };
        let answer = match p.failed.map_or(result, Err) {
            Ok(()) => {
                self.end_unblock_record(rule_id);
                Ok(format!(
                    "{}: {} blocked URL(s) returned to the queue",
                    p.text, p.returned
                ))
            }
            Err(e) => {
                let answer = format!(
                    "{}, but returning the URLs it blocked failed after {}: {e}",
                    p.text, p.returned
                );
                self.storage_failed("returning a removed rule's blocked URLs", e);
                Err(answer)
            }
        };
        self.reply(p.answer_to, answer);
    }

    fn end_unblock_record(&mut self, rule_id: u64) {
        if let Err(e) = self.journal.end_unblock(rule_id) {
            self.storage_failed("recording the end of a rule removal", e);
        }
    }

    /// The crawl ended during a walk: its removal is answered with what came
    /// back; the rest stays in the journal, to come back after a restart.
    pub(super) fn end_removals(&mut self) {
        // The walks stop at their next check and let go of the store.
        self.returns.rx.close();
        for (_, p) in std::mem::take(&mut self.returns.pending) {
            let answer = format!(
                "{}: {} blocked URL(s) returned to the queue before the crawl stopped; the rest come back on restart",
                p.text, p.returned
            );
            self.reply(p.answer_to, Ok(answer));
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

#[path = "unblock_walk.rs"]
mod walk;

/// A frontier entry for a stored `(url, host, depth)`.
fn entry((url, host, depth): &Stored) -> Option<FrontierEntry> {
    let parsed = Url::parse(url).ok()?;
    Some(FrontierEntry {
        priority: priority(&parsed, *depth),
        url: url.clone(),
        host: host.clone(),
        depth: *depth,
        redirects: 0,
        kind: crate::engine::store::UrlKind::Page,
    })
}

#[cfg(test)]
#[path = "unblock_tests.rs"]
mod tests;
