//! Host health as the crawl loop applies it: politeness scheduling after each
//! answer, circuit-breaker transitions and holds, robots.txt verdicts, and
//! giving a host up. The host table decides; this moves the consequences
//! into the frontier, the timers and the log.

use std::time::Duration;

use tokio::time::Instant;
use url::Url;

use super::results::record_for;
use super::Coordinator;
use crate::engine::breaker::{Outcome, Transition};
use crate::engine::frontier::Hold;
use crate::engine::hosts::{BreakerHold, RobotsSettled};
use crate::engine::robots::RobotsAnswer;
use crate::engine::store::PageOutcome;
use crate::engine::telemetry::{BreakerPhase, EngineEvent, Level};
use crate::engine::timers::Timer;

impl Coordinator {
    /// Sets when the host may be asked again, from its politeness state.
    pub(super) fn schedule_next(&mut self, host: &str, now: Instant) {
        if let Some(delay) = self.hosts.next_delay(host) {
            self.not_before(host, now + delay);
        }
    }

    /// The host's delay changed: its pending wait ends by the new one, from
    /// its last answer (shorter: sooner, longer: later).
    pub(super) fn retime(&mut self, host: &str, now: Instant) {
        if let Some(at) = self.hosts.retimed(host, now) {
            self.not_before(host, at);
        }
    }

    fn not_before(&mut self, host: &str, at: Instant) {
        // An open breaker's cooldown is the host's next allowed time too:
        // the breaker is this worker's, the schedule is every worker's.
        let probe_at = self.hosts.breaker_probe_at(host);
        let at = probe_at.map_or(at, |probe| probe.max(at));
        if let Err(e) = self.frontier.set_not_before(host, at) {
            self.storage_failed(&format!("scheduling {host}"), e);
        }
    }

    pub(super) fn breaker_outcome(&mut self, host: &str, outcome: Outcome, now: Instant) {
        if let Some(t) = self.hosts.breaker_record(host, outcome, now) {
            self.breaker_transition(host, t, now);
        }
    }

    /// A transition of this worker's breaker: applied here, and shared with
    /// the other workers of a shared crawl.
    pub(super) fn breaker_transition(&mut self, host: &str, t: Transition, now: Instant) {
        let to = t.to;
        let reason = t.reason.clone();
        self.apply_breaker_transition(host, t, now);
        self.share_breaker_change(host, to, &reason, now);
    }

    pub(super) fn apply_breaker_transition(&mut self, host: &str, t: Transition, now: Instant) {
        let message = format!(
            "breaker {host}: {} -> {} ({})",
            t.from.label(),
            t.to.label(),
            t.reason
        );
        if t.to == BreakerPhase::Open {
            tracing::warn!("{message}");
        } else {
            tracing::info!("{message}");
        }
        self.outbox.emit(EngineEvent::BreakerChanged {
            host: host.to_string(),
            from: t.from,
            to: t.to,
            reason: t.reason.clone(),
        });
        match t.to {
            BreakerPhase::Open => self.hold_for_breaker(host, now),
            BreakerPhase::Closed => {
                self.hosts.breaker_released(host);
                self.hold(host, Hold::Breaker, false);
            }
            BreakerPhase::HalfOpen => {}
        }
        self.hosts.breaker_changed(host);
    }

    /// Keeps the host's queue intact but hands out nothing until the next probe.
    pub(super) fn hold_for_breaker(&mut self, host: &str, now: Instant) {
        match self.hosts.breaker_hold(host, now) {
            None => {}
            Some(BreakerHold::GiveUp) => {
                let reason = format!(
                    "host kept failing for {} (breaker)",
                    humantime::format_duration(self.cfg.breaker.give_up_after)
                );
                self.give_up_host(host, &reason);
            }
            Some(BreakerHold::Hold { newly, probe_at }) => {
                if newly {
                    self.hold(host, Hold::Breaker, true);
                }
                if let Some(at) = probe_at {
                    self.timers.schedule(at.max(now), Timer::BreakerProbe, host);
                }
            }
        }
    }

