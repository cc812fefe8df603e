//! The crawl engine. It never imports terminal crates: the TUI and the headless
//! printer both drive it through [`EngineHandle`].

#![warn(missing_docs)]

pub mod address;
mod alerts;
pub(crate) mod archive;
pub(crate) mod breaker;
pub mod cluster_view;
pub mod config;
pub mod control;
mod coordinator;
pub(crate) mod cpu_pool;
pub(crate) mod cpu_tally;
pub mod css;
pub(crate) mod dedup;
pub(crate) mod extract;
pub(crate) mod fetch;
pub(crate) mod frontier;
pub(crate) mod near_dup;
pub(crate) mod recent_hosts;
pub use frontier::{
    alert_decisions_key, alert_raisers_key, breakers_key, key_prefix, machine_name, records_at,
    shared_breaker_state, validate_crawl_name, wall_ms, worker_id, ClusterTarget, Heartbeat,
    RedisCredentials, RedisUrl, SharedBreakerState, DEFAULT_HOST_AFFINITY, DEFAULT_LEASE_TTL,
    PASSWORD_VAR, USER_VAR,
};
pub mod host_order;
pub mod host_window;
mod hosts;
pub mod inspect;
mod outbox;
pub mod page_facts;
pub(crate) mod politeness;
pub(crate) mod prioritize;
mod probes;
pub mod reads;
mod recrawl;
pub(crate) mod robots;
pub(crate) mod rules;
pub mod sched;
pub(crate) mod session_ids;
pub(crate) mod sitemaps;
mod slots;
#[cfg(unix)]
pub mod socket_path;
mod stats;
pub mod store;
mod tasks;
pub mod telemetry;
mod timers;
pub(crate) mod traps;
pub mod url_norm;

#[cfg(test)]
mod proptests;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tokio::sync::{mpsc, watch};

use control::{Command, CommandId};
use host_window::HostWindow;
use telemetry::{EngineEvent, Snapshot};

/// Capacity of the event channel; when the receiver lags, events are dropped and counted.
pub const EVENT_CAPACITY: usize = 1024;

/// Sends operator commands; cheap to clone.
#[derive(Clone)]
pub struct EngineControl {
    commands: mpsc::UnboundedSender<(CommandId, Command)>,
    next_id: Arc<AtomicU64>,
    window: Arc<watch::Sender<HostWindow>>,
}

impl EngineControl {
    /// Queues a command; the answer arrives as `EngineEvent::CommandDone` with this id.
    /// Never blocks. If the engine has stopped the command is dropped.
    pub fn send(&self, command: Command) -> CommandId {
        let id = CommandId(self.next_id.fetch_add(1, Ordering::Relaxed));
        let _ = self.commands.send((id, command));
        id
    }

    /// Says which part of the hosts list the front end shows. Over the
    /// control socket snapshots then carry only those rows; the engine's own
    /// handle keeps publishing the whole list.
    pub fn set_window(&self, window: HostWindow) {
        self.window.send_if_modified(|current| {
            let changed = *current != window;
            *current = window;
            changed
        });
    }
}

/// What a front end holds of a running engine.
pub struct EngineHandle {
    /// Sends operator commands.
    pub control: EngineControl,
    /// Latest snapshot, published a few times a second.
    pub snapshots: watch::Receiver<Arc<Snapshot>>,
    /// Discrete events; `None` once the engine has stopped.
    pub events: mpsc::Receiver<EngineEvent>,
}

/// The engine's side of the channels behind an [`EngineHandle`].
pub struct EngineEnds {
    /// Operator commands, each with the id its answer will carry.
    pub commands: mpsc::UnboundedReceiver<(CommandId, Command)>,
    /// Where the latest snapshot is published.
    pub snapshots: watch::Sender<Arc<Snapshot>>,
    /// Where discrete events go (bounded; a lagging receiver loses events).
    pub events: mpsc::Sender<EngineEvent>,
    /// The front end's hosts window (`EngineControl::set_window`).
    pub window: watch::Receiver<HostWindow>,
}

impl EngineHandle {
    /// A handle and the matching engine-side ends, not connected to any engine.
    /// The engine uses this to build its channels; tests use it to fake an engine.
    pub fn channel() -> (EngineHandle, EngineEnds) {
        let (command_tx, command_rx) = mpsc::unbounded_channel();
        let (snapshot_tx, snapshot_rx) = watch::channel(Arc::new(Snapshot::default()));
        let (event_tx, event_rx) = mpsc::channel(EVENT_CAPACITY);
        let (window_tx, window_rx) = watch::channel(HostWindow::default());
        (
            EngineHandle {
                control: EngineControl {
                    commands: command_tx,
                    next_id: Arc::new(AtomicU64::new(1)),
                    window: Arc::new(window_tx),
                },
                snapshots: snapshot_rx,
                events: event_rx,
            },
            EngineEnds {
                commands: command_rx,
                snapshots: snapshot_tx,
                events: event_tx,
                window: window_rx,
            },
        )
    }
}

