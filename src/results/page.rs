//! `crawldeck page`: one page as the inspector shows it, read back from its
//! WARC record (through the running engine when a crawl holds the store).
//! The line rendering here is shared with the TUI's inspector, so both show
//! the same fields; every network string is stripped of control characters.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

use super::facts::RowFacts;
use crate::control::results::Results;
use crate::engine::inspect::{self, DiffRow, DiffSide, PageInspection, SelectError};
use crate::text::{cut_middle, strip_control};

/// What `crawldeck page` was asked.
#[derive(Debug, Clone, PartialEq)]
pub struct PageQuery {
    pub data_dir: PathBuf,
    /// A shared crawl instead of `data_dir`: its workers answer.
    pub cluster: Option<crate::engine::ClusterTarget>,
    pub url: String,
    /// A CSS selector: list the matching elements too.
    pub select: Option<String>,
    /// Another page: a side-by-side diff of the two pages' text too.
    pub diff: Option<String>,
    /// The inspection as one JSON object (without the HTML) instead of lines.
    pub json: bool,
}

/// Equal lines shown on each side of a difference; longer equal runs fold.
const DIFF_CONTEXT: usize = 3;

/// Width of one side of a diff on the command line.
const CLI_DIFF_SIDE: usize = 60;

/// Every string of an inspection stripped of control characters, as the
/// inspector shows them (they come from the network).
fn strip_strings(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::String(s) => {
            if let std::borrow::Cow::Owned(clean) = strip_control(s) {
                *s = clean;
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(strip_strings),
        serde_json::Value::Object(fields) => fields.values_mut().for_each(strip_strings),
        _ => {}
    }
}

/// Runs `crawldeck page`.
pub fn run(query: &PageQuery, out: impl Write) -> anyhow::Result<()> {
    run_with(query, |url| read(&query.data_dir, url), out)
}

/// [`run`] with the pages read by `read` (a data directory's, or a
/// shared crawl's workers').
pub fn run_with(
    query: &PageQuery,
    read: impl Fn(&str) -> anyhow::Result<PageInspection>,
    mut out: impl Write,
) -> anyhow::Result<()> {
    let page = read(&query.url)?;
    if query.json {
        let mut value = serde_json::to_value(&page)?;
        if let Some(object) = value.as_object_mut() {
            object.remove("html");
        }
        strip_strings(&mut value);
        writeln!(out, "{value}")?;
        return Ok(());
    }
    let mut lines = inspection_lines(&page);
    if let Some(css) = &query.select {
        lines.push(String::new());
        lines.extend(select_lines(css, &inspect::select(&page.html, css)));
    }
    if let Some(other) = &query.diff {
        let other = read(other)?;
        lines.push(String::new());
        let rows = inspect::side_by_side(&page.text, &other.text);
        lines.extend(diff_lines(&page, &other, &rows, CLI_DIFF_SIDE));
    }
    for line in lines {
        writeln!(out, "{line}")?;
    }
    Ok(())
}

/// The inspection of `url` in the crawl of `data_dir`, or why there is none.
pub fn read(data_dir: &Path, url: &str) -> anyhow::Result<PageInspection> {
    match find(data_dir, url)? {
        Some(page) => Ok(page),
        None => bail!(
            "the crawl in {} has no record of {}; give a URL as `crawldeck pages` lists it",
            data_dir.display(),
            strip_control(url)
        ),
    }
}

/// The inspection of `url`, `None` if the crawl has no record of it.
pub fn find(data_dir: &Path, url: &str) -> anyhow::Result<Option<PageInspection>> {
    Ok(open(data_dir)?.inspect(data_dir, url)?)
}

/// The parked URLs by alert in the crawl of `data_dir` (through the running
/// engine when a crawl holds the store).
pub fn read_quarantine(data_dir: &Path) -> anyhow::Result<inspect::quarantine::Quarantine> {
    Ok(open(data_dir)?.quarantine()?)
}

/// The records of the crawl in `data_dir`.
pub fn open(data_dir: &Path) -> anyhow::Result<Results> {
    Results::open(data_dir)
        .with_context(|| format!("cannot read the crawl in {}", data_dir.display()))
}

/// The inspection as lines: status, headers, title, outline, links.
pub fn inspection_lines(page: &PageInspection) -> Vec<String> {
    let clean = |s: &str| strip_control(s).into_owned();
    let status = page.status.map_or("-".to_string(), |s| s.to_string());
    let when = match page.fetched_at_unix_ms {
        0 => String::new(),
        ms => format!(
            ", fetched {}",
            humantime::format_rfc3339_seconds(
                std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms)
            )
        ),
    };
    let mut lines = vec![
        format!("url      {}", clean(&page.url)),
        format!("status   {status} ({}){when}", page.outcome),
        format!("title    {}", clean(page.title.as_deref().unwrap_or("-"))),
    ];
    lines.extend(fact_lines(page));
    if page.links_cut > 0 {
        lines.push(format!(
            "cut      {} links not followed: past the per-page cap \
             (scope.max_links_per_page, max_link_bytes_per_page)",
            page.links_cut
        ));
    }
    if let Some(note) = &page.archive_note {
        lines.push(format!("archive  {}", clean(note)));
    }
    if page.truncated {
        lines.push(format!(
            "archive  body cut at {} for inspection",
            crate::text::human_bytes(inspect::MAX_BODY as u64)
        ));
    }
    lines.push(format!("headers ({})", page.headers.len()));
    for (name, value) in &page.headers {
        lines.push(format!("  {}: {}", clean(name), clean(value)));
    }
    lines.push(format!("outline ({})", page.outline.len()));
    for entry in &page.outline {
        lines.push(match entry.level {
            0 => format!("    {}", clean(&entry.text)),
            n => format!("  {} {}", "#".repeat(usize::from(n)), clean(&entry.text)),
        });
    }
    let more = match page.links_not_listed {
        0 => String::new(),
        n => format!(", {n} more not listed"),
    };
    lines.push(format!("links ({}{more})", page.links.len()));
    for link in &page.links {
        lines.push(format!("  {:<26} {}", link.fate.label(), clean(&link.url)));
    }
    lines.push(format!(
        "linked from ({} listed of {} inlinks)",
        page.linked_from.len(),
        page.inlinks
    ));
    for from in &page.linked_from {
        lines.push(format!("  {}", clean(from)));
    }
    lines
}

