//! `crawldeck ctl --redis URL --crawl NAME COMMAND…`: one command to every
//! worker of a shared crawl (or, with `--worker`, to one), through the
//! command stream; the answers of the live workers are printed one line per
//! worker. An alert is the crawl's: its decision goes to one live worker
//! (the one that raised it, while it lives), which shares it with the rest.

use std::io::Write;
use std::time::{Duration, Instant};

use crate::cluster::commands::{self, Answer};
use crate::engine::control::Command;
use crate::engine::{alert_raisers_key, key_prefix, ClusterTarget};
use crate::text::strip_control;

/// How long `ctl` waits for the live workers' answers.
pub const ANSWER_WAIT: Duration = Duration::from_secs(5);
const POLL: Duration = Duration::from_millis(50);

/// Why the command did not reach every worker it was for.
#[derive(Debug, thiserror::Error)]
pub enum ClusterCtlError {
    /// The arguments do not make a command for the cluster (exit 2).
    #[error("{0}")]
    Usage(String),
    /// Redis could not be reached, or no worker answered, or one refused (exit 1).
    #[error("{0}")]
    Failed(String),
}

/// Publishes `command` and prints the answers of the live workers it is for.
pub fn run(
    target: &ClusterTarget,
    command: &Command,
    worker: Option<&str>,
    out: &mut dyn Write,
) -> Result<(), ClusterCtlError> {
    let fail = |e: &dyn std::fmt::Display| {
        ClusterCtlError::Failed(format!(
            "cannot reach crawl {} on {}: {e}; check that the Redis server is running",
            target.crawl, target.url
        ))
    };
    let explained = |e: redis::RedisError| fail(&target.url.explain(&e));
    let mut con = target
        .url
        .connect(Duration::from_secs(5))
        .map_err(explained)?;
    let mut expected = live_workers(&mut con, &target.crawl).map_err(explained)?;
    // One worker decides an alert for the crawl.
    let to = match (command, worker) {
        (Command::AcceptAlert { alert_id, .. } | Command::DismissAlert { alert_id }, None) => {
            Some(deciding_worker(&mut con, target, *alert_id, &expected)?)
        }
        _ => worker.map(str::to_string),
    };
    if let Some(only) = to.as_deref() {
        if !expected.iter().any(|w| w == only) {
            return Err(ClusterCtlError::Usage(format!(
                "no live worker named {only:?} in crawl {}; live workers: {}",
                target.crawl,
                list_or_none(&expected)
            )));
        }
        expected = vec![only.to_string()];
    }
    let from = commands::sender("ctl");
    let entry = match command {
        Command::RemoveRule { rule_id } => {
            let rules = commands::shared_rules(&mut con, &target.crawl).map_err(|e| fail(&e))?;
            let Some(rule) = rules.get((*rule_id as usize).wrapping_sub(1)) else {
                return Err(ClusterCtlError::Usage(format!(
                    "crawl {} has no shared rule #{rule_id} ({} rules); `crawldeck status --redis {} --crawl {}` lists them",
                    target.crawl,
                    rules.len(),
                    target.url,
                    target.crawl
                )));
            };
            commands::publish_remove_rule(&mut con, &target.crawl, rule, &from)
        }
        _ => commands::publish(&mut con, &target.crawl, command, &from, to.as_deref()),
    }
    .map_err(|e| fail(&e))?;
    let answers =
        wait_for_answers(&mut con, &target.crawl, &entry, &expected).map_err(|e| fail(&e))?;
    report(command, &entry, &expected, &answers, out)
}

/// The live worker that decides alert `alert_id` for the crawl: the one
/// that raised it while it lives, else any (every worker joined the alert).
fn deciding_worker(
    con: &mut redis::Connection,
    target: &ClusterTarget,
    alert_id: u64,
    live: &[String],
) -> Result<String, ClusterCtlError> {
    let raiser: Option<String> = redis::cmd("HGET")
        .arg(alert_raisers_key(&key_prefix(&target.crawl)))
        .arg(alert_id)
        .query(con)
        .map_err(|e| ClusterCtlError::Failed(format!("cannot read the alerts: {e}")))?;
    let raiser = raiser.ok_or_else(|| {
        ClusterCtlError::Usage(format!(
            "crawl {} has no alert #{alert_id}; `crawldeck status --redis {} --crawl {}` lists the open ones",
            target.crawl, target.url, target.crawl
        ))
    })?;
    Ok(live
        .iter()
        .find(|w| **w == raiser)
        .or(live.first())
        .cloned()
        .unwrap_or(raiser))
}

