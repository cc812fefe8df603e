//! The run loop: owns the terminal, turns terminal input, snapshots and engine
//! events into messages, applies `update`, performs effects and redraws at most
//! 30 times a second, only when something changed. The crawl never waits on it.

use std::future::Future;
use std::io::stdout;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ratatui::backend::Backend;
use ratatui::crossterm::event::{
    self, DisableMouseCapture, EnableMouseCapture, Event, MouseEventKind,
};
use ratatui::crossterm::execute;
use ratatui::Terminal;
use tokio::sync::{mpsc, watch};
use tokio::time::{sleep_until, Instant};

use super::effect::{command_label, Effect, TuiExit};
use super::keys::effective_keymap;
use super::model::{Model, Quitting};
use super::update::{update, Msg};
use super::{ui, TuiOptions};
use crate::engine::telemetry::{EngineEvent, Level, Snapshot};
use crate::engine::{EngineControl, EngineHandle};

/// At most one redraw per frame: about 30 a second.
const FRAME: Duration = Duration::from_millis(33);
/// Screen rows that are not a pane's rows (header, tabs, borders, status line).
const CHROME_ROWS: u16 = 10;
/// How long quitting waits for the engine's checkpoint before leaving anyway.
const CHECKPOINT_WAIT: Duration = Duration::from_secs(20);
/// How often the input thread looks up from waiting for a key to see if it should stop.
const INPUT_POLL: Duration = Duration::from_millis(100);

/// Restores the terminal when dropped: on normal return, on error and on unwind.
struct TerminalGuard {
    mouse: bool,
    stop_input: Arc<AtomicBool>,
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        self.stop_input.store(true, Ordering::Relaxed);
        if self.mouse {
            let _ = execute!(stdout(), DisableMouseCapture);
        }
        ratatui::restore();
    }
}

/// Reads terminal events on a dedicated thread (ratatui's crossterm has no
/// async event stream here); stops when told or when the receiver is gone.
fn spawn_input(tx: mpsc::Sender<Event>, stop: Arc<AtomicBool>) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("crawldeck-input".into())
        .spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                match event::poll(INPUT_POLL) {
                    Ok(true) => match event::read() {
                        Ok(ev) => {
                            if tx.blocking_send(ev).is_err() {
                                break;
                            }
                        }
                        Err(_) => break,
                    },
                    Ok(false) => {}
                    Err(_) => break,
                }
            }
        })
        .map(drop)
}

/// The message a terminal event means: keys, and mouse wheel as scrolling.
fn terminal_msg(ev: Event) -> Option<Msg> {
    match ev {
        Event::Key(key) => Some(Msg::Key(key)),
        Event::Mouse(m) => match m.kind {
            MouseEventKind::ScrollUp => Some(Msg::ScrollUp),
            MouseEventKind::ScrollDown => Some(Msg::ScrollDown),
            _ => None,
        },
        _ => None,
    }
}

/// Resolves on SIGTERM (never where there is none).
#[cfg(unix)]
async fn terminate_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    match signal(SignalKind::terminate()) {
        Ok(mut s) => {
            s.recv().await;
        }
        Err(_) => std::future::pending().await,
    }
}

/// Resolves on SIGTERM (never where there is none).
#[cfg(not(unix))]
async fn terminate_signal() {
    std::future::pending::<()>().await
}

/// Runs the workstation until the operator quits or closes a finished crawl.
/// The terminal is restored on every way out, including panics.
pub async fn run(handle: EngineHandle, opts: TuiOptions) -> anyhow::Result<TuiExit> {
    let (keymap, warnings) = effective_keymap(opts.keys_file.as_deref());
    let mut model = Model::new(keymap, opts.readonly, opts.no_color);
    model.attached = opts.attached;
    model.records = opts.records.clone();
    for w in &warnings {
        model.push_log(Level::Warn, w.clone());
    }
    if let Some(first) = warnings.first() {
        model.set_status(
            Level::Warn,
            format!(
                "{} key binding warning(s), see the log: {first}",
                warnings.len()
            ),
        );
    }

    let mut terminal = ratatui::try_init()?;
    let stop_input = Arc::new(AtomicBool::new(false));
    let _guard = TerminalGuard {
        mouse: !opts.no_mouse,
        stop_input: stop_input.clone(),
    };
    if !opts.no_mouse {
        execute!(stdout(), EnableMouseCapture)?;
        // ratatui's hook restores the screen; mouse capture must go first.
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let _ = execute!(stdout(), DisableMouseCapture);
            previous(info);
        }));
    }
    let (input_tx, input_rx) = mpsc::channel(256);
    spawn_input(input_tx, stop_input)
        .map_err(|e| anyhow::anyhow!("cannot start the terminal input thread: {e}"))?;
    drive(&mut terminal, handle, model, input_rx, terminate_signal()).await
}

