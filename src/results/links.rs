//! `crawldeck links`: broken targets with the pages that link to them, and
//! redirect chains from their first URL to where they end.

use std::collections::{HashMap, HashSet};
use std::io::Write;

use serde::Serialize;

use super::output::{col, Column, Output};
use super::query::{Fate, Format, Query};
use super::rows::Row;
use crate::control::results::Results;
use crate::engine::store::PageOutcome;

/// Hops followed before a chain is cut (the engine follows fewer).
const MAX_HOPS: usize = 32;

static BROKEN_COLUMNS: [Column; 4] = [
    col("status", Some(14)),
    col("kind", Some(8)),
    col("url", None),
    col("linked from", None),
];

#[derive(Serialize)]
struct Broken<'a> {
    url: &'a str,
    status: Option<u16>,
    error: Option<&'a str>,
    /// `page`, `resource` or `external`.
    kind: &'a str,
    referrers: &'a [String],
}

/// Why a row is broken: `None` if it is not, `Some(None)` for its status or
/// error, `Some(Some("redirect loop"))` for a redirect that never resolves.
fn broken_why(row: &Row, results: &Results) -> anyhow::Result<Option<Option<&'static str>>> {
    Ok(if row.is_broken() {
        Some(None)
    } else if row.fate == Fate::Redirect.label() && redirect_loops(&row.url, results)? {
        Some(Some(REDIRECT_LOOP))
    } else {
        None
    })
}

const REDIRECT_LOOP: &str = "redirect loop";

/// Whether the redirects from `url` come back to one of their URLs (or go on
/// past [`MAX_HOPS`]): a link to it can never resolve.
fn redirect_loops(url: &str, results: &Results) -> anyhow::Result<bool> {
    let mut seen = HashSet::new();
    let mut url = url.to_string();
    while seen.insert(url.clone()) {
        if seen.len() > MAX_HOPS {
            return Ok(true);
        }
        match results.page(&url)?.map(|p| p.outcome) {
            Some(PageOutcome::Redirect { location, .. }) => url = location,
            _ => return Ok(false),
        }
    }
    Ok(true)
}

/// 4xx, 5xx, failed URLs and redirect loops with their referrers. TSV and
/// CSV have one line per (target, referrer); a table lists the referrers
/// under their target.
pub(super) fn broken(query: &Query, results: &Results, out: impl Write) -> anyhow::Result<()> {
    let mut output = Output::start(out, query.format, &BROKEN_COLUMNS)?;
    let rows = super::matching_rows(query, results, true)?
        .map(|r| r.and_then(|row| Ok(broken_why(&row, results)?.map(|why| (row, why)))))
        .filter_map(Result::transpose)
        .take(query.limit.unwrap_or(usize::MAX));
    let mut written = 0;
    for row in rows {
        let (row, why) = row?;
        written += 1;
        let status = match (why, row.status, &row.reason) {
            (Some(_), _, _) => "loop".to_string(),
            (None, Some(s), _) => s.to_string(),
            (None, None, Some(kind)) => kind.clone(),
            (None, None, None) => String::new(),
        };
        let json = Broken {
            url: &row.url,
            status: row.status,
            error: why.or(row.detail.as_deref().filter(|_| row.status.is_none())),
            kind: row.kind,
            referrers: &row.referrers,
        };
        let kind = row.kind.to_string();
        match query.format {
            Format::Table => {
                output.row(&[status, kind, row.url.clone(), String::new()], &json)?;
                for referrer in &row.referrers {
                    output.note(&format!("← {referrer}"))?;
                }
            }
            Format::Json => output.row(&[], &json)?,
            Format::Tsv | Format::Csv if row.referrers.is_empty() => {
                output.row(&[status, kind, row.url.clone(), String::new()], &json)?
            }
            Format::Tsv | Format::Csv => {
                for referrer in &row.referrers {
                    let fields = [
                        status.clone(),
                        kind.clone(),
                        row.url.clone(),
                        referrer.clone(),
                    ];
                    output.row(&fields, &json)?;
                }
            }
        }
    }
    let left = query.limit.unwrap_or(usize::MAX) - written;
    broken_fragments(query, results, left, &mut output)?;
    output.finish()?;
    Ok(())
}

/// Links to `#fragments` their page does not have, after the broken targets.
fn broken_fragments<W: Write>(
    query: &Query,
    results: &Results,
    mut left: usize,
    output: &mut Output<W>,
) -> anyhow::Result<()> {
    super::fragments::for_each_broken(query, results, |broken| {
        if left == 0 {
            return Ok(false);
        }
        left -= 1;
        let url = broken.url();
        let referrers = [broken.linked_from.clone()];
        let json = Broken {
            url: &url,
            status: None,
            error: Some(MISSING_FRAGMENT),
            kind: "page",
            referrers: &referrers,
        };
        let fields = [
            "fragment".to_string(),
            "page".to_string(),
            url.clone(),
            broken.linked_from.clone(),
        ];
        match query.format {
            Format::Table => {
                let head = [
                    fields[0].clone(),
                    fields[1].clone(),
                    url.clone(),
                    String::new(),
                ];
                output.row(&head, &json)?;
                output.note(&format!("← {}", broken.linked_from))?;
            }
            _ => output.row(&fields, &json)?,
        }
        Ok(true)
    })
}

/// Why a link to `page#part` is broken.
const MISSING_FRAGMENT: &str = "no such fragment";

