//! What the crawl loop does with a finished fetch: politeness and breaker
//! bookkeeping, retries, the page record, and admission of the page's links.

use std::collections::HashMap;
use std::time::{SystemTime, UNIX_EPOCH};

use tokio::time::Instant;
use url::Url;

use super::admitted::Outgoing;
use super::Coordinator;
use crate::engine::archive::EarlierFetch;
use crate::engine::breaker::Outcome;
use crate::engine::dedup::url_fingerprint;
use crate::engine::extract::{Extracted, PageLinks};
use crate::engine::fetch::{FetchError, FetchErrorKind};
use crate::engine::frontier::{Completion, FrontierEntry, Lease};
use crate::engine::recrawl;
use crate::engine::store::{PageOutcome, PageRecord, UrlKind};
use crate::engine::tasks::{Fetched, Work};
use crate::engine::telemetry::EngineEvent;

/// Attempts for a URL whose host failed (connect, timeout, reset, 5xx).
pub const MAX_ATTEMPTS: u8 = 3;

/// Attempts for a URL whose body trickled in until the total timeout cut it:
/// each attempt holds a connection (and the end of the crawl) for the whole
/// `fetch.total_timeout`, so it is tried once more, not `MAX_ATTEMPTS` times.
pub const MAX_ATTEMPTS_AFTER_TOTAL_TIMEOUT: u8 = 2;

/// How many attempts a URL gets when its latest failure was `kind`, and
/// whether that failure counts even while the host's breaker is open (a total
/// timeout always does: the slow answer is what must not repeat). `None` is
/// a 429 or 5xx answer.
fn retry_policy(kind: Option<FetchErrorKind>) -> (u8, bool) {
    match kind {
        Some(FetchErrorKind::TotalTimeout) => (MAX_ATTEMPTS_AFTER_TOTAL_TIMEOUT, true),
        _ => (MAX_ATTEMPTS, false),
    }
}

pub(super) fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// The record of a URL that was not fetched (or not successfully).
pub(super) fn record_for(entry: &FrontierEntry, outcome: PageOutcome) -> PageRecord {
    PageRecord {
        kind: entry.kind,
        ..PageRecord::without_fetch(&entry.url, &entry.host, entry.depth, unix_ms(), outcome)
    }
}

/// Attempts so far of URLs that failed transiently (by URL fingerprint).
#[derive(Default)]
pub(super) struct Retries {
    attempts: HashMap<u64, u8>,
}

impl Retries {
    /// Counts an attempt; true if the URL, allowed `max_attempts` in all,
    /// should be tried again.
    fn try_again(&mut self, url_fp: u64, max_attempts: u8) -> bool {
        let attempts = self.attempts.entry(url_fp).or_insert(0);
        *attempts = attempts.saturating_add(1);
        *attempts < max_attempts
    }

    /// The URL is done with, one way or another.
    fn forget(&mut self, url_fp: u64) {
        self.attempts.remove(&url_fp);
    }
}

/// A page's links to follow (unless nofollow; a link's own nofollow is
/// read as they are admitted), then its resources to check (loading a
/// resource is not following a link: nofollow keeps them).
fn followed(extracted: &mut Extracted, nofollow: bool) -> Outgoing {
    let links = std::mem::take(&mut extracted.links);
    let resources = std::mem::take(&mut extracted.resources);
    Outgoing {
        links: if nofollow {
            PageLinks::default()
        } else {
            links
        },
        whole: resources
            .into_iter()
            .map(|u| (u, UrlKind::Resource))
            .collect(),
    }
}

