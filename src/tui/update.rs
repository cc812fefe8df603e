//! `update(model, msg) -> effects`: every decision of the TUI, pure and testable.
//! The only dispatcher: keys become actions here, and each action goes to the
//! module that owns it (`view`, `prompt`, `targets`) or to a function below.

use std::sync::Arc;

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind};

use super::action::Action;
use super::audit;
use super::effect::{send, Effect, TuiExit};
use super::inspector;
use super::keys::Mode;
use super::model::{EngineLife, FetchLine, HostList, HostListing, Model, Overlay, Pane, Quitting};
use super::pages;
use super::preview;
use super::prompt::{self, Submitted};
use super::quarantine;
use super::targets::{alert_action, host_action, remove_rule};
use super::view;
use crate::engine::control::{Command, CommandId, CommandResult, HostKey, Target};
use crate::engine::telemetry::{CrawlState, EngineEvent, Level, Snapshot};

/// Commands remembered for their results' log lines; past this the memory starts over.
const PENDING_CAPACITY: usize = 1024;

/// Everything that can happen to the TUI.
#[derive(Debug, Clone)]
pub enum Msg {
    /// A key press (or release, which is ignored).
    Key(KeyEvent),
    /// The mouse wheel: as up/down.
    ScrollUp,
    ScrollDown,
    /// The engine's newest snapshot.
    Snapshot(Arc<Snapshot>),
    /// One of the engine's discrete events.
    Event(EngineEvent),
    /// The events channel closed: the engine has stopped.
    EngineClosed,
    /// A command left for the engine under this id.
    Sent {
        id: CommandId,
        what: String,
    },
    /// SIGTERM or similar: checkpoint and exit as for Ctrl-C.
    Terminate,
    /// A host list asked for with `Effect::ListHost`, read.
    HostListed {
        host: HostKey,
        list: HostList,
        lines: Result<Vec<String>, String>,
    },
    /// The hosts table was drawn this many rows high.
    HostRows(usize),
    /// Typing in a rule prompt paused (`Effect::PreviewAfter`).
    PreviewDue(u64),
    /// A rule preview left for the engine under this id.
    PreviewSent {
        generation: u64,
        id: CommandId,
    },
    /// The parked URLs read for the quarantine pane, or why they could not be.
    QuarantineRead(Result<crate::engine::inspect::quarantine::Quarantine, String>),
    /// A band of the Pages view (`Effect::ReadPages`), or why it could not be read.
    PagesRead(Result<crate::results::window::Band, String>),
    /// Typing in the Pages filter paused (`Effect::PagesFilterAfter`).
    PagesFilterDue(u64),
    /// The audit's findings (`Effect::ReadAudit`), or why it could not run.
    AuditRead(Result<Vec<crate::results::audit::Finding>, String>),
    /// A page read for the inspector (`Effect::Inspect`), or why it could not be.
    Inspected {
        url: String,
        page: Result<Arc<crate::engine::inspect::PageInspection>, String>,
    },
    /// What `:select` found on an inspected page (`Effect::Select`), as lines.
    Selected {
        url: String,
        css: String,
        lines: Vec<String>,
    },
}

/// Applies one message to the model; returns what the run loop must do,
/// ending with the new hosts window when what is on screen changed.
pub fn update(model: &mut Model, msg: Msg) -> Vec<Effect> {
    let mut effects = apply(model, msg);
    effects.extend(preview::watch(model));
    model.clamp_selection();
    let window = model.host_window();
    if window != model.window_sent {
        model.window_sent = window.clone();
        effects.push(Effect::Window(window));
    }
    effects
}

