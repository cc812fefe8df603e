//! `crawldeck diff OLD NEW`: two crawls of one site compared URL by URL, as
//! site crawlers compare crawls (Screaming Frog's crawl comparison): URLs
//! added and removed, new and fixed broken links, status, redirect, title,
//! canonical, indexability, description and h1 changes. Both crawls are
//! walked in URL order side by side (`compare::Paired`), so memory stays flat
//! whatever their size; either may be running (read through its engine).
//! `crawldeck diff DIR` compares a recrawled crawl's previous pass (the
//! records the store kept, `store::previous`) with its current records.

mod compare;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;

pub use compare::{changes, Change, ChangeKind, Paired, Side};

use super::output::{col, Column, Output};
use super::query::{host_prefixes, Format};
use super::rows::{Rows, RuleOrigins};
use crate::control::results::Results;

/// What a diff compares.
#[derive(Debug, Clone, PartialEq)]
pub enum Compared {
    /// Two crawls: the earlier one's data directory, then the later one's.
    Crawls(PathBuf, PathBuf),
    /// The last recrawl pass of one data directory with the pass before.
    Passes(PathBuf),
}

/// A checked `crawldeck diff`.
#[derive(Debug, Clone, PartialEq)]
pub struct DiffQuery {
    /// The crawls, or the passes of one.
    pub compared: Compared,
    /// Output format.
    pub format: Format,
    /// Keep these kinds of change (empty: all).
    pub only: Vec<ChangeKind>,
    /// Keep URLs of this host key.
    pub host: Option<String>,
    /// At most this many rows (every change is still counted).
    pub limit: Option<usize>,
}

/// How many changes of each kind a diff found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    counts: [u64; ChangeKind::ALL.len()],
    /// Whether the walk went to the end (a reader that went away cuts it short).
    pub complete: bool,
    /// Either crawl was read through its running engine.
    pub live: bool,
    /// URLs both crawls recorded.
    pub shared_urls: u64,
    /// The recrawl pass compared with the one before (`diff DIR`).
    pub pass: Option<u32>,
}

impl Summary {
    fn count(&mut self, kind: ChangeKind) {
        self.counts[kind as usize] += 1;
    }

    /// Changes of one kind.
    pub fn of(&self, kind: ChangeKind) -> u64 {
        self.counts[kind as usize]
    }

    /// Changes listed (after `--only` and `--host`, before `--limit`).
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// `3 changes: 1 removed, 1 broken, 1 title`, or `no changes`.
    pub fn line(&self) -> String {
        let parts: Vec<String> = ChangeKind::ALL
            .iter()
            .filter(|k| self.of(**k) > 0)
            .map(|k| format!("{} {}", self.of(*k), k.label()))
            .collect();
        let live = match (self.live, self.pass) {
            (true, Some(p)) => format!(" (recrawl pass {p}, running: as recorded so far)"),
            (true, None) => " (a running crawl: as recorded so far)".to_string(),
            (false, Some(p)) => format!(" (recrawl pass {p} against the pass before)"),
            (false, None) => String::new(),
        };
        // Every URL added or removed: most likely not the same site's URLs.
        let apart = if self.shared_urls == 0 && self.total() > 0 {
            "; the crawls have no URL in common: another site, or the site at another \
             host, port or scheme?"
        } else {
            ""
        };
        match self.total() {
            0 => format!("no changes{live}"),
            1 => format!("1 change: {}{live}{apart}", parts.join(", ")),
            n => format!("{n} changes: {}{live}{apart}", parts.join(", ")),
        }
    }
}

static DIFF_TABLE: [Column; 4] = [
    col("change", Some(12)),
    col("url", Some(70)),
    col("old", Some(30)),
    col("new", None),
];

static DIFF_FIELDS: [Column; 5] = [
    col("url", None),
    col("change", None),
    col("old", None),
    col("new", None),
    col("linked_from", None),
];

