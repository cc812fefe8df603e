//! Frontier operations that write to the store: admission, completion, and
//! the operator's bulk operations (block, park, unpark, give up).

use std::collections::{BTreeSet, HashSet};

use tokio::time::Instant;

use super::entry::{decode, encode, level_of};
use super::schedule::HostId;
use super::{Completion, Frontier, FrontierEntry, Lease, ScanCursor, SCAN_CHUNK};
use crate::engine::dedup::url_fingerprint;
use crate::engine::store::{keys, CrawlBatch, PageRecord, RawEntry, StoreError};

/// What a bulk sweep does with each matching queued entry.
enum SweepAction<'a> {
    Record(&'a dyn Fn(&FrontierEntry) -> PageRecord),
    Park(u64),
}

impl Frontier {
    /// Admits new URLs (the caller has checked they are unseen) and marks them
    /// seen, in one batch. Returns how many were queued.
    pub fn push(&mut self, entries: Vec<FrontierEntry>) -> Result<usize, StoreError> {
        if entries.is_empty() {
            return Ok(0);
        }
        let mut batch = CrawlBatch::default();
        let staged = self.stage_queued(&mut batch, entries);
        if let Err(e) = self.store.apply(batch) {
            self.forget_claims(staged.iter().map(|(_, entry)| entry.url.as_str()));
            return Err(e);
        }
        self.admit_all(staged)
    }

    /// Finishes a lease: removes its queue key, writes its page record and
    /// queues its new outlinks (with their seen marks) in one atomic batch.
    /// Returns how many outlinks were queued.
    pub fn complete(
        &mut self,
        lease: &Lease,
        record: &PageRecord,
        outlinks: Vec<FrontierEntry>,
    ) -> Result<usize, StoreError> {
        let id = self.leasing_host(lease)?;
        let mut batch = CrawlBatch::default();
        batch.dequeue(&lease.key);
        batch.record_page(record);
        let staged = self.stage_queued(&mut batch, outlinks);
        if let Err(e) = self.store.apply(batch) {
            self.forget_claims(staged.iter().map(|(_, entry)| entry.url.as_str()));
            return Err(e);
        }
        self.host_mut(id).end_lease(&lease.key);
        self.in_flight = self.in_flight.saturating_sub(1);
        let queued = self.admit_all(staged);
        self.reschedule(id);
        self.maybe_forget(id);
        queued
    }

    /// Finishes several leases as [`Frontier::complete`] does, in one atomic
    /// batch: one write instead of one per page. All or nothing.
    pub fn complete_all(
        &mut self,
        done: Vec<Completion>,
        with: CrawlBatch,
    ) -> Result<usize, StoreError> {
        for c in &done {
            self.leasing_host(&c.lease)?;
        }
        let mut batch = with;
        let mut staged_all = Vec::with_capacity(done.len());
        for Completion {
            lease,
            record,
            outlinks,
        } in done
        {
            batch.dequeue(&lease.key);
            batch.record_page(&record);
            staged_all.push((lease, self.stage_queued(&mut batch, outlinks)));
        }
        if let Err(e) = self.store.apply(batch) {
            let urls: Vec<String> = staged_all
                .iter()
                .flat_map(|(_, staged)| staged.iter().map(|(_, entry)| entry.url.clone()))
                .collect();
            self.forget_claims(urls.iter().map(String::as_str));
            return Err(e);
        }
        let mut queued = Ok(0);
        for (lease, staged) in staged_all {
            let id = self.leasing_host(&lease)?;
            self.host_mut(id).end_lease(&lease.key);
            self.in_flight = self.in_flight.saturating_sub(1);
            let admitted = self.admit_all(staged);
            queued = queued.and_then(|n| admitted.map(|m| n + m));
            self.reschedule(id);
            self.maybe_forget(id);
        }
        queued
    }

    /// The lease's request is over: its host may be handed its next URL
    /// while the lease waits for its completion.
    pub fn answered(&mut self, lease: &Lease) {
        if let Ok(id) = self.leasing_host(lease) {
            if self.host_mut(id).answer(&lease.key) {
                self.reschedule(id);
            }
        }
    }

    /// Puts a leased URL at the back of its host's queue (its priority kept),
    /// so a URL that failed while its host was down does not block the host's
    /// probe requests when the host comes back.
    pub fn requeue(&mut self, lease: Lease) -> Result<(), StoreError> {
        let id = self.leasing_host(&lease)?;
        let key = keys::queue_key(&lease.entry.host, lease.entry.priority, self.take_seq());
        let mut batch = CrawlBatch::default();
        batch.dequeue(&lease.key);
        batch.enqueue(&key, &encode(&lease.entry));
        batch.set_seq(self.next_seq);
        self.store.apply(batch)?;
        self.end_lease_into(id, lease, Some(key));
        self.refresh(id)
    }

