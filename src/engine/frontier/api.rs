//! The frontier as the coordinator uses it, written so that the frontier may
//! live in a remote store shared by many workers: batch operations, owned
//! values, and a `Result` from every operation that may touch storage.
//!
//! An `Err` means the store failed; the caller decides what to do (the engine
//! stops cleanly). Unless a method says otherwise, a failed write may or may
//! not have been applied, like any remote write whose reply was lost, but never
//! half of one batch.

use tokio::time::Instant;

use super::{Frontier, FrontierEntry, FrontierReader, Hold, Lease};
use crate::engine::breaker::OpenBreaker;
use crate::engine::control::{HostKey, RuleSpec};
use crate::engine::dedup::url_fingerprint;
use crate::engine::store::{CrawlBatch, PageRecord, StoreError};
use crate::engine::telemetry::{AlertStatus, HostActivity, TrapAlert, PRIORITY_LEVELS};

/// Whole-frontier counters, as plain values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FrontierCounts {
    /// URLs queued and not in flight.
    pub queued: u64,
    /// URLs leased by `next_ready` and not yet ended.
    pub in_flight: u64,
    /// URLs parked under any alert.
    pub parked: u64,
    /// Queued URLs per priority level; sums to `queued`.
    pub front_queues: [u64; PRIORITY_LEVELS],
}

/// Which stored URLs [`FrontierStore::scan`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScanRange {
    /// Queued URLs, leased ones included.
    Queued,
    /// URLs parked under any alert.
    Parked,
}

/// Where a scan goes on; opaque to callers.
/// A lease to end for good, with what its fetch produced (see
/// [`FrontierStore::complete`]).
#[derive(Debug, Clone)]
pub struct Completion {
    pub lease: Lease,
    pub record: PageRecord,
    pub outlinks: Vec<FrontierEntry>,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ScanCursor(pub(super) Vec<u8>);

/// One chunk of a scan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanPage {
    /// The entries read, in storage order.
    pub entries: Vec<FrontierEntry>,
    /// Where the next chunk starts; `None` when the range is done.
    pub next: Option<ScanCursor>,
}

/// One host's queue, as the snapshot shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostQueueView {
    /// URLs of the host queued and not in flight.
    pub queued: u64,
    /// URLs of the host leased and not yet ended.
    pub in_flight: u64,
    /// URLs of the host parked under any alert.
    pub parked: u64,
    /// What the host is doing at the time asked about.
    pub activity: HostActivity,
    /// The first URLs the host will hand out next, in order: at most as many
    /// as asked, at least one if any is queued (the local frontier shows only
    /// those it holds in memory).
    pub head: Vec<String>,
}

/// A new trap alert as the crawl numbers it (see [`FrontierStore::share_alert`]).
#[derive(Debug, Clone, PartialEq)]
pub enum SharedAlert {
    /// New to the crawl, under this number.
    New(u64),
    /// Another worker alerted on the same trap first: its alert (with its
    /// number), which this worker joins.
    Joined(TrapAlert),
}

/// The decision on a trap alert, as every worker of a crawl applies it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AlertDecision {
    #[serde(skip)]
    pub id: u64,
    /// Accepted or dismissed.
    pub status: AlertStatus,
    /// The rule an accepted alert became (the operator may have edited it).
    pub rule: Option<RuleSpec>,
}

/// What other workers did with the crawl's trap alerts since the last look.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AlertNews {
    /// Alerts they raised, as raised (number set).
    pub raised: Vec<TrapAlert>,
    /// Decisions new to this worker.
    pub decided: Vec<AlertDecision>,
}

/// A host's circuit breaker as a shared crawl keeps it: the last change
/// any worker made.
#[derive(Debug, Clone, PartialEq)]
pub struct SharedBreaker {
    /// The worker that made it.
    pub by: String,
    /// Why (the transition's reason there).
    pub reason: String,
    /// Open (or probing) until `probe_at`; `None`: closed.
    pub open: Option<OpenBreaker>,
}

