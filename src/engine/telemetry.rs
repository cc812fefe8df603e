//! What the engine tells the world: whole snapshots of its gauges (on a `watch`
//! channel) and discrete events (on a bounded mpsc channel).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::control::{CommandResult, HostKey, RuleSpec};
use super::host_window::HostWindow;

/// Number of front-queue priority levels (0 = highest priority).
pub const PRIORITY_LEVELS: usize = 5;

/// Where the crawl is in its life (`Snapshot::state`, `EngineEvent::StateChanged`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum CrawlState {
    /// Not running yet: what front ends see before the crawl loop's first snapshot.
    #[default]
    Starting,
    /// Handing out work as politeness, robots.txt, breakers and limits allow.
    Running,
    /// The operator paused the whole crawl: in-flight requests finish, nothing new starts.
    Paused,
    /// Shutting down: in-flight requests finish, nothing new starts.
    Draining,
    /// The crawl loop has ended (a checkpoint follows); `Snapshot::finish_reason` says why.
    Done,
}

impl CrawlState {
    /// Upper-case word for the TUI header and the headless progress lines.
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
    /// The crawl's default delay: `politeness.min_delay`, or the operator's `SetGlobalDelay`.
    #[default]
    Config,
    /// The Crawl-delay of the host's robots.txt, longer than the default.
    CrawlDelay,
    /// `politeness.delay_factor` × the host's last response time, longer than the others.
    Adaptive,
    /// The Retry-After of the host's last 429/503 (added to the other terms), the larger part.
    RetryAfter,
    /// The operator's delay for this host (`SetHostDelay`); it replaces every other term.
    Operator,
}

impl DelaySource {
    /// Word for the host detail view.
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

/// Where a host's robots.txt stands.
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
    Postponed {
        /// Failed fetches of robots.txt since the last success.
        attempts: u32,
    },
    /// Unavailable for too long: the host's URLs were recorded as not crawled.
    GaveUp,
}

impl RobotsState {
    /// Short word for the hosts table and the host detail view.
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

/// Phase of a host's circuit breaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum BreakerPhase {
    /// Requests flow; failures are counted.
    #[default]
    Closed,
    /// Tripped by failures (or the operator): no requests until the cooldown ends.
    Open,
    /// Cooldown over: one probe request is out; its outcome closes or re-opens the breaker.
    HalfOpen,
}

impl BreakerPhase {
    /// Short upper-case word for the hosts table and log lines.
    pub fn label(self) -> &'static str {
        match self {
            BreakerPhase::Closed => "OK",
            BreakerPhase::Open => "OPEN",
            BreakerPhase::HalfOpen => "HALF",
        }
    }
}

/// A host's circuit breaker as front ends show it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct BreakerView {
    /// Whether requests flow, are held, or one probe is out.
    pub phase: BreakerPhase,
    /// Failures in a row (transport errors, 5xx, repeated 429s) since the last success or close.
    pub consecutive_failures: u32,
    /// Failures among the last `window` requests.
    pub window_failures: u32,
    /// Time until the next probe while OPEN.
    pub next_probe_in: Option<Duration>,
    /// Text of the host's most recent failure (at most 256 characters); `None` if it never failed.
    pub last_error: Option<String>,
    /// Times the breaker has opened during the crawl (kept across restarts).
    pub opens: u32,
}

/// Recorded URLs (of a host, or of the crawl) by their answer's status class;
/// an answer that is retried is not counted, so the classes sum to the pages
/// fetched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct StatusMix {
    /// Answers 200–299.
    pub s2xx: u64,
    /// Answers 300–399 (redirects and 304s).
    pub s3xx: u64,
    /// Answers 400–499 (429s included).
    pub s4xx: u64,
    /// Answers 500 and up, and any status outside 200–499.
    pub s5xx: u64,
    /// Transport errors: connect, timeout, reset, body too large…
    pub errors: u64,
    /// Of the errors: URLs not connected to because their address is private
    /// (see `engine::address`).
    #[serde(default)]
    pub refused: u64,
}

