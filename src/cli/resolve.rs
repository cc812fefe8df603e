//! What a command line asks for: the layering
//! built-in defaults < `--config FILE` (or `<data>/crawl.toml` on resume) < flags.
//!
//! [`resolve`] only reads files; it never writes, so `main` stays thin and the
//! precedence rules are unit-tested here.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::usage::UsageError;
use super::{Cli, CliCommand, RunArgs, CONFIG_FILE, DEFAULT_DATA_DIR};
use crate::engine::config::{ascii_domain, extract, parse_seed, CrawlConfig};
use crate::engine::RunOverrides;

const NO_SEEDS: &str = "no seeds: give a URL, --seeds FILE, or --data of an existing crawl";

/// What the binary is asked to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Mode {
    Tui,
    Headless,
    Demo {
        headless: bool,
        /// `--cluster N`: N worker processes through a local redis-server.
        cluster: Option<usize>,
    },
    Bench {
        pages: u64,
        hosts: u32,
        /// Between two requests to a host; zero: none.
        delay: Duration,
        /// WARC files written.
        archive: bool,
        /// Time compressing the WARC records alone afterwards.
        archive_floor: bool,
        tui: bool,
        previews: bool,
        /// The whole measure taken this many times.
        rounds: u32,
    },
    /// `bench-web`: the bench's generated web alone, served until stdin ends.
    BenchWeb {
        pages: u64,
        hosts: u32,
    },
    Keys {
        file: Option<PathBuf>,
    },
    /// The TUI on a running crawl; `None`: find the one running crawl.
    /// `--read-only` is `UiOptions::readonly`.
    Attach {
        dir: Option<PathBuf>,
        wait: bool,
    },
    Status {
        dir: PathBuf,
        json: bool,
    },
    /// `attach --redis URL --crawl NAME`: the TUI over a shared crawl's workers.
    ClusterAttach {
        target: crate::engine::ClusterTarget,
    },
    /// `status --redis URL --crawl NAME`: a shared crawl, read from Redis.
    ClusterStatus {
        target: crate::engine::ClusterTarget,
        json: bool,
    },
    Ctl {
        dir: PathBuf,
        words: Vec<String>,
    },
    /// `ctl --redis URL --crawl NAME`: a command for every worker of a shared crawl.
    ClusterCtl {
        target: crate::engine::ClusterTarget,
        words: Vec<String>,
        worker: Option<String>,
    },
    /// `pages` or `links`: a listing of what a crawl found.
    Results(crate::results::Query),
    /// `page`: one page read back from the archive.
    Page(crate::results::page::PageQuery),
    /// `diff`: two crawls compared.
    Diff(crate::results::diff::DiffQuery),
    /// `export`: a WACZ and/or a CDXJ index of a crawl's archive.
    Export(crate::export::ExportQuery),
}

/// Front-end options that are not crawl settings.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UiOptions {
    pub json: bool,
    pub color: bool,
    pub mouse: bool,
    pub readonly: bool,
    pub keys: Option<PathBuf>,
}

/// A fully resolved invocation.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedRun {
    pub mode: Mode,
    /// The effective configuration (already validated).
    pub config: CrawlConfig,
    /// `None`: a temporary directory (demo and bench without --data).
    pub data_dir: Option<PathBuf>,
    /// The data directory already holds a crawl.
    pub resuming: bool,
    /// Start a recrawl pass over that crawl.
    pub recrawl: bool,
    /// Flags that win over settings an operator changed in an earlier run.
    pub overrides: RunOverrides,
    pub ui: UiOptions,
    /// `--log-level`, checked to be a valid filter.
    pub log_filter: Option<String>,
    /// `--redis` and `--crawl`: the frontier is shared with other workers.
    pub cluster: Option<crate::engine::ClusterTarget>,
    /// `--accept` and `--dismiss`: alert decisions applied before the crawl goes on.
    pub decisions: Vec<crate::engine::control::Command>,
    /// A worker of a shared crawl stays to serve its records once the
    /// crawl is over (`cluster::serving`), unless `--exit-when-done`.
    pub serve_when_done: bool,
}