/// What one message does to the model.
fn apply(model: &mut Model, msg: Msg) -> Vec<Effect> {
    match msg {
        Msg::Key(key) if key.kind == KeyEventKind::Release => Vec::new(),
        Msg::Key(key) => on_key(model, key),
        Msg::ScrollUp => on_action(model, Action::Up),
        Msg::ScrollDown => on_action(model, Action::Down),
        Msg::Snapshot(snap) => {
            let done = snap.state == CrawlState::Done;
            model.set_snapshot(snap);
            let mut effects = quarantine::on_snapshot(model);
            effects.extend(pages::on_snapshot(model));
            effects.extend(audit::on_snapshot(model));
            effects.extend(finish_if_done(model, done));
            effects
        }
        Msg::Event(ev) => {
            on_event(model, ev);
            Vec::new()
        }
        Msg::EngineClosed => {
            if !model.engine_closed() {
                // No word from the engine on the way out: the last snapshot says.
                let finished = model.latest.state == CrawlState::Done;
                let reason = match finished {
                    true => model.latest.finish_reason.clone().unwrap_or_default(),
                    false => "the engine stopped (see the log)".into(),
                };
                engine_ended(model, finished, reason);
            }
            finish_if_done(model, true)
        }
        Msg::Sent { id, what } => {
            if model.pending.len() >= PENDING_CAPACITY {
                model.pending.clear();
            }
            model.pending.insert(id, what);
            Vec::new()
        }
        // A signal to a viewer ends the viewer, never the crawl it watches.
        Msg::Terminate if model.attached => vec![Effect::Quit(TuiExit::Detach)],
        Msg::Terminate => begin_quit(model),
        Msg::HostListed { host, list, lines } => {
            if let Some(listing) = &mut model.host_listing {
                if listing.host == host && listing.list == list {
                    listing.lines = Some(lines);
                }
            }
            Vec::new()
        }
        Msg::QuarantineRead(read) => {
            quarantine::on_read(model, read);
            Vec::new()
        }
        Msg::PagesRead(read) => pages::on_read(model, read),
        Msg::PagesFilterDue(generation) => pages::typing_paused(model, generation),
        Msg::AuditRead(read) => {
            audit::on_read(model, read);
            Vec::new()
        }
        Msg::Inspected { url, page } => {
            inspector::inspected(model, url, page);
            Vec::new()
        }
        Msg::Selected { url, css, lines } => {
            inspector::selected(model, url, css, lines);
            Vec::new()
        }
        Msg::HostRows(rows) => {
            model.host_rows = rows;
            Vec::new()
        }
        Msg::PreviewDue(generation) => preview::due(model, generation),
        Msg::PreviewSent { generation, id } => {
            preview::sent(model, generation, id);
            Vec::new()
        }
    }
}

/// Opens one of the detail view's host lists; the run loop reads it.
fn list_host(model: &mut Model, list: HostList) -> Vec<Effect> {
    let Some(host) = model.detail.clone() else {
        return Vec::new();
    };
    let Some(records) = model.records.clone() else {
        model.set_status(Level::Warn, "no records to read host lists from");
        return Vec::new();
    };
    model.detail_scroll = 0;
    model.host_listing = Some(HostListing {
        host: host.clone(),
        list,
        lines: None,
    });
    vec![Effect::ListHost {
        records,
        host,
        list,
    }]
}

/// The engine's stream ended: the crawl finished or the engine is gone.
/// Commands still waiting will get no answer, so they are named as lost.
fn engine_ended(model: &mut Model, finished: bool, reason: String) {
    if model.engine_closed() {
        return;
    }
    let (level, line) = match (finished, reason.is_empty()) {
        (true, true) => (Level::Info, "the crawl finished".to_string()),
        (true, false) => (Level::Info, format!("the crawl finished: {reason}")),
        (false, _) => (Level::Error, format!("engine gone: {reason}")),
    };
    model.push_log(level, line.clone());
    let mut lost: Vec<String> = model.pending.drain().map(|(_, what)| what).collect();
    lost.sort();
    for what in lost {
        model.push_log(Level::Warn, format!("{what}: no answer came"));
    }
    model.engine = match finished {
        true => EngineLife::Finished(reason),
        false => EngineLife::Gone(reason),
    };
    let preview = &mut model.rule_preview;
    preview.in_flight.clear();
    if preview.asked.take().is_some() {
        preview.shown = Some(Err(model.engine.refusal().unwrap_or_default()));
    }
    if model.attached {
        model.set_status(level, format!("{line}; q leaves"));
    }
}

/// Leaves once the engine is done, if the operator was quitting.
fn finish_if_done(model: &mut Model, done: bool) -> Vec<Effect> {
    if done && model.quitting == Quitting::Checkpointing {
        return vec![Effect::Quit(TuiExit::Quit)];
    }
    Vec::new()
}