/// The URL frontier, seen set and host schedule behind one interface, so the
/// coordinator can run on a local store or a shared remote one.
///
/// Order: a host hands out its URLs by priority level (0 first), then in
/// arrival order. Across hosts, a level is chosen by `LEVEL_WEIGHTS` (frontier/schedule.rs)
/// among the levels with a ready host, then that level's host that has been
/// ready longest. A host is ready when it has queued URLs, no hold, fewer
/// leases than its maximum, and its `not_before` has passed.
///
/// Leases: `next_ready` hands out a [`Lease`]; exactly one of `complete`,
/// `release` or `requeue` ends it. A lease not ended when the frontier is
/// dropped (a crash) is queued again when it is reopened.
pub trait FrontierStore: Send {
    /// For each URL, by its fingerprint (`dedup::url_fingerprint`), `true`
    /// if it was never seen by this frontier; those URLs are seen from now
    /// on. A URL given twice in one call is new only the first time. URLs
    /// queued or parked by any method count as seen; a URL that is only
    /// claimed may be unseen again after a reopen (its persistent mark is
    /// written by the batch that queues it). On `Err` nothing is claimed.
    fn claim_fingerprints(&mut self, fingerprints: &[u64]) -> Result<Vec<bool>, StoreError>;

    /// [`FrontierStore::claim_fingerprints`] of these URLs.
    fn claim_unseen(&mut self, urls: &[&str]) -> Result<Vec<bool>, StoreError> {
        let fingerprints: Vec<u64> = urls.iter().map(|url| url_fingerprint(url)).collect();
        self.claim_fingerprints(&fingerprints)
    }

    /// Whether `url` may have been claimed or queued: `false` is certain,
    /// answered from memory with no read; `true` may be wrong. A frontier
    /// that cannot tell from memory answers `true`.
    fn may_have_seen(&self, url: &str) -> bool {
        let _ = url;
        true
    }

    /// [`FrontierStore::claim_fingerprints`] for the links of a page of
    /// `host` this worker fetched under its lease. A shared frontier whose
    /// lease of `host` lapsed meanwhile (the page is queued again) answers
    /// which are new without claiming them: the page's lease end queues
    /// those still new, or, should this worker die first, its next fetch
    /// finds them.
    fn claim_page_links(
        &mut self,
        host: &str,
        fingerprints: &[u64],
    ) -> Result<Vec<bool>, StoreError> {
        let _ = host;
        self.claim_fingerprints(fingerprints)
    }

    /// Queues URLs (claimed by the caller) and marks them seen, atomically.
    /// Priorities above the last level are queued at the last level. Returns
    /// how many were queued.
    fn push(&mut self, entries: Vec<FrontierEntry>) -> Result<usize, StoreError>;

    /// Parks URLs (claimed by the caller) under `alert_id` instead of queueing
    /// them, and marks them seen, atomically. Returns how many were parked.
    fn park_new(&mut self, alert_id: u64, entries: Vec<FrontierEntry>) -> Result<u64, StoreError>;

    /// The next URL to fetch as of `now`, if a host is ready. On `Err` no
    /// lease was handed out.
    fn next_ready(&mut self, now: Instant) -> Result<Option<Lease>, StoreError>;

    /// Ends a lease for good: the URL leaves the queue, `record` is stored and
    /// `outlinks` (claimed by the caller) are queued and marked seen, all in one
    /// atomic write. Returns how many outlinks were queued.
    /// `StoreError::UnknownLease` if the lease already ended.
    fn complete(
        &mut self,
        lease: &Lease,
        record: &PageRecord,
        outlinks: Vec<FrontierEntry>,
    ) -> Result<usize, StoreError>;

    /// [`FrontierStore::complete`] for several leases, their page records
    /// written in one atomic write with `with` (the crawl's counters, the
    /// hosts' state). On `Err` nothing of it is stored, and the caller
    /// releases the leases still out. Returns how many outlinks were queued.
    fn complete_all(
        &mut self,
        done: Vec<Completion>,
        with: CrawlBatch,
    ) -> Result<usize, StoreError>;

    /// The lease's answer is in and handled; only its completion is to come.
    /// Its host no longer counts it as a request in flight, so the host's
    /// next request need not wait for the completion's write. An unknown
    /// lease is left to its completion, which reports it.
    fn answered(&mut self, lease: &Lease);

    /// Ends a lease by putting the URL back where it was: at its host's head.
    /// `StoreError::UnknownLease` if the lease already ended.
    fn release(&mut self, lease: Lease) -> Result<(), StoreError>;

