//! The `:` command line: parsing into engine commands, Tab completion, and rule
//! validation shared with the rule prompts. `crawldeck ctl` parses with the
//! same grammar, so this module imports no terminal crate.

use std::time::Duration;

use crate::engine::control::{
    BreakerThresholds, Command, ExtractionSpec, HostKey, PatternKind, RuleSpec, Target, MAX_DELAY,
};

/// `:breaker`'s cooldown when the line gives none.
const DEFAULT_BREAKER_COOLDOWN: Duration = Duration::from_secs(30);

/// What a command line asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum CommandLine {
    Engine(Command),
    Quit,
    Help,
    Freeze,
    /// `:select CSS`: the page inspector's elements matching a selector.
    Select(String),
}

/// Command names with their argument hint, for completion and error messages.
pub const COMMANDS: &[(&str, &str)] = &[
    ("blacklist", "REGEX [HOST]"),
    ("glob", "PATTERN [HOST]"),
    ("preview", "REGEX|glob:PATTERN [HOST]"),
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
    ("stop", ""),
    ("freeze", ""),
    ("select", "CSS"),
    ("extract", "NAME=CSS[@attr]"),
    ("help", ""),
    ("quit", ""),
];

/// The command line's help: one line per command with its arguments. The TUI's
/// help and `crawldeck ctl help` both print it.
pub fn help_lines() -> Vec<String> {
    COMMANDS
        .iter()
        .map(|(name, hint)| format!(":{name} {hint}").trim_end().to_string())
        .collect()
}

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

/// The extraction the inspector's prompt names for `selector`: `NAME`, or
/// `NAME@attr` for an attribute.
pub fn extraction_of(text: &str, selector: &str) -> Result<ExtractionSpec, String> {
    let (name, attribute) = match text.split_once('@') {
        Some((name, attr)) => (name, Some(attr.trim().to_ascii_lowercase())),
        None => (text, None),
    };
    ExtractionSpec::new(name, selector, attribute)
}

/// Parses a duration the operator typed: `500ms`, `2s`, `1m`.
pub fn parse_delay(text: &str) -> Result<Duration, String> {
    if !text.is_empty() && text.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return Err(format!("\"{text}\" needs a unit, e.g. 500ms or 2s"));
    }
    humantime::parse_duration(text).map_err(|e| format!("bad duration \"{text}\": {e}"))
}

/// `off` as `None`, anything else through `parse`.
fn unless_off<T>(
    text: &str,
    parse: impl FnOnce(&str) -> Result<T, String>,
) -> Result<Option<T>, String> {
    if text == "off" {
        Ok(None)
    } else {
        parse(text).map(Some)
    }
}

/// A host's delay as typed: a duration up to [`MAX_DELAY`], or `off` for the default.
pub fn parse_optional_delay(text: &str) -> Result<Option<Duration>, String> {
    unless_off(text, |text| {
        let delay = parse_delay(text)?;
        if delay > MAX_DELAY {
            return Err(format!(
                "bad delay \"{text}\": at most {} between two requests to a host",
                humantime::format_duration(MAX_DELAY)
            ));
        }
        Ok(delay)
    })
}

/// A global rate cap in pages per second; `off` or 0 for none (as `--max-rate 0`).
pub fn parse_rate(text: &str) -> Result<Option<f64>, String> {
    let rate = unless_off(text, |text| match text.parse::<f64>() {
        Ok(r) if r.is_finite() && (0.0..=10_000.0).contains(&r) => Ok(r),
        _ => Err(format!(
            "bad rate \"{text}\": pages per second up to 10000 (0 or off: no cap)"
        )),
    })?;
    Ok(rate.filter(|r| *r > 0.0))
}

/// A concurrency limit from 1 to 1024, or `off` for the default.
pub fn parse_concurrency(text: &str) -> Result<Option<usize>, String> {
    unless_off(text, |text| match text.parse::<usize>() {
        Ok(n @ 1..=1024) => Ok(n),
        _ => Err(format!(
            "bad concurrency \"{text}\": a number from 1 to 1024, or off"
        )),
    })
}

