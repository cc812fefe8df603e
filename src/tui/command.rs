//! The `:` command line: parsing into engine commands, Tab completion, and rule
//! validation shared with the rule prompts.

use std::time::Duration;

use crate::engine::control::{Command, HostKey, PatternKind, RuleSpec, Target};

/// What a command line asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum CommandLine {
    Engine(Command),
    Quit,
    Help,
    Freeze,
}

/// Command names with their argument hint, for completion and error messages.
pub const COMMANDS: &[(&str, &str)] = &[
    ("blacklist", "REGEX [HOST]"),
    ("glob", "PATTERN [HOST]"),
    ("throttle", "HOST|* DURATION|off"),
    ("concurrency", "HOST|* N|off"),
    ("rate", "PAGES_PER_SEC|off"),
    ("pause", "[HOST]"),
    ("resume", "[HOST]"),
    ("seed", "URL"),
    ("reset", "HOST"),
    ("open", "HOST"),
    ("breaker", "HOST FAILURES [COOLDOWN]|off"),
    ("accept", "ID"),
    ("dismiss", "ID"),
    ("unrule", "ID"),
    ("checkpoint", ""),
    ("freeze", ""),
    ("help", ""),
    ("quit", ""),
];

/// Commands whose first argument is a host name.
const HOST_COMMANDS: &[&str] = &[
    "throttle",
    "concurrency",
    "pause",
    "resume",
    "reset",
    "open",
    "breaker",
];

/// Checks a rule before it is sent. One place, so it can follow the engine's compiler.
pub fn validate_rule(spec: &RuleSpec) -> Result<(), String> {
    // The engine's own compiler, so the prompt accepts exactly what the engine will.
    crate::engine::rules::RuleSet::compile(spec).map(|_| ())
}

/// A rule the engine will accept, or why not.
pub fn checked_rule(
    kind: PatternKind,
    pattern: String,
    host: Option<HostKey>,
) -> Result<RuleSpec, String> {
    let spec = RuleSpec {
        kind,
        pattern,
        host,
    };
    validate_rule(&spec)?;
    Ok(spec)
}

/// Parses a duration the operator typed: `500ms`, `2s`, `1m`.
pub fn parse_delay(text: &str) -> Result<Duration, String> {
    if !text.is_empty() && text.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return Err(format!("\"{text}\" needs a unit, e.g. 500ms or 2s"));
    }
    humantime::parse_duration(text).map_err(|e| format!("bad duration \"{text}\": {e}"))
}

/// A host's delay as typed: a duration, or `off` for the default.
pub fn parse_optional_delay(text: &str) -> Result<Option<Duration>, String> {
    if text == "off" {
        Ok(None)
    } else {
        parse_delay(text).map(Some)
    }
}

pub fn parse_rate(text: &str) -> Result<Option<f64>, String> {
    if text == "off" {
        return Ok(None);
    }
    match text.parse::<f64>() {
        Ok(r) if r.is_finite() && r > 0.0 && r <= 10_000.0 => Ok(Some(r)),
        _ => Err(format!(
            "bad rate \"{text}\": pages per second between 0 and 10000, or off"
        )),
    }
}

pub fn parse_concurrency(text: &str) -> Result<Option<usize>, String> {
    if text == "off" {
        return Ok(None);
    }
    match text.parse::<usize>() {
        Ok(n @ 1..=1024) => Ok(Some(n)),
        _ => Err(format!(
            "bad concurrency \"{text}\": a number from 1 to 1024, or off"
        )),
    }
}

fn parse_id(args: &[&str], name: &str) -> Result<u64, String> {
    match args {
        [id] => id
            .trim_start_matches('#')
            .parse()
            .map_err(|_| format!("{name}: \"{id}\" is not an id")),
        _ => Err(format!("usage: :{name} ID")),
    }
}

fn rule(kind: PatternKind, args: &[&str], name: &str, usage: &str) -> Result<Command, String> {
    let (pattern, host) = match args {
        [pattern] => (pattern, None),
        [pattern, host] => (pattern, Some(host.to_ascii_lowercase())),
        _ => return Err(format!("usage: :{name} {usage}")),
    };
    checked_rule(kind, pattern.to_string(), host).map(Command::AddRule)
}

fn target(arg: Option<&&str>) -> Target {
    match arg {
        None | Some(&"*") => Target::Global,
        Some(host) => Target::Host(host.to_ascii_lowercase()),
    }
}

