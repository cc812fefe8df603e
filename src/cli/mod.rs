//! Command line: the clap definitions and the value parsers they use. What
//! they resolve to, and how layers combine, is in `resolve.rs`.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::engine::config::{ExtractionSpec, ResourcesMode, RobotsMode, Scope, TrapPolicy};

mod cluster;
pub mod export;
mod resolve;
pub mod results;
mod usage;

pub use resolve::{holds_crawl, parse_seeds_file, resolve, Mode, ResolvedRun, UiOptions};
pub use usage::UsageError;

/// Data directory used when `--data` is not given (crawl and TUI modes).
pub const DEFAULT_DATA_DIR: &str = "crawldeck-data";
/// The effective configuration inside a data directory.
pub use crate::engine::config::CONFIG_FILE;
/// The tracing log inside a data directory.
pub const LOG_FILE: &str = "crawldeck.log";
/// The crawl's database inside a data directory.
pub use crate::engine::store::INDEX_DIR;

#[derive(Debug, Parser)]
#[command(
    name = "crawldeck",
    version,
    about = "A crawler workstation: a polite, persistent crawl engine with a live terminal UI",
    args_conflicts_with_subcommands = true,
    after_help = "Examples:\n  crawldeck https://example.org/ --data ./crawl1\n  \
crawldeck crawl --headless --seeds seeds.txt --data ./crawl1 --max-pages 500\n  \
crawldeck crawl --headless --data ./crawl1      (resumes the crawl in ./crawl1)\n  \
crawldeck demo\n  \
crawldeck attach ./crawl1      (the UI on a crawl running there; q detaches)\n  \
crawldeck attach --redis redis://127.0.0.1:6379/0 --crawl news      (the UI over a shared crawl)\n  \
crawldeck demo --cluster 3     (a local Redis, 3 workers and the UI over them)\n  \
crawldeck status ./crawl1 --json\n  \
crawldeck ctl ./crawl1 pause\n  \
crawldeck pages ./crawl1 --status 4xx,5xx\n  \
crawldeck links ./crawl1 --broken\n  \
crawldeck page ./crawl1 https://example.org/ --select h2\n  \
crawldeck diff ./crawl1 ./crawl2 --only broken,title\n  \
crawldeck export ./crawl1 --wacz crawl1.wacz"
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
    /// The generated web `bench` crawls, served until standard input ends
    /// (`bench` runs it as a process of its own).
    #[command(hide = true)]
    BenchWeb(BenchWebArgs),
    /// Print the effective key map of the terminal UI.
    Keys(KeysArgs),
    /// Open the terminal UI on a crawl running in DIR (detach with q).
    Attach(AttachArgs),
    /// Print the state of the crawl running in DIR.
    Status(StatusArgs),
    /// Send one command to the crawl running in DIR, in the grammar of the UI's `:` line
    /// (`crawldeck ctl DIR help` lists them).
    Ctl(CtlArgs),
    /// List a crawl's pages: status, type, size, depth, title, fate; filter and export them.
    Pages(results::PagesArgs),
    /// List a crawl's broken links (with the pages linking to them) or its redirect chains.
    Links(results::LinksArgs),
    /// What is wrong with the crawled site: broken links, redirect chains and loops,
    /// canonical, indexing, title, description and heading problems, slow, large and
    /// duplicate pages; each with how many URLs it touches (`--show CHECK` lists them).
    Audit(results::AuditArgs),
    /// Show one fetched page from the archive: status, headers, title, outline, its links and
    /// what became of each; `--select CSS` lists matching elements, `--diff URL` compares texts.
    Page(results::PageArgs),
    /// Compare two crawls of one site: URLs added and removed, new and fixed broken
    /// links, status, redirect, title, canonical, indexability, description and h1
    /// changes. Exits 0 without differences, 1 with, 2 on trouble.
    Diff(results::DiffArgs),
    /// Export the crawl's archive for replay: a WACZ package (--wacz) and/or a
    /// CDXJ index (--cdxj), as pywb, py-wacz and ReplayWeb.page read them.
    Export(export::ExportArgs),
}

