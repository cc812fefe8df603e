//! The checks `crawldeck audit` runs: their names, priorities and words.

/// One kind of finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Check {
    /// Internal URLs answering 4xx/5xx or nothing.
    BrokenLinks,
    /// Resources pages load (images, scripts, stylesheets…) answering 4xx/5xx or nothing.
    BrokenResources,
    /// Out-of-scope URLs pages link to answering 4xx/5xx or nothing (`--check-external`).
    BrokenExternal,
    /// Redirects that come back to themselves.
    RedirectLoops,
    /// Links to a `#fragment` their page does not have.
    BrokenFragments,
    /// Pages whose canonical URL is not a 2xx that may be indexed.
    CanonicalNotIndexable,
    /// HTML pages without a `<title>`.
    MissingTitle,
    /// `noindex` pages that many crawled pages link to.
    NoindexLinked,
    /// Pages sharing their title with another page.
    DuplicateTitles,
    /// HTML pages without an `<h1>`.
    MissingH1,
    /// Pages answering slower than the threshold.
    SlowPages,
    /// Redirect chains of more than one hop.
    RedirectChains,
    /// Redirecting URLs that crawled pages link to.
    LinksToRedirects,
    /// HTML pages without a meta description.
    MissingDescription,
    /// Pages sharing their meta description with another page.
    DuplicateDescriptions,
    /// HTML pages with more than one `<h1>`.
    MultipleH1,
    /// HTML pages larger than [`LARGE_PAGE_BYTES`].
    LargePages,
    /// Byte-identical copies of another page.
    ExactDuplicates,
    /// Pages in near-duplicate groups.
    NearDuplicates,
    /// URLs in a sitemap that no crawled page links to.
    SitemapOrphans,
    /// URLs in a sitemap that are not an indexable 200 page.
    SitemapNotIndexable,
    /// Indexable pages linked but missing from their host's sitemaps.
    MissingFromSitemap,
}

/// A page is slow from this response time on, by default.
pub const SLOW_PAGE_MS: u32 = 1000;
/// An HTML page larger than this is very large (decoded body bytes).
pub const LARGE_PAGE_BYTES: u64 = 1 << 20;
/// A `noindex` page linked from at least this many crawled pages is reported.
pub const NOINDEX_MANY_INLINKS: u32 = 5;

/// How urgent a finding is, as site crawlers rank theirs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Priority {
    /// Breaks pages or loses them from the index.
    High,
    /// Likely to hurt.
    Medium,
    /// Worth a look.
    Low,
}

impl Priority {
    /// Its word.
    pub fn label(self) -> &'static str {
        match self {
            Priority::High => "high",
            Priority::Medium => "medium",
            Priority::Low => "low",
        }
    }
}

/// Every check, in the order of their names' table.
pub const ALL: [Check; 22] = [
    Check::BrokenLinks,
    Check::BrokenResources,
    Check::BrokenExternal,
    Check::RedirectLoops,
    Check::BrokenFragments,
    Check::CanonicalNotIndexable,
    Check::MissingTitle,
    Check::NoindexLinked,
    Check::DuplicateTitles,
    Check::MissingH1,
    Check::SlowPages,
    Check::RedirectChains,
    Check::LinksToRedirects,
    Check::MissingDescription,
    Check::DuplicateDescriptions,
    Check::MultipleH1,
    Check::LargePages,
    Check::ExactDuplicates,
    Check::NearDuplicates,
    Check::SitemapOrphans,
    Check::SitemapNotIndexable,
    Check::MissingFromSitemap,
];

