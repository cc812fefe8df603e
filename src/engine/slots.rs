//! Crawl-wide limits on starting requests: requests in flight across all
//! hosts (pages and robots.txt alike) and the optional global rate cap.

use tokio::time::Instant;

use super::politeness::RateLimiter;

/// Counts what is in flight and decides whether another request may start.
pub(crate) struct FetchSlots {
    pages: usize,
    robots: usize,
    concurrency: usize,
    rate: RateLimiter,
    /// When the rate cap allows the next request, after a refusal.
    rate_wake: Option<Instant>,
}

impl FetchSlots {
    pub(crate) fn new(concurrency: usize, rate: Option<f64>) -> Self {
        FetchSlots {
            pages: 0,
            robots: 0,
            concurrency,
            rate: RateLimiter::new(rate),
            rate_wake: None,
        }
    }

    /// A slot is free for another request.
    pub(crate) fn has_room(&self) -> bool {
        self.pages + self.robots < self.concurrency
    }

    /// Page requests in flight.
    pub(crate) fn pages(&self) -> usize {
        self.pages
    }

    /// Page and robots.txt requests in flight.
    pub(crate) fn total(&self) -> usize {
        self.pages + self.robots
    }

    pub(crate) fn start_page(&mut self) {
        self.pages += 1;
    }

    pub(crate) fn end_page(&mut self) {
        self.pages = self.pages.saturating_sub(1);
    }

    pub(crate) fn start_robots(&mut self) {
        self.robots += 1;
    }

    pub(crate) fn end_robots(&mut self) {
        self.robots = self.robots.saturating_sub(1);
    }

    /// Takes a token of the rate cap; on refusal remembers when to try again.
    pub(crate) fn take_rate_token(&mut self, now: Instant) -> bool {
        match self.rate.try_acquire(now) {
            Ok(()) => {
                self.rate_wake = None;
                true
            }
            Err(at) => {
                self.rate_wake = Some(at);
                false
            }
        }
    }

    /// The rate cap refused a request and its time has not come yet.
    pub(crate) fn rate_limited(&self, now: Instant) -> bool {
        self.rate_wake.is_some_and(|at| at > now)
    }

    /// When the rate cap allows a request again, if it refused one.
    pub(crate) fn rate_wake(&self) -> Option<Instant> {
        self.rate_wake
    }

    pub(crate) fn concurrency(&self) -> usize {
        self.concurrency
    }

    /// Requests in flight at most; 0 is refused by the caller.
    pub(crate) fn set_concurrency(&mut self, n: usize) {
        self.concurrency = n;
    }

    /// The global cap in pages/s, if any.
    pub(crate) fn rate(&self) -> Option<f64> {
        self.rate.rate()
    }

    /// A new cap applies from now: a refusal's wake, set by the old one, goes.
    pub(crate) fn set_rate(&mut self, rate: Option<f64>, now: Instant) {
        self.rate.set_rate(rate, now);
        self.rate_wake = None;
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn slots_count_pages_and_robots_against_one_limit() {
        let mut slots = FetchSlots::new(2, None);
        slots.start_page();
        assert!(slots.has_room());
        slots.start_robots();
        assert!(!slots.has_room(), "robots.txt requests take slots too");
        slots.end_robots();
        assert_eq!((slots.pages(), slots.total()), (1, 1));
        let now = Instant::now();
        slots.set_rate(Some(1.0), now);
        assert!(slots.take_rate_token(now));
        assert!(!slots.take_rate_token(now), "one page a second");
        assert!(slots.rate_limited(now));
        let wake = slots.rate_wake().expect("refusal sets a wake time");
        assert!(wake > now && wake <= now + Duration::from_millis(1001));
        assert!(!slots.rate_limited(wake));
    }

    #[tokio::test(start_paused = true)]
    async fn a_new_rate_replaces_the_wait_the_old_one_set() {
        let mut slots = FetchSlots::new(2, Some(0.01));
        let now = Instant::now();
        assert!(slots.take_rate_token(now));
        assert!(!slots.take_rate_token(now), "the next one in 100 s");
        slots.set_rate(Some(10.0), now);
        assert!(!slots.rate_limited(now), "a faster cap asks again now");
        assert!(slots.take_rate_token(now + Duration::from_millis(101)));
        slots.set_rate(None, now);
        assert!(slots.take_rate_token(now) && !slots.rate_limited(now));
    }
}