/// The event loop over any backend: terminal events arrive on `input`,
/// `terminate` resolving counts as SIGTERM. Returns how the operator left.
pub async fn drive<B>(
    terminal: &mut Terminal<B>,
    handle: EngineHandle,
    mut model: Model,
    input_rx: mpsc::Receiver<Event>,
    terminate: impl Future<Output = ()>,
) -> anyhow::Result<TuiExit>
where
    B: Backend,
    B::Error: Send + Sync + 'static,
{
    let EngineHandle {
        control,
        mut snapshots,
        events,
    } = handle;
    model.set_snapshot(snapshots.borrow_and_update().clone());
    let mut sources = Sources::new(input_rx, snapshots, events, terminate);
    let listed = sources.listed_sender();
    let mut dirty = true;
    let mut last_draw: Option<Instant> = None;
    let mut quit_deadline: Option<Instant> = None;

    loop {
        let now = Instant::now();
        if dirty && last_draw.is_none_or(|t| now >= t + FRAME) {
            // The engine's events since the last frame, in one go: a crawl
            // sends one per page, and waking the loop for each cost more
            // than all the drawing.
            while let Some(msg) = sources.queued_event() {
                if let Some(exit) =
                    apply_msg(&mut model, &control, &listed, msg, &mut quit_deadline)
                {
                    return Ok(exit);
                }
            }
            let host_rows = draw(terminal, &mut model)?;
            last_draw = Some(now);
            dirty = false;
            if host_rows != model.host_rows {
                let effects = update(&mut model, Msg::HostRows(host_rows));
                if let Some(exit) = perform(&mut model, &control, &listed, effects) {
                    return Ok(exit);
                }
                dirty = true;
            }
        }
        let next_frame = last_draw.map_or(now, |t| t + FRAME);
        let msg = match sources
            .next(dirty.then_some(next_frame), quit_deadline)
            .await
        {
            Wake::Msg(msg) => msg,
            Wake::Resized => {
                dirty = true;
                continue;
            }
            Wake::Idle => continue,
            Wake::CheckpointOverdue => {
                tracing::warn!("the engine did not finish its checkpoint within {CHECKPOINT_WAIT:?}; leaving anyway");
                return Ok(TuiExit::Quit);
            }
        };
        dirty = true;
        if let Some(exit) = apply_msg(&mut model, &control, &listed, msg, &mut quit_deadline) {
            return Ok(exit);
        }
    }
}

/// Updates the model with one message and carries out its effects; a quit
/// that waits for the engine's checkpoint starts the deadline for it.
fn apply_msg(
    model: &mut Model,
    control: &EngineControl,
    listed: &mpsc::UnboundedSender<Msg>,
    msg: Msg,
    quit_deadline: &mut Option<Instant>,
) -> Option<TuiExit> {
    let effects = update(model, msg);
    let exit = perform(model, control, listed, effects);
    if model.quitting == Quitting::Checkpointing && quit_deadline.is_none() {
        *quit_deadline = Some(Instant::now() + CHECKPOINT_WAIT);
    }
    exit
}

/// What woke the loop.
enum Wake {
    /// Something for `update`.
    Msg(Msg),
    /// The terminal changed size: redraw, nothing to decide.
    Resized,
    /// A frame is due, a channel closed quietly, or an event `update` ignores.
    Idle,
    /// Quitting waited `CHECKPOINT_WAIT` for the engine's checkpoint.
    CheckpointOverdue,
}

/// Where the loop's messages come from; a source that has closed is no longer polled.
struct Sources<T> {
    input: mpsc::Receiver<Event>,
    snapshots: watch::Receiver<Arc<Snapshot>>,
    events: mpsc::Receiver<EngineEvent>,
    terminate: Pin<Box<T>>,
    /// Host lists read off the loop (`Effect::ListHost`).
    listed: mpsc::UnboundedReceiver<Msg>,
    listed_tx: mpsc::UnboundedSender<Msg>,
    input_open: bool,
    snapshots_open: bool,
    events_open: bool,
    terminated: bool,
}