/// The usage line of a command, from its entry in [`COMMANDS`].
fn usage(name: &str) -> String {
    let hint = COMMANDS
        .iter()
        .find(|(c, _)| *c == name)
        .map(|(_, h)| *h)
        .unwrap_or("");
    format!("usage: :{name} {hint}")
}

/// The one argument of `:accept`, `:dismiss` and `:unrule`: an id, `#` allowed.
fn parse_id(args: &[&str], name: &str) -> Result<u64, String> {
    match args {
        [id] => id
            .trim_start_matches('#')
            .parse()
            .map_err(|_| format!("{name}: \"{id}\" is not an id")),
        _ => Err(usage(name)),
    }
}

/// `:blacklist` and `:glob`: a pattern, and optionally the host it is limited to.
fn rule(kind: PatternKind, args: &[&str], name: &str) -> Result<Command, String> {
    rule_spec(kind, args, name).map(Command::AddRule)
}

/// A checked rule from a pattern and an optional host.
fn rule_spec(kind: PatternKind, args: &[&str], name: &str) -> Result<RuleSpec, String> {
    let (pattern, host) = match args {
        [pattern] => (pattern, None),
        [pattern, host] => (pattern, Some(host.to_ascii_lowercase())),
        _ => return Err(usage(name)),
    };
    checked_rule(kind, pattern.to_string(), host)
}

/// `:preview REGEX|glob:PATTERN [HOST]`: what a rule would match, without adding it.
fn preview(args: &[&str]) -> Result<Command, String> {
    let mut args = args.to_vec();
    let mut kind = PatternKind::Regex;
    if let Some(glob) = args.first().and_then(|p| p.strip_prefix("glob:")) {
        kind = PatternKind::Glob;
        args[0] = glob;
    }
    rule_spec(kind, &args, "preview").map(Command::Preview)
}

/// A host argument; none or `*` means the whole crawl.
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
    if name == "select" || name == "extract" {
        // A selector may hold spaces: the rest of the line, as typed.
        let rest = line.trim_start()[name.len()..].trim();
        if rest.is_empty() {
            return Err(usage(name));
        }
        return match name {
            "select" => Ok(CommandLine::Select(rest.to_string())),
            _ => ExtractionSpec::parse(rest)
                .map(|spec| CommandLine::Engine(Command::AddExtraction(spec))),
        };
    }
    match (name, args) {
        ("freeze", []) => return Ok(CommandLine::Freeze),
        ("help", []) => return Ok(CommandLine::Help),
        ("quit" | "q", []) => return Ok(CommandLine::Quit),
        _ => {}
    }
    match engine_command(name, args) {
        Some(cmd) => cmd.map(CommandLine::Engine),
        // A known name with arguments of the wrong shape.
        None if COMMANDS.iter().any(|(c, _)| *c == name) => Err(usage(name)),
        None => Err(format!(
            "unknown command \":{name}\" (Tab completes command names)"
        )),
    }
}

/// The engine command a line names; `None` when the name is not one or its
/// arguments have the wrong count for it.
fn engine_command(name: &str, args: &[&str]) -> Option<Result<Command, String>> {
    let cmd = match (name, args) {
        ("blacklist" | "bl", _) => rule(PatternKind::Regex, args, "blacklist"),
        ("glob", _) => rule(PatternKind::Glob, args, "glob"),
        ("preview", _) => preview(args),
        ("throttle", [host, value]) => throttle(host, value),
        ("concurrency", [host, value]) => concurrency(host, value),
        ("rate", [value]) => parse_rate(value).map(Command::SetGlobalRate),
        ("pause", [] | [_]) => Ok(Command::Pause(target(args.first()))),
        ("resume", [] | [_]) => Ok(Command::Resume(target(args.first()))),
        ("seed", [url]) => seed(url),
        ("breaker", [host, rest @ ..]) => breaker(host, rest),
        ("reset", [host]) => Ok(Command::ResetBreaker(host.to_ascii_lowercase())),
        ("open", [host]) => Ok(Command::ForceOpenBreaker(host.to_ascii_lowercase())),
        ("accept", _) => parse_id(args, name).map(|alert_id| Command::AcceptAlert {
            alert_id,
            rule: None,
        }),
        ("dismiss", _) => parse_id(args, name).map(|alert_id| Command::DismissAlert { alert_id }),
        ("unrule", _) => parse_id(args, name).map(|rule_id| Command::RemoveRule { rule_id }),
        ("checkpoint", []) => Ok(Command::Checkpoint),
        ("stop", []) => Ok(Command::Shutdown),
        _ => return None,
    };
    Some(cmd)
}