/// Keeps what an engine event says: in the log, the status line or a host's recent fetches.
fn on_event(model: &mut Model, ev: EngineEvent) {
    match ev {
        EngineEvent::CommandDone(result) => command_done(model, result),
        EngineEvent::Fetched {
            host,
            url,
            status,
            latency,
            bytes,
            error,
        } => {
            let line = FetchLine {
                url,
                status,
                latency,
                bytes,
                error,
            };
            model.push_fetch(host, line);
        }
        EngineEvent::BreakerChanged {
            host,
            from,
            to,
            reason,
        } => {
            let (from, to) = (from.label(), to.label());
            model.push_log(
                Level::Warn,
                format!("breaker {host}: {from} -> {to} ({reason})"),
            );
        }
        // The engine logs each alert itself (EngineEvent::Log); the alerts pane shows it.
        EngineEvent::Alert(_) => {}
        EngineEvent::AlertChanged { alert_id, status } => {
            model.push_log(Level::Info, format!("alert #{alert_id} {}", status.label()));
        }
        EngineEvent::Log { level, message } => model.push_log(level, message),
        EngineEvent::StateChanged(state) => {
            model.push_log(Level::Info, format!("crawl {}", state.label()))
        }
        EngineEvent::Ended { finished, reason } => engine_ended(model, finished, reason),
    }
}

/// A command's result, named as it was sent, goes to the log and the status line.
fn command_done(model: &mut Model, result: CommandResult) {
    if preview::answered(model, &result) {
        return;
    }
    let what = model
        .pending
        .remove(&result.id)
        .unwrap_or_else(|| format!("command {}", result.id.0));
    let (level, text) = match result.outcome {
        Ok(summary) => (Level::Info, format!("{what}: {summary}")),
        Err(why) => (Level::Error, format!("{what} failed: {why}")),
    };
    // A long answer (`:preview`) is one log line per line; the status shows its first.
    let mut lines = text.lines();
    let first = lines.next().unwrap_or_default().to_string();
    model.push_log(level, first.clone());
    for line in lines {
        model.push_log(level, line.to_string());
    }
    model.set_status(level, first);
}

/// A key press: the quit question takes any key; a prompt takes keys as text
/// unless they are bound in its mode; elsewhere a bound key runs its action.
fn on_key(model: &mut Model, key: KeyEvent) -> Vec<Effect> {
    if model.overlay == Overlay::ConfirmQuit {
        return answer_quit(model, &key);
    }
    let mode = model.mode();
    let action = model.keymap.action(mode, &key);
    match (mode, action) {
        (Mode::Prompt | Mode::Command, action) => on_prompt_key(model, action, &key),
        (_, Some(action)) => on_action(model, action),
        (_, None) => Vec::new(),
    }
}

/// The answer to "checkpoint and quit?": yes is y, q, Enter or the force-quit key.
/// Attached, the question is "detach or stop the crawl?": detach is d, q,
/// Enter or the force-quit key; s stops the crawl.
fn answer_quit(model: &mut Model, key: &KeyEvent) -> Vec<Effect> {
    model.overlay = Overlay::None;
    if model.attached {
        return answer_detach(model, key);
    }
    let yes = matches!(key.code, KeyCode::Char('y' | 'Y' | 'q') | KeyCode::Enter)
        || model.keymap.action(Mode::Normal, key) == Some(Action::ForceQuit);
    if yes {
        return begin_quit(model);
    }
    model.set_status(Level::Info, "quit cancelled");
    Vec::new()
}

fn answer_detach(model: &mut Model, key: &KeyEvent) -> Vec<Effect> {
    let detach = matches!(key.code, KeyCode::Char('d' | 'D' | 'q') | KeyCode::Enter)
        || model.keymap.action(Mode::Normal, key) == Some(Action::ForceQuit);
    if detach {
        return vec![Effect::Quit(TuiExit::Detach)];
    }
    if matches!(key.code, KeyCode::Char('s' | 'S')) {
        if model.readonly {
            model.set_status(Level::Warn, "read-only: stop not sent");
            return Vec::new();
        }
        return begin_quit(model);
    }
    model.set_status(Level::Info, "quit cancelled");
    Vec::new()
}

