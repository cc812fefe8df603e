//! Commands from the cluster TUI, onto the crawl's command stream: each is
//! published for every worker, or for the workers it concerns (an alert's
//! decision to one live worker with the alert, which shares it with the
//! rest; a rule is removed by its pattern, as its number differs between
//! workers), and the workers' answers come back as one answer ("… (applied
//! by w1, w2)").

use std::time::{Duration, Instant};

use super::commands::{self, Answer};
use super::ctl::{live_workers, ANSWER_WAIT};
use super::merge::Merger;
use crate::engine::control::{Command, RuleSpec};

const POLL: Duration = Duration::from_millis(50);

/// Where a command goes.
#[derive(Debug, Clone, PartialEq)]
pub enum Route {
    /// To every worker.
    All(Command),
    /// To these workers, each its own form of the command.
    To(Vec<(String, Command)>),
    /// The rule with this pattern and scope, removed from every worker.
    RemoveRule(RuleSpec),
}

/// The route of `command` from the TUI, with the merged view's numbers
/// turned back into each worker's own; `Err` when the number is unknown.
pub fn route(command: &Command, merger: &Merger) -> Result<Route, String> {
    let one = |worker: &str, command: Command| Route::To(vec![(worker.to_string(), command)]);
    match command {
        Command::AcceptAlert { alert_id, .. } | Command::DismissAlert { alert_id } => {
            let worker = merger
                .alert_decider(*alert_id)
                .ok_or_else(|| format!("no alert #{alert_id} in the cluster"))?;
            Ok(one(worker, command.clone()))
        }
        Command::RemoveRule { rule_id } => merger
            .rule_spec(*rule_id)
            .map(|spec| Route::RemoveRule(spec.clone()))
            .ok_or_else(|| format!("no rule #{rule_id} in the cluster")),
        other => Ok(Route::All(other.clone())),
    }
}

/// Publishes `route`'s commands as `from`, waits (at most [`ANSWER_WAIT`])
/// for the workers' answers and words them as one.
pub fn send(
    con: &mut redis::Connection,
    crawl: &str,
    label: &str,
    route: Route,
    from: &str,
) -> Answer {
    let fail = |e: &dyn std::fmt::Display| format!("{label} not sent: {e}");
    let sent: Vec<(String, Vec<String>)> = match route {
        Route::All(command) => {
            let live = live_workers(con, crawl).map_err(|e| fail(&e))?;
            let entry =
                commands::publish(con, crawl, &command, from, None).map_err(|e| fail(&e))?;
            vec![(entry, live)]
        }
        Route::RemoveRule(spec) => {
            let live = live_workers(con, crawl).map_err(|e| fail(&e))?;
            let entry =
                commands::publish_remove_rule(con, crawl, &spec, from).map_err(|e| fail(&e))?;
            vec![(entry, live)]
        }
        Route::To(each) => {
            let mut sent = Vec::new();
            for (worker, command) in each {
                let entry = commands::publish(con, crawl, &command, from, Some(&worker))
                    .map_err(|e| fail(&e))?;
                sent.push((entry, vec![worker]));
            }
            sent
        }
    };
    let deadline = Instant::now() + ANSWER_WAIT;
    let mut answers = Vec::new();
    for (entry, expected) in &sent {
        answers.extend(wait_for(con, crawl, entry, expected, deadline).map_err(|e| fail(&e))?);
    }
    let expected: Vec<&String> = sent.iter().flat_map(|(_, e)| e).collect();
    let silent: Vec<&str> = expected
        .iter()
        .filter(|w| !answers.iter().any(|(who, _)| who == **w))
        .map(|w| w.as_str())
        .collect();
    word(label, &answers, &silent)
}

/// The answers to `entry`, once every expected worker gave one or the deadline passed.
fn wait_for(
    con: &mut redis::Connection,
    crawl: &str,
    entry: &str,
    expected: &[String],
    deadline: Instant,
) -> Result<Vec<(String, Answer)>, commands::StreamError> {
    loop {
        let answers = commands::answers(con, crawl, entry)?;
        let all_in = expected.iter().all(|w| answers.iter().any(|(a, _)| a == w));
        if (all_in && !expected.is_empty()) || Instant::now() >= deadline {
            return Ok(answers);
        }
        std::thread::sleep(POLL);
    }
}

/// One answer from the workers': the summary and who applied it, or who refused and why.
pub fn word(label: &str, answers: &[(String, Answer)], silent: &[&str]) -> Answer {
    let applied: Vec<&str> = answers
        .iter()
        .filter(|(_, a)| a.is_ok())
        .map(|(w, _)| w.as_str())
        .collect();
    let refused: Vec<String> = answers
        .iter()
        .filter_map(|(w, a)| a.as_ref().err().map(|why| format!("{w} refused: {why}")))
        .collect();
    let mut notes = Vec::new();
    if !silent.is_empty() {
        notes.push(format!(
            "no answer within {}s from {}",
            ANSWER_WAIT.as_secs(),
            silent.join(", ")
        ));
    }
    if answers.is_empty() {
        let why = notes
            .pop()
            .unwrap_or_else(|| "no live worker to send it to".into());
        return Err(format!(
            "{label}: {why}; workers that start later apply what sets the crawl's state (rules, overrides, pauses)"
        ));
    }
    if !refused.is_empty() {
        if !applied.is_empty() {
            notes.push(format!("applied by {}", applied.join(", ")));
        }
        return Err(std::iter::once(refused.join("; "))
            .chain(notes)
            .collect::<Vec<_>>()
            .join("; "));
    }
    let summaries: Vec<&String> = answers
        .iter()
        .filter_map(|(_, a)| a.as_ref().ok())
        .collect();
    let mut text = if summaries.iter().all(|s| *s == summaries[0]) {
        summaries[0].clone()
    } else {
        answers
            .iter()
            .filter_map(|(w, a)| Some(format!("{w}: {}", a.as_ref().ok()?)))
            .collect::<Vec<_>>()
            .join("\n")
    };
    notes.insert(0, format!("applied by {}", applied.join(", ")));
    let notes = notes.join("; ");
    if text.contains('\n') {
        text.push_str(&format!("\n({notes})"));
    } else {
        text.push_str(&format!(" ({notes})"));
    }
    Ok(text)
}

#[cfg(test)]
#[path = "steer_tests.rs"]
mod tests;
