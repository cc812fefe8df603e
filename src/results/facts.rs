//! What `pages` shows of a page's facts (`engine::page_facts`): indexability
//! with its reason, and the `--indexable` and `--missing` filters.

use serde::Serialize;

use crate::engine::page_facts::Hreflang;
use crate::engine::store::{PageOutcome, PageRecord};

/// The facts columns of one row; empty for URLs without an answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct RowFacts {
    /// Milliseconds from the request to the answer's last byte.
    pub response_ms: Option<u32>,
    /// Whether a search engine may index the URL; `None` without an answer.
    pub indexable: Option<bool>,
    /// Why it may not: see [`indexability`].
    pub indexability: Option<String>,
    /// The page's `rel=canonical`, resolved.
    pub canonical: Option<String>,
    /// The first meta description.
    pub description: Option<String>,
    /// The first `<h1>`'s text.
    pub h1: Option<String>,
    /// How many `<h1>` the page has.
    pub h1_count: Option<u32>,
    /// Words of visible text.
    pub words: Option<u32>,
    /// Links found on the page, followed or not.
    pub links_out: Option<u32>,
    /// Crawled pages that link to the URL (a redirect counts as a link).
    pub inlinks: u32,
    /// Language alternates.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hreflang: Vec<Hreflang>,
    /// An HTML 2xx page whose facts were recorded: `--missing` judges only these.
    #[serde(skip)]
    pub html: bool,
}

impl RowFacts {
    /// The facts of a page record.
    pub fn of(p: &PageRecord) -> RowFacts {
        let (indexable, indexability) = match indexability(p) {
            Some(Ok(())) => (Some(true), None),
            Some(Err(why)) => (Some(false), Some(why)),
            None => (None, None),
        };
        let facts = p.facts.as_ref();
        RowFacts {
            response_ms: p.response_ms,
            indexable,
            indexability,
            canonical: p.canonical.clone(),
            description: facts.and_then(|f| f.description.clone()),
            h1: facts.and_then(|f| f.h1.clone()),
            h1_count: facts.map(|f| f.h1_count),
            words: facts.map(|f| f.words),
            links_out: p.links_found,
            inlinks: 0,
            hreflang: facts.map(|f| f.hreflang.clone()).unwrap_or_default(),
            // A page that redirects by its meta refresh is judged as a redirect.
            html: facts.is_some()
                && matches!(
                    p.outcome,
                    PageOutcome::Fetched { status: 200..=299 }
                        | PageOutcome::NotModified { .. }
                        | PageOutcome::Duplicate { .. }
                ),
        }
    }
}

/// Whether a URL may be indexed (`Ok`), why not (`Err`), or `None` for a URL
/// never asked for. The reasons are the ones site crawlers give: a
/// `noindex`, a canonical naming another URL, an answer that is not a 2xx, a
/// robots.txt refusal.
pub fn indexability(p: &PageRecord) -> Option<Result<(), String>> {
    let status = match &p.outcome {
        PageOutcome::Fetched { status } => *status,
        PageOutcome::NotModified { .. } | PageOutcome::Duplicate { .. } => 200,
        PageOutcome::Redirect { status, .. } if *status < 300 => {
            return Some(Err("meta refresh".into()))
        }
        PageOutcome::Redirect { .. } => return Some(Err("redirected".into())),
        PageOutcome::Error { .. } => return Some(Err("no answer".into())),
        PageOutcome::RobotsDenied => return Some(Err("blocked by robots.txt".into())),
        PageOutcome::Blocked { .. } | PageOutcome::NotCrawled { .. } => return None,
    };
    Some(match status {
        200..=299 => match (&p.noindex, &p.canonical) {
            (Some(source), _) => Err(source.label().into()),
            (None, Some(canonical)) if *canonical != p.url => Err("canonicalised".into()),
            _ => Ok(()),
        },
        400..=499 => Err("client error".into()),
        500..=599 => Err("server error".into()),
        other => Err(format!("status {other}")),
    })
}

/// A fact `--missing` looks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missing {
    /// No `<title>` (or an empty one).
    Title,
    /// No meta description.
    Description,
    /// No `<h1>` with text.
    H1,
}

impl Missing {
    /// Parses a `--missing` list: `title,h1`.
    pub fn parse_list(list: &str) -> Result<Vec<Missing>, String> {
        list.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|item| match item.to_ascii_lowercase().as_str() {
                "title" => Ok(Missing::Title),
                "description" | "meta-description" => Ok(Missing::Description),
                "h1" => Ok(Missing::H1),
                other => Err(format!(
                    "unknown fact {other:?} for --missing; use title, description or h1"
                )),
            })
            .collect()
    }
}

