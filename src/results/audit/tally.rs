//! The audit's counts, gathered row by row.

use std::collections::{HashMap, HashSet};
use std::hash::BuildHasher;

use super::checks::{Check, LARGE_PAGE_BYTES, NOINDEX_MANY_INLINKS, SLOW_PAGE_MS};
use super::{ranked, Finding, Shown};
use crate::control::results::Results;
use crate::results::facts::indexability;
use crate::results::fragments::BrokenFragment;
use crate::results::query::Fate;
use crate::results::rows::Row;
use crate::results::sitemaps::Finding as SitemapFinding;

/// Redirect hops followed before a chain counts as a loop.
const MAX_HOPS: usize = 32;

/// What the audit found so far.
pub struct Tally {
    show: Option<Check>,
    limit: usize,
    counts: HashMap<Check, u64>,
    shown: Vec<Shown>,
    /// Pages by a hash of their title, then of their description.
    titles: HashMap<u64, u32>,
    descriptions: HashMap<u64, u32>,
    hasher: std::collections::hash_map::RandomState,
    /// Every redirect: URL → location.
    redirects: HashMap<String, String>,
    /// Pages whose canonical names another URL: (page, canonical).
    canonicals: Vec<(String, String)>,
}

impl Tally {
    pub(super) fn new(show: Option<Check>, limit: Option<usize>) -> Tally {
        Tally {
            show,
            limit: limit.unwrap_or(usize::MAX),
            counts: HashMap::new(),
            shown: Vec::new(),
            titles: HashMap::new(),
            descriptions: HashMap::new(),
            hasher: Default::default(),
            redirects: HashMap::new(),
            canonicals: Vec::new(),
        }
    }

    /// Counts one URL under `check`, keeping it if that is the check shown.
    fn found(&mut self, check: Check, url: &str, detail: impl FnOnce() -> String) {
        *self.counts.entry(check).or_default() += 1;
        if self.show == Some(check) && self.shown.len() < self.limit {
            self.shown.push(Shown {
                url: url.to_string(),
                detail: detail(),
            });
        }
    }

    fn hash(&self, text: &str) -> u64 {
        self.hasher.hash_one(text)
    }

    /// Everything one row can tell alone.
    pub(super) fn row(&mut self, row: &Row) {
        let facts = &row.facts;
        if row.is_broken() {
            let check = match row.kind {
                "resource" => Check::BrokenResources,
                "external" => Check::BrokenExternal,
                _ => Check::BrokenLinks,
            };
            self.found(check, &row.url, || broken_detail(row));
        }
        if row.kind != "page" {
            // A check's answer says nothing of a page: no speed, no content.
            return;
        }
        if row.fate == Fate::Redirect.label() {
            if let Some(location) = &row.detail {
                self.redirects.insert(row.url.clone(), location.clone());
                if facts.inlinks > 0 {
                    let n = facts.inlinks;
                    self.found(Check::LinksToRedirects, &row.url, || {
                        format!("linked from {n} page(s), redirects to {location}")
                    });
                }
            }
        }
        if row.fate == Fate::Duplicate.label() {
            let of = row.detail.clone().unwrap_or_default();
            self.found(Check::ExactDuplicates, &row.url, || format!("copy of {of}"));
        }
        if let Some(ms) = facts.response_ms.filter(|&ms| ms >= SLOW_PAGE_MS) {
            self.found(Check::SlowPages, &row.url, || format!("{ms} ms"));
        }
        if facts
            .indexability
            .as_deref()
            .is_some_and(|why| why.starts_with("noindex"))
            && facts.inlinks >= NOINDEX_MANY_INLINKS
        {
            let n = facts.inlinks;
            self.found(Check::NoindexLinked, &row.url, || {
                format!("linked from {n} pages")
            });
        }
        if facts.html {
            self.html_page(row);
        }
    }

    /// The checks of an HTML 2xx page's facts.
    fn html_page(&mut self, row: &Row) {
        let facts = &row.facts;
        match &row.title {
            Some(title) => *self.titles.entry(self.hash(title)).or_default() += 1,
            None => self.found(Check::MissingTitle, &row.url, String::new),
        }
        match &facts.description {
            Some(d) => *self.descriptions.entry(self.hash(d)).or_default() += 1,
            None => self.found(Check::MissingDescription, &row.url, String::new),
        }
        match facts.h1_count {
            Some(0) | None => self.found(Check::MissingH1, &row.url, String::new),
            Some(1) => {}
            Some(n) => self.found(Check::MultipleH1, &row.url, || format!("{n} h1")),
        }
        if row.size >= LARGE_PAGE_BYTES {
            let size = crate::text::human_bytes(row.size);
            self.found(Check::LargePages, &row.url, || size);
        }
        if let Some(canonical) = facts.canonical.as_ref().filter(|c| **c != row.url) {
            self.canonicals.push((row.url.clone(), canonical.clone()));
        }
    }

    /// What needs all rows first: redirect loops and chains, canonical targets.
    pub(super) fn after_rows(&mut self, results: &Results) -> anyhow::Result<()> {
        self.redirect_findings();
        self.canonical_findings(results)?;
        // Shared titles and descriptions are counted here, listed by a second pass.
        for (check, counts) in [
            (Check::DuplicateTitles, &self.titles),
            (Check::DuplicateDescriptions, &self.descriptions),
        ] {
            let shared: u64 = counts
                .values()
                .filter(|&&n| n > 1)
                .map(|&n| u64::from(n))
                .sum();
            *self.counts.entry(check).or_default() += shared;
        }
        Ok(())
    }