impl StatusMix {
    /// Counts a recorded URL: answered with `status`, or (`None`) failed
    /// without an answer, `refused` when its address was private.
    pub fn record(&mut self, status: Option<u16>, refused: bool) {
        match status {
            Some(status) => self.record_status(status),
            None => {
                self.errors += 1;
                self.refused += u64::from(refused);
            }
        }
    }

    /// Counts one HTTP answer in its class.
    pub fn record_status(&mut self, status: u16) {
        match status {
            200..=299 => self.s2xx += 1,
            300..=399 => self.s3xx += 1,
            400..=499 => self.s4xx += 1,
            _ => self.s5xx += 1,
        }
    }

    /// Every answer and transport error counted.
    pub fn total(&self) -> u64 {
        self.answered() + self.errors
    }

    /// Every answer counted: the pages fetched.
    pub fn answered(&self) -> u64 {
        self.s2xx + self.s3xx + self.s4xx + self.s5xx
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
    /// The operator paused the host.
    PausedByOperator,
    /// Held by its open circuit breaker until the next probe.
    BreakerOpen,
    /// Held until its robots.txt is fetched (first time, refresh, or retry after a failure).
    RobotsPending,
    /// Nothing queued.
    #[default]
    Idle,
    /// Given up (robots unavailable, breaker kept failing, robots forbids all).
    Finished,
}

impl HostActivity {
    /// Lower-case word for the hosts table and the host detail view.
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

/// One host as front ends show it (hosts table, host detail).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct HostView {
    /// The host's key (`host` or `host:port`).
    pub host: HostKey,
    /// URLs waiting in the host's queue (not in flight, not parked).
    pub queued: u64,
    /// Page requests to the host now out (robots.txt fetches not counted).
    pub in_flight: u32,
    /// Page requests the host may have out at once: the operator's override, else
    /// `politeness.per_host`.
    pub max_in_flight: u32,
    /// The host's pages fetched: URLs recorded with an HTTP answer, any status (its part of
    /// `Counters::pages_fetched`; retried answers not). Kept across restarts.
    pub fetched: u64,
    /// Requests per second over the last 10 s.
    pub req_per_sec: f64,
    /// Mean response time over recent fetches.
    pub mean_latency: Duration,
    /// Wait between a response and the host's next request, as last computed (zero before its
    /// first response).
    pub delay: Duration,
    /// Which term set `delay`.
    pub delay_source: DelaySource,
    /// The host's recorded URLs by status class, and those that failed without an answer.
    /// Kept across restarts.
    pub status: StatusMix,
    /// Where the host's robots.txt stands.
    pub robots: RobotsState,
    /// The host's circuit breaker.
    pub breaker: BreakerView,
    /// What the host is doing, or why it is not being fetched.
    pub activity: HostActivity,
    /// The operator paused the host (`Command::Pause` with `Target::Host`); kept across restarts.
    pub paused: bool,
    /// URLs parked by open trap alerts on this host.
    pub quarantined: u64,
    /// The next few URLs the host's queue will hand out.
    pub queue_head: Vec<String>,
    /// One line about the host's robots.txt ("14 rules, crawl-delay 2s, 1 sitemap").
    pub robots_summary: Option<String>,
    /// Operator overrides, if any.
    pub delay_override: Option<Duration>,
    /// The operator's in-flight limit for the host (`SetHostConcurrency`); `None`:
    /// `politeness.per_host`.
    pub concurrency_override: Option<usize>,
    /// Why the host's latest refused URL was not connected to (a private address).
    #[serde(default)]
    pub last_refusal: Option<String>,
}

/// An operator rule as front ends show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuleView {
    /// The rule's number: from 1, never reused in a crawl; `RemoveRule` and
    /// `PageOutcome::Blocked` name it.
    pub id: u64,
    /// The pattern and the hosts it applies to.
    pub spec: RuleSpec,
    /// URLs this rule refused (discovered or already queued).
    pub hits: u64,
    /// Who added it: "operator", "alert #3", "auto".
    pub origin: String,
}

