//! Operator actions sent to the engine, and the engine's answers.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Identifies one command so its result can be matched to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct CommandId(pub u64);

/// A host as the engine names it: `host` or `host:port` when the port is not the
/// scheme's default (see `url_norm::host_key`).
pub type HostKey = String;

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
    pub kind: PatternKind,
    pub pattern: String,
    /// `None`: every host; `Some(host)`: only URLs of that host.
    pub host: Option<HostKey>,
}

/// Which hosts a throttle or pause applies to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Target {
    Global,
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

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Command {
    Pause(Target),
    Resume(Target),
    AddRule(RuleSpec),
    RemoveRule {
        rule_id: u64,
    },
    /// `None` removes the override.
    SetHostDelay {
        host: HostKey,
        delay: Option<Duration>,
    },
    SetHostConcurrency {
        host: HostKey,
        max: Option<usize>,
    },
    /// Default per-host minimum delay for every host without an override.
    SetGlobalDelay(Duration),
    /// Global requests in flight.
    SetGlobalConcurrency(usize),
    /// Pages per second across the crawl; `None` removes the cap.
    SetGlobalRate(Option<f64>),
    AddSeed(String),
    /// Per-host breaker thresholds; `None` returns the host to crawl.toml's.
    SetHostBreaker {
        host: HostKey,
        thresholds: Option<BreakerThresholds>,
    },
    /// Close the host's breaker now.
    ResetBreaker(HostKey),
    /// Open the host's breaker now (no requests until reset or cooldown).
    ForceOpenBreaker(HostKey),
    /// Accept a trap alert: add its rule (or the edited one) and block its parked URLs.
    AcceptAlert {
        alert_id: u64,
        rule: Option<RuleSpec>,
    },
    /// Dismiss a trap alert: its parked URLs return to the frontier.
    DismissAlert {
        alert_id: u64,
    },
    Checkpoint,
    Shutdown,
}

impl Command {
    /// Whether the command changes the crawl (refused in `--readonly`).
    pub fn is_mutating(&self) -> bool {
        !matches!(self, Command::Checkpoint)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandResult {
    pub id: CommandId,
    /// `Ok(summary)` says what changed, `Err(message)` why nothing did.
    pub outcome: Result<String, String>,
}