    /// Removes queued URLs matching `pred` (of `host` only, if given) and
    /// records each with `record`. In-flight URLs are left alone.
    pub fn remove_matching(
        &mut self,
        host: Option<&str>,
        pred: &dyn Fn(&FrontierEntry) -> bool,
        record: &dyn Fn(&FrontierEntry) -> PageRecord,
    ) -> Result<u64, StoreError> {
        self.sweep(host, pred, SweepAction::Record(record))
    }

    /// Gives up on a host: every queued URL of it is removed and recorded.
    pub fn drop_host(
        &mut self,
        host: &str,
        record: &dyn Fn(&FrontierEntry) -> PageRecord,
    ) -> Result<u64, StoreError> {
        self.sweep(Some(host), &|_| true, SweepAction::Record(record))
    }

    /// Moves queued URLs of `host` matching `pred` into quarantine under `alert_id`.
    pub fn park(
        &mut self,
        alert_id: u64,
        host: &str,
        pred: &dyn Fn(&FrontierEntry) -> bool,
    ) -> Result<u64, StoreError> {
        self.sweep(Some(host), pred, SweepAction::Park(alert_id))
    }

    /// Quarantines newly discovered URLs directly (and marks them seen).
    pub fn park_new(
        &mut self,
        alert_id: u64,
        entries: Vec<FrontierEntry>,
    ) -> Result<u64, StoreError> {
        let mut batch = CrawlBatch::default();
        for entry in &entries {
            let seq = self.take_seq();
            batch.enqueue(&keys::parked_key(alert_id, seq), &encode(entry));
            let fp = batch.mark_seen(&entry.url);
            self.seen.insert_persisted(fp);
        }
        batch.set_seq(self.next_seq);
        if let Err(e) = self.store.apply(batch) {
            self.forget_claims(entries.iter().map(|entry| entry.url.as_str()));
            return Err(e);
        }
        let count = entries.len() as u64;
        for entry in entries {
            self.count_parked(alert_id, entry.host, 1);
        }
        Ok(count)
    }

    /// One step of [`Frontier::remove_matching`] over every host: at most
    /// about `max_rows` queued rows after `from`; returns how many were
    /// removed and where the next step starts (`None`: done).
    pub fn remove_matching_step(
        &mut self,
        pred: &dyn Fn(&FrontierEntry) -> bool,
        record: &dyn Fn(&FrontierEntry) -> PageRecord,
        from: Option<&ScanCursor>,
        max_rows: usize,
    ) -> Result<(u64, Option<ScanCursor>), StoreError> {
        let from = from.map(|c| c.0.clone());
        let (n, next) = self.sweep_from(
            None,
            pred,
            SweepAction::Record(record),
            from,
            max_rows.max(1),
        )?;
        Ok((n, next.map(ScanCursor)))
    }

    /// At most `max` of an alert's parked URLs out of quarantine: queued
    /// again (`record` is `None`) or recorded; returns how many and whether
    /// any may remain.
    pub fn release_parked_step(
        &mut self,
        alert_id: u64,
        record: Option<&dyn Fn(&FrontierEntry) -> PageRecord>,
        max: usize,
    ) -> Result<(u64, bool), StoreError> {
        self.sweep_parked_some(alert_id, record, max.max(1))
    }

    // ---- internals ----

    /// `release` with its errors: an unknown lease, or the host's head that
    /// could not be loaded again.
    pub(super) fn try_release(&mut self, lease: Lease) -> Result<(), StoreError> {
        let id = self.leasing_host(&lease)?;
        self.end_lease_into(id, lease, None);
        self.refresh(id)
    }

    /// `next_ready` for callers that handle storage errors: when the host's
    /// next URLs cannot be loaded, the lease is undone and the error returned.
    pub(super) fn try_next_ready(&mut self, now: Instant) -> Result<Option<Lease>, StoreError> {
        let Some((id, lease)) = self.take_next(now) else {
            return Ok(None);
        };
        if let Err(e) = self.ensure_head(id) {
            self.end_lease_into(id, lease, None);
            self.reschedule(id);
            return Err(e);
        }
        self.reschedule(id);
        Ok(Some(lease))
    }