/// Which spider-trap detector raised an alert.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TrapKind {
    /// A path segment (or run of segments) repeated `traps.max_segment_repeats` times:
    /// `/a/b/a/b/a/b`.
    RepeatedSegments,
    /// Links leading deeper hop after hop, past `traps.max_path_depth`.
    DepthGrowth,
    /// One path with more than `traps.max_query_variants` distinct query strings.
    QueryExplosion,
    /// A random-looking parameter whose value changes under the same page, making every link new.
    SessionId,
    /// Calendars and counters: numbers in the URL that keep moving the same way, hop after hop.
    Counter,
    /// Many near-identical pages (by simhash) under one path prefix. Exact copies are not
    /// counted here: the content digest already stores them as duplicates.
    NearDuplicates,
    /// A host handing out more new URLs per fetched page than `traps.max_new_urls_per_page`,
    /// over its budget window.
    HostBudget,
    /// Pages that answer 200 for paths that do not exist: a probe of a random path got the
    /// same content as the suspect pages (the probe URL is among the samples).
    SoftNotFound,
}

impl TrapKind {
    /// Lower-case words for alert lists and the headless summary: what was detected, not how.
    /// (The stored variant names are kept as they were, so older crawls still load.)
    pub fn label(self) -> &'static str {
        match self {
            TrapKind::RepeatedSegments => "repeating path",
            TrapKind::DepthGrowth => "deep path",
            TrapKind::QueryExplosion => "parameter explosion",
            TrapKind::SessionId => "session ids",
            TrapKind::Counter => "calendar",
            TrapKind::NearDuplicates => "near duplicates",
            TrapKind::HostBudget => "host budget",
            TrapKind::SoftNotFound => "soft 404",
        }
    }
}

/// Where the decision on a trap alert stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum AlertStatus {
    /// Waiting for the operator; matching URLs are parked.
    Open,
    /// Accepted (by the operator, or by policy `auto`): its rule (or the operator's edit of it)
    /// was added and its parked URLs recorded as blocked.
    Accepted,
    /// Dismissed by the operator: its parked URLs went back to the frontier; the rule is not
    /// suggested again for the host.
    Dismissed,
    /// Policy alert-only: nothing parked.
    Noted,
}

impl AlertStatus {
    /// Lower-case word for alert lists and messages.
    pub fn label(self) -> &'static str {
        match self {
            AlertStatus::Open => "open",
            AlertStatus::Accepted => "accepted",
            AlertStatus::Dismissed => "dismissed",
            AlertStatus::Noted => "noted",
        }
    }
}

/// A suspected spider trap on one host, with the rule that would stop it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrapAlert {
    /// The alert's number: from 1, never reused in a crawl; `AcceptAlert` and `DismissAlert`
    /// name it.
    pub id: u64,
    /// The host the trap was seen on.
    pub host: HostKey,
    /// Which detector raised it.
    pub kind: TrapKind,
    /// How many URLs or pages showed the pattern; grows when the same trap is seen again.
    pub evidence_count: u64,
    /// When the trap was last seen (Unix seconds; 0 for alerts stored before this was kept).
    #[serde(default)]
    pub last_seen: u64,
    /// A few of those URLs.
    pub samples: Vec<String>,
    /// The narrowest rule that covers the trap and not the rest of the host.
    pub suggested_rule: RuleSpec,
    /// Queued (parked) URLs the suggested rule matches.
    pub matching_queued: u64,
    /// Where the decision on it stands.
    pub status: AlertStatus,
    /// What the suggested rule would block besides the trap, measured when the alert was
    /// raised (`None` for alerts stored before this was measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub impact: Option<RuleImpact>,
}

