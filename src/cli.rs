//! Command line: clap definitions and the layering
//! built-in defaults < `--config FILE` (or `<data>/crawl.toml` on resume) < flags.
//!
//! [`resolve`] only reads files; it never writes, so `main` stays thin and the
//! precedence rules are unit-tested here.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::config::{parse_seed, ConfigError, CrawlConfig, RobotsMode, Scope, TrapPolicy};

/// Data directory used when `--data` is not given (crawl and TUI modes).
pub const DEFAULT_DATA_DIR: &str = "crawldeck-data";
/// The effective configuration inside a data directory.
pub const CONFIG_FILE: &str = "crawl.toml";
/// The tracing log inside a data directory.
pub const LOG_FILE: &str = "crawldeck.log";
/// The sled database inside a data directory.
pub const DB_DIR: &str = "db";

const NO_SEEDS: &str = "no seeds: give a URL, --seeds FILE, or --data of an existing crawl";

#[derive(Debug, Parser)]
#[command(
    name = "crawldeck",
    version,
    about = "A crawler workstation: a polite, persistent crawl engine with a live terminal UI",
    args_conflicts_with_subcommands = true,
    after_help = "Examples:\n  crawldeck https://example.org/ --data ./crawl1\n  \
crawldeck crawl --headless --seeds seeds.txt --data ./crawl1 --max-pages 500\n  \
crawldeck crawl --headless --data ./crawl1      (resumes the crawl in ./crawl1)\n  \
crawldeck demo"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<CliCommand>,
    /// Without a subcommand: crawl in the terminal UI.
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Debug, Subcommand)]
pub enum CliCommand {
    /// Crawl seeds (or resume the crawl in --data), in the terminal UI or headless.
    Crawl(CrawlArgs),
    /// Serve the built-in demo web on 127.0.0.1 and crawl it (a temporary directory unless --data).
    Demo(DemoArgs),
    /// Crawl a generated local web and report speed and memory.
    Bench(BenchArgs),
    /// Print the effective key map of the terminal UI.
    Keys(KeysArgs),
}

#[derive(Debug, Args)]
pub struct CrawlArgs {
    /// No terminal UI: progress on stderr, a summary at the end.
    #[arg(long)]
    pub headless: bool,
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// No terminal UI: progress on stderr, a summary at the end.
    #[arg(long)]
    pub headless: bool,
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Pages of the generated web.
    #[arg(long, value_name = "N", default_value_t = 20_000)]
    pub pages: u64,
    /// Hosts the pages are spread over.
    #[arg(long, value_name = "H", default_value_t = 50)]
    pub hosts: u32,
    /// Where the bench crawl is stored (a temporary directory unless given).
    #[arg(long, value_name = "DIR")]
    pub data: Option<PathBuf>,
    /// Run the terminal UI during the crawl, drawing into an 80x24 screen in
    /// memory, to measure what the UI costs.
    #[arg(long)]
    pub tui: bool,
}

#[derive(Debug, Args)]
pub struct KeysArgs {
    /// A keybindings.toml whose entries override the defaults.
    #[arg(long, value_name = "FILE")]
    pub keys: Option<PathBuf>,
}