    /// Ends a lease by queueing the URL again at the back of its host's queue
    /// (same priority), so a failing URL does not block the host.
    /// `StoreError::UnknownLease` if the lease already ended.
    fn requeue(&mut self, lease: Lease) -> Result<(), StoreError>;

    /// Holds every host starts with when the frontier creates its state (e.g.
    /// `Hold::Robots`, so robots.txt is settled before any URL is handed out).
    fn set_initial_holds(&mut self, holds: &[Hold]);

    /// Leases a host may have at once unless `set_max_in_flight` said otherwise.
    fn set_default_max_in_flight(&mut self, max: usize) -> Result<(), StoreError>;

    /// The host is not handed out before `at` (politeness).
    fn set_not_before(&mut self, host: &str, at: Instant) -> Result<(), StoreError>;

    /// Sets or clears one reason not to hand out the host; it is ready again
    /// only when every hold is cleared.
    fn set_hold(&mut self, host: &str, hold: Hold, on: bool) -> Result<(), StoreError>;

    /// Leases the host may have at once (0: none).
    fn set_max_in_flight(&mut self, host: &str, max: usize) -> Result<(), StoreError>;

    /// Hosts the frontier created state for since the last call (new, or back
    /// after going idle), each once; they started with the initial holds.
    fn take_new_hosts(&mut self) -> Result<Vec<HostKey>, StoreError>;

    /// When a host next becomes ready: the time of the last `next_ready` if
    /// one is ready already, `None` if no host can become ready by time alone.
    fn next_wakeup(&mut self) -> Result<Option<Instant>, StoreError>;

    /// Removes queued URLs matching `pred` (of `host` only, if given) and
    /// stores `record` of each; leased URLs are left alone. Returns how many
    /// were removed. Works in chunks: on `Err`, earlier chunks stay removed.
    fn remove_matching(
        &mut self,
        host: Option<&str>,
        pred: &dyn Fn(&FrontierEntry) -> bool,
        record: &dyn Fn(&FrontierEntry) -> PageRecord,
    ) -> Result<u64, StoreError>;

    /// `remove_matching` of every queued URL of `host`.
    fn drop_host(
        &mut self,
        host: &str,
        record: &dyn Fn(&FrontierEntry) -> PageRecord,
    ) -> Result<u64, StoreError>;

    /// Moves queued URLs of `host` matching `pred` into quarantine under
    /// `alert_id`; leased URLs are left alone. Returns how many were parked.
    /// Works in chunks like `remove_matching`.
    fn park(
        &mut self,
        alert_id: u64,
        host: &str,
        pred: &dyn Fn(&FrontierEntry) -> bool,
    ) -> Result<u64, StoreError>;

    /// One step of `remove_matching` over every host, so a caller can bound
    /// its work per call: reads at most about `max_rows` queued URLs after
    /// `from` (the start if `None`), removes and records those `pred`
    /// matches; returns how many and where the next step starts (`None`:
    /// done). URLs queued meanwhile behind the cursor are not seen.
    fn remove_matching_step(
        &mut self,
        pred: &dyn Fn(&FrontierEntry) -> bool,
        record: &dyn Fn(&FrontierEntry) -> PageRecord,
        from: Option<&ScanCursor>,
        max_rows: usize,
    ) -> Result<(u64, Option<ScanCursor>), StoreError>;

    /// Takes at most `max` of an alert's parked URLs out of quarantine:
    /// queued again in the order they were first queued (`record` is
    /// `None`), or removed for good with `record` of each stored. Returns
    /// how many and whether any may remain. Works in chunks like
    /// `remove_matching`.
    fn release_parked_step(
        &mut self,
        alert_id: u64,
        record: Option<&dyn Fn(&FrontierEntry) -> PageRecord>,
        max: usize,
    ) -> Result<(u64, bool), StoreError>;

    /// All of an alert's parked URLs queued again; how many.
    #[cfg(test)]
    fn unpark(&mut self, alert_id: u64) -> Result<u64, StoreError> {
        Ok(self.release_parked_step(alert_id, None, usize::MAX)?.0)
    }

    /// All of an alert's parked URLs removed and recorded; how many.
    #[cfg(test)]
    fn drop_parked(
        &mut self,
        alert_id: u64,
        record: &dyn Fn(&FrontierEntry) -> PageRecord,
    ) -> Result<u64, StoreError> {
        Ok(self
            .release_parked_step(alert_id, Some(record), usize::MAX)?
            .0)
    }

