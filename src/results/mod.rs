//! `crawldeck pages` and `crawldeck links`: what a crawl found, listed,
//! filtered and exported from its store (or from the running engine through
//! its control socket, see `control::results`).

pub mod audit;
pub mod diff;
mod dupes;
pub mod facts;
pub mod fragments;
pub mod host_lists;
mod links;
pub mod output;
pub mod page;
pub mod query;
pub mod rows;
pub mod sitemaps;
pub mod window;

use std::io::Write;
use std::sync::Arc;

use anyhow::Context;

use crate::control::results::Results;
use output::{col, Column, Output};
pub use query::{Fate, Format, Listing, Query, SortKey};
use rows::{Row, Rows, RuleOrigins};

/// Runs a listing, writing to `out`. A reader that goes away (`| head`) ends
/// it quietly.
pub fn run(query: &Query, out: impl Write) -> anyhow::Result<()> {
    let results = Results::open(&query.data_dir)
        .with_context(|| format!("cannot read the crawl in {}", query.data_dir.display()))?;
    run_on(query, &results, out)
}

/// Runs a listing of `results` (a shared crawl's workers, see
/// `cluster::listing`), writing to `out`.
pub fn run_on(query: &Query, results: &Results, out: impl Write) -> anyhow::Result<()> {
    let written = match query.listing {
        Listing::Pages => list_pages(query, results, out),
        Listing::Duplicates => dupes::list(query, results, out),
        Listing::Broken => links::broken(query, results, out),
        Listing::Redirects => links::redirects(query, results, out),
        Listing::Audit(show) => audit::run(query, show, results, out),
    };
    match written {
        Err(e) if is_broken_pipe(&e) => Ok(()),
        other => other,
    }
}

/// Why a listing that could show parked URLs shows none of a worker of a
/// shared crawl: they are parked in Redis (not an empty quarantine).
pub fn shared_parked_note(query: &Query) -> Option<String> {
    if !lists_parked(query) {
        return None;
    }
    let (url, crawl, not_in) = match &query.cluster {
        Some(target) => (
            target.url.without_password(),
            target.crawl.clone(),
            "its workers' records".into(),
        ),
        None => {
            let (url, crawl) = crate::engine::frontier::shared_crawl(&query.data_dir)?;
            (url, crawl, query.data_dir.display().to_string())
        }
    };
    Some(format!(
        "parked URLs of the shared crawl {crawl} live in Redis, not in {not_in}: not listed; \
         `crawldeck attach --redis {url} --crawl {crawl}` shows them (tab 7)"
    ))
}

pub(crate) fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Every row matching the query's filters, host by host prefix, in URL order.
pub(crate) fn matching_rows<'a>(
    query: &'a Query,
    results: &'a Results,
    with_referrers: bool,
) -> anyhow::Result<impl Iterator<Item = anyhow::Result<Row>> + 'a> {
    let rules = Arc::new(RuleOrigins::load(results)?);
    // Links left out have no status, fate "blocked" and no answer.
    let with_filtered = query.status.is_empty()
        && !query.facts.needs_answer()
        && query.fate.is_none_or(|f| f == Fate::Blocked)
        && query.listing == Listing::Pages;
    let mut streams = Vec::new();
    if query.fate != Some(Fate::Parked) {
        for prefix in query.url_prefixes() {
            streams.push(Rows::open(
                results,
                &prefix,
                with_filtered,
                with_referrers,
                rules.clone(),
            )?);
        }
    }
    // Parked URLs are keyed by alert, not URL: they follow the others.
    let parked: Box<dyn Iterator<Item = _>> = if lists_parked(query) {
        Box::new(results.parked()?.map(|p| p.map(Row::of_parked)))
    } else {
        Box::new(std::iter::empty())
    };
    Ok(streams
        .into_iter()
        .flatten()
        .chain(parked)
        .filter_map(move |row| match row {
            Ok(row) if row.passes(query) => Some(Ok(row)),
            Ok(_) => None,
            Err(e) => Some(Err(e.into())),
        }))
}

/// Whether the query can match a parked URL (no status, fate `parked`,
/// reason `trap` or one alert).
fn lists_parked(query: &Query) -> bool {
    query.listing == Listing::Pages
        && query.status.is_empty()
        && !query.facts.needs_answer()
        && query.fate.is_none_or(|f| f == Fate::Parked)
        && query
            .by
            .as_deref()
            .is_none_or(|by| by == "trap" || query::by_alert(by).is_some())
}

