//! Operator actions sent to the engine, and the engine's answers.

use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use super::config::ExtractionSpec;

/// The longest delay an operator may set between two requests to a host.
pub const MAX_DELAY: Duration = Duration::from_secs(3600);

/// Identifies one command so its result can be matched to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct CommandId(pub u64);

/// A host as the engine names it: `host` or `host:port` when the port is not the
/// scheme's default (see `url_norm::host_key`).
pub type HostKey = String;

/// A table by host, looked up for every link and page: hashed with foldhash
/// (seeded per process), not SipHash.
pub type ByHost<V> = std::collections::HashMap<HostKey, V, foldhash::fast::RandomState>;

/// How a blacklist rule's pattern is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PatternKind {
    /// A regular expression matched anywhere in the absolute URL.
    Regex,
    /// A glob matched against the whole absolute URL (`*` crosses `/`).
    Glob,
}

/// A blacklist rule as the operator writes it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RuleSpec {
    /// How `pattern` is written.
    pub kind: PatternKind,
    /// The regex or glob, matched against the normalized absolute URL.
    pub pattern: String,
    /// `None`: every host; `Some(host)`: only URLs of that host.
    pub host: Option<HostKey>,
}

/// Which hosts a throttle or pause applies to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Target {
    /// The whole crawl.
    Global,
    /// One host.
    Host(HostKey),
}

/// A host's own circuit-breaker thresholds (over `[breaker]` in crawl.toml).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BreakerThresholds {
    /// Open after this many consecutive failures.
    pub consecutive_failures: u32,
    /// First cooldown before the probe (doubles on each re-open).
    pub cooldown: Duration,
}

/// An operator action. `EngineControl::send` queues it; the engine answers with
/// `EngineEvent::CommandDone`, and stores what it changed so it survives a restart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Command {
    /// Starts nothing more for the crawl or one host; requests in flight finish.
    Pause(Target),
    /// Lifts a pause of the crawl or one host (a crawl that is draining stays draining).
    Resume(Target),
    /// Adds a blacklist rule: links found from now on are checked against it, and queued URLs it
    /// matches are recorded as blocked at once.
    AddRule(RuleSpec),
    /// Removes a rule: links found from now on pass it; URLs it blocked stay recorded as blocked.
    RemoveRule {
        /// `RuleView::id` of the rule.
        rule_id: u64,
    },
    /// `None` removes the override.
    SetHostDelay {
        /// The host whose delay is set.
        host: HostKey,
        /// Wait between a response and the host's next request, in place of every computed
        /// delay (Crawl-delay, adaptive, Retry-After).
        delay: Option<Duration>,
    },
    /// The host's own limit of requests in flight.
    SetHostConcurrency {
        /// The host whose limit is set.
        host: HostKey,
        /// Requests in flight at most (0 is refused); `None` returns the host to
        /// `politeness.per_host`.
        max: Option<usize>,
    },
    /// Default per-host minimum delay for every host without an override.
    SetGlobalDelay(Duration),
    /// Global requests in flight.
    SetGlobalConcurrency(usize),
    /// Pages per second across the crawl; `None` removes the cap.
    SetGlobalRate(Option<f64>),
    /// Queues a URL as a new seed (depth 0) and widens the scope to its host (and domain);
    /// refused if the URL was already seen.
    AddSeed(String),
    /// Per-host breaker thresholds; `None` returns the host to crawl.toml's.
    SetHostBreaker {
        /// The host whose breaker thresholds are set.
        host: HostKey,
        /// The host's thresholds (`consecutive_failures` 0 is refused).
        thresholds: Option<BreakerThresholds>,
    },
    /// Close the host's breaker now.
    ResetBreaker(HostKey),
    /// Open the host's breaker now (no requests until reset or cooldown).
    ForceOpenBreaker(HostKey),
    /// Accept a trap alert: add its rule (or the edited one) and block its parked URLs.
    AcceptAlert {
        /// `TrapAlert::id` of the alert.
        alert_id: u64,
        /// The operator's edit of the suggested rule; `None` takes it as is.
        rule: Option<RuleSpec>,
    },
    /// Dismiss a trap alert: its parked URLs return to the frontier.
    DismissAlert {
        /// `TrapAlert::id` of the alert.
        alert_id: u64,
    },
    /// Counts, without changing anything, the queued, parked and fetched URLs a rule would
    /// match, per host with examples; over a time budget the counts are a sample.
    Preview(RuleSpec),
    /// Adds a custom extraction for pages fetched from now on (pages fetched
    /// before keep none); stored in the data directory's crawl.toml.
    AddExtraction(ExtractionSpec),
    /// Writes what is kept in memory (counters, rule hits, WARC output) and flushes the store;
    /// the one command `--readonly` allows.
    Checkpoint,
    /// Stops the crawl: in-flight requests finish, then it is checkpointed and the engine ends.
    Shutdown,
}

impl Command {
    /// Whether the command changes the crawl (refused in `--readonly`).
    pub fn is_mutating(&self) -> bool {
        !matches!(self, Command::Checkpoint | Command::Preview(_))
    }

    /// One short phrase per command, for the status line and the log.
    pub fn label(&self) -> String {
        let target = |t: &Target| match t {
            Target::Global => "crawl".to_string(),
            Target::Host(h) => h.clone(),
        };
        match self {
            Command::Pause(t) => format!("pause {}", target(t)),
            Command::Resume(t) => format!("resume {}", target(t)),
            Command::AddRule(r) => format!("add rule {}", r.pattern),
            Command::RemoveRule { rule_id } => format!("remove rule #{rule_id}"),
            Command::SetHostDelay {
                host,
                delay: Some(d),
            } => format!("delay {host} {}", humantime::format_duration(*d)),
            Command::SetHostDelay { host, delay: None } => format!("delay {host} default"),
            Command::SetHostConcurrency { host, max: Some(n) } => format!("concurrency {host} {n}"),
            Command::SetHostConcurrency { host, max: None } => {
                format!("concurrency {host} default")
            }
            Command::SetGlobalDelay(d) => {
                format!("global delay {}", humantime::format_duration(*d))
            }
            Command::SetGlobalConcurrency(n) => format!("global concurrency {n}"),
            Command::SetGlobalRate(Some(r)) => format!("rate {r} pages/s"),
            Command::SetGlobalRate(None) => "rate unlimited".into(),
            Command::AddSeed(u) => format!("seed {u}"),
            Command::SetHostBreaker {
                host,
                thresholds: Some(t),
            } => format!(
                "breaker {host}: {} failures, cooldown {}",
                t.consecutive_failures,
                humantime::format_duration(t.cooldown)
            ),
            Command::SetHostBreaker {
                host,
                thresholds: None,
            } => format!("breaker {host} default"),
            Command::ResetBreaker(h) => format!("reset breaker {h}"),
            Command::ForceOpenBreaker(h) => format!("open breaker {h}"),
            Command::AcceptAlert { alert_id, .. } => format!("accept alert #{alert_id}"),
            Command::DismissAlert { alert_id } => format!("dismiss alert #{alert_id}"),
            Command::Preview(r) => format!("preview {}", r.pattern),
            Command::AddExtraction(spec) => format!("extract {}", spec.describe()),
            Command::Checkpoint => "checkpoint".into(),
            Command::Shutdown => "shutdown".into(),
        }
    }
}

/// The engine's answer to one command, in `EngineEvent::CommandDone`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandResult {
    /// The id `EngineControl::send` returned for the command.
    pub id: CommandId,
    /// `Ok(summary)` says what changed, `Err(message)` why nothing did.
    pub outcome: Result<String, String>,
}
