//! What a listing asks for, checked: filters, sort, limit and format. The
//! command line builds a [`Query`] with [`Query::parse_status`] and friends,
//! so a bad value is reported before the store is opened.

use std::path::PathBuf;

/// Which list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listing {
    /// One line per URL.
    Pages,
    /// Exact and near-duplicate groups.
    Duplicates,
    /// Broken targets with the pages that link to them.
    Broken,
    /// Redirect chains.
    Redirects,
    /// The audit's findings, or the URLs of one check.
    Audit(Option<super::audit::Check>),
}

/// How rows are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Aligned columns, strings made safe for a terminal.
    Table,
    /// Tab-separated values with a header line.
    Tsv,
    /// CSV with a header line (the `csv` crate quotes).
    Csv,
    /// One JSON object a line.
    Json,
}

/// What became of a URL, in the words `--fate` takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// An HTTP answer (2xx, 4xx, 5xx); a page a recrawl found unchanged keeps
    /// the 200 of its content.
    Fetched,
    /// A 3xx that was followed.
    Redirect,
    /// The same body as an earlier page.
    Duplicate,
    /// No usable answer (connect, timeout, …).
    Error,
    /// Never fetched: robots.txt, a rule, a trap alert, scope, depth, a given-up host.
    Blocked,
    /// Held back by an open trap alert until it is accepted or dismissed.
    Parked,
}

impl Fate {
    /// Parses a `--fate` value.
    pub fn parse(s: &str) -> Result<Fate, String> {
        Ok(match s.to_ascii_lowercase().as_str() {
            "fetched" => Fate::Fetched,
            "redirect" | "redirects" => Fate::Redirect,
            "duplicate" | "duplicates" => Fate::Duplicate,
            "error" | "errors" => Fate::Error,
            "blocked" => Fate::Blocked,
            "parked" | "quarantined" => Fate::Parked,
            other => {
                return Err(format!(
                "unknown fate {other:?}; use one of fetched, redirect, duplicate, error, blocked, parked"
            ))
            }
        })
    }

    /// The word in listings.
    pub fn label(self) -> &'static str {
        match self {
            Fate::Fetched => "fetched",
            Fate::Redirect => "redirect",
            Fate::Duplicate => "duplicate",
            Fate::Error => "error",
            Fate::Blocked => "blocked",
            Fate::Parked => "parked",
        }
    }
}

/// Reasons `--by` takes besides error kinds.
pub const BLOCK_REASONS: &[&str] = &[
    "robots",
    "rule",
    "trap",
    "scope",
    "depth",
    "extension",
    "host",
    "probe",
    PRIVATE_ADDRESS,
];

/// The error kind of a URL the private-address guard refused: listed as blocked.
pub const PRIVATE_ADDRESS: &str = "private-address";

/// Error kinds the engine records (`PageOutcome::Error`), also taken by `--by`.
pub const ERROR_KINDS: &[&str] = &[
    "connect",
    "timeout",
    "reset",
    "body-too-large",
    "decode",
    "invalid-url",
    "other",
    "bad-redirect",
    "too-many-redirects",
    "sitemap",
];

/// How `--by` names one trap alert: `alert:3` (`alert:#3` too).
pub const ALERT_PREFIX: &str = "alert:";

/// The alert number of an `alert:N` reason.
pub fn by_alert(by: &str) -> Option<u64> {
    by.strip_prefix(ALERT_PREFIX)?
        .trim_start_matches('#')
        .parse()
        .ok()
}

/// A `--status` item: one code or a class (`4xx`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusMatch {
    /// Exactly this code.
    Code(u16),
    /// Codes `n00..=n99`.
    Class(u16),
}

impl StatusMatch {
    fn matches(self, status: u16) -> bool {
        match self {
            StatusMatch::Code(c) => c == status,
            StatusMatch::Class(c) => status / 100 == c,
        }
    }
}

/// How rows are ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    /// URL order, as stored: streams without holding rows.
    Url,
    /// HTTP status, URLs without one last.
    Status,
    /// Largest first.
    Size,
    /// Shallowest first.
    Depth,
    /// Oldest first.
    Fetched,
    /// Slowest answer first.
    Response,
    /// Most linked first.
    Inlinks,
}

impl SortKey {
    /// Parses a `--sort` value.
    pub fn parse(s: &str) -> Result<SortKey, String> {
        Ok(match s.to_ascii_lowercase().as_str() {
            "url" => SortKey::Url,
            "status" => SortKey::Status,
            "size" => SortKey::Size,
            "depth" => SortKey::Depth,
            "fetched" | "time" => SortKey::Fetched,
            "response" | "response-time" | "slowest" => SortKey::Response,
            "inlinks" => SortKey::Inlinks,
            other => {
                return Err(format!(
                    "unknown sort key {other:?}; use one of url, status, size, depth, fetched, response, inlinks"
                ))
            }
        })
    }
}

/// A checked listing request.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    /// The crawl's data directory.
    pub data_dir: PathBuf,
    /// Which list.
    pub listing: Listing,
    /// Output format.
    pub format: Format,
    /// Keep URLs with one of these statuses (empty: all).
    pub status: Vec<StatusMatch>,
    /// Keep URLs with this fate.
    pub fate: Option<Fate>,
    /// Keep URLs with this reason (`robots`, `rule`, …, or an error kind).
    pub by: Option<String>,
    /// Keep URLs of this host key.
    pub host: Option<String>,
    /// At most this many rows (groups, chains).
    pub limit: Option<usize>,
    /// Row order (pages only).
    pub sort: SortKey,
    /// `--indexable`, `--missing` (pages only).
    pub facts: super::facts::FactFilters,
    /// Keep URLs found this way (links, sitemap, both, seed, sitemap-file).
    pub found_by: Option<super::sitemaps::FoundBy>,
    /// A shared crawl, read from all its workers instead of `data_dir`.
    pub cluster: Option<crate::engine::ClusterTarget>,
}