    /// Ends a lease and queues its entry again: under its own key (put back
    /// at its place) or under `requeue_key` (at the back of its host's queue).
    fn end_lease_into(&mut self, id: HostId, lease: Lease, requeue_key: Option<Vec<u8>>) {
        self.host_mut(id).end_lease(&lease.key);
        self.in_flight = self.in_flight.saturating_sub(1);
        self.admit(requeue_key.unwrap_or(lease.key), lease.entry);
    }

    fn leasing_host(&self, lease: &Lease) -> Result<HostId, StoreError> {
        self.ids
            .get(&lease.entry.host)
            .copied()
            .filter(|&id| {
                self.hosts[id as usize]
                    .as_ref()
                    .is_some_and(|h| h.is_leased(&lease.key))
            })
            .ok_or_else(|| StoreError::UnknownLease {
                url: lease.entry.url.clone(),
            })
    }

    /// A batch that would have marked these URLs seen failed: the store has
    /// no mark, so the next sighting must ask it again instead of the memory.
    fn forget_claims<'a>(&mut self, urls: impl Iterator<Item = &'a str>) {
        for url in urls {
            self.seen.forget(url_fingerprint(url));
        }
    }

    fn take_seq(&mut self) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        seq
    }

    /// Adds new queue keys and seen marks to `batch`. The Bloom filter learns
    /// the marks at once, so its "never seen" stays certain even for URLs
    /// pushed without a claim (seeds, a recrawl pass).
    fn stage_queued(
        &mut self,
        batch: &mut CrawlBatch,
        entries: Vec<FrontierEntry>,
    ) -> Vec<(Vec<u8>, FrontierEntry)> {
        let mut staged = Vec::with_capacity(entries.len());
        for mut entry in entries {
            entry.priority = level_of(entry.priority) as u8;
            let key = keys::queue_key(&entry.host, entry.priority, self.take_seq());
            batch.enqueue(&key, &encode(&entry));
            let fp = batch.mark_seen(&entry.url);
            self.seen.insert_persisted(fp);
            staged.push((key, entry));
        }
        batch.set_seq(self.next_seq);
        staged
    }

    /// Counts written queue keys in memory and reschedules their hosts;
    /// returns how many there were.
    fn admit_all(&mut self, staged: Vec<(Vec<u8>, FrontierEntry)>) -> Result<usize, StoreError> {
        let count = staged.len();
        let mut touched = BTreeSet::new();
        for (key, entry) in staged {
            touched.insert(self.admit(key, entry));
        }
        self.refresh_all(touched)?;
        Ok(count)
    }

    fn admit(&mut self, key: Vec<u8>, entry: FrontierEntry) -> HostId {
        let id = self.host_id(&entry.host);
        self.queued += 1;
        self.levels[level_of(entry.priority)] += 1;
        self.host_mut(id).admit(key, entry);
        id
    }

    /// Loads the head if needed, then reschedules or forgets the host. A host
    /// whose head cannot be loaded is left unscheduled until its next change.
    fn refresh(&mut self, id: HostId) -> Result<(), StoreError> {
        let loaded = self.ensure_head(id);
        self.reschedule(id);
        self.maybe_forget(id);
        loaded
    }

    /// Refreshes every host even if one fails; returns the first error.
    fn refresh_all(&mut self, ids: BTreeSet<HostId>) -> Result<(), StoreError> {
        ids.into_iter()
            .map(|id| self.refresh(id))
            .fold(Ok(()), Result::and)
    }

    fn count_parked(&mut self, alert_id: u64, host: String, delta: i64) {
        let apply = |n: &mut u64| *n = n.saturating_add_signed(delta);
        apply(self.parked.entry(alert_id).or_default());
        apply(self.parked_by_host.entry(host.clone()).or_default());
        if self.parked.get(&alert_id) == Some(&0) {
            self.parked.remove(&alert_id);
        }
        if self.parked_by_host.get(&host) == Some(&0) {
            self.parked_by_host.remove(&host);
        }
    }

    /// Removes matching queued (not leased) entries chunk by chunk; each chunk
    /// is one batch that also writes their records or parked copies.
    fn sweep(
        &mut self,
        host: Option<&str>,
        pred: &dyn Fn(&FrontierEntry) -> bool,
        action: SweepAction<'_>,
    ) -> Result<u64, StoreError> {
        Ok(self.sweep_from(host, pred, action, None, usize::MAX)?.0)
    }

    /// [`Frontier::sweep`] from the queue key after `from`, reading at most
    /// about `max_rows` rows; also returns the last key read when it stopped
    /// before the end.
    fn sweep_from(
        &mut self,
        host: Option<&str>,
        pred: &dyn Fn(&FrontierEntry) -> bool,
        action: SweepAction<'_>,
        from: Option<Vec<u8>>,
        max_rows: usize,
    ) -> Result<(u64, Option<Vec<u8>>), StoreError> {
        let prefix = match host {
            Some(h) => keys::queue_prefix(h),
            None => vec![keys::QUEUE],
        };
        let leased: HashSet<Vec<u8>> = self
            .hosts
            .iter()
            .flatten()
            .flat_map(|h| h.leased.iter().map(|l| l.key.clone()))
            .collect();
        let mut after: Option<Vec<u8>> = from;
        let mut touched = BTreeSet::new();
        let mut total = 0u64;
        let mut read = 0usize;
        let mut stopped = false;
        loop {
            if read >= max_rows {
                stopped = true;
                break;
            }
            let chunk = SCAN_CHUNK.min(max_rows - read);
            let rows = self
                .store
                .scan_after(&prefix, after.as_deref(), chunk, |k| leased.contains(k))?;
            let Some((last, _)) = rows.last() else { break };
            after = Some(last.clone());
            read += rows.len();
            total += self.sweep_rows(rows, pred, &action, &mut touched)?;
        }
        self.refresh_all(touched)?;
        Ok((total, after.filter(|_| stopped)))
    }

    /// Applies a sweep to one chunk of queue rows in one store write, then
    /// forgets the removed entries in memory; returns how many it removed.
    fn sweep_rows(
        &mut self,
        rows: Vec<RawEntry>,
        pred: &dyn Fn(&FrontierEntry) -> bool,
        action: &SweepAction<'_>,
        touched: &mut BTreeSet<HostId>,
    ) -> Result<u64, StoreError> {
        let mut batch = CrawlBatch::default();
        let mut removed = Vec::new();
        for (key, value) in rows {
            let Ok(entry) = decode(&value) else { continue };
            if !pred(&entry) {
                continue;
            }
            batch.dequeue(&key);
            match action {
                SweepAction::Record(record) => batch.record_page(&record(&entry)),
                SweepAction::Park(alert) => {
                    let (_, seq) = keys::parse_queue_key(&key).unwrap_or((0, 0));
                    batch.enqueue(&keys::parked_key(*alert, seq), &value);
                }
            }
            removed.push((key, entry));
        }
        if removed.is_empty() {
            return Ok(0);
        }
        self.store.apply(batch)?;
        let count = removed.len() as u64;
        for (key, entry) in removed {
            if let Some(&id) = self.ids.get(&entry.host) {
                self.host_mut(id).forget(&key, entry.priority);
                touched.insert(id);
            }
            self.queued = self.queued.saturating_sub(1);
            let level = &mut self.levels[level_of(entry.priority)];
            *level = level.saturating_sub(1);
            if let SweepAction::Park(alert) = action {
                self.count_parked(*alert, entry.host, 1);
            }
        }
        Ok(count)
    }

    /// Takes at most `max` of an alert's parked entries out of quarantine:
    /// back to the queue, or (with `record`) out of the crawl with a page
    /// record; also says whether any may remain.
    fn sweep_parked_some(
        &mut self,
        alert_id: u64,
        record: Option<&dyn Fn(&FrontierEntry) -> PageRecord>,
        max: usize,
    ) -> Result<(u64, bool), StoreError> {
        let prefix = keys::parked_prefix(alert_id);
        let mut total = 0u64;
        let mut read = 0usize;
        loop {
            if read >= max {
                return Ok((total, true));
            }
            // Every row found is removed, so each scan starts at the prefix again.
            let rows = self
                .store
                .scan_after(&prefix, None, SCAN_CHUNK.min(max - read), |_| false)?;
            if rows.is_empty() {
                break;
            }
            read += rows.len();
            let mut batch = CrawlBatch::default();
            let mut moved = Vec::new();
            let mut hosts = Vec::new();
            for (parked_key, value) in rows {
                batch.dequeue(&parked_key);
                let (Some((_, seq)), Ok(entry)) =
                    (keys::parse_parked_key(&parked_key), decode(&value))
                else {
                    tracing::error!("dropping an unreadable parked entry");
                    continue;
                };
                match record {
                    Some(record) => batch.record_page(&record(&entry)),
                    None => {
                        let key = keys::queue_key(&entry.host, level_of(entry.priority) as u8, seq);
                        batch.enqueue(&key, &value);
                        moved.push((key, entry.clone()));
                    }
                }
                hosts.push(entry.host);
            }
            self.store.apply(batch)?;
            total += hosts.len() as u64;
            for host in hosts {
                self.count_parked(alert_id, host, -1);
            }
            self.admit_all(moved)?;
        }
        self.parked.remove(&alert_id);
        Ok((total, false))
    }
}
