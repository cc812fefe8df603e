//! The host table: everything the crawl knows about each host — politeness,
//! the operator's overrides, robots.txt, the circuit breaker — and what of it
//! survives a restart. Bounded: past `RESIDENT_HOSTS`, idle hosts leave
//! memory and come back from the store when they are seen again.

mod state;

use std::collections::HashSet;
use std::time::Duration;

use tokio::time::Instant;
use url::Url;

use super::breaker::{OpenBreaker, Outcome, Transition};
use super::config::{BreakerConfig, PolitenessConfig, RobotsConfig};
use super::control::{BreakerThresholds, ByHost, HostKey};
use super::frontier::HostQueueView;
use super::robots::RobotsAnswer;
use super::store::{keys, CrawlBatch, PageOutcome, Store, StoreError, Tree};
use super::telemetry::{BreakerPhase, HostView, RobotsState};
use state::{HostFigures, HostRecord, HostState};

/// Hosts kept in memory before idle ones are evicted (their settings and
/// figures are in the store; rates and latencies start over when they come
/// back).
pub(crate) const RESIDENT_HOSTS: usize = 20_000;

/// How a newly tracked host must be held in the frontier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HostHolds {
    /// robots.txt is settled and fresh: pages may be handed out.
    pub robots_settled: bool,
    pub paused: bool,
    pub breaker_open: bool,
    pub finished: bool,
    /// Requests in flight at most.
    pub max_in_flight: usize,
}

/// Whether a leased URL may be fetched now.
#[derive(Debug)]
pub(crate) enum FetchGate {
    /// robots.txt expired or was never fetched: settle it first.
    RobotsUnsettled,
    /// robots.txt disallows the URL.
    RobotsDenied,
    /// The breaker is open: keep the URL, hold the host.
    BreakerHeld,
    /// Fetch it; `probe` is set when this request is the breaker's probe.
    Go { probe: Option<Transition> },
}

/// What a host's breaker does once it opened.
pub(crate) enum BreakerHold {
    /// The host kept failing past `give_up_after`.
    GiveUp,
    /// Hold the host; `newly` if it was not held yet; probe at `probe_at`.
    Hold {
        newly: bool,
        probe_at: Option<Instant>,
    },
}

/// What following another worker's breaker did to this worker's.
pub(crate) enum Followed {
    /// It changed phase.
    Changed(Transition),
    /// It stays open, with the shared probe time.
    Retimed,
    /// Nothing: it was closed already, or open until the same time.
    Same,
}

/// What a robots.txt answer means for the host's queue.
pub(crate) enum RobotsSettled {
    /// Pages may be fetched; `sitemaps` lists the file's Sitemap lines.
    Open { sitemaps: Vec<String> },
    /// 401/403 (strict mode): the whole site is off limits.
    DisallowAll,
    /// Unavailable for too long.
    GaveUp,
    /// The refetch of expired rules failed: they stay in force, fetched
    /// `age` ago; ask again at `retry_at` (`None`: the backoff gave up, the
    /// kept rules stay for the rest of the crawl).
    KeptAfterFailure {
        age: Duration,
        attempts: u32,
        retry_at: Option<Instant>,
    },
    /// Unavailable: ask again at `retry_at`.
    Postponed {
        retry_at: Instant,
        state: RobotsState,
    },
    /// The robots.txt of the host's other scheme forbids that scheme (or
    /// never became available): its URLs are denied, the host goes on.
    OriginClosed,
}

/// Per-host state of the crawl; the one owner of `HostState`.
pub(crate) struct HostTable {
    hosts: ByHost<HostState>,
    store: Store,
    politeness: PolitenessConfig,
    breaker: BreakerConfig,
    robots: RobotsConfig,
    /// The operator's default delay between two requests to a host.
    default_delay: Duration,
    resident_cap: usize,
    /// The recrawl pass whose figures the hosts count.
    pass: u32,
    /// Hosts whose figures changed since they were last stored.
    figures_changed: HashSet<HostKey>,
    /// Hosts whose breaker changed since their record was last stored.
    records_changed: HashSet<HostKey>,
    /// A failed read of a host's stored state, for the coordinator to report.
    read_failure: Option<StoreError>,
}

