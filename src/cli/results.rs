//! `crawldeck pages`, `links`, `audit`, `page` and `diff`: the flags, checked
//! into a [`Query`] (or its like) before anything is opened.

use std::io::IsTerminal;
use std::path::PathBuf;

use clap::Args;

use super::UsageError;
use crate::results::audit::Check;
use crate::results::diff::{ChangeKind, Compared, DiffQuery};
use crate::results::facts::{FactFilters, Missing};
use crate::results::page::PageQuery;
use crate::results::query::{parse_host, Fate, Format, Listing, Query, SortKey};
use crate::results::sitemaps::FoundBy;

/// How a listing is written: shared by `pages`, `links`, `audit` and `diff`.
#[derive(Debug, Args, Default, Clone)]
pub struct FormatArgs {
    /// JSON lines.
    #[arg(long, conflicts_with_all = ["csv", "tsv"])]
    pub json: bool,
    /// CSV with a header line.
    #[arg(long, conflicts_with = "tsv")]
    pub csv: bool,
    /// Tab-separated values (the default when stdout is not a terminal).
    #[arg(long)]
    pub tsv: bool,
}

impl FormatArgs {
    fn format(&self) -> Format {
        format_of(self.json, self.csv, self.tsv)
    }
}

/// Output and filter flags shared by `pages` and `links`.
#[derive(Debug, Args, Default, Clone)]
pub struct ListArgs {
    #[command(flatten)]
    pub crawl: super::CrawlSource,
    /// Only URLs of this host (a host name, host:port, or a URL).
    #[arg(long, value_name = "HOST")]
    pub host: Option<String>,
    /// At most this many rows (groups, chains).
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    #[command(flatten)]
    pub format: FormatArgs,
}

#[derive(Debug, Args, Clone)]
pub struct PagesArgs {
    #[command(flatten)]
    pub list: ListArgs,
    /// Only these statuses: codes and classes, e.g. 404,5xx.
    #[arg(long, value_name = "LIST")]
    pub status: Option<String>,
    /// Only URLs with this fate: fetched, redirect, duplicate, error, blocked.
    #[arg(long, value_name = "FATE")]
    pub fate: Option<String>,
    /// Only URLs with this reason: robots, rule, trap, scope, depth, extension,
    /// host (given up), or an error kind (timeout, connect, …).
    #[arg(long, value_name = "REASON")]
    pub by: Option<String>,
    /// Only URLs found this way: links, sitemap (orphans: in a sitemap,
    /// linked from no crawled page), both, seed, sitemap-file.
    #[arg(long, value_name = "HOW")]
    pub found_by: Option<String>,
    /// Row order: url (default, streams), status, size (largest first), depth,
    /// fetched, response (slowest first), inlinks (most linked first).
    #[arg(long, value_name = "KEY")]
    pub sort: Option<String>,
    /// Only URLs that may (yes) or may not (no) be indexed: noindex,
    /// canonicalised elsewhere, not a 2xx, blocked by robots.txt.
    #[arg(long, value_name = "yes|no")]
    pub indexable: Option<String>,
    /// Only HTML pages missing these: title, description, h1 (e.g. `description,h1`).
    #[arg(long, value_name = "LIST")]
    pub missing: Option<String>,
    /// Only HTML pages a custom extraction (--extract NAME=CSS) ran on and
    /// found nothing on.
    #[arg(long, value_name = "NAME")]
    pub extract_missing: Option<String>,
    /// Duplicate and near-duplicate groups instead of one line per URL.
    #[arg(long, conflicts_with_all = ["status", "fate", "by", "sort", "found_by", "indexable", "missing", "extract_missing"])]
    pub duplicates: bool,
}

#[derive(Debug, Args, Clone)]
pub struct LinksArgs {
    #[command(flatten)]
    pub list: ListArgs,
    /// Each broken target (4xx, 5xx, failed) with the pages that link to it.
    #[arg(
        long,
        conflicts_with = "redirects",
        required_unless_present = "redirects"
    )]
    pub broken: bool,
    /// Redirect chains: from → … → final, with status codes.
    #[arg(long)]
    pub redirects: bool,
}