#[derive(Debug, Args)]
pub struct AttachArgs {
    /// The crawl's data directory (default: the one crawl running under the
    /// current directory, else ./crawldeck-data).
    #[arg(value_name = "DIR", conflicts_with = "redis")]
    pub dir: Option<PathBuf>,
    /// A shared crawl instead: every worker of it, through its Redis server
    /// (redis://HOST:PORT/DB, rediss:// for TLS).
    #[arg(long, value_name = "URL", requires = "crawl_name")]
    pub redis: Option<String>,
    /// The shared crawl's name.
    #[arg(long = "crawl", value_name = "NAME", requires = "redis")]
    pub crawl_name: Option<String>,
    #[command(flatten)]
    pub trust: RedisTrustArgs,
    /// Watch only: keys that change the crawl are disabled.
    #[arg(long)]
    pub read_only: bool,
    /// If the engine is not running (or stops), wait for it to come back.
    #[arg(long, conflicts_with = "redis")]
    pub wait: bool,
    /// No colours (also when NO_COLOR is set).
    #[arg(long)]
    pub no_color: bool,
    /// Do not capture the mouse.
    #[arg(long)]
    pub no_mouse: bool,
    /// A keybindings.toml whose entries override the defaults.
    #[arg(long, value_name = "FILE")]
    pub keys: Option<PathBuf>,
}

/// The crawl a command reads: a data directory, or a shared crawl.
#[derive(Debug, Args, Default, Clone)]
pub struct CrawlSource {
    /// The crawl's data directory (a running crawl is read through its engine).
    #[arg(
        value_name = "DIR",
        required_unless_present = "redis",
        conflicts_with = "redis"
    )]
    pub dir: Option<PathBuf>,
    /// A shared crawl instead, all its workers: its Redis server
    /// (redis://HOST:PORT/DB, rediss:// for TLS).
    #[arg(long, value_name = "URL", requires = "crawl_name")]
    pub redis: Option<String>,
    /// The shared crawl's name.
    #[arg(long = "crawl", value_name = "NAME", requires = "redis")]
    pub crawl_name: Option<String>,
    #[command(flatten)]
    pub trust: RedisTrustArgs,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    pub crawl: CrawlSource,
    /// One JSON object on stdout.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
#[command(allow_missing_positional = true)]
pub struct CtlArgs {
    /// The crawl's data directory (not with --redis).
    #[arg(value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// The command and its arguments, e.g. `pause`, `blacklist 'cal/\d{4}'`,
    /// `throttle example.org 2s`, `accept 3`, `stop`.
    #[arg(value_name = "COMMAND", required = true, num_args = 1.., allow_hyphen_values = true)]
    pub words: Vec<String>,
    /// A shared crawl instead: its Redis server (redis://HOST:PORT/DB, rediss:// for TLS); every
    /// live worker applies the command and answers.
    #[arg(long, value_name = "URL", requires = "crawl_name")]
    pub redis: Option<String>,
    /// The shared crawl's name.
    #[arg(long = "crawl", value_name = "NAME", requires = "redis")]
    pub crawl_name: Option<String>,
    #[command(flatten)]
    pub trust: RedisTrustArgs,
    /// With --redis: send the command to this worker only (alerts are
    /// numbered per worker, so `accept` and `dismiss` need it).
    #[arg(long, value_name = "NAME", requires = "redis")]
    pub worker: Option<String>,
}

#[derive(Debug, Args)]
pub struct CrawlArgs {
    /// No terminal UI: progress on stderr, a summary at the end.
    #[arg(long)]
    pub headless: bool,
    /// Before crawling on, dismiss this trap alert of the crawl in --data: its
    /// parked URLs go back to the frontier and are fetched (repeatable).
    #[arg(long, value_name = "ALERT", requires = "headless")]
    pub dismiss: Vec<u64>,
    /// Before crawling on, accept this trap alert: its rule is added and its
    /// parked URLs are recorded as blocked (repeatable).
    #[arg(long, value_name = "ALERT", requires = "headless")]
    pub accept: Vec<u64>,
    #[command(flatten)]
    pub cluster: ClusterArgs,
    #[command(flatten)]
    pub run: RunArgs,
}

