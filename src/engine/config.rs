//! Crawl configuration: built-in defaults < `crawl.toml` < CLI flags.
//!
//! Every section rejects unknown keys so a typo is reported by name instead of
//! being silently ignored.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

mod checks;
pub mod extract;
pub use checks::{ChecksConfig, ResourcesMode, DEFAULT_MAX_RESOURCES_PER_PAGE};
pub use extract::ExtractionSpec;

/// The file in a data directory that holds its crawl's effective settings.
pub const CONFIG_FILE: &str = "crawl.toml";

/// The commented default configuration shipped with the binary.
pub const DEFAULT_CONFIG_TOML: &str = include_str!("../../assets/crawl.toml");

/// Everything a crawl is run with: `crawl.toml` sections, flags and defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CrawlConfig {
    /// Seed URLs (absolute http/https).
    pub seeds: Vec<String>,
    /// Stop after this many pages were fetched (0 = no limit).
    pub max_pages: u64,
    /// Links deeper than this (hops from a seed) are not followed.
    pub max_depth: u32,
    /// Global number of requests in flight.
    pub concurrency: usize,
    /// Global cap on pages per second (0 = no cap).
    pub max_rate: f64,
    /// How the crawler names itself.
    pub identity: IdentityConfig,
    /// Which links are followed.
    pub scope: ScopeConfig,
    /// Per-host request pacing.
    pub politeness: PolitenessConfig,
    /// Limits of one HTTP request.
    pub fetch: FetchConfig,
    /// robots.txt handling.
    pub robots: RobotsConfig,
    /// Per-host circuit breakers.
    pub breaker: BreakerConfig,
    /// Spider-trap detection and what an alert does.
    pub traps: TrapConfig,
    /// The store's cache and WARC output.
    pub storage: StorageConfig,
    /// Sitemaps read when a host is first met, and their bounds.
    pub sitemaps: SitemapsConfig,
    /// Resources and external links: requested for their status, never parsed.
    pub checks: ChecksConfig,
    /// Custom extractions (`[[extract]]`): named CSS selectors evaluated on
    /// every HTML page. Last: TOML writes arrays of tables after the sections.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub extract: Vec<ExtractionSpec>,
}

impl Default for CrawlConfig {
    fn default() -> Self {
        CrawlConfig {
            seeds: Vec::new(),
            max_pages: 0,
            max_depth: 20,
            concurrency: 32,
            max_rate: 0.0,
            identity: IdentityConfig::default(),
            scope: ScopeConfig::default(),
            politeness: PolitenessConfig::default(),
            fetch: FetchConfig::default(),
            robots: RobotsConfig::default(),
            breaker: BreakerConfig::default(),
            traps: TrapConfig::default(),
            storage: StorageConfig::default(),
            sitemaps: SitemapsConfig::default(),
            checks: ChecksConfig::default(),
            extract: Vec::new(),
        }
    }
}

/// `[identity]`: what the crawler sends and answers to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IdentityConfig {
    /// Product token matched against robots.txt groups, meta robots and X-Robots-Tag;
    /// `None`: derived from `user_agent` (see [`IdentityConfig::token`]).
    pub product_token: Option<String>,
    /// Full User-Agent header: product token, version and a contact URL.
    pub user_agent: String,
    /// Optional `From:` header (an email address where the operator can be reached).
    pub from: Option<String>,
}

impl Default for IdentityConfig {
    fn default() -> Self {
        IdentityConfig {
            product_token: None,
            user_agent: format!(
                "crawldeck/{} (+https://github.com/crawldeck/crawldeck)",
                env!("CARGO_PKG_VERSION")
            ),
            from: None,
        }
    }
}

impl IdentityConfig {
    /// The product token in use: `product_token` when set, else the one the
    /// User-Agent names (`crawldeck` by default).
    pub fn token(&self) -> String {
        match &self.product_token {
            Some(token) => token.clone(),
            None => product_token_of(&self.user_agent),
        }
    }
}

/// The product token a User-Agent names: its first word up to a `/`,
/// lowercased. `AcmeBot/2.0 (+https://acme.example/bot)`
/// → `acmebot`. The result may be invalid; check it with [`is_product_token`].
pub fn product_token_of(user_agent: &str) -> String {
    token_part(user_agent).to_ascii_lowercase()
}

/// The token part of a User-Agent or of a robots.txt `User-agent:` value,
/// as written: its first word up to a `/` (RFC 9309 §2.2.1 compares only it).
pub fn token_part(agent: &str) -> &str {
    let word = agent.split_whitespace().next().unwrap_or("");
    word.split('/').next().unwrap_or("")
}

/// RFC 9309 §2.2.1: a product token is `[a-zA-Z_-]+`.
pub fn is_product_token(token: &str) -> bool {
    !token.is_empty()
        && token
            .bytes()
            .all(|b| b.is_ascii_alphabetic() || b == b'-' || b == b'_')
}

