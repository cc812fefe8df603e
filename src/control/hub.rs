//! Fans one engine out to any number of viewers. The engine has one event
//! receiver and one command sender; the hub owns both. Each viewer gets the
//! engine's snapshots (a `watch`: latest wins), its own bounded event queue
//! (full: the event is dropped and counted for that viewer), and its command
//! answers back under its own ids. Every command is announced to all viewers
//! as `viewer N: …` in their logs.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::{mpsc, watch};

use crate::engine::control::{Command, CommandId, CommandResult};
use crate::engine::reads::StoreReads;
use crate::engine::telemetry::{EngineEvent, Level, Snapshot};
use crate::engine::{EngineControl, EngineHandle, EVENT_CAPACITY};

/// Events a remote viewer may have queued before new ones are dropped.
pub const VIEWER_QUEUE: usize = 256;

/// Log lines of the engine's start kept for viewers that join later.
const START_LOG_LINES: usize = 32;

/// Shared by the router task and every viewer.
struct Shared {
    control: EngineControl,
    snapshots: watch::Receiver<Arc<Snapshot>>,
    state: Mutex<State>,
    /// Becomes true once every engine event has been handed to the viewers.
    drained: watch::Sender<bool>,
}

#[derive(Default)]
struct State {
    next_viewer: u32,
    viewers: Vec<ViewerSlot>,
    /// Engine command id → (viewer, the viewer's id for it).
    pending: HashMap<CommandId, (u32, CommandId)>,
    /// The engine's event channel has closed: no viewer gets events any more.
    engine_gone: bool,
    /// The engine's log lines before its first state change: the settings
    /// it started with, which every viewer's log begins with, whenever it joins.
    start_log: Vec<EngineEvent>,
    /// The engine left its start: `start_log` is complete.
    started: bool,
}

struct ViewerSlot {
    id: u32,
    events: mpsc::Sender<EngineEvent>,
    dropped: Arc<AtomicU64>,
}

