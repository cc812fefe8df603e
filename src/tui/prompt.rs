//! One-line prompts: editing keys, Tab completion, and what Enter does with the text.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use tui_input::{Input, InputRequest};

use super::action::Action;
use super::command::{self, CommandLine};
use super::model::{Model, Prompt, PromptKind};
use super::update::{on_action, send, Effect};
use crate::engine::control::{Command, RuleSpec};

fn input_request(key: &KeyEvent) -> Option<InputRequest> {
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    let alt = key.modifiers.contains(KeyModifiers::ALT);
    Some(match key.code {
        KeyCode::Char('a') if ctrl => InputRequest::GoToStart,
        KeyCode::Char('e') if ctrl => InputRequest::GoToEnd,
        KeyCode::Char('w') if ctrl => InputRequest::DeletePrevWord,
        KeyCode::Char('u') if ctrl => InputRequest::DeleteFromStart,
        KeyCode::Char('k') if ctrl => InputRequest::DeleteTillEnd,
        KeyCode::Char('b') if alt => InputRequest::GoToPrevWord,
        KeyCode::Char('f') if alt => InputRequest::GoToNextWord,
        KeyCode::Char(c) if !ctrl && !alt => InputRequest::InsertChar(c),
        KeyCode::Backspace if ctrl || alt => InputRequest::DeletePrevWord,
        KeyCode::Backspace => InputRequest::DeletePrevChar,
        KeyCode::Delete => InputRequest::DeleteNextChar,
        KeyCode::Left if ctrl => InputRequest::GoToPrevWord,
        KeyCode::Right if ctrl => InputRequest::GoToNextWord,
        KeyCode::Left => InputRequest::GoToPrevChar,
        KeyCode::Right => InputRequest::GoToNextChar,
        KeyCode::Home => InputRequest::GoToStart,
        KeyCode::End => InputRequest::GoToEnd,
        _ => return None,
    })
}

pub(super) fn edit_prompt(model: &mut Model, key: &KeyEvent) {
    let Some(req) = input_request(key) else {
        return;
    };
    let Some(prompt) = model.prompt.as_mut() else {
        return;
    };
    if let Some(changed) = prompt.input.handle(req) {
        if changed.value {
            prompt.error = None;
            prompt.hint = None;
            if prompt.kind == PromptKind::Filter {
                model.filter = prompt.input.value().to_string();
                model.host_selected = 0;
            }
        }
    }
}

pub(super) fn complete(model: &mut Model) {
    let Some(prompt) = model.prompt.as_mut() else {
        return;
    };
    let hosts: Vec<&str> = model.latest.hosts.iter().map(|h| h.host.as_str()).collect();
    let (line, candidates) = command::complete(prompt.input.value(), &hosts);
    prompt.input = Input::new(line);
    prompt.hint = (candidates.len() > 1).then(|| candidates.join("  "));
}

pub(super) fn open_prompt(model: &mut Model, kind: PromptKind, text: String) {
    model.prompt = Some(Prompt {
        kind,
        input: Input::new(text),
        error: None,
        hint: None,
    });
}

pub(super) fn submit(model: &mut Model) -> Vec<Effect> {
    let Some(prompt) = model.prompt.as_ref() else {
        return Vec::new();
    };
    let text = prompt.input.value().trim().to_string();
    let kind = prompt.kind.clone();
    let is_command = kind == PromptKind::Command;
    let parsed: Result<Vec<Effect>, String> = match kind {
        PromptKind::Filter => {
            model.filter = text;
            Ok(Vec::new())
        }
        PromptKind::Rule { kind, host } => {
            let spec = RuleSpec {
                kind,
                pattern: text,
                host,
            };
            command::validate_rule(&spec).map(|()| send(model, Command::AddRule(spec)))
        }
        PromptKind::AcceptAlert {
            alert_id,
            kind,
            host,
        } => {
            let spec = RuleSpec {
                kind,
                pattern: text,
                host,
            };
            command::validate_rule(&spec).map(|()| {
                send(
                    model,
                    Command::AcceptAlert {
                        alert_id,
                        rule: Some(spec),
                    },
                )
            })
        }
        PromptKind::HostDelay(host) => {
            let delay = if text == "off" {
                Ok(None)
            } else {
                command::parse_delay(&text).map(Some)
            };
            delay.map(|delay| send(model, Command::SetHostDelay { host, delay }))
        }
        PromptKind::HostConcurrency(host) => command::parse_concurrency(&text)
            .map(|max| send(model, Command::SetHostConcurrency { host, max })),
        PromptKind::GlobalRate => {
            command::parse_rate(&text).map(|r| send(model, Command::SetGlobalRate(r)))
        }
        PromptKind::Seed => command::parse(&format!("seed {text}")).map(|line| match line {
            CommandLine::Engine(cmd) => send(model, cmd),
            _ => Vec::new(),
        }),
        PromptKind::Command => command::parse(&text).map(|line| {
            model.prompt = None;
            match line {
                CommandLine::Engine(cmd) => send(model, cmd),
                CommandLine::Quit => on_action(model, Action::Quit),
                CommandLine::Help => on_action(model, Action::Help),
                CommandLine::Freeze => on_action(model, Action::Freeze),
            }
        }),
    };
    match parsed {
        Ok(effects) => {
            // A command line may have opened something else (help); other prompts close.
            if !is_command {
                model.prompt = None;
            }
            effects
        }
        Err(e) => {
            if let Some(p) = model.prompt.as_mut() {
                p.error = Some(e);
            }
            Vec::new()
        }
    }
}
