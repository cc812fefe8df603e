//! The live rule preview: while a rule is typed (`b`, `g`, `e` on an alert,
//! `:blacklist`, `:glob`, `:preview`), the engine is asked what it would match
//! once typing pauses; an invalid pattern shows its error in the same place.

use std::time::Duration;

use super::command::{self, CommandLine};
use super::effect::Effect;
use super::model::{Model, Prompt, PromptKind};
use crate::engine::control::{Command, CommandId, CommandResult, RuleSpec};

/// How long typing must pause before the engine is asked.
pub const PREVIEW_DEBOUNCE: Duration = Duration::from_millis(300);
/// Unanswered previews remembered (the engine answers each; this bounds a lost one).
const IN_FLIGHT_CAP: usize = 64;

/// After every update: a changed rule prompt starts a new wait, a closed one
/// clears the preview.
pub(super) fn watch(model: &mut Model) -> Option<Effect> {
    let watched = model
        .prompt
        .as_ref()
        .filter(|p| {
            matches!(
                p.kind,
                PromptKind::Rule { .. } | PromptKind::AcceptAlert { .. } | PromptKind::Command
            )
        })
        .map(|p| (p.kind.clone(), p.input.value().to_string()));
    let preview = &mut model.rule_preview;
    if watched == preview.watched {
        return None;
    }
    preview.watched = watched;
    preview.generation += 1;
    preview.asked = None;
    match preview.watched {
        Some(_) => Some(Effect::PreviewAfter {
            generation: preview.generation,
            delay: PREVIEW_DEBOUNCE,
        }),
        None => {
            preview.shown = None;
            None
        }
    }
}

/// Typing paused: checks the rule and asks the engine about it, unless the
/// text changed since.
pub(super) fn due(model: &mut Model, generation: u64) -> Vec<Effect> {
    if generation != model.rule_preview.generation {
        return Vec::new();
    }
    if let Some(why) = model.engine.refusal() {
        model.rule_preview.shown = Some(Err(why));
        return Vec::new();
    }
    match model.prompt.as_ref().and_then(rule_of) {
        None => {
            model.rule_preview.shown = None;
            Vec::new()
        }
        Some(Err(why)) => {
            model.rule_preview.shown = Some(Err(why));
            Vec::new()
        }
        Some(Ok(spec)) => vec![Effect::SendPreview { generation, spec }],
    }
}

/// A preview command left under `id`.
pub(super) fn sent(model: &mut Model, generation: u64, id: CommandId) {
    let preview = &mut model.rule_preview;
    if preview.in_flight.len() >= IN_FLIGHT_CAP {
        preview.in_flight.clear();
    }
    preview.in_flight.insert(id);
    if generation == preview.generation {
        preview.asked = Some(id);
    }
}

/// Takes a preview's answer (shown if it is for the current text); `false`
/// if `result` answers another command.
pub(super) fn answered(model: &mut Model, result: &CommandResult) -> bool {
    let preview = &mut model.rule_preview;
    if !preview.in_flight.remove(&result.id) {
        return false;
    }
    if preview.asked == Some(result.id) {
        let lines = |s: &String| s.lines().map(str::to_string).collect();
        preview.shown = Some(result.outcome.as_ref().map(lines).map_err(Clone::clone));
    }
    true
}

/// The rule a prompt's text describes, if it describes one (checked as the
/// engine will), or why it is not a valid one.
fn rule_of(prompt: &Prompt) -> Option<Result<RuleSpec, String>> {
    let text = prompt.input.value();
    match &prompt.kind {
        PromptKind::Rule { kind, host } | PromptKind::AcceptAlert { kind, host, .. } => {
            let empty = text.trim().is_empty();
            (!empty).then(|| command::checked_rule(*kind, text.to_string(), host.clone()))
        }
        PromptKind::Command => {
            let mut words = text.split_whitespace();
            let names_a_rule =
                matches!(words.next(), Some("blacklist" | "bl" | "glob" | "preview"));
            if !names_a_rule || words.next().is_none() {
                return None;
            }
            match command::parse(text) {
                Ok(CommandLine::Engine(Command::AddRule(spec) | Command::Preview(spec))) => {
                    Some(Ok(spec))
                }
                Ok(_) => None,
                Err(why) => Some(Err(why)),
            }
        }
        _ => None,
    }
}