/// Every link of a 5 MiB page: the densest markup (`<a href=x>`, ~10 bytes)
/// holds about 500,000. A trap that emits many links per page is held by the
/// per-host budgets (`traps`), not by this count.
pub const DEFAULT_MAX_LINKS_PER_PAGE: usize = 500_000;
/// 32 MiB of URL text per page: every link of a 5 MiB page of the densest
/// markup (~400,000 links) whose URLs average up to ~80 bytes, of ordinary
/// markup (~130,000) up to ~250. Admitting it peaks at ~5× the text.
pub const DEFAULT_MAX_LINK_BYTES_PER_PAGE: usize = 32 * 1024 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
/// Where links may lead (`scope.mode`, `--scope`).
pub enum Scope {
    /// Only the hosts of the seeds.
    Host,
    /// The registrable domains of the seeds (and their subdomains).
    Domain,
    /// Follow links anywhere.
    Any,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
/// `[scope]`: which discovered URLs are queued.
pub struct ScopeConfig {
    /// The seeds' hosts, their registrable domains, or anywhere.
    pub mode: Scope,
    /// Extra domains (and their subdomains) that are in scope.
    pub allow_domains: Vec<String>,
    /// URLs longer than this are not queued.
    pub max_url_len: usize,
    /// At most this many links are taken from one page; the links past it
    /// are counted as cut, with the page.
    pub max_links_per_page: usize,
    /// At most this many bytes of URL text are taken from one page (the
    /// links' memory; the count above bounds their fixed cost).
    pub max_link_bytes_per_page: usize,
    /// Path extensions that are never fetched (lowercase, without dot).
    pub deny_extensions: Vec<String>,
}

impl Default for ScopeConfig {
    fn default() -> Self {
        ScopeConfig {
            mode: Scope::Host,
            allow_domains: Vec::new(),
            max_url_len: 2048,
            max_links_per_page: DEFAULT_MAX_LINKS_PER_PAGE,
            max_link_bytes_per_page: DEFAULT_MAX_LINK_BYTES_PER_PAGE,
            deny_extensions: [
                "jpg", "jpeg", "png", "gif", "webp", "bmp", "ico", "svg", "tif", "tiff", "zip",
                "gz", "tgz", "bz2", "xz", "7z", "rar", "tar", "iso", "dmg", "exe", "msi", "mp3",
                "mp4", "m4a", "m4v", "avi", "mov", "mkv", "webm", "wav", "flac", "ogg", "woff",
                "woff2", "ttf", "otf", "eot",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
/// `[politeness]`: how hard one host is asked.
pub struct PolitenessConfig {
    /// Requests in flight per host.
    pub per_host: usize,
    /// Minimum delay between two requests to one host.
    #[serde(with = "humantime_serde_compat")]
    pub min_delay: Duration,
    /// Adaptive delay: this multiple of the host's last response time.
    pub delay_factor: f64,
    /// No computed delay (adaptive, Crawl-delay, Retry-After) exceeds this.
    #[serde(with = "humantime_serde_compat")]
    pub max_delay: Duration,
}

impl Default for PolitenessConfig {
    fn default() -> Self {
        PolitenessConfig {
            per_host: 1,
            min_delay: Duration::from_secs(1),
            delay_factor: 2.0,
            max_delay: Duration::from_secs(60),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
/// `[fetch]`: the bounds of one HTTP request.
pub struct FetchConfig {
    /// Longest wait for a TCP (and TLS) connection.
    #[serde(with = "humantime_serde_compat")]
    pub connect_timeout: Duration,
    /// Longest silence while reading a response.
    #[serde(with = "humantime_serde_compat")]
    pub read_timeout: Duration,
    /// Whole request, headers and body.
    #[serde(with = "humantime_serde_compat")]
    pub total_timeout: Duration,
    /// Body cap in bytes, enforced while streaming and after decompression.
    pub max_body: u64,
    /// Redirect hops followed from one URL; the next is a recorded error.
    pub max_redirects: u32,
    /// Send If-None-Match / If-Modified-Since when a page is fetched again.
    pub conditional_requests: bool,
    /// Connect to private addresses (loopback, RFC 1918, link-local, CGNAT,
    /// unique-local, multicast…) even when no seed is on one (`--allow-private`).
    pub allow_private: bool,
}

impl Default for FetchConfig {
    fn default() -> Self {
        FetchConfig {
            connect_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(20),
            total_timeout: Duration::from_secs(60),
            max_body: 5 * 1024 * 1024,
            max_redirects: 10,
            conditional_requests: true,
            allow_private: false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
/// How a 401/403 on robots.txt is read (`robots.mode`, `--robots`).
pub enum RobotsMode {
    /// 401/403 on robots.txt: the whole site is off limits (HTTP guide's reading).
    Strict,
    /// RFC 9309: every 4xx on robots.txt means no restrictions.
    Rfc9309,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
/// `[robots]`: fetching, caching and reading robots.txt.
pub struct RobotsConfig {
    /// How a 401/403 answer is read.
    pub mode: RobotsMode,
    /// robots.txt bodies are cut at this size (RFC 9309 asks for at least 500 KiB).
    pub max_size: u64,
    /// Cache lifetime when the response carries no caching headers.
    #[serde(with = "humantime_serde_compat")]
    pub default_ttl: Duration,
    /// Crawl-delay values above this are capped.
    #[serde(with = "humantime_serde_compat")]
    pub max_crawl_delay: Duration,
    /// A host whose robots.txt stays unavailable (5xx, timeouts) this long is given up.
    #[serde(with = "humantime_serde_compat")]
    pub give_up_after: Duration,
}

impl Default for RobotsConfig {
    fn default() -> Self {
        RobotsConfig {
            mode: RobotsMode::Strict,
            max_size: 512 * 1024,
            default_ttl: Duration::from_secs(24 * 3600),
            max_crawl_delay: Duration::from_secs(30),
            give_up_after: Duration::from_secs(600),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
/// `[breaker]`: when a host's circuit breaker opens and for how long.
pub struct BreakerConfig {
    /// Open after this many consecutive failures.
    pub consecutive_failures: u32,
    /// ... or when this share of the last `window` requests failed.
    pub failure_ratio: f64,
    /// Requests the failure ratio is taken over.
    pub window: u32,
    /// First cooldown; doubles on each re-open up to `max_cooldown`.
    #[serde(with = "humantime_serde_compat")]
    pub cooldown: Duration,
    /// Longest cooldown after repeated re-opens.
    #[serde(with = "humantime_serde_compat")]
    pub max_cooldown: Duration,
    /// A host whose breaker keeps re-opening this long is given up.
    #[serde(with = "humantime_serde_compat")]
    pub give_up_after: Duration,
}

impl Default for BreakerConfig {
    fn default() -> Self {
        BreakerConfig {
            consecutive_failures: 5,
            failure_ratio: 0.5,
            window: 20,
            cooldown: Duration::from_secs(30),
            max_cooldown: Duration::from_secs(600),
            give_up_after: Duration::from_secs(1800),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
/// What a spider-trap alert does (`traps.policy`, `--traps`).
pub enum TrapPolicy {
    /// Park matching URLs until the operator accepts or dismisses the alert.
    Quarantine,
    /// Accept every alert at once (its suggested rule is added).
    Auto,
    /// Raise alerts, crawl on.
    AlertOnly,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
/// `[traps]`: detector thresholds and the alert policy.
pub struct TrapConfig {
    /// What an alert does.
    pub policy: TrapPolicy,
    /// A path segment (or a sequence of segments) repeated this many times.
    pub max_segment_repeats: usize,
    /// Path depth above which growth hop after hop is suspicious.
    pub max_path_depth: usize,
    /// Distinct query strings under one path before it is an explosion.
    pub max_query_variants: usize,
    /// Consecutive increments of a numeric component (calendar/counter).
    pub max_counter_run: usize,
    /// Near-identical pages under one path prefix.
    pub max_near_duplicates: usize,
    /// Bits (of 64) two content fingerprints may differ by and be near duplicates:
    /// 6 holds pages sharing roughly 95 % of their distinctive text (`near_dup`).
    pub near_duplicate_bits: u32,
    /// New URLs discovered per fetched page on one host, over the host's budget window.
    pub max_new_urls_per_page: f64,
    /// Pages per host before its discovery ratio is judged.
    pub budget_window: usize,
}

impl Default for TrapConfig {
    fn default() -> Self {
        TrapConfig {
            policy: TrapPolicy::Quarantine,
            max_segment_repeats: 3,
            max_path_depth: 12,
            max_query_variants: 200,
            max_counter_run: 24,
            max_near_duplicates: 20,
            near_duplicate_bits: 6,
            max_new_urls_per_page: 30.0,
            budget_window: 50,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
/// `[storage]`: the database cache and WARC output.
pub struct StorageConfig {
    /// Block cache in bytes of the crawl's database (fjall, `<data>/index`;
    /// docs/PERFORMANCE.md, "Scale").
    pub cache_bytes: u64,
    /// Rotate WARC files at this size.
    pub warc_max_bytes: u64,
    /// Write WARC records at all.
    pub warc: bool,
}

impl Default for StorageConfig {
    fn default() -> Self {
        StorageConfig {
            cache_bytes: 8 * 1024 * 1024,
            warc_max_bytes: 1024 * 1024 * 1024,
            warc: true,
        }
    }
}

/// `[sitemaps]`: the sitemap files of each host, read when it is first met.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SitemapsConfig {
    /// Fetch sitemaps at all (`--no-sitemaps` turns it off).
    pub enabled: bool,
    /// Bytes of one file, after decompression (sitemaps.org: 50 MiB).
    pub max_bytes: u64,
    /// URLs kept of one file (sitemaps.org: 50,000).
    pub max_urls: usize,
    /// Sitemap files fetched per host, index children included.
    pub max_files_per_host: u32,
    /// How many levels of sitemap indexes are followed below the first file.
    pub max_index_depth: u8,
}

impl Default for SitemapsConfig {
    fn default() -> Self {
        SitemapsConfig {
            enabled: true,
            max_bytes: 50 * 1024 * 1024,
            max_urls: 50_000,
            max_files_per_host: 100,
            max_index_depth: 2,
        }
    }
}

/// Why a configuration could not be read, written or accepted.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The config file could not be read.
    #[error("cannot read config file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why not.
        source: std::io::Error,
    },
    #[error(
        "cannot write config file {path}: {source}; check that the data directory is writable"
    )]
    /// The effective config could not be saved in the data directory.
    Write {
        /// The file.
        path: PathBuf,
        /// Why not.
        source: std::io::Error,
    },
    /// The file is not valid TOML or has an unknown key or a bad value.
    #[error("invalid config file {path}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What is wrong, from the TOML parser, with line and column.
        message: String,
    },
    /// A setting is out of range or inconsistent with another.
    #[error("invalid setting `{key}`: {message}")]
    Invalid {
        /// The setting, as written in `crawl.toml` (`politeness.min_delay`).
        key: &'static str,
        /// What is wrong and the fix.
        message: String,
    },
}

impl CrawlConfig {
    /// Parses a `crawl.toml`; `path` is only used in messages.
    pub fn from_toml(text: &str, path: &Path) -> Result<Self, ConfigError> {
        toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: path.to_path_buf(),
            message: e.to_string().trim_end().to_string(),
        })
    }

    /// Reads and parses a `crawl.toml`.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::from_toml(&text, path)
    }

    /// The settings as `crawl.toml` text (what a data directory stores).
    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).expect("config serializes")
    }

    /// Writes the effective config (to a temporary file, then renamed, so a
    /// crash never leaves half a config behind).
    pub fn save(&self, path: &Path) -> Result<(), ConfigError> {
        let write_err = |source| ConfigError::Write {
            path: path.to_path_buf(),
            source,
        };
        let text = format!(
            "# The effective configuration of this crawl, written by crawldeck.\n\
             # Re-running with --data resumes with these settings; flags still win.\n\n{}",
            self.to_toml()
        );
        let tmp = path.with_extension("toml.tmp");
        // Private (0600): the settings may name the operator (identity.from).
        crate::engine::store::private::write_private(&tmp, text.as_bytes()).map_err(write_err)?;
        std::fs::rename(&tmp, path).map_err(write_err)
    }

    /// Checks values that parse but make no sense, naming the key and the fix.
    pub fn validate(&self) -> Result<(), ConfigError> {
        fn invalid(key: &'static str, message: impl Into<String>) -> Result<(), ConfigError> {
            Err(ConfigError::Invalid {
                key,
                message: message.into(),
            })
        }
        for seed in &self.seeds {
            if let Err(message) = parse_seed(seed) {
                return invalid("seeds", message);
            }
        }
        for domain in &self.scope.allow_domains {
            if let Err(message) = ascii_domain(domain) {
                return invalid("scope.allow_domains", message);
            }
        }
        if self.concurrency == 0 {
            return invalid("concurrency", "must be at least 1");
        }
        if self.politeness.per_host == 0 {
            return invalid("politeness.per_host", "must be at least 1");
        }
        if !(self.politeness.delay_factor >= 0.0 && self.politeness.delay_factor.is_finite()) {
            return invalid("politeness.delay_factor", "must be a number >= 0");
        }
        if self.politeness.max_delay < self.politeness.min_delay {
            return invalid(
                "politeness.max_delay",
                "must not be shorter than politeness.min_delay",
            );
        }
        if !(self.max_rate >= 0.0 && self.max_rate.is_finite()) {
            return invalid("max_rate", "must be a number >= 0 (0 = no cap)");
        }
        // A zero timeout lets no request (robots.txt first) finish: the crawl stalls.
        let timeouts = [
            ("fetch.connect_timeout", self.fetch.connect_timeout, "10s"),
            ("fetch.read_timeout", self.fetch.read_timeout, "20s"),
            ("fetch.total_timeout", self.fetch.total_timeout, "1m"),
        ];
        for (key, timeout, default) in timeouts {
            if timeout.is_zero() {
                return invalid(
                    key,
                    format!(
                        "must be longer than 0s, or no request can finish; the default is \"{default}\""
                    ),
                );
            }
        }
        if self.fetch.max_body == 0 {
            return invalid("fetch.max_body", "must be at least 1 byte");
        }
        if self.storage.warc_max_bytes == 0 {
            return invalid(
                "storage.warc_max_bytes",
                "must be at least 1 byte; the default is 1073741824 (1 GiB)",
            );
        }
        if self.scope.max_url_len < 16 {
            return invalid("scope.max_url_len", "must be at least 16");
        }
        if self.storage.cache_bytes < MIN_CACHE_BYTES {
            // A cache under 1 MiB holds too few blocks to spare a read.
            return invalid(
                "storage.cache_bytes",
                format!(
                    "must be at least {MIN_CACHE_BYTES} (1 MiB); the default is 8388608 (8 MiB)"
                ),
            );
        }
        if !(0.0..=1.0).contains(&self.breaker.failure_ratio) {
            return invalid("breaker.failure_ratio", "must be between 0 and 1");
        }
        if self.breaker.consecutive_failures == 0 {
            return invalid("breaker.consecutive_failures", "must be at least 1");
        }
        if self.sitemaps.max_bytes == 0 || self.sitemaps.max_urls == 0 {
            return invalid(
                "sitemaps.max_bytes",
                "sitemaps.max_bytes and sitemaps.max_urls must be at least 1; turn sitemaps off with `enabled = false`",
            );
        }
        if let Err(message) = extract::check_list(&self.extract) {
            return invalid("extract", message);
        }
        validate_robots(&self.robots)?;
        validate_identity(&self.identity)
    }
}

/// The product token robots.txt is matched with, and the contact address.
fn validate_identity(identity: &IdentityConfig) -> Result<(), ConfigError> {
    let invalid = |key: &'static str, message: String| Err(ConfigError::Invalid { key, message });
    match &identity.product_token {
        Some(token) if !is_product_token(token) => {
            return invalid(
                "identity.product_token",
                format!(
                    "{token:?} is not a robots.txt product token: use only letters, '-' and '_' (RFC 9309), e.g. \"acmebot\""
                ),
            );
        }
        Some(_) => {}
        None => {
            let derived = identity.token();
            if !is_product_token(&derived) {
                return invalid(
                    "identity.product_token",
                    format!(
                        "the User-Agent {:?} names no usable product token (its first word up to a '/', here {derived:?}, must be only letters, '-' and '_'); start the User-Agent with one, like \"AcmeBot/2.0 (+https://acme.example/bot)\", or give the token explicitly",
                        identity.user_agent
                    ),
                );
            }
        }
    }
    if let Some(from) = &identity.from {
        if !from.contains('@') {
            return invalid("identity.from", "must be an email address".to_string());
        }
    }
    Ok(())
}

/// Parses one seed, explaining what is wrong with it.
///
/// Seeds with credentials (`https://user:pass@host/`) are refused: crawldeck
/// never sends credentials taken from URLs, and keeping them would put the
/// password in the store, the logs and the WARC files. Messages never repeat a
/// password (see [`mask_password`]).
pub fn parse_seed(seed: &str) -> Result<url::Url, String> {
    let shown = mask_password(seed.trim());
    let url = url::Url::parse(seed.trim()).map_err(|e| {
        format!("seed {shown:?} is not an absolute URL ({e}); write it like https://example.org/")
    })?;
    match url.scheme() {
        "http" | "https" => {}
        other => {
            return Err(format!(
                "seed {shown:?} uses scheme {other:?}; only http and https are crawled"
            ))
        }
    }
    if url.host_str().is_none() {
        return Err(format!("seed {shown:?} has no host"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(format!(
            "seed {shown:?} contains credentials; crawldeck does not send credentials \
             from URLs; remove `user:pass@` (pages behind a login are not crawled)"
        ));
    }
    Ok(url)
}

/// An allowed domain as URL hosts are matched against it: lowercase ASCII,
/// an IDN in punycode (`Bücher.example` → `xn--bcher-kva.example`), without
/// leading or trailing dots. Errors say what is wrong and the fix.
pub fn ascii_domain(domain: &str) -> Result<String, String> {
    let trimmed = domain.trim().trim_matches('.');
    let fail = || {
        format!(
            "{domain:?} is not a domain name: use letters, digits, '-' and '.', \
             like \"example.org\" (Unicode names are fine)"
        )
    };
    // The same conversion `url` applies to a link's host.
    let ascii = match url::Host::parse(trimmed).map_err(|_| fail())? {
        url::Host::Domain(d) => d,
        url::Host::Ipv4(ip) => ip.to_string(),
        url::Host::Ipv6(_) => return Err(fail()),
    };
    let ldh = |label: &str| {
        !label.is_empty()
            && label
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    };
    if !ascii.split('.').all(ldh) {
        return Err(fail());
    }
    Ok(ascii)
}

/// `scheme://user:***@host/…`: the text of a URL with the password (everything
/// between the first `:` of the user info and its `@`) replaced, so an error
/// message can name the URL without printing the password. Works on text that
/// does not parse as a URL too.
pub fn mask_password(text: &str) -> String {
    let start = text.find("://").map_or(0, |i| i + 3);
    let end = text[start..]
        .find(['/', '?', '#'])
        .map_or(text.len(), |i| start + i);
    let authority = &text[start..end];
    let Some(at) = authority.rfind('@') else {
        return text.to_string();
    };
    match authority[..at].find(':') {
        Some(colon) => format!("{}***{}", &text[..start + colon + 1], &text[start + at..]),
        None => text.to_string(),
    }
}

/// Durations in `crawl.toml` are written as humantime strings ("1s", "500ms", "2m").
mod humantime_serde_compat {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&humantime::format_duration(*d).to_string())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let text = String::deserialize(d)?;
        humantime::parse_duration(&text).map_err(|e| {
            serde::de::Error::custom(format!(
                "{text:?} is not a duration ({e}); write e.g. \"500ms\", \"1s\" or \"2m\""
            ))
        })
    }
}

/// Smallest `storage.cache_bytes`: 1 MiB.
pub const MIN_CACHE_BYTES: u64 = 1024 * 1024;

/// Smallest robots.txt size limit: RFC 9309 §2.5 asks parsers to read at least 500 KiB.
pub const MIN_ROBOTS_SIZE: u64 = 500 * 1024;
/// Largest robots.txt size limit: every rule within it is kept in memory, per host.
pub const MAX_ROBOTS_SIZE: u64 = 16 * 1024 * 1024;

/// `[robots]` values that would make the crawl impolite or never end.
fn validate_robots(r: &RobotsConfig) -> Result<(), ConfigError> {
    let invalid = |key: &'static str, message: String| Err(ConfigError::Invalid { key, message });
    if !(MIN_ROBOTS_SIZE..=MAX_ROBOTS_SIZE).contains(&r.max_size) {
        return invalid(
            "robots.max_size",
            format!(
                "must be between {MIN_ROBOTS_SIZE} (500 KiB, the least RFC 9309 allows) and \
                 {MAX_ROBOTS_SIZE} bytes; the default is 524288"
            ),
        );
    }
    if r.default_ttl < Duration::from_secs(60) {
        return invalid(
            "robots.default_ttl",
            "must be at least 1m, or robots.txt is fetched again for every page; \
             the default is \"1day\" (longer values are capped at 24h)"
                .into(),
        );
    }
    if r.max_crawl_delay.is_zero() || r.max_crawl_delay > Duration::from_secs(3600) {
        return invalid(
            "robots.max_crawl_delay",
            "must be between 1s and 1h (Crawl-delay values above it are capped); \
             the default is \"30s\""
                .into(),
        );
    }
    if r.give_up_after < Duration::from_secs(1) {
        return invalid(
            "robots.give_up_after",
            "must be at least 1s, or a host is given up at its first robots.txt failure; \
             the default is \"10m\""
                .into(),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Why the defaults with `break_it` applied are refused.
    fn refusal(break_it: impl FnOnce(&mut CrawlConfig)) -> String {
        let mut cfg = CrawlConfig::default();
        break_it(&mut cfg);
        cfg.validate().unwrap_err().to_string()
    }

    #[test]
    fn nonsense_robots_settings_are_refused_with_the_key_and_the_fix() {
        type Break = fn(&mut RobotsConfig);
        let cases: [(Break, &str, &str); 6] = [
            (|r| r.max_size = 0, "robots.max_size", "524288"),
            (|r| r.max_size = u64::MAX, "robots.max_size", "524288"),
            (
                |r| r.default_ttl = Duration::ZERO,
                "robots.default_ttl",
                "1day",
            ),
            (
                |r| r.max_crawl_delay = Duration::from_secs(86_400 * 365),
                "robots.max_crawl_delay",
                "between 1s and 1h",
            ),
            (
                |r| r.max_crawl_delay = Duration::ZERO,
                "robots.max_crawl_delay",
                "30s",
            ),
            (
                |r| r.give_up_after = Duration::ZERO,
                "robots.give_up_after",
                "10m",
            ),
        ];
        for (break_it, key, fix) in cases {
            let err = refusal(|cfg| break_it(&mut cfg.robots));
            assert!(err.contains(key), "{err}");
            assert!(err.contains(fix), "{err}");
        }
        CrawlConfig::default()
            .validate()
            .expect("the defaults are sane");
    }

    #[test]
    fn seeds_with_credentials_are_refused_without_showing_the_password() {
        for seed in [
            "https://alice:s3cret@example.org/private",
            "http://alice:s3cret@example.org",
            "ftp://alice:s3cret@example.org/",
            "alice:s3cret@example.org/",
        ] {
            let err = parse_seed(seed).unwrap_err();
            assert!(!err.contains("s3cret"), "{err}");
            assert!(err.contains("alice:***@example.org"), "{err}");
        }
        let err = parse_seed("https://alice:s3cret@example.org/").unwrap_err();
        assert!(err.contains("does not send credentials"), "{err}");
        assert!(err.contains("remove `user:pass@`"), "{err}");
        // A user name alone is refused too (there is nothing to mask).
        let err = parse_seed("https://alice@example.org/").unwrap_err();
        assert!(
            err.contains("\"https://alice@example.org/\" contains credentials"),
            "{err}"
        );
        assert!(parse_seed("https://example.org/a@b").is_ok());
    }

    #[test]
    fn allowed_domains_are_host_names_in_ascii() {
        assert_eq!(
            ascii_domain(" .Partner.Example. ").unwrap(),
            "partner.example"
        );
        assert_eq!(
            ascii_domain("Bücher.example").unwrap(),
            "xn--bcher-kva.example"
        );
        assert_eq!(ascii_domain("127.0.0.1").unwrap(), "127.0.0.1");
        for bad in [
            "",
            " ",
            ".",
            "not a domain!",
            "a!b.example",
            "a..b",
            "a/b",
            "[::1]",
        ] {
            let err = ascii_domain(bad).unwrap_err();
            assert!(err.contains("is not a domain name"), "{bad}: {err}");
            assert!(err.contains("\"example.org\""), "{bad}: {err}");
        }
        let mut cfg = CrawlConfig::default();
        cfg.scope.allow_domains = vec!["example.org".into(), "not a domain!".into()];
        let err = cfg.validate().unwrap_err().to_string();
        assert!(err.contains("scope.allow_domains"), "{err}");
        assert!(err.contains("\"not a domain!\""), "{err}");
    }

    #[test]
    fn mask_password_hides_only_the_password() {
        assert_eq!(
            mask_password("https://u:p@h/x:y@z"),
            "https://u:***@h/x:y@z"
        );
        assert_eq!(mask_password("https://u:p:q@r@h/"), "https://u:***@h/");
        assert_eq!(mask_password("https://h:8080/@x"), "https://h:8080/@x");
        assert_eq!(mask_password("https://u@h/"), "https://u@h/");
        assert_eq!(mask_password("plain"), "plain");
    }

    #[test]
    fn shipped_config_parses_to_the_defaults() {
        let parsed = CrawlConfig::from_toml(DEFAULT_CONFIG_TOML, Path::new("crawl.toml")).unwrap();
        assert_eq!(parsed, CrawlConfig::default());
        parsed.validate().unwrap();
    }

    #[test]
    fn unknown_key_is_named() {
        let err = CrawlConfig::from_toml("[politeness]\nmin_dealy = \"1s\"\n", Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("min_dealy"), "{err}");
        assert!(err.contains("c.toml"), "{err}");
    }

    #[test]
    fn bad_duration_explains_format() {
        let err =
            CrawlConfig::from_toml("[politeness]\nmin_delay = \"soon\"\n", Path::new("c.toml"))
                .unwrap_err()
                .to_string();
        assert!(err.contains("\"soon\" is not a duration"), "{err}");
    }

    #[test]
    fn bad_seed_is_reported_with_fix() {
        let cfg = CrawlConfig {
            seeds: vec!["example.org".into()],
            ..Default::default()
        };
        let err = cfg.validate().unwrap_err().to_string();
        assert!(err.contains("seeds"), "{err}");
        assert!(err.contains("https://example.org/"), "{err}");
        let cfg = CrawlConfig {
            seeds: vec!["ftp://example.org/".into()],
            ..Default::default()
        };
        assert!(cfg
            .validate()
            .unwrap_err()
            .to_string()
            .contains("only http and https"));
    }

    #[test]
    fn saved_config_loads_back_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("crawl.toml");
        let mut cfg = CrawlConfig {
            seeds: vec!["https://example.org/".into()],
            max_pages: 500,
            ..Default::default()
        };
        cfg.politeness.min_delay = Duration::from_millis(1500);
        cfg.identity.from = Some("ops@example.org".into());
        cfg.traps.policy = TrapPolicy::AlertOnly;
        cfg.save(&path).unwrap();
        assert_eq!(CrawlConfig::load(&path).unwrap(), cfg);
        assert!(!path.with_extension("toml.tmp").exists());
    }

    #[test]
    fn product_token_is_derived_from_the_user_agent() {
        assert_eq!(
            product_token_of("AcmeBot/2.0 (+https://acme.example/bot)"),
            "acmebot"
        );
        assert_eq!(product_token_of(" Acme-Bot_x /1"), "acme-bot_x");
        assert_eq!(product_token_of("AcmeBot"), "acmebot");
        assert_eq!(product_token_of("AcmeBot (+https://a.example/)"), "acmebot");
        assert_eq!(product_token_of(""), "");
        assert_eq!(product_token_of("/2.0"), "");
        assert_eq!(IdentityConfig::default().token(), "crawldeck");
        let mut id = IdentityConfig {
            user_agent: "AcmeBot/2.0 (+https://acme.example/bot)".into(),
            ..Default::default()
        };
        assert_eq!(id.token(), "acmebot");
        id.product_token = Some("Acme_Crawler".into());
        assert_eq!(id.token(), "Acme_Crawler", "an explicit token wins");
    }

    #[test]
    fn product_tokens_are_letters_dashes_and_underscores() {
        for good in ["crawldeck", "AcmeBot", "acme-bot", "acme_bot", "-"] {
            assert!(is_product_token(good), "{good}");
        }
        for bad in ["", "acme bot", "acmebot2", "acme/2.0", "acmé", "a:b", "*"] {
            assert!(!is_product_token(bad), "{bad}");
        }
    }

    #[test]
    fn bad_product_tokens_are_refused_with_the_fix() {
        let mut cfg = CrawlConfig::default();
        cfg.identity.product_token = Some("acme bot".into());
        let err = cfg.validate().unwrap_err().to_string();
        assert!(err.contains("identity.product_token"), "{err}");
        assert!(
            err.contains("\"acme bot\" is not a robots.txt product token"),
            "{err}"
        );

        let mut cfg = CrawlConfig::default();
        cfg.identity.user_agent = "Bot2000/1.0".into();
        let err = cfg.validate().unwrap_err().to_string();
        assert!(err.contains("\"bot2000\""), "{err}");
        assert!(err.contains("identity.product_token"), "{err}");
        cfg.identity.product_token = Some("bot".into());
        cfg.validate().unwrap();

        cfg.identity.product_token = None;
        cfg.identity.user_agent = "AcmeBot/2.0 (+https://acme.example/bot)".into();
        cfg.validate().unwrap();
    }

    #[test]
    fn a_derived_token_is_not_stored_but_an_explicit_one_is() {
        let mut cfg = CrawlConfig::default();
        cfg.identity.user_agent = "AcmeBot/2.0".into();
        assert!(!cfg.to_toml().contains("product_token"));
        cfg.identity.product_token = Some("acme".into());
        let back = CrawlConfig::from_toml(&cfg.to_toml(), Path::new("c.toml")).unwrap();
        assert_eq!(back.identity.token(), "acme");
    }

    #[test]
    fn a_cache_below_1_mib_is_refused_with_the_minimum() {
        for bytes in [0, 100, MIN_CACHE_BYTES - 1] {
            let mut cfg = CrawlConfig::default();
            cfg.storage.cache_bytes = bytes;
            let err = cfg.validate().unwrap_err().to_string();
            assert!(err.contains("storage.cache_bytes"), "{err}");
            assert!(err.contains("at least 1048576 (1 MiB)"), "{err}");
        }
        let mut cfg = CrawlConfig::default();
        cfg.storage.cache_bytes = MIN_CACHE_BYTES;
        cfg.validate().unwrap();
    }

    #[test]
    fn zero_fetch_timeouts_are_refused_naming_the_key() {
        type Break = fn(&mut FetchConfig);
        let cases: [(Break, &str, &str); 3] = [
            (
                |f| f.connect_timeout = Duration::ZERO,
                "fetch.connect_timeout",
                "\"10s\"",
            ),
            (
                |f| f.read_timeout = Duration::ZERO,
                "fetch.read_timeout",
                "\"20s\"",
            ),
            (
                |f| f.total_timeout = Duration::ZERO,
                "fetch.total_timeout",
                "\"1m\"",
            ),
        ];
        for (break_it, key, fix) in cases {
            let err = refusal(|cfg| break_it(&mut cfg.fetch));
            assert!(err.contains(key), "{err}");
            assert!(err.contains("longer than 0s"), "{err}");
            assert!(err.contains(fix), "{err}");
        }
        let err = CrawlConfig::from_toml("[fetch]\nread_timeout = \"0s\"\n", Path::new("c.toml"))
            .unwrap()
            .validate()
            .unwrap_err()
            .to_string();
        assert!(err.contains("fetch.read_timeout"), "{err}");
    }

    #[test]
    fn zero_per_host_is_rejected() {
        let mut cfg = CrawlConfig::default();
        cfg.politeness.per_host = 0;
        assert!(cfg
            .validate()
            .unwrap_err()
            .to_string()
            .contains("politeness.per_host"));
    }
}
