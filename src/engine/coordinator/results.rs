//! What the scheduler does with a finished fetch: politeness and breaker
//! bookkeeping, the page record, and admission of the page's links.

use std::time::{SystemTime, UNIX_EPOCH};

use tokio::time::Instant;
use url::Url;

use super::{Coordinator, MAX_ATTEMPTS};
use crate::engine::breaker::Outcome;
use crate::engine::dedup::url_fingerprint;
use crate::engine::fetch::FetchError;
use crate::engine::frontier::{FrontierEntry, Lease};
use crate::engine::store::{PageOutcome, PageRecord};
use crate::engine::tasks::{Fetched, Work};
use crate::engine::telemetry::{BreakerPhase, EngineEvent, Level};

pub fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

pub fn record_for(entry: &FrontierEntry, outcome: PageOutcome) -> PageRecord {
    PageRecord::without_fetch(&entry.url, &entry.host, entry.depth, unix_ms(), outcome)
}

impl Coordinator {
    pub fn handle_work(&mut self, work: Work) {
        let now = Instant::now();
        match work {
            Work::Page { lease, result } => {
                self.in_flight -= 1;
                if let Some(host) = self.hosts.get_mut(&lease.entry.host) {
                    host.in_flight = host.in_flight.saturating_sub(1);
                }
                match result {
                    Ok(fetched) => self.page_fetched(lease, *fetched, now),
                    Err(error) => self.page_failed(lease, error, now),
                }
            }
            Work::Robots {
                host,
                verdict,
                ttl,
                elapsed,
            } => {
                self.robots_in_flight -= 1;
                self.robots_settled(&host, verdict, ttl, elapsed, now);
            }
        }
    }

    fn page_failed(&mut self, lease: Lease, error: FetchError, now: Instant) {
        let host_key = lease.entry.host.clone();
        let url_fp = url_fingerprint(&lease.entry.url);
        if let Some(host) = self.hosts.get_mut(&host_key) {
            host.status.errors += 1;
            host.latency.record(error.elapsed);
            host.politeness
                .record_response(error.elapsed, None, None, now);
        }
        self.emit(EngineEvent::Fetched {
            host: host_key.clone(),
            url: lease.entry.url.clone(),
            status: None,
            latency: error.elapsed,
            bytes: 0,
            error: Some(error.message.clone()),
        });
        if error.kind.is_host_failure() {
            self.breaker_outcome(&host_key, Outcome::Failure(error.message.clone()), now);
            if self.retry_or_requeue(&host_key, url_fp, lease.clone()) {
                self.schedule_next(&host_key, now);
                return;
            }
        }
        self.attempts.remove(&url_fp);
        self.counters.errors += 1;
        let record = record_for(
            &lease.entry,
            PageOutcome::Error {
                kind: error.kind.label().to_string(),
                message: error.message,
            },
        );
        self.commit(&lease, &record, Vec::new());
        self.schedule_next(&host_key, now);
    }

    /// After a host failure the URL goes to the back of its host's queue, so
    /// retries are spread out and a failing URL never blocks the host. While
    /// the host's breaker is not closed the URL is not to blame and keeps its
    /// attempts; otherwise it has `MAX_ATTEMPTS`. False when the URL has used
    /// them up and should be recorded as an error.
    fn retry_or_requeue(&mut self, host_key: &str, url_fp: u64, lease: Lease) -> bool {
        let host_down = self
            .hosts
            .get(host_key)
            .is_some_and(|h| h.breaker.phase() != BreakerPhase::Closed);
        if !host_down && !self.retry_later(url_fp) {
            return false;
        }
        if let Err(e) = self.frontier.requeue(lease) {
            self.log(Level::Error, format!("storage error, stopping: {e}"));
            self.begin_drain("storage error");
        }
        true
    }

    /// Counts an attempt; true if the URL should be tried again.
    fn retry_later(&mut self, url_fp: u64) -> bool {
        let attempts = self.attempts.entry(url_fp).or_insert(0);
        *attempts += 1;
        *attempts < MAX_ATTEMPTS
    }

    pub fn commit(&mut self, lease: &Lease, record: &PageRecord, outlinks: Vec<FrontierEntry>) {
        self.unsynced = true;
        if let Err(e) = self.frontier.complete(lease, record, outlinks) {
            // Storage failure is fatal for consistency: stop cleanly rather than lose URLs.
            self.log(Level::Error, format!("storage error, stopping: {e}"));
            self.begin_drain("storage error");
        }
    }

    pub fn record_robots_denied(&mut self, lease: Lease) {
        self.counters.robots_denied += 1;
        let record = record_for(&lease.entry, PageOutcome::RobotsDenied);
        self.commit(&lease, &record, Vec::new());
    }