static CHAIN_TABLE: [Column; 1] = [col("chain", None)];

static CHAIN_COLUMNS: [Column; 5] = [
    col("from", None),
    col("hops", None),
    col("final", None),
    col("final_status", None),
    col("chain", None),
];

/// One URL of a chain.
#[derive(Serialize)]
struct Hop {
    url: String,
    /// The status, `None` if the URL has no answer (not fetched yet, blocked, failed).
    status: Option<u16>,
    fate: String,
}

/// Redirect chains, each from a URL no redirect leads to (or, in a loop, from
/// any of its URLs) to its end. Holds the crawl's redirects in memory.
pub(super) fn redirects(query: &Query, results: &Results, out: impl Write) -> anyhow::Result<()> {
    let hops = redirect_hops(query, results)?;
    let targets: HashSet<&str> = hops.values().map(|(_, to)| to.as_str()).collect();
    let mut starts: Vec<&String> = hops
        .keys()
        .filter(|u| !targets.contains(u.as_str()))
        .collect();
    starts.sort();
    let columns: &'static [Column] = match query.format {
        Format::Table => &CHAIN_TABLE,
        _ => &CHAIN_COLUMNS,
    };
    let mut output = Output::start(out, query.format, columns)?;
    let mut visited = HashSet::new();
    let mut written = 0;
    let limit = query.limit.unwrap_or(usize::MAX);
    for start in starts {
        if written >= limit {
            break;
        }
        let chain = follow(start, &hops, results, &mut visited)?;
        write_chain(&mut output, query.format, start, &chain)?;
        written += 1;
    }
    // What is left unvisited are loops with no way in.
    let mut loops: Vec<&String> = hops.keys().filter(|u| !visited.contains(*u)).collect();
    loops.sort();
    for start in loops {
        if written >= limit {
            break;
        }
        if !visited.contains(start) {
            let chain = follow(start, &hops, results, &mut visited)?;
            write_chain(&mut output, query.format, start, &chain)?;
            written += 1;
        }
    }
    output.finish()?;
    Ok(())
}

/// How a page redirects: a 2xx redirects by its meta refresh.
fn redirect_kind(status: u16) -> &'static str {
    if status < 300 {
        META_REFRESH
    } else {
        "redirect"
    }
}

/// The redirect a page makes with `<meta http-equiv="refresh">`.
pub(crate) const META_REFRESH: &str = "meta refresh";

/// Every redirect of the query's hosts: URL → (status, location).
fn redirect_hops(
    query: &Query,
    results: &Results,
) -> anyhow::Result<HashMap<String, (u16, String)>> {
    let mut hops = HashMap::new();
    for prefix in query.url_prefixes() {
        for page in results.pages(&prefix)? {
            let page = page?;
            if let PageOutcome::Redirect { status, location } = page.outcome {
                if query.host.as_deref().is_none_or(|h| h == page.host) {
                    hops.insert(page.url, (status, location));
                }
            }
        }
    }
    Ok(hops)
}

/// One chain: `url [301] → url [200]` in a table, its parts in TSV and CSV.
fn write_chain<W: Write>(
    output: &mut Output<W>,
    format: Format,
    start: &str,
    chain: &[Hop],
) -> std::io::Result<()> {
    let last = chain.last().expect("a chain has its start");
    let text: Vec<String> = chain
        .iter()
        .map(|h| match h.status {
            Some(s) if h.fate == META_REFRESH => format!("{} [{s} {META_REFRESH}]", h.url),
            Some(s) => format!("{} [{s}]", h.url),
            None => format!("{} [{}]", h.url, h.fate),
        })
        .collect();
    let json = serde_json::json!({ "from": start, "chain": chain });
    if format == Format::Table {
        return output.row(&[text.join(" → ")], &json);
    }
    let fields = [
        start.to_string(),
        (chain.len() - 1).to_string(),
        last.url.clone(),
        last.status
            .map(|s| s.to_string())
            .unwrap_or_else(|| last.fate.clone()),
        text.join(" → "),
    ];
    output.row(&fields, &json)
}

/// The chain from `start`: redirects followed until a URL that is not one,
/// a loop, or [`MAX_HOPS`].
fn follow(
    start: &str,
    hops: &HashMap<String, (u16, String)>,
    results: &Results,
    visited: &mut HashSet<String>,
) -> anyhow::Result<Vec<Hop>> {
    let mut chain = Vec::new();
    let mut seen = HashSet::new();
    let mut url = start.to_string();
    while let Some((status, to)) = hops.get(&url) {
        visited.insert(url.clone());
        seen.insert(url.clone());
        chain.push(Hop {
            url: std::mem::replace(&mut url, to.clone()),
            status: Some(*status),
            fate: redirect_kind(*status).into(),
        });
        if seen.contains(&url) || chain.len() >= MAX_HOPS {
            chain.push(Hop {
                url,
                status: None,
                fate: "loop".into(),
            });
            return Ok(chain);
        }
    }
    let end = match results.page(&url)? {
        Some(page) => {
            let row = Row::of_page(page, &Default::default());
            Hop {
                status: row.status,
                fate: row.reason.unwrap_or_else(|| row.fate.to_string()),
                url,
            }
        }
        None => Hop {
            url,
            status: None,
            fate: "not fetched".into(),
        },
    };
    chain.push(end);
    Ok(chain)
}

#[cfg(test)]
#[path = "links_tests.rs"]
mod tests;