/// Errors that stop the engine from starting or running.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// A setting is invalid or the data directory cannot serve this request
    /// (for example `--recrawl` on an empty crawl); the message says the fix.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// The data directory (or its WARC folder) cannot be created or opened.
    #[error("data directory {path}: {message}")]
    DataDir {
        /// The directory in question.
        path: String,
        /// What went wrong with it.
        message: String,
    },
    /// The store failed while starting.
    #[error("storage: {0}")]
    Store(String),
}

/// A started engine: the handle for front ends and the task that ends with the
/// final snapshot (the crawl summary).
pub struct RunningEngine {
    /// Commands in, snapshots and events out.
    pub handle: EngineHandle,
    /// The crawl-wide settings in effect at start, each with where it came
    /// from (`"delay 2s (flag)"`), for front ends to show.
    pub settings: Vec<String>,
    /// Ends with the final snapshot once the crawl is over and checkpointed.
    pub done: tokio::task::JoinHandle<Result<Snapshot, EngineError>>,
    /// Reads of the crawl's store beside the crawl loop, for the control
    /// socket to serve (`control::hub::Hub::with_reads`): while the crawl
    /// runs, its store can be read only through them. Closed before `done`.
    pub reads: reads::StoreReads,
}

/// How a front end wants the engine to behave.
#[derive(Debug, Clone, Default)]
pub struct EngineOptions {
    /// An operator is there to act: the crawl keeps running when only
    /// quarantined URLs remain, and a storage fault pauses it until they
    /// resume. Headless runs end instead (a storage fault as a failure).
    pub wait_for_operator: bool,
    /// Start a recrawl pass: fetch every page with content again,
    /// conditionally (see `recrawl.rs`).
    pub recrawl: bool,
    /// Settings given for this run, which win over those an operator
    /// changed at runtime in an earlier run.
    pub overrides: RunOverrides,
    /// Simulated disk faults (tests and drills); by default the disk never fills.
    pub disk_faults: store::faults::DiskFaults,
    /// How addresses are classified and names resolved (the real ways unless
    /// a test says otherwise).
    pub address_rules: address::AddressRules,
    /// Share the frontier of a named crawl through Redis with other workers
    /// instead of keeping it in the data directory.
    pub cluster: Option<ClusterTarget>,
}

/// Settings the user gave for this run (flags). On resume they win over the
/// settings an operator changed at runtime, which the data directory keeps;
/// what the user did not give keeps its stored value.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RunOverrides {
    /// The default delay between two requests to a host (`--delay`).
    pub delay: Option<std::time::Duration>,
    /// Requests in flight across the crawl (`--concurrency`).
    pub concurrency: Option<usize>,
    /// Global cap in pages/s, 0 for none (`--max-rate`).
    pub max_rate: Option<f64>,
    /// Start paused or running; `None` keeps how the last run left it.
    pub paused: Option<bool>,
}

/// Starts crawling `config` in `data_dir` (created if missing; resumed if it
/// holds a crawl). The engine checkpoints and stops when `shutdown` completes,
/// on `Command::Shutdown`, or when the crawl is finished.
pub async fn start(
    config: crate::engine::config::CrawlConfig,
    data_dir: &std::path::Path,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<RunningEngine, EngineError> {
    start_with(config, data_dir, shutdown, EngineOptions::default()).await
}

/// The name of the thread that runs the crawl loop.
pub const CRAWL_LOOP_THREAD: &str = "crawl-loop";

/// As [`start`], with front-end options (waiting for the operator, a recrawl pass).
pub async fn start_with(
    config: crate::engine::config::CrawlConfig,
    data_dir: &std::path::Path,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    options: EngineOptions,
) -> Result<RunningEngine, EngineError> {
    let (handle, ends) = EngineHandle::channel();
    let data_dir = data_dir.to_path_buf();
    let data_dir_for_reads = data_dir.clone();
    // Opening the store and rebuilding the seen filter is blocking work.
    let coordinator =
        tokio::task::spawn_blocking(move || coordinator::build(config, &data_dir, ends, options))
            .await
            .map_err(|e| EngineError::Store(format!("engine start-up failed: {e}")))??;
    let settings = coordinator.settings_report();
    let store = coordinator.store().clone();
    let reads = reads::StoreReads::new(store, &data_dir_for_reads, served_reads());
    let closing = reads.clone();
    let runtime = tokio::runtime::Handle::current();
    let done = tokio::task::spawn_blocking(move || {
        // A thread of its own name, so that `top -H` and the bench tell the
        // crawl loop from the runtime's workers; this one waits for it.
        let crawl_loop = std::thread::Builder::new()
            .name(CRAWL_LOOP_THREAD.into())
            .spawn(move || {
                let ended = runtime.block_on(coordinator.run(shutdown));
                // Readers let go of the store before it closes, so a restart can open it.
                closing.close(&runtime);
                ended
            })
            .map_err(|e| {
                EngineError::Store(format!("cannot start the crawl loop's thread: {e}"))
            })?;
        crawl_loop
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    });
    Ok(RunningEngine {
        handle,
        settings,
        done,
        reads,
    })
}

/// The reads served beside the store's own: the page inspector's.
#[cfg(unix)]
fn served_reads() -> &'static [reads::ExtraRead] {
    inspect::SOCKET_READS
}

#[cfg(not(unix))]
fn served_reads() -> &'static [reads::ExtraRead] {
    &[]
}
