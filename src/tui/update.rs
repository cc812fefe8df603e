//! `update(&mut Model, Msg) -> Vec<Effect>`: every key and engine message
//! turned into state changes and commands. Pure: no I/O, no clock.

use std::time::Duration;

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use tui_input::{Input, InputRequest};

use super::action::Action;
use super::command;
use super::model::{Effect, FetchLine, Model, Msg, Overlay, Pane, Prompt, PromptKind, SortColumn};
use crate::engine::control::{Command, PatternKind, RuleSpec, Target};
use crate::engine::telemetry::{AlertStatus, CrawlState, EngineEvent, Level};

/// Steps of `+`/`-` on a host's delay.
const DELAY_STEPS_MS: &[u64] = &[0, 100, 250, 500, 1000, 2000, 5000, 10_000, 30_000, 60_000];

pub fn update(model: &mut Model, msg: Msg) -> Vec<Effect> {
    match msg {
        Msg::Snapshot(snapshot) => {
            model.snapshot = snapshot;
            clamp_selection(model);
            Vec::new()
        }
        Msg::Second => {
            if model.history.len() == super::model::HISTORY_SECS {
                model.history.pop_front();
            }
            model
                .history
                .push_back(model.snapshot.pages_per_sec.round() as u64);
            Vec::new()
        }
        Msg::Event(event) => engine_event(model, event),
        Msg::EngineClosed => {
            model.engine_closed = true;
            if model.quitting {
                vec![Effect::Quit]
            } else {
                model.push_log(Level::Info, "the engine stopped; press q to leave".into());
                Vec::new()
            }
        }
        Msg::Terminate => begin_quit(model),
        Msg::Key(key) => key_event(model, key),
    }
}

fn engine_event(model: &mut Model, event: EngineEvent) -> Vec<Effect> {
    match event {
        EngineEvent::CommandDone(result) => {
            let (level, text) = match result.outcome {
                Ok(m) => (Level::Info, m),
                Err(m) => (Level::Error, format!("refused: {m}")),
            };
            model.push_log(level, text.clone());
            model.status = Some((level, text));
        }
        EngineEvent::Fetched {
            host,
            url,
            status,
            latency,
            bytes,
            error,
        } => model.record_fetch(
            host,
            FetchLine {
                url,
                status,
                latency,
                bytes,
                error,
            },
        ),
        EngineEvent::BreakerChanged {
            host,
            from,
            to,
            reason,
        } => {
            let level = if to == crate::engine::telemetry::BreakerPhase::Open {
                Level::Warn
            } else {
                Level::Info
            };
            model.push_log(
                level,
                format!(
                    "breaker {host}: {} -> {} ({reason})",
                    from.label(),
                    to.label()
                ),
            );
        }
        EngineEvent::Alert(alert) => {
            let text = format!(
                "trap alert #{} on {}: {} — a accept, e edit, d dismiss",
                alert.id,
                alert.host,
                alert.kind.label()
            );
            // The engine logs the alert itself; here it only takes the status line.
            model.status = Some((Level::Warn, text));
        }
        EngineEvent::AlertChanged { alert_id, status } => {
            model.push_log(Level::Info, format!("alert #{alert_id} {}", status.label()));
        }
        EngineEvent::Log { level, message } => model.push_log(level, message),
        EngineEvent::StateChanged(state) => {
            model.push_log(Level::Info, format!("crawl {}", state.label()));
            if state == CrawlState::Done && model.quitting {
                return vec![Effect::Quit];
            }
        }
    }
    Vec::new()
}

fn key_event(model: &mut Model, key: KeyEvent) -> Vec<Effect> {
    if let Overlay::ConfirmQuit = model.overlay {
        model.overlay = Overlay::None;
        return match key.code {
            KeyCode::Char('y') | KeyCode::Char('Y') | KeyCode::Enter => begin_quit(model),
            _ => {
                model.status = Some((Level::Info, "quit cancelled".into()));
                Vec::new()
            }
        };
    }
    let mode = model.mode();
    let action = model.keymap.action(mode, key);
    if let Overlay::Prompt(prompt) = &mut model.overlay {
        return match action {
            Some(Action::Submit) => submit_prompt(model),
            Some(Action::Cancel) => {
                model.overlay = Overlay::None;
                Vec::new()
            }
            Some(Action::Complete) => {
                complete(model);
                Vec::new()
            }
            _ => {
                if let Some(request) = input_request(key) {
                    prompt.input.handle(request);
                    prompt.error = None;
                    if prompt.kind == PromptKind::Filter {
                        model.filter = prompt.input.value().to_string();
                    }
                }
                Vec::new()
            }
        };
    }
    match action {
        Some(action) => perform(model, action),
        None => Vec::new(),
    }
}

