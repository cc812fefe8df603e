//! The scheduler: one loop that owns the frontier and all per-host state, hands
//! out fetches when a host is ready, and takes results back. It runs on its own
//! thread so sled calls never stall the runtime's workers.

mod boot;
mod commands;
mod health;
mod links;
mod results;
mod snapshot;

pub(super) use boot::build;

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;
use url::Url;

use crate::engine::config::CrawlConfig;
use crate::engine::control::{Command, CommandId, CommandResult, HostKey};
use crate::engine::cpu_pool::CpuPool;
use crate::engine::dedup::{BloomFilter, RecentSeen};
use crate::engine::extract::ExtractOptions;
use crate::engine::fetch::Fetcher;
use crate::engine::frontier::{Frontier, Hold};
use crate::engine::host::{HostRecord, HostState, RobotsSlot};
use crate::engine::politeness::RateLimiter;
use crate::engine::rules::{CompiledRule, RuleSet};
use crate::engine::stats::CounterRate;
use crate::engine::store::warc::WarcWriter;
use crate::engine::store::{Store, Tree};
use crate::engine::tasks::{self, PageJob, Work};
use crate::engine::telemetry::{Counters, CrawlState, EngineEvent, Level, Snapshot, TrapAlert};
use crate::engine::traps::TrapDetector;
use crate::engine::url_norm::UrlFilter;
use crate::engine::{EngineEnds, EngineError};

/// How often the snapshot is published.
const SNAPSHOT_EVERY: Duration = Duration::from_millis(250);
/// Hosts listed in one snapshot (busiest first).
pub const SNAPSHOT_HOSTS: usize = 500;
/// Attempts for a URL whose host failed (connect, timeout, reset, 5xx).
pub const MAX_ATTEMPTS: u8 = 3;
/// Recently seen URL fingerprints kept in memory (about 16 bytes each).
pub const RECENT_SEEN: usize = 1 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Timer {
    BreakerProbe,
    RobotsRetry,
}

pub struct Coordinator {
    pub cfg: CrawlConfig,
    pub data_dir: String,
    pub store: Store,
    pub frontier: Frontier,
    pub fetcher: Fetcher,
    pub filter: UrlFilter,
    pub rules: RuleSet,
    pub traps: TrapDetector,
    pub bloom: BloomFilter,
    pub recent_seen: RecentSeen,
    pub hosts: HashMap<HostKey, HostState>,
    pub alerts: BTreeMap<u64, TrapAlert>,
    /// Compiled suggested rules of open alerts: newly found URLs they match are parked.
    pub alert_rules: HashMap<u64, CompiledRule>,
    pub extract: Arc<ExtractOptions>,
    pub warc: Option<Arc<Mutex<WarcWriter>>>,
    pub cpu: CpuPool,
    pub ends: EngineEnds,
    pub work_tx: mpsc::UnboundedSender<Work>,
    pub work_rx: mpsc::UnboundedReceiver<Work>,
    /// New hosts whose robots.txt must be fetched before anything else.
    pub robots_wanted: Vec<HostKey>,
    pub timers: BinaryHeap<Reverse<(Instant, Timer, HostKey)>>,
    /// Attempts so far of URLs that failed transiently (by URL fingerprint).
    pub attempts: HashMap<u64, u8>,
    pub counters: Counters,
    /// Commits since the last flush.
    pub unsynced: bool,
    pub in_flight: usize,
    pub robots_in_flight: usize,
    pub state: CrawlState,
    pub paused: bool,
    pub draining: bool,
    pub global_delay: Duration,
    pub global_concurrency: usize,
    pub rate: RateLimiter,
    /// When the global rate cap allows the next request.
    pub rate_wake: Option<Instant>,
    pub next_rule_id: u64,
    pub next_alert_id: u64,
    pub started: Instant,
    /// Elapsed time of earlier runs of this crawl.
    pub elapsed_before: Duration,
    pub pages_rate: CounterRate,
    pub bytes_rate: CounterRate,
    pub dropped_events: u64,
    pub finish_reason: Option<String>,
    /// With a TUI an operator can still decide on quarantined URLs, so the
    /// crawl waits instead of ending.
    pub wait_for_operator: bool,
    /// The recrawl pass under way (0: the first crawl); from pass 1 on,
    /// fetches carry the validators of the page's last fetch.
    pub recrawl_pass: u32,
}

impl Coordinator {
    pub fn emit(&mut self, event: EngineEvent) {
        if self.ends.events.try_send(event).is_err() {
            self.dropped_events += 1;
        }
    }

    pub fn log(&mut self, level: Level, message: String) {
        match level {
            Level::Info => tracing::info!("{message}"),
            Level::Warn => tracing::warn!("{message}"),
            Level::Error => tracing::error!("{message}"),
        }
        self.emit(EngineEvent::Log { level, message });
    }