static PAGE_TABLE: [Column; 13] = [
    col("status", Some(6)),
    col("type", Some(16)),
    col("size", Some(9)),
    col("time", Some(7)),
    col("depth", Some(5)),
    col("cut", Some(7)),
    col("in", Some(5)),
    col("index", Some(5)),
    col("found_by", Some(12)),
    col("kind", Some(8)),
    col("fate", Some(20)),
    col("url", Some(70)),
    col("title", None),
];

static PAGE_FIELDS: [Column; 26] = [
    col("url", None),
    col("status", None),
    col("content_type", None),
    col("size", None),
    col("depth", None),
    col("title", None),
    col("fetched_at", None),
    col("fate", None),
    col("reason", None),
    col("detail", None),
    col("referrers", None),
    col("host", None),
    col("links_cut", None),
    col("response_ms", None),
    col("indexable", None),
    col("indexability", None),
    col("canonical", None),
    col("description", None),
    col("h1", None),
    col("h1_count", None),
    col("words", None),
    col("links_out", None),
    col("inlinks", None),
    col("hreflang", None),
    col("found_by", None),
    col("kind", None),
];

fn page_fields(row: &Row, format: Format) -> Vec<String> {
    if format == Format::Table {
        return page_table_fields(row);
    }
    let opt = |s: &Option<String>| s.clone().unwrap_or_default();
    let num = |n: Option<u32>| n.map(|n| n.to_string()).unwrap_or_default();
    let facts = &row.facts;
    let hreflang: Vec<String> = facts
        .hreflang
        .iter()
        .map(|h| format!("{}={}", h.lang, h.url))
        .collect();
    vec![
        row.url.clone(),
        row.status.map(|s| s.to_string()).unwrap_or_default(),
        opt(&row.content_type),
        row.size.to_string(),
        row.depth.to_string(),
        opt(&row.title),
        row.fetched_at.clone(),
        row.fate.to_string(),
        opt(&row.reason),
        opt(&row.detail),
        row.referrers.join(" "),
        row.host.clone(),
        row.links_cut.to_string(),
        num(facts.response_ms),
        yes_no(facts.indexable).to_string(),
        opt(&facts.indexability),
        opt(&facts.canonical),
        opt(&facts.description),
        opt(&facts.h1),
        num(facts.h1_count),
        num(facts.words),
        num(facts.links_out),
        facts.inlinks.to_string(),
        hreflang.join(" "),
        row.found_by.label().to_string(),
        row.kind.to_string(),
    ]
}

fn yes_no(flag: Option<bool>) -> &'static str {
    match flag {
        Some(true) => "yes",
        Some(false) => "no",
        None => "",
    }
}

fn page_table_fields(row: &Row) -> Vec<String> {
    let fate = match &row.reason {
        Some(reason) => format!("{}: {reason}", row.fate),
        None => row.fate.to_string(),
    };
    let size = if row.size > 0 {
        crate::text::human_bytes(row.size)
    } else {
        String::new()
    };
    let time = row
        .facts
        .response_ms
        .map(|ms| format!("{ms} ms"))
        .unwrap_or_default();
    let title = row.title.clone().or(row.detail.clone()).unwrap_or_default();
    let cut = match row.links_cut {
        0 => String::new(),
        n => n.to_string(),
    };
    vec![
        row.status.map(|s| s.to_string()).unwrap_or_default(),
        row.content_type.clone().unwrap_or_default(),
        size,
        time,
        row.depth.to_string(),
        cut,
        row.facts.inlinks.to_string(),
        yes_no(row.facts.indexable).to_string(),
        row.found_by.label().to_string(),
        row.kind.to_string(),
        fate,
        row.url.clone(),
        title,
    ]
}

/// The names of the custom extractions of the crawl in `data_dir`, in the
/// order they were added: the columns `pages` adds (`Row::extract` holds a
/// page's values by these names).
pub fn extraction_names(data_dir: &std::path::Path) -> anyhow::Result<Vec<String>> {
    let specs = crate::engine::config::extract::stored(data_dir)?;
    Ok(specs.into_iter().map(|s| s.name).collect())
}