/// Resolves parsed arguments into what to run, reading `--config`, `--seeds`
/// and `<data>/crawl.toml` as needed.
pub fn resolve(cli: Cli) -> Result<ResolvedRun, UsageError> {
    match cli.command {
        None => resolve_run(cli.run, Mode::Tui, false),
        Some(CliCommand::Crawl(c)) => resolve_crawl(c),
        Some(CliCommand::Demo(d)) => resolve_demo(d),
        Some(CliCommand::Bench(b)) => resolve_bench(b),
        Some(CliCommand::BenchWeb(w)) => Ok(front_end(Mode::BenchWeb {
            pages: w.pages,
            hosts: w.hosts,
        })),
        Some(CliCommand::Pages(p)) => Ok(front_end(Mode::Results(super::results::pages_query(p)?))),
        Some(CliCommand::Links(l)) => Ok(front_end(Mode::Results(super::results::links_query(l)?))),
        Some(CliCommand::Audit(a)) => Ok(front_end(Mode::Results(super::results::audit_query(a)?))),
        Some(CliCommand::Page(p)) => Ok(front_end(Mode::Page(super::results::page_query(p)?))),
        Some(CliCommand::Diff(d)) => Ok(front_end(Mode::Diff(super::results::diff_query(d)?))),
        Some(CliCommand::Export(e)) => Ok(front_end(Mode::Export(super::export::export_query(e)?))),
        Some(CliCommand::Keys(k)) => Ok(front_end(Mode::Keys { file: k.keys })),
        Some(CliCommand::Attach(a)) => resolve_attach(a),
        Some(CliCommand::Status(s)) => match s.crawl.dir {
            Some(dir) => Ok(front_end(Mode::Status { dir, json: s.json })),
            None => {
                let target =
                    super::cluster::shared_crawl(s.crawl.redis, s.crawl.crawl_name, s.crawl.trust)?
                        .expect("clap requires --redis and --crawl without DIR");
                Ok(front_end(Mode::ClusterStatus {
                    target,
                    json: s.json,
                }))
            }
        },
        Some(CliCommand::Ctl(c)) => resolve_ctl(c),
    }
}

/// `crawl`: a crawl of the given seeds, alone or as a worker of a shared crawl.
fn resolve_crawl(c: super::CrawlArgs) -> Result<ResolvedRun, UsageError> {
    let mode = if c.headless {
        Mode::Headless
    } else {
        Mode::Tui
    };
    let cluster = super::cluster::resolve_cluster(&c.cluster, c.headless)?;
    let decisions = decisions(&c.accept, &c.dismiss);
    let mut resolved = resolve_run(c.run, mode, cluster.is_some())?;
    if !decisions.is_empty() && (!resolved.resuming || cluster.is_some()) {
        return Err(UsageError(
            "--accept and --dismiss decide trap alerts of a crawl this machine holds: give its --data DIR (not --redis; over a shared crawl use `crawldeck ctl --redis … --worker W accept N`)".into(),
        ));
    }
    resolved.serve_when_done = cluster.is_some() && !c.cluster.exit_when_done;
    resolved.cluster = cluster;
    resolved.decisions = decisions;
    Ok(resolved)
}

/// The commands `--accept` and `--dismiss` stand for, accepts first.
fn decisions(accept: &[u64], dismiss: &[u64]) -> Vec<crate::engine::control::Command> {
    use crate::engine::control::Command;
    let accepts = accept.iter().map(|&alert_id| Command::AcceptAlert {
        alert_id,
        rule: None,
    });
    let dismissals = dismiss
        .iter()
        .map(|&alert_id| Command::DismissAlert { alert_id });
    accepts.chain(dismissals).collect()
}

/// `demo`: a crawl of the built-in local web, which brings its own seeds.
fn resolve_demo(d: super::DemoArgs) -> Result<ResolvedRun, UsageError> {
    if !d.run.urls.is_empty() || d.run.seeds.is_some() {
        return Err(UsageError(
            "demo crawls its own local web and takes no seeds; use `crawldeck crawl URL` for other sites".into(),
        ));
    }
    if let Some(n) = d.cluster {
        crate::cluster::local::check_size(n).map_err(UsageError)?;
    }
    if let Some(dir) = d.run.data.as_deref().filter(|dir| holds_crawl(dir)) {
        return Err(UsageError(format!(
            "{} already holds a crawl; the demo web gets new ports each run, so `demo` always starts fresh — give an empty --data DIR (or none for a temporary one)",
            dir.display()
        )));
    }
    resolve_run(
        d.run,
        Mode::Demo {
            headless: d.headless,
            cluster: d.cluster,
        },
        false,
    )
}