fn input_request(key: KeyEvent) -> Option<InputRequest> {
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    Some(match key.code {
        KeyCode::Char('u') if ctrl => InputRequest::DeleteLine,
        KeyCode::Char('w') if ctrl => InputRequest::DeletePrevWord,
        KeyCode::Char('a') if ctrl => InputRequest::GoToStart,
        KeyCode::Char('e') if ctrl => InputRequest::GoToEnd,
        KeyCode::Char(c) if !ctrl => InputRequest::InsertChar(c),
        KeyCode::Backspace => InputRequest::DeletePrevChar,
        KeyCode::Delete => InputRequest::DeleteNextChar,
        KeyCode::Left => InputRequest::GoToPrevChar,
        KeyCode::Right => InputRequest::GoToNextChar,
        KeyCode::Home => InputRequest::GoToStart,
        KeyCode::End => InputRequest::GoToEnd,
        _ => return None,
    })
}

fn open_prompt(model: &mut Model, kind: PromptKind, value: &str) {
    model.overlay = Overlay::Prompt(Prompt {
        kind,
        input: Input::new(value.to_string()),
        error: None,
    });
}

fn refuse_readonly(model: &mut Model) -> bool {
    if model.options.readonly {
        model.status = Some((
            Level::Warn,
            "read-only session (--readonly): commands that change the crawl are off".into(),
        ));
    }
    model.options.readonly
}

fn send(model: &mut Model, command: Command) -> Vec<Effect> {
    if command.is_mutating() && refuse_readonly(model) {
        return Vec::new();
    }
    vec![Effect::Send(command)]
}

fn begin_quit(model: &mut Model) -> Vec<Effect> {
    model.quitting = true;
    model.status = Some((Level::Info, "checkpointing and stopping…".into()));
    if model.engine_closed || model.snapshot.state == CrawlState::Done {
        return vec![Effect::Quit];
    }
    vec![
        Effect::Send(Command::Checkpoint),
        Effect::Send(Command::Shutdown),
    ]
}

fn selected_alert(model: &Model) -> Option<(u64, AlertStatus, RuleSpec)> {
    let alerts = &model.shown().alerts;
    alerts
        .get(model.selected[Pane::Alerts.index()])
        .map(|a| (a.id, a.status, a.suggested_rule.clone()))
}

/// The host the operator means: the detail view's, else the table selection.
fn target_host(model: &Model) -> Option<String> {
    match &model.overlay {
        Overlay::Detail(host) => Some(host.clone()),
        _ => model.selected_host(),
    }
}

