//! Per-host circuit breaker: CLOSED → OPEN → HALF-OPEN → CLOSED.
//!
//! Pure state machine: every method that depends on time takes `now`, so the
//! coordinator (and the tests) own the clock.

use std::collections::VecDeque;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use crate::engine::config::BreakerConfig;

use super::telemetry::{BreakerPhase, BreakerView};

/// Longest error text kept for the view; errors come from the network.
const MAX_ERROR_CHARS: usize = 256;

/// What one request to the host ended with, as far as the breaker cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Success,
    /// Transport error or 5xx; the text is shown as the last error.
    Failure(String),
    /// A 429. Only a repeated one (after Retry-After was honoured) is a failure.
    RateLimited,
}

/// A phase change, for `EngineEvent::BreakerChanged`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transition {
    pub from: BreakerPhase,
    pub to: BreakerPhase,
    pub reason: String,
}

#[derive(Debug, Clone)]
pub struct Breaker {
    phase: BreakerPhase,
    consecutive_failures: u32,
    /// Recent requests, `true` for a failure; at most `cfg.window` long.
    recent: VecDeque<bool>,
    recent_failures: u32,
    last_error: Option<String>,
    last_was_rate_limited: bool,
    opens: u32,
    /// Re-opens since the last close; the cooldown doubles with each.
    reopen_level: u32,
    /// Cooldown applied at the last open (kept for restore).
    current_cooldown: Duration,
    probe_at: Option<Instant>,
    probe_outstanding: bool,
    /// When the host left CLOSED (for giving up).
    failing_since: Option<Instant>,
    rng: fastrand::Rng,
}

impl Default for Breaker {
    fn default() -> Self {
        Breaker::new()
    }
}

impl Breaker {
    pub fn new() -> Self {
        Breaker::with_seed(fastrand::u64(..))
    }

    /// A breaker whose cooldown jitter is reproducible.
    pub fn with_seed(seed: u64) -> Self {
        Breaker {
            phase: BreakerPhase::Closed,
            consecutive_failures: 0,
            recent: VecDeque::new(),
            recent_failures: 0,
            last_error: None,
            last_was_rate_limited: false,
            opens: 0,
            reopen_level: 0,
            current_cooldown: Duration::ZERO,
            probe_at: None,
            probe_outstanding: false,
            failing_since: None,
            rng: fastrand::Rng::with_seed(seed),
        }
    }

    pub fn phase(&self) -> BreakerPhase {
        self.phase
    }

    /// CLOSED: yes. OPEN: once the cooldown is over it turns HALF-OPEN and lets
    /// exactly one probe through. HALF-OPEN: no while the probe is out.
    pub fn allow_request(&mut self, now: Instant, _cfg: &BreakerConfig) -> bool {
        match self.phase {
            BreakerPhase::Closed => true,
            BreakerPhase::Open => match self.probe_at {
                Some(at) if now >= at => {
                    self.phase = BreakerPhase::HalfOpen;
                    self.probe_at = None;
                    self.probe_outstanding = true;
                    true
                }
                _ => false,
            },
            BreakerPhase::HalfOpen => {
                if self.probe_outstanding {
                    false
                } else {
                    self.probe_outstanding = true;
                    true
                }
            }
        }
    }

    pub fn record(
        &mut self,
        outcome: Outcome,
        now: Instant,
        cfg: &BreakerConfig,
    ) -> Option<Transition> {
        match outcome {
            Outcome::Success => {
                self.last_was_rate_limited = false;
                self.on_success(cfg)
            }
            Outcome::RateLimited if !self.last_was_rate_limited => {
                // Neutral: politeness honours Retry-After; a HALF-OPEN host may probe again.
                self.last_was_rate_limited = true;
                if self.phase == BreakerPhase::HalfOpen {
                    self.probe_outstanding = false;
                }
                None
            }
            Outcome::RateLimited => {
                self.on_failure("repeated 429 Too Many Requests".to_string(), now, cfg)
            }
            Outcome::Failure(message) => {
                self.last_was_rate_limited = false;
                self.on_failure(message, now, cfg)
            }
        }
    }

    fn on_success(&mut self, cfg: &BreakerConfig) -> Option<Transition> {
        match self.phase {
            BreakerPhase::Closed => {
                self.consecutive_failures = 0;
                self.push_recent(false, cfg.window);
                None
            }
            BreakerPhase::HalfOpen => Some(self.close("probe succeeded")),
            // A request sent before the breaker opened; only the probe decides.
            BreakerPhase::Open => None,
        }
    }