/// `bench`: a crawl of a generated web; only its size and `--data` come from the flags.
fn resolve_bench(b: super::BenchArgs) -> Result<ResolvedRun, UsageError> {
    if b.pages == 0 || b.hosts == 0 {
        return Err(UsageError(
            "bench needs --pages and --hosts of at least 1".into(),
        ));
    }
    let max_hosts = crate::demo::MAX_BENCH_HOSTS;
    if b.hosts as usize > max_hosts {
        return Err(UsageError(format!(
            "bench --hosts {} is more than the generated web can serve: give at most {max_hosts}",
            b.hosts
        )));
    }
    Ok(ResolvedRun {
        data_dir: b.data,
        // The bench's own settings, with the extractions to measure.
        config: CrawlConfig {
            extract: b.extract,
            ..CrawlConfig::default()
        },
        ..front_end(Mode::Bench {
            pages: b.pages,
            hosts: b.hosts,
            delay: b.delay.unwrap_or(Duration::ZERO),
            archive: !b.no_archive,
            archive_floor: b.archive_floor,
            tui: b.tui,
            previews: b.previews,
            rounds: b.rounds,
        })
    })
}

/// `attach`: the TUI on a running crawl, in a directory or shared through Redis.
fn resolve_attach(a: super::AttachArgs) -> Result<ResolvedRun, UsageError> {
    Ok(ResolvedRun {
        ui: UiOptions {
            json: false,
            color: wants_color(a.no_color),
            mouse: !a.no_mouse,
            readonly: a.read_only,
            keys: a.keys,
        },
        ..front_end(
            match super::cluster::shared_crawl(a.redis, a.crawl_name, a.trust)? {
                Some(target) => Mode::ClusterAttach { target },
                None => Mode::Attach {
                    dir: a.dir,
                    wait: a.wait,
                },
            },
        )
    })
}