/// The extractions of the query's crawl: of a shared crawl, every
/// worker's (a worker's own are in its crawl.toml), each name once.
fn listed_extractions(query: &Query, results: &Results) -> anyhow::Result<Vec<String>> {
    let Results::Merged(merged) = results else {
        return extraction_names(&query.data_dir);
    };
    let mut names: Vec<String> = Vec::new();
    for part in merged.parts() {
        let own = match (&part.dir, &part.results) {
            (Some(dir), _) => extraction_names(dir)?,
            (None, Results::Remote(remote)) => remote.one("extractions", "")?,
            (None, _) => Vec::new(),
        };
        for name in own {
            if !names.iter().any(|n| n.eq_ignore_ascii_case(&name)) {
                names.push(name);
            }
        }
    }
    Ok(names)
}

/// How a CSV or TSV cell holds an extraction's values (JSON keeps a list).
pub const VALUE_SEPARATOR: &str = " | ";

/// The columns after the fixed ones: `extract.NAME` per extraction, then
/// `extract_cut`; none without extractions. The table shows them as notes.
fn extraction_columns(names: &[String]) -> Vec<Column> {
    if names.is_empty() {
        return Vec::new();
    }
    let each = names.iter().map(|name| Column {
        name: format!("extract.{name}").into(),
        width: None,
    });
    each.chain([col("extract_cut", None)]).collect()
}

/// The cells of [`extraction_columns`] for one row.
fn extraction_fields(row: &Row, names: &[String]) -> Vec<String> {
    if names.is_empty() {
        return Vec::new();
    }
    let each = names.iter().map(|name| {
        row.values_of(name)
            .map(|values| values.join(VALUE_SEPARATOR))
            .unwrap_or_default()
    });
    each.chain([row.extract_cut.join(" ")]).collect()
}

/// Under a table row: one line per extraction that found something.
fn extraction_notes(row: &Row, output: &mut Output<impl Write>) -> std::io::Result<()> {
    for (name, values) in row.extract.iter().filter(|(_, v)| !v.is_empty()) {
        let cut = match row.extract_cut.contains(name) {
            true => " (cut)",
            false => "",
        };
        output.note(&format!("{name}: {}{cut}", values.join(VALUE_SEPARATOR)))?;
    }
    Ok(())
}

fn list_pages(query: &Query, results: &Results, out: impl Write) -> anyhow::Result<()> {
    let names = listed_extractions(query, results)?;
    let columns: Vec<Column> = match query.format {
        Format::Table => PAGE_TABLE.to_vec(),
        _ => [PAGE_FIELDS.as_slice(), &extraction_columns(&names)].concat(),
    };
    // The referrers say which URLs were found by links (`found_by`).
    let with_referrers = true;
    let mut output = Output::start(out, query.format, columns)?;
    let mut write = |row: &Row| {
        let mut fields = page_fields(row, query.format);
        if query.format != Format::Table {
            fields.extend(extraction_fields(row, &names));
        }
        output.row(&fields, row)?;
        extraction_notes(row, &mut output)
    };
    let rows = matching_rows(query, results, with_referrers)?;
    if query.sort == SortKey::Url {
        for row in rows.take(query.limit.unwrap_or(usize::MAX)) {
            write(&row?)?;
        }
    } else {
        for row in sorted(rows, query.sort, query.limit)? {
            write(&row)?;
        }
    }
    output.finish()?;
    Ok(())
}

/// Rows in `key` order. With a limit only twice that many are held at once.
fn sorted(
    rows: impl Iterator<Item = anyhow::Result<Row>>,
    key: SortKey,
    limit: Option<usize>,
) -> anyhow::Result<Vec<Row>> {
    let order = |a: &Row, b: &Row| match key {
        SortKey::Url => a.url.cmp(&b.url),
        SortKey::Status => (a.status.is_none(), a.status).cmp(&(b.status.is_none(), b.status)),
        SortKey::Size => b.size.cmp(&a.size),
        SortKey::Depth => a.depth.cmp(&b.depth),
        SortKey::Fetched => a.fetched_at_unix_ms.cmp(&b.fetched_at_unix_ms),
        SortKey::Response => b.facts.response_ms.cmp(&a.facts.response_ms),
        SortKey::Inlinks => b.facts.inlinks.cmp(&a.facts.inlinks),
    };
    let mut held = Vec::new();
    for row in rows {
        held.push(row?);
        if let Some(limit) = limit {
            if held.len() >= limit.saturating_mul(2).max(1024) {
                held.sort_by(order);
                held.truncate(limit);
            }
        }
    }
    held.sort_by(order);
    if let Some(limit) = limit {
        held.truncate(limit);
    }
    Ok(held)
}