/// Indexability, time, words, headings, description and canonical of a
/// fetched page, from its record.
fn fact_lines(page: &PageInspection) -> Vec<String> {
    let Some(record) = &page.record else {
        return Vec::new();
    };
    let clean = |s: &str| strip_control(s).into_owned();
    let facts = RowFacts::of(record);
    let mut lines = Vec::new();
    match (facts.indexable, &facts.indexability) {
        (Some(true), _) => lines.push("index    yes".to_string()),
        (Some(false), Some(why)) => lines.push(format!("index    no: {why}")),
        _ => {}
    }
    let mut figures = Vec::new();
    if let Some(ms) = facts.response_ms {
        figures.push(format!("{ms} ms"));
    }
    if let Some(words) = facts.words {
        figures.push(format!("{words} words"));
    }
    if let Some(h1) = facts.h1_count {
        figures.push(format!("{h1} h1"));
    }
    if let Some(out) = facts.links_out {
        figures.push(format!("{out} links out"));
    }
    figures.push(format!("{} inlinks", page.inlinks));
    lines.push(format!("facts    {}", figures.join(" · ")));
    if let Some(h1) = &facts.h1 {
        lines.push(format!("h1       {}", clean(h1)));
    }
    if let Some(description) = &facts.description {
        lines.push(format!("descr    {}", clean(description)));
    }
    if let Some(canonical) = facts.canonical.as_ref().filter(|c| **c != record.url) {
        lines.push(format!("canon    {}", clean(canonical)));
    }
    lines
}

/// What `:select CSS` found, as lines.
pub fn select_lines(css: &str, found: &Result<Vec<String>, SelectError>) -> Vec<String> {
    let css = strip_control(css);
    match found {
        Err(e) => vec![strip_control(&e.to_string()).into_owned()],
        Ok(found) if found.is_empty() => vec![format!("no element matches `{css}`")],
        Ok(found) => {
            let capped = if found.len() >= inspect::MAX_SELECTED {
                " (the first ones)"
            } else {
                ""
            };
            let plural = if found.len() == 1 { "" } else { "s" };
            let mut lines = vec![format!("`{css}`: {} element{plural}{capped}", found.len())];
            lines.extend(found.iter().map(|s| format!("  {}", strip_control(s))));
            lines
        }
    }
}

/// A side-by-side diff of two pages' text (`rows` from `inspect::side_by_side`),
/// each side `side` characters wide; differing rows are marked `|`.
pub fn diff_lines(
    left: &PageInspection,
    right: &PageInspection,
    rows: &[DiffRow],
    side: usize,
) -> Vec<String> {
    let changed = rows.iter().filter(|r| r.side == DiffSide::Changed).count();
    let plural = if changed == 1 { "" } else { "s" };
    let mut lines = vec![
        format!("diff of the text: {changed} differing line{plural}"),
        format!(
            "  {}   {}",
            pad(&cut_middle(&strip_control(&left.url), side), side),
            cut_middle(&strip_control(&right.url), side)
        ),
    ];
    // Long runs of equal lines fold to their ends, so the differences show.
    for run in rows.chunk_by(|a, b| a.side == b.side) {
        let folds = run[0].side == DiffSide::Same && run.len() > 2 * DIFF_CONTEXT + 1;
        if folds {
            let hidden = run.len() - 2 * DIFF_CONTEXT;
            lines.extend(run[..DIFF_CONTEXT].iter().map(|row| diff_row(row, side)));
            lines.push(format!("  … {hidden} equal lines …"));
            let tail = &run[run.len() - DIFF_CONTEXT..];
            lines.extend(tail.iter().map(|row| diff_row(row, side)));
        } else {
            lines.extend(run.iter().map(|row| diff_row(row, side)));
        }
    }
    lines
}