/// What a suggested rule would block: the URLs it would hold back and the already fetched
/// good pages it matches (distinct content, unlike the trap's evidence).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuleImpact {
    /// Queued URLs the rule matches (left queued under policy alert-only).
    pub queued: u64,
    /// URLs parked under the rule.
    pub parked: u64,
    /// Fetched pages of the host the rule matches whose content is distinct from the trap's.
    pub good_fetched: u64,
    /// A few of those pages.
    pub good_examples: Vec<String>,
    /// The scan stopped at its bound: the counts are lower bounds.
    pub sampled: bool,
}

impl RuleImpact {
    /// `would block N queued, M parked; K fetched good pages match`, and what that means.
    pub fn summary(&self) -> String {
        let bound = if self.sampled { "≥ " } else { "" };
        let mut text = format!(
            "would block {bound}{} queued, {bound}{} parked; {bound}{} fetched good pages match",
            self.queued, self.parked, self.good_fetched
        );
        if self.good_fetched > 0 {
            text.push_str(
                " (no narrower rule avoids them: review before accepting; never auto-applied)",
            );
        }
        text
    }
}

/// What the crawl has done, over all its runs (stored at checkpoints; a recrawl pass starts
/// from zero).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Counters {
    /// URLs answered over HTTP and recorded, any status (3xx and 304 included; 5xx and 429
    /// answers that are retried are not). `max_pages` counts these.
    pub pages_fetched: u64,
    /// Body bytes of those answers, after content decoding.
    pub bytes: u64,
    /// URLs recorded as failed: transport errors (connect, timeout and reset after their
    /// attempts, the others at once), redirects past `fetch.max_redirects`, stored URLs that no
    /// longer parse.
    pub errors: u64,
    /// `errors` by kind (`timeout`, `connect`, `too-many-redirects`, …): one per URL, however
    /// many attempts it took.
    #[serde(default)]
    pub errors_by_kind: std::collections::BTreeMap<String, u64>,
    /// HTML pages whose body is identical (SHA-1) to a page stored earlier; their links are not
    /// followed.
    pub duplicates: u64,
    /// URLs robots.txt disallowed when their turn came, and queued URLs of hosts whose
    /// robots.txt forbids the whole site.
    pub robots_denied: u64,
    /// URLs operator rules refused: discovered links, and queued or parked URLs removed by a
    /// new rule or an accepted alert.
    pub blocked_by_rules: u64,
    /// Discovered links outside the scope filter (scheme, length, scope, denied extension) or
    /// deeper than `max_depth`; counted per link found.
    pub filtered: u64,
    /// 3xx answers with a usable Location, those past `fetch.max_redirects` included.
    pub redirects: u64,
    /// 304 answers to a recrawl pass's conditional requests: pages unchanged since their last
    /// fetch.
    pub not_modified: u64,
    /// Of the errors: URLs never connected to because their address is private (loopback,
    /// RFC 1918, link-local, metadata…) and neither a seed nor `--allow-private` allows it.
    #[serde(default)]
    pub refused_private: u64,
    /// Links past a page's caps (`scope.max_links_per_page`,
    /// `scope.max_link_bytes_per_page`), not followed; per occurrence.
    #[serde(default)]
    pub links_cut: u64,
    /// Pages that had links cut.
    #[serde(default)]
    pub pages_cut: u64,
    /// Pages whose body was cut at `fetch.max_body` (kept up to it).
    #[serde(default)]
    pub bodies_cut: u64,
    /// Recorded URLs by status class (summing to `pages_fetched`) and those recorded as
    /// transport errors: the sum of every host's `HostView::status`.
    #[serde(default)]
    pub responses: StatusMix,
    /// Resources and external URLs answered to a check (HEAD) and recorded
    /// (fetched resources are `resources_fetched`);
    /// not in `pages_fetched`, so `max_pages` counts pages only.
    #[serde(default)]
    pub checked: u64,
    /// Resources fetched and archived (`--resources fetch`) and recorded; not
    /// in `pages_fetched` nor `checked`.
    #[serde(default)]
    pub resources_fetched: u64,
    /// Body bytes of those, after content decoding (not in `bytes`).
    #[serde(default)]
    pub resource_bytes: u64,
    /// Resources queued from fetched stylesheets' `url()`s, against the
    /// crawl's cap on them.
    #[serde(default)]
    pub stylesheet_resources: u64,
    /// Resource references past a page's (or a stylesheet's) cap
    /// (`checks.max_resources_per_page`), not checked.
    #[serde(default)]
    pub resources_cut: u64,
    /// External URLs queued for a check, against `checks.max_external`.
    #[serde(default)]
    pub external_queued: u64,
    /// WARC revisit records written: 304s, and payloads archived before.
    #[serde(default)]
    pub revisits: u64,
    /// Body bytes those revisits did not store again.
    #[serde(default)]
    pub revisit_bytes_saved: u64,
}

