//! A worker's snapshot in Redis, for the cluster view: about twice a second
//! a thread of its own (with its own connection, off the crawl loop) writes
//! the latest snapshot, cut to a bounded size, to
//! `crawldeck:{NAME}:snapshot:<worker>` with a short expiry, so a worker
//! that dies leaves no snapshot behind for long. The last one written, at
//! the end, is the worker's final snapshot (state done, final counts).
//!
//! Its hosts are the busiest ones plus, for each cluster view open on the
//! crawl, the rows that view's window shows in its order and filter (and a
//! page more), and the host whose detail it shows in full: so a view finds
//! every host, not only the busiest. A view keeps its window in
//! `crawldeck:{NAME}:window:<viewer>` (with a short expiry, listed in
//! `…:windows`).

use std::collections::HashSet;
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::sync::watch;

use crate::engine::host_order::ordered;
use crate::engine::host_window::HostWindow;
use crate::engine::key_prefix;
use crate::engine::telemetry::{HostView, Snapshot};

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
/// Views whose windows a worker publishes rows for.
pub const MAX_VIEWERS: usize = 8;
/// How long a view's window lasts without being written again.
pub const WINDOW_TTL: Duration = Duration::from_secs(3);

/// The key a worker's snapshot is written to.
pub fn snapshot_key(crawl: &str, worker: &str) -> String {
    format!("{}snapshot:{worker}", key_prefix(crawl))
}

/// The key a cluster view's window is written to.
pub fn window_key(crawl: &str, viewer: &str) -> String {
    format!("{}window:{viewer}", key_prefix(crawl))
}

/// The set of viewers with a window.
pub fn windows_key(crawl: &str) -> String {
    format!("{}windows", key_prefix(crawl))
}