/// The facts filters of a listing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FactFilters {
    /// Keep URLs that may (true) or may not (false) be indexed.
    pub indexable: Option<bool>,
    /// Keep HTML pages missing every one of these.
    pub missing: Vec<Missing>,
    /// `--extract-missing NAME`: keep pages the extraction ran on and found nothing.
    pub extract_missing: Option<String>,
}

impl FactFilters {
    /// Parses `--indexable yes|no`.
    pub fn parse_indexable(value: &str) -> Result<bool, String> {
        match value.to_ascii_lowercase().as_str() {
            "yes" | "true" | "y" => Ok(true),
            "no" | "false" | "n" => Ok(false),
            other => Err(format!("bad --indexable {other:?}; use yes or no")),
        }
    }

    /// Whether a row with `facts` and `title` passes.
    pub fn passes(&self, facts: &RowFacts, title: Option<&str>) -> bool {
        if self.indexable.is_some() && facts.indexable != self.indexable {
            return false;
        }
        self.missing.is_empty()
            || (facts.html
                && self.missing.iter().all(|m| match m {
                    Missing::Title => title.is_none_or(str::is_empty),
                    Missing::Description => facts.description.is_none(),
                    Missing::H1 => facts.h1.is_none(),
                }))
    }

    /// Whether only pages with an answer can pass.
    pub fn needs_answer(&self) -> bool {
        self.indexable.is_some() || !self.missing.is_empty() || self.extract_missing.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::page_facts::{HtmlFacts, NoindexSource};

    fn page(outcome: PageOutcome) -> PageRecord {
        PageRecord::without_fetch("http://h.example/a", "h.example", 1, 0, outcome)
    }

    #[test]
    fn indexability_names_the_reason_a_page_may_not_be_indexed() {
        let ok = page(PageOutcome::Fetched { status: 200 });
        assert_eq!(indexability(&ok), Some(Ok(())));
        let mut self_canonical = ok.clone();
        self_canonical.canonical = Some(ok.url.clone());
        assert_eq!(indexability(&self_canonical), Some(Ok(())));
        let mut elsewhere = ok.clone();
        elsewhere.canonical = Some("http://h.example/b".into());
        assert_eq!(indexability(&elsewhere), Some(Err("canonicalised".into())));
        let mut noindex = elsewhere.clone();
        noindex.noindex = Some(NoindexSource::Header);
        assert_eq!(
            indexability(&noindex),
            Some(Err("noindex (X-Robots-Tag)".into()))
        );
        let why = |outcome| indexability(&page(outcome)).map(|r| r.unwrap_err());
        assert_eq!(
            why(PageOutcome::Fetched { status: 404 }).as_deref(),
            Some("client error")
        );
        assert_eq!(
            why(PageOutcome::Redirect {
                status: 301,
                location: "http://h.example/b".into()
            })
            .as_deref(),
            Some("redirected")
        );
        assert_eq!(
            why(PageOutcome::RobotsDenied).as_deref(),
            Some("blocked by robots.txt")
        );
        let never = PageOutcome::NotCrawled { reason: "x".into() };
        assert_eq!(indexability(&page(never)), None);
    }

    #[test]
    fn missing_judges_html_pages_only_and_every_fact_named() {
        let mut html = page(PageOutcome::Fetched { status: 200 });
        html.facts = Some(HtmlFacts {
            h1: Some("Heading".into()),
            ..HtmlFacts::default()
        });
        let facts = RowFacts::of(&html);
        let filter = |missing: &str| FactFilters {
            indexable: None,
            missing: Missing::parse_list(missing).unwrap(),
            ..FactFilters::default()
        };
        assert!(filter("title").passes(&facts, None));
        assert!(filter("description").passes(&facts, Some("T")));
        assert!(!filter("h1").passes(&facts, None));
        assert!(!filter("title,h1").passes(&facts, None), "all named");
        let image = RowFacts::of(&page(PageOutcome::Fetched { status: 200 }));
        assert!(!filter("title").passes(&image, None), "not an HTML page");
        assert!(Missing::parse_list("weight").unwrap_err().contains("h1"));
        let no = FactFilters {
            indexable: Some(false),
            ..FactFilters::default()
        };
        assert!(!no.passes(&facts, None));
        assert!(no.passes(&RowFacts::of(&page(PageOutcome::RobotsDenied)), None));
    }
}