/// Colour unless `--no-color` or a non-empty `NO_COLOR` (no-color.org) turns it off.
fn wants_color(no_color: bool) -> bool {
    !no_color && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// `ctl DIR WORDS…` or `ctl --redis URL --crawl NAME WORDS…`.
fn resolve_ctl(c: super::CtlArgs) -> Result<ResolvedRun, UsageError> {
    if c.redis.is_none() {
        let dir = c.dir.ok_or_else(|| {
            UsageError(
                "ctl needs the crawl's data directory: `crawldeck ctl DIR COMMAND`, or `--redis URL --crawl NAME` for a shared crawl".into(),
            )
        })?;
        return Ok(front_end(Mode::Ctl {
            dir,
            words: c.words,
        }));
    }
    let target = super::cluster::shared_crawl(c.redis, c.crawl_name, c.trust)?
        .expect("clap requires --crawl with --redis");
    // Without DIR the first word of the command lands in `dir`.
    let words = c
        .dir
        .map(|first| first.display().to_string())
        .into_iter()
        .chain(c.words)
        .collect();
    Ok(front_end(Mode::ClusterCtl {
        target,
        words,
        worker: c.worker,
    }))
}

/// A run that starts no engine: settings are defaults and unused.
fn front_end(mode: Mode) -> ResolvedRun {
    ResolvedRun {
        mode,
        config: CrawlConfig::default(),
        data_dir: None,
        resuming: false,
        recrawl: false,
        overrides: RunOverrides::default(),
        ui: UiOptions::default(),
        log_filter: None,
        cluster: None,
        decisions: Vec::new(),
        serve_when_done: false,
    }
}

/// A crawl's run: the stored or given config, then the seeds, then the flags over it.
fn resolve_run(run: RunArgs, mode: Mode, joins_cluster: bool) -> Result<ResolvedRun, UsageError> {
    let is_demo = matches!(mode, Mode::Demo { .. });
    let data_dir = match (&run.data, is_demo) {
        (Some(dir), _) => Some(dir.clone()),
        (None, true) => None,
        (None, false) => Some(PathBuf::from(DEFAULT_DATA_DIR)),
    };
    let resuming = data_dir.as_deref().is_some_and(holds_crawl);
    if run.recrawl && !resuming {
        return Err(recrawl_without_crawl(data_dir.as_deref()));
    }

    let stored = data_dir.as_ref().map(|d| d.join(CONFIG_FILE));
    let mut config = match (&run.config, &stored) {
        (Some(file), _) => CrawlConfig::load(file)?,
        (None, Some(stored)) if resuming && stored.is_file() => CrawlConfig::load(stored)?,
        _ => CrawlConfig::default(),
    };

    let seeds = seeds_from_flags(&run)?;
    add_seeds(&mut config, seeds);
    apply_flags(&mut config, &run);
    if is_demo && !resuming && run.config.is_none() && run.check_external.is_none() {
        // The demo shows every check: its one external host is its own, on loopback.
        config.checks.external = true;
    }

    // A worker joining a shared crawl gets its seeds from the others.
    if config.seeds.is_empty() && !resuming && !is_demo && !joins_cluster {
        let detail = match &run.data {
            Some(dir) => format!(" ({} holds no crawl)", dir.display()),
            None => String::new(),
        };
        return Err(UsageError(format!("{NO_SEEDS}{detail}")));
    }
    config.validate()?;

    let log_filter = checked_log_filter(run.log_level)?;
    let color = wants_color(run.no_color);
    Ok(ResolvedRun {
        mode,
        config,
        data_dir,
        resuming,
        recrawl: run.recrawl,
        overrides: RunOverrides {
            delay: run.delay,
            concurrency: run.concurrency,
            max_rate: run.max_rate,
            paused: run.paused.then_some(true),
        },
        ui: UiOptions {
            json: run.json,
            color,
            mouse: !run.no_mouse,
            readonly: run.readonly,
            keys: run.keys,
        },
        log_filter,
        cluster: None,
        decisions: Vec::new(),
        serve_when_done: false,
    })
}

/// `--recrawl` on a directory that holds no crawl to fetch again.
fn recrawl_without_crawl(data_dir: Option<&Path>) -> UsageError {
    UsageError(match data_dir {
        Some(dir) => format!(
            "--recrawl fetches an existing crawl again, and {} holds none; give --data DIR of a finished crawl",
            dir.display()
        ),
        None => "--recrawl needs --data DIR of a finished crawl".into(),
    })
}

/// The seeds given on the command line: URL arguments first, then `--seeds FILE`.
fn seeds_from_flags(run: &RunArgs) -> Result<Vec<String>, UsageError> {
    let mut seeds: Vec<String> = Vec::new();
    for url in &run.urls {
        let parsed = parse_seed(url).map_err(|e| UsageError(format!("URL argument: {e}")))?;
        seeds.push(parsed.to_string());
    }
    if let Some(file) = &run.seeds {
        let bytes = std::fs::read(file).map_err(|e| {
            UsageError(format!(
                "cannot read seeds file {}: {e}; give an existing file with one URL per line",
                file.display()
            ))
        })?;
        seeds.extend(parse_seeds_file(&bytes, file)?);
    }
    Ok(seeds)
}

/// `--log-level`, checked here so a bad filter is a usage error before anything starts.
fn checked_log_filter(log_level: Option<String>) -> Result<Option<String>, UsageError> {
    match log_level {
        Some(filter) => {
            tracing_subscriber::EnvFilter::try_new(&filter).map_err(|e| {
                UsageError(format!(
                    "--log-level {filter:?} is not a log filter ({e}); write e.g. info, debug or crawldeck=debug,warn"
                ))
            })?;
            Ok(Some(filter))
        }
        None => Ok(None),
    }
}

/// A data directory holds a crawl once it has a stored config or a database.
pub fn holds_crawl(dir: &Path) -> bool {
    dir.join(CONFIG_FILE).is_file() || crate::engine::store::Store::exists_in(dir)
}

/// Seeds file: one URL per line; blank lines and `#` comment lines are skipped.
/// A bad line is reported as `FILE:LINE: problem`.
pub fn parse_seeds_file(bytes: &[u8], file: &Path) -> Result<Vec<String>, UsageError> {
    // Some editors (Windows Notepad) start a UTF-8 file with a byte order mark.
    let bytes = bytes.strip_prefix("\u{feff}".as_bytes()).unwrap_or(bytes);
    let mut seeds = Vec::new();
    // Line by line, so a line that is not UTF-8 is named like any bad line.
    for (index, line) in bytes.split(|&b| b == b'\n').enumerate() {
        let at = |e: String| UsageError(format!("{}:{}: {e}", file.display(), index + 1));
        // A comment may be in any encoding: it is skipped unread.
        if line.trim_ascii_start().starts_with(b"#") {
            continue;
        }
        let line = std::str::from_utf8(line).map_err(|e| {
            at(format!(
                "not valid UTF-8 (byte {} of the line); save the file as UTF-8",
                e.valid_up_to() + 1
            ))
        })?;
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        seeds.push(parse_seed(line).map_err(at)?.to_string());
    }
    Ok(seeds)
}

/// Appends seeds not already present, keeping order.
fn add_seeds(config: &mut CrawlConfig, seeds: Vec<String>) {
    for seed in seeds {
        if !config.seeds.contains(&seed) {
            config.seeds.push(seed);
        }
    }
}

/// Flags win over whatever the config file said.
fn apply_flags(config: &mut CrawlConfig, run: &RunArgs) {
    fn set<T: Clone>(slot: &mut T, value: &Option<T>) {
        if let Some(v) = value {
            *slot = v.clone();
        }
    }
    set(&mut config.max_pages, &run.max_pages);
    set(&mut config.max_depth, &run.max_depth);
    set(&mut config.scope.mode, &run.scope.map(Into::into));
    for domain in &run.allow_domains {
        // A bad name is kept as given, for `validate` to report.
        let domain = ascii_domain(domain).unwrap_or_else(|_| domain.clone());
        if !config.scope.allow_domains.contains(&domain) {
            config.scope.allow_domains.push(domain);
        }
    }
    set(&mut config.identity.user_agent, &run.user_agent);
    if run.product_token.is_some() {
        config.identity.product_token = run.product_token.clone();
    } else if run.user_agent.is_some() {
        // A new User-Agent names a new bot: a token from the file (or one stored by
        // an older version, always `crawldeck`) must not keep answering for it.
        config.identity.product_token = None;
    }
    if run.from.is_some() {
        config.identity.from = run.from.clone();
    }
    set(&mut config.concurrency, &run.concurrency);
    set(&mut config.politeness.per_host, &run.per_host);
    if let Some(delay) = run.delay {
        config.politeness.min_delay = delay;
        // An explicit delay longer than the cap raises the cap instead of failing.
        config.politeness.max_delay = config.politeness.max_delay.max(delay);
    }
    set(&mut config.politeness.delay_factor, &run.delay_factor);
    if run.allow_private {
        config.fetch.allow_private = true;
    }
    if run.no_sitemaps {
        config.sitemaps.enabled = false;
    }
    set(&mut config.fetch.total_timeout, &run.timeout);
    set(&mut config.fetch.max_body, &run.max_body);
    set(&mut config.storage.warc_max_bytes, &run.warc_max_size);
    set(&mut config.robots.mode, &run.robots.map(Into::into));
    set(&mut config.traps.policy, &run.traps.map(Into::into));
    set(&mut config.max_rate, &run.max_rate);
    set(&mut config.checks.resources, &run.resources.map(Into::into));
    set(&mut config.checks.external, &run.check_external);
    for spec in &run.extract {
        extract::add_or_replace(&mut config.extract, spec.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_file_skips_comments_and_names_the_bad_line() {
        let text = "# seeds\n\nhttps://a.example/\n  https://B.example/x  \nhttps://a.example/\n";
        let seeds = parse_seeds_file(text.as_bytes(), Path::new("seeds.txt")).unwrap();
        assert_eq!(
            seeds,
            [
                "https://a.example/",
                "https://b.example/x",
                "https://a.example/"
            ]
        );
        let err = parse_seeds_file(
            b"https://a.example/\n\nexample.org\n",
            Path::new("seeds.txt"),
        )
        .unwrap_err()
        .to_string();
        assert!(err.starts_with("seeds.txt:3: "), "{err}");
        assert!(err.contains("https://example.org/"), "{err}");
    }

    #[test]
    fn seeds_file_may_start_with_a_byte_order_mark() {
        let text = "\u{feff}http://127.0.0.1:18082/\nhttps://a.example/\n";
        let seeds = parse_seeds_file(text.as_bytes(), Path::new("seeds.txt")).unwrap();
        assert_eq!(seeds, ["http://127.0.0.1:18082/", "https://a.example/"]);
        let seeds = parse_seeds_file(
            "\u{feff}# list\nhttps://a.example/\n".as_bytes(),
            Path::new("s"),
        );
        assert_eq!(seeds.unwrap(), ["https://a.example/"]);
    }

    #[test]
    fn a_line_that_is_not_utf8_is_named_by_line() {
        let bytes = b"https://a.example/\r\n# caf\xe9\nhttps://b.example/\xff\n";
        let err = parse_seeds_file(bytes, Path::new("seeds.txt"))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("seeds.txt:3: not valid UTF-8"), "{err}");
    }
}