/// One crawl on several workers through a shared Redis frontier.
#[derive(Debug, Args, Default, Clone)]
pub struct ClusterArgs {
    /// Share the frontier through this Redis server (redis://HOST:PORT/DB, rediss:// for TLS);
    /// every worker of the crawl gives the same --redis and --crawl.
    #[arg(long, value_name = "URL")]
    pub redis: Option<String>,
    /// The shared crawl's name (letters, digits, '-', '_', '.'); a worker
    /// given no seeds joins it.
    #[arg(long = "crawl", value_name = "NAME")]
    pub crawl_name: Option<String>,
    /// How long a worker holds a host without renewing its lease: a dead
    /// worker's hosts go to the others after this.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_arg)]
    pub lease_ttl: Option<Duration>,
    /// How long a host that is due waits for the worker that fetched it
    /// last before another may take it (default 1s; 0s turns it off): what
    /// a worker learned of the host (trap evidence, breaker failures,
    /// response times) stays whole. A worker with more than an even share
    /// of the hosts gives them up at once.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_arg)]
    pub host_affinity: Option<Duration>,
    /// End this worker when the crawl is over. Without it a worker stays
    /// to serve its records to `pages|links|audit --redis` from any
    /// machine, until `crawldeck ctl --redis URL --crawl NAME stop`.
    #[arg(long = "exit-when-done", requires = "redis")]
    pub exit_when_done: bool,
    #[command(flatten)]
    pub trust: RedisTrustArgs,
}