impl HostTable {
    pub(crate) fn new(
        store: Store,
        politeness: PolitenessConfig,
        breaker: BreakerConfig,
        robots: RobotsConfig,
        default_delay: Duration,
    ) -> Self {
        HostTable {
            hosts: ByHost::default(),
            store,
            politeness,
            breaker,
            robots,
            default_delay,
            resident_cap: RESIDENT_HOSTS,
            pass: 0,
            figures_changed: HashSet::new(),
            records_changed: HashSet::new(),
            read_failure: None,
        }
    }

    /// Brings back the hosts the crawl has met in recrawl pass `pass` (up to
    /// the resident cap) with their figures, so each is a row at once.
    pub(crate) fn restore_met(&mut self, pass: u32) -> Result<usize, StoreError> {
        self.pass = pass;
        let prefix = keys::host_figures_prefix(pass);
        let met: Vec<(Vec<u8>, HostFigures)> =
            self.store.progress_under(&prefix, self.resident_cap)?;
        for (host, figures) in &met {
            let host = String::from_utf8_lossy(host);
            let state = self.load(&host, Some(*figures));
            self.hosts.insert(host.into_owned(), state);
        }
        Ok(met.len())
    }

    /// A failed read of a host's stored state since the last call.
    pub(crate) fn take_read_failure(&mut self) -> Option<StoreError> {
        self.read_failure.take()
    }

    /// The host's state, loaded from the store (or created) on first sight.
    fn entry(&mut self, host: &str) -> &mut HostState {
        if !self.hosts.contains_key(host) {
            let key = keys::host_figures_key(self.pass, host);
            let figures = self.store.get_progress(&key).unwrap_or_else(|e| {
                self.read_failure = Some(e);
                None
            });
            let state = self.load(host, figures);
            self.hosts.insert(host.to_string(), state);
        }
        self.hosts.get_mut(host).expect("inserted above")
    }

    /// The host's stored settings, with `figures` (read by the caller).
    fn load(&mut self, host: &str, figures: Option<HostFigures>) -> HostState {
        let record: Option<HostRecord> = self
            .store
            .get(Tree::Hosts, host.as_bytes())
            .unwrap_or_else(|e| {
                self.read_failure = Some(e);
                None
            });
        let mut state = match record {
            Some(r) => HostState::restore(host.to_string(), r, Instant::now()),
            None => HostState::new(host.to_string()),
        };
        if let Some(figures) = figures {
            state.restore_figures(figures);
        }
        state
    }

    /// Puts the changed hosts' figures, and the records of those whose
    /// breaker changed, into `batch`, for the caller to write with the
    /// crawl's counters and the pages that changed them; then `state_saved`.
    pub(crate) fn state_to_save(&self, batch: &mut CrawlBatch) -> Result<(), StoreError> {
        for host in &self.figures_changed {
            let Some(state) = self.hosts.get(host) else {
                continue;
            };
            let json =
                serde_json::to_vec(&state.figures()).map_err(|source| StoreError::Encode {
                    what: "host figures",
                    source,
                })?;
            batch.set_meta(&keys::host_figures_key(self.pass, host), &json);
        }
        let now = Instant::now();
        for host in &self.records_changed {
            if let Some(state) = self.hosts.get(host) {
                batch.put(Tree::Hosts, host.as_bytes(), &state.record(now))?;
            }
        }
        Ok(())
    }

    /// What `state_to_save` gave is stored.
    pub(crate) fn state_saved(&mut self) {
        self.figures_changed.clear();
        self.records_changed.clear();
    }

    /// A URL of the host was recorded: answered with `status`, or (`None`)
    /// failed without an answer, `refused` for a private address. Counted
    /// where the crawl's counters count it, so host rows add up to them.
    pub(crate) fn count_recorded(&mut self, host: &str, status: Option<u16>, refused: bool) {
        self.entry(host).count_recorded(status, refused);
        self.figures_changed.insert(host.to_string());
    }

