//! [`FrontierStore`] for [`RedisFrontier`]: leases and settings here, the
//! bulk operations in `bulk`.

use tokio::time::Instant;

use super::conn::{first_members, parse_score, Link};
use super::outage::Write;
use super::reader::{self, RedisReader};
use super::{RedisFrontier, CLOSED, CLUSTER_POLL, SHARED_HOLDS};
use crate::engine::breaker::OpenBreaker;
use crate::engine::control::HostKey;
use crate::engine::frontier::api::{
    FrontierCounts, FrontierStore, HostQueueView, ScanCursor, ScanPage,
};
use crate::engine::frontier::{
    AlertDecision, AlertNews, Completion, FrontierEntry, FrontierReader, Hold, Lease, ScanRange,
    SharedAlert, SharedBreaker,
};
use crate::engine::store::{CrawlBatch, PageRecord, StoreError};
use crate::engine::telemetry::{HostActivity, TrapAlert, PRIORITY_LEVELS};

impl FrontierStore for RedisFrontier {
    fn claim_fingerprints(&mut self, fingerprints: &[u64]) -> Result<Vec<bool>, StoreError> {
        self.claim_links(fingerprints, "")
    }

    fn claim_page_links(
        &mut self,
        host: &str,
        fingerprints: &[u64],
    ) -> Result<Vec<bool>, StoreError> {
        self.claim_links(fingerprints, host)
    }

    fn push(&mut self, entries: Vec<FrontierEntry>) -> Result<usize, StoreError> {
        self.push_entries(&entries)
    }

    fn park_new(&mut self, alert_id: u64, entries: Vec<FrontierEntry>) -> Result<u64, StoreError> {
        self.park_entries(alert_id, &entries)
    }

    fn next_ready(&mut self, now: Instant) -> Result<Option<Lease>, StoreError> {
        self.try_next_ready(now)
    }

    fn complete(
        &mut self,
        lease: &Lease,
        record: &PageRecord,
        outlinks: Vec<FrontierEntry>,
    ) -> Result<usize, StoreError> {
        // The record first: a crash between the two fetches the URL again
        // rather than losing it.
        self.store.record_pages([record])?;
        let queued = self.end_lease(lease, "complete", &outlinks)?;
        self.pages += 1;
        Ok(queued)
    }

    fn answered(&mut self, lease: &Lease) {
        // The lease stays out (its end writes the host's not-before, and the
        // host's claim is kept while it is out); the host may be served its
        // next URL from its batch meanwhile.
        if self.out.contains_key(&lease.key) {
            if let Some(h) = self.hosts.get_mut(&lease.entry.host) {
                h.answered.insert(lease.key.clone());
            }
        }
    }

    fn complete_all(
        &mut self,
        done: Vec<Completion>,
        with: CrawlBatch,
    ) -> Result<usize, StoreError> {
        // The group's records in one local write with `with`, before any
        // lease ends (as in `complete`).
        self.store
            .record_pages_with(done.iter().map(|c| &c.record), with)?;
        self.complete_leases(&done)
    }

    fn release(&mut self, lease: Lease) -> Result<(), StoreError> {
        self.end_lease(&lease, "release", &[]).map(drop)
    }

    fn requeue(&mut self, lease: Lease) -> Result<(), StoreError> {
        self.end_lease(&lease, "requeue", &[]).map(drop)
    }

    fn set_initial_holds(&mut self, holds: &[Hold]) {
        // Shared holds are set explicitly, never as a host's initial state.
        self.initial_holds = holds.iter().fold(0, |acc, h| acc | h.bit()) & !SHARED_HOLDS;
    }

    fn set_default_max_in_flight(&mut self, max: usize) -> Result<(), StoreError> {
        self.default_max_in_flight = max;
        Ok(())
    }