/// How far to trust the Redis server of a shared crawl. Its password comes
/// from the URL or from CRAWLDECK_REDIS_PASSWORD (with CRAWLDECK_REDIS_USER).
#[derive(Debug, Args, Default, Clone)]
pub struct RedisTrustArgs {
    /// With a rediss:// URL: the PEM file of the CA that signed the Redis
    /// server's certificate (default: the system's CAs).
    #[arg(long = "redis-ca", value_name = "FILE", requires = "redis")]
    pub redis_ca: Option<PathBuf>,
    /// With a rediss:// URL: this client's certificate (PEM), for a server
    /// that checks clients' certificates (tls-auth-clients yes).
    #[arg(
        long = "redis-cert",
        value_name = "FILE",
        requires = "redis",
        requires = "redis_key"
    )]
    pub redis_cert: Option<PathBuf>,
    /// The private key (PEM) of --redis-cert's certificate.
    #[arg(long = "redis-key", value_name = "FILE", requires = "redis_cert")]
    pub redis_key: Option<PathBuf>,
    /// Accept a Redis server on another machine without a password or
    /// without TLS (only where every machine that can reach it is trusted).
    #[arg(long = "insecure-redis", requires = "redis")]
    pub insecure_redis: bool,
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// No terminal UI: progress on stderr, a summary at the end.
    #[arg(long)]
    pub headless: bool,
    /// Crawl with N worker processes (1 to 8) sharing a local redis-server,
    /// in the cluster UI (needs redis-server installed).
    #[arg(long, value_name = "N", conflicts_with = "headless")]
    pub cluster: Option<usize>,
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Debug, Args)]
pub struct BenchWebArgs {
    #[arg(long, value_name = "N")]
    pub pages: u64,
    #[arg(long, value_name = "H")]
    pub hosts: u32,
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Pages of the generated web.
    #[arg(long, value_name = "N", default_value_t = 20_000)]
    pub pages: u64,
    /// Hosts the pages are spread over.
    #[arg(long, value_name = "H", default_value_t = 50)]
    pub hosts: u32,
    /// A polite crawl: this delay between two requests to a host, one at a
    /// time (e.g. `--hosts 2000 --delay 1s`); the report compares the rate
    /// with what politeness allows, hosts ÷ delay. Default: no delay.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration_arg)]
    pub delay: Option<Duration>,
    /// Crawl without writing WARC files, to measure what the archive costs
    /// (run once with and once without, in one sitting).
    #[arg(long)]
    pub no_archive: bool,
    /// After the crawl, time compressing its WARC records again alone, at the
    /// archive's level: the floor of what the archive can cost.
    #[arg(long, conflicts_with = "no_archive")]
    pub archive_floor: bool,
    /// Take the whole measure N times in one sitting (with `--archive-floor`,
    /// N pairs of crawls without and with the archive), each round's figures
    /// on a line, then their medians: one disturbed run decides nothing.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub rounds: u32,
    /// Where the bench crawl is stored (a temporary directory unless given;
    /// with `--rounds`, round K's crawl in DIR/round-K).
    #[arg(long, value_name = "DIR")]
    pub data: Option<PathBuf>,
    /// Run the terminal UI during the crawl, to measure what the UI costs: in
    /// the terminal when stdout is one, else into an 80x24 screen in memory.
    #[arg(long)]
    pub tui: bool,
    /// Ask the engine for a rule preview every 300 ms during the crawl (an
    /// operator typing a rule without pause), to measure what previews cost.
    #[arg(long, conflicts_with = "tui")]
    pub previews: bool,
    /// Run this custom extraction on every page (as `crawl --extract`), to
    /// measure what extractions cost; repeatable.
    #[arg(long = "extract", value_name = "NAME=CSS", value_parser = parse_extraction)]
    pub extract: Vec<ExtractionSpec>,
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
    pub scope: Option<ScopeArg>,
    /// A further domain (with subdomains) in scope; repeatable.
    #[arg(long = "allow-domain", value_name = "DOMAIN")]
    pub allow_domains: Vec<String>,
    /// User-Agent header (keep the product token and a contact URL in it); the
    /// product token is its name before the first `/`, unless --product-token is given.
    #[arg(long, value_name = "STRING")]
    pub user_agent: Option<String>,
    /// Name matched against robots.txt groups, meta robots and X-Robots-Tag
    /// (letters, '-' and '_'; default: derived from the User-Agent).
    #[arg(long, value_name = "TOKEN")]
    pub product_token: Option<String>,
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
    /// Body cap: bytes, or with a unit (512KiB, 5MB, 5MiB); a page past it is
    /// kept up to it and listed as cut.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub max_body: Option<u64>,
    /// Start a new WARC file past this size (100MB, 1GiB; default 1 GiB).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub warc_max_size: Option<u64>,
    /// How 401/403 on robots.txt is read.
    #[arg(long, value_enum)]
    pub robots: Option<RobotsArg>,
    /// What a spider-trap alert does.
    #[arg(long, value_enum)]
    pub traps: Option<TrapsArg>,
    /// Connect to private addresses (loopback, RFC 1918, link-local and the
    /// cloud metadata address, CGNAT, unique-local, multicast) even when no
    /// seed is on one. Without it only the seeds' own address classes are allowed.
    #[arg(long)]
    pub allow_private: bool,
    /// Do not read sitemaps (robots.txt's Sitemap: lines, /sitemap.xml);
    /// `[sitemaps] enabled = false` in crawl.toml.
    #[arg(long)]
    pub no_sitemaps: bool,
    /// Global cap on pages per second (0 = no cap).
    #[arg(long, value_name = "PAGES_PER_SEC")]
    pub max_rate: Option<f64>,
    /// Resources pages load (images, scripts, stylesheets, media, CSS url()):
    /// check each in-scope one once with HEAD (default), fetch and archive
    /// each once (for replay; stylesheets' url()s too), or leave them out.
    #[arg(long, value_enum, value_name = "MODE")]
    pub resources: Option<ResourcesArg>,
    /// Request each out-of-scope URL an in-scope page links to once (HEAD)
    /// and record its status; nothing it links to is followed. Default: off
    /// for crawl, on for demo (--check-external=false turns it off).
    #[arg(
        long,
        value_name = "BOOL",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "true"
    )]
    pub check_external: Option<bool>,
    /// A custom extraction: NAME=CSS takes the text of the elements a CSS
    /// selector matches on each HTML page, NAME=CSS@attr an attribute
    /// (e.g. image=meta[property="og:image"]@content); repeatable. Listed
    /// by `pages --csv`/`--json`; replaces one of the same name in crawl.toml.
    #[arg(long = "extract", value_name = "NAME=CSS", value_parser = parse_extraction)]
    pub extract: Vec<ExtractionSpec>,
    /// Start paused (resuming a crawl otherwise starts it running, even if
    /// it was paused when the last run stopped).
    #[arg(long)]
    pub paused: bool,
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

