//! What the scheduler does with a finished fetch: politeness and breaker
//! bookkeeping, the page record, and admission of the page's links.

use std::collections::HashSet;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::time::Instant;
use url::Url;

use super::breaker::{Outcome, Transition};
use super::dedup::url_fingerprint;
use super::fetch::FetchError;
use super::frontier::{FrontierEntry, Hold, Lease};
use super::host::RobotsSlot;
use super::prioritize::priority;
use super::robots::RobotsVerdict;
use super::scheduler::{Scheduler, Timer, MAX_ATTEMPTS};
use super::store::{PageOutcome, PageRecord, Tree};
use super::tasks::{Fetched, Work};
use super::telemetry::{BreakerPhase, EngineEvent, Level};
use super::url_norm;

pub fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

pub fn record_for(entry: &FrontierEntry, outcome: PageOutcome) -> PageRecord {
    PageRecord::without_fetch(&entry.url, &entry.host, entry.depth, unix_ms(), outcome)
}

impl Scheduler {
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

    /// Sets when the host may be asked again, from its politeness state.
    fn schedule_next(&mut self, host_key: &str, now: Instant) {
        let Some(host) = self.hosts.get_mut(host_key) else {
            return;
        };
        let (delay, source) = host.politeness.next_delay(
            &self.cfg.politeness,
            self.global_delay,
            host.robots.crawl_delay(),
        );
        host.delay = (delay, source);
        self.frontier.set_not_before(host_key, now + delay);
    }

    fn breaker_outcome(&mut self, host_key: &str, outcome: Outcome, now: Instant) {
        let Some(host) = self.hosts.get_mut(host_key) else {
            return;
        };
        let transition = host.breaker.record(outcome, now, &self.cfg.breaker);
        if let Some(t) = transition {
            self.breaker_transition(host_key, t, now);
        }
    }

    pub fn breaker_transition(&mut self, host_key: &str, t: Transition, now: Instant) {
        let level = if t.to == BreakerPhase::Open {
            Level::Warn
        } else {
            Level::Info
        };
        let message = format!(
            "breaker {host_key}: {} -> {} ({})",
            t.from.label(),
            t.to.label(),
            t.reason
        );
        match level {
            Level::Warn => tracing::warn!("{message}"),
            _ => tracing::info!("{message}"),
        }
        self.emit(EngineEvent::BreakerChanged {
            host: host_key.to_string(),
            from: t.from,
            to: t.to,
            reason: t.reason.clone(),
        });
        match t.to {
            BreakerPhase::Open => self.hold_for_breaker(host_key, now),
            BreakerPhase::Closed => {
                if let Some(host) = self.hosts.get_mut(host_key) {
                    host.breaker_held = false;
                }
                self.frontier.set_hold(host_key, Hold::Breaker, false);
            }
            BreakerPhase::HalfOpen => {}
        }
        self.save_host(host_key);
    }

    /// Keeps the host's queue intact but hands out nothing until the next probe.
    pub fn hold_for_breaker(&mut self, host_key: &str, now: Instant) {
        let Some(host) = self.hosts.get_mut(host_key) else {
            return;
        };
        if host.breaker.gave_up(now, &self.cfg.breaker) {
            let reason = format!(
                "host kept failing for {} (breaker)",
                humantime::format_duration(self.cfg.breaker.give_up_after)
            );
            self.give_up_host(host_key, &reason);
            return;
        }
        let probe_at = host.breaker.next_probe_at();
        if !host.breaker_held {
            host.breaker_held = true;
            self.frontier.set_hold(host_key, Hold::Breaker, true);
        }
        if let Some(at) = probe_at {
            self.schedule(at.max(now), Timer::BreakerProbe, host_key);
        }
    }

    /// The cooldown is over: let the frontier hand out one URL as the probe.
    pub fn breaker_probe_due(&mut self, host_key: &str, now: Instant) {
        let Some(host) = self.hosts.get_mut(host_key) else {
            return;
        };
        if host.breaker.phase() == BreakerPhase::Closed {
            host.breaker_held = false;
            self.frontier.set_hold(host_key, Hold::Breaker, false);
            return;
        }
        match host.breaker.next_probe_at() {
            Some(at) if at > now => self.schedule(at, Timer::BreakerProbe, host_key),
            _ => {
                host.breaker_held = false;
                self.frontier.set_hold(host_key, Hold::Breaker, false);
            }
        }
    }