fn perform(model: &mut Model, action: Action) -> Vec<Effect> {
    let pane = model.pane;
    let rows = model.rows_in(pane);
    let sel = &mut model.selected[pane.index()];
    match action {
        Action::Quit => {
            if model.engine_closed || model.snapshot.state == CrawlState::Done {
                return begin_quit(model);
            }
            model.overlay = Overlay::ConfirmQuit;
        }
        Action::ForceQuit => return begin_quit(model),
        Action::Help => model.overlay = Overlay::Help { scroll: 0 },
        Action::Close => model.overlay = Overlay::None,
        Action::Filter => {
            let current = model.filter.clone();
            open_prompt(model, PromptKind::Filter, &current);
        }
        Action::CommandLine => open_prompt(model, PromptKind::Command, ""),
        Action::NextPane => model.pane = Pane::ALL[(pane.index() + 1) % Pane::ALL.len()],
        Action::PrevPane => {
            model.pane = Pane::ALL[(pane.index() + Pane::ALL.len() - 1) % Pane::ALL.len()]
        }
        Action::PaneHosts => model.pane = Pane::Hosts,
        Action::PaneAlerts => model.pane = Pane::Alerts,
        Action::PaneRules => model.pane = Pane::Rules,
        Action::PaneLog => model.pane = Pane::Log,
        Action::Down => {
            if let Overlay::Help { scroll } = &mut model.overlay {
                *scroll = scroll.saturating_add(1);
            } else {
                *sel = (*sel + 1).min(rows.saturating_sub(1));
            }
        }
        Action::Up => {
            if let Overlay::Help { scroll } = &mut model.overlay {
                *scroll = scroll.saturating_sub(1);
            } else {
                *sel = sel.saturating_sub(1);
            }
        }
        Action::Top => *sel = 0,
        Action::Bottom => *sel = rows.saturating_sub(1),
        Action::PageDown => *sel = (*sel + 10).min(rows.saturating_sub(1)),
        Action::PageUp => *sel = sel.saturating_sub(10),
        Action::Open => {
            if let Some(host) = model.selected_host().filter(|_| pane == Pane::Hosts) {
                model.overlay = Overlay::Detail(host);
            }
        }
        Action::SortNext => {
            let i = SortColumn::ALL
                .iter()
                .position(|c| *c == model.sort)
                .unwrap_or(0);
            model.sort = SortColumn::ALL[(i + 1) % SortColumn::ALL.len()];
            model.status = Some((Level::Info, format!("sorted by {}", model.sort.title())));
        }
        Action::SortReverse => model.sort_desc = !model.sort_desc,
        Action::Freeze => {
            model.frozen = match model.frozen.take() {
                Some(_) => None,
                None => Some(model.snapshot.clone()),
            };
        }
        Action::PauseCrawl => {
            let command = if model.snapshot.state == CrawlState::Paused {
                Command::Resume(Target::Global)
            } else {
                Command::Pause(Target::Global)
            };
            return send(model, command);
        }
        Action::PauseHost => {
            let Some(host) = target_host(model) else {
                return Vec::new();
            };
            let paused = model
                .snapshot
                .hosts
                .iter()
                .any(|h| h.host == host && h.paused);
            let command = if paused {
                Command::Resume(Target::Host(host))
            } else {
                Command::Pause(Target::Host(host))
            };
            return send(model, command);
        }
        Action::Blacklist | Action::BlacklistHost => {
            if refuse_readonly(model) {
                return Vec::new();
            }
            let host = (action == Action::BlacklistHost)
                .then(|| target_host(model))
                .flatten();
            let prefill = host
                .as_ref()
                .map(|h| format!("^https?://{}/", regex::escape(h)))
                .unwrap_or_default();
            model.overlay = Overlay::None;
            open_prompt(model, PromptKind::Blacklist { host }, &prefill);
        }
        Action::RemoveRule => {
            let rule = model.shown().rules.get(model.selected[Pane::Rules.index()]);
            if let Some(rule_id) = rule.filter(|_| pane == Pane::Rules).map(|r| r.id) {
                return send(model, Command::RemoveRule { rule_id });
            }
            model.status = Some((
                Level::Info,
                "select a rule in the rules pane (3) first".into(),
            ));
        }
        Action::Slower | Action::Faster => {
            let Some(host) = target_host(model) else {
                return Vec::new();
            };
            let current = model
                .snapshot
                .hosts
                .iter()
                .find(|h| h.host == host)
                .map(|h| h.delay)
                .unwrap_or_default();
            let delay = step_delay(current, action == Action::Slower);
            return send(
                model,
                Command::SetHostDelay {
                    host,
                    delay: Some(delay),
                },
            );
        }
        Action::SetDelay | Action::SetConcurrency => {
            if refuse_readonly(model) {
                return Vec::new();
            }
            if let Some(host) = target_host(model) {
                let kind = if action == Action::SetDelay {
                    PromptKind::Delay(host)
                } else {
                    PromptKind::Concurrency(host)
                };
                open_prompt(model, kind, "");
            }
        }
        Action::SetRate => {
            if !refuse_readonly(model) {
                open_prompt(model, PromptKind::Rate, "");
            }
        }
        Action::AddSeed => {
            if !refuse_readonly(model) {
                open_prompt(model, PromptKind::Seed, "https://");
            }
        }
        Action::ResetBreaker => {
            if let Some(host) = target_host(model) {
                return send(model, Command::ResetBreaker(host));
            }
        }
        Action::AcceptAlert | Action::DismissAlert | Action::EditAlert => {
            let Some((alert_id, status, rule)) =
                selected_alert(model).filter(|_| pane == Pane::Alerts)
            else {
                model.status = Some((
                    Level::Info,
                    "select an alert in the alerts pane (2) first".into(),
                ));
                return Vec::new();
            };
            if status != AlertStatus::Open && status != AlertStatus::Noted {
                model.status = Some((
                    Level::Info,
                    format!("alert #{alert_id} is already {}", status.label()),
                ));
                return Vec::new();
            }
            return match action {
                Action::AcceptAlert => send(
                    model,
                    Command::AcceptAlert {
                        alert_id,
                        rule: None,
                    },
                ),
                Action::DismissAlert => send(model, Command::DismissAlert { alert_id }),
                _ => {
                    if refuse_readonly(model) {
                        return Vec::new();
                    }
                    let text = rule_text(&rule);
                    open_prompt(
                        model,
                        PromptKind::EditAlert {
                            alert_id,
                            host: rule.host,
                        },
                        &text,
                    );
                    Vec::new()
                }
            };
        }
        Action::Submit | Action::Cancel | Action::Complete => {}
    }
    Vec::new()
}

