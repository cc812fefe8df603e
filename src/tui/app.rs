//! The run loop: one `select!` over terminal input, snapshots, engine events,
//! a one-second tick and the frame deadline. It draws only when something
//! changed, at most 30 times a second; the engine never waits on it.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ratatui::crossterm::event::{self, Event, KeyEventKind, MouseEventKind};
use ratatui::crossterm::{cursor, execute};
use tokio::sync::mpsc;
use tokio::time::{interval, Instant, MissedTickBehavior};

use super::keys;
use super::model::{Effect, Model, Msg, ViewOptions};
use super::update::update;
use super::{ui, TuiExit, TuiOptions};
use crate::engine::EngineHandle;

const FRAME: Duration = Duration::from_millis(33);
/// After quitting, how long the engine may take to finish in-flight requests.
const QUIT_WAIT: Duration = Duration::from_secs(15);

/// Puts the terminal back however the UI ends (return, error or panic).
struct Restore {
    mouse: bool,
}

impl Restore {
    fn now(mouse: bool) {
        if mouse {
            let _ = execute!(std::io::stdout(), event::DisableMouseCapture);
        }
        ratatui::restore();
        let _ = execute!(std::io::stdout(), cursor::Show);
        let _ = std::io::stdout().flush();
    }
}

impl Drop for Restore {
    fn drop(&mut self) {
        Restore::now(self.mouse);
    }
}

/// Terminal events are read on their own thread (crossterm's reader blocks).
fn spawn_input(stop: Arc<AtomicBool>) -> mpsc::UnboundedReceiver<Event> {
    let (tx, rx) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            match event::poll(Duration::from_millis(100)) {
                Ok(true) => match event::read() {
                    Ok(ev) => {
                        if tx.send(ev).is_err() {
                            break;
                        }
                    }
                    Err(_) => break,
                },
                Ok(false) => {}
                Err(_) => break,
            }
        }
    });
    rx
}

pub async fn run(handle: EngineHandle, opts: TuiOptions) -> anyhow::Result<TuiExit> {
    let (keymap, warnings) = keys::effective_keymap(opts.keys_file.as_deref());
    let mut model = Model::new(
        keymap,
        warnings,
        ViewOptions {
            color: !opts.no_color,
            readonly: opts.readonly,
        },
    );
    let mouse = !opts.no_mouse;
    let mut terminal = ratatui::try_init()?;
    let _restore = Restore { mouse };
    if mouse {
        execute!(std::io::stdout(), event::EnableMouseCapture)?;
    }
    let stop = Arc::new(AtomicBool::new(false));
    let mut input = spawn_input(stop.clone());
    let EngineHandle {
        control,
        mut snapshots,
        mut events,
    } = handle;
    let mut second = interval(Duration::from_secs(1));
    second.set_missed_tick_behavior(MissedTickBehavior::Skip);
    let mut frame = interval(FRAME);
    frame.set_missed_tick_behavior(MissedTickBehavior::Skip);
    #[cfg(unix)]
    let mut sigterm = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let (mut events_open, mut snapshots_open) = (true, true);
    let mut dirty = true;
    let mut quit_deadline: Option<Instant> = None;
    model.snapshot = snapshots.borrow_and_update().clone();

    let exit = 'outer: loop {
        #[cfg(unix)]
        let terminate = sigterm.recv();
        #[cfg(not(unix))]
        let terminate = std::future::pending::<Option<()>>();
        let msg = tokio::select! {
            Some(ev) = input.recv() => match ev {
                Event::Key(key) if key.kind != KeyEventKind::Release => Msg::Key(key),
                Event::Mouse(m) => match m.kind {
                    MouseEventKind::ScrollDown => Msg::Key(event::KeyEvent::from(event::KeyCode::Down)),
                    MouseEventKind::ScrollUp => Msg::Key(event::KeyEvent::from(event::KeyCode::Up)),
                    _ => continue,
                },
                Event::Resize(..) => {
                    dirty = true;
                    continue;
                }
                _ => continue,
            },
            changed = snapshots.changed(), if snapshots_open => match changed {
                Ok(()) => Msg::Snapshot(snapshots.borrow_and_update().clone()),
                Err(_) => {
                    snapshots_open = false;
                    continue;
                }
            },
            event = events.recv(), if events_open => match event {
                Some(event) => Msg::Event(event),
                None => {
                    events_open = false;
                    Msg::EngineClosed
                }
            },
            _ = second.tick() => {
                if quit_deadline.is_some_and(|d| Instant::now() >= d) {
                    break 'outer TuiExit::Quit;
                }
                Msg::Second
            }
            _ = terminate => Msg::Terminate,
            _ = frame.tick(), if dirty => {
                terminal.draw(|f| ui::render(&model, f.area(), f.buffer_mut()))?;
                dirty = false;
                continue;
            }
        };
        let finished_before_quit = !model.quitting && model.engine_closed;
        for effect in update(&mut model, msg) {
            match effect {
                Effect::Send(command) => {
                    control.send(command);
                }
                Effect::Quit => {
                    break 'outer if finished_before_quit {
                        TuiExit::EngineFinished
                    } else {
                        TuiExit::Quit
                    };
                }
            }
        }
        if model.quitting && quit_deadline.is_none() {
            quit_deadline = Some(Instant::now() + QUIT_WAIT);
        }
        dirty = true;
    };
    stop.store(true, Ordering::Relaxed);
    terminal.draw(|f| ui::render(&model, f.area(), f.buffer_mut()))?;
    Ok(exit)
}