/// `--json`, `--csv`, `--tsv`, else a table on a terminal and TSV when piped.
fn format_of(json: bool, csv: bool, tsv: bool) -> Format {
    if json {
        Format::Json
    } else if csv {
        Format::Csv
    } else if tsv || !std::io::stdout().is_terminal() {
        Format::Tsv
    } else {
        Format::Table
    }
}

fn check_limit(limit: Option<usize>) -> Result<Option<usize>, UsageError> {
    match limit {
        Some(0) => Err(UsageError("--limit must be at least 1".into())),
        other => Ok(other),
    }
}

fn host_of(host: Option<&str>) -> Result<Option<String>, UsageError> {
    host.map(parse_host).transpose().map_err(UsageError)
}

fn base_query(list: ListArgs, listing: Listing) -> Result<Query, UsageError> {
    let format = list.format.format();
    Ok(Query {
        host: host_of(list.host.as_deref())?,
        limit: check_limit(list.limit)?,
        cluster: super::cluster::shared_crawl(
            list.crawl.redis,
            list.crawl.crawl_name,
            list.crawl.trust,
        )?,
        ..Query::new(list.crawl.dir.unwrap_or_default(), listing, format)
    })
}

/// The query of `crawldeck pages`.
pub fn pages_query(args: PagesArgs) -> Result<Query, UsageError> {
    let listing = if args.duplicates {
        Listing::Duplicates
    } else {
        Listing::Pages
    };
    let mut query = base_query(args.list, listing)?;
    if let Some(status) = &args.status {
        query.status = Query::parse_status(status).map_err(UsageError)?;
    }
    query.fate = args
        .fate
        .as_deref()
        .map(Fate::parse)
        .transpose()
        .map_err(UsageError)?;
    query.by = args
        .by
        .as_deref()
        .map(Query::parse_by)
        .transpose()
        .map_err(UsageError)?;
    if let Some(sort) = &args.sort {
        query.sort = SortKey::parse(sort).map_err(UsageError)?;
    }
    if let Some(indexable) = &args.indexable {
        query.facts.indexable = Some(FactFilters::parse_indexable(indexable).map_err(UsageError)?);
    }
    if let Some(missing) = &args.missing {
        query.facts.missing = Missing::parse_list(missing).map_err(UsageError)?;
    }
    // A shared crawl's extractions are its workers' own: read with its rows.
    query.facts.extract_missing = match args.extract_missing {
        Some(name) if query.cluster.is_none() => Some(extraction_name(&query.data_dir, name)?),
        other => other,
    };
    query.found_by = args
        .found_by
        .as_deref()
        .map(FoundBy::parse)
        .transpose()
        .map_err(UsageError)?;
    Ok(query)
}

/// `--extract-missing NAME`: an extraction of the crawl, named as its
/// crawl.toml names it.
fn extraction_name(data_dir: &std::path::Path, name: String) -> Result<String, UsageError> {
    let names = crate::results::extraction_names(data_dir).map_err(|e| {
        UsageError(format!(
            "--extract-missing: cannot read the crawl's extractions: {e:#}"
        ))
    })?;
    match names.iter().find(|n| n.eq_ignore_ascii_case(&name)) {
        Some(found) => Ok(found.clone()),
        None if names.is_empty() => Err(UsageError(format!(
            "--extract-missing {name}: the crawl in {} has no custom extractions; add one with --extract NAME=CSS or :extract",
            data_dir.display()
        ))),
        None => Err(UsageError(format!(
            "--extract-missing {name}: no extraction of that name; the crawl has {}",
            names.join(", ")
        ))),
    }
}

/// `crawldeck audit`: what is wrong with the crawled site.
#[derive(Debug, Args, Clone)]
pub struct AuditArgs {
    #[command(flatten)]
    pub list: ListArgs,
    /// List the URLs of one check (its name as the summary gives it, e.g.
    /// broken-links, duplicate-titles) with what is wrong with each.
    #[arg(long, value_name = "CHECK")]
    pub show: Option<String>,
}

/// The query of `crawldeck audit`.
pub fn audit_query(args: AuditArgs) -> Result<Query, UsageError> {
    let show = args
        .show
        .as_deref()
        .map(Check::parse)
        .transpose()
        .map_err(UsageError)?;
    base_query(args.list, Listing::Audit(show))
}

