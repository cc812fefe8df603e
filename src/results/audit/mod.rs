//! `crawldeck audit DIR`: what is wrong with a crawled site, one line per
//! kind of finding with how many URLs it touches, most first;
//! `--show CHECK` lists the URLs of one. One pass over the crawl's page
//! records (with their inlink counts), then the redirects, canonical targets
//! and near-duplicate groups it gathered on the way. Reads a finished crawl
//! or, through its engine, a running one.

mod checks;
mod tally;

use std::collections::HashMap;
use std::io::Write;
use std::sync::Arc;

use serde::Serialize;

use super::output::{col, Column, Output};
use super::query::{Format, Query};
use super::rows::{Rows, RuleOrigins};
use crate::control::results::Results;
pub use checks::{Check, Priority, ALL, LARGE_PAGE_BYTES, NOINDEX_MANY_INLINKS, SLOW_PAGE_MS};
use tally::Tally;

static SUMMARY_TABLE: [Column; 4] = [
    col("urls", Some(7)),
    col("priority", Some(8)),
    col("check", Some(24)),
    col("finding", None),
];

static SUMMARY_FIELDS: [Column; 5] = [
    col("check", None),
    col("priority", None),
    col("urls", None),
    col("finding", None),
    col("command", None),
];

static SHOW_COLUMNS: [Column; 2] = [col("url", Some(70)), col("detail", None)];

/// One line of the summary.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// The check's name (`--show` takes it).
    pub check: &'static str,
    /// `high`, `medium` or `low`.
    pub priority: &'static str,
    /// URLs it touches.
    pub urls: u64,
    /// What they are, in words.
    pub finding: String,
    /// The command that lists them.
    pub command: String,
}

/// One URL of a finding, and what is wrong with it.
#[derive(Debug, Clone, Serialize)]
pub struct Shown {
    /// The URL.
    pub url: String,
    /// What is wrong with it: a status, a title, a canonical target, a time.
    pub detail: String,
}

/// Runs the audit: the summary, or the URLs of `show`.
pub(super) fn run(
    query: &Query,
    show: Option<Check>,
    results: &Results,
    out: impl Write,
) -> anyhow::Result<()> {
    let tally = audit(query, show, results)?;
    match show {
        None => write_summary(query, &tally.findings(&crawl_words(query)), out),
        Some(_) => write_shown(query, tally.shown(), out),
    }
}

/// The tally of every check over the query's pages; the URLs of `show` kept
/// (at most `--limit`).
pub fn audit(query: &Query, show: Option<Check>, results: &Results) -> anyhow::Result<Tally> {
    let rules = Arc::new(RuleOrigins::load(results)?);
    let sitemap_hosts = super::sitemaps::hosts_with_sitemap(results, query)?;
    let mut tally = Tally::new(show, query.limit);
    // With the referrers: they say which URLs were found by links.
    each_page(query, results, true, &rules, |row| {
        tally.row(row);
        tally.sitemap_findings(row, &super::sitemaps::findings(row, &sitemap_hosts));
    })?;
    tally.after_rows(results)?;
    if tally.wants_second_pass() {
        each_page(query, results, false, &rules, |row| tally.second_pass(row))?;
    }
    let near = super::dupes::near_duplicate_urls(query, results)?;
    tally.near_duplicates(near);
    super::fragments::for_each_broken(query, results, |broken| {
        tally.broken_fragment(&broken);
        Ok(true)
    })?;
    Ok(tally)
}

/// Calls `each` with every page row of the query's host (all hosts without one).
fn each_page(
    query: &Query,
    results: &Results,
    with_referrers: bool,
    rules: &Arc<RuleOrigins>,
    mut each: impl FnMut(&super::rows::Row),
) -> anyhow::Result<()> {
    for prefix in query.url_prefixes() {
        for row in Rows::open(results, &prefix, false, with_referrers, rules.clone())? {
            let row = row?;
            if query.host.as_deref().is_none_or(|h| h == row.host) {
                each(&row);
            }
        }
    }
    Ok(())
}

fn write_summary(query: &Query, findings: &[Finding], out: impl Write) -> anyhow::Result<()> {
    let columns: &'static [Column] = match query.format {
        Format::Table => &SUMMARY_TABLE,
        _ => &SUMMARY_FIELDS,
    };
    let mut output = Output::start(out, query.format, columns)?;
    for f in findings {
        let fields = match query.format {
            Format::Table => vec![
                f.urls.to_string(),
                f.priority.to_string(),
                f.check.to_string(),
                f.finding.clone(),
            ],
            _ => vec![
                f.check.to_string(),
                f.priority.to_string(),
                f.urls.to_string(),
                f.finding.clone(),
                f.command.clone(),
            ],
        };
        output.row(&fields, f)?;
    }
    if findings.is_empty() {
        output.note("nothing found")?;
    } else {
        let crawl = crawl_words(query);
        output.note(&format!(
            "the URLs of one finding: crawldeck audit {crawl} --show CHECK"
        ))?;
    }
    output.finish()?;
    Ok(())
}

fn write_shown(query: &Query, shown: Vec<Shown>, out: impl Write) -> anyhow::Result<()> {
    let mut output = Output::start(out, query.format, &SHOW_COLUMNS)?;
    for s in &shown {
        output.row(&[s.url.clone(), s.detail.clone()], s)?;
    }
    output.finish()?;
    Ok(())
}

/// The command that lists the URLs of `check` of `crawl` (its words on
/// the command line).
fn command(crawl: &str, check: Check) -> String {
    format!("crawldeck audit {crawl} --show {}", check.name())
}

/// How the command line names the query's crawl: its data directory, or
/// `--redis URL --crawl NAME`.
pub fn crawl_words(query: &Query) -> String {
    match &query.cluster {
        Some(target) => format!(
            "--redis {} --crawl {}",
            shell_word(&target.url.without_password()),
            shell_word(&target.crawl)
        ),
        None => dir_words(&query.data_dir),
    }
}

/// A data directory as one shell word.
pub fn dir_words(data_dir: &std::path::Path) -> String {
    shell_word(&data_dir.display().to_string())
}

/// `s` as one shell word.
fn shell_word(s: &str) -> String {
    let plain = s
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"/._-+:,@%".contains(&b));
    if plain && !s.is_empty() {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// Findings with at least one URL, most URLs first, then by priority.
pub fn ranked(counts: &HashMap<Check, u64>, crawl: &str) -> Vec<Finding> {
    let mut found: Vec<(Check, u64)> = ALL
        .iter()
        .filter_map(|c| counts.get(c).filter(|&&n| n > 0).map(|&n| (*c, n)))
        .collect();
    found.sort_by_key(|&(check, n)| (std::cmp::Reverse(n), check.priority(), check));
    found
        .into_iter()
        .map(|(check, urls)| Finding {
            check: check.name(),
            priority: check.priority().label(),
            urls,
            finding: check.what(),
            command: command(crawl, check),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn findings_rank_by_urls_then_priority_and_skip_empty_checks() {
        let counts = HashMap::from([
            (Check::MissingDescription, 40),
            (Check::BrokenLinks, 3),
            (Check::MissingTitle, 3),
            (Check::SlowPages, 0),
        ]);
        let findings = ranked(&counts, &dir_words(std::path::Path::new("/data/my crawl")));
        let order: Vec<&str> = findings.iter().map(|f| f.check).collect();
        assert_eq!(
            order,
            ["missing-description", "broken-links", "missing-title"]
        );
        assert_eq!(
            findings[1].command,
            "crawldeck audit '/data/my crawl' --show broken-links"
        );
    }
}
