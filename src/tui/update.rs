//! `update(model, msg) -> effects`: every decision of the TUI, pure and testable.

use std::sync::Arc;

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind};

use super::action::Action;
use super::effect::{send, Effect, TuiExit};
use super::keys::Mode;
use super::model::{FetchLine, Model, Overlay, Pane, PromptKind, Quitting, SortColumn};
use super::prompt::{complete, edit_prompt, submit, Submitted};
use super::targets::{alert_action, host_action};
use crate::engine::control::{Command, CommandId, PatternKind, Target};
use crate::engine::telemetry::{CrawlState, EngineEvent, Level, Snapshot};

#[derive(Debug, Clone)]
pub enum Msg {
    Key(KeyEvent),
    ScrollUp,
    ScrollDown,
    Snapshot(Arc<Snapshot>),
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
}

pub fn update(model: &mut Model, msg: Msg) -> Vec<Effect> {
    match msg {
        Msg::Key(key) if key.kind == KeyEventKind::Release => Vec::new(),
        Msg::Key(key) => on_key(model, key),
        Msg::ScrollUp => on_action(model, Action::Up),
        Msg::ScrollDown => on_action(model, Action::Down),
        Msg::Snapshot(snap) => {
            let done = snap.state == CrawlState::Done;
            model.set_snapshot(snap);
            finish_if_done(model, done)
        }
        Msg::Event(ev) => on_event(model, ev),
        Msg::EngineClosed => {
            if !model.engine_closed {
                model.engine_closed = true;
                model.push_log(Level::Info, "engine stopped".into());
            }
            finish_if_done(model, true)
        }
        Msg::Sent { id, what } => {
            if model.pending.len() >= 1024 {
                model.pending.clear();
            }
            model.pending.insert(id, what);
            Vec::new()
        }
        Msg::Terminate => begin_quit(model),
    }
}

fn finish_if_done(model: &mut Model, done: bool) -> Vec<Effect> {
    if done && model.quitting == Quitting::Checkpointing {
        return vec![Effect::Quit(TuiExit::Quit)];
    }
    Vec::new()
}