    /// Records every queued URL of a host as not crawled and stops scheduling it.
    pub fn give_up_host(&mut self, host_key: &str, reason: &str) {
        if let Some(host) = self.hosts.get_mut(host_key) {
            host.finished = true;
        }
        self.frontier.set_hold(host_key, Hold::Finished, true);
        let outcome = PageOutcome::NotCrawled {
            reason: reason.to_string(),
        };
        let dropped = self
            .frontier
            .drop_host(host_key, &|e| record_for(e, outcome.clone()))
            .unwrap_or_else(|e| {
                tracing::error!("recording given-up URLs of {host_key}: {e}");
                0
            });
        self.log(
            Level::Warn,
            format!(
                "gave up {host_key}: {reason}; {dropped} queued URL(s) recorded as not crawled"
            ),
        );
    }

    fn robots_settled(
        &mut self,
        host_key: &str,
        verdict: RobotsVerdict,
        ttl: Duration,
        elapsed: Duration,
        now: Instant,
    ) {
        let Some(host) = self.hosts.get_mut(host_key) else {
            return;
        };
        host.politeness.record_response(elapsed, None, None, now);
        let expires = now + ttl;
        let mut release = true;
        let mut message = None;
        host.robots = match verdict {
            RobotsVerdict::Parsed(rules) => {
                if !rules.sitemaps().is_empty() {
                    message = Some(format!(
                        "{host_key}: robots.txt lists sitemap(s) {}",
                        rules.sitemaps().join(", ")
                    ));
                }
                RobotsSlot::Rules {
                    rules: Box::new(rules),
                    expires,
                }
            }
            RobotsVerdict::AllowAll => RobotsSlot::AllowAll { expires },
            RobotsVerdict::DisallowAll => {
                release = false;
                RobotsSlot::DisallowAll
            }
            RobotsVerdict::Unavailable { retry_after } => {
                release = false;
                let mut backoff = match std::mem::replace(&mut host.robots, RobotsSlot::GaveUp) {
                    RobotsSlot::Postponed { backoff, .. } => backoff,
                    _ => super::robots::RobotsBackoff::new(&self.cfg.robots),
                };
                let retry_at = backoff.record_failure(now, retry_after);
                if backoff.gave_up(now) {
                    RobotsSlot::GaveUp
                } else {
                    RobotsSlot::Postponed {
                        backoff,
                        retry_at,
                        fetching: false,
                    }
                }
            }
        };
        if let Some(m) = message {
            self.log(Level::Info, m);
        }
        let state = self.hosts[host_key].robots.state();
        match &self.hosts[host_key].robots {
            RobotsSlot::DisallowAll => {
                if let Some(h) = self.hosts.get_mut(host_key) {
                    h.finished = true;
                }
                self.counters.robots_denied += self.frontier.host_queued(host_key);
                let dropped = self
                    .frontier
                    .drop_host(host_key, &|e| record_for(e, PageOutcome::RobotsDenied))
                    .unwrap_or(0);
                self.frontier.set_hold(host_key, Hold::Finished, true);
                self.log(
                    Level::Warn,
                    format!("{host_key}: robots.txt forbids the whole site; {dropped} URL(s) not crawled"),
                );
            }
            RobotsSlot::GaveUp => {
                let reason = "robots.txt never became available".to_string();
                self.give_up_host(host_key, &reason);
            }
            RobotsSlot::Postponed { retry_at, .. } => {
                let at = *retry_at;
                self.schedule(at, Timer::RobotsRetry, host_key);
                self.log(
                    Level::Warn,
                    format!("{host_key}: robots.txt unavailable ({state:?}); host postponed"),
                );
            }
            _ => {}
        }
        if release {
            self.frontier.set_hold(host_key, Hold::Robots, false);
        }
        self.schedule_next(host_key, now);
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
        record.outlinks = outlinks.len() as u32;
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

    /// Exact-duplicate check; remembers the first URL seen with each digest.
    fn first_with_digest(
        &mut self,
        digest: &super::dedup::ContentDigest,
        url: &str,
    ) -> Option<String> {
        let mut key = b"digest/".to_vec();
        key.extend_from_slice(&digest.0);
        match self.store.get::<String>(Tree::Meta, &key) {
            Ok(Some(first)) if first != url => Some(first),
            Ok(Some(_)) => None,
            Ok(None) => {
                let _ = self.store.put(Tree::Meta, &key, &url.to_string());
                None
            }
            Err(_) => None,
        }
    }

    /// Normalization, filters, rules, seen check, traps and quarantine for a
    /// page's links; returns the entries to queue.
    fn admit_links(
        &mut self,
        parent: &Url,
        parent_entry: &FrontierEntry,
        links: Vec<(Url, bool)>,
        redirect: bool,
    ) -> Vec<FrontierEntry> {
        let depth = if redirect {
            parent_entry.depth
        } else {
            parent_entry.depth + 1
        };
        let mut batch_seen = HashSet::new();
        let mut admitted = Vec::new();
        let mut given_up = Vec::new();
        let open_alerts_before = self.alert_rules.len();
        for (mut url, _) in links {
            url_norm::normalize(&mut url);
            if self.filter.check(&url).is_err() {
                self.counters.filtered += 1;
                continue;
            }
            if depth > self.cfg.max_depth {
                self.counters.filtered += 1;
                continue;
            }
            let host = url_norm::host_key(&url);
            if self.rules.matches(url.as_str(), &host).is_some() {
                self.counters.blocked_by_rules += 1;
                continue;
            }
            let fp = url_fingerprint(url.as_str());
            if !batch_seen.insert(fp) || self.is_seen(fp) {
                continue;
            }
            if let Some(d) = self.traps.on_discovered(parent, &url, depth) {
                self.raise_alert(d);
            }
            let entry = FrontierEntry {
                priority: priority(&url, depth),
                url: url.to_string(),
                host,
                depth,
                redirects: if redirect {
                    parent_entry.redirects.saturating_add(1)
                } else {
                    0
                },
            };
            if let Some(alert_id) = self.quarantining_alert(&entry) {
                self.bloom.insert(fp);
                if let Err(e) = self.frontier.park_new(alert_id, vec![entry]) {
                    tracing::error!("parking URL: {e}");
                }
                continue;
            }
            self.bloom.insert(fp);
            if let Some(reason) = self
                .hosts
                .get(&entry.host)
                .and_then(|h| h.finished_reason())
            {
                // A given-up host takes no new work; its URLs are recorded at once.
                given_up.push(record_for(&entry, reason));
                continue;
            }
            admitted.push(entry);
        }
        if !given_up.is_empty() {
            if let Err(e) = self.store.record_pages(&given_up) {
                tracing::error!("recording URLs of given-up hosts: {e}");
            }
        }
        if self.alert_rules.len() != open_alerts_before {
            // An alert raised by this page's links also covers its earlier links.
            let (parked, free): (Vec<_>, Vec<_>) = admitted
                .into_iter()
                .partition(|e| self.quarantining_alert(e).is_some());
            for entry in parked {
                let alert_id = self.quarantining_alert(&entry).expect("partitioned");
                if let Err(e) = self.frontier.park_new(alert_id, vec![entry]) {
                    tracing::error!("parking URL: {e}");
                }
            }
            admitted = free;
        }
        admitted
    }

    /// Bloom filter first; only a "maybe" asks the persistent set.
    pub fn is_seen(&self, fp: u64) -> bool {
        self.bloom.might_contain(fp) && self.store.seen_contains(fp).unwrap_or(true)
    }

    /// The open alert whose rule covers this URL, if any.
    fn quarantining_alert(&self, entry: &FrontierEntry) -> Option<u64> {
        self.alert_rules
            .iter()
            .find(|(id, rule)| {
                self.alerts.get(id).is_some_and(|a| a.host == entry.host)
                    && rule.is_match(&entry.url, &entry.host)
            })
            .map(|(id, _)| *id)
    }
}