impl Coordinator {
    pub(super) fn handle_work(&mut self, work: Work) {
        let now = Instant::now();
        match work {
            Work::Page { lease, result } => {
                self.slots.end_page();
                self.hosts.fetch_ended(&lease.entry.host);
                match result {
                    Ok(fetched) => self.page_fetched(lease, *fetched, now),
                    Err(error) => self.page_failed(lease, error, now),
                }
            }
            Work::Robots {
                host,
                origin,
                answer,
                warc_error,
            } => {
                self.slots.end_robots();
                if let Some(e) = warc_error {
                    // As for a page: the crawl pauses with the reason. The
                    // verdict itself is sound and holds.
                    self.storage_fault(format!("archiving the robots.txt of {origin}: {e}"));
                }
                // A verdict may give the host up: its queue must be complete.
                self.sync();
                self.robots_settled(&host, &origin, answer, now);
            }
            Work::Probe { lease, result } => {
                self.slots.end_page();
                self.hosts.fetch_ended(&lease.entry.host);
                self.probe_answered(lease, result, now);
            }
            Work::Sitemap { lease, result } => {
                self.slots.end_page();
                self.hosts.fetch_ended(&lease.entry.host);
                self.sitemap_answered(lease, result, now);
            }
        }
    }

    fn page_failed(&mut self, lease: Lease, error: FetchError, now: Instant) {
        let host = lease.entry.host.clone();
        let url_fp = url_fingerprint(&lease.entry.url);
        self.hosts.record_failure(&host, error.elapsed, now);
        if error.kind == FetchErrorKind::TotalTimeout {
            self.hosts.back_off(&host, error.elapsed);
        }
        if error.kind == FetchErrorKind::PrivateAddress {
            self.hosts.record_refusal(&host, &error.message);
            self.stats.count().refused_private += 1;
        }
        self.outbox.emit(EngineEvent::Fetched {
            host: host.clone(),
            url: lease.entry.url.clone(),
            status: None,
            latency: error.elapsed,
            bytes: 0,
            // Led by the kind, so the summary counts errors by it ("timeout: …").
            error: Some(format!("{}: {}", error.kind.label(), error.message)),
        });
        if error.kind.is_host_failure() {
            self.breaker_outcome(&host, Outcome::Failure(error.message.clone()), now);
            if self.retry_or_requeue(&host, url_fp, &lease, Some(error.kind)) {
                self.schedule_next(&host, now);
                return;
            }
        }
        self.retries.forget(url_fp);
        self.stats.count().count_error(error.kind.label());
        let refused = error.kind == FetchErrorKind::PrivateAddress;
        self.count_recorded(&host, None, refused);
        let record = record_for(
            &lease.entry,
            PageOutcome::Error {
                kind: error.kind.label().to_string(),
                message: error.message,
            },
        );
        self.commit(lease, record, Vec::new());
        self.schedule_next(&host, now);
    }

    /// A fetched URL is recorded: counted crawl-wide and for its host alike,
    /// so the host rows add up to the crawl's figures.
    pub(super) fn count_recorded(&mut self, host: &str, status: Option<u16>, refused: bool) {
        self.stats.count().responses.record(status, refused);
        self.hosts.count_recorded(host, status, refused);
    }

    /// After a host failure the URL goes to the back of its host's queue, so
    /// retries are spread out and a failing URL never blocks the host. While
    /// the host's breaker is not closed the URL is not to blame and keeps its
    /// attempts; otherwise it has `MAX_ATTEMPTS` (a total timeout: always
    /// counted, `MAX_ATTEMPTS_AFTER_TOTAL_TIMEOUT`). False when the URL has
    /// used them up and should be recorded as an error.
    fn retry_or_requeue(
        &mut self,
        host: &str,
        url_fp: u64,
        lease: &Lease,
        kind: Option<FetchErrorKind>,
    ) -> bool {
        let (max_attempts, counts_while_down) = retry_policy(kind);
        let excused = !counts_while_down && self.hosts.breaker_down(host);
        if !excused && !self.retries.try_again(url_fp, max_attempts) {
            return false;
        }
        if let Err(e) = self.frontier.requeue(lease.clone()) {
            self.storage_failed("requeueing a URL", e);
            // Its queue entry is still stored: put it back where it was.
            self.release(lease.clone());
        }
        true
    }