/// Crawl settings and front-end options shared by the TUI, `crawl` and `demo`.
/// Every crawl setting is optional so that only given flags override crawl.toml.
#[derive(Debug, Args, Default, Clone)]
pub struct RunArgs {
    /// Seed URLs (absolute http/https).
    #[arg(value_name = "URL")]
    pub urls: Vec<String>,
    /// A file of seed URLs: one per line, `#` comments and blank lines ignored.
    #[arg(long, value_name = "FILE")]
    pub seeds: Option<PathBuf>,
    /// The crawl's data directory; an existing crawl there is resumed.
    #[arg(long, value_name = "DIR")]
    pub data: Option<PathBuf>,
    /// A crawl.toml to start from (default: <DIR>/crawl.toml when resuming).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Stop after this many pages (0 = no limit).
    #[arg(long, value_name = "N")]
    pub max_pages: Option<u64>,
    /// Follow links at most this many hops from a seed.
    #[arg(long, value_name = "N")]
    pub max_depth: Option<u32>,
    /// Which links are followed.
    #[arg(long, value_enum)]
    pub scope: Option<Scope>,
    /// A further domain (with subdomains) in scope; repeatable.
    #[arg(long = "allow-domain", value_name = "DOMAIN")]
    pub allow_domains: Vec<String>,
    /// User-Agent header (keep the product token and a contact URL in it).
    #[arg(long, value_name = "STRING")]
    pub user_agent: Option<String>,
    /// From header: an email address where site owners can reach you.
    #[arg(long, value_name = "EMAIL")]
    pub from: Option<String>,
    /// Requests in flight across all hosts.
    #[arg(long, value_name = "N")]
    pub concurrency: Option<usize>,
    /// Requests in flight per host.
    #[arg(long, value_name = "N")]
    pub per_host: Option<usize>,
    /// Minimum wait between two requests to one host (e.g. 500ms, 2s).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_arg)]
    pub delay: Option<Duration>,
    /// Adaptive wait: this multiple of the host's last response time.
    #[arg(long, value_name = "FACTOR")]
    pub delay_factor: Option<f64>,
    /// Whole-request timeout (e.g. 30s).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_arg)]
    pub timeout: Option<Duration>,
    /// Body cap: bytes, or with a unit (512KiB, 5MB, 5MiB).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub max_body: Option<u64>,
    /// How 401/403 on robots.txt is read.
    #[arg(long, value_enum)]
    pub robots: Option<RobotsMode>,
    /// What a spider-trap alert does.
    #[arg(long, value_enum)]
    pub traps: Option<TrapPolicy>,
    /// Global cap on pages per second (0 = no cap).
    #[arg(long, value_name = "PAGES_PER_SEC")]
    pub max_rate: Option<f64>,
    /// Fetch every page of the crawl in --data again, each with the ETag and
    /// Last-Modified of its last fetch (unchanged pages answer 304).
    #[arg(long)]
    pub recrawl: bool,
    /// Headless: JSON lines on stdout instead of progress on stderr.
    #[arg(long)]
    pub json: bool,
    /// No colours (also when NO_COLOR is set).
    #[arg(long)]
    pub no_color: bool,
    /// TUI: do not capture the mouse.
    #[arg(long)]
    pub no_mouse: bool,
    /// TUI: watch only; operator actions are disabled.
    #[arg(long)]
    pub readonly: bool,
    /// TUI: a keybindings.toml whose entries override the defaults.
    #[arg(long, value_name = "FILE")]
    pub keys: Option<PathBuf>,
    /// Log filter in RUST_LOG syntax (default: RUST_LOG, else "info"); the log goes to <DIR>/crawldeck.log.
    #[arg(long, value_name = "FILTER")]
    pub log_level: Option<String>,
}

/// What the binary is asked to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Mode {
    Tui,
    Headless,
    Demo { headless: bool },
    Bench { pages: u64, hosts: u32, tui: bool },
    Keys { file: Option<PathBuf> },
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
    pub ui: UiOptions,
    /// `--log-level`, checked to be a valid filter.
    pub log_filter: Option<String>,
}

/// A usage or configuration error: exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

impl From<ConfigError> for UsageError {
    fn from(e: ConfigError) -> Self {
        let hint = match &e {
            ConfigError::Invalid { key, .. } => flag_for_key(key)
                .map(|flag| format!(" (set by {flag} or `{key}` in crawl.toml)"))
                .unwrap_or_default(),
            _ => String::new(),
        };
        UsageError(format!("{e}{hint}"))
    }
}

/// The command-line flag that sets a config key, for error messages.
fn flag_for_key(key: &str) -> Option<&'static str> {
    Some(match key {
        "seeds" => "a URL argument or --seeds",
        "max_pages" => "--max-pages",
        "max_depth" => "--max-depth",
        "concurrency" => "--concurrency",
        "max_rate" => "--max-rate",
        "politeness.per_host" => "--per-host",
        "politeness.min_delay" | "politeness.max_delay" => "--delay",
        "politeness.delay_factor" => "--delay-factor",
        "fetch.max_body" => "--max-body",
        "identity.from" => "--from",
        _ => return None,
    })
}