fn on_event(model: &mut Model, ev: EngineEvent) -> Vec<Effect> {
    match ev {
        EngineEvent::CommandDone(result) => {
            let what = model
                .pending
                .remove(&result.id)
                .unwrap_or_else(|| format!("command {}", result.id.0));
            let (level, text) = match result.outcome {
                Ok(summary) => (Level::Info, format!("{what}: {summary}")),
                Err(why) => (Level::Error, format!("{what} failed: {why}")),
            };
            model.push_log(level, text.clone());
            model.set_status(level, text);
        }
        EngineEvent::Fetched {
            host,
            url,
            status,
            latency,
            bytes,
            error,
        } => {
            model.push_fetch(
                host,
                FetchLine {
                    url,
                    status,
                    latency,
                    bytes,
                    error,
                },
            );
        }
        EngineEvent::BreakerChanged {
            host,
            from,
            to,
            reason,
        } => {
            model.push_log(
                Level::Warn,
                format!(
                    "breaker {host}: {} -> {} ({reason})",
                    from.label(),
                    to.label()
                ),
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
    }
    Vec::new()
}

fn on_key(model: &mut Model, key: KeyEvent) -> Vec<Effect> {
    if model.overlay == Overlay::ConfirmQuit {
        model.overlay = Overlay::None;
        let yes = matches!(key.code, KeyCode::Char('y' | 'Y' | 'q') | KeyCode::Enter)
            || model.keymap.action(Mode::Normal, &key) == Some(Action::ForceQuit);
        if yes {
            return begin_quit(model);
        }
        model.set_status(Level::Info, "quit cancelled");
        return Vec::new();
    }
    let mode = model.mode();
    let action = model.keymap.action(mode, &key);
    match mode {
        Mode::Prompt | Mode::Command => match action {
            Some(Action::Submit) => match submit(model) {
                Submitted::Effects(effects) => effects,
                Submitted::Dispatch(action) => on_action(model, action),
            },
            Some(Action::Cancel) => {
                if let Some(p) = model.prompt.take() {
                    if p.kind == PromptKind::Filter {
                        model.filter.clear();
                    }
                }
                Vec::new()
            }
            Some(Action::Complete) => {
                complete(model);
                Vec::new()
            }
            Some(Action::ForceQuit) => begin_quit(model),
            _ => {
                edit_prompt(model, &key);
                Vec::new()
            }
        },
        _ => match action {
            Some(action) => on_action(model, action),
            None => Vec::new(),
        },
    }
}

pub(super) fn begin_quit(model: &mut Model) -> Vec<Effect> {
    if model.quitting == Quitting::Checkpointing || model.engine_closed {
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

fn move_selection(index: &mut usize, len: usize, delta: isize) {
    let max = len.saturating_sub(1) as isize;
    *index = (*index as isize + delta).clamp(0, max) as usize;
}

pub(super) fn on_action(model: &mut Model, action: Action) -> Vec<Effect> {
    let page = model.page_rows.max(1) as isize;
    let delta = match action {
        Action::Up => Some(-1),
        Action::Down => Some(1),
        Action::PageUp => Some(-page),
        Action::PageDown => Some(page),
        Action::Top => Some(isize::MIN / 2),
        Action::Bottom => Some(isize::MAX / 2),
        _ => None,
    };
    if let Some(delta) = delta {
        scroll(model, delta);
        return Vec::new();
    }
    match action {
        Action::Quit => {
            if model.overlay == Overlay::Help {
                model.overlay = Overlay::None;
            } else if model.engine_closed || model.latest.state == CrawlState::Done {
                return vec![Effect::Quit(TuiExit::EngineFinished)];
            } else if model.quitting == Quitting::No {
                model.overlay = Overlay::ConfirmQuit;
            }
        }
        Action::ForceQuit => return begin_quit(model),
        Action::Help => {
            model.overlay = if model.overlay == Overlay::Help {
                Overlay::None
            } else {
                Overlay::Help
            };
            model.help_scroll = 0;
        }
        Action::Back => {
            if model.overlay == Overlay::Help {
                model.overlay = Overlay::None;
            } else if model.detail.is_some() {
                model.detail = None;
            } else if !model.filter.is_empty() {
                model.filter.clear();
            } else {
                model.status = None;
            }
        }
        Action::Filter => model.open_prompt(PromptKind::Filter, model.filter.clone()),
        Action::CommandLine => model.open_prompt(PromptKind::Command, String::new()),
        Action::NextPane | Action::PrevPane => {
            let i = Pane::ALL.iter().position(|p| *p == model.pane).unwrap_or(0);
            let n = Pane::ALL.len();
            let next = if action == Action::NextPane {
                (i + 1) % n
            } else {
                (i + n - 1) % n
            };
            model.pane = Pane::ALL[next];
        }
        Action::PaneHosts => model.pane = Pane::Hosts,
        Action::PaneAlerts => model.pane = Pane::Alerts,
        Action::PaneRules => model.pane = Pane::Rules,
        Action::PaneLog => model.pane = Pane::Log,
        Action::PaneQueues => model.pane = Pane::Queues,
        Action::Open => {
            if model.pane == Pane::Hosts {
                if let Some(h) = model.selected_host() {
                    model.detail = Some(h.host.clone());
                    model.detail_scroll = 0;
                }
            }
        }
        Action::SortNext => {
            let i = SortColumn::ALL
                .iter()
                .position(|c| *c == model.sort)
                .unwrap_or(0);
            model.sort = SortColumn::ALL[(i + 1) % SortColumn::ALL.len()];
            model.set_status(
                Level::Info,
                format!("hosts sorted by {}", model.sort.label()),
            );
        }
        Action::SortReverse => model.sort_reverse = !model.sort_reverse,
        Action::Freeze => {
            model.frozen = !model.frozen;
            if !model.frozen {
                model.shown = model.latest.clone();
                model.clamp_selection();
            }
        }
        Action::TogglePause => {
            let cmd = if model.latest.state == CrawlState::Paused {
                Command::Resume(Target::Global)
            } else {
                Command::Pause(Target::Global)
            };
            return send(model, cmd);
        }
        Action::AddRegexRule => model.open_prompt(
            PromptKind::Rule {
                kind: PatternKind::Regex,
                host: None,
            },
            String::new(),
        ),
        Action::AddGlobRule => model.open_prompt(
            PromptKind::Rule {
                kind: PatternKind::Glob,
                host: None,
            },
            String::new(),
        ),
        Action::AddSeed => model.open_prompt(PromptKind::Seed, "http://".into()),
        Action::SetRate => {
            let text = model
                .latest
                .global_rate
                .map_or("off".into(), |r| r.to_string());
            model.open_prompt(PromptKind::GlobalRate, text);
        }
        Action::RateUp => {
            let rate = model.latest.global_rate.map_or(1.0, |r| r.floor() + 1.0);
            return send(model, Command::SetGlobalRate(Some(rate)));
        }
        Action::RateDown => match model.latest.global_rate {
            Some(r) if r > 1.0 => {
                return send(
                    model,
                    Command::SetGlobalRate(Some((r.ceil() - 1.0).max(1.0))),
                )
            }
            Some(_) => model.set_status(
                Level::Info,
                "rate is at 1 page/s; :rate off removes the cap",
            ),
            None => model.set_status(Level::Info, "no rate cap yet; rate-up sets one"),
        },
        Action::RemoveRule => {
            if model.pane != Pane::Rules {
                model.set_status(Level::Info, "select a rule in the Rules pane first");
            } else if let Some(rule) = model.shown.rules.get(model.rule_selected) {
                let rule_id = rule.id;
                return send(model, Command::RemoveRule { rule_id });
            }
        }
        Action::AcceptAlert | Action::EditAlert | Action::DismissAlert => {
            return alert_action(model, action)
        }
        _ => return host_action(model, action),
    }
    Vec::new()
}

fn scroll(model: &mut Model, delta: isize) {
    if model.overlay == Overlay::Help {
        move_selection(&mut model.help_scroll, 200, delta);
    } else if model.detail.is_some() {
        move_selection(&mut model.detail_scroll, 200, delta);
    } else {
        match model.pane {
            Pane::Hosts => {
                let len = model.visible_hosts().len();
                move_selection(&mut model.host_selected, len, delta);
            }
            Pane::Alerts => {
                move_selection(&mut model.alert_selected, model.shown.alerts.len(), delta)
            }
            Pane::Rules => move_selection(&mut model.rule_selected, model.shown.rules.len(), delta),
            // The log scrolls back from its newest line.
            Pane::Log => move_selection(&mut model.log_scroll, model.log.len(), -delta),
            Pane::Queues => {}
        }
    }
}
#[cfg(test)]
#[path = "update_tests.rs"]
mod tests;
