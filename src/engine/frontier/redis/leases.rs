//! Handing out URLs: choosing and claiming a host, taking its head, ending
//! leases, and queueing (a host new to the crawl is leased to its pusher).

use tokio::time::Instant;

use super::conn::parse_score;
use super::outage::{LeaseEnd, Write};
use super::{level_from_score, Local, RedisFrontier, CLAIM_TRIES, NEVER, TAKE_BATCH};
use crate::engine::control::HostKey;
use crate::engine::frontier::entry::{decode, level_of};
use crate::engine::frontier::schedule::LEVEL_WEIGHTS;
use crate::engine::frontier::{Completion, FrontierEntry, Hold, Lease};
use crate::engine::store::StoreError;
use crate::engine::telemetry::PRIORITY_LEVELS;

impl RedisFrontier {
    pub(super) fn max_of(&self, h: &Local) -> usize {
        h.max_in_flight.unwrap_or(self.default_max_in_flight)
    }

    /// Held hosts that may hand out one more URL (at `now`, if given).
    fn open_hosts(&self, now: Option<Instant>) -> impl Iterator<Item = (&HostKey, &Local)> {
        self.held_hosts().filter(move |(_, h)| {
            h.holds == 0
                && h.requests() < self.max_of(h)
                && now.is_none_or(|now| h.not_before.is_none_or(|t| t <= now))
        })
    }

    fn since(&self, h: &Local) -> i128 {
        h.not_before.map_or(NEVER, |t| self.clock.score(t))
    }

    /// Held hosts whose next URL the claim script takes, ready now:
    /// `(level, since, host)`.
    pub(super) fn local_candidates(&self, now: Instant) -> Vec<(usize, i128, HostKey)> {
        self.open_hosts(Some(now))
            .filter(|(_, h)| h.batch.is_empty() && h.batch_out.is_empty())
            .filter_map(|(k, h)| Some((h.head_level?, self.since(h), k.clone())))
            .collect()
    }

    /// Held hosts with a batch to serve, ready now: `(level, since, host)`.
    fn batch_candidates(&self, now: Instant) -> impl Iterator<Item = (usize, i128, &HostKey)> {
        self.open_hosts(Some(now))
            .filter_map(|(k, h)| Some((h.batch.front()?.1, self.since(h), k)))
    }