impl ViewerSlot {
    fn offer(&self, event: EngineEvent) {
        if let Err(mpsc::error::TrySendError::Full(_)) = self.events.try_send(event) {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl State {
    /// Hands `events` to every viewer, each viewer's copies cloned before
    /// they are sent: sent back to back, they wake its front end once, where
    /// a clone between sends let it wake for each (the last viewer takes the
    /// events themselves).
    fn deliver(&self, events: &mut Vec<EngineEvent>) {
        let Some((last, others)) = self.viewers.split_last() else {
            events.clear();
            return;
        };
        for viewer in others {
            for event in events.clone() {
                viewer.offer(event);
            }
        }
        for event in events.drain(..) {
            last.offer(event);
        }
    }

    /// Keeps the engine's log lines until its first state change.
    fn keep_start_line(&mut self, event: &EngineEvent) {
        match event {
            EngineEvent::StateChanged(_) => self.started = true,
            EngineEvent::Log { .. } if !self.started && self.start_log.len() < START_LOG_LINES => {
                self.start_log.push(event.clone());
            }
            _ => {}
        }
    }

    /// Gives `viewer` the answer to its command `id`, if it is still there.
    fn answer(&self, viewer: u32, id: CommandId, outcome: Result<String, String>) {
        if let Some(slot) = self.viewers.iter().find(|v| v.id == viewer) {
            slot.offer(EngineEvent::CommandDone(CommandResult { id, outcome }));
        }
    }
}

/// The engine, shared among viewers, and the reads of its store. Cheap to clone.
#[derive(Clone)]
pub struct Hub {
    shared: Arc<Shared>,
    reads: Option<StoreReads>,
}

/// One viewer's ends: send commands, receive events and snapshots.
pub struct Viewer {
    /// The viewer's number, as logs name it.
    pub id: u32,
    read_only: bool,
    shared: Arc<Shared>,
    /// The engine's snapshots.
    pub snapshots: watch::Receiver<Arc<Snapshot>>,
    /// This viewer's events; closes when the engine stops.
    pub events: mpsc::Receiver<EngineEvent>,
    /// Events this viewer lost to a full queue.
    pub dropped: Arc<AtomicU64>,
}

impl Hub {
    /// Takes over `handle`: from now on its events go out through the hub.
    pub fn new(handle: EngineHandle) -> Hub {
        let EngineHandle {
            control,
            snapshots,
            events,
        } = handle;
        let shared = Arc::new(Shared {
            control,
            snapshots,
            state: Mutex::new(State {
                next_viewer: 1,
                ..State::default()
            }),
            drained: watch::Sender::new(false),
        });
        tokio::spawn(route(shared.clone(), events));
        Hub {
            shared,
            reads: None,
        }
    }

    /// Serves `reads` (the engine's [`crate::engine::RunningEngine::reads`])
    /// to `Read` connections too; without, they are refused.
    pub fn with_reads(self, reads: StoreReads) -> Hub {
        Hub {
            reads: Some(reads),
            ..self
        }
    }

    /// The engine's store reads, if it serves them.
    pub fn reads(&self) -> Option<&StoreReads> {
        self.reads.as_ref()
    }

    /// Completes once the engine has stopped and its last event has been
    /// handed to the viewers (a front end's final summary counts them all).
    pub fn drained(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut drained = self.shared.drained.subscribe();
        async move {
            let _ = drained.wait_for(|done| *done).await;
        }
    }

    /// A new viewer with an event queue of `capacity`.
    pub fn join(&self, read_only: bool, capacity: usize) -> Viewer {
        let (events, rx) = mpsc::channel(capacity);
        let dropped = Arc::new(AtomicU64::new(0));
        let mut state = lock(&self.shared);
        let id = state.next_viewer;
        state.next_viewer += 1;
        if !state.engine_gone {
            let slot = ViewerSlot {
                id,
                events,
                dropped: dropped.clone(),
            };
            // Under the lock: the router offers each later line live.
            for line in &state.start_log {
                slot.offer(line.clone());
            }
            state.viewers.push(slot);
        }
        drop(state);
        Viewer {
            id,
            read_only,
            shared: self.shared.clone(),
            snapshots: self.shared.snapshots.clone(),
            events: rx,
            dropped,
        }
    }

    /// An [`EngineHandle`] for a front end in this process, shaped exactly
    /// like the engine's own: the same code drives it in-process or remote.
    pub fn local_handle(&self) -> EngineHandle {
        let viewer = self.join(false, EVENT_CAPACITY);
        let (handle, mut ends) = EngineHandle::channel();
        let sender = viewer.commands();
        tokio::spawn(async move {
            while let Some((cmd_id, cmd)) = ends.commands.recv().await {
                sender.send(cmd_id, cmd);
            }
        });
        EngineHandle {
            control: handle.control,
            snapshots: viewer.snapshots,
            events: viewer.events,
        }
    }
}

impl Viewer {
    /// Splits off the command side, for a task of its own.
    pub fn commands(&self) -> CommandSender {
        CommandSender {
            id: self.id,
            read_only: self.read_only,
            shared: self.shared.clone(),
        }
    }
}

/// Sends one viewer's commands to the engine.
pub struct CommandSender {
    id: u32,
    read_only: bool,
    shared: Arc<Shared>,
}

impl CommandSender {
    /// Sends `command`; its answer reaches this viewer as `CommandDone(id)`.
    /// A read-only viewer's mutating command is answered with a refusal.
    pub fn send(&self, id: CommandId, command: Command) {
        let label = command.label();
        let mut state = lock(&self.shared);
        if self.read_only && command.is_mutating() {
            let refusal = format!(
                "read-only viewer: {label} refused; attach without --read-only to change the crawl"
            );
            state.answer(self.id, id, Err(refusal));
            return;
        }
        if state.engine_gone {
            // This viewer's events have closed already; nobody to answer.
            return;
        }
        // Under the lock, so the router cannot see the answer before the entry.
        let engine_id = self.shared.control.send(command);
        state.pending.insert(engine_id, (self.id, id));
        let line = format!("viewer {}: {label}", self.id);
        tracing::info!("{line}");
        for viewer in &state.viewers {
            viewer.offer(EngineEvent::Log {
                level: Level::Info,
                message: line.clone(),
            });
        }
    }
}

fn lock(shared: &Shared) -> MutexGuard<'_, State> {
    // A panic elsewhere while holding the lock leaves consistent data: every
    // update is a single insert, remove or push.
    shared.state.lock().unwrap_or_else(|e| e.into_inner())
}

/// Engine events routed under one lock of the hub's state: the engine's
/// burst of page events, no more at once than a viewer's queue is sure to take.
const ROUTED_AT_ONCE: usize = 64;

/// Moves every engine event to the viewers it is for, until the engine stops.
async fn route(shared: Arc<Shared>, mut events: mpsc::Receiver<EngineEvent>) {
    // Taken as they queue up (the engine sends page events in bursts), so a
    // viewer is woken once for many, not once each.
    let mut batch = Vec::with_capacity(ROUTED_AT_ONCE);
    let mut routed = Vec::with_capacity(ROUTED_AT_ONCE);
    while events.recv_many(&mut batch, ROUTED_AT_ONCE).await > 0 {
        let mut state = lock(&shared);
        state.viewers.retain(|v| !v.events.is_closed());
        for event in batch.drain(..) {
            match event {
                EngineEvent::CommandDone(result) => {
                    // The events before an answer reach the viewers first.
                    state.deliver(&mut routed);
                    if let Some((viewer, id)) = state.pending.remove(&result.id) {
                        state.answer(viewer, id, result.outcome);
                    }
                }
                event => {
                    state.keep_start_line(&event);
                    routed.push(event);
                }
            }
        }
        state.deliver(&mut routed);
    }
    let mut state = lock(&shared);
    state.engine_gone = true;
    state.viewers.clear();
    drop(state);
    shared.drained.send_replace(true);
}