    fn answer(&mut self, id: CommandId, outcome: Result<String, String>) {
        match &outcome {
            Ok(m) => tracing::info!(command = id.0, "{m}"),
            Err(m) => tracing::warn!(command = id.0, "refused: {m}"),
        }
        self.emit(EngineEvent::CommandDone(CommandResult { id, outcome }));
    }

    pub fn set_state(&mut self, state: CrawlState) {
        if self.state != state {
            self.state = state;
            self.emit(EngineEvent::StateChanged(state));
        }
    }

    /// The scheduler's state of a host, created (or restored) on first sight.
    pub fn host_mut(&mut self, host: &str) -> &mut HostState {
        if !self.hosts.contains_key(host) {
            let record: Option<HostRecord> =
                self.store.get(Tree::Hosts, host.as_bytes()).ok().flatten();
            let state = match record {
                Some(r) => HostState::restore(host.to_string(), r, Instant::now()),
                None => HostState::new(host.to_string()),
            };
            self.hosts.insert(host.to_string(), state);
        }
        self.hosts.get_mut(host).expect("inserted above")
    }

    /// Hosts the frontier (re)created start held for robots.txt; apply what the
    /// scheduler knows of them: settled robots, pauses, overrides, open breakers.
    pub fn adopt_new_hosts(&mut self, now: Instant) {
        for key in self.frontier.take_new_hosts() {
            let head = self.frontier.host_head(&key, 1);
            let per_host = self.cfg.politeness.clone();
            let host = self.host_mut(&key);
            if host.origin.is_none() {
                host.origin = head.first().and_then(|u| Url::parse(u).ok()).map(|mut u| {
                    u.set_path("/");
                    u.set_query(None);
                    u.set_fragment(None);
                    u
                });
            }
            let settled = host.robots.is_settled(now);
            let paused = host.paused;
            let breaker_held = host.breaker_held;
            let finished = host.finished;
            let max = host.politeness.max_in_flight(&per_host);
            // Explicit both ways: hosts restored by `Frontier::open` predate the initial holds.
            self.frontier.set_hold(&key, Hold::Robots, !settled);
            if !settled {
                self.robots_wanted.push(key.clone());
            }
            if paused {
                self.frontier.set_hold(&key, Hold::Paused, true);
            }
            if breaker_held {
                self.frontier.set_hold(&key, Hold::Breaker, true);
            }
            if max != per_host.per_host {
                self.frontier.set_max_in_flight(&key, max);
            }
            if finished {
                self.frontier.set_hold(&key, Hold::Finished, true);
            }
        }
    }

    pub fn save_host(&mut self, host: &str) {
        if let Some(state) = self.hosts.get(host) {
            let record = state.record(Instant::now());
            if let Err(e) = self.store.put(Tree::Hosts, host.as_bytes(), &record) {
                tracing::error!("saving host {host}: {e}");
            }
        }
    }

