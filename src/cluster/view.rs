//! The cluster view: every ~500 ms a thread reads the workers' heartbeats and
//! published snapshots, the held hosts and the shared counts from Redis,
//! merges them (`merge`) and publishes the result through an
//! [`EngineHandle`], so the TUI runs over the whole cluster unchanged.
//! Commands from the TUI go onto the crawl's command stream (`steer`), and
//! the workers' answers come back as the TUI's command answers. The TUI's
//! hosts window goes to Redis too, so the workers publish the rows it shows
//! (see `publish`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{mpsc, watch};

use super::commands::{self, Answer};
use super::merge::{ClusterRead, Merger};
use super::publish::{snapshot_key, window_key, windows_key, WINDOW_TTL};
use super::status::worker_rows;
use super::steer::{self, Route};
use crate::engine::control::HostKey;
use crate::engine::control::{Command, CommandId, CommandResult};
use crate::engine::frontier::RedisReader;
use crate::engine::host_window::HostWindow;
use crate::engine::telemetry::{EngineEvent, Level, Snapshot};
use crate::engine::{
    alert_raisers_key, breakers_key, key_prefix, shared_breaker_state, EngineHandle, RedisUrl,
    SharedBreakerState,
};

/// How often the view reads the cluster.
pub const READ_EVERY: Duration = Duration::from_millis(500);
/// A published snapshot larger than this is left out (workers write about 50 KB).
const MAX_SNAPSHOT_BYTES: usize = 8 << 20;

/// Reads one shared crawl from Redis.
pub struct ClusterReader {
    url: RedisUrl,
    crawl: String,
    client: redis::Client,
    con: Option<redis::Connection>,
    /// Reads the shared schedule (its own connection, opened on first use).
    schedule: RedisReader,
}

impl ClusterReader {
    /// A reader of the crawl `crawl` on the Redis at `url`; it connects on first read.
    pub fn new(url: &RedisUrl, crawl: &str) -> Result<ClusterReader, String> {
        let client = url.client().map_err(|e| format!("--redis {url}: {e}"))?;
        Ok(ClusterReader {
            url: url.clone(),
            crawl: crawl.to_string(),
            client,
            con: None,
            schedule: RedisReader::for_crawl(url, crawl),
        })
    }

    /// The Redis server.
    pub fn url(&self) -> &RedisUrl {
        &self.url
    }

    /// The shared crawl's name.
    pub fn crawl(&self) -> &str {
        &self.crawl
    }

    /// Where the crawl is read from, in words.
    pub fn source(&self) -> String {
        format!("{} crawl {}", self.url, self.crawl)
    }

    /// The crawl as Redis holds it now; the snapshots of the workers with a
    /// heartbeat and of `also` (workers seen before: a worker that ended
    /// has no heartbeat but leaves its final snapshot for a few seconds).
    pub fn read(&mut self, also: &[String]) -> Result<ClusterRead, String> {
        let result = self.read_once(also).map_err(|e| self.url.explain(&e));
        if result.is_err() {
            // Reconnect on the next read.
            self.con = None;
        }
        // Hosts nobody holds, from the shared schedule.
        let result = result.and_then(|mut read| {
            (read.unheld_ready, read.unheld_waiting) =
                self.schedule.unheld_hosts().map_err(|e| e.to_string())?;
            Ok(read)
        });
        result.map_err(|e| {
            format!(
                "cannot read crawl {} from {}: {e}; check that the Redis server is running",
                self.crawl, self.url
            )
        })
    }

    /// Tells the workers which hosts `viewer` shows (for a while: written
    /// again at each read, forgotten once the view is gone).
    pub fn show_window(&mut self, viewer: &str, window: &HostWindow) -> redis::RedisResult<()> {
        let json = serde_json::to_string(window).unwrap_or_default();
        let (key, set) = (window_key(&self.crawl, viewer), windows_key(&self.crawl));
        let con = self.connection()?;
        redis::pipe()
            .cmd("SET")
            .arg(key)
            .arg(json)
            .arg("PX")
            .arg(WINDOW_TTL.as_millis() as u64)
            .ignore()
            .cmd("SADD")
            .arg(set)
            .arg(viewer)
            .ignore()
            .query(con)
    }

    /// Forgets `viewer`'s window at once.
    pub fn forget_window(&mut self, viewer: &str) -> redis::RedisResult<()> {
        let (key, set) = (window_key(&self.crawl, viewer), windows_key(&self.crawl));
        let con = self.connection()?;
        redis::pipe()
            .cmd("DEL")
            .arg(key)
            .ignore()
            .cmd("SREM")
            .arg(set)
            .arg(viewer)
            .ignore()
            .query(con)
    }

    fn connection(&mut self) -> redis::RedisResult<&mut redis::Connection> {
        if self.con.is_none() {
            let con = self
                .client
                .get_connection_with_timeout(Duration::from_secs(2))?;
            con.set_read_timeout(Some(Duration::from_secs(2)))?;
            con.set_write_timeout(Some(Duration::from_secs(2)))?;
            self.con = Some(con);
        }
        Ok(self.con.as_mut().expect("connected above"))
    }