    /// Ends a fetched page's lease: the page record, the queue key's removal
    /// and the new outlinks are written together with the rest of its group
    /// (group_commit.rs). Its host's turn ends now: the answer is handled.
    pub(super) fn commit(
        &mut self,
        lease: Lease,
        record: PageRecord,
        outlinks: Vec<FrontierEntry>,
    ) {
        self.frontier.answered(&lease);
        let completion = Completion {
            lease,
            record,
            outlinks,
        };
        self.group_commit.add(completion, Instant::now());
    }

    /// Ends a lease that made no request (robots.txt denied, unfetchable) in
    /// a batch of its own, so such URLs do not wait for a group each.
    fn commit_now(&mut self, lease: Lease, record: &PageRecord) {
        if let Err(e) = self.frontier.complete(&lease, record, Vec::new()) {
            self.storage_failed(&format!("recording {}", lease.entry.url), e);
            // Nothing of the page was stored: its URL stays queued.
            self.release(lease);
        }
    }

    pub(super) fn record_robots_denied(&mut self, lease: Lease) {
        self.stats.count().robots_denied += 1;
        let record = record_for(&lease.entry, PageOutcome::RobotsDenied);
        self.commit_now(lease, &record);
    }

    pub(super) fn record_unfetchable(&mut self, lease: Lease, why: &str) {
        self.stats.count().count_error("invalid-url");
        let record = record_for(
            &lease.entry,
            PageOutcome::Error {
                kind: "invalid-url".into(),
                message: why.into(),
            },
        );
        self.commit_now(lease, &record);
    }

    fn page_fetched(&mut self, lease: Lease, page: Fetched, now: Instant) {
        let host = lease.entry.host.clone();
        let url_fp = url_fingerprint(&lease.entry.url);
        let status = page.status;
        // The delay runs from the answer, not from the end of its processing.
        let answered_at = page.answered_at;
        self.hosts
            .record_answer(&host, status, page.elapsed, page.retry_after, answered_at);
        self.outbox.emit(EngineEvent::Fetched {
            host: host.clone(),
            url: lease.entry.url.clone(),
            status: Some(status),
            latency: page.elapsed,
            bytes: page.bytes,
            error: None,
        });
        if let Some(e) = page.archived.error {
            // A page is done only once archived: it stays queued for after
            // the fault, and nothing of it is recorded meanwhile.
            self.storage_fault(format!("archiving {}: {e}", lease.entry.url));
            self.release(lease);
            self.schedule_next(&host, answered_at);
            return;
        }
        let (outcome, failure) = match status {
            429 => (Outcome::RateLimited, true),
            s if s >= 500 => (Outcome::Failure(format!("HTTP {s}")), true),
            _ => (Outcome::Success, false),
        };
        self.breaker_outcome(&host, outcome, now);
        if failure && self.retry_or_requeue(&host, url_fp, &lease, None) {
            self.schedule_next(&host, answered_at);
            return;
        }
        self.retries.forget(url_fp);
        self.record_answered(lease, page);
    }