    fn on_failure(
        &mut self,
        message: String,
        now: Instant,
        cfg: &BreakerConfig,
    ) -> Option<Transition> {
        self.last_error = Some(truncate(&message));
        match self.phase {
            BreakerPhase::Closed => {
                self.consecutive_failures = self.consecutive_failures.saturating_add(1);
                self.push_recent(true, cfg.window);
                let window_full = cfg.window > 0 && self.recent.len() >= cfg.window as usize;
                let ratio = f64::from(self.recent_failures) / f64::from(cfg.window.max(1));
                let reason = if cfg.consecutive_failures > 0
                    && self.consecutive_failures >= cfg.consecutive_failures
                {
                    format!(
                        "{} consecutive failures, last: {message}",
                        self.consecutive_failures
                    )
                } else if window_full && ratio >= cfg.failure_ratio {
                    format!(
                        "{} of the last {} requests failed, last: {message}",
                        self.recent_failures, cfg.window
                    )
                } else {
                    return None;
                };
                Some(self.open(now, cfg, reason))
            }
            BreakerPhase::HalfOpen => {
                self.consecutive_failures = self.consecutive_failures.saturating_add(1);
                self.reopen_level = self.reopen_level.saturating_add(1);
                Some(self.open(now, cfg, format!("probe failed: {message}")))
            }
            BreakerPhase::Open => {
                self.consecutive_failures = self.consecutive_failures.saturating_add(1);
                None
            }
        }
    }

    fn push_recent(&mut self, failure: bool, window: u32) {
        self.recent.push_back(failure);
        if failure {
            self.recent_failures += 1;
        }
        let cap = window.max(1) as usize;
        while self.recent.len() > cap {
            if self.recent.pop_front() == Some(true) {
                self.recent_failures -= 1;
            }
        }
    }

    /// Base cooldown for the current re-open level, before jitter.
    pub fn base_cooldown(&self, cfg: &BreakerConfig) -> Duration {
        let factor = 1u32
            .checked_shl(self.reopen_level.min(31))
            .unwrap_or(u32::MAX);
        cfg.cooldown
            .checked_mul(factor)
            .unwrap_or(cfg.max_cooldown)
            .min(cfg.max_cooldown)
    }

    fn open(&mut self, now: Instant, cfg: &BreakerConfig, reason: String) -> Transition {
        let base = self.base_cooldown(cfg);
        // ±10 % so that hosts opened together do not probe together.
        let jitter = 0.9 + 0.2 * self.rng.f64();
        self.current_cooldown = base.mul_f64(jitter);
        self.enter_open(now, reason)
    }

    fn enter_open(&mut self, now: Instant, reason: String) -> Transition {
        let from = self.phase;
        self.phase = BreakerPhase::Open;
        self.opens = self.opens.saturating_add(1);
        self.probe_at = Some(now + self.current_cooldown);
        self.probe_outstanding = false;
        self.failing_since.get_or_insert(now);
        Transition {
            from,
            to: BreakerPhase::Open,
            reason,
        }
    }

    fn close(&mut self, reason: &str) -> Transition {
        let from = self.phase;
        self.phase = BreakerPhase::Closed;
        self.consecutive_failures = 0;
        self.recent.clear();
        self.recent_failures = 0;
        self.reopen_level = 0;
        self.probe_at = None;
        self.probe_outstanding = false;
        self.failing_since = None;
        self.last_was_rate_limited = false;
        Transition {
            from,
            to: BreakerPhase::Closed,
            reason: reason.to_string(),
        }
    }

    /// Operator: close now. `None` if it was already closed (counters still cleared).
    pub fn reset(&mut self) -> Option<Transition> {
        let was = self.phase;
        let t = self.close("reset by operator");
        (was != BreakerPhase::Closed).then_some(t)
    }

    /// Operator: open now with the current cooldown (no doubling).
    pub fn force_open(&mut self, now: Instant, cfg: &BreakerConfig) -> Option<Transition> {
        if self.phase == BreakerPhase::Open {
            return None;
        }
        Some(self.open(now, cfg, "opened by operator".to_string()))
    }

    pub fn next_probe_at(&self) -> Option<Instant> {
        match self.phase {
            BreakerPhase::Open => self.probe_at,
            _ => None,
        }
    }

    pub fn view(&self, now: Instant) -> BreakerView {
        BreakerView {
            phase: self.phase,
            consecutive_failures: self.consecutive_failures,
            window_failures: self.recent_failures,
            next_probe_in: self
                .next_probe_at()
                .map(|at| at.saturating_duration_since(now)),
            last_error: self.last_error.clone(),
            opens: self.opens,
        }
    }

