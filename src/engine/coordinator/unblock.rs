//! Removing a rule returns what it blocked: links it kept out when they were
//! found (the `filtered` tree, never claimed as seen) go through the seen
//! check like new links; queued or parked URLs it removed (page records
//! `Blocked` by it, already seen) are queued again as they were. Neither can
//! be fetched twice: the first kind is claimed once, the second was never
//! fetched and is no longer in the frontier.

use url::Url;

use super::Coordinator;
use crate::engine::control::RuleSpec;
use crate::engine::frontier::FrontierEntry;
use crate::engine::prioritize::priority;
use crate::engine::rules::describe;
use crate::engine::store::{FilterReason, PageOutcome, PageRecord, StoreError};

/// URLs queued per frontier write.
const CHUNK: usize = 1024;

impl Coordinator {
    /// Removes a rule and returns the URLs it blocked to the frontier.
    pub(super) fn remove_rule(&mut self, rule_id: u64) -> Result<String, String> {
        let spec = self.rules.remove(rule_id)?;
        let text = describe(&spec);
        let returned = self.return_blocked(rule_id, &spec).map_err(|e| {
            format!(
                "rule #{rule_id} removed ({text}), but returning the URLs it blocked failed: {e}"
            )
        })?;
        Ok(format!(
            "rule #{rule_id} removed ({text}): {returned} blocked URL(s) returned to the queue"
        ))
    }

    /// Queues again what rule `rule_id` blocked, unless another rule blocks
    /// it too; returns how many URLs went back. Reads the rule's host only
    /// (both schemes) when the rule has one, else every record.
    fn return_blocked(&mut self, rule_id: u64, spec: &RuleSpec) -> Result<u64, StoreError> {
        let prefixes = match &spec.host {
            Some(host) => vec![format!("http://{host}/"), format!("https://{host}/")],
            None => vec![String::new()],
        };
        let mut found = Vec::new();
        let mut blocked = Vec::new();
        for prefix in &prefixes {
            for filtered in self.store.filtered_urls(prefix) {
                let filtered = filtered?;
                if filtered.reason == FilterReason::Rule(rule_id) {
                    found.push((filtered.url, filtered.host, filtered.depth));
                }
            }
            for raw in self.store.raw_page_records(prefix) {
                let Ok(page) = serde_json::from_slice::<PageRecord>(&raw?) else {
                    continue;
                };
                if matches!(page.outcome, PageOutcome::Blocked { rule_id: id, .. } if id == rule_id)
                {
                    blocked.push((page.url, page.host, page.depth));
                }
            }
        }
        found.retain(|(url, host, _)| self.rules.matches(url, host).is_none());
        blocked.retain(|(url, host, _)| self.rules.matches(url, host).is_none());
        let mut returned = 0;
        for chunk in found.chunks(CHUNK) {
            let urls: Vec<&str> = chunk.iter().map(|(url, _, _)| url.as_str()).collect();
            let fresh = self.frontier.claim_unseen(&urls)?;
            let entries: Vec<FrontierEntry> = chunk
                .iter()
                .zip(fresh)
                .filter_map(|(link, fresh)| fresh.then(|| entry(link)).flatten())
                .collect();
            returned += entries.len() as u64;
            self.frontier.push(entries)?;
            self.store.forget_filtered(&urls)?;
        }
        for chunk in blocked.chunks(CHUNK) {
            let entries: Vec<FrontierEntry> = chunk.iter().filter_map(entry).collect();
            returned += entries.len() as u64;
            self.frontier.push(entries)?;
        }
        Ok(returned)
    }
}

/// A frontier entry for a stored `(url, host, depth)`.
fn entry((url, host, depth): &(String, String, u32)) -> Option<FrontierEntry> {
    let parsed = Url::parse(url).ok()?;
    Some(FrontierEntry {
        priority: priority(&parsed, *depth),
        url: url.clone(),
        host: host.clone(),
        depth: *depth,
        redirects: 0,
    })
}