    /// The main loop; returns the final snapshot.
    pub async fn run(
        mut self,
        shutdown: impl std::future::Future<Output = ()> + Send,
    ) -> Result<Snapshot, EngineError> {
        tokio::pin!(shutdown);
        let mut shutdown_seen = false;
        let mut tick = tokio::time::interval(SNAPSHOT_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        self.set_state(if self.paused {
            CrawlState::Paused
        } else {
            CrawlState::Running
        });
        loop {
            let now = Instant::now();
            self.fire_timers(now);
            self.dispatch(now);
            if let Some(reason) = self.finished() {
                if self.in_flight == 0 && self.robots_in_flight == 0 {
                    self.finish_reason.get_or_insert(reason);
                    break;
                }
                self.draining = true;
            }
            let wake = self.next_wakeup(now);
            tokio::select! {
                biased;
                _ = &mut shutdown, if !shutdown_seen => {
                    shutdown_seen = true;
                    self.begin_drain("shutdown requested (signal)");
                }
                Some((id, command)) = self.ends.commands.recv() => {
                    let outcome = self.handle_command(command);
                    self.answer(id, outcome);
                    // Operator actions are durable at once.
                    self.unsynced = true;
                    self.sync();
                }
                Some(work) = self.work_rx.recv() => {
                    self.handle_work(work);
                    // Group commit: everything that finished meanwhile, then one flush.
                    while let Ok(work) = self.work_rx.try_recv() {
                        self.handle_work(work);
                    }
                    self.sync();
                }
                _ = tick.tick() => {
                    self.publish();
                }
                _ = sleep_until_opt(wake) => {}
            }
        }
        self.set_state(CrawlState::Done);
        self.checkpoint();
        let snapshot = self.publish();
        tracing::info!(
            "crawl ended: {} ({} pages)",
            self.finish_reason.as_deref().unwrap_or("?"),
            self.counters.pages_fetched
        );
        Ok(snapshot)
    }

    pub fn begin_drain(&mut self, reason: &str) {
        if !self.draining {
            self.draining = true;
            self.finish_reason = Some(reason.to_string());
            self.set_state(CrawlState::Draining);
            self.log(Level::Info, format!("draining: {reason}"));
        }
    }

    /// Why the crawl is over, if it is (in-flight work may still be finishing).
    fn finished(&self) -> Option<String> {
        if self.draining {
            return Some(
                self.finish_reason
                    .clone()
                    .unwrap_or_else(|| "stopped".into()),
            );
        }
        if self.cfg.max_pages > 0 && self.counters.pages_fetched >= self.cfg.max_pages {
            return Some(format!("page limit reached ({})", self.cfg.max_pages));
        }
        let idle = self.in_flight == 0 && self.robots_in_flight == 0;
        if !idle || self.paused || !self.frontier.is_empty() || !self.timers.is_empty() {
            return None;
        }
        let open_alerts = self
            .alerts
            .values()
            .filter(|a| a.status == crate::engine::telemetry::AlertStatus::Open)
            .count();
        if open_alerts > 0 {
            if self.wait_for_operator {
                return None;
            }
            return Some(format!(
                "only quarantined URLs remain ({open_alerts} open trap alert(s) to decide)"
            ));
        }
        Some("frontier empty".into())
    }

    /// When the loop must wake up by itself. A ready host is no reason while
    /// dispatch cannot start anything: that would spin until a fetch ends.
    fn next_wakeup(&self, now: Instant) -> Option<Instant> {
        let saturated = self.in_flight + self.robots_in_flight >= self.global_concurrency
            || (self.cfg.max_pages > 0
                && self.counters.pages_fetched + self.in_flight as u64 >= self.cfg.max_pages);
        let rate_limited = self.rate_wake.is_some_and(|at| at > now);
        let frontier = if self.paused || self.draining || saturated || rate_limited {
            None
        } else {
            self.frontier.next_wakeup()
        };
        let timer = self.timers.peek().map(|Reverse((at, _, _))| *at);
        let rate = self.rate_wake;
        [frontier, timer, rate].into_iter().flatten().min()
    }

    fn fire_timers(&mut self, now: Instant) {
        while let Some(Reverse((at, _, _))) = self.timers.peek() {
            if *at > now {
                break;
            }
            let Reverse((_, timer, host)) = self.timers.pop().expect("peeked");
            match timer {
                Timer::BreakerProbe => self.breaker_probe_due(&host, now),
                Timer::RobotsRetry => self.start_robots(&host, now),
            }
        }
    }

    /// Starts every fetch that politeness, robots, breakers and limits allow.
    fn dispatch(&mut self, now: Instant) {
        self.adopt_new_hosts(now);
        if self.paused || self.draining {
            return;
        }
        while self.in_flight + self.robots_in_flight < self.global_concurrency {
            let Some(host) = self.robots_wanted.pop() else {
                break;
            };
            self.start_robots(&host, now);
        }
        while self.in_flight + self.robots_in_flight < self.global_concurrency {
            if self.cfg.max_pages > 0
                && self.counters.pages_fetched + self.in_flight as u64 >= self.cfg.max_pages
            {
                return;
            }
            if self.rate_wake.is_some_and(|at| at > now) {
                return;
            }
            let Some(lease) = self.frontier.next_ready(now) else {
                return;
            };
            if let Err(at) = self.rate.try_acquire(now) {
                self.frontier.release(lease);
                self.rate_wake = Some(at);
                return;
            }
            self.rate_wake = None;
            let host_key = lease.entry.host.clone();
            let Ok(url) = Url::parse(&lease.entry.url) else {
                self.record_unfetchable(lease, "stored URL no longer parses");
                continue;
            };
            let base_breaker = self.cfg.breaker.clone();
            let host = self.host_mut(&host_key);
            let breaker_cfg = host.breaker_config(&base_breaker);
            if !host.robots.is_settled(now) {
                // Expired (or never fetched): settle robots.txt again before any page.
                self.frontier.release(lease);
                self.frontier.set_hold(&host_key, Hold::Robots, true);
                self.start_robots(&host_key, now);
                continue;
            }
            if let RobotsSlot::Rules { rules, .. } = &host.robots {
                if !rules.allowed(&url) {
                    self.record_robots_denied(lease);
                    continue;
                }
            }
            let phase = host.breaker.phase();
            if !host.breaker.allow_request(now, &breaker_cfg) {
                self.frontier.release(lease);
                self.hold_for_breaker(&host_key, now);
                continue;
            }
            if phase != host.breaker.phase() {
                let to = host.breaker.phase();
                self.breaker_transition(
                    &host_key,
                    crate::engine::breaker::Transition {
                        from: phase,
                        to,
                        reason: "cooldown over: one probe request".into(),
                    },
                    now,
                );
            }
            let host = self.hosts.get_mut(&host_key).expect("host known");
            host.in_flight += 1;
            host.requests.record(now);
            self.in_flight += 1;
            let validators = self.validators_for(&lease.entry.url);
            let job = PageJob {
                fetcher: self.fetcher.clone(),
                lease,
                url,
                validators,
                max_body: self.cfg.fetch.max_body,
                extract: self.extract.clone(),
                warc: self.warc.clone(),
                cpu: self.cpu.clone(),
                done: self.work_tx.clone(),
            };
            tokio::spawn(tasks::run_page(job));
        }
    }

    /// Sends the robots.txt request for a host unless one is already out.
    pub fn start_robots(&mut self, host_key: &str, _now: Instant) {
        let Some(host) = self.hosts.get_mut(host_key) else {
            return;
        };
        match &mut host.robots {
            RobotsSlot::Unknown { fetching } | RobotsSlot::Postponed { fetching, .. } => {
                if *fetching {
                    return;
                }
                *fetching = true;
            }
            RobotsSlot::Rules { .. } | RobotsSlot::AllowAll { .. } => {
                host.robots = RobotsSlot::Unknown { fetching: true };
            }
            RobotsSlot::DisallowAll | RobotsSlot::GaveUp => return,
        }
        let Some(origin) = host.origin.clone() else {
            tracing::error!("no origin known for {host_key}; robots.txt cannot be fetched");
            return;
        };
        self.robots_in_flight += 1;
        tokio::spawn(tasks::run_robots(
            self.fetcher.clone(),
            host_key.to_string(),
            origin,
            self.cfg.robots.clone(),
            self.cfg.identity.product_token.clone(),
            self.work_tx.clone(),
        ));
    }

    pub fn schedule(&mut self, at: Instant, timer: Timer, host: &str) {
        self.timers.push(Reverse((at, timer, host.to_string())));
    }

    /// Makes completed pages durable, so a `kill -9` re-fetches only what was
    /// in flight.
    pub fn sync(&mut self) {
        if std::mem::take(&mut self.unsynced) {
            if let Err(e) = self.store.flush() {
                self.log(Level::Error, format!("storage flush failed, stopping: {e}"));
                self.begin_drain("storage error");
            }
        }
    }

    pub fn checkpoint(&mut self) {
        if let Some(warc) = &self.warc {
            let mut w = warc.lock().unwrap_or_else(|p| p.into_inner());
            if let Err(e) = w.flush() {
                tracing::error!("flushing WARC: {e}");
            }
        }
        self::commands::save_rule_hits(self);
        let elapsed = self.elapsed();
        let _ = self
            .store
            .put(Tree::Meta, b"elapsed_ms", &(elapsed.as_millis() as u64));
        let _ = self.store.put(Tree::Meta, b"counters", &self.counters);
        if let Err(e) = self.store.flush() {
            tracing::error!("checkpoint failed: {e}");
        }
    }

    pub fn elapsed(&self) -> Duration {
        self.elapsed_before + self.started.elapsed()
    }

    fn handle_command(&mut self, command: Command) -> Result<String, String> {
        self::commands::handle(self, command)
    }
}

async fn sleep_until_opt(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{EngineHandle, EngineOptions};

    #[tokio::test]
    async fn a_saturated_scheduler_waits_for_a_fetch_instead_of_spinning() {
        let dir = tempfile::tempdir().expect("temp dir");
        let cfg = CrawlConfig {
            seeds: vec!["http://127.0.0.1:9/".into()],
            concurrency: 4,
            ..CrawlConfig::default()
        };
        let (_handle, ends) = EngineHandle::channel();
        let mut scheduler = super::boot::build(cfg, dir.path(), ends, EngineOptions::default())
            .expect("scheduler builds");
        let now = Instant::now();
        scheduler.adopt_new_hosts(now);
        scheduler
            .frontier
            .set_hold("127.0.0.1:9", Hold::Robots, false);
        let ready = scheduler.next_wakeup(now);
        assert!(
            ready.is_some_and(|at| at <= Instant::now()),
            "a ready host wakes the loop now"
        );

        scheduler.in_flight = scheduler.global_concurrency;
        assert_eq!(scheduler.next_wakeup(now), None, "nothing can start: sleep");

        scheduler.in_flight = 0;
        scheduler.rate_wake = Some(now + Duration::from_millis(40));
        assert_eq!(
            scheduler.next_wakeup(now),
            Some(now + Duration::from_millis(40)),
            "rate-limited: wake when the rate allows"
        );
    }
}