    fn set_not_before(&mut self, host: &str, at: Instant) -> Result<(), StoreError> {
        let score = self.clock.score(at).to_string();
        // One lease of the host at a time and it is out: called as its fetch
        // ended, so its end (in the group commit) writes this. Nobody else
        // may fetch the host before, as this worker holds it; should the
        // worker die first, the lease (renewed every third of its TTL) keeps
        // the others off for at least half a TTL, so only a time within that
        // is deferred.
        let soon = at.saturating_duration_since(Instant::now()) < self.ttl / 2;
        let leased = self.leased.contains(host);
        let deferred = soon
            && leased
            && self
                .hosts
                .get(host)
                .is_some_and(|h| h.in_flight == 1 && self.max_of(h) == 1);
        if let Some(h) = self.hosts.get_mut(host).filter(|_| deferred) {
            h.pending_nb = Some(score);
            h.not_before = Some(at);
            return Ok(());
        }
        // Written now, it supersedes one an earlier lease's end would write.
        if let Some(h) = self.hosts.get_mut(host) {
            h.pending_nb = None;
        }
        // Usually called as a fetch ends: give the host back in the same round trip.
        let give_back = leased
            && self
                .hosts
                .get(host)
                .is_some_and(|h| h.in_flight == 0 && h.holds & Hold::Robots.bit() == 0);
        self.write(Write::NotBefore {
            host: host.to_string(),
            score,
            give_back,
        })?;
        self.hosts.entry(host.to_string()).or_default().not_before = Some(at);
        if give_back {
            self.forget_leases(vec![host.to_string()]);
        }
        Ok(())
    }

    fn set_hold(&mut self, host: &str, hold: Hold, on: bool) -> Result<(), StoreError> {
        let h = self.hosts.entry(host.to_string()).or_default();
        if hold.bit() & SHARED_HOLDS == 0 {
            if on {
                h.holds |= hold.bit();
            } else {
                h.holds &= !hold.bit();
            }
            return Ok(());
        }
        if on {
            // Nothing more of the host from this worker's batch: once idle it
            // is given back, and held hosts are not scheduled.
            h.drop_batch();
        }
        self.set_shared_hold(host, hold.bit(), on)
    }

    fn set_max_in_flight(&mut self, host: &str, max: usize) -> Result<(), StoreError> {
        self.set_shared_hold(host, CLOSED, max == 0)?;
        let h = self.hosts.entry(host.to_string()).or_default();
        h.max_in_flight = Some(max);
        if max != 1 {
            h.drop_batch();
        }
        Ok(())
    }

    fn take_new_hosts(&mut self) -> Result<Vec<HostKey>, StoreError> {
        if let Some(e) = self.unreachable() {
            // Adopting them reads their queues: they wait for the server.
            return Err(e);
        }
        Ok(std::mem::take(&mut self.new_hosts))
    }

    fn next_wakeup(&mut self) -> Result<Option<Instant>, StoreError> {
        self.upkeep()?;
        let mut inv = self.scripts.wakeup.prepare_invoke();
        inv.arg(&self.prefix)
            .arg(&self.worker)
            .arg(self.affinity.as_nanos().to_string());
        let out = self.link.run("asking when a host is ready", &inv)?;
        let due = out.first().and_then(|s| parse_score(s));
        let others_hold = out
            .get(1)
            .and_then(|n| std::str::from_utf8(n).ok()?.parse::<u64>().ok())
            .unwrap_or(0)
            > 0;
        let last = self.last_now;
        let now = last.unwrap_or_else(Instant::now);
        let local = self
            .local_candidates(now)
            .into_iter()
            .map(|(_, since, _)| since)
            .chain(self.batch_due())
            .min();
        let earliest = match (due, local) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let mut wake = earliest.map(|score| {
            let at = self.clock.instant(score);
            match last {
                Some(last) if at <= last => last,
                _ => at,
            }
        });
        if others_hold {
            // Hosts held elsewhere come back without a sign: look again soon.
            let poll = Instant::now() + CLUSTER_POLL;
            wake = Some(wake.map_or(poll, |w| w.min(poll)));
        }
        Ok(wake)
    }

    fn remove_matching(
        &mut self,
        host: Option<&str>,
        pred: &dyn Fn(&FrontierEntry) -> bool,
        record: &dyn Fn(&FrontierEntry) -> PageRecord,
    ) -> Result<u64, StoreError> {
        self.remove_where(host, pred, Some(record), None)
    }

    fn drop_host(
        &mut self,
        host: &str,
        record: &dyn Fn(&FrontierEntry) -> PageRecord,
    ) -> Result<u64, StoreError> {
        self.remove_where(Some(host), &|_| true, Some(record), None)
    }

    fn park(
        &mut self,
        alert_id: u64,
        host: &str,
        pred: &dyn Fn(&FrontierEntry) -> bool,
    ) -> Result<u64, StoreError> {
        self.remove_where(Some(host), pred, None, Some(alert_id))
    }

    fn remove_matching_step(
        &mut self,
        pred: &dyn Fn(&FrontierEntry) -> bool,
        record: &dyn Fn(&FrontierEntry) -> PageRecord,
        from: Option<&ScanCursor>,
        max_rows: usize,
    ) -> Result<(u64, Option<ScanCursor>), StoreError> {
        self.remove_step(pred, record, from, max_rows.max(1))
    }

