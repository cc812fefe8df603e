//! Writes that wait while Redis is out of reach. A write that needs no
//! answer (a lease's end with the page's links, a host's next fetch time, a
//! hold, a push, a park, an alert's decision, a host's breaker) is held in
//! order and written when the server answers again, before anything else;
//! calls that need an answer fail at once with [`StoreError::Unreachable`],
//! and the crawl pauses. Only work already in flight produces writes
//! meanwhile, so what is held is bounded by it.
//!
//! A held write may have been applied before its connection failed (the
//! answer was lost): replayed, it changes nothing (`END_LEASE` finds the URL
//! no longer in flight, the other scripts are idempotent). Leases may have
//! expired meanwhile:
//! `END_LEASE` then takes a completed URL out of the queue the reaper put it
//! back in, and queues the page's links checked against the seen set.

use std::collections::VecDeque;

use redis::ScriptInvocation;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::scripts::Scripts;
use super::{push_args, RedisFrontier};
use crate::engine::control::HostKey;
use crate::engine::frontier::FrontierEntry;
use crate::engine::store::{StoreError, Tree};

/// Where held writes wait in the worker's store, so a worker stopped or
/// killed during an outage makes them when it starts again.
const HELD_KEY: &[u8] = b"redis-held-writes";

/// A write to the shared frontier that needs no answer.
#[derive(Debug, Serialize, Deserialize)]
pub(super) enum Write {
    /// `complete`, `release` or `requeue` of a lease; `outlinks` for complete.
    EndLease {
        host: HostKey,
        member: Vec<u8>,
        mode: LeaseEnd,
        outlinks: Vec<FrontierEntry>,
        /// The host's not-before set while this lease was out (see
        /// `set_not_before`), written in the same step.
        not_before: Option<String>,
    },
    /// A host's next allowed fetch (score on the crawl's clock); `give_back`:
    /// the worker gives the host's lease back in the same step.
    NotBefore {
        host: HostKey,
        score: String,
        give_back: bool,
    },
    /// Shared hold bits set and cleared.
    Hold { host: HostKey, set: u8, clear: u8 },
    /// URLs queued.
    Push(Vec<FrontierEntry>),
    /// New URLs parked under an alert's key.
    Park {
        key: String,
        entries: Vec<FrontierEntry>,
    },
    /// The decision on a trap alert (JSON), for every worker.
    DecideAlert { id: u64, decision: String },
    /// A host's breaker (JSON), for every worker.
    ShareBreaker { host: HostKey, breaker: String },
}

/// How a lease ends, as `END_LEASE` names it: complete, release or requeue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct LeaseEnd(pub &'static str);

impl Serialize for LeaseEnd {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.0)
    }
}

impl<'de> Deserialize<'de> for LeaseEnd {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mode = String::deserialize(d)?;
        ["complete", "release", "requeue"]
            .into_iter()
            .find(|known| *known == mode)
            .map(LeaseEnd)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown lease end {mode:?}")))
    }
}

impl RedisFrontier {
    /// Writes now, or holds the write while the server is out of reach (or
    /// earlier writes wait: they go first). `Some(answer)` if it was written.
    pub(super) fn write(&mut self, write: Write) -> Result<Option<Vec<Vec<u8>>>, StoreError> {
        if self.link.down().is_some() || !self.held.is_empty() {
            return self.hold([write]).map(|()| None);
        }
        match self.apply(&write) {
            Ok(out) => Ok(Some(out)),
            Err(e) if e.is_unreachable() => {
                tracing::warn!("{e}; holding writes until it answers");
                self.hold([write]).map(|()| None)
            }
            Err(e) => Err(e),
        }
    }

    /// Holds `writes` after those held already, in memory and in the store.
    fn hold(&mut self, writes: impl IntoIterator<Item = Write>) -> Result<(), StoreError> {
        self.held.extend(writes);
        self.save_held()
    }

    /// Keeps the held writes in the worker's store (durably: they stand for
    /// pages already recorded there).
    fn save_held(&self) -> Result<(), StoreError> {
        if self.held.is_empty() {
            self.store.remove(Tree::Meta, HELD_KEY)?;
        } else {
            self.store.put(Tree::Meta, HELD_KEY, &self.held)?;
        }
        self.store.flush()
    }

    /// The writes a previous run of this worker held when it stopped.
    pub(super) fn load_held(&mut self) -> Result<(), StoreError> {
        let saved: Option<VecDeque<Write>> = self.store.get(Tree::Meta, HELD_KEY)?;
        if let Some(saved) = saved.filter(|s| !s.is_empty()) {
            tracing::info!(
                "{} write(s) to Redis held by this worker's last run are made now",
                saved.len()
            );
            self.held = saved;
        }
        Ok(())
    }

    /// Why the server is out of reach, while it is.
    pub(super) fn unreachable(&self) -> Option<StoreError> {
        self.link.down().map(|reason| StoreError::Unreachable {
            server: self.link.server().to_string(),
            reason: reason.to_string(),
        })
    }

