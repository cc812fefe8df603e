//! The `:` command line: every operator action as text, with completion of
//! command and host names.

use std::time::Duration;

use super::model::Model;
use super::update::parse_rule;
use crate::engine::control::{Command, Target};

/// Command names, their arguments and what they do (also shown by `:help`).
pub const COMMANDS: &[(&str, &str, &str)] = &[
    ("blacklist", "REGEX [HOST]", "block URLs matching a regex"),
    ("glob", "PATTERN [HOST]", "block URLs matching a glob"),
    ("unrule", "ID", "remove rule ID"),
    (
        "throttle",
        "HOST|* DURATION|default",
        "delay between requests to a host (* = every host)",
    ),
    (
        "concurrency",
        "HOST|* N|default",
        "requests in flight for a host (* = whole crawl)",
    ),
    ("rate", "N|off", "cap the crawl at N pages/s"),
    ("pause", "[HOST]", "pause the crawl or one host"),
    ("resume", "[HOST]", "resume the crawl or one host"),
    ("seed", "URL", "add a seed URL"),
    ("reset", "HOST", "close a host's circuit breaker"),
    ("open", "HOST", "open a host's circuit breaker"),
    (
        "accept",
        "ID [REGEX]",
        "accept trap alert ID (optionally with an edited rule)",
    ),
    ("dismiss", "ID", "dismiss trap alert ID"),
    ("checkpoint", "", "write a checkpoint now"),
    ("quit", "", "checkpoint and quit"),
];

pub fn parse_delay(text: &str) -> Result<Option<Duration>, String> {
    match text.trim() {
        "" | "default" => Ok(None),
        t => humantime::parse_duration(t)
            .map(Some)
            .map_err(|e| format!("{t:?} is not a duration ({e}); write e.g. 500ms or 2s")),
    }
}

pub fn parse_count(text: &str) -> Result<Option<usize>, String> {
    match text.trim() {
        "" | "default" => Ok(None),
        t => match t.parse::<usize>() {
            Ok(0) | Err(_) => Err(format!("{t:?} is not a positive whole number")),
            Ok(n) => Ok(Some(n)),
        },
    }
}

pub fn parse_rate(text: &str) -> Result<Option<f64>, String> {
    match text.trim() {
        "" | "off" | "0" => Ok(None),
        t => match t.parse::<f64>() {
            Ok(r) if r > 0.0 && r.is_finite() => Ok(Some(r)),
            _ => Err(format!(
                "{t:?} is not a positive number of pages/s (or off)"
            )),
        },
    }
}

fn parse_id(word: Option<&str>, what: &str) -> Result<u64, String> {
    let word = word.ok_or_else(|| format!("give the {what} number, e.g. 3"))?;
    word.trim_start_matches('#')
        .parse()
        .map_err(|_| format!("{word:?} is not a {what} number"))
}

/// A host as typed: must be one the crawl knows (avoids silent typos).
fn known_host(word: Option<&str>, model: &Model) -> Result<String, String> {
    let word = word.ok_or("give a host (Tab completes)")?;
    if model.snapshot.hosts.iter().any(|h| h.host == word) {
        Ok(word.to_string())
    } else {
        Err(format!(
            "no host {word:?} in this crawl (Tab completes host names)"
        ))
    }
}