    fn redirect_findings(&mut self) {
        let targets: HashSet<&str> = self.redirects.values().map(String::as_str).collect();
        let mut loops = Vec::new();
        let mut chains = Vec::new();
        let mut urls: Vec<&String> = self.redirects.keys().collect();
        urls.sort();
        for url in urls {
            match walk(url, &self.redirects) {
                Walk::Loops => loops.push(url.clone()),
                Walk::Ends { hops, at } if hops > 1 && !targets.contains(url.as_str()) => {
                    chains.push((url.clone(), format!("{hops} hops to {at}")))
                }
                Walk::Ends { .. } => {}
            }
        }
        for url in loops {
            self.found(Check::RedirectLoops, &url, || "never resolves".into());
        }
        for (url, detail) in chains {
            self.found(Check::RedirectChains, &url, || detail);
        }
    }

    fn canonical_findings(&mut self, results: &Results) -> anyhow::Result<()> {
        let mut verdicts: HashMap<String, Option<String>> = HashMap::new();
        for (page, canonical) in std::mem::take(&mut self.canonicals) {
            if !verdicts.contains_key(&canonical) {
                // A canonical never crawled (out of scope) is not judged.
                let why = results
                    .page(&canonical)?
                    .and_then(|record| indexability(&record))
                    .and_then(Result::err);
                verdicts.insert(canonical.clone(), why);
            }
            if let Some(why) = &verdicts[&canonical] {
                let detail = format!("canonical {canonical}: {why}");
                self.found(Check::CanonicalNotIndexable, &page, || detail);
            }
        }
        Ok(())
    }

    /// Whether listing the check shown needs the counts of every page first.
    pub(super) fn wants_second_pass(&self) -> bool {
        matches!(
            self.show,
            Some(Check::DuplicateTitles | Check::DuplicateDescriptions)
        )
    }

    /// Lists pages whose title (description) another page shares.
    pub(super) fn second_pass(&mut self, row: &Row) {
        if !row.facts.html || self.shown.len() >= self.limit {
            return;
        }
        let (text, counts) = match self.show {
            Some(Check::DuplicateTitles) => (row.title.as_ref(), &self.titles),
            Some(Check::DuplicateDescriptions) => {
                (row.facts.description.as_ref(), &self.descriptions)
            }
            _ => return,
        };
        let Some(text) = text else { return };
        let n = counts.get(&self.hash(text)).copied().unwrap_or(0);
        if n > 1 {
            self.shown.push(Shown {
                url: row.url.clone(),
                detail: format!("{text} ({n} pages)"),
            });
        }
    }

    /// Counts the near duplicates: `(url, first URL of its group)`.
    pub(super) fn near_duplicates(&mut self, near: Vec<(String, String)>) {
        for (url, first) in near {
            self.found(Check::NearDuplicates, &url, || format!("near {first}"));
        }
    }

    /// Counts what the row's sitemap findings say.
    pub(super) fn sitemap_findings(&mut self, row: &Row, found: &[SitemapFinding]) {
        for finding in found {
            let (check, detail) = match finding {
                SitemapFinding::Orphan => {
                    (Check::SitemapOrphans, "in a sitemap, linked from no page")
                }
                SitemapFinding::NotOk => (Check::SitemapNotIndexable, "in a sitemap"),
                SitemapFinding::Missing => {
                    (Check::MissingFromSitemap, "linked, not in the sitemap")
                }
            };
            let why = match (&row.facts.indexability, row.status) {
                (Some(why), _) => format!("{detail}; {why}"),
                (None, Some(status)) => format!("{detail}; {status}"),
                (None, None) => format!("{detail}; {}", row.fate),
            };
            self.found(check, &row.url, || why);
        }
    }

    /// Counts a link to a fragment its page lacks.
    pub(super) fn broken_fragment(&mut self, broken: &BrokenFragment) {
        let from = &broken.linked_from;
        self.found(Check::BrokenFragments, &broken.url(), || {
            format!("no such id on the page, linked from {from}")
        });
    }

    /// The summary lines.
    pub fn findings(&self, crawl: &str) -> Vec<Finding> {
        ranked(&self.counts, crawl)
    }

    /// How many URLs `check` found.
    pub fn count(&self, check: Check) -> u64 {
        self.counts.get(&check).copied().unwrap_or(0)
    }

    /// The URLs of the check shown, as found.
    pub fn shown_urls(&self) -> impl Iterator<Item = &str> {
        self.shown.iter().map(|s| s.url.as_str())
    }

    /// The URLs of the check shown, grouped by what they share where that
    /// is the point (titles, descriptions).
    pub(super) fn shown(mut self) -> Vec<Shown> {
        if self.wants_second_pass() {
            self.shown
                .sort_by(|a, b| a.detail.cmp(&b.detail).then(a.url.cmp(&b.url)));
        }
        self.shown
    }
}

fn broken_detail(row: &Row) -> String {
    let what = match (row.status, &row.reason) {
        (Some(status), _) => status.to_string(),
        (None, Some(kind)) => kind.clone(),
        (None, None) => "no answer".into(),
    };
    match row.referrers.first() {
        Some(first) => format!("{what}, linked from {first}"),
        None => what,
    }
}

enum Walk {
    Loops,
    Ends { hops: usize, at: String },
}

/// Where the redirects from `url` end, or that they never do.
fn walk(url: &str, redirects: &HashMap<String, String>) -> Walk {
    let mut seen = HashSet::new();
    let mut at = url;
    while let Some(next) = redirects.get(at) {
        if !seen.insert(at) || seen.len() > MAX_HOPS {
            return Walk::Loops;
        }
        at = next;
    }
    Walk::Ends {
        hops: seen.len(),
        at: at.to_string(),
    }
}