    /// `entry`, with the crawl's politeness and breaker settings beside it.
    fn entry_with_settings(
        &mut self,
        host: &str,
    ) -> (&mut HostState, &PolitenessConfig, &BreakerConfig) {
        self.entry(host);
        let state = self.hosts.get_mut(host).expect("entry loaded it");
        (state, &self.politeness, &self.breaker)
    }

    /// Stores what of the host survives a restart.
    fn save(&self, host: &str) -> Result<(), StoreError> {
        match self.hosts.get(host) {
            Some(state) => {
                self.store
                    .put(Tree::Hosts, host.as_bytes(), &state.record(Instant::now()))
            }
            None => Ok(()),
        }
    }

    /// Starts tracking a host the frontier (re)created; `first_url` gives its
    /// origin (where robots.txt lives). Returns the holds it needs.
    pub(crate) fn adopt(&mut self, host: &str, first_url: Option<&str>, now: Instant) -> HostHolds {
        // Stored with its figures, so a resumed crawl lists every host it met.
        self.figures_changed.insert(host.to_string());
        let (state, politeness, _) = self.entry_with_settings(host);
        if state.origin.is_none() {
            state.origin = first_url.and_then(|u| Url::parse(u).ok()).map(|mut u| {
                u.set_path("/");
                u.set_query(None);
                u.set_fragment(None);
                u
            });
        }
        HostHolds {
            robots_settled: state.robots.is_settled(now),
            paused: state.paused,
            breaker_open: state.breaker_held,
            finished: state.given_up.is_some(),
            max_in_flight: state.politeness.max_in_flight(politeness),
        }
    }

    /// Hosts that may leave memory, once there are more than the cap: none
    /// of their requests is out. The caller checks the frontier has nothing
    /// of them either, then calls `evict`.
    pub(crate) fn eviction_candidates(&self) -> Vec<HostKey> {
        let excess = self.hosts.len().saturating_sub(self.resident_cap);
        if excess == 0 {
            return Vec::new();
        }
        self.hosts
            .iter()
            .filter(|(key, h)| {
                h.in_flight == 0 && !h.robots_fetching() && !self.figures_changed.contains(*key)
            })
            .map(|(key, _)| key.clone())
            .take(excess)
            .collect()
    }

    /// Drops hosts from memory after storing what survives a restart; they
    /// come back from the store when seen again. Returns how many left; a
    /// failed save keeps that host (and those after it) in memory.
    pub(crate) fn evict(&mut self, hosts: &[&str]) -> Result<usize, StoreError> {
        let mut evicted = 0;
        for key in hosts {
            self.save(key)?;
            evicted += usize::from(self.hosts.remove(*key).is_some());
        }
        Ok(evicted)
    }

    // ---- operator settings ----

    /// Whether the host is in memory: the crawl has met it and it is not idle.
    pub(crate) fn is_resident(&self, host: &str) -> bool {
        self.hosts.contains_key(host)
    }

    /// Changes one host's stored settings. A host not in memory is stored
    /// and left out: it takes them when it appears, and is no row before.
    fn update<R>(
        &mut self,
        host: &str,
        change: impl FnOnce(&mut HostState, &PolitenessConfig) -> R,
    ) -> Result<R, StoreError> {
        let resident = self.is_resident(host);
        let (state, politeness, _) = self.entry_with_settings(host);
        let result = change(state, politeness);
        let saved = self.save(host);
        if !resident {
            self.hosts.remove(host);
        }
        saved.map(|()| result)
    }

    /// Pauses or resumes one host.
    pub(crate) fn set_paused(&mut self, host: &str, paused: bool) -> Result<(), StoreError> {
        self.update(host, |state, _| state.paused = paused)
    }

    /// The operator's delay for one host (`None`: computed again).
    pub(crate) fn set_delay_override(
        &mut self,
        host: &str,
        delay: Option<Duration>,
    ) -> Result<(), StoreError> {
        self.update(host, |state, _| state.politeness.set_override_delay(delay))
    }

    /// The operator's in-flight limit for one host; returns the effective limit.
    pub(crate) fn set_concurrency_override(
        &mut self,
        host: &str,
        max: Option<usize>,
    ) -> Result<usize, StoreError> {
        self.update(host, |state, politeness| {
            state.politeness.set_override_concurrency(max);
            state.politeness.max_in_flight(politeness)
        })
    }

