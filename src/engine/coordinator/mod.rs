//! The coordinator: the crawl loop over the engine's parts. It waits on
//! operator commands, fetch results, timers and shutdown, and moves work
//! between the parts, which own their state (see docs/ARCHITECTURE.md). It
//! runs on its own thread so store calls never stall the runtime's workers.

mod admitted;
mod boot;
mod checks;
mod collateral;
mod commands;
mod dispatch;
mod extractions;
mod group_commit;
mod health;
mod journal;
mod links;
mod outage;
mod preview;
mod preview_job;
mod probe;
mod results;
mod shared_alerts;
mod shared_breakers;
mod sitemap;
mod snapshot;
mod sweep;
mod triage;
mod unblock;

pub(super) use boot::build;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;

use super::alerts::Alerts;
use super::config::CrawlConfig;
use super::control::{Command, CommandId, HostKey};
use super::frontier::{FrontierStore, Hold, Lease};
use super::hosts::HostTable;
use super::outbox::Outbox;
use super::probes::SoftProbes;
use super::rules::OperatorRules;
use super::sitemaps::SitemapFiles;
use super::slots::FetchSlots;
use super::stats::CrawlStats;
use super::store::{CrawlBatch, Store, StoreError, INDEX_DIR};
use super::tasks::{Work, Workers};
use super::telemetry::{CrawlState, HostActivity, Level, Snapshot};
use super::timers::{Timer, Timers};
use super::traps::TrapDetector;
use super::url_norm::UrlFilter;
use super::EngineError;

/// How often the snapshot is published.
const SNAPSHOT_EVERY: Duration = Duration::from_millis(250);

/// Where the crawl is in its life, as the loop decides it.
struct RunState {
    state: CrawlState,
    /// The operator paused the whole crawl.
    paused: bool,
    /// No new requests; the loop ends once in-flight work is back.
    draining: bool,
    /// Asked to stop (operator, signal, storage fault) before its work was done.
    stopped: bool,
    finish_reason: Option<String>,
    /// A write failed (disk full, permissions, I/O): the crawl is paused (or,
    /// headless, stopping) until the operator resumes it.
    fault: Option<String>,
    /// With a TUI an operator can still decide on quarantined URLs and act on
    /// a storage fault, so the crawl waits instead of ending.
    wait_for_operator: bool,
    /// The recrawl pass under way (0: the first crawl); from pass 1 on,
    /// fetches carry the validators of the page's last fetch.
    recrawl_pass: u32,
    /// The shared frontier's server is out of reach: paused until it answers.
    outage: Option<outage::Outage>,
}

/// The crawl loop and the parts it coordinates.
pub(crate) struct Coordinator {
    cfg: CrawlConfig,
    data_dir: String,
    store: Store,
    frontier: Box<dyn FrontierStore>,
    filter: UrlFilter,
    rules: OperatorRules,
    traps: TrapDetector,
    alerts: Alerts,
    probes: SoftProbes,
    /// Each host's sitemap files, and which are pending.
    sitemaps: SitemapFiles,
    hosts: HostTable,
    workers: Workers,
    results: mpsc::UnboundedReceiver<Work>,
    commands: mpsc::UnboundedReceiver<(CommandId, Command)>,
    outbox: Outbox,
    /// New hosts whose robots.txt must be fetched before anything else.
    robots_wanted: Vec<HostKey>,
    timers: Timers,
    retries: results::Retries,
    /// External URLs queued per host in this run (`checks.max_external_per_host`).
    external_hosts: checks::ExternalCounts,
    stats: CrawlStats,
    slots: FetchSlots,
    run: RunState,
    /// Pages finished but not yet written, and when they must be.
    group_commit: group_commit::GroupCommit,
    /// The crawl-wide settings at start and where each came from.
    settings_report: Vec<String>,
    /// Removed rules whose blocked URLs are coming back.
    returns: unblock::Returns,
    /// The rule preview running off the loop, and one waiting.
    previews: preview_job::Previews,
    /// Alert decisions and rules for every host sweeping the frontier.
    sweeps: sweep::Sweeps,
    /// Removals and sweeps under way, as stored to resume after a crash.
    journal: journal::Journal,
}