impl<T: Future<Output = ()>> Sources<T> {
    /// Every source open.
    fn new(
        input: mpsc::Receiver<Event>,
        snapshots: watch::Receiver<Arc<Snapshot>>,
        events: mpsc::Receiver<EngineEvent>,
        terminate: T,
    ) -> Self {
        let (listed_tx, listed) = mpsc::unbounded_channel();
        Sources {
            input,
            snapshots,
            events,
            terminate: Box::pin(terminate),
            listed,
            listed_tx,
            input_open: true,
            snapshots_open: true,
            events_open: true,
            terminated: false,
        }
    }

    /// Where host lists are sent back to the loop.
    fn listed_sender(&self) -> mpsc::UnboundedSender<Msg> {
        self.listed_tx.clone()
    }

    /// An engine event already queued, without waiting.
    fn queued_event(&mut self) -> Option<Msg> {
        if !self.events_open {
            return None;
        }
        match self.events.try_recv() {
            Ok(ev) => Some(self.event_msg(Some(ev))),
            Err(mpsc::error::TryRecvError::Empty) => None,
            Err(mpsc::error::TryRecvError::Disconnected) => Some(self.event_msg(None)),
        }
    }

    /// An engine event as a message; `None`: the engine's stream closed.
    fn event_msg(&mut self, ev: Option<EngineEvent>) -> Msg {
        match ev {
            Some(ev) => Msg::Event(ev),
            None => {
                self.events_open = false;
                Msg::EngineClosed
            }
        }
    }

    /// Waits for the next source to speak, for the frame timer when a redraw
    /// is waiting (`frame`), or for the checkpoint deadline while quitting.
    async fn next(&mut self, frame: Option<Instant>, quit_deadline: Option<Instant>) -> Wake {
        let now = Instant::now();
        tokio::select! {
            ev = self.input.recv(), if self.input_open => match ev {
                Some(Event::Resize(..)) => Wake::Resized,
                Some(ev) => terminal_msg(ev).map_or(Wake::Idle, Wake::Msg),
                // The terminal is gone: leave as for SIGTERM.
                None => { self.input_open = false; Wake::Msg(Msg::Terminate) }
            },
            changed = self.snapshots.changed(), if self.snapshots_open => match changed {
                Ok(()) => Wake::Msg(Msg::Snapshot(self.snapshots.borrow_and_update().clone())),
                Err(_) => { self.snapshots_open = false; Wake::Idle }
            },
            // While a frame is due, events wait for it (`queued_event`).
            ev = self.events.recv(), if self.events_open && frame.is_none() => Wake::Msg(self.event_msg(ev)),
            Some(msg) = self.listed.recv() => Wake::Msg(msg),
            _ = &mut self.terminate, if !self.terminated => {
                self.terminated = true;
                Wake::Msg(Msg::Terminate)
            }
            _ = sleep_until(frame.unwrap_or(now)), if frame.is_some() => Wake::Idle,
            _ = sleep_until(quit_deadline.unwrap_or(now)), if quit_deadline.is_some() => {
                Wake::CheckpointOverdue
            }
        }
    }
}

/// Draws one frame, with the cursor in an open prompt, and keeps the page
/// size that page-up/down move by in step with the screen. Returns the rows
/// the hosts table has on this screen.
fn draw<B>(terminal: &mut Terminal<B>, model: &mut Model) -> anyhow::Result<usize>
where
    B: Backend,
    B::Error: Send + Sync + 'static,
{
    let mut host_rows = 0;
    terminal.draw(|frame| {
        let area = frame.area();
        ui::render(model, area, frame.buffer_mut());
        if let Some(pos) = ui::cursor(model, area) {
            frame.set_cursor_position(pos);
        }
        host_rows = ui::host_rows(area);
    })?;
    let height = terminal.size()?.height;
    model.page_rows = height.saturating_sub(CHROME_ROWS).max(1) as usize;
    Ok(host_rows)
}

