//! A page's links on their way into the frontier: normalization, filters,
//! operator rules, the seen check, trap detection and quarantine.

use std::collections::HashSet;

use url::Url;

use super::results::record_for;
use super::Coordinator;
use crate::engine::dedup::{url_fingerprint, ContentDigest};
use crate::engine::frontier::FrontierEntry;
use crate::engine::prioritize::priority;
use crate::engine::url_norm;

impl Coordinator {
    /// Exact-duplicate check: the first URL stored with this digest, if it
    /// is another one.
    pub(super) fn first_with_digest(
        &mut self,
        digest: &ContentDigest,
        url: &str,
    ) -> Option<String> {
        match self.store.first_url_with_digest(&digest.0, url) {
            Ok(first) => first,
            Err(e) => {
                tracing::error!("content digest lookup for {url}: {e}");
                None
            }
        }
    }

    /// Normalization, filters, rules, seen check, traps and quarantine for a
    /// page's links; returns the entries to queue.
    pub(super) fn admit_links(
        &mut self,
        parent: &Url,
        parent_entry: &FrontierEntry,
        links: Vec<Url>,
        redirect: bool,
    ) -> Vec<FrontierEntry> {
        let depth = if redirect {
            parent_entry.depth
        } else {
            parent_entry.depth + 1
        };
        let redirects = if redirect {
            parent_entry.redirects.saturating_add(1)
        } else {
            0
        };
        let mut admitted = Vec::new();
        let mut given_up = Vec::new();
        let quarantining_before = self.alerts.quarantining_count();
        let mut batch_seen = HashSet::new();
        for url in links {
            // Rules are checked link by link: an alert this page raises may add one.
            let Some(url) = self.screen(url, depth, &mut batch_seen) else {
                continue;
            };
            if let Some(d) = self.traps.on_discovered(parent, &url, depth) {
                self.raise_alert(d);
            }
            let entry = FrontierEntry {
                priority: priority(&url, depth),
                host: url_norm::host_key(&url),
                url: url.into(),
                depth,
                redirects,
            };
            if let Some(alert_id) = self.alerts.quarantining(&entry.url, &entry.host) {
                self.park_new(alert_id, entry);
            } else if let Some(reason) = self.hosts.finished_reason(&entry.host) {
                // A given-up host takes no new work; its URLs are recorded at once.
                given_up.push(record_for(&entry, reason));
            } else {
                admitted.push(entry);
            }
        }
        if !given_up.is_empty() {
            if let Err(e) = self.store.record_pages(&given_up) {
                tracing::error!("recording URLs of given-up hosts: {e}");
            }
        }
        if self.alerts.quarantining_count() != quarantining_before {
            // An alert raised by this page's links also covers its earlier links.
            admitted.retain(
                |entry| match self.alerts.quarantining(&entry.url, &entry.host) {
                    Some(alert_id) => {
                        self.park_new(alert_id, entry.clone());
                        false
                    }
                    None => true,
                },
            );
        }
        admitted
    }

    /// The link normalized, if it passes scope, depth and operator rules
    /// and was never seen before (it is marked seen now).
    fn screen(&mut self, mut url: Url, depth: u32, batch_seen: &mut HashSet<u64>) -> Option<Url> {
        url_norm::normalize(&mut url);
        if self.filter.check(&url).is_err() || depth > self.cfg.max_depth {
            self.stats.count().filtered += 1;
            return None;
        }
        let host = url_norm::host_key(&url);
        if self.rules.matches(url.as_str(), &host).is_some() {
            self.stats.count().blocked_by_rules += 1;
            return None;
        }
        let fp = url_fingerprint(url.as_str());
        if !batch_seen.insert(fp) || self.is_seen(fp) {
            return None;
        }
        self.mark_seen(fp);
        Some(url)
    }

    /// Quarantines a newly found URL under an open alert.
    fn park_new(&mut self, alert_id: u64, entry: FrontierEntry) {
        if let Err(e) = self.frontier.park_new(alert_id, vec![entry]) {
            self.storage_failed("parking a URL", e);
        }
    }

    /// Bloom filter first (a "no" is certain), then the recently seen
    /// fingerprints; only what is left asks the persistent set.
    pub(super) fn is_seen(&mut self, fp: u64) -> bool {
        if !self.bloom.might_contain(fp) {
            return false;
        }
        if self.recent_seen.contains(fp) {
            return true;
        }
        // On a storage error, treat the URL as seen: skipping one link beats
        // fetching a page twice.
        let seen = self.store.seen_contains(fp).unwrap_or(true);
        if seen {
            self.recent_seen.insert(fp);
        }
        seen
    }

    /// Marks a fingerprint seen in memory (the store marks it in the batch
    /// that queues the URL).
    pub(super) fn mark_seen(&mut self, fp: u64) {
        self.bloom.insert(fp);
        self.recent_seen.insert(fp);
    }
}