    /// An answer kept: counted, recorded, its links admitted and the trap
    /// detector told.
    fn record_answered(&mut self, lease: Lease, mut page: Fetched) {
        let (host, status, answered_at) = (lease.entry.host.clone(), page.status, page.answered_at);
        if self.is_fetched_resource(&lease.entry) {
            let counters = self.stats.count();
            counters.resources_fetched += 1;
            counters.resource_bytes += page.bytes;
        } else if lease.entry.kind.is_check() {
            // Its size is what the server says: nothing was downloaded.
            self.stats.count().checked += 1;
        } else {
            let counters = self.stats.count();
            counters.pages_fetched += 1;
            counters.bytes += page.bytes;
            counters.bodies_cut += u64::from(page.truncated);
            self.count_recorded(&host, Some(status), false);
        }
        if let Some(saved) = page.archived.revisit_saved {
            let counters = self.stats.count();
            counters.revisits += 1;
            counters.revisit_bytes_saved += saved;
        }
        let (mut record, links) = self.page_record(&lease, &mut page);
        // The body's text and links are done with: a dense page's links are
        // admitted without its other findings beside them.
        page.extracted = None;
        let is_redirect = matches!(record.outcome, PageOutcome::Redirect { .. });
        let admitted = self.admit_links(&page.url, &lease.entry, links, is_redirect);
        if status != 304 {
            // Links queued: a page's checks are not its links; a check's
            // one outlink is its redirect.
            let kind = lease.entry.kind;
            let queued = admitted.count(|k| k == kind || !k.is_check());
            record.outlinks = queued as u32;
            if kind == UrlKind::Resource && !is_redirect {
                self.stats.count().stylesheet_resources += queued as u64;
            }
        }
        let new_links = admitted.len();
        let exact_copy = matches!(record.outcome, PageOutcome::Duplicate { .. });
        self.commit(lease, record, admitted.entries);
        let simhash = page.fingerprint.map(|f| f.simhash);
        if let Some(simhash) = simhash {
            if let Some(d) = self
                .traps
                .on_fetched(&page.url, Some(simhash), new_links, exact_copy)
            {
                // The alert's sweep must find the group's links queued.
                self.sync();
                self.raise_alert(d);
            }
            if let Some(suspect) = self.traps.take_suspect() {
                self.suspect_soft_404(suspect);
            }
        }
        self.schedule_next(&host, answered_at);
    }

    /// The page's record by its answer (a 304, a redirect, a duplicate or a
    /// page with content), and the links to follow from it (moved out of
    /// `page`).
    fn page_record(&mut self, lease: &Lease, page: &mut Fetched) -> (PageRecord, Outgoing) {
        let status = page.status;
        let mut record = record_for(&lease.entry, PageOutcome::Fetched { status });
        record.bytes = page.bytes;
        record.truncated = page.truncated;
        record.etag = page.etag.clone();
        record.last_modified = page.last_modified.clone();
        record.content_digest = page.digest.as_ref().map(|d| d.warc_label());
        record.set_content_type(page.content_type.as_deref());
        record.warc = page.archived.at.clone();
        record.response_ms = Some(u32::try_from(page.elapsed.as_millis()).unwrap_or(u32::MAX));
        record.noindex = page.noindex;
        let mut links = Outgoing::default();
        if status == 304 {
            self.stats.count().not_modified += 1;
            record.outcome = PageOutcome::NotModified {
                pass: self.run.recrawl_pass,
            };
            self.keep_unchanged_page(&mut record);
        } else if (300..400).contains(&status) {
            record.outcome = self.redirect_outcome(lease, status, page.location.as_ref());
            if let (PageOutcome::Redirect { .. }, Some(location)) =
                (&record.outcome, &page.location)
            {
                // A checked URL's redirect is checked as what it was found as.
                links.whole.push((location.clone(), lease.entry.kind));
            }
        } else if lease.entry.kind.is_check() {
            if let Some(stylesheet) = &page.extracted {
                links = self.stylesheet_outgoing(stylesheet);
            }
        } else if let Some(extracted) = &mut page.extracted {
            record.title = std::mem::take(&mut extracted.title);
            record.simhash = page.fingerprint.map(|f| f.simhash);
            record.simhash_check = page.fingerprint.map(|f| f.check);
            record.simhash_whole = page.fingerprint.map(|f| f.whole);
            record.canonical = extracted.canonical.as_ref().map(|u| u.to_string());
            record.facts = Some(std::mem::take(&mut extracted.facts));
            record.custom = std::mem::take(&mut extracted.custom);
            self.count_links_not_taken(&mut record, extracted);
            let refresh = extracted.refresh.take();
            if let Some(target) = refresh.filter(|t| t.as_str() != lease.entry.url) {
                // A meta refresh is a redirect the page makes (as a browser
                // follows it): its target is followed as a Location is.
                record.outcome = self.redirect_outcome(lease, status, Some(&target));
                if matches!(record.outcome, PageOutcome::Redirect { .. }) {
                    links.whole.push((target, UrlKind::Page));
                }
                return (record, links);
            }
            // A payload the archive just recorded as this URL's is no copy:
            // no second look-up on the crawl loop.
            let duplicate_of = page
                .digest
                .as_ref()
                .filter(|_| !page.archived.first_of_payload)
                .and_then(|d| self.first_with_digest(d, &lease.entry.url));
            if let Some(of) = duplicate_of {
                // Links of duplicate content are not followed (BUbiNG).
                self.stats.count().duplicates += 1;
                record.outcome = PageOutcome::Duplicate { of };
            } else {
                if !page.directives.nofollow {
                    self.record_fragment_links(&lease.entry.url, &extracted.fragments);
                }
                links = followed(extracted, page.directives.nofollow);
            }
        }
        (record, links)
    }