    /// When the held hosts with a batch to serve may next be fetched (scores).
    pub(super) fn batch_due(&self) -> impl Iterator<Item = i128> + '_ {
        self.open_hosts(None)
            .filter(|(_, h)| !h.batch.is_empty())
            .map(|(_, h)| self.since(h))
    }

    /// Serves the next URL of a held host's batch, the host chosen as the
    /// claim script chooses, without a round trip.
    fn serve_batch(&mut self, now: Instant) -> Result<Option<Lease>, StoreError> {
        if self.link.down().is_some() || !self.held.is_empty() {
            // The leases may lapse unseen during an outage: nothing is served.
            return Ok(None);
        }
        let r = self.rng.f64();
        let Some(host) = pick(self.batch_candidates(now), r).cloned() else {
            return Ok(None);
        };
        let Some(h) = self.hosts.get_mut(&host) else {
            return Ok(None);
        };
        let Some((member, _)) = h.batch.front() else {
            return Ok(None);
        };
        let entry = decode(member)?;
        let (member, _) = h.batch.pop_front().unwrap_or_default();
        h.in_flight += 1;
        h.batch_out.insert(member.clone());
        *self.out.entry(member.clone()).or_default() += 1;
        Ok(Some(Lease { entry, key: member }))
    }

    pub(super) fn try_next_ready(&mut self, now: Instant) -> Result<Option<Lease>, StoreError> {
        self.last_now = Some(now);
        self.upkeep()?;
        if let Some(lease) = self.serve_batch(now)? {
            return Ok(Some(lease));
        }
        // Given back by the first claim, in the same round trip.
        let mut idle = self.idle_hosts();
        for _ in 0..CLAIM_TRIES {
            let candidates = self.local_candidates(now);
            let mut inv = self.scripts.claim.prepare_invoke();
            inv.arg(&self.prefix)
                .arg(&self.worker)
                .arg(self.ttl_ms())
                .arg(self.clock.score(now).to_string())
                .arg(self.rng.f64().to_string());
            for weight in LEVEL_WEIGHTS {
                inv.arg(weight);
            }
            // Batches serve hosts fetched one URL at a time (see `claimed`).
            let batch = if self.default_max_in_flight == 1 {
                TAKE_BATCH
            } else {
                1
            };
            inv.arg(batch)
                .arg(idle.len())
                .arg(self.affinity.as_nanos().to_string());
            for host in &idle {
                inv.arg(host);
            }
            for (level, since, host) in candidates.iter().filter(|c| !idle.contains(&c.2)) {
                inv.arg(level).arg(since.to_string()).arg(host);
            }
            let out = self.link.run("choosing the next host", &inv)?;
            self.forget_leases(std::mem::take(&mut idle));
            if out.is_empty() {
                return Ok(None);
            }
            if let Some(lease) = self.claimed(&out)? {
                return Ok(Some(lease));
            }
        }
        Ok(None)
    }

    /// Reads a claim's answer: the lease taken, if the host may be fetched now.
    fn claimed(&mut self, out: &[Vec<u8>]) -> Result<Option<Lease>, StoreError> {
        let (verdict, host) = match out {
            [v, host, ..] => (v.as_slice(), String::from_utf8_lossy(host).into_owned()),
            _ => return Ok(None),
        };
        if verdict == b"lost" {
            self.forget_leases(vec![host]);
            return Ok(None);
        }
        let fetch_now = verdict != b"claimed" || self.adopt_claimed(&host);
        let one_at_a_time = self.hosts.get(&host).is_none_or(|h| self.max_of(h) == 1);
        let h = self.hosts.entry(host.clone()).or_default();
        let [_, _, member, _score, next, breaker, batch @ ..] = out else {
            h.head_level = None;
            return Ok(None);
        };
        h.in_flight += 1;
        h.head_level = parse_score(next).map(level_from_score);
        h.batch = batch
            .chunks_exact(2)
            .map(|m| (m[0].clone(), parse_score(&m[1]).map_or(0, level_from_score)))
            .collect();
        if !one_at_a_time {
            // Such a host takes each URL through the script, which never hands
            // out one served from a batch.
            h.drop_batch();
        }
        *self.out.entry(member.clone()).or_default() += 1;
        let lease = Lease {
            entry: decode(member)?,
            key: member.clone(),
        };
        if fetch_now {
            if !breaker.is_empty() {
                self.breakers_seen.note_claimed(&host, breaker);
            }
            return Ok(Some(lease));
        }
        // New to this worker: its robots.txt comes first, the URL goes back
        // (and the batch with it).
        self.end_lease(&lease, "release", &[])?;
        Ok(None)
    }

    /// A host just leased: `false` if it must wait (robots.txt) first.
    fn adopt_claimed(&mut self, host: &str) -> bool {
        let initial = self.initial_holds;
        let known = self.hosts.contains_key(host);
        self.leased.insert(host.to_string());
        let h = self.hosts.entry(host.to_string()).or_default();
        if !known || h.holds & Hold::Robots.bit() != 0 {
            h.holds |= initial;
            self.new_hosts.push(host.to_string());
        }
        h.holds == 0
    }

    /// Ends a lease in Redis; `outlinks` only for `complete`.
    pub(super) fn end_lease(
        &mut self,
        lease: &Lease,
        mode: &'static str,
        outlinks: &[FrontierEntry],
    ) -> Result<usize, StoreError> {
        let write = self.end_write(lease, mode, outlinks)?;
        let out = self.write(write)?;
        self.ended(lease, mode);
        // Held through an outage: written (and counted) when Redis answers.
        Ok(out.map_or(0, |out| self.note_pushed(&out)))
    }

    /// Completes a group of leases in one round trip (`complete_all`).
    pub(super) fn complete_leases(&mut self, done: &[Completion]) -> Result<usize, StoreError> {
        let mut writes = Vec::with_capacity(done.len());
        let mut failed = None;
        for c in done {
            match self.end_write(&c.lease, "complete", &c.outlinks) {
                Ok(write) => writes.push(write),
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        let outs = self.write_all(writes)?;
        let mut queued = 0;
        for (c, out) in done.iter().zip(outs) {
            self.ended(&c.lease, "complete");
            self.pages += 1;
            queued += out.map_or(0, |out| self.note_pushed(&out));
        }
        failed.map_or(Ok(queued), Err)
    }

    /// The write that ends a lease this worker has out.
    fn end_write(
        &mut self,
        lease: &Lease,
        mode: &'static str,
        outlinks: &[FrontierEntry],
    ) -> Result<Write, StoreError> {
        let host = &lease.entry.host;
        // This worker's own record decides whether the lease is out: Redis
        // may have requeued the URL meanwhile (an expired lease).
        match self.out.get_mut(&lease.key) {
            Some(n) if *n > 1 => *n -= 1,
            Some(_) => {
                self.out.remove(&lease.key);
            }
            None => {
                return Err(StoreError::UnknownLease {
                    url: lease.entry.url.clone(),
                })
            }
        }
        let not_before = self.hosts.get_mut(host).and_then(|h| h.pending_nb.take());
        Ok(Write::EndLease {
            host: host.clone(),
            member: lease.key.clone(),
            mode: LeaseEnd(mode),
            outlinks: outlinks.to_vec(),
            not_before,
        })
    }

    /// What this worker knows of the host once a lease of it ended.
    fn ended(&mut self, lease: &Lease, mode: &'static str) {
        if let Some(h) = self.hosts.get_mut(&lease.entry.host) {
            h.in_flight = h.in_flight.saturating_sub(1);
            h.answered.remove(&lease.key);
            h.batch_out.remove(&lease.key);
            if mode != "complete" {
                // Ahead of the batch (release) or behind it (requeue): the
                // claim script takes the head again.
                h.drop_batch();
            }
            if mode == "release" {
                // The URL is the host's head again.
                h.head_level = Some(level_of(lease.entry.priority));
            }
        }
    }

    /// Reads a push's answer: how many were queued, and the hosts leased to
    /// this worker because they are new to the crawl.
    pub(super) fn note_pushed(&mut self, out: &[Vec<u8>]) -> usize {
        let added = out
            .first()
            .and_then(|n| std::str::from_utf8(n).ok()?.parse().ok())
            .unwrap_or(0);
        for host in out.iter().skip(1) {
            let host = String::from_utf8_lossy(host).into_owned();
            self.adopt_claimed(&host);
        }
        added
    }

    /// The seen check, claiming the new URLs (by fingerprint); `page_host`
    /// (else empty): the host of the page they were found on, fetched under
    /// this worker's lease.
    pub(super) fn claim_links(
        &mut self,
        fingerprints: &[u64],
        page_host: &str,
    ) -> Result<Vec<bool>, StoreError> {
        if fingerprints.is_empty() {
            return Ok(Vec::new());
        }
        let mut inv = self.scripts.claim_unseen.prepare_invoke();
        inv.arg(&self.prefix).arg(&self.worker).arg(page_host);
        for &fingerprint in fingerprints {
            inv.arg(fingerprint);
        }
        match self.link.run("checking the seen set", &inv) {
            Ok(out) => Ok(out.iter().map(|new| new.as_slice() == b"1").collect()),
            // Out of reach: every link counts as new for now. The page's lease
            // end, held until Redis answers, queues only those still unseen
            // (`push_entries`, checked), so the page keeps its links.
            Err(e) if e.is_unreachable() => Ok(vec![true; fingerprints.len()]),
            Err(e) => Err(e),
        }
    }

    pub(super) fn push_entries(&mut self, entries: &[FrontierEntry]) -> Result<usize, StoreError> {
        if entries.is_empty() {
            return Ok(0);
        }
        let out = self.write(Write::Push(entries.to_vec()))?;
        Ok(out.map_or(0, |out| self.note_pushed(&out)))
    }

    pub(super) fn set_shared_hold(
        &mut self,
        host: &str,
        bits: u8,
        on: bool,
    ) -> Result<(), StoreError> {
        let (set, clear) = if on { (bits, 0) } else { (0, bits) };
        self.write(Write::Hold {
            host: host.to_string(),
            set,
            clear,
        })?;
        Ok(())
    }
}

/// The host the claim script would pick among `candidates` (`(level, since,
/// host)`): a level by weight (`r` in [0, 1)), then the host waiting longest.
fn pick<'a>(
    candidates: impl Iterator<Item = (usize, i128, &'a HostKey)>,
    r: f64,
) -> Option<&'a HostKey> {
    let mut best: [Option<(i128, &HostKey)>; PRIORITY_LEVELS] = [None; PRIORITY_LEVELS];
    for (level, since, host) in candidates {
        let slot = &mut best[level.min(PRIORITY_LEVELS - 1)];
        if slot.is_none_or(|b| (since, host) < b) {
            *slot = Some((since, host));
        }
    }
    let total: u32 = LEVEL_WEIGHTS
        .iter()
        .zip(&best)
        .filter(|(_, b)| b.is_some())
        .map(|(w, _)| w)
        .sum();
    let mut x = r * f64::from(total);
    let mut picked = None;
    for (weight, b) in LEVEL_WEIGHTS.iter().zip(best) {
        if let Some(b) = b {
            picked = Some(b);
            x -= f64::from(*weight);
            if x < 0.0 {
                break;
            }
        }
    }
    picked.map(|(_, host)| host)
}
