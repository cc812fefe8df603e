//! The demo web's request log: what a crawler actually asked for, when, and
//! how many requests to the same site were in flight at that moment.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::time::Instant;

use super::SiteKind;

/// Records kept in memory; requests beyond this are only counted.
pub const MAX_RECORDS: usize = 1_000_000;

/// Status logged for a request that got no response (the connection was dropped).
pub const STATUS_NO_RESPONSE: u16 = 0;

#[derive(Clone, Debug)]
pub struct RequestRecord {
    pub site: SiteKind,
    pub host_header: String,
    pub method: String,
    /// As the client sent it (not decoded).
    pub path_and_query: String,
    pub user_agent: Option<String>,
    pub from: Option<String>,
    pub if_none_match: Option<String>,
    pub if_modified_since: Option<String>,
    pub started: Instant,
    /// When the response body was fully handed over, or the exchange was abandoned.
    pub finished: Option<Instant>,
    /// [`STATUS_NO_RESPONSE`] when the connection was dropped without a response.
    pub status: u16,
    /// Requests to the same site in flight when this one began, including itself.
    pub in_flight_at_start: usize,
}

/// Per-site in-flight gauge, shared between the log and the site's server.
#[derive(Default, Debug)]
pub(crate) struct SiteGauge {
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
}

impl SiteGauge {
    /// Counts a request in; returns the in-flight count including it.
    pub fn enter(&self) -> usize {
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_in_flight.fetch_max(now, Ordering::SeqCst);
        now
    }

    pub fn leave(&self) {
        // Saturating: a stray double leave must not wrap around.
        let _ = self
            .in_flight
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                Some(n.saturating_sub(1))
            });
    }
}

struct LogInner {
    capacity: usize,
    records: Mutex<Vec<RequestRecord>>,
    total: AtomicU64,
    gauges: Mutex<HashMap<SiteKind, Arc<SiteGauge>>>,
}

/// Arc-backed; cloning is cheap and every clone sees the same log.
#[derive(Clone)]
pub struct RequestLog {
    inner: Arc<LogInner>,
}

