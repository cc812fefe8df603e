//! Per-host delay policy and the global page-rate cap (invariant
//! "politeness" in docs/ARCHITECTURE.md).
//!
//! Pure: every function takes `now` from the caller, nothing reads the clock.

use std::time::Duration;

use tokio::time::Instant;

use super::telemetry::DelaySource;
use crate::engine::config::PolitenessConfig;

/// Retry-After values are honoured only on these statuses (on a 3xx the header
/// means something else).
const RETRY_AFTER_STATUSES: [u16; 2] = [429, 503];

/// What one host's next request has to wait for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HostPoliteness {
    /// Response time of the last request (time to the full body or the error).
    last_elapsed: Option<Duration>,
    /// When that last response arrived.
    last_response_at: Option<Instant>,
    /// Retry-After of the last response when it was a 429/503.
    retry_after: Option<Duration>,
    override_delay: Option<Duration>,
    override_concurrency: Option<usize>,
    /// A floor under the delay after a request ran into the total timeout
    /// (see `back_off`); halved by every later answer.
    backoff: Option<Duration>,
}

impl HostPoliteness {
    #[cfg(test)]
    pub fn new() -> Self {
        Self::default()
    }

    /// The wait between the last response and the next request, and which term set it.
    ///
    /// `global_delay` is the crawl's current minimum delay (`politeness.min_delay`
    /// until the operator changes it). Result: an operator override if set;
    /// otherwise `max(global_delay, crawl_delay, delay_factor × last response time)`
    /// capped at `max_delay`, plus a pending Retry-After, itself capped at `max_delay`.
    pub fn next_delay(
        &self,
        cfg: &PolitenessConfig,
        global_delay: Duration,
        crawl_delay: Option<Duration>,
    ) -> (Duration, DelaySource) {
        if let Some(delay) = self.override_delay {
            return (delay, DelaySource::Operator);
        }
        let mut base = (global_delay, DelaySource::Config);
        if let Some(crawl) = crawl_delay {
            if crawl > base.0 {
                base = (crawl, DelaySource::CrawlDelay);
            }
        }
        if let Some(elapsed) = self.last_elapsed {
            let adaptive = scale(elapsed, cfg.delay_factor);
            if adaptive > base.0 {
                base = (adaptive, DelaySource::Adaptive);
            }
        }
        if let Some(backoff) = self.backoff {
            if backoff > base.0 {
                base = (backoff, DelaySource::Adaptive);
            }
        }
        let base_delay = base.0.min(cfg.max_delay);
        match self.retry_after {
            Some(retry) if !retry.is_zero() => {
                let retry = retry.min(cfg.max_delay);
                let source = if retry >= base_delay {
                    DelaySource::RetryAfter
                } else {
                    base.1
                };
                (base_delay.saturating_add(retry), source)
            }
            _ => (base_delay, base.1),
        }
    }

    /// When the next request may start, or `None` before the first response
    /// (the first request of a host waits only for robots.txt).
    #[cfg(test)]
    pub fn next_allowed_at(
        &self,
        cfg: &PolitenessConfig,
        global_delay: Duration,
        crawl_delay: Option<Duration>,
    ) -> Option<Instant> {
        let at = self.last_response_at?;
        Some(at + self.next_delay(cfg, global_delay, crawl_delay).0)
    }

    /// Records a finished request. `status` is `None` when no HTTP response came
    /// back (connect error, timeout); its elapsed time still slows the host down.
    pub fn record_response(
        &mut self,
        elapsed: Duration,
        status: Option<u16>,
        retry_after: Option<Duration>,
        now: Instant,
    ) {
        self.last_elapsed = Some(elapsed);
        self.last_response_at = Some(now);
        if status.is_some() {
            // Each answer relaxes a back-off by half: a host that recovered
            // returns to its normal pace within a few pages.
            self.backoff = self.backoff.map(|b| b / 2).filter(|b| !b.is_zero());
        }
        self.retry_after = match status {
            Some(code) if RETRY_AFTER_STATUSES.contains(&code) => retry_after,
            _ => None,
        };
    }

    /// A request held the connection for `held` without finishing (the total
    /// timeout cut a trickling body): the host is overloaded or throttling us.
    /// The delay is at least `held` (capped at `max_delay` by `next_delay`)
    /// until later answers relax it, so one quick answer after a trickle does
    /// not bring back the full pace at once.
    pub fn back_off(&mut self, held: Duration) {
        self.backoff = Some(self.backoff.map_or(held, |b| b.max(held)));
    }