    /// Connects again, writes what was held (in order), then renews this
    /// worker's leases and reaps expired ones; returns how many writes were
    /// held. On failure what is left stays held.
    pub(super) fn reconnect_and_replay(&mut self) -> Result<usize, StoreError> {
        self.link.reconnect()?;
        let written = self.replay_held()?;
        // Leases lost meanwhile are found now, before this worker takes work.
        self.last_upkeep = None;
        self.upkeep()?;
        Ok(written)
    }

    /// Makes the held writes, in order; what fails stays held.
    pub(super) fn replay_held(&mut self) -> Result<usize, StoreError> {
        let mut written = 0;
        let mut failed = None;
        while let Some(write) = self.held.pop_front() {
            match self.apply(&write) {
                Ok(out) => {
                    if matches!(write, Write::EndLease { .. } | Write::Push(_)) {
                        self.note_pushed(&out);
                    }
                    written += 1;
                }
                Err(e) => {
                    self.held.push_front(write);
                    failed = Some(e);
                    break;
                }
            }
        }
        if written > 0 {
            self.save_held()?;
        }
        failed.map_or(Ok(written), Err)
    }

    /// Writes held, waiting for the server.
    #[cfg(test)]
    pub(super) fn held_writes(&self) -> usize {
        self.held.len()
    }

    fn apply(&mut self, write: &Write) -> Result<Vec<Vec<u8>>, StoreError> {
        let ttl = self.ttl_ms();
        let (op, inv) = invocation(&self.scripts, &self.prefix, &self.worker, &ttl, write);
        self.link.run(op, &inv)
    }

    /// Writes several in one round trip (a pipeline), or holds them all as
    /// `write` would; one answer each, `None` if held.
    pub(super) fn write_all(
        &mut self,
        writes: Vec<Write>,
    ) -> Result<Vec<Option<Vec<Vec<u8>>>>, StoreError> {
        if writes.len() < 2 || self.link.down().is_some() || !self.held.is_empty() {
            return writes.into_iter().map(|w| self.write(w)).collect();
        }
        let ttl = self.ttl_ms();
        let invs: Vec<_> = writes
            .iter()
            .map(|w| invocation(&self.scripts, &self.prefix, &self.worker, &ttl, w).1)
            .collect();
        match self.link.run_all("ending leases", &invs) {
            Ok(outs) => Ok(outs.into_iter().map(Some).collect()),
            Err(e) if e.is_unreachable() => {
                // Some may have been applied: replayed, they change nothing.
                tracing::warn!("{e}; holding writes until it answers");
                let n = writes.len();
                self.hold(writes)?;
                Ok(vec![None; n])
            }
            Err(e) => Err(e),
        }
    }
}

/// The script call that makes `write`, and what it does (for errors).
fn invocation<'a>(
    scripts: &'a Scripts,
    prefix: &str,
    worker: &str,
    ttl: &str,
    write: &Write,
) -> (&'static str, ScriptInvocation<'a>) {
    match write {
        Write::EndLease {
            host,
            member,
            mode,
            outlinks,
            not_before,
        } => {
            let mut inv = scripts.end_lease.prepare_invoke();
            inv.arg(prefix)
                .arg(worker)
                .arg(ttl)
                .arg(host)
                .arg(member)
                .arg(mode.0)
                .arg(not_before.as_deref().unwrap_or(""));
            push_args(&mut inv, outlinks);
            ("ending a lease", inv)
        }
        Write::NotBefore {
            host,
            score,
            give_back,
        } => {
            let mut inv = scripts.not_before.prepare_invoke();
            inv.arg(prefix)
                .arg(host)
                .arg(score)
                .arg(if *give_back { worker } else { "" });
            ("setting a host's next fetch time", inv)
        }
        Write::Hold { host, set, clear } => {
            let mut inv = scripts.hold.prepare_invoke();
            inv.arg(prefix).arg(host).arg(*set).arg(*clear);
            ("holding a host", inv)
        }
        Write::Push(entries) => {
            let mut inv = scripts.push.prepare_invoke();
            inv.arg(prefix).arg(worker).arg(ttl);
            push_args(&mut inv, entries);
            ("queueing URLs", inv)
        }
        Write::Park { key, entries } => {
            let mut inv = scripts.park_new.prepare_invoke();
            inv.arg(prefix)
                .arg(key)
                .arg(format!("{prefix}claims:{worker}"));
            push_args(&mut inv, entries);
            ("parking URLs", inv)
        }
        Write::DecideAlert { id, decision } => {
            let mut inv = scripts.decide_alert.prepare_invoke();
            inv.arg(prefix).arg(*id).arg(decision);
            ("sharing the decision on an alert", inv)
        }
        Write::ShareBreaker { host, breaker } => {
            let mut inv = scripts.share_breaker.prepare_invoke();
            inv.arg(prefix).arg(host).arg(breaker);
            ("sharing a host's breaker", inv)
        }
    }
}
