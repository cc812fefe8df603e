//! A quick throughput figure for the frontier over a real store, for
//! `crawldeck bench` and the tests.

use std::fmt;
use std::path::Path;
use std::time::{Duration, Instant as StdInstant};

use tokio::time::Instant;

use super::{Frontier, FrontierEntry};
use crate::engine::store::{PageOutcome, PageRecord, Store, StoreError};

/// URLs per `push` call, like a page's worth of outlinks.
const PUSH_BATCH: usize = 50;

#[derive(Debug, Clone, PartialEq)]
pub struct ThroughputReport {
    pub urls: usize,
    pub hosts: usize,
    pub push: Duration,
    /// `next_ready` + `complete` of every URL.
    pub lease_and_complete: Duration,
    /// Largest number of entries held in host buffers at any point.
    pub max_buffered: usize,
}

impl ThroughputReport {
    pub fn push_per_sec(&self) -> f64 {
        self.urls as f64 / self.push.as_secs_f64().max(1e-9)
    }

    pub fn complete_per_sec(&self) -> f64 {
        self.urls as f64 / self.lease_and_complete.as_secs_f64().max(1e-9)
    }
}

impl fmt::Display for ThroughputReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "frontier: {} URLs over {} hosts; push {:.0}/s ({:.2?}), next_ready+complete {:.0}/s ({:.2?}); at most {} entries buffered",
            self.urls,
            self.hosts,
            self.push_per_sec(),
            self.push,
            self.complete_per_sec(),
            self.lease_and_complete,
            self.max_buffered
        )
    }
}

/// Pushes `urls` URLs spread over `hosts` hosts into a fresh store in `dir`
/// (batches of 50), then leases and completes all of them.
pub fn measure(dir: &Path, urls: usize, hosts: usize) -> Result<ThroughputReport, StoreError> {
    let hosts = hosts.max(1);
    let store = Store::open(dir, 64 << 20)?;
    let mut frontier = Frontier::open(&store)?;
    let names: Vec<String> = (0..hosts).map(|h| format!("host{h}.localhost")).collect();
    let mut max_buffered = 0;

    let started = StdInstant::now();
    let mut next = 0;
    while next < urls {
        let end = (next + PUSH_BATCH).min(urls);
        let batch = (next..end)
            .map(|n| FrontierEntry {
                url: format!(
                    "http://{}/section/{}/page-{n}.html",
                    names[n % hosts],
                    n % 97
                ),
                host: names[n % hosts].clone(),
                depth: 1,
                priority: (n % 5) as u8,
                redirects: 0,
            })
            .collect();
        frontier.push(batch)?;
        max_buffered = max_buffered.max(frontier.buffered_entries());
        next = end;
    }
    let push = started.elapsed();

    let now = Instant::now();
    let started = StdInstant::now();
    let mut done = 0;
    while let Some(lease) = frontier.next_ready(now) {
        let record = PageRecord::without_fetch(
            &lease.entry.url,
            &lease.entry.host,
            lease.entry.depth,
            0,
            PageOutcome::Fetched { status: 200 },
        );
        frontier.complete(&lease, &record, Vec::new())?;
        max_buffered = max_buffered.max(frontier.buffered_entries());
        done += 1;
    }
    let lease_and_complete = started.elapsed();
    if done != urls || !frontier.is_empty() {
        return Err(StoreError::Corrupt {
            what: "frontier",
            message: format!("benchmark queued {urls} URLs but handed out {done}"),
        });
    }
    store.flush()?;
    Ok(ThroughputReport {
        urls,
        hosts,
        push,
        lease_and_complete,
        max_buffered,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn throughput_of_50k_urls() {
        let dir = tempfile::tempdir().unwrap();
        let report = super::measure(dir.path(), 50_000, 20).unwrap();
        println!("{report}");
        assert_eq!(report.urls, 50_000);
        assert!(report.max_buffered <= 20 * super::super::BUFFER_CAP);
    }
}
