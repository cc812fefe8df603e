//! Actions on the selected alert, rule or host.

use std::time::Duration;

use super::action::Action;
use super::effect::{send, Effect};
use super::model::{Model, Pane, PromptKind};
use crate::engine::control::{Command, PatternKind, Target};
use crate::engine::telemetry::{AlertStatus, Level};

/// Step of `+`/`-` on a host's delay.
pub const DELAY_STEP: Duration = Duration::from_millis(250);

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

pub(super) fn host_action(model: &mut Model, action: Action) -> Vec<Effect> {
    let Some(view) = model.selected_host().cloned() else {
        model.set_status(Level::Info, "no host selected");
        return Vec::new();
    };
    let host = view.host.clone();
    let delay = view.delay_override.unwrap_or(view.delay);
    let concurrency = view
        .concurrency_override
        .unwrap_or(view.max_in_flight as usize)
        .max(1);
    match action {
        Action::ToggleHostPause => {
            let target = Target::Host(host);
            send(
                model,
                if view.paused {
                    Command::Resume(target)
                } else {
                    Command::Pause(target)
                },
            )
        }
        Action::RuleFromHost => {
            let pattern = format!("^https?://{}/", regex::escape(&host));
            let kind = PromptKind::Rule {
                kind: PatternKind::Regex,
                host: Some(host),
            };
            model.open_prompt(kind, pattern);
            Vec::new()
        }
        Action::DelayUp => send(
            model,
            Command::SetHostDelay {
                host,
                delay: Some(delay + DELAY_STEP),
            },
        ),
        Action::DelayDown => send(
            model,
            Command::SetHostDelay {
                host,
                delay: Some(delay.saturating_sub(DELAY_STEP)),
            },
        ),
        Action::SetDelay => {
            let text = humantime::format_duration(delay).to_string();
            model.open_prompt(PromptKind::HostDelay(host), text);
            Vec::new()
        }
        Action::ConcurrencyUp => send(
            model,
            Command::SetHostConcurrency {
                host,
                max: Some(concurrency + 1),
            },
        ),
        Action::ConcurrencyDown => send(
            model,
            Command::SetHostConcurrency {
                host,
                max: Some(concurrency.saturating_sub(1).max(1)),
            },
        ),
        Action::SetConcurrency => {
            model.open_prompt(PromptKind::HostConcurrency(host), concurrency.to_string());
            Vec::new()
        }
        Action::ResetBreaker => send(model, Command::ResetBreaker(host)),
        Action::OpenBreaker => send(model, Command::ForceOpenBreaker(host)),
        _ => Vec::new(),
    }
}
