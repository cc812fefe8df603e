//! Host health: politeness scheduling after each answer, circuit-breaker
//! transitions and holds, robots.txt verdicts, and giving a host up.

use std::time::Duration;

use tokio::time::Instant;

use super::results::record_for;
use super::{Coordinator, Timer};
use crate::engine::breaker::{Outcome, Transition};
use crate::engine::frontier::Hold;
use crate::engine::host::RobotsSlot;
use crate::engine::robots::RobotsVerdict;
use crate::engine::store::PageOutcome;
use crate::engine::telemetry::{BreakerPhase, EngineEvent, Level};

impl Coordinator {
    /// Sets when the host may be asked again, from its politeness state.
    pub(super) fn schedule_next(&mut self, host_key: &str, now: Instant) {
        let Some(host) = self.hosts.get_mut(host_key) else {
            return;
        };
        let (delay, source) = host.politeness.next_delay(
            &self.cfg.politeness,
            self.global_delay,
            host.robots.crawl_delay(),
        );
        host.delay = (delay, source);
        self.frontier.set_not_before(host_key, now + delay);
    }

    pub(super) fn breaker_outcome(&mut self, host_key: &str, outcome: Outcome, now: Instant) {
        let Some(host) = self.hosts.get_mut(host_key) else {
            return;
        };
        let cfg = host.breaker_config(&self.cfg.breaker);
        let transition = host.breaker.record(outcome, now, &cfg);
        if let Some(t) = transition {
            self.breaker_transition(host_key, t, now);
        }
    }

    pub fn breaker_transition(&mut self, host_key: &str, t: Transition, now: Instant) {
        let level = if t.to == BreakerPhase::Open {
            Level::Warn
        } else {
            Level::Info
        };
        let message = format!(
            "breaker {host_key}: {} -> {} ({})",
            t.from.label(),
            t.to.label(),
            t.reason
        );
        match level {
            Level::Warn => tracing::warn!("{message}"),
            _ => tracing::info!("{message}"),
        }
        self.emit(EngineEvent::BreakerChanged {
            host: host_key.to_string(),
            from: t.from,
            to: t.to,
            reason: t.reason.clone(),
        });
        match t.to {
            BreakerPhase::Open => self.hold_for_breaker(host_key, now),
            BreakerPhase::Closed => {
                if let Some(host) = self.hosts.get_mut(host_key) {
                    host.breaker_held = false;
                }
                self.frontier.set_hold(host_key, Hold::Breaker, false);
            }
            BreakerPhase::HalfOpen => {}
        }
        self.save_host(host_key);
    }

    /// Keeps the host's queue intact but hands out nothing until the next probe.
    pub fn hold_for_breaker(&mut self, host_key: &str, now: Instant) {
        let Some(host) = self.hosts.get_mut(host_key) else {
            return;
        };
        if host
            .breaker
            .gave_up(now, &host.breaker_config(&self.cfg.breaker))
        {
            let reason = format!(
                "host kept failing for {} (breaker)",
                humantime::format_duration(self.cfg.breaker.give_up_after)
            );
            self.give_up_host(host_key, &reason);
            return;
        }
        let probe_at = host.breaker.next_probe_at();
        if !host.breaker_held {
            host.breaker_held = true;
            self.frontier.set_hold(host_key, Hold::Breaker, true);
        }
        if let Some(at) = probe_at {
            self.schedule(at.max(now), Timer::BreakerProbe, host_key);
        }
    }

    /// The cooldown is over: let the frontier hand out one URL as the probe.
    pub fn breaker_probe_due(&mut self, host_key: &str, now: Instant) {
        let Some(host) = self.hosts.get_mut(host_key) else {
            return;
        };
        if host.breaker.phase() == BreakerPhase::Closed {
            host.breaker_held = false;
            self.frontier.set_hold(host_key, Hold::Breaker, false);
            return;
        }
        match host.breaker.next_probe_at() {
            Some(at) if at > now => self.schedule(at, Timer::BreakerProbe, host_key),
            _ => {
                host.breaker_held = false;
                self.frontier.set_hold(host_key, Hold::Breaker, false);
            }
        }
    }