    /// The cooldown is over: let the frontier hand out one URL as the probe.
    pub(super) fn breaker_probe_due(&mut self, host: &str, now: Instant) {
        match self.hosts.probe_due(host, now) {
            None => {}
            Some(Err(at)) => self.timers.schedule(at, Timer::BreakerProbe, host),
            Some(Ok(())) => self.hold(host, Hold::Breaker, false),
        }
    }

    /// Records every queued URL of a host as not crawled and stops scheduling it.
    pub(super) fn give_up_host(&mut self, host: &str, reason: &str) {
        let outcome = PageOutcome::NotCrawled {
            reason: reason.to_string(),
        };
        let dropped = self.finish_host(host, outcome);
        self.outbox.log(
            Level::Warn,
            format!("gave up {host}: {reason}; {dropped} queued URL(s) recorded as not crawled"),
        );
    }

    /// The host takes no more work: its queued URLs are recorded as
    /// `outcome`; returns how many.
    fn finish_host(&mut self, host: &str, outcome: PageOutcome) -> u64 {
        // Links of pages awaiting their group commit must be queued to be dropped.
        self.sync();
        if let Err(e) = self.hosts.give_up(host, outcome.clone()) {
            self.storage_failed(&format!("giving up {host}"), e);
        }
        self.hold(host, Hold::Finished, true);
        match self
            .frontier
            .drop_host(host, &|e| record_for(e, outcome.clone()))
        {
            Ok(n) => n,
            Err(e) if e.is_unreachable() => {
                self.storage_failed(&format!("recording the queued URLs of {host}"), e);
                self.finish_after_outage(host, outcome);
                0
            }
            Err(e) => {
                self.storage_failed(&format!("recording the queued URLs of {host}"), e);
                0
            }
        }
    }

    pub(super) fn robots_settled(
        &mut self,
        host: &str,
        origin: &Url,
        answer: RobotsAnswer,
        now: Instant,
    ) {
        let Some(settled) = self.hosts.settle_robots(host, origin, answer, now) else {
            return;
        };
        match settled {
            RobotsSettled::Open { sitemaps } => {
                self.hold(host, Hold::Robots, false);
                self.find_sitemaps(host, origin, &sitemaps);
            }
            RobotsSettled::DisallowAll => {
                let dropped = self.finish_host(host, PageOutcome::RobotsDenied);
                self.stats.count().robots_denied += dropped;
                self.outbox.log(
                    Level::Warn,
                    format!(
                        "{host}: robots.txt forbids the whole site; {dropped} URL(s) not crawled"
                    ),
                );
            }
            RobotsSettled::GaveUp => self.give_up_host(host, "robots.txt never became available"),
            RobotsSettled::OriginClosed => {
                self.outbox.log(
                    Level::Warn,
                    format!(
                        "{origin}robots.txt forbids this origin or never became available; \
                         its URLs are recorded as robots-denied, the host's others go on"
                    ),
                );
                self.hold(host, Hold::Robots, false);
            }
            RobotsSettled::KeptAfterFailure {
                age,
                attempts,
                retry_at,
            } => {
                let age = Duration::from_secs(age.as_secs());
                let next = match retry_at {
                    Some(at) => {
                        self.timers.schedule(at, Timer::RobotsRetry, host);
                        "retried with backoff"
                    }
                    None => "no more retries",
                };
                self.outbox.log(
                    Level::Warn,
                    format!(
                        "{host}: robots.txt refetch failed (attempt {attempts}); keeping rules from {} ago, {next}",
                        humantime::format_duration(age)
                    ),
                );
                self.hold(host, Hold::Robots, false);
            }
            RobotsSettled::Postponed { retry_at, state } => {
                self.timers.schedule(retry_at, Timer::RobotsRetry, host);
                self.outbox.log(
                    Level::Warn,
                    format!(
                        "{host}: robots.txt unavailable ({}); host postponed, retried with backoff",
                        state.label()
                    ),
                );
            }
        }
        self.schedule_next(host, now);
    }
}

#[cfg(test)]
#[path = "health_tests.rs"]
mod tests;
