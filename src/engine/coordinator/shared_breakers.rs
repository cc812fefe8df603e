//! A shared crawl's circuit breakers are the crawl's: a breaker that opens
//! or closes here is shared, and one another worker opened or closed is
//! followed here: OPEN until the shared probe time (so this worker does not
//! fetch the host meanwhile), CLOSED once another worker's probe succeeded.
//! The probe goes out from the worker that holds the host's lease when it is
//! due, and the shared record is time-based, so a dead worker leaves no host
//! stuck. A local frontier shares nothing, so a single process follows
//! nothing.

use tokio::time::Instant;

use super::Coordinator;
use crate::engine::frontier::SharedBreaker;
use crate::engine::hosts::Followed;
use crate::engine::telemetry::BreakerPhase;

impl Coordinator {
    /// Follows the breakers other workers changed since the last look.
    pub(super) fn follow_shared_breakers(&mut self, now: Instant) {
        let news = match self.frontier.breaker_news() {
            Ok(news) => news,
            Err(e) => return self.storage_failed("reading the crawl's breakers", e),
        };
        for (host, shared) in news {
            self.follow_breaker(&host, &shared, now);
        }
    }

    /// Hosts this worker just adopted take their breaker from the crawl.
    pub(super) fn adopt_shared_breakers(&mut self, hosts: &[&str], now: Instant) {
        let shared = match self.frontier.shared_breakers(hosts) {
            Ok(shared) => shared,
            Err(e) => return self.storage_failed("reading the crawl's breakers", e),
        };
        for (host, shared) in hosts.iter().zip(shared) {
            if let Some(shared) = shared {
                self.follow_breaker(host, &shared, now);
            }
        }
    }

    /// A host just claimed follows the breaker read with the claim (this
    /// worker may not have looked since it changed, or forgot the host).
    pub(super) fn follow_claimed_breaker(&mut self, host: &str, now: Instant) {
        if let Some(shared) = self.frontier.claimed_breaker(host) {
            self.hosts.bring_back(host);
            self.follow_breaker(host, &shared, now);
        }
    }

    fn follow_breaker(&mut self, host: &str, shared: &SharedBreaker, now: Instant) {
        let reason = format!("{} (worker {})", shared.reason, shared.by);
        match self
            .hosts
            .breaker_follow(host, shared.open.as_ref(), &reason)
        {
            None | Some(Followed::Same) => {}
            Some(Followed::Changed(t)) => self.apply_breaker_transition(host, t, now),
            Some(Followed::Retimed) => {
                self.hosts.breaker_changed(host);
                self.hold_for_breaker(host, now);
            }
        }
    }

    /// This worker's breaker of `host` opened or closed: every worker follows.
    pub(super) fn share_breaker_change(
        &mut self,
        host: &str,
        to: BreakerPhase,
        reason: &str,
        now: Instant,
    ) {
        if to == BreakerPhase::HalfOpen {
            return;
        }
        let open = self.hosts.breaker_shared(host, now);
        if let Err(e) = self.frontier.share_breaker(host, open.as_ref(), reason) {
            self.storage_failed(&format!("sharing the breaker of {host}"), e);
        }
    }
}

#[cfg(test)]
#[path = "shared_breakers_tests.rs"]
mod tests;