impl Counters {
    /// A URL recorded as failed, with its kind.
    pub fn count_error(&mut self, kind: &str) {
        self.errors += 1;
        match self.errors_by_kind.get_mut(kind) {
            Some(n) => *n += 1,
            None => {
                self.errors_by_kind.insert(kind.to_string(), 1);
            }
        }
    }
}

/// Where a viewer's snapshot's `hosts` sit in the whole sorted, filtered list.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct WindowInfo {
    /// The row of `hosts[0]`.
    pub first: usize,
    /// Hosts that pass the filter: the table's length.
    pub matching: usize,
    /// Hosts in the engine's list before the filter.
    pub listed: usize,
    /// Every listed host the operator paused, by key (`status` names them).
    pub paused: Vec<HostKey>,
    /// The window this snapshot was cut to, as the viewer asked it.
    pub asked: HostWindow,
}

/// The engine's whole state as the TUI and the headless printer show it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    /// Where the crawl is in its life.
    pub state: CrawlState,
    /// Wall-clock time the crawl has run, over all its runs (pauses included; a recrawl pass
    /// starts from zero).
    pub elapsed: Duration,
    /// What the crawl has done so far.
    pub counters: Counters,
    /// Pages per second over the last few seconds.
    pub pages_per_sec: f64,
    /// Body bytes per second over the last few seconds.
    pub bytes_per_sec: f64,
    /// URLs queued, not in flight and not parked.
    pub frontier_size: u64,
    /// Requests out now, pages and robots.txt alike (`global_concurrency` caps them).
    pub in_flight: u32,
    /// Queued URLs per priority level (index 0 = highest).
    pub front_queues: [u64; PRIORITY_LEVELS],
    /// Hosts that may be fetched now.
    pub hosts_ready: u32,
    /// Hosts waiting for their politeness delay or at their in-flight limit.
    pub hosts_waiting: u32,
    /// Hosts the operator paused.
    pub hosts_paused: u32,
    /// Hosts held by an open circuit breaker.
    pub hosts_breaker_open: u32,
    /// Hosts held until their robots.txt is settled.
    pub hosts_robots_pending: u32,
    /// Hosts the engine holds in memory (idle ones leave past 20 000); `hosts` lists at most
    /// 500 of them.
    pub hosts_total: u32,
    /// Per-host views, busiest first; capped for very wide crawls. Over the
    /// control socket: only the rows of the viewer's window (see `window`).
    pub hosts: Vec<HostView>,
    /// Set when `hosts` is one viewer's window of the list, not all of it.
    #[serde(default)]
    pub window: Option<WindowInfo>,
    /// The host whose detail the viewer's window names, in full.
    #[serde(default)]
    pub detail: Option<HostView>,
    /// Operator rules in the order they are added (the first match wins).
    pub rules: Vec<RuleView>,
    /// Every trap alert of the crawl, oldest first, decided ones included.
    pub alerts: Vec<TrapAlert>,
    /// URLs parked by open trap alerts, all hosts.
    pub quarantined: u64,
    /// Events that could not be delivered because the receiver was full.
    pub dropped_events: u64,
    /// The crawl's data directory, as given at start.
    pub data_dir: String,
    /// The product token robots.txt groups, meta robots and X-Robots-Tag are matched
    /// against (`crawldeck`, or the one the User-Agent names).
    pub product_token: String,
    /// The User-Agent header every request is sent with.
    pub user_agent: String,
    /// Default delay between two requests to a host: `politeness.min_delay` until the operator
    /// sets another.
    pub global_delay: Duration,
    /// Requests in flight at most across the crawl: crawl.toml's `concurrency` until the
    /// operator changes it.
    pub global_concurrency: usize,
    /// Cap on page requests started per second across the crawl; `None`: no cap.
    pub global_rate: Option<f64>,
    /// Why the crawl ended, once `state == Done`.
    pub finish_reason: Option<String>,
    /// The crawl was stopped (operator, signal, storage fault) rather than
    /// ending because its work was done.
    #[serde(default)]
    pub stopped: bool,
    /// A write failed (what, where, and the error): the crawl is paused until
    /// the operator resumes it (headless: it stopped). Cleared by resuming.
    pub fault: Option<String>,
    /// Set when the snapshot merges the workers of a shared crawl.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<super::cluster_view::ClusterView>,
    /// The shared frontier's server is out of reach: why, and when the crawl
    /// tries again (`Redis at URL: connection refused; retrying in 4 s`). The
    /// crawl is paused meanwhile and resumes by itself.
    #[serde(default)]
    pub outage: Option<String>,
    /// The names of the custom extractions in force (`[[extract]]`,
    /// `:extract`), in the order they were added: the Pages view's columns.
    #[serde(default)]
    pub extractions: Vec<String>,
}