    /// The operator's breaker thresholds for one host (`None`: crawl.toml's).
    pub(crate) fn set_breaker_thresholds(
        &mut self,
        host: &str,
        thresholds: Option<BreakerThresholds>,
    ) -> Result<(), StoreError> {
        self.update(host, |state, _| state.breaker_thresholds = thresholds)
    }

    /// Closes the host's breaker (a host in memory: see `is_resident`).
    pub(crate) fn reset_breaker(&mut self, host: &str) -> Option<Transition> {
        self.hosts.get_mut(host)?.breaker.reset()
    }

    /// Opens the host's breaker now (a host in memory: see `is_resident`).
    pub(crate) fn force_open_breaker(&mut self, host: &str, now: Instant) -> Option<Transition> {
        let state = self.hosts.get_mut(host)?;
        let cfg = state.breaker_config(&self.breaker);
        state.breaker.force_open(now, &cfg)
    }

    /// The default per-host delay the operator set (crawl.toml's at first).
    pub(crate) fn default_delay(&self) -> Duration {
        self.default_delay
    }

    pub(crate) fn set_default_delay(&mut self, delay: Duration) {
        self.default_delay = delay;
    }

    // ---- fetching ----

    /// Whether `url` of `host` may be fetched now: robots.txt, then the breaker.
    pub(crate) fn check_fetch(&mut self, host: &str, url: &Url, now: Instant) -> FetchGate {
        let (state, _, base) = self.entry_with_settings(host);
        let robots = state.robots_for(url);
        if robots.forbids_all() {
            return FetchGate::RobotsDenied;
        }
        if !robots.is_settled(now) {
            return FetchGate::RobotsUnsettled;
        }
        if let Some(rules) = robots.rules() {
            if !rules.allowed(url) {
                return FetchGate::RobotsDenied;
            }
        }
        let cfg = state.breaker_config(base);
        let phase = state.breaker.phase();
        if !state.breaker.allow_request(now, &cfg) {
            return FetchGate::BreakerHeld;
        }
        let to = state.breaker.phase();
        let probe = (phase != to).then(|| Transition {
            from: phase,
            to,
            reason: "cooldown over: one probe request".into(),
        });
        FetchGate::Go { probe }
    }

    /// A page request to the host went out.
    pub(crate) fn fetch_started(&mut self, host: &str, now: Instant) {
        let state = self.entry(host);
        state.in_flight += 1;
        state.requests.record(now);
    }

    /// A page request to the host came back (answered or failed).
    pub(crate) fn fetch_ended(&mut self, host: &str) {
        if let Some(state) = self.hosts.get_mut(host) {
            state.in_flight = state.in_flight.saturating_sub(1);
        }
    }

    /// A request failed without an answer (connect, timeout, reset, ...).
    pub(crate) fn record_failure(&mut self, host: &str, elapsed: Duration, now: Instant) {
        if let Some(state) = self.hosts.get_mut(host) {
            state.latency.record(elapsed);
            state.politeness.record_response(elapsed, None, None, now);
        }
    }

    /// A URL of the host was not connected to: its address is private.
    pub(crate) fn record_refusal(&mut self, host: &str, why: &str) {
        if let Some(state) = self.hosts.get_mut(host) {
            state.last_refusal = Some(why.to_string());
        }
    }

    /// A request to the host ran into the total timeout after `held`: raise
    /// its delay (see `HostPoliteness::back_off`).
    pub(crate) fn back_off(&mut self, host: &str, held: Duration) {
        if let Some(state) = self.hosts.get_mut(host) {
            state.politeness.back_off(held);
        }
    }

    /// The host answered with `status`.
    pub(crate) fn record_answer(
        &mut self,
        host: &str,
        status: u16,
        elapsed: Duration,
        retry_after: Option<Duration>,
        now: Instant,
    ) {
        if let Some(state) = self.hosts.get_mut(host) {
            state.latency.record(elapsed);
            state
                .politeness
                .record_response(elapsed, Some(status), retry_after, now);
        }
    }