/// A key while a prompt is open.
fn on_prompt_key(model: &mut Model, action: Option<Action>, key: &KeyEvent) -> Vec<Effect> {
    match action {
        Some(Action::Submit) => match prompt::submit(model) {
            Submitted::Effects(effects) => effects,
            Submitted::Dispatch(action) => on_action(model, action),
            Submitted::Select(css) => inspector::select(model, css),
        },
        Some(Action::Cancel) => prompt::cancel(model),
        Some(Action::Complete) => {
            prompt::complete(model);
            Vec::new()
        }
        Some(Action::ForceQuit) => force_quit(model),
        _ => prompt::edit_prompt(model, key),
    }
}

/// Ctrl-C: an attached viewer detaches (the crawl may be others' too),
/// or leaves once the engine has ended (there is nothing to detach from);
/// otherwise, or while a stop is under way, as [`begin_quit`].
fn force_quit(model: &mut Model) -> Vec<Effect> {
    if model.attached && model.engine_closed() {
        return vec![Effect::Quit(TuiExit::EngineFinished)];
    }
    if model.attached && model.quitting == Quitting::No {
        return vec![Effect::Quit(TuiExit::Detach)];
    }
    begin_quit(model)
}

/// Asks the engine to checkpoint and stop; a second request leaves at once.
pub(super) fn begin_quit(model: &mut Model) -> Vec<Effect> {
    if model.quitting == Quitting::Checkpointing || model.engine_closed() {
        // Second request, or nothing left to checkpoint: leave now.
        return vec![Effect::Quit(TuiExit::Quit)];
    }
    model.quitting = Quitting::Checkpointing;
    model.overlay = Overlay::None;
    model.prompt = None;
    model.set_status(Level::Info, "checkpointing…");
    // Quitting is allowed read-only too: it ends this process, not someone else's crawl.
    vec![
        Effect::Send(Command::Checkpoint),
        Effect::Send(Command::Shutdown),
    ]
}

/// Runs one action by handing it to the function or module that owns it.
pub(super) fn on_action(model: &mut Model, action: Action) -> Vec<Effect> {
    match action {
        Action::Up
        | Action::Down
        | Action::PageUp
        | Action::PageDown
        | Action::Top
        | Action::Bottom
        | Action::Help
        | Action::Back
        | Action::NextPane
        | Action::PrevPane
        | Action::PaneHosts
        | Action::PaneAlerts
        | Action::PaneRules
        | Action::PaneLog
        | Action::PaneQueues
        | Action::PaneWorkers
        | Action::PaneQuarantine
        | Action::PanePages
        | Action::PaneAudit
        | Action::SortNext
        | Action::SortReverse
        | Action::Freeze => {
            if let Some(effects) = pages_view_action(model, action) {
                return effects;
            }
            let before = model.pane;
            view::apply(model, action);
            entered(model, before)
        }
        Action::Filter if pages_in_front(model) => {
            pages::open_filter(model);
            Vec::new()
        }
        Action::Filter
        | Action::CommandLine
        | Action::AddRegexRule
        | Action::AddGlobRule
        | Action::AddSeed
        | Action::SetRate => {
            prompt::open_for(model, action);
            Vec::new()
        }
        Action::Open if model.pane == Pane::Quarantine && model.detail.is_none() => {
            quarantine::open(model)
        }
        Action::Open if pages_in_front(model) => pages::open(model),
        Action::PageLinks if pages_in_front(model) => pages::links(model),
        Action::PageLinks => Vec::new(),
        Action::Open if model.pane == Pane::Audit && model.detail.is_none() => audit::open(model),
        Action::Open if model.pane == Pane::Alerts && model.detail.is_none() => {
            inspector::open(model)
        }
        Action::Open => {
            view::apply(model, action);
            Vec::new()
        }
        Action::InspectPages => inspector::open(model),
        Action::NextPage => inspector::step(model, true),
        Action::PrevPage => inspector::step(model, false),
        Action::ExtractSelection => {
            inspector::extract_selection(model);
            Vec::new()
        }
        Action::HostErrors => list_host(model, HostList::Errors),
        Action::HostRedirects => list_host(model, HostList::Redirects),
        Action::HostBlocked => list_host(model, HostList::Blocked),
        Action::Quit => quit(model),
        Action::ForceQuit => force_quit(model),
        Action::TogglePause => toggle_pause(model),
        Action::RateUp => rate_up(model),
        Action::RateDown => rate_down(model),
        Action::RemoveRule => remove_rule(model),
        Action::AcceptAlert | Action::EditAlert | Action::DismissAlert => {
            alert_action(model, action)
        }
        // The host actions, and the prompt keys (submit, cancel, complete) when
        // bound in a view: the selected host has to exist either way.
        _ => host_action(model, action),
    }
}