    fn read_once(&mut self, also: &[String]) -> redis::RedisResult<ClusterRead> {
        let p = key_prefix(&self.crawl);
        let crawl = self.crawl.clone();
        let source = self.source();
        let con = self.connection()?;
        #[allow(clippy::type_complexity)]
        let (counts, hosts, held, beats, alert_raisers): (
            HashMap<String, i64>,
            u64,
            HashMap<String, String>,
            HashMap<String, String>,
            HashMap<u64, String>,
        ) = redis::pipe()
            .cmd("HGETALL")
            .arg(format!("{p}n"))
            .cmd("SCARD")
            .arg(format!("{p}hosts"))
            .cmd("HGETALL")
            .arg(format!("{p}held"))
            .cmd("HGETALL")
            .arg(format!("{p}beats"))
            .cmd("HGETALL")
            .arg(alert_raisers_key(&p))
            .query(con)?;
        let workers = worker_rows(&beats);
        let mut names: Vec<&String> = beats.keys().chain(also).collect();
        names.sort();
        names.dedup();
        let snapshots = if names.is_empty() {
            Vec::new()
        } else {
            let keys: Vec<String> = names.iter().map(|w| snapshot_key(&crawl, w)).collect();
            let texts: Vec<Option<String>> = redis::cmd("MGET").arg(&keys).query(con)?;
            names
                .iter()
                .zip(texts)
                .filter_map(|(worker, text)| Some(((*worker).clone(), parse_snapshot(&text?)?)))
                .collect()
        };
        let breakers = read_breakers(con, &p, &snapshots)?;
        Ok(ClusterRead {
            crawl,
            source,
            workers,
            snapshots,
            breakers,
            held,
            queued: counts.get("queued").copied().unwrap_or(0).max(0) as u64,
            in_flight: counts.get("inflight").copied().unwrap_or(0).max(0) as u64,
            parked: counts.get("parked").copied().unwrap_or(0).max(0) as u64,
            hosts,
            alert_raisers,
            ..ClusterRead::default()
        })
    }
}

/// The shared breakers of the hosts the snapshots show (one `HMGET`).
fn read_breakers(
    con: &mut redis::Connection,
    prefix: &str,
    snapshots: &[(String, Snapshot)],
) -> redis::RedisResult<HashMap<HostKey, SharedBreakerState>> {
    let mut hosts: Vec<&str> = snapshots
        .iter()
        .flat_map(|(_, s)| s.hosts.iter().map(|h| h.host.as_str()))
        .collect();
    hosts.sort_unstable();
    hosts.dedup();
    if hosts.is_empty() {
        return Ok(HashMap::new());
    }
    let (epoch_ms, jsons): (Option<i128>, Vec<Option<String>>) = redis::pipe()
        .cmd("GET")
        .arg(format!("{prefix}epoch"))
        .cmd("HMGET")
        .arg(breakers_key(prefix))
        .arg(&hosts)
        .query(con)?;
    let wall_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128);
    let now = wall_ns - epoch_ms.unwrap_or(0) * 1_000_000;
    Ok(hosts
        .into_iter()
        .zip(jsons)
        .filter_map(|(host, json)| Some((host.to_string(), shared_breaker_state(&json?, now)?)))
        .collect())
}

fn parse_snapshot(text: &str) -> Option<Snapshot> {
    if text.len() > MAX_SNAPSHOT_BYTES {
        tracing::warn!("a worker's snapshot of {} bytes was left out", text.len());
        return None;
    }
    serde_json::from_str(text)
        .map_err(|e| tracing::warn!("a worker's snapshot does not parse: {e}"))
        .ok()
}

/// How the view treats the commands it gets.
#[derive(Debug, Clone, Copy, Default)]
pub struct ViewOptions {
    /// This process started the workers (`demo --cluster`): stopping the
    /// crawl ends the view, and the caller stops the workers.
    pub owns_workers: bool,
    /// Commands that change the crawl are refused (`attach --read-only`).
    pub read_only: bool,
}