/// The query of `crawldeck links`.
pub fn links_query(args: LinksArgs) -> Result<Query, UsageError> {
    let listing = if args.broken {
        Listing::Broken
    } else {
        Listing::Redirects
    };
    base_query(args.list, listing)
}

/// `crawldeck page`: one page read back from the archive.
#[derive(Debug, Args, Clone)]
#[command(allow_missing_positional = true)]
pub struct PageArgs {
    /// The crawl's data directory (a running crawl is read through its
    /// engine), or `--redis URL --crawl NAME` for a shared crawl's workers.
    #[command(flatten)]
    pub crawl: super::CrawlSource,
    /// The page's URL, as `crawldeck pages` lists it.
    #[arg(value_name = "URL")]
    pub url: String,
    /// Also list the elements matching this CSS selector (e.g. `h2`, `a.next`).
    #[arg(long, value_name = "CSS")]
    pub select: Option<String>,
    /// Also show a side-by-side diff of the text of this other page.
    #[arg(long, value_name = "URL")]
    pub diff: Option<String>,
    /// One JSON object (without the HTML).
    #[arg(long, conflicts_with_all = ["select", "diff"])]
    pub json: bool,
}

/// The query of `crawldeck page`; a selector that does not parse is a usage
/// error, found before the crawl is read.
pub fn page_query(args: PageArgs) -> Result<PageQuery, UsageError> {
    if let Some(css) = &args.select {
        crate::engine::inspect::check_selector(css)
            .map_err(|e| UsageError(format!("--select: {e}")))?;
    }
    Ok(PageQuery {
        data_dir: args.crawl.dir.unwrap_or_default(),
        cluster: super::cluster::shared_crawl(
            args.crawl.redis,
            args.crawl.crawl_name,
            args.crawl.trust,
        )?,
        url: args.url,
        select: args.select,
        diff: args.diff,
        json: args.json,
    })
}

/// `crawldeck diff`: two crawls of one site compared, or a recrawled
/// crawl's last pass with the pass before.
#[derive(Debug, Args, Clone)]
pub struct DiffArgs {
    /// The earlier crawl's data directory (a running crawl is read through
    /// its engine); alone, a recrawled crawl whose passes are compared.
    #[arg(value_name = "OLD")]
    pub old: PathBuf,
    /// The later crawl's data directory.
    #[arg(value_name = "NEW")]
    pub new: Option<PathBuf>,
    /// Only these changes: added, removed, broken, fixed, status, redirect,
    /// title, canonical, indexability, description, h1 (e.g. `broken,title`).
    #[arg(long, value_name = "LIST")]
    pub only: Option<String>,
    /// Only URLs of this host (a host name, host:port, or a URL).
    #[arg(long, value_name = "HOST")]
    pub host: Option<String>,
    /// At most this many rows (every change is still counted).
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    #[command(flatten)]
    pub format: FormatArgs,
}

/// The query of `crawldeck diff`. The same directory twice is a usage
/// error: one directory alone compares its recrawl passes.
pub fn diff_query(args: DiffArgs) -> Result<DiffQuery, UsageError> {
    let compared = match (args.old, args.new) {
        (dir, None) => Compared::Passes(dir),
        (old, Some(new)) => {
            let same = match (old.canonicalize(), new.canonicalize()) {
                (Ok(a), Ok(b)) => a == b,
                _ => false,
            };
            if same {
                let dir = new.display();
                return Err(UsageError(format!(
                    "OLD and NEW are the same data directory ({dir}); give two crawls, or to \
                     compare its last recrawl pass with the pass before, \
                     `crawldeck diff {dir}` alone (or copy it first: `cp -a {dir} {dir}.before`)"
                )));
            }
            Compared::Crawls(old, new)
        }
    };
    Ok(DiffQuery {
        compared,
        format: args.format.format(),
        only: args
            .only
            .as_deref()
            .map(ChangeKind::parse_list)
            .transpose()
            .map_err(UsageError)?
            .unwrap_or_default(),
        host: host_of(args.host.as_deref())?,
        limit: check_limit(args.limit)?,
    })
}