    fn release_parked_step(
        &mut self,
        alert_id: u64,
        record: Option<&dyn Fn(&FrontierEntry) -> PageRecord>,
        max: usize,
    ) -> Result<(u64, bool), StoreError> {
        self.end_parked_some(alert_id, record, max.max(1))
    }

    fn scan(
        &mut self,
        range: ScanRange,
        from: Option<&ScanCursor>,
        limit: usize,
    ) -> Result<ScanPage, StoreError> {
        reader::scan_range(&mut self.link, &self.prefix, range, from, limit)
    }

    fn reader(&self) -> Option<FrontierReader> {
        Some(FrontierReader::redis(RedisReader::new(
            &self.url,
            &self.prefix,
        )))
    }

    fn unreachable(&self) -> Option<StoreError> {
        RedisFrontier::unreachable(self)
    }

    fn reconnect(&mut self) -> Result<usize, StoreError> {
        self.reconnect_and_replay()
    }

    fn counts(&mut self) -> Result<FrontierCounts, StoreError> {
        if self.link.down().is_some() {
            // Shown while the crawl waits; `unreachable` says they are old.
            return Ok(self.last_counts);
        }
        self.upkeep()?;
        let key = format!("{}n", self.prefix);
        let mut fields = vec!["queued".to_string(), "inflight".into(), "parked".into()];
        fields.extend((0..PRIORITY_LEVELS).map(|l| format!("l{l}")));
        let values: Vec<Option<i64>> = self.link.query("counting the frontier", |c| {
            redis::cmd("HMGET").arg(&key).arg(&fields).query(c)
        })?;
        let value = |i: usize| values.get(i).copied().flatten().unwrap_or(0).max(0) as u64;
        // Includes URLs served from batches, which are still queued in Redis.
        let mine: u64 = self.hosts.values().map(|h| h.in_flight as u64).sum();
        let mut front_queues = [0; PRIORITY_LEVELS];
        for (level, depth) in front_queues.iter_mut().enumerate() {
            *depth = value(3 + level);
        }
        self.last_counts = FrontierCounts {
            // URLs in flight on other workers are work this worker still waits for.
            queued: (value(0) + value(1)).saturating_sub(mine),
            in_flight: mine,
            parked: value(2),
            front_queues,
        };
        Ok(self.last_counts)
    }

    fn host_views(
        &mut self,
        hosts: &[&str],
        now: Instant,
        head: usize,
    ) -> Result<Vec<HostQueueView>, StoreError> {
        if hosts.is_empty() {
            return Ok(Vec::new());
        }
        // URLs this worker serves from a batch are still queued in Redis.
        let served: Vec<Option<&std::collections::HashSet<Vec<u8>>>> = hosts
            .iter()
            .map(|host| self.hosts.get(*host).map(|h| &h.batch_out))
            .collect();
        let wanted: Vec<usize> = served
            .iter()
            .map(|s| head + s.map_or(0, |s| s.len()))
            .collect();
        let rows = read_host_rows(&mut self.link, &self.prefix, hosts, &wanted)?;
        let mut views = Vec::with_capacity(hosts.len());
        for ((host, row), served) in hosts.iter().zip(rows).zip(served) {
            let HostRow {
                queued,
                in_flight,
                parked,
                holds,
                not_before: nb,
                members,
            } = row;
            let head = members
                .iter()
                .filter(|m| served.is_none_or(|s| !s.contains(*m)))
                .take(head)
                .map(|m| super::decode(m).map(|e| e.url))
                .collect::<Result<_, _>>()?;
            let out_here = served.map_or(0, |s| s.len() as u64);
            let (queued, in_flight) = (queued.saturating_sub(out_here), in_flight + out_here);
            let shared = SharedState {
                queued,
                in_flight,
                holds: holds.unwrap_or(0),
                not_before: nb
                    .and_then(|s| parse_score(s.as_bytes()))
                    .map(|score| self.clock.instant(score)),
            };
            let activity = self.activity(host, now, &shared);
            views.push(HostQueueView {
                queued,
                in_flight,
                parked: parked.unwrap_or(0),
                activity,
                head,
            });
        }
        Ok(views)
    }

    fn share_alert(
        &mut self,
        signature: &str,
        alert: &TrapAlert,
    ) -> Result<SharedAlert, StoreError> {
        self.raise_shared_alert(signature, alert)
    }

    fn alert_news(&mut self) -> Result<AlertNews, StoreError> {
        self.read_alert_news()
    }

