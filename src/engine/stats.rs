//! The crawl's counters and elapsed time, and sliding-window rates for the
//! snapshot: pages/s globally, req/s per host.

use std::collections::VecDeque;
use std::time::Duration;

use tokio::time::Instant;

use super::store::{keys, CrawlBatch, Store, StoreError, Tree};
use super::telemetry::Counters;

/// Window of the crawl-wide pages/s and bytes/s.
const RATE_WINDOW: Duration = Duration::from_secs(5);
/// Where an earlier version kept the counters and elapsed time (the typed
/// `meta` tree, written only at checkpoints): read when the crawl tree has none.
const OLD_COUNTERS_KEY: &[u8] = b"counters";
const OLD_ELAPSED_KEY: &[u8] = b"elapsed_ms";

/// Events in the last `window`, as a rate. Bounded: at most `cap` timestamps kept.
#[derive(Debug, Clone)]
pub struct EventRate {
    window: Duration,
    cap: usize,
    times: VecDeque<Instant>,
}

impl EventRate {
    pub fn new(window: Duration, cap: usize) -> Self {
        EventRate {
            window,
            cap,
            times: VecDeque::new(),
        }
    }

    pub fn record(&mut self, now: Instant) {
        if self.times.len() == self.cap {
            self.times.pop_front();
        }
        self.times.push_back(now);
    }

    pub fn per_sec(&mut self, now: Instant) -> f64 {
        while self
            .times
            .front()
            .is_some_and(|t| now.duration_since(*t) > self.window)
        {
            self.times.pop_front();
        }
        self.times.len() as f64 / self.window.as_secs_f64()
    }
}

/// Counter samples taken at snapshot time; the rate is the slope over the window.
#[derive(Debug, Clone)]
pub struct CounterRate {
    window: Duration,
    samples: VecDeque<(Instant, u64)>,
}

impl CounterRate {
    pub fn new(window: Duration) -> Self {
        CounterRate {
            window,
            samples: VecDeque::new(),
        }
    }

    pub fn sample(&mut self, now: Instant, value: u64) -> f64 {
        self.samples.push_back((now, value));
        while self.samples.len() > 2 && now.duration_since(self.samples[1].0) >= self.window {
            self.samples.pop_front();
        }
        let (t0, v0) = self.samples[0];
        let dt = now.duration_since(t0).as_secs_f64();
        if dt <= 0.0 {
            0.0
        } else {
            value.saturating_sub(v0) as f64 / dt
        }
    }
}

/// Mean of the last few latencies.
#[derive(Debug, Clone, Default)]
pub struct RecentLatency {
    values: VecDeque<Duration>,
}

impl RecentLatency {
    const KEEP: usize = 20;

    pub fn record(&mut self, d: Duration) {
        if self.values.len() == Self::KEEP {
            self.values.pop_front();
        }
        self.values.push_back(d);
    }

    pub fn mean(&self) -> Duration {
        if self.values.is_empty() {
            return Duration::ZERO;
        }
        self.values.iter().sum::<Duration>() / self.values.len() as u32
    }
}

/// The crawl's counters and clock: what it has done, for how long, and how
/// fast lately. Stored at checkpoints so a resumed crawl continues them.
pub(crate) struct CrawlStats {
    counters: Counters,
    pages_rate: CounterRate,
    bytes_rate: CounterRate,
    started: Instant,
    /// Elapsed time of earlier runs of this crawl.
    elapsed_before: Duration,
}

impl CrawlStats {
    /// The stored counters and elapsed time, or zero for a fresh start (a new
    /// crawl, or a recrawl pass, which has counters of its own).
    pub(crate) fn load(store: &Store, fresh: bool) -> Result<Self, StoreError> {
        let (counters, elapsed_ms) = if fresh {
            (Counters::default(), 0)
        } else {
            let counters = match store.get_progress(keys::META_COUNTERS)? {
                Some(counters) => Some(counters),
                None => store.get(Tree::Meta, OLD_COUNTERS_KEY)?,
            };
            let elapsed = match store.get_progress(keys::META_ELAPSED)? {
                Some(ms) => Some(ms),
                None => store.get(Tree::Meta, OLD_ELAPSED_KEY)?,
            };
            (counters.unwrap_or_default(), elapsed.unwrap_or(0u64))
        };
        Ok(CrawlStats {
            counters,
            pages_rate: CounterRate::new(RATE_WINDOW),
            bytes_rate: CounterRate::new(RATE_WINDOW),
            started: Instant::now(),
            elapsed_before: Duration::from_millis(elapsed_ms),
        })
    }

    pub(crate) fn counters(&self) -> &Counters {
        &self.counters
    }

