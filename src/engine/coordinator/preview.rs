//! Rule preview: how many queued, parked and fetched URLs a rule would match,
//! read in chunks under a time budget (off the crawl loop: `preview_job.rs`).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::engine::frontier::{FrontierEntry, FrontierStore, ScanCursor, ScanPage, ScanRange};
use crate::engine::rules::CompiledRule;
use crate::engine::store::{PageOutcome, Store, StoreError};

/// Rows read per chunk; the budget is checked between chunks.
const CHUNK: usize = 512;
/// Hosts listed in a preview, most matches first.
pub(crate) const TOP_HOSTS: usize = 5;
/// Example URLs kept per host.
pub(crate) const EXAMPLES: usize = 3;

/// How much work one preview may do before it answers with a sample.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PreviewBudget {
    /// Wall time spent scanning (checked after each chunk).
    pub time: Duration,
    /// Rows read across queued, parked and fetched URLs.
    pub rows: u64,
}

impl Default for PreviewBudget {
    fn default() -> Self {
        // An answer within a keystroke pause (and a short stall where a
        // frontier without a read handle is scanned on the loop).
        PreviewBudget {
            time: Duration::from_millis(40),
            rows: 200_000,
        }
    }
}

/// Matches of one kind of URL.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    pub queued: u64,
    pub parked: u64,
    pub fetched: u64,
}

impl Counts {
    fn total(&self) -> u64 {
        self.queued + self.parked + self.fetched
    }
}

/// What a rule would match.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RulePreview {
    pub total: Counts,
    /// Per host, most matches first, at most [`TOP_HOSTS`].
    pub hosts: Vec<(String, Counts, Vec<String>)>,
    /// Hosts with a match beyond those listed.
    pub more_hosts: usize,
    /// The budget ran out: counts are lower bounds from the rows read.
    pub sampled: bool,
    /// Rows read.
    pub scanned: u64,
}

#[derive(Default)]
struct Tally {
    by_host: HashMap<String, (Counts, Vec<String>)>,
    scanned: u64,
}

impl Tally {
    fn add(&mut self, host: &str, url: &str, which: fn(&mut Counts) -> &mut u64) {
        let (counts, examples) = self.by_host.entry(host.to_string()).or_default();
        *which(counts) += 1;
        if examples.len() < EXAMPLES {
            examples.push(url.to_string());
        }
    }

    fn into_preview(self, sampled: bool) -> RulePreview {
        let mut total = Counts::default();
        let mut hosts: Vec<_> = self
            .by_host
            .into_iter()
            .map(|(host, (counts, examples))| {
                total.queued += counts.queued;
                total.parked += counts.parked;
                total.fetched += counts.fetched;
                (host, counts, examples)
            })
            .collect();
        hosts.sort_by(|a, b| b.1.total().cmp(&a.1.total()).then_with(|| a.0.cmp(&b.0)));
        let more_hosts = hosts.len().saturating_sub(TOP_HOSTS);
        hosts.truncate(TOP_HOSTS);
        RulePreview {
            total,
            hosts,
            more_hosts,
            sampled,
            scanned: self.scanned,
        }
    }
}

/// Counts what `rule` matches, stopping when `budget` runs out.
pub(crate) fn preview(
    frontier: &mut dyn FrontierStore,
    store: &Store,
    rule: &CompiledRule,
    budget: PreviewBudget,
) -> Result<RulePreview, StoreError> {
    preview_over(
        |range, from, limit| frontier.scan(range, from, limit),
        store,
        rule,
        budget,
    )
}

/// [`preview`] with the frontier read through `scan`.
pub(crate) fn preview_over(
    mut scan: impl FnMut(ScanRange, Option<&ScanCursor>, usize) -> Result<ScanPage, StoreError>,
    store: &Store,
    rule: &CompiledRule,
    budget: PreviewBudget,
) -> Result<RulePreview, StoreError> {
    let started = Instant::now();
    let mut tally = Tally::default();
    let over = |t: &Tally| t.scanned >= budget.rows || started.elapsed() >= budget.time;
    for (range, which) in [
        (
            ScanRange::Queued,
            (|c| &mut c.queued) as fn(&mut Counts) -> &mut u64,
        ),
        (ScanRange::Parked, |c| &mut c.parked),
    ] {
        let mut cursor: Option<ScanCursor> = None;
        loop {
            if over(&tally) {
                return Ok(tally.into_preview(true));
            }
            let page = scan(range, cursor.as_ref(), CHUNK)?;
            tally.scanned += page.entries.len() as u64;
            for FrontierEntry { url, host, .. } in &page.entries {
                if rule.is_match(url, host) {
                    tally.add(host, url, which);
                }
            }
            match page.next {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
    }
    let mut after: Option<String> = None;
    loop {
        if over(&tally) {
            return Ok(tally.into_preview(true));
        }
        let pages = store.pages_after(after.as_deref(), CHUNK)?;
        tally.scanned += pages.len() as u64;
        for page in &pages {
            if was_fetched(&page.outcome) && rule.is_match(&page.url, &page.host) {
                tally.add(&page.host, &page.url, |c| &mut c.fetched);
            }
        }
        if pages.len() < CHUNK {
            return Ok(tally.into_preview(false));
        }
        after = pages.last().map(|p| p.url.clone());
    }
}

/// Whether the URL got an answer (not refused, given up or failed).
fn was_fetched(outcome: &PageOutcome) -> bool {
    matches!(
        outcome,
        PageOutcome::Fetched { .. }
            | PageOutcome::NotModified { .. }
            | PageOutcome::Redirect { .. }
            | PageOutcome::Duplicate { .. }
    )
}

impl RulePreview {
    /// The preview as terminal lines: totals, then one line per host with its examples.
    pub(crate) fn lines(&self, rule: &str) -> Vec<String> {
        let bound = if self.sampled { "≥ " } else { "" };
        let c = &self.total;
        let mut lines = vec![format!(
            "{rule} matches {bound}{} queued, {bound}{} parked, {bound}{} fetched URL(s){}",
            c.queued,
            c.parked,
            c.fetched,
            if self.sampled {
                format!(
                    " (sampled: stopped after {} URLs to keep the crawl running)",
                    self.scanned
                )
            } else {
                String::new()
            }
        )];
        for (host, c, examples) in &self.hosts {
            lines.push(format!(
                "  {host}: {} queued, {} parked, {} fetched",
                c.queued, c.parked, c.fetched
            ));
            lines.extend(examples.iter().map(|u| format!("    {u}")));
        }
        if self.more_hosts > 0 {
            lines.push(format!("  … and {} more host(s)", self.more_hosts));
        }
        lines
            .into_iter()
            .map(|l| crate::text::strip_control(&l).into_owned())
            .collect()
    }
}

#[cfg(test)]
#[path = "preview_tests.rs"]
mod tests;