    fn decide_alert(&mut self, decision: &AlertDecision) -> Result<(), StoreError> {
        self.share_decision(decision)
    }

    fn share_breaker(
        &mut self,
        host: &str,
        open: Option<&OpenBreaker>,
        reason: &str,
    ) -> Result<(), StoreError> {
        self.write_breaker(host, open, reason)
    }

    fn breaker_news(&mut self) -> Result<Vec<(HostKey, SharedBreaker)>, StoreError> {
        self.read_breaker_news()
    }

    fn claimed_breaker(&mut self, host: &str) -> Option<SharedBreaker> {
        self.take_claimed_breaker(host)
    }

    fn shared_breakers(
        &mut self,
        hosts: &[&str],
    ) -> Result<Vec<Option<SharedBreaker>>, StoreError> {
        self.read_breakers(hosts)
    }
}

/// One host's queue as Redis holds it.
struct HostRow {
    queued: u64,
    in_flight: u64,
    parked: Option<u64>,
    holds: Option<u8>,
    /// The not-before score, as stored.
    not_before: Option<String>,
    /// The first queue members, as many as asked for.
    members: Vec<Vec<u8>>,
}

/// Each host's counts, holds, not-before and first `wanted` queue members,
/// in one round trip.
fn read_host_rows(
    link: &mut Link,
    p: &str,
    hosts: &[&str],
    wanted: &[usize],
) -> Result<Vec<HostRow>, StoreError> {
    type Row = (
        u64,
        u64,
        Option<u64>,
        Option<u8>,
        Option<String>,
        Vec<Vec<u8>>,
    );
    let rows: Vec<Row> = link.query("reading host queues", |c| {
        let mut pipe = redis::pipe();
        for (host, &wanted) in hosts.iter().zip(wanted) {
            pipe.cmd("ZCARD").arg(format!("{p}q:{host}"));
            pipe.cmd("HLEN").arg(format!("{p}inflight:{host}"));
            pipe.cmd("HGET").arg(format!("{p}parked_hosts")).arg(host);
            pipe.cmd("HGET").arg(format!("{p}holds")).arg(host);
            pipe.cmd("HGET").arg(format!("{p}nb")).arg(host);
            let (start, stop) = first_members(wanted);
            pipe.cmd("ZRANGE")
                .arg(format!("{p}q:{host}"))
                .arg(start)
                .arg(stop);
        }
        let flat: Vec<redis::Value> = pipe.query(c)?;
        flat.chunks(6)
            .map(|row| {
                Ok((
                    redis::from_redis_value(&row[0])?,
                    redis::from_redis_value(&row[1])?,
                    redis::from_redis_value(&row[2])?,
                    redis::from_redis_value(&row[3])?,
                    redis::from_redis_value(&row[4])?,
                    redis::from_redis_value(&row[5])?,
                ))
            })
            .collect()
    })?;
    let row = |(queued, in_flight, parked, holds, not_before, members): Row| HostRow {
        queued,
        in_flight,
        parked,
        holds,
        not_before,
        members,
    };
    Ok(rows.into_iter().map(row).collect())
}

/// What Redis says of a host, for its activity.
struct SharedState {
    queued: u64,
    /// On any worker.
    in_flight: u64,
    holds: u8,
    not_before: Option<Instant>,
}

impl RedisFrontier {
    fn activity(&self, host: &str, now: Instant, shared: &SharedState) -> HostActivity {
        let local = self.hosts.get(host);
        let holds = (shared.holds & SHARED_HOLDS) | local.map_or(0, |h| h.holds);
        let (queued, in_flight) = (shared.queued, shared.in_flight as usize);
        let max = local.map_or(self.default_max_in_flight, |h| self.max_of(h));
        if holds & Hold::Finished.bit() != 0 {
            HostActivity::Finished
        } else if holds & Hold::Paused.bit() != 0 {
            HostActivity::PausedByOperator
        } else if holds & Hold::Breaker.bit() != 0 {
            HostActivity::BreakerOpen
        } else if holds & Hold::Robots.bit() != 0 {
            HostActivity::RobotsPending
        } else if queued == 0 {
            if in_flight > 0 {
                HostActivity::Busy
            } else {
                HostActivity::Idle
            }
        } else if holds & CLOSED != 0 || (in_flight > 0 && in_flight >= max) {
            HostActivity::Busy
        } else if shared
            .not_before
            .into_iter()
            .chain(local.and_then(|h| h.not_before))
            .any(|t| t > now)
        {
            HostActivity::Waiting
        } else {
            HostActivity::Ready
        }
    }
}