    /// The counters, to count something that happened.
    pub(crate) fn count(&mut self) -> &mut Counters {
        &mut self.counters
    }

    /// Crawling time over all runs of this crawl.
    pub(crate) fn elapsed(&self) -> Duration {
        self.elapsed_before + self.started.elapsed()
    }

    /// Pages/s and bytes/s over the last few seconds.
    pub(crate) fn sample_rates(&mut self, now: Instant) -> (f64, f64) {
        (
            self.pages_rate.sample(now, self.counters.pages_fetched),
            self.bytes_rate.sample(now, self.counters.bytes),
        )
    }

    /// Puts the counters and elapsed time into `batch`, which the caller
    /// writes with the pages they count and the hosts' figures (which must
    /// agree with them).
    pub(crate) fn save_into(&self, batch: &mut CrawlBatch) -> Result<(), StoreError> {
        let elapsed = encode(&(self.elapsed().as_millis() as u64))?;
        batch.set_meta(keys::META_ELAPSED, &elapsed);
        batch.set_meta(keys::META_COUNTERS, &encode(&self.counters)?);
        Ok(())
    }
}

fn encode(value: &impl serde::Serialize) -> Result<Vec<u8>, StoreError> {
    serde_json::to_vec(value).map_err(|source| StoreError::Encode {
        what: "crawl progress",
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Stores the counters as the coordinator's sync does.
    fn save(stats: &CrawlStats, store: &Store) {
        let mut batch = CrawlBatch::default();
        stats.save_into(&mut batch).expect("encoded");
        store.apply(batch).expect("saved");
    }

    #[tokio::test(start_paused = true)]
    async fn crawl_counters_and_time_continue_after_a_restart_but_not_in_a_new_pass() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Store::open(dir.path(), 1 << 20).expect("store");
        let mut stats = CrawlStats::load(&store, false).expect("fresh");
        stats.count().pages_fetched += 7;
        stats.count().bytes += 700;
        stats.count().links_cut += 1500;
        stats.count().pages_cut += 2;
        tokio::time::advance(Duration::from_secs(3)).await;
        save(&stats, &store);

        let resumed = CrawlStats::load(&store, false).expect("resumed");
        assert_eq!(resumed.counters().pages_fetched, 7);
        assert_eq!(
            (resumed.counters().links_cut, resumed.counters().pages_cut),
            (1500, 2)
        );
        assert!(
            resumed.elapsed() >= Duration::from_secs(3),
            "elapsed time carries on"
        );
        let pass = CrawlStats::load(&store, true).expect("new pass");
        assert_eq!(pass.counters(), &Counters::default());
        assert_eq!(pass.elapsed(), Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn counters_an_earlier_version_kept_in_sled_are_read_until_saved_again() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Store::open(dir.path(), 1 << 20).expect("store");
        let old = Counters {
            pages_fetched: 11,
            ..Counters::default()
        };
        store.put(Tree::Meta, OLD_COUNTERS_KEY, &old).unwrap();
        store.put(Tree::Meta, OLD_ELAPSED_KEY, &5_000u64).unwrap();
        let mut resumed = CrawlStats::load(&store, false).expect("resumed");
        assert_eq!(resumed.counters().pages_fetched, 11);
        assert!(resumed.elapsed() >= Duration::from_secs(5));

        resumed.count().pages_fetched += 1;
        save(&resumed, &store);
        let again = CrawlStats::load(&store, false).expect("resumed again");
        assert_eq!(again.counters().pages_fetched, 12, "the crawl tree's wins");
    }

    #[tokio::test(start_paused = true)]
    async fn event_rate_forgets_old_events() {
        let mut r = EventRate::new(Duration::from_secs(10), 100);
        let t0 = Instant::now();
        for i in 0..20 {
            r.record(t0 + Duration::from_millis(i * 500));
        }
        assert_eq!(r.per_sec(t0 + Duration::from_millis(9_500)), 2.0);
        assert_eq!(r.per_sec(t0 + Duration::from_secs(25)), 0.0);
    }

    #[tokio::test(start_paused = true)]
    async fn counter_rate_is_the_slope() {
        let mut r = CounterRate::new(Duration::from_secs(5));
        let t0 = Instant::now();
        assert_eq!(r.sample(t0, 0), 0.0);
        for s in 1..=10u64 {
            let rate = r.sample(t0 + Duration::from_secs(s), s * 30);
            assert!((rate - 30.0).abs() < 1e-9, "{rate}");
        }
    }

    #[test]
    fn latency_mean_of_recent() {
        let mut l = RecentLatency::default();
        assert_eq!(l.mean(), Duration::ZERO);
        for ms in [100, 300] {
            l.record(Duration::from_millis(ms));
        }
        assert_eq!(l.mean(), Duration::from_millis(200));
    }
}