impl Coordinator {
    /// The main loop; returns the final snapshot.
    pub async fn run(
        mut self,
        shutdown: impl std::future::Future<Output = ()> + Send,
    ) -> Result<Snapshot, EngineError> {
        tokio::pin!(shutdown);
        let mut shutdown_seen = false;
        let mut tick = tokio::time::interval(SNAPSHOT_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        self.start().await;
        loop {
            let now = Instant::now();
            if self.step(now) {
                break;
            }
            let wake = self.next_wakeup(now);
            tokio::select! {
                biased;
                _ = &mut shutdown, if !shutdown_seen => {
                    shutdown_seen = true;
                    self.begin_drain("shutdown requested (signal)");
                }
                Some((id, command)) = self.commands.recv() => {
                    // The command sees every finished page's links queued;
                    // the one sync after it makes both durable (one flush).
                    self.write_group();
                    if let Some(outcome) = commands::handle(&mut self, id, command) {
                        self.outbox.answer(id, outcome);
                    }
                    self.sync();
                }
                Some(work) = self.results.recv() => {
                    self.handle_work(work);
                    // Everything that finished meanwhile; flushed as a group (group_commit.rs).
                    while let Ok(work) = self.results.try_recv() {
                        self.handle_work(work);
                    }
                }
                Some(walked) = self.returns.recv() => {
                    self.apply_walked(walked);
                    self.sync();
                }
                Some(finished) = self.previews.recv() => self.finish_preview(finished),
                _ = tick.tick() => {
                    self.follow_shared_alerts();
                    self.follow_shared_breakers(Instant::now());
                    self.note_repeated_traps();
                    self.refresh_an_impact(Instant::now());
                    self.publish();
                    self.evict_idle_hosts();
                }
                _ = sleep_until_opt(wake) => {}
            }
        }
        Ok(self.end().await)
    }

    /// The loop's work between two waits: timers, a sweep's next step, new
    /// fetches, a due commit. True once the crawl is over and nothing is
    /// in flight.
    fn step(&mut self, now: Instant) -> bool {
        self.fire_timers(now);
        self.watch_frontier(now);
        if self.run.outage.is_none() {
            self.sweep_step();
        }
        self.dispatch(now);
        // After the fetches it could start, so that "nothing in flight" means
        // no page can join the group.
        if self.group_commit.is_due(now, self.slots.total()) {
            self.sync();
            // Its links, and the hosts its leases held, may be ready now.
            self.dispatch(now);
        }
        if let Some(reason) = self.finished() {
            if self.slots.total() == 0 {
                self.run.finish_reason.get_or_insert(reason);
                return true;
            }
            self.run.draining = true;
        }
        false
    }

    /// Logs the settings, resolves the seeds' names and sets the first state.
    async fn start(&mut self) {
        for line in self.settings_report.clone() {
            self.outbox.log(Level::Info, format!("setting: {line}"));
        }
        if !self.workers.address_guard().pending_seeds().is_empty() {
            // Before any fetch: a link to a seed's network must not be refused.
            self.workers.resolve_seeds().await;
            let line = self.workers.address_guard().describe();
            self.outbox
                .log(Level::Info, format!("seeds resolved: {line}"));
        }
        self.set_state(if self.run.paused {
            CrawlState::Paused
        } else {
            CrawlState::Running
        });
        // A run that resumes a crawl left paused makes it a running one.
        if let Err(e) = self.save_settings() {
            self.storage_failed("saving the crawl-wide settings", e);
        }
    }

    /// Settles what is under way, checkpoints, and returns the final snapshot.
    async fn end(&mut self) -> Snapshot {
        self.end_removals();
        self.end_sweeps();
        self.end_previews().await;
        self.set_state(CrawlState::Done);
        self.checkpoint();
        let snapshot = self.publish();
        tracing::info!(
            "crawl ended: {} ({} pages)",
            self.run.finish_reason.as_deref().unwrap_or("?"),
            self.stats.counters().pages_fetched
        );
        Arc::unwrap_or_clone(snapshot)
    }

    /// The store, for readers beside the crawl loop (`engine::reads`).
    pub(super) fn store(&self) -> &Store {
        &self.store
    }

    /// The crawl-wide settings at start, each with where it came from.
    pub(super) fn settings_report(&self) -> Vec<String> {
        self.settings_report.clone()
    }

    fn set_state(&mut self, state: CrawlState) {
        if self.run.state != state {
            self.run.state = state;
            self.outbox
                .emit(super::telemetry::EngineEvent::StateChanged(state));
        }
    }

    /// Stops handing out work; the loop ends once in-flight work is back.
    fn begin_drain(&mut self, reason: &str) {
        if !self.run.draining {
            self.run.draining = true;
            self.run.stopped = true;
            self.run.finish_reason = Some(reason.to_string());
            self.set_state(CrawlState::Draining);
            self.outbox.log(Level::Info, format!("draining: {reason}"));
        }
    }

    /// A write the crawl's consistency depends on failed: the work it was
    /// for stays queued, and the crawl pauses until the operator has freed
    /// space and resumes it (headless: stops, and the run fails).
    /// A shared frontier out of reach is no storage fault: the crawl waits
    /// for it (outage.rs).
    fn storage_failed(&mut self, what: &str, e: StoreError) {
        if e.is_unreachable() {
            return self.frontier_unreachable(e);
        }
        let db = std::path::Path::new(&self.data_dir).join(INDEX_DIR);
        self.storage_fault(format!("{what} in {}: {e}", db.display()));
    }

    /// See [`Coordinator::storage_failed`]; `message` names the path and the error.
    fn storage_fault(&mut self, message: String) {
        if self.run.fault.is_some() {
            // The first failure is the one to report; the rest follow from it.
            tracing::warn!("storage fault (again): {message}");
            return;
        }
        self.run.fault = Some(message.clone());
        if self.run.wait_for_operator {
            self.outbox.log(
                Level::Error,
                format!("storage fault, crawl paused: {message}; free space, then resume (p)"),
            );
            self.run.paused = true;
            self.set_state(CrawlState::Paused);
        } else {
            self.outbox
                .log(Level::Error, format!("storage fault, stopping: {message}"));
            self.begin_drain(&format!("storage fault: {message}"));
        }
    }

    /// Why the crawl is over, if it is (in-flight work may still be finishing).
    fn finished(&mut self) -> Option<String> {
        if self.run.draining {
            return Some(
                self.run
                    .finish_reason
                    .clone()
                    .unwrap_or_else(|| "stopped".into()),
            );
        }
        if self.run.outage.is_some() {
            // What the frontier holds is not written yet: it may add work.
            return None;
        }
        let pages = self.stats.counters().pages_fetched;
        if self.cfg.max_pages > 0 && pages >= self.cfg.max_pages {
            return Some(format!("page limit reached ({})", self.cfg.max_pages));
        }
        let idle = self.slots.total() == 0
            && self.group_commit.is_empty()
            && self.returns.is_idle()
            && self.sweeps.is_idle();
        // Timers wait on hosts (robots.txt retries, breaker probes): with
        // nothing queued there is nothing left for them to let through.
        if !idle || self.run.paused {
            return None;
        }
        match self.frontier.counts() {
            Ok(counts) if counts.queued == 0 => {}
            Ok(_) => return None,
            Err(e) => {
                self.storage_failed("counting the frontier", e);
                return None;
            }
        }
        let open_alerts = self.alerts.open_count();
        if open_alerts > 0 {
            if self.run.wait_for_operator {
                return None;
            }
            return Some(format!(
                "only quarantined URLs remain ({open_alerts} open trap alert(s) to decide)"
            ));
        }
        Some("frontier empty".into())
    }

    /// The page limit leaves no room for another request.
    fn page_budget_spent(&self) -> bool {
        self.cfg.max_pages > 0
            && self.stats.counters().pages_fetched + self.slots.pages() as u64 >= self.cfg.max_pages
    }

    /// When the loop must wake up by itself. A ready host is no reason while
    /// dispatch cannot start anything: that would spin until a fetch ends.
    fn next_wakeup(&mut self, now: Instant) -> Option<Instant> {
        let saturated = !self.slots.has_room() || self.page_budget_spent();
        let frontier = if self.run.paused
            || self.run.draining
            || self.run.outage.is_some()
            || saturated
            || self.slots.rate_limited(now)
        {
            None
        } else {
            match self.frontier.next_wakeup() {
                Ok(at) => at,
                Err(e) => {
                    self.storage_failed("asking the frontier when a host is ready", e);
                    None
                }
            }
        };
        // A sweep under way goes on at once, after what is ready (biased select);
        // not while the frontier is out of reach.
        let sweeping = (!self.sweeps.is_idle() && self.run.outage.is_none()).then_some(now);
        [
            frontier,
            sweeping,
            self.timers.next_due(),
            self.slots.rate_wake(),
            self.group_commit.next_due(),
            self.run.outage.as_ref().map(outage::Outage::retry_at),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    fn fire_timers(&mut self, now: Instant) {
        while let Some((timer, host)) = self.timers.pop_due(now) {
            match timer {
                Timer::BreakerProbe => self.breaker_probe_due(&host, now),
                Timer::RobotsRetry => self.robots_retry_due(&host, now),
            }
        }
    }

    /// Writes the finished pages' group, with the counters that count them
    /// and the hosts' figures and breaker records they changed in the same
    /// atomic write (a page budget and a breaker hold across a `kill -9`
    /// with their pages), and makes everything durable, so a `kill -9`
    /// re-fetches only what was in flight.
    fn sync(&mut self) {
        let written = match self.progress() {
            Ok(progress) => self.write_group_with(progress),
            Err(e) => {
                self.storage_failed("saving the crawl's counters", e);
                self.write_group();
                false
            }
        };
        if written {
            self.hosts.state_saved();
        }
        if let Some(e) = self.hosts.take_read_failure() {
            self.storage_failed("reading a host's stored state", e);
        }
        if let Err(e) = self.store.flush() {
            self.storage_failed("flush", e);
        }
    }

    /// The crawl's counters and the hosts' changed state, to write.
    fn progress(&self) -> Result<CrawlBatch, StoreError> {
        let mut batch = CrawlBatch::default();
        self.stats.save_into(&mut batch)?;
        self.hosts.state_to_save(&mut batch)?;
        Ok(batch)
    }

    /// Writes the finished pages' group without making it durable: only for
    /// a caller that syncs before the loop dispatches again, since a host may
    /// be handed out once its last page's lease has ended.
    fn write_group(&mut self) {
        self.write_group_with(CrawlBatch::default());
    }

    /// [`Coordinator::write_group`] in one atomic write with `with`; whether
    /// it was written.
    fn write_group_with(&mut self, with: CrawlBatch) -> bool {
        let group = self.group_commit.take();
        if group.is_empty() {
            if with.is_empty() {
                return true;
            }
            let saved = self.store.apply(with);
            return saved
                .map_err(|e| self.storage_failed("saving the crawl's counters", e))
                .is_ok();
        }
        let leases: Vec<Lease> = group.iter().map(|c| c.lease.clone()).collect();
        // The pages' records name their WARC records: those go to disk first.
        match self.workers.drain_warc() {
            Ok(()) => {
                let Err(e) = self.frontier.complete_all(group, with) else {
                    return true;
                };
                self.storage_failed("recording finished pages", e);
            }
            // The error names the WARC file.
            Err(e) => self.storage_fault(format!("recording finished pages: {e}")),
        }
        // Nothing of them was stored: their URLs stay queued.
        for lease in leases {
            self.release(lease);
        }
        false
    }

    /// Writes everything that is kept only in memory between checkpoints.
    fn checkpoint(&mut self) {
        self.sync();
        if let Err(e) = self.workers.flush_warc() {
            self.storage_fault(format!("checkpoint: {e}"));
        }
        let saved = self
            .alerts
            .save_changed()
            .and_then(|()| self.rules.save_hits())
            .and_then(|()| self.store.flush_all());
        if let Err(e) = saved {
            self.storage_failed("checkpoint", e);
        }
    }

    /// Idle hosts leave memory once the host table is over its cap.
    fn evict_idle_hosts(&mut self) {
        if self.run.outage.is_some() {
            // Whether a host is idle is in the server that is out of reach.
            return;
        }
        let candidates = self.hosts.eviction_candidates();
        if candidates.is_empty() {
            return;
        }
        let keys: Vec<&str> = candidates.iter().map(String::as_str).collect();
        let views = match self.frontier.host_views(&keys, Instant::now(), 0) {
            Ok(views) => views,
            Err(e) => {
                tracing::warn!("host eviction skipped: {e}");
                return;
            }
        };
        let idle: Vec<&str> = keys
            .iter()
            .zip(views)
            .filter(|(_, v)| v.activity == HostActivity::Idle && v.parked == 0)
            .map(|(k, _)| *k)
            .collect();
        if let Err(e) = self.hosts.evict(&idle) {
            self.storage_failed("saving idle hosts before they leave memory", e);
        }
    }

    /// Sets or clears a hold on a host in the frontier.
    fn hold(&mut self, host: &str, hold: Hold, on: bool) {
        if let Err(e) = self.frontier.set_hold(host, hold, on) {
            self.storage_failed(&format!("holding {host}"), e);
        }
    }

    /// Puts a leased URL back at its host's head.
    fn release(&mut self, lease: Lease) {
        if let Err(e) = self.frontier.release(lease) {
            self.storage_failed("releasing a URL", e);
        }
    }
}

async fn sleep_until_opt(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// A coordinator over `dir` that is not running, for tests that drive its
/// parts directly, and the handle that sees its answers.
#[cfg(test)]
pub(super) fn for_test(
    cfg: CrawlConfig,
    dir: &std::path::Path,
) -> (crate::engine::EngineHandle, Coordinator) {
    let (handle, ends) = crate::engine::EngineHandle::channel();
    let c = boot::build(cfg, dir, ends, crate::engine::EngineOptions::default())
        .expect("coordinator builds");
    (handle, c)
}

/// Settings whose one seed is a closed loopback port.
#[cfg(test)]
pub(super) fn closed_port_config() -> CrawlConfig {
    CrawlConfig {
        seeds: vec!["http://127.0.0.1:9/".into()],
        ..CrawlConfig::default()
    }
}

/// Queues `url` (a page, priority 1, depth 1) straight in the frontier.
#[cfg(test)]
fn queue_for_test(c: &mut Coordinator, url: &str) {
    let entry = super::frontier::FrontierEntry {
        priority: 1,
        url: url.into(),
        host: super::url_norm::host_key(&url::Url::parse(url).expect("a URL")),
        depth: 1,
        redirects: 0,
        kind: super::store::UrlKind::Page,
    };
    c.frontier.push(vec![entry]).expect("queued");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_snapshot_sends_the_page_events_held_for_their_burst() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (mut handle, mut coordinator) = for_test(closed_port_config(), dir.path());
        while handle.events.try_recv().is_ok() {}
        coordinator
            .outbox
            .emit(crate::engine::telemetry::EngineEvent::Fetched {
                host: "127.0.0.1:9".into(),
                url: "http://127.0.0.1:9/a".into(),
                status: Some(200),
                latency: Duration::ZERO,
                bytes: 1,
                error: None,
            });
        assert!(handle.events.try_recv().is_err(), "held for its burst");
        coordinator.publish();
        assert!(
            matches!(
                handle.events.try_recv(),
                Ok(crate::engine::telemetry::EngineEvent::Fetched { .. })
            ),
            "a slow crawl's pages reach the front ends with each snapshot"
        );
    }

    #[tokio::test]
    async fn a_saturated_scheduler_waits_for_a_fetch_instead_of_spinning() {
        let dir = tempfile::tempdir().expect("temp dir");
        let cfg = CrawlConfig {
            seeds: vec!["http://127.0.0.1:9/".into()],
            concurrency: 4,
            ..CrawlConfig::default()
        };
        let (_handle, mut coordinator) = for_test(cfg, dir.path());
        let now = Instant::now();
        coordinator.adopt_new_hosts(now);
        coordinator.hold("127.0.0.1:9", Hold::Robots, false);
        let ready = coordinator.next_wakeup(now);
        assert!(
            ready.is_some_and(|at| at <= Instant::now()),
            "a ready host wakes the loop now"
        );

        for _ in 0..4 {
            coordinator.slots.start_page();
        }
        assert_eq!(
            coordinator.next_wakeup(now),
            None,
            "nothing can start: sleep"
        );

        for _ in 0..4 {
            coordinator.slots.end_page();
        }
        coordinator.slots.set_rate(Some(1.0), now);
        assert!(coordinator.slots.take_rate_token(now));
        assert!(!coordinator.slots.take_rate_token(now));
        let at = coordinator.slots.rate_wake().expect("refused");
        assert_eq!(
            coordinator.next_wakeup(now),
            Some(at),
            "rate-limited: wake when the rate allows"
        );
    }

    #[tokio::test]
    async fn a_robots_txt_that_cannot_be_archived_pauses_the_crawl_and_its_verdict_holds() {
        use crate::engine::robots::{RobotsAnswer, RobotsVerdict};
        use crate::engine::telemetry::RobotsState;
        let dir = tempfile::tempdir().expect("temp dir");
        let (_handle, ends) = crate::engine::EngineHandle::channel();
        let options = crate::engine::EngineOptions {
            wait_for_operator: true,
            ..Default::default()
        };
        let mut c = boot::build(closed_port_config(), dir.path(), ends, options).unwrap();
        c.adopt_new_hosts(Instant::now());
        c.handle_work(Work::Robots {
            host: "127.0.0.1:9".into(),
            origin: url::Url::parse("http://127.0.0.1:9/").unwrap(),
            answer: RobotsAnswer {
                verdict: RobotsVerdict::AllowAll,
                ttl: Duration::from_secs(600),
                elapsed: Duration::ZERO,
            },
            warc_error: Some("WARC write failed: No space left on device".into()),
        });
        assert_eq!(c.run.state, CrawlState::Paused);
        let fault = c.run.fault.clone().expect("a storage fault");
        assert!(
            fault.contains("archiving the robots.txt of http://127.0.0.1:9/")
                && fault.contains("No space left on device"),
            "{fault}"
        );
        let snapshot = c.publish();
        let host = snapshot.hosts.iter().find(|h| h.host == "127.0.0.1:9");
        assert_eq!(host.map(|h| &h.robots), Some(&RobotsState::AllowAll));
    }
}