    /// How long to wait before the host's next request (and why), remembered
    /// for the host's view. `None` for a host not in memory.
    pub(crate) fn next_delay(&mut self, host: &str) -> Option<Duration> {
        let state = self.hosts.get_mut(host)?;
        let (delay, source) =
            state
                .politeness
                .next_delay(&self.politeness, self.default_delay, state.crawl_delay());
        state.delay = (delay, source);
        Some(delay)
    }

    /// The operator changed the host's delay: when its next request may go,
    /// from its last answer and the delay now in force. `None` when that is
    /// nobody's concern: the host is not in memory, has a request out (its
    /// answer schedules it), never answered, or its wait is over either way.
    pub(crate) fn retimed(&mut self, host: &str, now: Instant) -> Option<Instant> {
        let state = self.hosts.get(host)?;
        if state.in_flight > 0 {
            return None;
        }
        let last = state.politeness.last_response_at()?;
        let before = state.delay.0;
        let delay = self.next_delay(host)?;
        (last + before.max(delay) > now).then(|| (last + delay).max(now))
    }

    // ---- circuit breaker ----

    /// Feeds an answer (or failure) to the host's breaker.
    pub(crate) fn breaker_record(
        &mut self,
        host: &str,
        outcome: Outcome,
        now: Instant,
    ) -> Option<Transition> {
        let state = self.hosts.get_mut(host)?;
        let cfg = state.breaker_config(&self.breaker);
        state.breaker.record(outcome, now, &cfg)
    }

    /// The host's breaker is not closed: failures are not its URLs' fault.
    pub(crate) fn breaker_down(&self, host: &str) -> bool {
        self.hosts
            .get(host)
            .is_some_and(|h| h.breaker.phase() != BreakerPhase::Closed)
    }

    /// The breaker opened (or stays open): hold the host until its probe, or
    /// give it up when it kept failing too long.
    pub(crate) fn breaker_hold(&mut self, host: &str, now: Instant) -> Option<BreakerHold> {
        let state = self.hosts.get_mut(host)?;
        if state
            .breaker
            .gave_up(now, &state.breaker_config(&self.breaker))
        {
            return Some(BreakerHold::GiveUp);
        }
        let newly = !state.breaker_held;
        state.breaker_held = true;
        Some(BreakerHold::Hold {
            newly,
            probe_at: state.breaker.next_probe_at(),
        })
    }

    /// When the host's open breaker lets its probe go out.
    pub(crate) fn breaker_probe_at(&self, host: &str) -> Option<Instant> {
        self.hosts.get(host)?.breaker.next_probe_at()
    }

    /// The breaker's hold is lifted (closed, or a probe may go out).
    pub(crate) fn breaker_released(&mut self, host: &str) {
        if let Some(state) = self.hosts.get_mut(host) {
            state.breaker_held = false;
        }
    }

    /// A probe timer fired: `Ok(())` if the host may send its probe now, or
    /// `Err(at)` when the cooldown moved on meanwhile. `None`: host unknown.
    pub(crate) fn probe_due(&mut self, host: &str, now: Instant) -> Option<Result<(), Instant>> {
        let state = self.hosts.get_mut(host)?;
        if state.breaker.phase() != BreakerPhase::Closed {
            if let Some(at) = state.breaker.next_probe_at().filter(|at| *at > now) {
                return Some(Err(at));
            }
        }
        state.breaker_held = false;
        Some(Ok(()))
    }

    /// Brings an evicted host back into memory (with its stored figures).
    pub(crate) fn bring_back(&mut self, host: &str) {
        self.entry(host);
    }

    /// The host's open breaker as the other workers of a shared crawl
    /// follow it; `None` when closed or not in memory.
    pub(crate) fn breaker_shared(&self, host: &str, now: Instant) -> Option<OpenBreaker> {
        self.hosts.get(host)?.breaker.shared_open(now)
    }