/// Starts reading the cluster every [`READ_EVERY`]; the returned handle ends
/// (its events close) when every receiver is dropped or, with
/// `owns_workers`, on `Command::Shutdown`.
pub fn start(reader: ClusterReader, options: ViewOptions) -> EngineHandle {
    let (handle, ends) = EngineHandle::channel();
    let merger = Arc::new(Mutex::new(Merger::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let events = ends.events.clone();
    let reading = (merger.clone(), stop.clone());
    let stream = (reader.url().clone(), reader.crawl().to_string());
    let (snapshots, window) = (ends.snapshots, ends.window);
    std::thread::Builder::new()
        .name("cluster-view".into())
        .spawn(move || read_loop(reader, reading, (snapshots, window), events))
        .expect("a thread for the cluster view");
    tokio::spawn(commands_task(
        ends.commands,
        ends.events,
        merger,
        stop,
        options,
        stream,
    ));
    handle
}

fn read_loop(
    mut reader: ClusterReader,
    (merger, stop): (Arc<Mutex<Merger>>, Arc<AtomicBool>),
    (snapshots, window): (watch::Sender<Arc<Snapshot>>, watch::Receiver<HostWindow>),
    events: mpsc::Sender<EngineEvent>,
) {
    let mut last = Snapshot::default();
    let mut known: HashMap<String, bool> = HashMap::new();
    let mut failing = false;
    let viewer = format!("{:016x}", fastrand::u64(..));
    while !stop.load(Ordering::Relaxed) {
        let shown = window.borrow().clone();
        if shown.rows > 0 || shown.detail.is_some() {
            // A failure here shows as the read's below.
            let _ = reader.show_window(&viewer, &shown);
        }
        let seen_before = merger.lock().expect("merger").known_workers();
        let snapshot = match reader.read(&seen_before) {
            Ok(read) => {
                for line in worker_changes(&mut known, &read) {
                    let _ = events.try_send(log(Level::Info, line));
                }
                if std::mem::take(&mut failing) {
                    let _ = events.try_send(log(Level::Info, "reading the cluster again".into()));
                }
                last = merger.lock().expect("merger").merge(&read);
                last.clone()
            }
            Err(e) => {
                if !std::mem::replace(&mut failing, true) {
                    let _ = events.try_send(log(Level::Error, e.clone()));
                }
                Snapshot {
                    fault: Some(format!("{e}; retrying")),
                    ..last.clone()
                }
            }
        };
        if snapshots.send(Arc::new(snapshot)).is_err() {
            break;
        }
        std::thread::sleep(READ_EVERY);
    }
    let _ = reader.forget_window(&viewer);
}

/// Log lines for workers that joined, went or came back since the last read.
fn worker_changes(known: &mut HashMap<String, bool>, read: &ClusterRead) -> Vec<String> {
    let mut lines = Vec::new();
    for row in &read.workers {
        let name = &row.beat.worker;
        let before = known.insert(name.clone(), row.alive);
        match (before, row.alive) {
            (None, true) => lines.push(format!("worker {name} joined")),
            (Some(false), true) => lines.push(format!("worker {name} is back")),
            (Some(true), false) => lines.push(format!(
                "worker {name} gone: no heartbeat for {:.1}s",
                row.last_beat_ms_ago as f64 / 1000.0
            )),
            _ => {}
        }
    }
    lines
}

fn log(level: Level, message: String) -> EngineEvent {
    EngineEvent::Log { level, message }
}

/// Answers the TUI's commands: each is routed and published on its own
/// task, so a slow answer holds up no other command.
async fn commands_task(
    mut commands: mpsc::UnboundedReceiver<(CommandId, Command)>,
    events: mpsc::Sender<EngineEvent>,
    merger: Arc<Mutex<Merger>>,
    stop: Arc<AtomicBool>,
    options: ViewOptions,
    (url, crawl): (RedisUrl, String),
) {
    let from = commands::sender("cluster view");
    while let Some((id, command)) = commands.recv().await {
        let label = command.label();
        let local = match (&command, options.owns_workers) {
            (Command::Checkpoint, true) => Some(Ok("the workers checkpoint as they stop".into())),
            (Command::Shutdown, true) => {
                stop.store(true, Ordering::Relaxed);
                let done = answer(id, Ok("stopping the workers".into()));
                let _ = events.send(done).await;
                return;
            }
            // Leaving the demo stops its workers, read-only or not; steering does not.
            _ if options.read_only && command.is_mutating() => {
                Some(Err(format!("read-only viewer: {label} not sent")))
            }
            _ => None,
        };
        if let Some(outcome) = local {
            if events.send(answer(id, outcome)).await.is_err() {
                return;
            }
            continue;
        }
        let routed = steer::route(&command, &merger.lock().expect("merger"));
        let (url, crawl, from, events) = (url.clone(), crawl.clone(), from.clone(), events.clone());
        tokio::spawn(async move {
            let outcome = match routed {
                Err(why) => Err(format!("{label} not sent: {why}")),
                Ok(route) => {
                    tokio::task::spawn_blocking(move || publish(&url, &crawl, &label, route, &from))
                        .await
                        .unwrap_or_else(|e| Err(format!("publishing the command failed: {e}")))
                }
            };
            let _ = events.send(answer(id, outcome)).await;
        });
    }
}

fn answer(id: CommandId, outcome: Answer) -> EngineEvent {
    EngineEvent::CommandDone(CommandResult { id, outcome })
}

/// Publishes on a connection of its own and waits for the workers' answers.
fn publish(url: &RedisUrl, crawl: &str, label: &str, route: Route, from: &str) -> Answer {
    let mut con = url.connect(Duration::from_secs(2)).map_err(|e| {
        format!(
            "{label} not sent: cannot reach {url}: {}; check that the Redis server is running",
            url.explain(&e)
        )
    })?;
    steer::send(&mut con, crawl, label, route, from)
}

#[cfg(test)]
#[path = "window_tests.rs"]
mod window_tests;