pub fn parse(line: &str, model: &Model) -> Result<Command, String> {
    let mut words = line.split_whitespace();
    let Some(name) = words.next() else {
        return Err("type a command; Tab completes (blacklist, throttle, pause, seed…)".into());
    };
    let rest: Vec<&str> = words.collect();
    let arg = |i: usize| rest.get(i).copied();
    let host_arg = |i: usize| arg(i).map(|h| known_host(Some(h), model)).transpose();
    Ok(match name {
        "blacklist" | "glob" => {
            let pattern = arg(0).ok_or("give a pattern")?;
            let text = if name == "glob" {
                format!("glob:{pattern}")
            } else {
                pattern.to_string()
            };
            Command::AddRule(parse_rule(&text, host_arg(1)?)?)
        }
        "unrule" => Command::RemoveRule {
            rule_id: parse_id(arg(0), "rule")?,
        },
        "throttle" => match arg(0) {
            Some("*") => Command::SetGlobalDelay(
                parse_delay(arg(1).unwrap_or(""))?.ok_or("give a duration for *, e.g. 1s")?,
            ),
            host => Command::SetHostDelay {
                host: known_host(host, model)?,
                delay: parse_delay(arg(1).ok_or("give a duration, e.g. 500ms, or default")?)?,
            },
        },
        "concurrency" => match arg(0) {
            Some("*") => Command::SetGlobalConcurrency(
                parse_count(arg(1).unwrap_or(""))?.ok_or("give a number for *, e.g. 16")?,
            ),
            host => Command::SetHostConcurrency {
                host: known_host(host, model)?,
                max: parse_count(arg(1).ok_or("give a number, or default")?)?,
            },
        },
        "rate" => Command::SetGlobalRate(parse_rate(arg(0).ok_or("give N pages/s or off")?)?),
        "pause" => Command::Pause(host_arg(0)?.map_or(Target::Global, Target::Host)),
        "resume" => Command::Resume(host_arg(0)?.map_or(Target::Global, Target::Host)),
        "seed" => Command::AddSeed(arg(0).ok_or("give a URL")?.to_string()),
        "reset" => Command::ResetBreaker(known_host(arg(0), model)?),
        "open" => Command::ForceOpenBreaker(known_host(arg(0), model)?),
        "accept" => {
            let alert_id = parse_id(arg(0), "alert")?;
            let host = model
                .snapshot
                .alerts
                .iter()
                .find(|a| a.id == alert_id)
                .map(|a| a.host.clone());
            let rule = arg(1).map(|t| parse_rule(t, host)).transpose()?;
            Command::AcceptAlert { alert_id, rule }
        }
        "dismiss" => Command::DismissAlert {
            alert_id: parse_id(arg(0), "alert")?,
        },
        "checkpoint" => Command::Checkpoint,
        "quit" | "q" => Command::Shutdown,
        other => {
            return Err(format!(
                "unknown command {other:?}; commands: {}",
                COMMANDS.iter().map(|c| c.0).collect::<Vec<_>>().join(", ")
            ))
        }
    })
}

/// Completes the last word: a command name first, host names after it.
pub fn complete(line: &str, hosts: &[String]) -> Option<String> {
    let (head, last) = match line.rfind(' ') {
        Some(i) => (&line[..=i], &line[i + 1..]),
        None => ("", line),
    };
    let candidates: Vec<&str> = if head.is_empty() {
        COMMANDS.iter().map(|c| c.0).collect()
    } else {
        hosts.iter().map(String::as_str).collect()
    };
    let matches: Vec<&str> = candidates
        .into_iter()
        .filter(|c| c.starts_with(last))
        .collect();
    let common = matches
        .iter()
        .skip(1)
        .fold(matches.first()?.to_string(), |acc, m| {
            acc.chars()
                .zip(m.chars())
                .take_while(|(a, b)| a == b)
                .map(|(a, _)| a)
                .collect()
        });
    let suffix = if matches.len() == 1 { " " } else { "" };
    Some(format!("{head}{common}{suffix}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completes_commands_then_hosts() {
        let hosts = vec![
            "shop.localhost:1".to_string(),
            "slow.localhost:2".to_string(),
        ];
        assert_eq!(complete("thr", &hosts).unwrap(), "throttle ");
        assert_eq!(complete("throttle s", &hosts).unwrap(), "throttle s");
        assert_eq!(
            complete("throttle sh", &hosts).unwrap(),
            "throttle shop.localhost:1 "
        );
        assert_eq!(complete("zzz", &hosts), None);
    }

    #[test]
    fn values_are_checked_with_helpful_messages() {
        assert_eq!(
            parse_delay("500ms").unwrap(),
            Some(Duration::from_millis(500))
        );
        assert_eq!(parse_delay("default").unwrap(), None);
        assert!(parse_delay("soon").unwrap_err().contains("500ms"));
        assert!(parse_count("0").is_err());
        assert_eq!(parse_rate("off").unwrap(), None);
        assert_eq!(parse_rate("2.5").unwrap(), Some(2.5));
    }
}