/// Resolves parsed arguments into what to run, reading `--config`, `--seeds`
/// and `<data>/crawl.toml` as needed.
pub fn resolve(cli: Cli) -> Result<ResolvedRun, UsageError> {
    match cli.command {
        None => resolve_run(cli.run, Mode::Tui),
        Some(CliCommand::Crawl(c)) => {
            let mode = if c.headless {
                Mode::Headless
            } else {
                Mode::Tui
            };
            resolve_run(c.run, mode)
        }
        Some(CliCommand::Demo(d)) => {
            if !d.run.urls.is_empty() || d.run.seeds.is_some() {
                return Err(UsageError(
                    "demo crawls its own local web and takes no seeds; use `crawldeck crawl URL` for other sites".into(),
                ));
            }
            resolve_run(
                d.run,
                Mode::Demo {
                    headless: d.headless,
                },
            )
        }
        Some(CliCommand::Bench(b)) => {
            if b.pages == 0 || b.hosts == 0 {
                return Err(UsageError(
                    "bench needs --pages and --hosts of at least 1".into(),
                ));
            }
            Ok(ResolvedRun {
                mode: Mode::Bench {
                    pages: b.pages,
                    hosts: b.hosts,
                    tui: b.tui,
                },
                config: CrawlConfig::default(),
                data_dir: b.data,
                resuming: false,
                recrawl: false,
                ui: UiOptions::default(),
                log_filter: None,
            })
        }
        Some(CliCommand::Keys(k)) => Ok(ResolvedRun {
            mode: Mode::Keys { file: k.keys },
            config: CrawlConfig::default(),
            data_dir: None,
            resuming: false,
            recrawl: false,
            ui: UiOptions::default(),
            log_filter: None,
        }),
    }
}

fn resolve_run(run: RunArgs, mode: Mode) -> Result<ResolvedRun, UsageError> {
    let is_demo = matches!(mode, Mode::Demo { .. });
    let data_dir = match (&run.data, is_demo) {
        (Some(dir), _) => Some(dir.clone()),
        (None, true) => None,
        (None, false) => Some(PathBuf::from(DEFAULT_DATA_DIR)),
    };
    let resuming = data_dir.as_deref().is_some_and(holds_crawl);
    if run.recrawl && !resuming {
        return Err(UsageError(match &data_dir {
            Some(dir) => format!(
                "--recrawl fetches an existing crawl again, and {} holds none; give --data DIR of a finished crawl",
                dir.display()
            ),
            None => "--recrawl needs --data DIR of a finished crawl".into(),
        }));
    }

    let stored = data_dir.as_ref().map(|d| d.join(CONFIG_FILE));
    let mut config = match (&run.config, &stored) {
        (Some(file), _) => CrawlConfig::load(file)?,
        (None, Some(stored)) if resuming && stored.is_file() => CrawlConfig::load(stored)?,
        _ => CrawlConfig::default(),
    };

    let mut seeds: Vec<String> = Vec::new();
    for url in &run.urls {
        let parsed = parse_seed(url).map_err(|e| UsageError(format!("URL argument: {e}")))?;
        seeds.push(parsed.to_string());
    }
    if let Some(file) = &run.seeds {
        let text = std::fs::read_to_string(file).map_err(|e| {
            UsageError(format!(
                "cannot read seeds file {}: {e}; give an existing file with one URL per line",
                file.display()
            ))
        })?;
        seeds.extend(parse_seeds_file(&text, file)?);
    }
    add_seeds(&mut config, seeds);
    apply_flags(&mut config, &run);

    if config.seeds.is_empty() && !resuming && !is_demo {
        let detail = match &run.data {
            Some(dir) => format!(" ({} holds no crawl)", dir.display()),
            None => String::new(),
        };
        return Err(UsageError(format!("{NO_SEEDS}{detail}")));
    }
    config.validate()?;

    let log_filter = match run.log_level {
        Some(filter) => {
            tracing_subscriber::EnvFilter::try_new(&filter).map_err(|e| {
                UsageError(format!(
                    "--log-level {filter:?} is not a log filter ({e}); write e.g. info, debug or crawldeck=debug,warn"
                ))
            })?;
            Some(filter)
        }
        None => None,
    };
    let color = !run.no_color && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    Ok(ResolvedRun {
        mode,
        config,
        data_dir,
        resuming,
        recrawl: run.recrawl,
        ui: UiOptions {
            json: run.json,
            color,
            mouse: !run.no_mouse,
            readonly: run.readonly,
            keys: run.keys,
        },
        log_filter,
    })
}

