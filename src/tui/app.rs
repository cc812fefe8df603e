//! The run loop: owns the terminal, turns terminal input, snapshots and engine
//! events into messages, applies `update`, performs effects and redraws at most
//! 30 times a second, only when something changed. The crawl never waits on it.

use std::future::Future;
use std::io::stdout;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ratatui::backend::Backend;
use ratatui::crossterm::event::{
    self, DisableMouseCapture, EnableMouseCapture, Event, MouseEventKind,
};
use ratatui::crossterm::execute;
use ratatui::Terminal;
use tokio::sync::mpsc;
use tokio::time::{sleep_until, Instant};

use super::effect::{command_label, Effect, TuiExit};
use super::keys::effective_keymap;
use super::model::{Model, Quitting};
use super::update::{update, Msg};
use super::{ui, TuiOptions};
use crate::engine::telemetry::Level;
use crate::engine::EngineHandle;

const FRAME: Duration = Duration::from_millis(33);
/// How long quitting waits for the engine's checkpoint before leaving anyway.
const CHECKPOINT_WAIT: Duration = Duration::from_secs(20);
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

#[cfg(not(unix))]
async fn terminate_signal() {
    std::future::pending::<()>().await
}

/// Runs the workstation until the operator quits or closes a finished crawl.
/// The terminal is restored on every way out, including panics.
pub async fn run(handle: EngineHandle, opts: TuiOptions) -> anyhow::Result<TuiExit> {
    let (keymap, warnings) = effective_keymap(opts.keys_file.as_deref());
    let mut model = Model::new(keymap, opts.readonly, opts.no_color);
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
    mut input_rx: mpsc::Receiver<Event>,
    terminate: impl Future<Output = ()>,
) -> anyhow::Result<TuiExit>
where
    B: Backend,
    B::Error: Send + Sync + 'static,
{
    let EngineHandle {
        control,
        mut snapshots,
        mut events,
    } = handle;
    model.set_snapshot(snapshots.borrow_and_update().clone());
    tokio::pin!(terminate);
    let (mut input_open, mut snapshots_open, mut events_open, mut terminated) =
        (true, true, true, false);
    let mut dirty = true;
    let mut last_draw: Option<Instant> = None;
    let mut quit_deadline: Option<Instant> = None;

    loop {
        let now = Instant::now();
        if dirty && last_draw.is_none_or(|t| now >= t + FRAME) {
            terminal.draw(|frame| {
                let area = frame.area();
                ui::render(&model, area, frame.buffer_mut());
                if let Some(pos) = ui::cursor(&model, area) {
                    frame.set_cursor_position(pos);
                }
            })?;
            model.page_rows = terminal.size()?.height.saturating_sub(10).max(1) as usize;
            last_draw = Some(now);
            dirty = false;
        }
        let next_frame = last_draw.map_or(now, |t| t + FRAME);
        let msg = tokio::select! {
            ev = input_rx.recv(), if input_open => match ev {
                Some(Event::Resize(..)) => { dirty = true; None }
                Some(ev) => terminal_msg(ev),
                // The terminal is gone: leave as for SIGTERM.
                None => { input_open = false; Some(Msg::Terminate) }
            },
            changed = snapshots.changed(), if snapshots_open => match changed {
                Ok(()) => Some(Msg::Snapshot(snapshots.borrow_and_update().clone())),
                Err(_) => { snapshots_open = false; None }
            },
            ev = events.recv(), if events_open => match ev {
                Some(ev) => Some(Msg::Event(ev)),
                None => { events_open = false; Some(Msg::EngineClosed) }
            },
            _ = &mut terminate, if !terminated => { terminated = true; Some(Msg::Terminate) }
            _ = sleep_until(next_frame), if dirty => None,
            _ = sleep_until(quit_deadline.unwrap_or(now)), if quit_deadline.is_some() => {
                tracing::warn!("the engine did not finish its checkpoint within {CHECKPOINT_WAIT:?}; leaving anyway");
                return Ok(TuiExit::Quit);
            }
        };
        let Some(msg) = msg else { continue };
        dirty = true;
        for effect in update(&mut model, msg) {
            match effect {
                Effect::Send(cmd) => {
                    let what = command_label(&cmd);
                    let id = control.send(cmd);
                    update(&mut model, Msg::Sent { id, what });
                }
                Effect::Quit(exit) => return Ok(exit),
            }
        }
        if model.quitting == Quitting::Checkpointing && quit_deadline.is_none() {
            quit_deadline = Some(Instant::now() + CHECKPOINT_WAIT);
        }
    }
}