    /// Records every queued URL of a host as not crawled and stops scheduling it.
    pub fn give_up_host(&mut self, host_key: &str, reason: &str) {
        if let Some(host) = self.hosts.get_mut(host_key) {
            host.finished = true;
        }
        self.frontier.set_hold(host_key, Hold::Finished, true);
        let outcome = PageOutcome::NotCrawled {
            reason: reason.to_string(),
        };
        let dropped = self
            .frontier
            .drop_host(host_key, &|e| record_for(e, outcome.clone()))
            .unwrap_or_else(|e| {
                tracing::error!("recording given-up URLs of {host_key}: {e}");
                0
            });
        self.log(
            Level::Warn,
            format!(
                "gave up {host_key}: {reason}; {dropped} queued URL(s) recorded as not crawled"
            ),
        );
    }

    pub(super) fn robots_settled(
        &mut self,
        host_key: &str,
        verdict: RobotsVerdict,
        ttl: Duration,
        elapsed: Duration,
        now: Instant,
    ) {
        let Some(host) = self.hosts.get_mut(host_key) else {
            return;
        };
        host.politeness.record_response(elapsed, None, None, now);
        let expires = now + ttl;
        let mut release = true;
        let mut message = None;
        host.robots = match verdict {
            RobotsVerdict::Parsed(rules) => {
                if !rules.sitemaps().is_empty() {
                    message = Some(format!(
                        "{host_key}: robots.txt lists sitemap(s) {}",
                        rules.sitemaps().join(", ")
                    ));
                }
                RobotsSlot::Rules {
                    rules: Box::new(rules),
                    expires,
                }
            }
            RobotsVerdict::AllowAll => RobotsSlot::AllowAll { expires },
            RobotsVerdict::DisallowAll => {
                release = false;
                RobotsSlot::DisallowAll
            }
            RobotsVerdict::Unavailable { retry_after } => {
                release = false;
                let mut backoff = match std::mem::replace(&mut host.robots, RobotsSlot::GaveUp) {
                    RobotsSlot::Postponed { backoff, .. } => backoff,
                    _ => crate::engine::robots::RobotsBackoff::new(&self.cfg.robots),
                };
                let retry_at = backoff.record_failure(now, retry_after);
                if backoff.gave_up(now) {
                    RobotsSlot::GaveUp
                } else {
                    RobotsSlot::Postponed {
                        backoff,
                        retry_at,
                        fetching: false,
                    }
                }
            }
        };
        if let Some(m) = message {
            self.log(Level::Info, m);
        }
        let state = self.hosts[host_key].robots.state();
        match &self.hosts[host_key].robots {
            RobotsSlot::DisallowAll => {
                if let Some(h) = self.hosts.get_mut(host_key) {
                    h.finished = true;
                }
                self.counters.robots_denied += self.frontier.host_queued(host_key);
                let dropped = self
                    .frontier
                    .drop_host(host_key, &|e| record_for(e, PageOutcome::RobotsDenied))
                    .unwrap_or(0);
                self.frontier.set_hold(host_key, Hold::Finished, true);
                self.log(
                    Level::Warn,
                    format!("{host_key}: robots.txt forbids the whole site; {dropped} URL(s) not crawled"),
                );
            }
            RobotsSlot::GaveUp => {
                let reason = "robots.txt never became available".to_string();
                self.give_up_host(host_key, &reason);
            }
            RobotsSlot::Postponed { retry_at, .. } => {
                let at = *retry_at;
                self.schedule(at, Timer::RobotsRetry, host_key);
                self.log(
                    Level::Warn,
                    format!("{host_key}: robots.txt unavailable ({}); host postponed, retried with backoff", state.label()),
                );
            }
            _ => {}
        }
        if release {
            self.frontier.set_hold(host_key, Hold::Robots, false);
        }
        self.schedule_next(host_key, now);
    }
}