/// Parses one command line (without the leading `:`).
pub fn parse(line: &str) -> Result<CommandLine, String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let Some((&name, args)) = words.split_first() else {
        return Err("empty command".into());
    };
    let usage = |n: &str| {
        let hint = COMMANDS
            .iter()
            .find(|(c, _)| *c == n)
            .map(|(_, h)| *h)
            .unwrap_or("");
        format!("usage: :{n} {hint}")
    };
    let cmd = match name {
        "blacklist" | "bl" => rule(PatternKind::Regex, args, "blacklist", "REGEX [HOST]")?,
        "glob" => rule(PatternKind::Glob, args, "glob", "PATTERN [HOST]")?,
        "throttle" => match args {
            [host, value] => match (target(Some(host)), parse_optional_delay(value)?) {
                (Target::Global, Some(d)) => Command::SetGlobalDelay(d),
                (Target::Global, None) => {
                    return Err("the global delay cannot be off; give a duration".into())
                }
                (Target::Host(host), delay) => Command::SetHostDelay { host, delay },
            },
            _ => return Err(usage("throttle")),
        },
        "concurrency" => match args {
            [host, value] => match (target(Some(host)), parse_concurrency(value)?) {
                (Target::Global, Some(n)) => Command::SetGlobalConcurrency(n),
                (Target::Global, None) => {
                    return Err("the global concurrency cannot be off; give a number".into())
                }
                (Target::Host(host), max) => Command::SetHostConcurrency { host, max },
            },
            _ => return Err(usage("concurrency")),
        },
        "rate" => match args {
            [value] => Command::SetGlobalRate(parse_rate(value)?),
            _ => return Err(usage("rate")),
        },
        "pause" | "resume" if args.len() <= 1 => {
            let t = target(args.first());
            if name == "pause" {
                Command::Pause(t)
            } else {
                Command::Resume(t)
            }
        }
        "seed" => match args {
            [url] => {
                let parsed =
                    url::Url::parse(url).map_err(|e| format!("bad seed URL \"{url}\": {e}"))?;
                if !matches!(parsed.scheme(), "http" | "https") {
                    return Err(format!(
                        "bad seed URL \"{url}\": only http and https are crawled"
                    ));
                }
                Command::AddSeed(parsed.to_string())
            }
            _ => return Err(usage("seed")),
        },
        "breaker" => {
            let thresholds = match args {
                [_, "off"] => None,
                [_, failures] | [_, failures, _] => {
                    let consecutive_failures = failures
                        .parse::<u32>()
                        .ok()
                        .filter(|n| (1..=1000).contains(n))
                        .ok_or_else(|| {
                            format!("breaker: \"{failures}\" is not a failure count from 1 to 1000")
                        })?;
                    let cooldown = match args.get(2) {
                        Some(text) => parse_delay(text)?,
                        None => Duration::from_secs(30),
                    };
                    Some(crate::engine::control::BreakerThresholds {
                        consecutive_failures,
                        cooldown,
                    })
                }
                _ => return Err(usage("breaker")),
            };
            Command::SetHostBreaker {
                host: args[0].to_ascii_lowercase(),
                thresholds,
            }
        }
        "reset" | "open" => match args {
            [host] => {
                let host = host.to_ascii_lowercase();
                if name == "reset" {
                    Command::ResetBreaker(host)
                } else {
                    Command::ForceOpenBreaker(host)
                }
            }
            _ => return Err(usage(name)),
        },
        "accept" => Command::AcceptAlert {
            alert_id: parse_id(args, "accept")?,
            rule: None,
        },
        "dismiss" => Command::DismissAlert {
            alert_id: parse_id(args, "dismiss")?,
        },
        "unrule" => Command::RemoveRule {
            rule_id: parse_id(args, "unrule")?,
        },
        "checkpoint" if args.is_empty() => Command::Checkpoint,
        "freeze" if args.is_empty() => return Ok(CommandLine::Freeze),
        "help" if args.is_empty() => return Ok(CommandLine::Help),
        "quit" | "q" if args.is_empty() => return Ok(CommandLine::Quit),
        other if COMMANDS.iter().any(|(c, _)| *c == other) => return Err(usage(other)),
        other => {
            return Err(format!(
                "unknown command \":{other}\" (Tab completes command names)"
            ))
        }
    };
    Ok(CommandLine::Engine(cmd))
}

/// Completes the last word of `line`: a command name, or a host name after a
/// command that takes one. Returns the new line and, when several candidates
/// remain, the candidates.
pub fn complete(line: &str, hosts: &[&str]) -> (String, Vec<String>) {
    let ends_with_space = line.ends_with(' ');
    let words: Vec<&str> = line.split_whitespace().collect();
    let (index, partial) = match (words.len(), ends_with_space) {
        (0, _) => (0, ""),
        (n, true) => (n, ""),
        (n, false) => (n - 1, words[n - 1]),
    };
    let candidates: Vec<String> = if index == 0 {
        COMMANDS
            .iter()
            .map(|(c, _)| c.to_string())
            .filter(|c| c.starts_with(partial))
            .collect()
    } else if index == 1 && HOST_COMMANDS.contains(&words[0]) {
        let mut hosts: Vec<String> = hosts
            .iter()
            .filter(|h| h.starts_with(partial))
            .map(|h| h.to_string())
            .collect();
        hosts.sort();
        hosts.dedup();
        hosts
    } else {
        Vec::new()
    };
    let prefix_words = &words[..index.min(words.len())];
    let rebuild = |last: &str, finished: bool| {
        let mut s = prefix_words.join(" ");
        if !s.is_empty() {
            s.push(' ');
        }
        s.push_str(last);
        if finished {
            s.push(' ');
        }
        s
    };
    match candidates.as_slice() {
        [] => (line.to_string(), Vec::new()),
        [only] => (rebuild(only, true), Vec::new()),
        many => {
            let common = many.iter().skip(1).fold(many[0].clone(), |acc, c| {
                acc.chars()
                    .zip(c.chars())
                    .take_while(|(a, b)| a == b)
                    .map(|(a, _)| a)
                    .collect()
            });
            let line = if common.len() > partial.len() {
                rebuild(&common, false)
            } else {
                line.to_string()
            };
            (line, many.to_vec())
        }
    }
}

#[cfg(test)]
#[path = "command_tests.rs"]
mod tests;