fn diff_row(row: &DiffRow, side: usize) -> String {
    let cell = |s: &Option<String>| {
        let text = strip_control(s.as_deref().unwrap_or(""));
        pad(&cut_middle(&text, side), side)
    };
    let mark = match row.side {
        DiffSide::Same => ' ',
        DiffSide::Changed => '|',
    };
    format!("{mark} {} {mark} {}", cell(&row.left), cell(&row.right))
        .trim_end()
        .to_string()
}

/// `s` padded with spaces to `width` characters.
fn pad(s: &str, width: usize) -> String {
    let len = s.chars().count();
    format!("{s}{}", " ".repeat(width.saturating_sub(len)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::inspect::{InspectedLink, LinkFate, OutlineEntry};

    #[test]
    fn network_strings_lose_their_control_characters() {
        let evil = "a\u{1b}[31mb\u{7}\u{202e}c";
        let page = PageInspection {
            url: format!("http://h/{evil}"),
            outcome: "fetched".into(),
            status: Some(200),
            headers: vec![(evil.into(), evil.into())],
            fetched_at_unix_ms: 0,
            title: Some(evil.into()),
            outline: vec![OutlineEntry {
                level: 1,
                text: evil.into(),
            }],
            text: vec![evil.into()],
            links: vec![InspectedLink {
                url: evil.into(),
                fate: LinkFate::Queued,
            }],
            links_not_listed: 0,
            links_cut: 0,
            html: String::new(),
            truncated: false,
            archive_note: Some(evil.into()),
            record: None,
            inlinks: 0,
            linked_from: Vec::new(),
        };
        let rows = inspect::side_by_side(&page.text, &[]);
        let mut lines = inspection_lines(&page);
        lines.extend(diff_lines(&page, &page, &rows, 20));
        lines.extend(select_lines(evil, &Ok(vec![evil.into()])));
        for line in lines {
            assert!(
                !line.chars().any(|c| c.is_control() || c == '\u{202e}'),
                "{line:?}"
            );
        }
        // `--json` too: the strings decoded carry none.
        let mut json = serde_json::to_value(&page).unwrap();
        strip_strings(&mut json);
        let text = json.to_string();
        assert!(
            !text.contains("\\u001b") && !text.contains('\u{202e}'),
            "{text}"
        );
        let decoded: PageInspection = serde_json::from_value(json).unwrap();
        assert_eq!(decoded.title.as_deref(), Some("a[31mbc"));
    }

    #[test]
    fn long_equal_runs_fold_and_differences_stay() {
        let mut left: Vec<String> = (0..30).map(|i| format!("line {i}")).collect();
        let right = left.clone();
        left[20] = "changed".into();
        let page = |text: Vec<String>| PageInspection {
            url: "http://h/".into(),
            outcome: "fetched".into(),
            status: Some(200),
            headers: Vec::new(),
            fetched_at_unix_ms: 0,
            title: None,
            outline: Vec::new(),
            text,
            links: Vec::new(),
            links_not_listed: 0,
            links_cut: 0,
            html: String::new(),
            truncated: false,
            archive_note: None,
            record: None,
            inlinks: 0,
            linked_from: Vec::new(),
        };
        let (a, b) = (page(left), page(right));
        let rows = inspect::side_by_side(&a.text, &b.text);
        let lines = diff_lines(&a, &b, &rows, 12);
        assert_eq!(lines[0], "diff of the text: 1 differing line");
        assert!(
            lines.contains(&"  … 14 equal lines …".to_string()),
            "{lines:#?}"
        );
        assert!(
            lines.contains(&"| changed      | line 20".to_string()),
            "{lines:#?}"
        );
        assert!(lines.len() < 20, "{lines:#?}");
    }

    #[test]
    fn links_cut_at_the_cap_are_said_under_the_title_only_when_some_were() {
        let mut page = PageInspection {
            url: "http://h/index.html".into(),
            outcome: "fetched".into(),
            status: Some(200),
            headers: Vec::new(),
            fetched_at_unix_ms: 0,
            title: Some("Index".into()),
            outline: Vec::new(),
            text: Vec::new(),
            links: Vec::new(),
            links_not_listed: 0,
            links_cut: 0,
            html: String::new(),
            truncated: false,
            archive_note: None,
            record: None,
            inlinks: 0,
            linked_from: Vec::new(),
        };
        assert!(!inspection_lines(&page).iter().any(|l| l.contains("cut")));
        page.links_cut = 1500;
        let lines = inspection_lines(&page);
        assert_eq!(lines[2], "title    Index");
        assert!(
            lines[3].starts_with("cut      1500 links not followed: past the per-page cap"),
            "{lines:#?}"
        );
    }
}