/// Compares the two crawls, writing one row per change to `out`. A reader
/// that goes away (`| head`) ends it quietly, with `complete` false.
pub fn run(query: &DiffQuery, out: impl Write) -> anyhow::Result<Summary> {
    let mut summary = Summary::default();
    let written = match &query.compared {
        Compared::Crawls(old, new) => {
            let old = open(old, "old")?;
            let new = open(new, "new")?;
            summary.live = old.is_live() || new.is_live();
            let old = sides(query, &old, Pass::Current)?;
            let new = sides(query, &new, Pass::Current)?;
            write_changes(query, old, new, out, &mut summary)
        }
        Compared::Passes(dir) => {
            let crawl = open(dir, "")?;
            let pass = crawl.recrawl_pass()?;
            if pass == 0 {
                anyhow::bail!(never_recrawled(dir));
            }
            summary.live = crawl.is_live();
            summary.pass = Some(pass);
            let old = sides(query, &crawl, Pass::Previous)?;
            let new = sides(query, &crawl, Pass::Current)?;
            write_changes(query, old, new, out, &mut summary)
        }
    };
    match written {
        Ok(()) => summary.complete = true,
        Err(e) if super::is_broken_pipe(&e) => {}
        Err(e) => return Err(e),
    }
    Ok(summary)
}

/// Why `diff DIR` has nothing to compare, and what to do.
fn never_recrawled(dir: &Path) -> String {
    let dir = dir.display();
    format!(
        "{dir} was never recrawled, so it holds no earlier pass to compare with: run \
         `crawldeck crawl --headless --data {dir} --recrawl`, then `crawldeck diff {dir}`; \
         or give OLD and NEW data directories of two crawls"
    )
}

fn open(dir: &Path, which: &str) -> anyhow::Result<Results> {
    let which = if which.is_empty() {
        String::new()
    } else {
        format!("{which} ")
    };
    Results::open(dir).with_context(|| format!("cannot read the {which}crawl in {}", dir.display()))
}

/// Which records of a crawl are compared.
#[derive(Clone, Copy)]
enum Pass {
    /// Its page records.
    Current,
    /// Its records as the previous recrawl pass left them.
    Previous,
}

fn write_changes(
    query: &DiffQuery,
    old: impl Iterator<Item = anyhow::Result<Side>>,
    new: impl Iterator<Item = anyhow::Result<Side>>,
    out: impl Write,
    summary: &mut Summary,
) -> anyhow::Result<()> {
    let columns: &'static [Column] = match query.format {
        Format::Table => &DIFF_TABLE,
        _ => &DIFF_FIELDS,
    };
    let mut output = Output::start(out, query.format, columns)?;
    let limit = query.limit.unwrap_or(usize::MAX) as u64;
    for pair in Paired::new(old, new) {
        let (o, n) = pair?;
        summary.shared_urls += u64::from(o.is_some() && n.is_some());
        for change in changes(o.as_ref(), n.as_ref()) {
            if !query.only.is_empty() && !query.only.contains(&change.change) {
                continue;
            }
            summary.count(change.change);
            if summary.total() <= limit {
                write_change(&mut output, query.format, &change)?;
            }
        }
    }
    output.finish()?;
    Ok(())
}

/// The compared side of every URL a crawl recorded (of `--host`), in URL order.
fn sides<'a>(
    query: &'a DiffQuery,
    results: &'a Results,
    pass: Pass,
) -> anyhow::Result<impl Iterator<Item = anyhow::Result<Side>> + 'a> {
    let rules = Arc::new(RuleOrigins::load(results)?);
    let mut streams = Vec::new();
    for prefix in host_prefixes(query.host.as_deref()) {
        // Page records only: links left out and parked URLs were never asked
        // for; referrers for `linked_from` and, with the sitemap rows, for
        // telling a sitemap file (never a broken link) from a page.
        let pages = match pass {
            Pass::Current => results.pages(&prefix)?,
            Pass::Previous => results.previous_pass_pages(&prefix)?,
        };
        streams.push(Rows::with_pages(
            pages,
            results,
            &prefix,
            false,
            true,
            rules.clone(),
        )?);
    }
    Ok(streams
        .into_iter()
        .flatten()
        .filter_map(move |row| match row {
            Ok(row) if query.host.as_deref().is_some_and(|h| h != row.host) => None,
            Ok(row) => Side::of(row).map(Ok),
            Err(e) => Some(Err(e.into())),
        }))
}