/// The snapshot as a worker publishes it: the busiest hosts and the rows
/// `windows` show (and a page more) as table rows without their
/// detail-only fields, the hosts the windows' details show in full, the
/// newest alerts with a few samples.
pub fn bounded(snapshot: &Snapshot, windows: &[HostWindow]) -> Snapshot {
    let mut cut = snapshot.shallow_clone();
    let details: HashSet<&str> = windows.iter().filter_map(|w| w.detail.as_deref()).collect();
    let mut rows: Vec<&HostView> = snapshot.hosts.iter().take(PUBLISHED_HOSTS).collect();
    for window in windows.iter().take(MAX_VIEWERS) {
        let w = window.clone().bounded();
        let order = ordered(&snapshot.hosts, w.sort, w.reverse, &w.filter);
        rows.extend(order.into_iter().take(w.first + 2 * w.rows));
    }
    rows.extend(details.iter().filter_map(|host| snapshot.host_detail(host)));
    let mut listed: HashSet<&str> = HashSet::new();
    for h in rows {
        if listed.insert(h.host.as_str()) {
            let full = details.contains(h.host.as_str());
            cut.hosts.push(if full { h.clone() } else { h.row() });
        }
    }
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
        url: &crate::engine::RedisUrl,
        crawl: &str,
        worker: &str,
        snapshots: watch::Receiver<Arc<Snapshot>>,
    ) -> Result<SnapshotPublisher, String> {
        let client = url.client().map_err(|e| format!("{url}: {e}"))?;
        let crawl = crawl.to_string();
        let key = snapshot_key(&crawl, worker);
        let (stop, stopped) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("snapshot-publisher".into())
            .spawn(move || publish_loop(client, (crawl, key), snapshots, stopped))
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
    (crawl, key): (String, String),
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
        let result = write(&client, &mut con, (&crawl, &key), &snapshot);
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

/// Writes the snapshot for the views open now, reconnecting after a failure.
fn write(
    client: &redis::Client,
    con: &mut Option<redis::Connection>,
    (crawl, key): (&str, &str),
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
    let written = view_windows(c, crawl).and_then(|windows| {
        let json = serde_json::to_string(&bounded(snapshot, &windows)).map_err(|e| {
            redis::RedisError::from((redis::ErrorKind::IoError, "encoding", e.to_string()))
        })?;
        redis::cmd("SET")
            .arg(key)
            .arg(json)
            .arg("PX")
            .arg(SNAPSHOT_TTL.as_millis() as u64)
            .query::<()>(c)
    });
    written.map_err(|e| {
        *con = None;
        e.to_string()
    })
}

/// The windows of the views open on `crawl`; viewers whose window expired
/// are forgotten.
fn view_windows(c: &mut redis::Connection, crawl: &str) -> redis::RedisResult<Vec<HostWindow>> {
    let viewers: Vec<String> = redis::cmd("SMEMBERS").arg(windows_key(crawl)).query(c)?;
    if viewers.is_empty() {
        return Ok(Vec::new());
    }
    let keys: Vec<String> = viewers.iter().map(|v| window_key(crawl, v)).collect();
    let texts: Vec<Option<String>> = redis::cmd("MGET").arg(&keys).query(c)?;
    let gone: Vec<&String> = viewers
        .iter()
        .zip(&texts)
        .filter(|(_, t)| t.is_none())
        .map(|(v, _)| v)
        .collect();
    if !gone.is_empty() {
        redis::cmd("SREM")
            .arg(windows_key(crawl))
            .arg(gone)
            .query::<()>(c)?;
    }
    Ok(texts
        .iter()
        .flatten()
        .filter_map(|text| serde_json::from_str::<HostWindow>(text).ok())
        .take(MAX_VIEWERS)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::host_window::SortColumn;

    /// A snapshot of `n` hosts, busiest first, each with detail-only fields.
    pub(crate) fn wide(n: usize) -> Snapshot {
        let mut snapshot = Snapshot::default();
        for i in 0..n {
            snapshot.hosts.push(HostView {
                host: format!("host-{i:04}.example.org"),
                queued: (n - i) as u64,
                queue_head: (0..5)
                    .map(|n| format!("https://host-{i:04}.example.org/a/long/path/{n}?q=1"))
                    .collect(),
                robots_summary: Some("14 rules, crawl-delay 2s, 1 sitemap".into()),
                ..HostView::default()
            });
        }
        snapshot
    }

    #[test]
    fn a_wide_crawls_published_snapshot_stays_small() {
        let snapshot = wide(500);
        let whole = serde_json::to_string(&snapshot).unwrap().len();
        let cut = bounded(&snapshot, &[]);
        let published = serde_json::to_string(&cut).unwrap().len();
        assert_eq!(cut.hosts.len(), PUBLISHED_HOSTS);
        assert!(cut.hosts[0].queue_head.is_empty());
        assert!(published < 80_000, "{published} bytes (whole: {whole})");
        assert!(published * 5 < whole, "{published} of {whole} bytes");
    }

    #[test]
    fn the_rows_and_detail_a_views_window_shows_are_published_beyond_the_busiest() {
        let snapshot = wide(500);
        let by_name_from_the_end = HostWindow {
            sort: SortColumn::Host,
            reverse: true,
            first: 10,
            rows: 20,
            detail: Some("host-0250.example.org".into()),
            ..HostWindow::default()
        };
        let filtered = HostWindow {
            filter: "HOST-0420".into(),
            rows: 5,
            ..HostWindow::default()
        };
        let cut = bounded(&snapshot, &[by_name_from_the_end, filtered]);
        let names: Vec<&str> = cut.hosts.iter().map(|h| h.host.as_str()).collect();
        let has = |i: usize| names.contains(&format!("host-{i:04}.example.org").as_str());
        // The busiest 100, then rows 0..50 of the window (the page shown and
        // one more), the filtered host and the detail host.
        assert!((0..100).all(has));
        assert!((450..500).all(has) && !has(449));
        assert!(has(420) && has(250));
        assert_eq!(names.len(), 100 + 50 + 2, "each host once");
        for h in &cut.hosts {
            let detail = h.host == "host-0250.example.org";
            assert_eq!(!h.queue_head.is_empty(), detail, "{}", h.host);
        }
    }
}