/// `:throttle HOST|* DURATION|off`: a host's delay, or the global one (never off).
fn throttle(host: &str, value: &str) -> Result<Command, String> {
    match (target(Some(&host)), parse_optional_delay(value)?) {
        (Target::Global, Some(d)) => Ok(Command::SetGlobalDelay(d)),
        (Target::Global, None) => Err("the global delay cannot be off; give a duration".into()),
        (Target::Host(host), delay) => Ok(Command::SetHostDelay { host, delay }),
    }
}

/// `:concurrency HOST|* N|off`: a host's limit, or the global one (never off).
fn concurrency(host: &str, value: &str) -> Result<Command, String> {
    match (target(Some(&host)), parse_concurrency(value)?) {
        (Target::Global, Some(n)) => Ok(Command::SetGlobalConcurrency(n)),
        (Target::Global, None) => Err("the global concurrency cannot be off; give a number".into()),
        (Target::Host(host), max) => Ok(Command::SetHostConcurrency { host, max }),
    }
}

/// `:seed URL`: an absolute http(s) URL.
fn seed(url: &str) -> Result<Command, String> {
    let parsed = url::Url::parse(url).map_err(|e| format!("bad seed URL \"{url}\": {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!(
            "bad seed URL \"{url}\": only http and https are crawled"
        ));
    }
    Ok(Command::AddSeed(parsed.to_string()))
}

/// `:breaker HOST FAILURES [COOLDOWN]|off`: a host's breaker thresholds, or its default.
fn breaker(host: &str, rest: &[&str]) -> Result<Command, String> {
    let thresholds = match rest {
        ["off"] => None,
        [failures] | [failures, _] => {
            let consecutive_failures = failures
                .parse::<u32>()
                .ok()
                .filter(|n| (1..=1000).contains(n))
                .ok_or_else(|| {
                    format!("breaker: \"{failures}\" is not a failure count from 1 to 1000")
                })?;
            let cooldown = match rest.get(1) {
                Some(text) => parse_delay(text)?,
                None => DEFAULT_BREAKER_COOLDOWN,
            };
            Some(BreakerThresholds {
                consecutive_failures,
                cooldown,
            })
        }
        _ => return Err(usage("breaker")),
    };
    Ok(Command::SetHostBreaker {
        host: host.to_ascii_lowercase(),
        thresholds,
    })
}

/// Completes the last word of `line`: a command name, or a host name after a
/// command that takes one. Returns the new line and, when several candidates
/// remain, the candidates.
pub fn complete(line: &str, hosts: &[&str]) -> (String, Vec<String>) {
    let words: Vec<&str> = line.split_whitespace().collect();
    // The word being completed: a new one after a space, else the last one.
    let (index, partial) = match (words.len(), line.ends_with(' ')) {
        (0, _) => (0, ""),
        (n, true) => (n, ""),
        (n, false) => (n - 1, words[n - 1]),
    };
    let candidates = candidates(&words, index, partial, hosts);
    let rebuild = |last: &str, finished: bool| {
        let mut s = words[..index].join(" ");
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
            let common = common_prefix(many);
            let line = if common.len() > partial.len() {
                rebuild(&common, false)
            } else {
                line.to_string()
            };
            (line, many.to_vec())
        }
    }
}

/// What word `index` may become: a command name first, a known host after a
/// command that takes one, else nothing.
fn candidates(words: &[&str], index: usize, partial: &str, hosts: &[&str]) -> Vec<String> {
    if index == 0 {
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
    }
}

/// The longest prefix all of `words` share (at least one word).
fn common_prefix(words: &[String]) -> String {
    words.iter().skip(1).fold(words[0].clone(), |acc, c| {
        acc.chars()
            .zip(c.chars())
            .take_while(|(a, b)| a == b)
            .map(|(a, _)| a)
            .collect()
    })
}

#[cfg(test)]
#[path = "command_tests.rs"]
mod tests;