/// A data directory holds a crawl once it has a stored config or a database.
pub fn holds_crawl(dir: &Path) -> bool {
    dir.join(CONFIG_FILE).is_file() || dir.join(DB_DIR).is_dir()
}

/// Seeds file: one URL per line; blank lines and `#` comment lines are skipped.
/// A bad line is reported as `FILE:LINE: problem`.
pub fn parse_seeds_file(text: &str, file: &Path) -> Result<Vec<String>, UsageError> {
    let mut seeds = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let url = parse_seed(line)
            .map_err(|e| UsageError(format!("{}:{}: {e}", file.display(), index + 1)))?;
        seeds.push(url.to_string());
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
    set(&mut config.scope.mode, &run.scope);
    for domain in &run.allow_domains {
        let domain = domain.trim().trim_start_matches('.').to_ascii_lowercase();
        if !config.scope.allow_domains.contains(&domain) {
            config.scope.allow_domains.push(domain);
        }
    }
    set(&mut config.identity.user_agent, &run.user_agent);
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
    set(&mut config.fetch.total_timeout, &run.timeout);
    set(&mut config.fetch.max_body, &run.max_body);
    set(&mut config.robots.mode, &run.robots);
    set(&mut config.traps.policy, &run.traps);
    set(&mut config.max_rate, &run.max_rate);
}

/// `--delay`/`--timeout` values: humantime ("500ms", "2s", "1m 30s").
pub fn parse_duration_arg(text: &str) -> Result<Duration, String> {
    humantime::parse_duration(text.trim())
        .map_err(|e| format!("{text:?} is not a duration ({e}); write e.g. 500ms, 2s or 1m"))
}

/// Sizes: plain bytes or a number with a unit: B, KB/MB/GB (1000s), KiB/MiB/GiB (1024s).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let fail =
        || format!("{text:?} is not a size; write bytes (5242880) or e.g. 512KiB, 5MB, 5MiB");
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let number: f64 = number.parse().map_err(|_| fail())?;
    let factor: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" => 1_000,
        "kib" => 1 << 10,
        "m" | "mb" => 1_000_000,
        "mib" => 1 << 20,
        "g" | "gb" => 1_000_000_000,
        "gib" => 1 << 30,
        _ => return Err(fail()),
    };
    let bytes = number * factor as f64;
    if !bytes.is_finite() || bytes < 0.0 || bytes > u64::MAX as f64 || bytes.fract() != 0.0 {
        return Err(fail());
    }
    Ok(bytes as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_accept_units() {
        assert_eq!(parse_size("5242880"), Ok(5_242_880));
        assert_eq!(parse_size("512KiB"), Ok(512 * 1024));
        assert_eq!(parse_size("5MB"), Ok(5_000_000));
        assert_eq!(parse_size("5 MiB"), Ok(5 << 20));
        assert_eq!(parse_size("1.5kb"), Ok(1500));
        for bad in ["", "MB", "5XB", "-1", "0.5"] {
            assert!(parse_size(bad).unwrap_err().contains("512KiB"), "{bad}");
        }
    }

    #[test]
    fn durations_explain_the_format() {
        assert_eq!(parse_duration_arg("1m 30s"), Ok(Duration::from_secs(90)));
        assert!(parse_duration_arg("soon").unwrap_err().contains("500ms"));
    }

    #[test]
    fn seeds_file_skips_comments_and_names_the_bad_line() {
        let text = "# seeds\n\nhttps://a.example/\n  https://B.example/x  \nhttps://a.example/\n";
        let seeds = parse_seeds_file(text, Path::new("seeds.txt")).unwrap();
        assert_eq!(
            seeds,
            [
                "https://a.example/",
                "https://b.example/x",
                "https://a.example/"
            ]
        );
        let err = parse_seeds_file(
            "https://a.example/\n\nexample.org\n",
            Path::new("seeds.txt"),
        )
        .unwrap_err()
        .to_string();
        assert!(err.starts_with("seeds.txt:3: "), "{err}");
        assert!(err.contains("https://example.org/"), "{err}");
    }

    #[test]
    fn flags_name_their_key_in_validation_errors() {
        let err = UsageError::from(ConfigError::Invalid {
            key: "politeness.per_host",
            message: "must be at least 1".into(),
        });
        assert!(err.0.contains("--per-host"), "{err}");
    }
}
