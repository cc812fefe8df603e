//! What the engine tells the world: whole snapshots of its gauges (on a `watch`
//! channel) and discrete events (on a bounded mpsc channel).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::control::{CommandResult, HostKey, RuleSpec};

/// Number of front-queue priority levels (0 = highest priority).
pub const PRIORITY_LEVELS: usize = 5;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum CrawlState {
    #[default]
    Starting,
    Running,
    Paused,
    /// Shutting down: in-flight requests finish, nothing new starts.
    Draining,
    Done,
}

impl CrawlState {
    pub fn label(self) -> &'static str {
        match self {
            CrawlState::Starting => "STARTING",
            CrawlState::Running => "RUNNING",
            CrawlState::Paused => "PAUSED",
            CrawlState::Draining => "DRAINING",
            CrawlState::Done => "DONE",
        }
    }
}

/// Why a host's current delay has the value it has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum DelaySource {
    #[default]
    Config,
    CrawlDelay,
    Adaptive,
    RetryAfter,
    Operator,
}

impl DelaySource {
    pub fn label(self) -> &'static str {
        match self {
            DelaySource::Config => "config",
            DelaySource::CrawlDelay => "crawl-delay",
            DelaySource::Adaptive => "adaptive",
            DelaySource::RetryAfter => "retry-after",
            DelaySource::Operator => "operator",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum RobotsState {
    /// Not fetched yet (or being fetched).
    #[default]
    Pending,
    /// Parsed; the host is crawled under its rules.
    Ok,
    /// No robots.txt (404/410/4xx): no restrictions.
    AllowAll,
    /// 401/403 in strict mode: nothing of the host is crawled.
    DisallowAll,
    /// 5xx/timeout: host postponed, retried with backoff.
    Postponed { attempts: u32 },
    /// Unavailable for too long: the host's URLs were recorded as not crawled.
    GaveUp,
}

impl RobotsState {
    pub fn label(&self) -> &'static str {
        match self {
            RobotsState::Pending => "pending",
            RobotsState::Ok => "ok",
            RobotsState::AllowAll => "none",
            RobotsState::DisallowAll => "forbidden",
            RobotsState::Postponed { .. } => "postponed",
            RobotsState::GaveUp => "gave up",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum BreakerPhase {
    #[default]
    Closed,
    Open,
    HalfOpen,
}

impl BreakerPhase {
    pub fn label(self) -> &'static str {
        match self {
            BreakerPhase::Closed => "OK",
            BreakerPhase::Open => "OPEN",
            BreakerPhase::HalfOpen => "HALF",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct BreakerView {
    pub phase: BreakerPhase,
    pub consecutive_failures: u32,
    /// Failures among the last `window` requests.
    pub window_failures: u32,
    /// Time until the next probe while OPEN.
    pub next_probe_in: Option<Duration>,
    pub last_error: Option<String>,
    pub opens: u32,
}

/// Responses of a host by class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct StatusMix {
    pub s2xx: u64,
    pub s3xx: u64,
    pub s4xx: u64,
    pub s5xx: u64,
    /// Transport errors: connect, timeout, reset, body too large…
    pub errors: u64,
}

impl StatusMix {
    pub fn record_status(&mut self, status: u16) {
        match status {
            200..=299 => self.s2xx += 1,
            300..=399 => self.s3xx += 1,
            400..=499 => self.s4xx += 1,
            _ => self.s5xx += 1,
        }
    }

    pub fn total(&self) -> u64 {
        self.s2xx + self.s3xx + self.s4xx + self.s5xx + self.errors
    }
}

/// Why a host is not being fetched right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum HostActivity {
    /// Has queued URLs and may be fetched now.
    Ready,
    /// Waiting for its politeness delay.
    Waiting,
    /// Requests in flight up to its limit.
    Busy,
    PausedByOperator,
    BreakerOpen,
    RobotsPending,
    /// Nothing queued.
    #[default]
    Idle,
    /// Given up (robots unavailable, breaker kept failing, robots forbids all).
    Finished,
}

impl HostActivity {
    pub fn label(self) -> &'static str {
        match self {
            HostActivity::Ready => "ready",
            HostActivity::Waiting => "waiting",
            HostActivity::Busy => "busy",
            HostActivity::PausedByOperator => "paused",
            HostActivity::BreakerOpen => "breaker",
            HostActivity::RobotsPending => "robots",
            HostActivity::Idle => "idle",
            HostActivity::Finished => "finished",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct HostView {
    pub host: HostKey,
    pub queued: u64,
    pub in_flight: u32,
    pub max_in_flight: u32,
    pub fetched: u64,
    /// Requests per second over the last 10 s.
    pub req_per_sec: f64,
    /// Mean response time over recent fetches.
    pub mean_latency: Duration,
    pub delay: Duration,
    pub delay_source: DelaySource,
    pub status: StatusMix,
    pub robots: RobotsState,
    pub breaker: BreakerView,
    pub activity: HostActivity,
    pub paused: bool,
    /// URLs parked by open trap alerts on this host.
    pub quarantined: u64,
    /// The next few URLs the host's queue will hand out.
    pub queue_head: Vec<String>,
    /// One line about the host's robots.txt ("14 rules, crawl-delay 2s, 1 sitemap").
    pub robots_summary: Option<String>,
    /// Operator overrides, if any.
    pub delay_override: Option<Duration>,
    pub concurrency_override: Option<usize>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuleView {
    pub id: u64,
    pub spec: RuleSpec,
    /// URLs this rule refused (discovered or already queued).
    pub hits: u64,
    /// Who added it: "operator", "alert #3", "auto".
    pub origin: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TrapKind {
    RepeatedSegments,
    DepthGrowth,
    QueryExplosion,
    SessionId,
    Counter,
    NearDuplicates,
    HostBudget,
}

impl TrapKind {
    pub fn label(self) -> &'static str {
        match self {
            TrapKind::RepeatedSegments => "repeated segments",
            TrapKind::DepthGrowth => "depth growth",
            TrapKind::QueryExplosion => "query explosion",
            TrapKind::SessionId => "session id",
            TrapKind::Counter => "calendar/counter",
            TrapKind::NearDuplicates => "near duplicates",
            TrapKind::HostBudget => "host budget",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum AlertStatus {
    /// Waiting for the operator; matching URLs are parked.
    Open,
    Accepted,
    Dismissed,
    /// Policy alert-only: nothing parked.
    Noted,
}

impl AlertStatus {
    pub fn label(self) -> &'static str {
        match self {
            AlertStatus::Open => "open",
            AlertStatus::Accepted => "accepted",
            AlertStatus::Dismissed => "dismissed",
            AlertStatus::Noted => "noted",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrapAlert {
    pub id: u64,
    pub host: HostKey,
    pub kind: TrapKind,
    /// How many URLs or pages showed the pattern.
    pub evidence_count: u64,
    /// A few of those URLs.
    pub samples: Vec<String>,
    /// The narrowest rule that covers the trap and not the rest of the host.
    pub suggested_rule: RuleSpec,
    /// Queued (parked) URLs the suggested rule matches.
    pub matching_queued: u64,
    pub status: AlertStatus,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Counters {
    pub pages_fetched: u64,
    pub bytes: u64,
    pub errors: u64,
    pub duplicates: u64,
    pub robots_denied: u64,
    pub blocked_by_rules: u64,
    pub filtered: u64,
    pub redirects: u64,
    pub not_modified: u64,
}

/// The engine's whole state as the TUI and the headless printer show it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    pub state: CrawlState,
    pub elapsed: Duration,
    pub counters: Counters,
    /// Pages per second over the last few seconds.
    pub pages_per_sec: f64,
    pub bytes_per_sec: f64,
    pub frontier_size: u64,
    pub in_flight: u32,
    /// Queued URLs per priority level (index 0 = highest).
    pub front_queues: [u64; PRIORITY_LEVELS],
    pub hosts_ready: u32,
    pub hosts_waiting: u32,
    pub hosts_paused: u32,
    pub hosts_breaker_open: u32,
    pub hosts_robots_pending: u32,
    pub hosts_total: u32,
    /// Per-host views, busiest first; capped for very wide crawls.
    pub hosts: Vec<HostView>,
    pub rules: Vec<RuleView>,
    pub alerts: Vec<TrapAlert>,
    pub quarantined: u64,
    /// Events that could not be delivered because the receiver was full.
    pub dropped_events: u64,
    pub data_dir: String,
    pub global_delay: Duration,
    pub global_concurrency: usize,
    pub global_rate: Option<f64>,
    /// Why the crawl ended, once `state == Done`.
    pub finish_reason: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Level {
    Info,
    Warn,
    Error,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum EngineEvent {
    CommandDone(CommandResult),
    /// A page was fetched (or failed); the TUI keeps a short list for the host view.
    Fetched {
        host: HostKey,
        url: String,
        status: Option<u16>,
        latency: Duration,
        bytes: u64,
        error: Option<String>,
    },
    BreakerChanged {
        host: HostKey,
        from: BreakerPhase,
        to: BreakerPhase,
        reason: String,
    },
    Alert(TrapAlert),
    AlertChanged {
        alert_id: u64,
        status: AlertStatus,
    },
    /// Noteworthy happenings for the log pane (robots answers, give-ups, …).
    Log {
        level: Level,
        message: String,
    },
    StateChanged(CrawlState),
}