    /// When the last response arrived.
    pub fn last_response_at(&self) -> Option<Instant> {
        self.last_response_at
    }

    pub fn override_delay(&self) -> Option<Duration> {
        self.override_delay
    }

    pub fn override_concurrency(&self) -> Option<usize> {
        self.override_concurrency
    }

    pub fn set_override_delay(&mut self, d: Option<Duration>) {
        self.override_delay = d;
    }

    pub fn set_override_concurrency(&mut self, n: Option<usize>) {
        self.override_concurrency = n;
    }

    /// Requests this host may have in flight; never below one.
    pub fn max_in_flight(&self, cfg: &PolitenessConfig) -> usize {
        self.override_concurrency.unwrap_or(cfg.per_host).max(1)
    }
}

/// `d × factor` without panicking on odd factors (NaN, negative, huge).
fn scale(d: Duration, factor: f64) -> Duration {
    if !(factor.is_finite() && factor > 0.0) {
        return Duration::ZERO;
    }
    Duration::try_from_secs_f64(d.as_secs_f64() * factor).unwrap_or(Duration::MAX)
}

/// Global pages-per-second cap: a token bucket holding at most
/// `max(1, rate / 20)` tokens, so bursts stay within ~50 ms worth of pages.
#[derive(Debug, Clone)]
pub struct RateLimiter {
    rate: Option<f64>,
    tokens: f64,
    updated: Option<Instant>,
}

impl RateLimiter {
    /// `None`, zero, negative or non-finite rates mean no cap.
    pub fn new(rate: Option<f64>) -> Self {
        RateLimiter {
            rate: sanitize_rate(rate),
            tokens: 1.0,
            updated: None,
        }
    }

    pub fn rate(&self) -> Option<f64> {
        self.rate
    }

    /// Changes the cap at runtime; tokens already earned are kept up to the new capacity.
    pub fn set_rate(&mut self, rate: Option<f64>, now: Instant) {
        self.refill(now);
        self.rate = sanitize_rate(rate);
        self.tokens = self.tokens.min(self.capacity());
    }

    /// Takes one token, or says when the next one will be there.
    pub fn try_acquire(&mut self, now: Instant) -> Result<(), Instant> {
        let Some(rate) = self.rate else {
            return Ok(());
        };
        self.refill(now);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            return Ok(());
        }
        let missing = 1.0 - self.tokens;
        let wait = Duration::try_from_secs_f64(missing / rate).unwrap_or(Duration::from_secs(1));
        // Round up to a whole microsecond so the retry never lands just short.
        Err(now + wait + Duration::from_micros(1))
    }

    fn capacity(&self) -> f64 {
        self.rate.map_or(1.0, |r| (r / 20.0).max(1.0))
    }

    fn refill(&mut self, now: Instant) {
        if let (Some(rate), Some(last)) = (self.rate, self.updated) {
            let earned = now.saturating_duration_since(last).as_secs_f64() * rate;
            self.tokens = (self.tokens + earned).min(self.capacity());
        }
        self.updated = Some(now);
    }
}