    /// Another worker changed the host's breaker (`open`, or closed when
    /// `None`): this worker's follows. Only hosts in memory follow; others
    /// read the shared state when they are adopted again.
    pub(crate) fn breaker_follow(
        &mut self,
        host: &str,
        open: Option<&OpenBreaker>,
        reason: &str,
    ) -> Option<Followed> {
        let breaker = &mut self.hosts.get_mut(host)?.breaker;
        let before = breaker.next_probe_at();
        Some(match open {
            Some(open) => match breaker.follow_open(open, reason) {
                Some(t) => Followed::Changed(t),
                None if before == Some(open.probe_at) => Followed::Same,
                None => Followed::Retimed,
            },
            None => match breaker.follow_closed(reason) {
                Some(t) => Followed::Changed(t),
                None => Followed::Same,
            },
        })
    }

    /// After a breaker transition: the host's record is stored with the
    /// next group of pages (`state_to_save`), the one that moved it among them.
    pub(crate) fn breaker_changed(&mut self, host: &str) {
        self.records_changed.insert(host.to_string());
    }

    /// The host takes no more work; its URLs, queued or found later, are
    /// recorded as `outcome` (remembered across restarts).
    pub(crate) fn give_up(&mut self, host: &str, outcome: PageOutcome) -> Result<(), StoreError> {
        self.entry(host).given_up = Some(outcome);
        self.save(host)
    }

    /// For a given-up host: what its newly found URLs are recorded as.
    pub(crate) fn finished_reason(&self, host: &str) -> Option<PageOutcome> {
        self.hosts.get(host).and_then(|h| h.finished_reason())
    }

    // ---- robots.txt ----

    /// Marks a robots.txt of the host as being fetched and returns its
    /// origin: the host's own when it needs one, else that of its other
    /// scheme. `None` if nothing needs fetching, a fetch is out already, the
    /// verdict is final, or the host is unknown.
    pub(crate) fn begin_robots(&mut self, host: &str, now: Instant) -> Option<Url> {
        let state = self.hosts.get_mut(host)?;
        if state.robots.wants_fetch(now) {
            state.robots.begin_fetch();
            if state.origin.is_none() {
                tracing::error!("no origin known for {host}; robots.txt cannot be fetched");
            }
            return state.origin.clone();
        }
        let other = state.other_origin.as_mut()?;
        if !other.robots.wants_fetch(now) {
            return None;
        }
        other.robots.begin_fetch();
        Some(other.origin.clone())
    }

    /// Applies the robots.txt answer of `origin` to the host. The answer of
    /// the host's other scheme never gives the host up: it only decides on
    /// that scheme's URLs.
    pub(crate) fn settle_robots(
        &mut self,
        host: &str,
        origin: &Url,
        answer: RobotsAnswer,
        now: Instant,
    ) -> Option<RobotsSettled> {
        let state = self.hosts.get_mut(host)?;
        state
            .politeness
            .record_response(answer.elapsed, None, None, now);
        let own = state
            .origin
            .as_ref()
            .is_none_or(|o| o.scheme() == origin.scheme());
        if own {
            return Some(state.robots.settle(answer, now, &self.robots));
        }
        let other = state.other_origin.as_mut()?;
        Some(match other.robots.settle(answer, now, &self.robots) {
            RobotsSettled::DisallowAll | RobotsSettled::GaveUp => RobotsSettled::OriginClosed,
            settled => settled,
        })
    }

    // ---- views ----

    /// The hosts in memory, owned: for commands that change each of them.
    pub(crate) fn keys(&self) -> Vec<HostKey> {
        self.hosts.keys().cloned().collect()
    }

    /// Each host in memory with its requests in flight and pages fetched:
    /// what the snapshot ranks hosts by, without building their views.
    pub(crate) fn busy(&self) -> impl Iterator<Item = (&str, u32, u64)> {
        self.hosts
            .iter()
            .map(|(key, h)| (key.as_str(), h.in_flight, h.fetched))
    }

    /// The view of a host in memory, with the frontier's side of it.
    pub(crate) fn view(
        &mut self,
        host: &str,
        now: Instant,
        queue: HostQueueView,
    ) -> Option<HostView> {
        let state = self.hosts.get_mut(host)?;
        let max = state.politeness.max_in_flight(&self.politeness);
        Some(state.view(
            now,
            queue.queued,
            max,
            queue.activity,
            queue.parked,
            queue.head,
        ))
    }
}

#[cfg(test)]
mod tests;
