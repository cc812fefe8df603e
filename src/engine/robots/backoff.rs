//! Retry schedule for a robots.txt that is unavailable (5xx, timeouts): the host
//! is postponed, retried with doubling waits, and given up after a bounded time
//! so the crawl always ends (invariant "a crawl always ends" in
//! docs/ARCHITECTURE.md).

use std::time::Duration;

use tokio::time::Instant;

use crate::engine::config::RobotsConfig;

/// First retry with the default `give_up_after` (10 min).
pub const RETRY_BASE: Duration = Duration::from_secs(30);
/// Longest wait between two attempts.
pub const RETRY_MAX: Duration = Duration::from_secs(600);

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RobotsBackoff {
    base: Duration,
    max: Duration,
    give_up_after: Duration,
    first_failure: Option<Instant>,
    attempts: u32,
}

impl RobotsBackoff {
    /// The schedule scales with `give_up_after`: the first retry comes after a
    /// twentieth of it (30 s for the default 10 min), so short test settings
    /// retry quickly and a host gets several attempts before it is given up.
    pub fn new(cfg: &RobotsConfig) -> Self {
        let base = (cfg.give_up_after / 20).clamp(Duration::from_millis(1), RETRY_BASE);
        Self::with_schedule(base, RETRY_MAX, cfg.give_up_after)
    }

    pub fn with_schedule(base: Duration, max: Duration, give_up_after: Duration) -> Self {
        RobotsBackoff {
            base,
            max: max.max(base),
            give_up_after,
            first_failure: None,
            attempts: 0,
        }
    }

    /// Records a failed attempt and returns when to try again: `base × 2^(n-1)`
    /// or the server's Retry-After if longer, at most `max`, and never later
    /// than the give-up deadline.
    pub fn record_failure(&mut self, now: Instant, retry_after: Option<Duration>) -> Instant {
        let first = *self.first_failure.get_or_insert(now);
        self.attempts = self.attempts.saturating_add(1);
        let exp = self.attempts.saturating_sub(1).min(20);
        let wait = self
            .base
            .saturating_mul(1u32 << exp)
            .max(retry_after.unwrap_or(Duration::ZERO))
            .min(self.max);
        (now + wait).min(first + self.give_up_after).max(now)
    }

    /// Failed attempts since the last success.
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    #[cfg(test)]
    pub fn first_failure(&self) -> Option<Instant> {
        self.first_failure
    }

    /// True once `give_up_after` has passed since the first failure.
    pub fn gave_up(&self, now: Instant) -> bool {
        self.first_failure
            .is_some_and(|first| now.saturating_duration_since(first) >= self.give_up_after)
    }

    /// robots.txt came back: start over on the next outage.
    #[cfg(test)]
    pub fn reset(&mut self) {
        self.first_failure = None;
        self.attempts = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: fn(u64) -> Duration = Duration::from_secs;

    #[test]
    fn default_schedule_doubles_from_30s_to_the_cap() {
        let mut b = RobotsBackoff::with_schedule(RETRY_BASE, RETRY_MAX, S(24 * 3600));
        let t0 = Instant::now();
        let waits: Vec<u64> = (0..8)
            .map(|_| (b.record_failure(t0, None) - t0).as_secs())
            .collect();
        assert_eq!(waits, [30, 60, 120, 240, 480, 600, 600, 600]);
        assert_eq!(b.attempts(), 8);
    }

    #[test]
    fn default_config_starts_at_30s() {
        let mut b = RobotsBackoff::new(&RobotsConfig::default());
        let t0 = Instant::now();
        assert_eq!(b.record_failure(t0, None), t0 + S(30));
    }

    #[test]
    fn short_give_up_scales_the_schedule() {
        let cfg = RobotsConfig {
            give_up_after: Duration::from_secs(2),
            ..Default::default()
        };
        let mut b = RobotsBackoff::new(&cfg);
        let t0 = Instant::now();
        assert_eq!(b.record_failure(t0, None), t0 + Duration::from_millis(100));
    }

    #[test]
    fn retry_after_stretches_but_stays_capped() {
        let mut b = RobotsBackoff::with_schedule(S(30), S(600), S(3600));
        let t0 = Instant::now();
        assert_eq!(b.record_failure(t0, Some(S(120))), t0 + S(120));
        assert_eq!(b.record_failure(t0, Some(S(86_400))), t0 + S(600));
    }

    #[test]
    fn gives_up_after_the_deadline_and_never_schedules_past_it() {
        let mut b = RobotsBackoff::with_schedule(S(30), S(600), S(100));
        let t0 = Instant::now();
        assert!(!b.gave_up(t0));
        let mut now = t0;
        let mut tries = 0;
        while !b.gave_up(now) {
            let next = b.record_failure(now, None);
            assert!(next <= t0 + S(100));
            now = next;
            tries += 1;
            assert!(tries < 10, "backoff never gave up");
        }
        // 30, 60 (at 90), then the deadline at 100.
        assert_eq!(tries, 3);
        assert_eq!(now, t0 + S(100));
    }

    #[test]
    fn success_resets_the_clock() {
        let mut b = RobotsBackoff::with_schedule(S(30), S(600), S(100));
        let t0 = Instant::now();
        b.record_failure(t0, None);
        b.reset();
        assert!(!b.gave_up(t0 + S(1000)));
        assert_eq!(b.record_failure(t0 + S(1000), None), t0 + S(1030));
        assert_eq!(b.first_failure(), Some(t0 + S(1000)));
    }
}