fn write_change<W: Write>(
    output: &mut Output<W>,
    format: Format,
    change: &Change,
) -> std::io::Result<()> {
    let value = |v: &Option<String>| v.clone().unwrap_or_default();
    if format == Format::Table {
        let fields = [
            change.change.label().to_string(),
            change.url.clone(),
            value(&change.old),
            value(&change.new),
        ];
        output.row(&fields, change)?;
        let broken = matches!(change.change, ChangeKind::Broken | ChangeKind::Fixed);
        if let Some(from) = change.linked_from.as_deref().filter(|_| broken) {
            output.note(&format!("← {from}"))?;
        }
        return Ok(());
    }
    let fields = [
        change.url.clone(),
        change.change.label().to_string(),
        value(&change.old),
        value(&change.new),
        value(&change.linked_from),
    ];
    output.row(&fields, change)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_counts_each_kind_in_listing_order() {
        let mut summary = Summary::default();
        assert_eq!(summary.line(), "no changes");
        summary.count(ChangeKind::Title);
        assert!(
            summary.line().contains("no URL in common"),
            "{}",
            summary.line()
        );
        summary.shared_urls = 1;
        assert_eq!(summary.line(), "1 change: 1 title");
        summary.count(ChangeKind::Removed);
        summary.count(ChangeKind::Title);
        summary.live = true;
        assert_eq!(
            summary.line(),
            "3 changes: 1 removed, 2 title (a running crawl: as recorded so far)"
        );
        assert_eq!(summary.of(ChangeKind::Title), 2);
    }

    fn render(format: Format, changes: &[Change]) -> String {
        let columns: &'static [Column] = match format {
            Format::Table => &DIFF_TABLE,
            _ => &DIFF_FIELDS,
        };
        let mut buf = Vec::new();
        let mut output = Output::start(&mut buf, format, columns).unwrap();
        for change in changes {
            write_change(&mut output, format, change).unwrap();
        }
        output.finish().unwrap();
        String::from_utf8(buf).unwrap()
    }

    #[test]
    fn a_table_names_the_page_linking_to_a_broken_url_under_it() {
        let change = |kind, old: &str, new: &str| Change {
            url: "http://h.example/a".into(),
            change: kind,
            old: Some(old.into()),
            new: Some(new.into()),
            linked_from: Some("http://h.example/".into()),
        };
        let changes = [
            change(ChangeKind::Broken, "200", "404"),
            change(ChangeKind::Title, "Old\u{1b}[2J", "New"),
        ];
        let table = render(Format::Table, &changes);
        let lines: Vec<&str> = table.lines().collect();
        let pad = |s: &str, w: usize| format!("{s:w$}  ");
        assert_eq!(
            lines[0],
            format!(
                "{}{}{}new",
                pad("change", 12),
                pad("url", 70),
                pad("old", 30)
            )
        );
        assert!(lines[1].starts_with(&pad("broken", 12)), "{table}");
        assert!(
            lines[1].ends_with("200                             404"),
            "{table}"
        );
        assert_eq!(lines[2], "    ← http://h.example/");
        assert!(
            lines[3].contains("Old[2J"),
            "no control characters: {table}"
        );
        assert_eq!(
            lines.len(),
            4,
            "only broken and fixed URLs name their referrer"
        );
        assert_eq!(
            render(Format::Tsv, &changes[..1]),
            "url\tchange\told\tnew\tlinked_from\n\
             http://h.example/a\tbroken\t200\t404\thttp://h.example/\n"
        );
        let json: serde_json::Value =
            serde_json::from_str(render(Format::Json, &changes[1..]).trim()).unwrap();
        assert_eq!(json["change"], "title");
        assert_eq!(
            json["old"], "Old\u{1b}[2J",
            "JSON keeps the string as stored"
        );
    }
}
