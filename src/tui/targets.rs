//! Actions on the selected alert, rule or host.

use std::time::Duration;

use super::action::Action;
use super::effect::{send, Effect};
use super::model::{Model, Pane, PromptKind};
use crate::engine::control::{Command, PatternKind, Target};
use crate::engine::telemetry::{AlertStatus, HostView, Level};

/// Step of `+`/`-` on a host's delay.
const DELAY_STEP: Duration = Duration::from_millis(250);

/// Accepts, dismisses or edits the selected alert (from the alerts pane, while
/// it is still open or noted).
pub(super) fn alert_action(model: &mut Model, action: Action) -> Vec<Effect> {
    if model.pane != Pane::Alerts {
        model.set_status(Level::Info, "select an alert in the Alerts pane first");
        return Vec::new();
    }
    let Some(alert) = model.shown.alerts.get(model.alert_selected).cloned() else {
        model.set_status(Level::Info, "no alerts");
        return Vec::new();
    };
    if alert.status != AlertStatus::Open && alert.status != AlertStatus::Noted {
        model.set_status(
            Level::Info,
            format!("alert #{} is {} already", alert.id, alert.status.label()),
        );
        return Vec::new();
    }
    match action {
        Action::AcceptAlert => send(
            model,
            Command::AcceptAlert {
                alert_id: alert.id,
                rule: None,
            },
        ),
        Action::DismissAlert => send(model, Command::DismissAlert { alert_id: alert.id }),
        _ => {
            let rule = alert.suggested_rule;
            let kind = PromptKind::AcceptAlert {
                alert_id: alert.id,
                kind: rule.kind,
                host: rule.host,
            };
            model.open_prompt(kind, rule.pattern);
            Vec::new()
        }
    }
}

/// Removes the selected rule (from the rules pane only).
pub(super) fn remove_rule(model: &mut Model) -> Vec<Effect> {
    if model.pane != Pane::Rules {
        model.set_status(Level::Info, "select a rule in the Rules pane first");
    } else if let Some(rule) = model.shown.rules.get(model.rule_selected) {
        let rule_id = rule.id;
        return send(model, Command::RemoveRule { rule_id });
    }
    Vec::new()
}

/// Runs a host action on the selected host (the detail view's, or the hosts
/// pane's row): an engine command, or a prompt pre-filled with its setting.
pub(super) fn host_action(model: &mut Model, action: Action) -> Vec<Effect> {
    let Some(view) = model.selected_host().cloned() else {
        model.set_status(Level::Info, "no host selected");
        return Vec::new();
    };
    if let Some(cmd) = host_command(&view, action) {
        return send(model, cmd);
    }
    if let Some((kind, text)) = host_prompt(&view, action) {
        model.open_prompt(kind, text);
    }
    Vec::new()
}

/// The host's delay as it stands: the operator's override, else the engine's.
fn delay_of(view: &HostView) -> Duration {
    view.delay_override.unwrap_or(view.delay)
}

/// The host's concurrency as it stands, at least 1.
fn concurrency_of(view: &HostView) -> usize {
    view.concurrency_override
        .unwrap_or(view.max_in_flight as usize)
        .max(1)
}

/// The engine command a host action sends, if it sends one.
fn host_command(view: &HostView, action: Action) -> Option<Command> {
    let host = || view.host.clone();
    let delay = |delay| Command::SetHostDelay {
        host: host(),
        delay: Some(delay),
    };
    let concurrency = |max| Command::SetHostConcurrency {
        host: host(),
        max: Some(max),
    };
    Some(match action {
        Action::ToggleHostPause if view.paused => Command::Resume(Target::Host(host())),
        Action::ToggleHostPause => Command::Pause(Target::Host(host())),
        Action::DelayUp => delay(delay_of(view) + DELAY_STEP),
        Action::DelayDown => delay(delay_of(view).saturating_sub(DELAY_STEP)),
        Action::ConcurrencyUp => concurrency(concurrency_of(view) + 1),
        Action::ConcurrencyDown => concurrency(concurrency_of(view).saturating_sub(1).max(1)),
        Action::ResetBreaker => Command::ResetBreaker(host()),
        Action::OpenBreaker => Command::ForceOpenBreaker(host()),
        _ => return None,
    })
}

/// The prompt a host action opens, with its pre-filled text, if it opens one.
fn host_prompt(view: &HostView, action: Action) -> Option<(PromptKind, String)> {
    let host = view.host.clone();
    Some(match action {
        Action::RuleFromHost => {
            let pattern = format!("^https?://{}/", regex::escape(&host));
            let kind = PromptKind::Rule {
                kind: PatternKind::Regex,
                host: Some(host),
            };
            (kind, pattern)
        }
        Action::SetDelay => {
            let text = humantime::format_duration(delay_of(view)).to_string();
            (PromptKind::HostDelay(host), text)
        }
        Action::SetConcurrency => {
            let text = concurrency_of(view).to_string();
            (PromptKind::HostConcurrency(host), text)
        }
        _ => return None,
    })
}