    /// Reads at most `limit` entries of `range` from `from` (the start if
    /// `None`) without changing anything, so a caller can bound its work per
    /// call (rule previews).
    fn scan(
        &mut self,
        range: ScanRange,
        from: Option<&ScanCursor>,
        limit: usize,
    ) -> Result<ScanPage, StoreError>;

    /// A handle that scans like [`FrontierStore::scan`] from another thread,
    /// or `None` when scans must go through the frontier itself.
    fn reader(&self) -> Option<FrontierReader> {
        None
    }

    /// Whole-frontier counters.
    fn counts(&mut self) -> Result<FrontierCounts, StoreError>;

    /// A shared frontier whose server is out of reach: why. Writes that need
    /// no answer are held meanwhile; the rest fail with this error. A local
    /// frontier is never out of reach.
    fn unreachable(&self) -> Option<StoreError> {
        None
    }

    /// After [`FrontierStore::unreachable`]: connects again and writes what
    /// was held, in order; returns how many writes were held. An error
    /// leaves what is not written held.
    fn reconnect(&mut self) -> Result<usize, StoreError> {
        Ok(0)
    }

    /// One view per host of `hosts`, in the same order, as of `now`, with at
    /// most `head` URLs of each host's head. Unknown hosts are idle and empty.
    fn host_views(
        &mut self,
        hosts: &[&str],
        now: Instant,
        head: usize,
    ) -> Result<Vec<HostQueueView>, StoreError>;

    /// Numbers a new trap alert (`alert.id` is the crawl's own next number)
    /// of the trap `signature` (its detector and pattern). A shared frontier
    /// hands out numbers no other worker of the crawl uses, so every view
    /// and `ctl` name an alert alike, and keeps one alert per signature:
    /// a trap another worker alerted on first is [`SharedAlert::Joined`].
    fn share_alert(
        &mut self,
        _signature: &str,
        alert: &TrapAlert,
    ) -> Result<SharedAlert, StoreError> {
        Ok(SharedAlert::New(alert.id))
    }

    /// Alerts other workers raised and decisions they made since the last
    /// call (a shared frontier looks at most twice a second).
    fn alert_news(&mut self) -> Result<AlertNews, StoreError> {
        Ok(AlertNews::default())
    }

    /// Makes the decision on an alert every worker's; the first one stands.
    fn decide_alert(&mut self, _decision: &AlertDecision) -> Result<(), StoreError> {
        Ok(())
    }

    /// Makes the host's breaker (`open`, or closed when `None`) the one
    /// every worker of the crawl follows.
    fn share_breaker(
        &mut self,
        _host: &str,
        _open: Option<&OpenBreaker>,
        _reason: &str,
    ) -> Result<(), StoreError> {
        Ok(())
    }

    /// Breakers other workers changed since the last call, host by host
    /// (a shared frontier looks at most twice a second).
    fn breaker_news(&mut self) -> Result<Vec<(HostKey, SharedBreaker)>, StoreError> {
        Ok(Vec::new())
    }

    /// The shared breaker of a host the last `next_ready` claimed (read in
    /// the same step), once.
    fn claimed_breaker(&mut self, _host: &str) -> Option<SharedBreaker> {
        None
    }

    /// The shared breakers of `hosts`, in the same order (`None`: never
    /// shared, or not a shared crawl).
    fn shared_breakers(
        &mut self,
        hosts: &[&str],
    ) -> Result<Vec<Option<SharedBreaker>>, StoreError> {
        Ok(vec![None; hosts.len()])
    }
}

impl FrontierStore for Frontier {
    fn claim_fingerprints(&mut self, fingerprints: &[u64]) -> Result<Vec<bool>, StoreError> {
        self.seen.claim(&self.store, fingerprints)
    }

    fn may_have_seen(&self, url: &str) -> bool {
        self.seen.may_contain(url)
    }

    fn push(&mut self, entries: Vec<FrontierEntry>) -> Result<usize, StoreError> {
        Frontier::push(self, entries)
    }

    fn park_new(&mut self, alert_id: u64, entries: Vec<FrontierEntry>) -> Result<u64, StoreError> {
        Frontier::park_new(self, alert_id, entries)
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
        Frontier::complete(self, lease, record, outlinks)
    }

