//! A page's links on their way into the frontier: normalization, filters,
//! operator rules, the seen check, trap detection and quarantine.

use std::collections::HashSet;

use url::Url;

use super::results::record_for;
use super::Coordinator;
use crate::engine::dedup::url_fingerprint;
use crate::engine::frontier::FrontierEntry;
use crate::engine::prioritize::priority;
use crate::engine::store::Tree;
use crate::engine::url_norm;

impl Coordinator {
    /// Exact-duplicate check; remembers the first URL seen with each digest.
    pub(super) fn first_with_digest(
        &mut self,
        digest: &crate::engine::dedup::ContentDigest,
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
    pub(super) fn admit_links(
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
                self.mark_seen(fp);
                if let Err(e) = self.frontier.park_new(alert_id, vec![entry]) {
                    tracing::error!("parking URL: {e}");
                }
                continue;
            }
            self.mark_seen(fp);
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

    /// Bloom filter first (a "no" is certain), then the recently seen
    /// fingerprints; only what is left asks the persistent set.
    pub fn is_seen(&mut self, fp: u64) -> bool {
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
    pub fn mark_seen(&mut self, fp: u64) {
        self.bloom.insert(fp);
        self.recent_seen.insert(fp);
    }

    /// The open alert whose rule covers this URL, if any.
    pub(super) fn quarantining_alert(&self, entry: &FrontierEntry) -> Option<u64> {
        self.alert_rules
            .iter()
            .find(|(id, rule)| {
                self.alerts.get(id).is_some_and(|a| a.host == entry.host)
                    && rule.is_match(&entry.url, &entry.host)
            })
            .map(|(id, _)| *id)
    }
}