/// Whether the Pages view is what the keys act on.
fn pages_in_front(model: &Model) -> bool {
    model.pane == Pane::Pages
        && model.detail.is_none()
        && model.inspector.is_none()
        && model.overlay == Overlay::None
}

/// Moving and sorting in the Pages view, which reads bands as it goes;
/// `None` for an action the view does not take (or when it is not in front).
fn pages_view_action(model: &mut Model, action: Action) -> Option<Vec<Effect>> {
    if !pages_in_front(model) {
        return None;
    }
    let page = model.page_rows.max(1) as isize;
    Some(match action {
        Action::Up => pages::scroll(model, -1),
        Action::Down => pages::scroll(model, 1),
        Action::PageUp => pages::scroll(model, -page),
        Action::PageDown => pages::scroll(model, page),
        Action::Top => pages::scroll(model, isize::MIN / 2),
        Action::Bottom => pages::scroll(model, isize::MAX / 2),
        Action::SortNext => pages::sort_next(model),
        Action::SortReverse => pages::sort_reverse(model),
        Action::Back if !model.pages.filter.is_empty() => pages::set_filter(model, String::new()),
        _ => return None,
    })
}

/// A pane that reads its rows reads them when it comes to the front.
fn entered(model: &mut Model, before: Pane) -> Vec<Effect> {
    if model.pane == before {
        return Vec::new();
    }
    match model.pane {
        Pane::Quarantine => quarantine::refresh(model),
        Pane::Pages => pages::refresh(model),
        Pane::Audit => audit::refresh(model),
        _ => Vec::new(),
    }
}

/// Quit: closes help; leaves a finished crawl; asks before stopping a running one.
fn quit(model: &mut Model) -> Vec<Effect> {
    if model.overlay == Overlay::Help {
        model.overlay = Overlay::None;
    } else if model.engine_closed() || model.latest.state == CrawlState::Done {
        return vec![Effect::Quit(TuiExit::EngineFinished)];
    } else if model.quitting == Quitting::No {
        model.overlay = Overlay::ConfirmQuit;
    }
    Vec::new()
}

/// Pauses the whole crawl, or resumes it when paused.
fn toggle_pause(model: &mut Model) -> Vec<Effect> {
    let cmd = if model.latest.state == CrawlState::Paused {
        Command::Resume(Target::Global)
    } else {
        Command::Pause(Target::Global)
    };
    send(model, cmd)
}

/// One page/s more (to the next whole number); sets a cap of 1 when there is none.
fn rate_up(model: &mut Model) -> Vec<Effect> {
    let rate = model.latest.global_rate.map_or(1.0, |r| r.floor() + 1.0);
    send(model, Command::SetGlobalRate(Some(rate)))
}

/// One page/s less (to the previous whole number), never below 1.
fn rate_down(model: &mut Model) -> Vec<Effect> {
    match model.latest.global_rate {
        Some(r) if r > 1.0 => send(
            model,
            Command::SetGlobalRate(Some((r.ceil() - 1.0).max(1.0))),
        ),
        Some(_) => {
            let hint = "rate is at 1 page/s; :rate off removes the cap";
            model.set_status(Level::Info, hint);
            Vec::new()
        }
        None => {
            model.set_status(Level::Info, "no rate cap yet; rate-up sets one");
            Vec::new()
        }
    }
}

#[cfg(test)]
#[path = "update_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "preview_tests.rs"]
mod preview_tests;

#[cfg(test)]
#[path = "update_quarantine_tests.rs"]
mod quarantine_tests;

#[cfg(test)]
#[path = "update_pages_tests.rs"]
mod pages_tests;