    fn complete_all(
        &mut self,
        done: Vec<Completion>,
        with: CrawlBatch,
    ) -> Result<usize, StoreError> {
        Frontier::complete_all(self, done, with)
    }

    fn answered(&mut self, lease: &Lease) {
        Frontier::answered(self, lease);
    }

    fn release(&mut self, lease: Lease) -> Result<(), StoreError> {
        self.try_release(lease)
    }

    fn requeue(&mut self, lease: Lease) -> Result<(), StoreError> {
        Frontier::requeue(self, lease)
    }

    fn set_initial_holds(&mut self, holds: &[Hold]) {
        Frontier::set_initial_holds(self, holds);
    }

    fn set_default_max_in_flight(&mut self, max: usize) -> Result<(), StoreError> {
        Frontier::set_default_max_in_flight(self, max);
        Ok(())
    }

    fn set_not_before(&mut self, host: &str, at: Instant) -> Result<(), StoreError> {
        Frontier::set_not_before(self, host, at);
        Ok(())
    }

    fn set_hold(&mut self, host: &str, hold: Hold, on: bool) -> Result<(), StoreError> {
        Frontier::set_hold(self, host, hold, on);
        Ok(())
    }

    fn set_max_in_flight(&mut self, host: &str, max: usize) -> Result<(), StoreError> {
        Frontier::set_max_in_flight(self, host, max);
        Ok(())
    }

    fn take_new_hosts(&mut self) -> Result<Vec<HostKey>, StoreError> {
        Ok(Frontier::take_new_hosts(self))
    }

    fn next_wakeup(&mut self) -> Result<Option<Instant>, StoreError> {
        Ok(Frontier::next_wakeup(self))
    }

    fn remove_matching(
        &mut self,
        host: Option<&str>,
        pred: &dyn Fn(&FrontierEntry) -> bool,
        record: &dyn Fn(&FrontierEntry) -> PageRecord,
    ) -> Result<u64, StoreError> {
        Frontier::remove_matching(self, host, pred, record)
    }

    fn drop_host(
        &mut self,
        host: &str,
        record: &dyn Fn(&FrontierEntry) -> PageRecord,
    ) -> Result<u64, StoreError> {
        Frontier::drop_host(self, host, record)
    }

    fn park(
        &mut self,
        alert_id: u64,
        host: &str,
        pred: &dyn Fn(&FrontierEntry) -> bool,
    ) -> Result<u64, StoreError> {
        Frontier::park(self, alert_id, host, pred)
    }

    fn remove_matching_step(
        &mut self,
        pred: &dyn Fn(&FrontierEntry) -> bool,
        record: &dyn Fn(&FrontierEntry) -> PageRecord,
        from: Option<&ScanCursor>,
        max_rows: usize,
    ) -> Result<(u64, Option<ScanCursor>), StoreError> {
        Frontier::remove_matching_step(self, pred, record, from, max_rows)
    }

    fn release_parked_step(
        &mut self,
        alert_id: u64,
        record: Option<&dyn Fn(&FrontierEntry) -> PageRecord>,
        max: usize,
    ) -> Result<(u64, bool), StoreError> {
        Frontier::release_parked_step(self, alert_id, record, max)
    }

    fn scan(
        &mut self,
        range: ScanRange,
        from: Option<&ScanCursor>,
        limit: usize,
    ) -> Result<ScanPage, StoreError> {
        Frontier::scan(self, range, from, limit)
    }

    fn reader(&self) -> Option<FrontierReader> {
        Some(Frontier::reader(self))
    }

    fn counts(&mut self) -> Result<FrontierCounts, StoreError> {
        Ok(FrontierCounts {
            queued: self.len(),
            in_flight: self.in_flight(),
            parked: self.parked.values().sum(),
            front_queues: self.front_queue_depths(),
        })
    }

    fn host_views(
        &mut self,
        hosts: &[&str],
        now: Instant,
        head: usize,
    ) -> Result<Vec<HostQueueView>, StoreError> {
        Ok(hosts
            .iter()
            .map(|&host| HostQueueView {
                queued: self.host_queued(host),
                in_flight: self.host(host).map_or(0, |h| h.in_flight() as u64),
                parked: self.host_parked(host),
                activity: self.host_activity(host, now),
                head: self.host_head(host, head),
            })
            .collect())
    }
}