fn sanitize_rate(rate: Option<f64>) -> Option<f64> {
    rate.filter(|r| r.is_finite() && *r > 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> PolitenessConfig {
        PolitenessConfig {
            per_host: 2,
            min_delay: Duration::from_secs(1),
            delay_factor: 2.0,
            max_delay: Duration::from_secs(60),
        }
    }

    const S: fn(u64) -> Duration = Duration::from_secs;
    const MS: fn(u64) -> Duration = Duration::from_millis;

    #[test]
    fn fresh_host_waits_the_global_delay() {
        let p = HostPoliteness::new();
        assert_eq!(
            p.next_delay(&cfg(), S(1), None),
            (S(1), DelaySource::Config)
        );
        assert_eq!(
            p.next_delay(&cfg(), S(3), None),
            (S(3), DelaySource::Config)
        );
    }

    #[test]
    fn crawl_delay_wins_when_longer() {
        let p = HostPoliteness::new();
        assert_eq!(
            p.next_delay(&cfg(), S(1), Some(S(5))),
            (S(5), DelaySource::CrawlDelay)
        );
        // Shorter than the global delay: the global delay stays.
        assert_eq!(
            p.next_delay(&cfg(), S(2), Some(MS(500))),
            (S(2), DelaySource::Config)
        );
    }

    #[test]
    fn slow_responses_stretch_the_delay() {
        let now = Instant::now();
        let mut p = HostPoliteness::new();
        p.record_response(MS(1500), Some(200), None, now);
        assert_eq!(
            p.next_delay(&cfg(), S(1), Some(S(2))),
            (S(3), DelaySource::Adaptive)
        );
        // A fast response shrinks it back.
        p.record_response(MS(10), Some(200), None, now);
        assert_eq!(
            p.next_delay(&cfg(), S(1), None),
            (S(1), DelaySource::Config)
        );
    }

    #[test]
    fn a_total_timeout_raises_the_delay_until_answers_relax_it() {
        let c = cfg();
        let global = Duration::from_secs(1);
        let t0 = Instant::now();
        let mut p = HostPoliteness::new();
        p.record_response(Duration::from_secs(30), None, None, t0);
        p.back_off(Duration::from_secs(30));
        assert_eq!(
            p.next_delay(&c, global, None),
            (Duration::from_secs(60), DelaySource::Adaptive)
        );
        // A quick answer: the adaptive term forgets the slow one, the back-off halves.
        p.record_response(Duration::from_millis(10), Some(200), None, t0);
        assert_eq!(
            p.next_delay(&c, global, None),
            (Duration::from_secs(15), DelaySource::Adaptive)
        );
        p.record_response(Duration::from_millis(10), Some(200), None, t0);
        assert_eq!(
            p.next_delay(&c, global, None).0,
            Duration::from_millis(7500)
        );
        for _ in 0..10 {
            p.record_response(Duration::from_millis(10), Some(200), None, t0);
        }
        assert_eq!(
            p.next_delay(&c, global, None),
            (global, DelaySource::Config)
        );
        // Capped at max_delay like every other term; the operator still wins.
        p.back_off(Duration::from_secs(600));
        assert_eq!(p.next_delay(&c, global, None).0, c.max_delay);
        p.set_override_delay(Some(Duration::from_secs(2)));
        assert_eq!(p.next_delay(&c, global, None).0, Duration::from_secs(2));
    }

    #[test]
    fn delay_is_capped_at_max_delay() {
        let now = Instant::now();
        let mut p = HostPoliteness::new();
        p.record_response(S(100), None, None, now);
        assert_eq!(
            p.next_delay(&cfg(), S(1), None),
            (S(60), DelaySource::Adaptive)
        );
        assert_eq!(
            HostPoliteness::new().next_delay(&cfg(), S(1), Some(S(600))),
            (S(60), DelaySource::CrawlDelay)
        );
    }

    #[test]
    fn retry_after_adds_to_the_delay_and_is_capped() {
        let now = Instant::now();
        let mut p = HostPoliteness::new();
        p.record_response(MS(10), Some(503), Some(S(10)), now);
        assert_eq!(
            p.next_delay(&cfg(), S(1), None),
            (S(11), DelaySource::RetryAfter)
        );
        p.record_response(MS(10), Some(429), Some(S(3600)), now);
        assert_eq!(
            p.next_delay(&cfg(), S(1), None),
            (S(61), DelaySource::RetryAfter)
        );
        // A smaller Retry-After than the base keeps the base's source.
        p.record_response(MS(10), Some(429), Some(MS(100)), now);
        assert_eq!(
            p.next_delay(&cfg(), S(1), Some(S(5))),
            (MS(5100), DelaySource::CrawlDelay)
        );
    }

    #[test]
    fn retry_after_only_counts_on_429_and_503_and_clears() {
        let now = Instant::now();
        let mut p = HostPoliteness::new();
        p.record_response(MS(10), Some(301), Some(S(10)), now);
        assert_eq!(
            p.next_delay(&cfg(), S(1), None),
            (S(1), DelaySource::Config)
        );
        p.record_response(MS(10), Some(503), Some(S(10)), now);
        p.record_response(MS(10), Some(200), None, now);
        assert_eq!(
            p.next_delay(&cfg(), S(1), None),
            (S(1), DelaySource::Config)
        );
    }

    #[test]
    fn operator_override_wins_over_everything() {
        let now = Instant::now();
        let mut p = HostPoliteness::new();
        p.record_response(S(1), Some(503), Some(S(30)), now);
        p.set_override_delay(Some(MS(250)));
        assert_eq!(
            p.next_delay(&cfg(), S(1), Some(S(9))),
            (MS(250), DelaySource::Operator)
        );
        p.set_override_delay(None);
        assert_eq!(p.next_delay(&cfg(), S(1), None).1, DelaySource::RetryAfter);
    }

    #[test]
    fn next_allowed_at_counts_from_the_last_response() {
        let now = Instant::now();
        let mut p = HostPoliteness::new();
        assert_eq!(p.next_allowed_at(&cfg(), S(1), None), None);
        p.record_response(MS(100), Some(200), None, now);
        assert_eq!(p.next_allowed_at(&cfg(), S(1), None), Some(now + S(1)));
        assert_eq!(p.last_response_at(), Some(now));
    }

    #[test]
    fn odd_delay_factors_do_not_panic() {
        let now = Instant::now();
        let mut p = HostPoliteness::new();
        p.record_response(Duration::MAX, None, None, now);
        let mut c = cfg();
        c.delay_factor = f64::MAX;
        assert_eq!(p.next_delay(&c, S(1), None).0, S(60));
        c.delay_factor = f64::NAN;
        assert_eq!(p.next_delay(&c, S(1), None), (S(1), DelaySource::Config));
    }

    #[test]
    fn concurrency_override_and_floor() {
        let mut p = HostPoliteness::new();
        assert_eq!(p.max_in_flight(&cfg()), 2);
        p.set_override_concurrency(Some(5));
        assert_eq!(p.max_in_flight(&cfg()), 5);
        p.set_override_concurrency(Some(0));
        assert_eq!(p.max_in_flight(&cfg()), 1);
        p.set_override_concurrency(None);
        assert_eq!(p.max_in_flight(&cfg()), 2);
    }

    #[test]
    fn rate_limiter_off_never_waits() {
        let now = Instant::now();
        for rate in [
            None,
            Some(0.0),
            Some(-1.0),
            Some(f64::NAN),
            Some(f64::INFINITY),
        ] {
            let mut limiter = RateLimiter::new(rate);
            assert_eq!(limiter.rate(), None);
            for _ in 0..1000 {
                assert_eq!(limiter.try_acquire(now), Ok(()));
            }
        }
    }

    #[test]
    fn rate_limiter_paces_pages() {
        let start = Instant::now();
        let mut limiter = RateLimiter::new(Some(2.0));
        assert_eq!(limiter.try_acquire(start), Ok(()));
        let retry = limiter.try_acquire(start).unwrap_err();
        assert!(
            retry > start + MS(499) && retry < start + MS(501),
            "{retry:?}"
        );
        assert!(limiter.try_acquire(start + MS(400)).is_err());
        assert_eq!(limiter.try_acquire(start + MS(500)), Ok(()));
        // Ten seconds idle earn at most a capacity of one page at 2/s.
        assert_eq!(limiter.try_acquire(start + S(10)), Ok(()));
        assert!(limiter.try_acquire(start + S(10)).is_err());
    }

    #[test]
    fn rate_limiter_counts_pages_over_a_second() {
        let start = Instant::now();
        let mut limiter = RateLimiter::new(Some(100.0));
        let mut granted = 0;
        let mut t = start;
        while t < start + S(1) {
            if limiter.try_acquire(t).is_ok() {
                granted += 1;
            }
            t += MS(1);
        }
        // 100/s plus the initial burst capacity of 5.
        assert!((100..=106).contains(&granted), "{granted}");
    }

    #[test]
    fn rate_limiter_rate_changes_at_runtime() {
        let start = Instant::now();
        let mut limiter = RateLimiter::new(Some(1.0));
        assert_eq!(limiter.try_acquire(start), Ok(()));
        assert!(limiter.try_acquire(start + MS(100)).is_err());
        limiter.set_rate(Some(10.0), start + MS(100));
        assert_eq!(limiter.try_acquire(start + MS(200)), Ok(()));
        limiter.set_rate(None, start + MS(200));
        assert_eq!(limiter.try_acquire(start + MS(200)), Ok(()));
        assert_eq!(limiter.rate(), None);
    }
}
