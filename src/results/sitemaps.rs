//! How each URL was found (`found_by`), and the sitemap audit the `pages`
//! filter and `crawldeck audit` read: URLs only a sitemap lists (orphans),
//! sitemap URLs that are not a 200 page, and pages linked but missing from
//! their host's sitemaps. Derived, not stored: a URL with a referrer page
//! was found by links (a sitemap is never recorded as a referrer), one with
//! a sitemap row (`store::sitemaps`) by a sitemap. Works on a finished crawl
//! and, through the control socket, on a running one (what is recorded so
//! far: URLs still queued have no row yet).

use std::collections::HashSet;

use serde::Serialize;

use super::query::Query;
use super::rows::Row;
use crate::control::results::Results;
use crate::engine::store::SitemapEntry;
use crate::engine::url_norm::host_key;

/// How a URL was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FoundBy {
    /// Neither linked nor listed: a seed (or a soft-404 probe).
    Seed,
    /// Linked from a crawled page (or redirected to).
    Links,
    /// Listed by a sitemap and linked from no crawled page: an orphan.
    Sitemap,
    /// Both.
    Both,
    /// A sitemap file itself (named by robots.txt, guessed, or in an index).
    SitemapFile,
}

impl FoundBy {
    /// From what is stored of a URL: whether a page links to it, its sitemap row.
    pub fn of(linked: bool, listed: Option<&SitemapEntry>) -> FoundBy {
        match (linked, listed) {
            (_, Some(entry)) if entry.file => FoundBy::SitemapFile,
            (true, Some(_)) => FoundBy::Both,
            (false, Some(_)) => FoundBy::Sitemap,
            (true, None) => FoundBy::Links,
            (false, None) => FoundBy::Seed,
        }
    }

    /// The word in listings and for `--found-by`.
    pub fn label(self) -> &'static str {
        match self {
            FoundBy::Seed => "seed",
            FoundBy::Links => "links",
            FoundBy::Sitemap => "sitemap",
            FoundBy::Both => "both",
            FoundBy::SitemapFile => "sitemap-file",
        }
    }

    /// Parses a `--found-by` value.
    pub fn parse(s: &str) -> Result<FoundBy, String> {
        let all = [
            FoundBy::Links,
            FoundBy::Sitemap,
            FoundBy::Both,
            FoundBy::Seed,
            FoundBy::SitemapFile,
        ];
        let s = s.trim().to_ascii_lowercase();
        all.into_iter().find(|f| f.label() == s).ok_or_else(|| {
            format!(
                "unknown --found-by {s:?}; use one of links, sitemap (orphans: in a sitemap, \
                 linked from no crawled page), both, seed, sitemap-file"
            )
        })
    }

    /// Listed by a sitemap as a page.
    pub fn in_sitemap(self) -> bool {
        matches!(self, FoundBy::Sitemap | FoundBy::Both)
    }
}

/// What the sitemap audit finds of one URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finding {
    /// In a sitemap, linked from no crawled page.
    Orphan,
    /// In a sitemap, but not a 200 page (an error, a redirect, a 404, left
    /// out by scope or robots.txt, a duplicate or canonical of another URL).
    NotOk,
    /// A fetched HTML 200 page found by links only, on a host whose
    /// sitemaps list pages.
    Missing,
}

/// The audit's counts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SitemapAudit {
    /// Hosts whose sitemaps listed at least one page.
    pub hosts_with_sitemap: u64,
    /// URLs sitemaps listed that have a row (a record or a link left out).
    pub sitemap_urls: u64,
    pub orphans: u64,
    pub not_ok: u64,
    pub missing: u64,
}

/// The hosts whose sitemaps list pages, under `query`'s host if any.
pub(crate) fn hosts_with_sitemap(
    results: &Results,
    query: &Query,
) -> anyhow::Result<HashSet<String>> {
    let mut hosts = HashSet::new();
    for prefix in query.url_prefixes() {
        for entry in results.sitemap_entries(&prefix)? {
            let entry = entry?;
            if entry.file {
                continue;
            }
            if let Ok(url) = url::Url::parse(&entry.url) {
                hosts.insert(host_key(&url));
            }
        }
    }
    Ok(hosts)
}

/// The findings of one row.
pub(crate) fn findings(row: &Row, sitemap_hosts: &HashSet<String>) -> Vec<Finding> {
    let mut found = Vec::new();
    if row.found_by == FoundBy::Sitemap {
        found.push(Finding::Orphan);
    }
    let ok_page =
        row.fate == "fetched" && row.status == Some(200) && row.facts.indexable == Some(true);
    if row.found_by.in_sitemap() && !ok_page {
        found.push(Finding::NotOk);
    }
    let html = row
        .content_type
        .as_deref()
        .is_some_and(|t| t.contains("html"));
    if row.found_by == FoundBy::Links && ok_page && html && sitemap_hosts.contains(&row.host) {
        found.push(Finding::Missing);
    }
    found
}

/// Walks every row of `query` (its `--host` only, its other filters
/// ignored) and calls `each` with the row and its findings.
pub fn walk(
    results: &Results,
    query: &Query,
    mut each: impl FnMut(&Row, &[Finding]) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let sitemap_hosts = hosts_with_sitemap(results, query)?;
    let everything = Query {
        status: Vec::new(),
        fate: None,
        by: None,
        found_by: None,
        ..query.clone()
    };
    for row in super::matching_rows(&everything, results, true)? {
        let row = row?;
        each(&row, &findings(&row, &sitemap_hosts))?;
    }
    Ok(())
}

/// The audit's counts for `query`'s host (all hosts without one).
pub fn audit(results: &Results, query: &Query) -> anyhow::Result<SitemapAudit> {
    let mut counts = SitemapAudit {
        hosts_with_sitemap: hosts_with_sitemap(results, query)?.len() as u64,
        ..SitemapAudit::default()
    };
    walk(results, query, |row, found| {
        counts.sitemap_urls += u64::from(row.found_by.in_sitemap());
        for f in found {
            match f {
                Finding::Orphan => counts.orphans += 1,
                Finding::NotOk => counts.not_ok += 1,
                Finding::Missing => counts.missing += 1,
            }
        }
        Ok(())
    })?;
    Ok(counts)
}

/// The rows with `finding`, in URL order.
pub fn list(
    results: &Results,
    query: &Query,
    finding: Finding,
    mut each: impl FnMut(&Row) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    walk(results, query, |row, found| {
        if found.contains(&finding) {
            each(row)?;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn found_by_follows_referrers_and_sitemap_rows() {
        let entry = |file| SitemapEntry {
            url: "http://a.test/x".into(),
            sitemap: "http://a.test/sitemap.xml".into(),
            lastmod: None,
            file,
        };
        assert_eq!(FoundBy::of(false, None), FoundBy::Seed);
        assert_eq!(FoundBy::of(true, None), FoundBy::Links);
        assert_eq!(FoundBy::of(false, Some(&entry(false))), FoundBy::Sitemap);
        assert_eq!(FoundBy::of(true, Some(&entry(false))), FoundBy::Both);
        assert_eq!(FoundBy::of(false, Some(&entry(true))), FoundBy::SitemapFile);
        for f in ["links", "Sitemap", "both", "seed", "sitemap-file"] {
            assert_eq!(FoundBy::parse(f).unwrap().label(), f.to_ascii_lowercase());
        }
        assert!(FoundBy::parse("robots").unwrap_err().contains("orphans"));
    }
}