impl Check {
    /// The name `--show` takes.
    pub fn name(self) -> &'static str {
        match self {
            Check::BrokenLinks => "broken-links",
            Check::BrokenResources => "broken-resources",
            Check::BrokenExternal => "broken-external",
            Check::RedirectLoops => "redirect-loops",
            Check::BrokenFragments => "broken-fragments",
            Check::CanonicalNotIndexable => "canonical-not-indexable",
            Check::MissingTitle => "missing-title",
            Check::NoindexLinked => "noindex-linked",
            Check::DuplicateTitles => "duplicate-titles",
            Check::MissingH1 => "missing-h1",
            Check::SlowPages => "slow-pages",
            Check::RedirectChains => "redirect-chains",
            Check::LinksToRedirects => "links-to-redirects",
            Check::MissingDescription => "missing-description",
            Check::DuplicateDescriptions => "duplicate-descriptions",
            Check::MultipleH1 => "multiple-h1",
            Check::LargePages => "large-pages",
            Check::ExactDuplicates => "exact-duplicates",
            Check::NearDuplicates => "near-duplicates",
            Check::SitemapOrphans => "sitemap-orphans",
            Check::SitemapNotIndexable => "sitemap-not-indexable",
            Check::MissingFromSitemap => "missing-from-sitemap",
        }
    }

    /// How urgent its findings are.
    pub fn priority(self) -> Priority {
        match self {
            Check::BrokenLinks
            | Check::BrokenResources
            | Check::RedirectLoops
            | Check::CanonicalNotIndexable
            | Check::MissingTitle => Priority::High,
            Check::BrokenExternal
            | Check::NoindexLinked
            | Check::BrokenFragments
            | Check::SitemapOrphans
            | Check::SitemapNotIndexable
            | Check::DuplicateTitles
            | Check::MissingH1
            | Check::SlowPages => Priority::Medium,
            _ => Priority::Low,
        }
    }

    /// What its count counts.
    pub fn what(self) -> String {
        match self {
            Check::BrokenLinks => "URLs answering 4xx, 5xx or nothing".into(),
            Check::BrokenResources => "resources answering 4xx, 5xx or nothing".into(),
            Check::BrokenExternal => "external URLs answering 4xx, 5xx or nothing".into(),
            Check::RedirectLoops => "URLs in redirect loops".into(),
            Check::BrokenFragments => "links to a #fragment their page does not have".into(),
            Check::CanonicalNotIndexable => {
                "pages whose canonical URL is not an indexable 2xx".into()
            }
            Check::MissingTitle => "HTML pages without a title".into(),
            Check::NoindexLinked => {
                format!("noindex pages linked from {NOINDEX_MANY_INLINKS} or more pages")
            }
            Check::DuplicateTitles => "pages sharing their title with another".into(),
            Check::MissingH1 => "HTML pages without an h1".into(),
            Check::SlowPages => "pages answering in 1 s or more".into(),
            Check::RedirectChains => "redirect chains of more than one hop".into(),
            Check::LinksToRedirects => "redirecting URLs that pages link to".into(),
            Check::MissingDescription => "HTML pages without a meta description".into(),
            Check::DuplicateDescriptions => {
                "pages sharing their meta description with another".into()
            }
            Check::MultipleH1 => "HTML pages with more than one h1".into(),
            Check::LargePages => "HTML pages over 1 MiB".into(),
            Check::ExactDuplicates => "byte-identical copies of another page".into(),
            Check::NearDuplicates => "pages in near-duplicate groups".into(),
            Check::SitemapOrphans => "URLs in a sitemap that no crawled page links to".into(),
            Check::SitemapNotIndexable => {
                "URLs in a sitemap that are not an indexable 200 page".into()
            }
            Check::MissingFromSitemap => {
                "indexable pages linked but missing from their host's sitemap".into()
            }
        }
    }

    /// Parses a `--show` value.
    pub fn parse(name: &str) -> Result<Check, String> {
        let name = name.trim().to_ascii_lowercase();
        ALL.into_iter().find(|c| c.name() == name).ok_or_else(|| {
            let names: Vec<&str> = ALL.iter().map(|c| c.name()).collect();
            format!("unknown check {name:?}; use one of {}", names.join(", "))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_check_has_its_own_name_and_parses_back() {
        for check in ALL {
            assert_eq!(Check::parse(check.name()), Ok(check));
            assert!(!check.what().is_empty());
        }
        let mut names: Vec<&str> = ALL.iter().map(|c| c.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), ALL.len());
        assert!(Check::parse("spelling")
            .unwrap_err()
            .contains("broken-links"));
    }
}
