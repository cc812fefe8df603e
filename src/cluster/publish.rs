//! A worker's snapshot in Redis, for the cluster view: about twice a second
//! a thread of its own (with its own connection, off the crawl loop) writes
//! the latest snapshot, cut to a bounded size, to
//! `crawldeck:{NAME}:snapshot:<worker>` with a short expiry, so a worker
//! that dies leaves no snapshot behind for long. The last one written, at
//! the end, is the worker's final snapshot (state done, final counts).

use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::sync::watch;

use crate::engine::key_prefix;
use crate::engine::telemetry::Snapshot;

/// How often the snapshot is written.
pub const PUBLISH_EVERY: Duration = Duration::from_millis(500);
/// How long a written snapshot lives without being written again.
pub const SNAPSHOT_TTL: Duration = Duration::from_secs(3);
/// Hosts a published snapshot lists (the busiest; the engine sorts them so).
pub const PUBLISHED_HOSTS: usize = 100;
/// Alerts a published snapshot lists (the newest).
pub const PUBLISHED_ALERTS: usize = 100;
/// Evidence URLs kept per published alert.
const PUBLISHED_SAMPLES: usize = 5;

/// The key a worker's snapshot is written to.
pub fn snapshot_key(crawl: &str, worker: &str) -> String {
    format!("{}snapshot:{worker}", key_prefix(crawl))
}

/// The snapshot as a worker publishes it: the busiest hosts as table rows
/// (without their detail-only fields), the newest alerts with a few samples.
pub fn bounded(snapshot: &Snapshot) -> Snapshot {
    let mut cut = snapshot.clone();
    cut.hosts.truncate(PUBLISHED_HOSTS);
    cut.hosts = cut.hosts.iter().map(|h| h.row()).collect();
    cut.detail = None;
    let skip = cut.alerts.len().saturating_sub(PUBLISHED_ALERTS);
    cut.alerts.drain(..skip);
    for alert in &mut cut.alerts {
        alert.samples.truncate(PUBLISHED_SAMPLES);
        if let Some(impact) = &mut alert.impact {
            impact.good_examples.truncate(PUBLISHED_SAMPLES);
        }
    }
    cut
}

/// The publishing thread.
pub struct SnapshotPublisher {
    stop: mpsc::Sender<()>,
    thread: Option<JoinHandle<()>>,
}

impl SnapshotPublisher {
    /// Starts publishing `snapshots` as `worker` of `crawl` on the Redis at `url`.
    pub fn start(
        url: &str,
        crawl: &str,
        worker: &str,
        snapshots: watch::Receiver<Arc<Snapshot>>,
    ) -> Result<SnapshotPublisher, String> {
        let client = redis::Client::open(url).map_err(|e| format!("{url}: {e}"))?;
        let key = snapshot_key(crawl, worker);
        let (stop, stopped) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("snapshot-publisher".into())
            .spawn(move || publish_loop(client, key, snapshots, stopped))
            .map_err(|e| format!("cannot start the snapshot publisher: {e}"))?;
        Ok(SnapshotPublisher {
            stop,
            thread: Some(thread),
        })
    }

    /// Publishes the last snapshot and waits for the thread.
    pub fn stop(mut self) {
        self.finish();
    }

    fn finish(&mut self) {
        let _ = self.stop.send(());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for SnapshotPublisher {
    fn drop(&mut self) {
        self.finish();
    }
}

fn publish_loop(
    client: redis::Client,
    key: String,
    snapshots: watch::Receiver<Arc<Snapshot>>,
    stopped: mpsc::Receiver<()>,
) {
    let mut con: Option<redis::Connection> = None;
    let mut last_error: Option<String> = None;
    loop {
        let stop = !matches!(
            stopped.recv_timeout(PUBLISH_EVERY),
            Err(mpsc::RecvTimeoutError::Timeout)
        );
        let snapshot = snapshots.borrow().clone();
        let result = write(&client, &mut con, &key, &snapshot);
        match (&result, &last_error) {
            // Once per failure, not twice a second: the crawl itself reports Redis trouble.
            (Err(e), None) => tracing::warn!("publishing the snapshot for the cluster view: {e}"),
            (Ok(()), Some(_)) => tracing::info!("publishing the snapshot again"),
            _ => {}
        }
        last_error = result.err();
        if stop {
            return;
        }
    }
}

/// Writes the snapshot, reconnecting after a failure.
fn write(
    client: &redis::Client,
    con: &mut Option<redis::Connection>,
    key: &str,
    snapshot: &Snapshot,
) -> Result<(), String> {
    if con.is_none() {
        let opened = client
            .get_connection_with_timeout(Duration::from_secs(2))
            .map_err(|e| e.to_string())?;
        opened
            .set_read_timeout(Some(Duration::from_secs(2)))
            .and_then(|()| opened.set_write_timeout(Some(Duration::from_secs(2))))
            .map_err(|e| e.to_string())?;
        *con = Some(opened);
    }
    let c = con.as_mut().expect("connected above");
    let json = serde_json::to_string(&bounded(snapshot)).map_err(|e| e.to_string())?;
    redis::cmd("SET")
        .arg(key)
        .arg(json)
        .arg("PX")
        .arg(SNAPSHOT_TTL.as_millis() as u64)
        .query::<()>(c)
        .map_err(|e| {
            *con = None;
            e.to_string()
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::telemetry::HostView;

    #[test]
    fn a_wide_crawls_published_snapshot_stays_small() {
        let mut snapshot = Snapshot::default();
        for i in 0..500 {
            snapshot.hosts.push(HostView {
                host: format!("host-{i:04}.example.org"),
                queued: 1000,
                queue_head: (0..5)
                    .map(|n| format!("https://host-{i:04}.example.org/a/long/path/{n}?q=1"))
                    .collect(),
                robots_summary: Some("14 rules, crawl-delay 2s, 1 sitemap".into()),
                ..HostView::default()
            });
        }
        let whole = serde_json::to_string(&snapshot).unwrap().len();
        let cut = bounded(&snapshot);
        let published = serde_json::to_string(&cut).unwrap().len();
        assert_eq!(cut.hosts.len(), PUBLISHED_HOSTS);
        assert!(cut.hosts[0].queue_head.is_empty());
        assert!(published < 80_000, "{published} bytes (whole: {whole})");
        assert!(published * 5 < whole, "{published} of {whole} bytes");
    }
}