/// Polls the entry's answers until every expected worker answered or the wait is over.
fn wait_for_answers(
    con: &mut redis::Connection,
    crawl: &str,
    entry: &str,
    expected: &[String],
) -> Result<Vec<(String, Answer)>, commands::StreamError> {
    let deadline = Instant::now() + ANSWER_WAIT;
    loop {
        let answers = commands::answers(con, crawl, entry)?;
        let all_in = expected
            .iter()
            .all(|w| answers.iter().any(|(who, _)| who == w));
        if (all_in && !expected.is_empty()) || Instant::now() >= deadline {
            return Ok(answers);
        }
        std::thread::sleep(POLL);
    }
}

/// One line per worker; `Err` unless some worker answered and none refused.
fn report(
    command: &Command,
    entry: &str,
    expected: &[String],
    answers: &[(String, Answer)],
    out: &mut dyn Write,
) -> Result<(), ClusterCtlError> {
    for (worker, answer) in answers {
        let line = match answer {
            Ok(summary) => format!("{worker}: {}", summary.replace('\n', "\n  ")),
            Err(why) => format!("{worker}: refused: {why}"),
        };
        let _ = writeln!(out, "{}", strip_control(&line));
    }
    let silent: Vec<&String> = expected
        .iter()
        .filter(|w| !answers.iter().any(|(who, _)| who == *w))
        .collect();
    for worker in &silent {
        let _ = writeln!(
            out,
            "{}: no answer within {}s",
            strip_control(worker),
            ANSWER_WAIT.as_secs()
        );
    }
    let refused = answers.iter().filter(|(_, a)| a.is_err()).count();
    if answers.is_empty() {
        let later = if commands::replays(command) {
            "; workers that start later apply it"
        } else {
            ""
        };
        return Err(ClusterCtlError::Failed(format!(
            "no live worker answered {} (stream entry {entry}) within {}s{later}; start one with `crawldeck crawl --headless --redis URL --crawl NAME --data DIR`",
            command.label(),
            ANSWER_WAIT.as_secs()
        )));
    }
    // A seed is queued by the first worker; the others only widen their scope.
    let one_suffices = matches!(command, Command::AddSeed(_));
    if refused > 0 && !(one_suffices && refused < answers.len()) {
        return Err(ClusterCtlError::Failed(format!(
            "{refused} of {} workers refused {}",
            answers.len(),
            command.label()
        )));
    }
    Ok(())
}

/// Names of the workers whose heartbeat is fresh, sorted.
pub fn live_workers(con: &mut redis::Connection, crawl: &str) -> redis::RedisResult<Vec<String>> {
    // `read_workers` sorts them by name.
    Ok(super::status::read_workers(con, crawl)?
        .into_iter()
        .filter(|row| row.alive)
        .map(|row| row.beat.worker)
        .collect())
}

fn list_or_none(names: &[String]) -> String {
    if names.is_empty() {
        "none".into()
    } else {
        strip_control(&names.join(", ")).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_names_each_worker_and_fails_on_silence_or_refusal() {
        let cmd = Command::Checkpoint;
        let expected = vec!["w1".to_string(), "w2".to_string()];
        let mut out = Vec::new();
        let ok = vec![("w1".to_string(), Ok("checkpointed".to_string()))];
        report(&cmd, "1-0", &expected, &ok, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text, "w1: checkpointed\nw2: no answer within 5s\n");
        let refused = vec![("w\u{1b}1".to_string(), Err("read-only".to_string()))];
        let mut out = Vec::new();
        let e = report(&cmd, "1-0", &expected, &refused, &mut out).unwrap_err();
        assert!(
            e.to_string().contains("1 of 1 workers refused checkpoint"),
            "{e}"
        );
        assert!(String::from_utf8(out)
            .unwrap()
            .starts_with("w1: refused: read-only"));
        let seed = Command::AddSeed("http://a.example/".into());
        let once = vec![
            ("w1".to_string(), Ok("seed queued".to_string())),
            ("w2".to_string(), Err("already seen".to_string())),
        ];
        report(&seed, "1-0", &expected, &once, &mut Vec::new()).unwrap();
        let e = report(&cmd, "1-0", &expected, &[], &mut Vec::new()).unwrap_err();
        assert!(
            e.to_string().contains("no live worker answered checkpoint"),
            "{e}"
        );
    }
}