    /// Keeps the page's `#fragment` links, to check their targets later.
    fn record_fragment_links(&mut self, source: &str, fragments: &[(String, String)]) {
        if fragments.is_empty() {
            return;
        }
        let pairs = fragments
            .iter()
            .map(|(page, f)| (page.as_str(), f.as_str()));
        if let Err(e) = self.store.add_fragment_links(source, pairs) {
            self.storage_failed("recording #fragment links", e);
        }
    }

    /// The page's links past the per-page caps, on its record and in the
    /// counters; over-long URLs count as filtered, as the scope filter's do.
    fn count_links_not_taken(&mut self, record: &mut PageRecord, extracted: &Extracted) {
        let cut = extracted.links_cut;
        record.links_dropped = u32::try_from(cut).unwrap_or(u32::MAX);
        let found = extracted
            .links
            .len()
            .saturating_add(cut)
            .saturating_add(extracted.urls_too_long);
        record.links_found = Some(u32::try_from(found).unwrap_or(u32::MAX));
        let counters = self.stats.count();
        counters.filtered += extracted.urls_too_long as u64;
        counters.resources_cut += extracted.resources_cut as u64;
        if cut > 0 {
            counters.links_cut += cut as u64;
            counters.pages_cut += 1;
        }
    }

    /// A URL's last fetch, during a recrawl pass.
    pub(super) fn earlier_fetch(&self, url: &str) -> Option<EarlierFetch> {
        if self.run.recrawl_pass == 0 {
            return None;
        }
        recrawl::earlier_fetch(&self.store, url)
    }

    /// A 304 keeps what the page's last fetch stored.
    fn keep_unchanged_page(&self, record: &mut PageRecord) {
        recrawl::keep_unchanged_page(&self.store, record);
    }

    /// A 3xx, or a meta refresh: followed as a link within the redirect limit.
    fn redirect_outcome(
        &mut self,
        lease: &Lease,
        status: u16,
        location: Option<&Url>,
    ) -> PageOutcome {
        let Some(location) = location else {
            self.stats.count().count_error("bad-redirect");
            return PageOutcome::Error {
                kind: "bad-redirect".into(),
                message: format!("HTTP {status} without a usable Location"),
            };
        };
        self.stats.count().redirects += 1;
        if u32::from(lease.entry.redirects) < self.cfg.fetch.max_redirects {
            return PageOutcome::Redirect {
                status,
                location: location.to_string(),
            };
        }
        self.stats.count().count_error("too-many-redirects");
        PageOutcome::Error {
            kind: "too-many-redirects".into(),
            message: format!(
                "more than {} redirects; last Location {location}",
                self.cfg.fetch.max_redirects
            ),
        }
    }
}

#[cfg(test)]
#[path = "results_tests.rs"]
mod tests;