/// How serious a log line is; front ends colour by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Level {
    /// Progress worth a line (sitemaps found, draining).
    Info,
    /// Something the operator may want to act on: trap alerts, postponed robots.txt, given-up
    /// hosts.
    Warn,
    /// A failure: storage errors, failed checkpoints, WARC writes.
    Error,
}

/// Something that happened, on the bounded event channel; lost (and counted in
/// `Snapshot::dropped_events`) when the receiver lags.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum EngineEvent {
    /// The answer to an operator command.
    CommandDone(CommandResult),
    /// A page was fetched (or failed); the TUI keeps a short list for the host view.
    Fetched {
        /// The URL's host key.
        host: HostKey,
        /// The URL requested.
        url: String,
        /// HTTP status; `None` when no answer came.
        status: Option<u16>,
        /// Time to the full body, or to the error.
        latency: Duration,
        /// Body bytes after content decoding; 0 on error.
        bytes: u64,
        /// The transport error's message; `None` when an answer came.
        error: Option<String>,
    },
    /// A host's circuit breaker changed phase.
    BreakerChanged {
        /// The host whose breaker it is.
        host: HostKey,
        /// Phase before.
        from: BreakerPhase,
        /// Phase now.
        to: BreakerPhase,
        /// Why, in words ("5 consecutive failures, last: …", "probe succeeded", "reset by
        /// operator").
        reason: String,
    },
    /// A trap detector raised a new alert (`Noted` under policy `alert-only`, else `Open`).
    Alert(TrapAlert),
    /// A trap alert was accepted or dismissed.
    AlertChanged {
        /// `TrapAlert::id` of the alert.
        alert_id: u64,
        /// Its new status.
        status: AlertStatus,
    },
    /// Noteworthy happenings for the log pane (robots answers, give-ups, …).
    Log {
        /// How serious it is.
        level: Level,
        /// The line's text.
        message: String,
    },
    /// The crawl moved to a new state.
    StateChanged(CrawlState),
    /// A viewer's connection to the engine ended, its last event: the crawl
    /// finished (`finished`), or the engine went away. Made by the viewer's
    /// side of the control socket; an engine in-process just closes its stream.
    Ended {
        /// The crawl ended as it should (not an error).
        finished: bool,
        /// Why, in words.
        reason: String,
    },
}