impl Query {
    /// A listing of every URL of the crawl in `data_dir`, unfiltered, in URL
    /// order; callers set the filters they take.
    pub fn new(data_dir: PathBuf, listing: Listing, format: Format) -> Query {
        Query {
            data_dir,
            listing,
            format,
            status: Vec::new(),
            fate: None,
            by: None,
            host: None,
            limit: None,
            sort: SortKey::Url,
            facts: Default::default(),
            found_by: None,
            cluster: None,
        }
    }

    /// Parses a `--status` list: `404`, `4xx`, `301,5xx`.
    pub fn parse_status(list: &str) -> Result<Vec<StatusMatch>, String> {
        list.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|item| {
                let lower = item.to_ascii_lowercase();
                let bad =
                    || format!("bad status {item:?}; give codes or classes like 404,5xx (100-599)");
                if let Some(class) = lower.strip_suffix("xx") {
                    let c: u16 = class.parse().map_err(|_| bad())?;
                    (1..=5)
                        .contains(&c)
                        .then_some(StatusMatch::Class(c))
                        .ok_or_else(bad)
                } else {
                    let c: u16 = lower.parse().map_err(|_| bad())?;
                    (100..=599)
                        .contains(&c)
                        .then_some(StatusMatch::Code(c))
                        .ok_or_else(bad)
                }
            })
            .collect()
    }

    /// Checks a `--by` value (`alert:N` is written back as such).
    pub fn parse_by(by: &str) -> Result<String, String> {
        let by = by.to_ascii_lowercase();
        if BLOCK_REASONS.contains(&by.as_str()) || ERROR_KINDS.contains(&by.as_str()) {
            Ok(by)
        } else if let Some(id) = by_alert(&by) {
            Ok(format!("{ALERT_PREFIX}{id}"))
        } else {
            Err(format!(
                "unknown reason {by:?} for --by; use one of {}, alert:N (one trap alert) or an error kind ({})",
                BLOCK_REASONS.join(", "),
                ERROR_KINDS.join(", ")
            ))
        }
    }

    /// Whether a status passes `--status` (a URL without one passes only an empty filter).
    pub fn status_matches(&self, status: Option<u16>) -> bool {
        if self.status.is_empty() {
            return true;
        }
        status.is_some_and(|s| self.status.iter().any(|m| m.matches(s)))
    }

    /// The URL prefixes that hold the pages of `--host` (every URL without it).
    pub fn url_prefixes(&self) -> Vec<String> {
        host_prefixes(self.host.as_deref())
    }
}

/// The URL prefixes that hold the pages of a host key, in URL order (every
/// URL without one).
pub fn host_prefixes(host: Option<&str>) -> Vec<String> {
    match host {
        Some(host) => vec![format!("http://{host}/"), format!("https://{host}/")],
        None => vec![String::new()],
    }
}

/// Reads a `--host` value: a host key (`example.org`, `example.org:8080`) or a URL.
pub fn parse_host(value: &str) -> Result<String, String> {
    let value = value.trim();
    if value.contains("://") {
        let url = url::Url::parse(value).map_err(|e| format!("bad --host URL {value:?}: {e}"))?;
        return Ok(crate::engine::url_norm::host_key(&url));
    }
    let url = url::Url::parse(&format!("http://{value}/"))
        .ok()
        .filter(|u| u.path() == "/" && u.query().is_none() && u.username().is_empty())
        .ok_or_else(|| {
            format!("bad --host {value:?}; give a host name like example.org or example.org:8080")
        })?;
    // The port as given (`:443` is not http's default, so it stays).
    Ok(match url.port() {
        Some(port) => format!("{}:{port}", url.host_str().unwrap_or_default()),
        None => url.host_str().unwrap_or_default().to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_lists_take_codes_and_classes() {
        let s = Query::parse_status("404, 5xx").unwrap();
        assert_eq!(s, [StatusMatch::Code(404), StatusMatch::Class(5)]);
        assert!(Query::parse_status("4x").is_err());
        assert!(Query::parse_status("700").is_err());
        assert!(Query::parse_status("9xx").is_err());
    }

    #[test]
    fn hosts_are_read_as_host_keys() {
        assert_eq!(parse_host("Example.ORG").unwrap(), "example.org");
        assert_eq!(parse_host("a.localhost:8080").unwrap(), "a.localhost:8080");
        assert_eq!(parse_host("https://b.example:443/x").unwrap(), "b.example");
        assert!(parse_host("a b").is_err());
        assert!(parse_host("a.example/path").is_err());
    }

    #[test]
    fn reasons_are_checked() {
        assert_eq!(Query::parse_by("Robots").unwrap(), "robots");
        assert_eq!(Query::parse_by("timeout").unwrap(), "timeout");
        assert!(Query::parse_by("weather").unwrap_err().contains("robots"));
        assert_eq!(Query::parse_by("Alert:#3").unwrap(), "alert:3");
        assert!(Query::parse_by("alert:x").is_err());
        assert_eq!(Fate::parse("parked").unwrap(), Fate::Parked);
    }
}