/// Carries out `update`'s effects in order: commands go to the engine (and
/// their ids back to `update`), a quit ends the loop with its exit.
fn perform(
    model: &mut Model,
    control: &EngineControl,
    listed: &mpsc::UnboundedSender<Msg>,
    effects: Vec<Effect>,
) -> Option<TuiExit> {
    for effect in effects {
        match effect {
            Effect::ListHost {
                records,
                host,
                list,
            } => off_loop(listed, move || {
                let lines = records.host_list(&host, list);
                Msg::HostListed { host, list, lines }
            }),
            // Through the crawl's read path, off the loop.
            Effect::Inspect { records, url } => off_loop(listed, move || {
                let page = records.page(&url).map(std::sync::Arc::new);
                Msg::Inspected { url, page }
            }),
            Effect::ReadQuarantine { records } => {
                off_loop(listed, move || Msg::QuarantineRead(records.quarantine()))
            }
            Effect::ReadPages { records, request } => {
                off_loop(listed, move || Msg::PagesRead(records.page_band(&request)))
            }
            Effect::ReadAudit { records } => {
                off_loop(listed, move || Msg::AuditRead(records.audit()))
            }
            Effect::Select { page, css } => off_loop(listed, move || {
                let found = crate::engine::inspect::select(&page.html, &css);
                let lines = crate::results::page::select_lines(&css, &found);
                let url = page.url.clone();
                Msg::Selected { url, css, lines }
            }),
            Effect::Send(cmd) => {
                let what = command_label(&cmd);
                let id = control.send(cmd);
                // Recording a sent command has no effects of its own.
                update(model, Msg::Sent { id, what });
            }
            Effect::PreviewAfter { generation, delay } => {
                let due = listed.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(delay).await;
                    let _ = due.send(Msg::PreviewDue(generation));
                });
            }
            Effect::PagesFilterAfter { generation, delay } => {
                let due = listed.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(delay).await;
                    let _ = due.send(Msg::PagesFilterDue(generation));
                });
            }
            Effect::SendPreview { generation, spec } => {
                let id = control.send(crate::engine::control::Command::Preview(spec));
                update(model, Msg::PreviewSent { generation, id });
            }
            Effect::Window(window) => control.set_window(window),
            Effect::Quit(exit) => return Some(exit),
        }
    }
    None
}

/// Runs a read that blocks (the store, an HTML parse) on the blocking pool;
/// its answer comes back to the loop as a message.
fn off_loop(listed: &mpsc::UnboundedSender<Msg>, read: impl FnOnce() -> Msg + Send + 'static) {
    let listed = listed.clone();
    tokio::task::spawn_blocking(move || {
        let _ = listed.send(read());
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log_event(text: &str) -> EngineEvent {
        EngineEvent::Log {
            level: Level::Info,
            message: text.to_string(),
        }
    }

    /// Sources over channels the test holds; the engine's side is `events`.
    struct Fixture {
        sources: Sources<std::future::Pending<()>>,
        events: mpsc::Sender<EngineEvent>,
        _input: mpsc::Sender<Event>,
        _snapshots: watch::Sender<Arc<Snapshot>>,
    }

    fn fixture() -> Fixture {
        let (input_tx, input) = mpsc::channel(4);
        let (snapshot_tx, snapshots) = watch::channel(Arc::new(Snapshot::default()));
        let (events_tx, events) = mpsc::channel(16);
        Fixture {
            sources: Sources::new(input, snapshots, events, std::future::pending()),
            events: events_tx,
            _input: input_tx,
            _snapshots: snapshot_tx,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn events_wait_for_a_due_frame_and_are_then_taken_together() {
        // Kept whole: its input and snapshot ends stay open (a closed one wakes the loop).
        let mut f = fixture();
        let (sources, events) = (&mut f.sources, &f.events);
        events.send(log_event("one")).await.unwrap();
        events.send(log_event("two")).await.unwrap();
        let frame = Instant::now() + FRAME;
        // A frame is due: the loop is not woken for each event, only for the frame.
        assert!(matches!(sources.next(Some(frame), None).await, Wake::Idle));
        assert!(Instant::now() >= frame);
        let queued: Vec<String> = std::iter::from_fn(|| sources.queued_event())
            .map(|msg| match msg {
                Msg::Event(EngineEvent::Log { message, .. }) => message,
                _ => panic!("only the two events are queued"),
            })
            .collect();
        assert_eq!(queued, ["one", "two"]);
        // With no frame due, an event wakes the loop at once.
        events.send(log_event("three")).await.unwrap();
        let woke = sources.next(None, None).await;
        assert!(
            matches!(woke, Wake::Msg(Msg::Event(EngineEvent::Log { message, .. })) if message == "three")
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_closed_engine_is_noticed_among_the_queued_events() {
        let mut f = fixture();
        f.events.send(log_event("last")).await.unwrap();
        drop(f.events);
        let sources = &mut f.sources;
        assert!(matches!(sources.queued_event(), Some(Msg::Event(_))));
        assert!(matches!(sources.queued_event(), Some(Msg::EngineClosed)));
        assert!(sources.queued_event().is_none());
    }
}