    pub fn record_unfetchable(&mut self, lease: Lease, why: &str) {
        self.counters.errors += 1;
        let record = record_for(
            &lease.entry,
            PageOutcome::Error {
                kind: "invalid-url".into(),
                message: why.into(),
            },
        );
        self.commit(&lease, &record, Vec::new());
    }

    fn page_fetched(&mut self, lease: Lease, page: Fetched, now: Instant) {
        let host_key = lease.entry.host.clone();
        let url_fp = url_fingerprint(&lease.entry.url);
        let status = page.status;
        if let Some(host) = self.hosts.get_mut(&host_key) {
            host.status.record_status(status);
            host.fetched += 1;
            host.latency.record(page.elapsed);
            host.politeness
                .record_response(page.elapsed, Some(status), page.retry_after, now);
        }
        self.emit(EngineEvent::Fetched {
            host: host_key.clone(),
            url: lease.entry.url.clone(),
            status: Some(status),
            latency: page.elapsed,
            bytes: page.bytes,
            error: None,
        });
        if let Some(e) = &page.warc_error {
            self.log(Level::Error, format!("{}: {e}", lease.entry.url));
        }
        let failure = status >= 500 || status == 429;
        let outcome = match status {
            429 => Outcome::RateLimited,
            s if s >= 500 => Outcome::Failure(format!("HTTP {s}")),
            _ => Outcome::Success,
        };
        self.breaker_outcome(&host_key, outcome, now);
        if failure && self.retry_or_requeue(&host_key, url_fp, lease.clone()) {
            self.schedule_next(&host_key, now);
            return;
        }
        self.attempts.remove(&url_fp);
        self.counters.pages_fetched += 1;
        self.counters.bytes += page.bytes;

        let mut record = record_for(&lease.entry, PageOutcome::Fetched { status });
        record.bytes = page.bytes;
        record.etag = page.etag.clone();
        record.last_modified = page.last_modified.clone();
        record.content_digest = page.digest.as_ref().map(|d| d.warc_label());
        let mut links: Vec<(Url, bool)> = Vec::new();

        if status == 304 {
            self.counters.not_modified += 1;
            record.outcome = PageOutcome::NotModified;
            self.keep_unchanged_page(&mut record);
        } else if (300..400).contains(&status) {
            match page.location {
                Some(location) => {
                    self.counters.redirects += 1;
                    record.outcome = PageOutcome::Redirect {
                        status,
                        location: location.to_string(),
                    };
                    if u32::from(lease.entry.redirects) < self.cfg.fetch.max_redirects {
                        links.push((location, true));
                    } else {
                        self.counters.errors += 1;
                        record.outcome = PageOutcome::Error {
                            kind: "too-many-redirects".into(),
                            message: format!(
                                "more than {} redirects; last Location {location}",
                                self.cfg.fetch.max_redirects
                            ),
                        };
                    }
                }
                None => {
                    record.outcome = PageOutcome::Error {
                        kind: "bad-redirect".into(),
                        message: format!("HTTP {status} without a usable Location"),
                    }
                }
            }
        } else if let Some(extracted) = &page.extracted {
            record.title = extracted.title.clone();
            let duplicate_of = page
                .digest
                .as_ref()
                .and_then(|d| self.first_with_digest(d, &lease.entry.url));
            if let Some(of) = duplicate_of {
                // Links of duplicate content are not followed (BUbiNG).
                self.counters.duplicates += 1;
                record.outcome = PageOutcome::Duplicate { of };
            } else if !page.directives.nofollow {
                links.extend(
                    extracted
                        .links
                        .iter()
                        .filter(|l| !l.nofollow)
                        .map(|l| (l.url.clone(), false)),
                );
            }
        }
        let is_redirect = matches!(record.outcome, PageOutcome::Redirect { .. });
        let parent = Url::parse(&lease.entry.url).ok();
        let outlinks = match parent {
            Some(parent) => self.admit_links(&parent, &lease.entry, links, is_redirect),
            None => Vec::new(),
        };
        if status != 304 {
            record.outlinks = outlinks.len() as u32;
        }
        let new_links = outlinks.len();
        self.commit(&lease, &record, outlinks);
        if let (Some(extracted), Ok(url)) = (&page.extracted, Url::parse(&lease.entry.url)) {
            if let Some(d) = self
                .traps
                .on_fetched(&url, Some(extracted.simhash), new_links)
            {
                self.raise_alert(d);
            }
        }
        self.schedule_next(&host_key, now);
    }
}