impl Default for RequestLog {
    fn default() -> Self {
        Self::with_capacity(MAX_RECORDS)
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A poisoned lock only means another thread panicked mid-push; the data is still usable.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl RequestLog {
    pub fn new() -> Self {
        Self::default()
    }

    /// A log that keeps at most `capacity` records and only counts the rest.
    pub fn with_capacity(capacity: usize) -> Self {
        RequestLog {
            inner: Arc::new(LogInner {
                capacity,
                records: Mutex::default(),
                total: AtomicU64::new(0),
                gauges: Mutex::default(),
            }),
        }
    }

    pub(crate) fn gauge(&self, site: SiteKind) -> Arc<SiteGauge> {
        lock(&self.inner.gauges).entry(site).or_default().clone()
    }

    /// Appends a record; returns its index, or `None` once the log is full.
    pub(crate) fn push(&self, record: RequestRecord) -> Option<usize> {
        self.inner.total.fetch_add(1, Ordering::Relaxed);
        let mut records = lock(&self.inner.records);
        if records.len() >= self.inner.capacity {
            return None;
        }
        records.push(record);
        Some(records.len() - 1)
    }

    pub(crate) fn set_status(&self, index: usize, status: u16) {
        if let Some(r) = lock(&self.inner.records).get_mut(index) {
            r.status = status;
        }
    }

    pub(crate) fn mark_finished(&self, index: usize, at: Instant) {
        if let Some(r) = lock(&self.inner.records).get_mut(index) {
            r.finished = Some(at);
        }
    }

    /// Every kept record, in arrival order.
    pub fn records(&self) -> Vec<RequestRecord> {
        lock(&self.inner.records).clone()
    }

    pub fn for_site(&self, site: SiteKind) -> Vec<RequestRecord> {
        lock(&self.inner.records)
            .iter()
            .filter(|r| r.site == site)
            .cloned()
            .collect()
    }

    /// Paths requested from one site, in arrival order (as sent, not decoded).
    pub fn paths(&self, site: SiteKind) -> Vec<String> {
        lock(&self.inner.records)
            .iter()
            .filter(|r| r.site == site)
            .map(|r| r.path_and_query.clone())
            .collect()
    }

    /// Paths (without query) requested from one site with every `%XX` decoded, so
    /// `/%7Efred/a.html` and `/~fred/a.html` compare equal.
    pub fn decoded_paths(&self, site: SiteKind) -> Vec<String> {
        lock(&self.inner.records)
            .iter()
            .filter(|r| r.site == site)
            .map(|r| {
                let path = r.path_and_query.split('?').next().unwrap_or("");
                super::html::percent_decode(path)
            })
            .collect()
    }

    /// All requests seen, including those past [`MAX_RECORDS`] that were only counted.
    pub fn count(&self) -> usize {
        self.inner.total.load(Ordering::Relaxed) as usize
    }

    /// Requests counted but not kept because the log was full.
    pub fn dropped(&self) -> usize {
        self.count().saturating_sub(lock(&self.inner.records).len())
    }

    /// The highest number of simultaneous requests the site has seen.
    pub fn max_in_flight(&self, site: SiteKind) -> usize {
        lock(&self.inner.gauges)
            .get(&site)
            .map_or(0, |g| g.max_in_flight.load(Ordering::SeqCst))
    }

    /// Requests to the site currently being answered.
    pub fn in_flight(&self, site: SiteKind) -> usize {
        lock(&self.inner.gauges)
            .get(&site)
            .map_or(0, |g| g.in_flight.load(Ordering::SeqCst))
    }

    /// Forgets all records (gauges' maxima included), e.g. between benchmark phases.
    pub fn clear(&self) {
        lock(&self.inner.records).clear();
        self.inner.total.store(0, Ordering::Relaxed);
        for g in lock(&self.inner.gauges).values() {
            g.max_in_flight
                .store(g.in_flight.load(Ordering::SeqCst), Ordering::SeqCst);
        }
    }
}

/// Ends one logged exchange when dropped: the body was sent, or the client went away.
pub(crate) struct ExchangeGuard {
    pub log: RequestLog,
    pub gauge: Arc<SiteGauge>,
    pub index: Option<usize>,
}

impl Drop for ExchangeGuard {
    fn drop(&mut self) {
        self.gauge.leave();
        if let Some(i) = self.index {
            self.log.mark_finished(i, Instant::now());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(path: &str, in_flight: usize) -> RequestRecord {
        RequestRecord {
            site: SiteKind::Shop,
            host_header: "shop.localhost:1".into(),
            method: "GET".into(),
            path_and_query: path.into(),
            user_agent: None,
            from: None,
            if_none_match: None,
            if_modified_since: None,
            started: Instant::now(),
            finished: None,
            status: 200,
            in_flight_at_start: in_flight,
        }
    }

    #[test]
    fn log_keeps_at_most_its_capacity_and_counts_the_rest() {
        let log = RequestLog::with_capacity(2);
        assert_eq!(log.push(record("/a", 1)), Some(0));
        assert_eq!(log.push(record("/b", 1)), Some(1));
        assert_eq!(log.push(record("/c", 1)), None);
        assert_eq!(log.records().len(), 2);
        assert_eq!(log.count(), 3);
        assert_eq!(log.dropped(), 1);
        assert_eq!(log.paths(SiteKind::Shop), vec!["/a", "/b"]);
        assert!(log.for_site(SiteKind::Blog).is_empty());
    }

    #[test]
    fn decoded_paths_drop_the_query_and_decode_escapes() {
        let log = RequestLog::new();
        log.push(record("/%7Efred/x.html?q=%41", 1));
        log.push(record("/~fred/y.html", 1));
        assert_eq!(
            log.decoded_paths(SiteKind::Shop),
            ["/~fred/x.html", "/~fred/y.html"]
        );
        assert_eq!(log.paths(SiteKind::Shop)[0], "/%7Efred/x.html?q=%41");
    }

    #[test]
    fn guard_finishes_the_record_and_leaves_the_gauge() {
        let log = RequestLog::new();
        let gauge = log.gauge(SiteKind::Shop);
        assert_eq!(gauge.enter(), 1);
        assert_eq!(gauge.enter(), 2);
        let index = log.push(record("/", 2));
        drop(ExchangeGuard {
            log: log.clone(),
            gauge: gauge.clone(),
            index,
        });
        assert_eq!(log.in_flight(SiteKind::Shop), 1);
        assert_eq!(log.max_in_flight(SiteKind::Shop), 2);
        assert!(log.records()[0].finished.is_some());
        gauge.leave();
        gauge.leave();
        assert_eq!(
            log.in_flight(SiteKind::Shop),
            0,
            "leave never wraps below zero"
        );
    }
}