fn rule_text(rule: &RuleSpec) -> String {
    match rule.kind {
        PatternKind::Regex => rule.pattern.clone(),
        PatternKind::Glob => format!("glob:{}", rule.pattern),
    }
}

/// `glob:PATTERN` or a regex, checked with the engine's own compiler.
pub fn parse_rule(text: &str, host: Option<String>) -> Result<RuleSpec, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("type a pattern (a regex, or glob:PATTERN)".into());
    }
    let spec = match text.strip_prefix("glob:") {
        Some(glob) => RuleSpec {
            kind: PatternKind::Glob,
            pattern: glob.trim().to_string(),
            host,
        },
        None => RuleSpec {
            kind: PatternKind::Regex,
            pattern: text.to_string(),
            host,
        },
    };
    crate::engine::rules::RuleSet::compile(&spec).map(|_| spec)
}

fn step_delay(current: Duration, slower: bool) -> Duration {
    let ms = current.as_millis() as u64;
    let next = if slower {
        DELAY_STEPS_MS
            .iter()
            .copied()
            .find(|s| *s > ms)
            .unwrap_or(ms)
    } else {
        DELAY_STEPS_MS
            .iter()
            .rev()
            .copied()
            .find(|s| *s < ms)
            .unwrap_or(0)
    };
    Duration::from_millis(next)
}

fn submit_prompt(model: &mut Model) -> Vec<Effect> {
    let Overlay::Prompt(prompt) = &model.overlay else {
        return Vec::new();
    };
    let text = prompt.input.value().trim().to_string();
    let result: Result<Option<Command>, String> = match &prompt.kind {
        PromptKind::Filter => {
            model.filter = text;
            Ok(None)
        }
        PromptKind::Command => command::parse(&text, model).map(Some),
        PromptKind::Blacklist { host } => {
            parse_rule(&text, host.clone()).map(|r| Some(Command::AddRule(r)))
        }
        PromptKind::EditAlert { alert_id, host } => parse_rule(&text, host.clone()).map(|r| {
            Some(Command::AcceptAlert {
                alert_id: *alert_id,
                rule: Some(r),
            })
        }),
        PromptKind::Delay(host) => command::parse_delay(&text).map(|delay| {
            Some(Command::SetHostDelay {
                host: host.clone(),
                delay,
            })
        }),
        PromptKind::Concurrency(host) => command::parse_count(&text).map(|max| {
            Some(Command::SetHostConcurrency {
                host: host.clone(),
                max,
            })
        }),
        PromptKind::Rate => command::parse_rate(&text).map(|r| Some(Command::SetGlobalRate(r))),
        PromptKind::Seed => Ok(Some(Command::AddSeed(text))),
    };
    match result {
        Ok(command) => {
            model.overlay = Overlay::None;
            match command {
                Some(Command::Shutdown) => begin_quit(model),
                Some(command) => send(model, command),
                None => Vec::new(),
            }
        }
        Err(error) => {
            if let Overlay::Prompt(prompt) = &mut model.overlay {
                prompt.error = Some(error);
            }
            Vec::new()
        }
    }
}

fn complete(model: &mut Model) {
    let hosts: Vec<String> = model
        .snapshot
        .hosts
        .iter()
        .map(|h| h.host.clone())
        .collect();
    if let Overlay::Prompt(prompt) = &mut model.overlay {
        if prompt.kind == PromptKind::Command {
            if let Some(line) = command::complete(prompt.input.value(), &hosts) {
                prompt.input = Input::new(line);
            }
        }
    }
}

fn clamp_selection(model: &mut Model) {
    for pane in Pane::ALL {
        let rows = model.rows_in(pane);
        let sel = &mut model.selected[pane.index()];
        *sel = (*sel).min(rows.saturating_sub(1));
    }
}