// The engine's settings know nothing of clap, so the flags that pick one of
// them have their own value enums. The variant docs are the `--help` text;
// the value names must match the names crawl.toml uses (tested below).

/// `--scope` values; see [`Scope`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ScopeArg {
    /// Only the hosts of the seeds.
    Host,
    /// The registrable domains of the seeds (and their subdomains).
    Domain,
    /// Follow links anywhere.
    Any,
}

impl From<ScopeArg> for Scope {
    fn from(arg: ScopeArg) -> Self {
        match arg {
            ScopeArg::Host => Scope::Host,
            ScopeArg::Domain => Scope::Domain,
            ScopeArg::Any => Scope::Any,
        }
    }
}

/// `--resources` values; see [`ResourcesMode`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ResourcesArg {
    /// Request each in-scope resource once (HEAD) and record its status.
    Check,
    /// Do not collect resources.
    Off,
    /// Fetch each in-scope one once (GET, page limits) and archive it in the
    /// WARC; a stylesheet's url()s are fetched too. Never parsed for links.
    Fetch,
}

impl From<ResourcesArg> for ResourcesMode {
    fn from(arg: ResourcesArg) -> Self {
        match arg {
            ResourcesArg::Check => ResourcesMode::Check,
            ResourcesArg::Off => ResourcesMode::Off,
            ResourcesArg::Fetch => ResourcesMode::Fetch,
        }
    }
}

/// `--robots` values; see [`RobotsMode`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RobotsArg {
    /// 401/403 on robots.txt: the whole site is off limits (HTTP guide's reading).
    Strict,
    /// RFC 9309: every 4xx on robots.txt means no restrictions.
    Rfc9309,
}

impl From<RobotsArg> for RobotsMode {
    fn from(arg: RobotsArg) -> Self {
        match arg {
            RobotsArg::Strict => RobotsMode::Strict,
            RobotsArg::Rfc9309 => RobotsMode::Rfc9309,
        }
    }
}

/// `--traps` values; see [`TrapPolicy`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TrapsArg {
    /// Park matching URLs until the operator accepts or dismisses the alert.
    Quarantine,
    /// Accept every alert at once (its suggested rule is added).
    Auto,
    /// Raise alerts, crawl on.
    AlertOnly,
}

impl From<TrapsArg> for TrapPolicy {
    fn from(arg: TrapsArg) -> Self {
        match arg {
            TrapsArg::Quarantine => TrapPolicy::Quarantine,
            TrapsArg::Auto => TrapPolicy::Auto,
            TrapsArg::AlertOnly => TrapPolicy::AlertOnly,
        }
    }
}

/// `--extract NAME=CSS[@attr]`, checked as the engine will compile it.
pub fn parse_extraction(text: &str) -> Result<ExtractionSpec, String> {
    ExtractionSpec::parse(text)
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

    /// The name a flag value has on the command line is the name of the
    /// setting it maps to in crawl.toml.
    fn assert_names_match<A, E>()
    where
        A: ValueEnum + Copy + Into<E>,
        E: serde::Serialize,
    {
        for arg in A::value_variants() {
            let flag_name = arg.to_possible_value().unwrap().get_name().to_string();
            let toml_name = serde_json::to_value((*arg).into()).unwrap();
            assert_eq!(toml_name.as_str(), Some(flag_name.as_str()));
        }
    }

    #[test]
    fn flag_values_are_named_as_in_crawl_toml() {
        assert_names_match::<ScopeArg, Scope>();
        assert_names_match::<RobotsArg, RobotsMode>();
        assert_names_match::<TrapsArg, TrapPolicy>();
        assert_names_match::<ResourcesArg, ResourcesMode>();
    }

    #[test]
    fn durations_explain_the_format() {
        assert_eq!(parse_duration_arg("1m 30s"), Ok(Duration::from_secs(90)));
        assert!(parse_duration_arg("soon").unwrap_err().contains("500ms"));
    }
}