    /// The host has not been CLOSED for longer than `give_up_after`.
    pub fn gave_up(&self, now: Instant, cfg: &BreakerConfig) -> bool {
        self.failing_since
            .is_some_and(|since| now.saturating_duration_since(since) > cfg.give_up_after)
    }

    pub fn to_persisted(&self, now: Instant) -> PersistedBreaker {
        PersistedBreaker {
            phase: self.phase,
            consecutive_failures: self.consecutive_failures,
            recent: self.recent.iter().copied().collect(),
            last_error: self.last_error.clone(),
            last_was_rate_limited: self.last_was_rate_limited,
            opens: self.opens,
            reopen_level: self.reopen_level,
            cooldown: self.current_cooldown,
            failing_for: self.failing_since.map(|s| now.saturating_duration_since(s)),
        }
    }

    /// An OPEN (or HALF-OPEN: its probe was lost) breaker re-opens with its
    /// cooldown counted from `now`.
    pub fn from_persisted(p: PersistedBreaker, now: Instant) -> Self {
        let mut b = Breaker::new();
        b.consecutive_failures = p.consecutive_failures;
        b.recent_failures = p.recent.iter().filter(|f| **f).count() as u32;
        b.recent = p.recent.into();
        b.last_error = p.last_error.map(|e| truncate(&e));
        b.last_was_rate_limited = p.last_was_rate_limited;
        b.opens = p.opens;
        b.reopen_level = p.reopen_level;
        b.current_cooldown = p.cooldown;
        if p.phase != BreakerPhase::Closed {
            b.phase = BreakerPhase::Open;
            b.probe_at = Some(now + p.cooldown);
            let failing_for = p.failing_for.unwrap_or_default();
            b.failing_since = Some(now.checked_sub(failing_for).unwrap_or(now));
        }
        b
    }
}

/// An open breaker as a shared crawl keeps it for every worker of the host.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenBreaker {
    pub probe_at: Instant,
    pub failing_since: Instant,
    pub reopen_level: u32,
    pub cooldown: Duration,
    pub last_error: Option<String>,
}

impl Breaker {
    /// What other workers follow while this breaker is open (or probing).
    pub fn shared_open(&self, now: Instant) -> Option<OpenBreaker> {
        if self.phase == BreakerPhase::Closed {
            return None;
        }
        Some(OpenBreaker {
            probe_at: self.probe_at.unwrap_or(now),
            failing_since: self.failing_since.unwrap_or(now),
            reopen_level: self.reopen_level,
            cooldown: self.current_cooldown,
            last_error: self.last_error.clone(),
        })
    }

    /// Another worker's breaker of the host opened: this one is OPEN until
    /// the same probe time. A transition only if it was not open already.
    pub fn follow_open(&mut self, shared: &OpenBreaker, reason: &str) -> Option<Transition> {
        let from = self.phase;
        self.probe_at = Some(shared.probe_at);
        self.probe_outstanding = false;
        self.reopen_level = shared.reopen_level;
        self.current_cooldown = shared.cooldown;
        self.last_error = shared.last_error.as_deref().map(truncate);
        let since = self
            .failing_since
            .map_or(shared.failing_since, |own| own.min(shared.failing_since));
        self.failing_since = Some(since);
        self.phase = BreakerPhase::Open;
        if from == BreakerPhase::Open {
            return None;
        }
        self.opens = self.opens.saturating_add(1);
        Some(Transition {
            from,
            to: BreakerPhase::Open,
            reason: reason.to_string(),
        })
    }

    /// Another worker's probe succeeded: this breaker closes too.
    pub fn follow_closed(&mut self, reason: &str) -> Option<Transition> {
        (self.phase != BreakerPhase::Closed).then(|| self.close(reason))
    }
}

/// The breaker as stored in the hosts tree: instants become durations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PersistedBreaker {
    pub phase: BreakerPhase,
    pub consecutive_failures: u32,
    pub recent: Vec<bool>,
    pub last_error: Option<String>,
    pub last_was_rate_limited: bool,
    pub opens: u32,
    pub reopen_level: u32,
    pub cooldown: Duration,
    /// How long the host had been out of CLOSED when saved.
    pub failing_for: Option<Duration>,
}

fn truncate(s: &str) -> String {
    s.chars().take(MAX_ERROR_CHARS).collect()
}

#[cfg(test)]
mod tests;
