//! The crawl's command stream: operator commands every worker of a shared
//! crawl applies.
//!
//! One Redis Stream per crawl, `crawldeck:{NAME}:commands`. An entry holds
//! `cmd` (the JSON of an engine [`Command`]), `from` (who sent it, e.g.
//! `ctl on HOST pid N`), and optionally `to` (the one worker it is for) or
//! `skip` (a worker that has applied it already). Each worker writes its
//! answer into the entry's answers hash, `crawldeck:{NAME}:answers:ENTRY`
//! (worker → JSON of `Result<String, String>`, expiring after
//! [`ANSWER_TTL`]), and the last entry it handled into `cursors` (worker →
//! entry id), so a restarted worker goes on after it.
//!
//! An alert is the crawl's: `accept` and `dismiss` go `to` one worker, which
//! shares the decision through the frontier (`alert-decisions`); every other
//! worker, and every worker that joins later, applies it from there.

use std::collections::BTreeMap;
use std::time::Duration;

use redis::streams::{StreamId, StreamRangeReply, StreamReadOptions, StreamReadReply};
use redis::{Commands, ConnectionLike};

use crate::engine::control::{Command, RuleSpec, Target};
use crate::engine::frontier::AlertDecision;
use crate::engine::telemetry::AlertStatus;
use crate::engine::{alert_decisions_key, key_prefix};

/// Entries the stream keeps (approximately): a worker that joins replays
/// them, so this bounds both the replay and Redis memory.
pub const MAX_STREAM_LEN: usize = 100_000;
/// How long a command's answers stay readable.
pub const ANSWER_TTL: Duration = Duration::from_secs(3600);
/// Entries read per call.
pub const READ_BATCH: usize = 64;

/// A worker's answer to one command: `Ok(summary)` or `Err(why)`.
pub type Answer = Result<String, String>;

/// A Redis call of the command stream failed.
#[derive(Debug, thiserror::Error)]
#[error("{op} failed: {source}; check that the Redis server is running")]
pub struct StreamError {
    op: &'static str,
    #[source]
    source: redis::RedisError,
}

impl StreamError {
    /// The Redis error behind it.
    pub fn redis(&self) -> &redis::RedisError {
        &self.source
    }
}

pub(super) fn failed(op: &'static str) -> impl FnOnce(redis::RedisError) -> StreamError {
    move |source| StreamError { op, source }
}

/// The stream's key.
pub fn stream_key(crawl: &str) -> String {
    format!("{}commands", key_prefix(crawl))
}

fn answers_key(crawl: &str, entry: &str) -> String {
    format!("{}answers:{entry}", key_prefix(crawl))
}

fn cursors_key(crawl: &str) -> String {
    format!("{}cursors", key_prefix(crawl))
}

/// One entry of the stream, as a worker reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamCommand {
    /// The stream entry id (`MS-SEQ`).
    pub entry: String,
    /// The command, or why the entry is not one this version understands.
    pub command: Result<Command, String>,
    /// Who sent it.
    pub from: String,
    /// The one worker it is for; `None`: every worker.
    pub to: Option<String>,
    /// A worker that applied it already (and must not apply it again).
    pub skip: Option<String>,
    /// For `RemoveRule`: the rule to remove (rule ids differ between workers).
    pub rule: Option<RuleSpec>,
}

impl StreamCommand {
    /// Whether `worker` applies this entry.
    pub fn is_for(&self, worker: &str) -> bool {
        self.to.as_deref().is_none_or(|to| to == worker) && self.skip.as_deref() != Some(worker)
    }

    fn parse(raw: &StreamId) -> StreamCommand {
        let text = |field: &str| raw.get::<String>(field);
        let command = match text("cmd") {
            Some(json) => serde_json::from_str(&json)
                .map_err(|e| format!("stream entry {} is not a command: {e}", raw.id)),
            None => Err(format!("stream entry {} has no cmd field", raw.id)),
        };
        StreamCommand {
            entry: raw.id.clone(),
            command,
            from: text("from").unwrap_or_else(|| "unknown sender".into()),
            to: text("to").filter(|t| !t.is_empty()),
            skip: text("skip").filter(|t| !t.is_empty()),
            rule: text("rule").and_then(|json| serde_json::from_str(&json).ok()),
        }
    }
}

/// Appends `command` to the crawl's stream and returns its entry id.
pub fn publish(
    con: &mut impl ConnectionLike,
    crawl: &str,
    command: &Command,
    from: &str,
    to: Option<&str>,
) -> Result<String, StreamError> {
    publish_entry(con, crawl, command, from, to, None, None)
}

/// Publishes the removal of the shared rule `rule` (see [`shared_rules`]):
/// each worker removes its own rule with that pattern, whatever its number.
pub fn publish_remove_rule(
    con: &mut impl ConnectionLike,
    crawl: &str,
    rule: &RuleSpec,
    from: &str,
) -> Result<String, StreamError> {
    // The id is each worker's own; 0 stands for "by the pattern in `rule`".
    let command = Command::RemoveRule { rule_id: 0 };
    publish_entry(con, crawl, &command, from, None, None, Some(rule))
}

/// Appends `command` for every worker but `skip`, which applied it already.
pub fn publish_except(
    con: &mut impl ConnectionLike,
    crawl: &str,
    command: &Command,
    from: &str,
    skip: &str,
) -> Result<String, StreamError> {
    publish_entry(con, crawl, command, from, None, Some(skip), None)
}

fn publish_entry(
    con: &mut impl ConnectionLike,
    crawl: &str,
    command: &Command,
    from: &str,
    to: Option<&str>,
    skip: Option<&str>,
    rule: Option<&RuleSpec>,
) -> Result<String, StreamError> {
    let json = serde_json::to_string(command).expect("a Command always encodes as JSON");
    let mut xadd = redis::cmd("XADD");
    xadd.arg(stream_key(crawl))
        .arg("MAXLEN")
        .arg("~")
        .arg(MAX_STREAM_LEN)
        .arg("*")
        .arg("cmd")
        .arg(json)
        .arg("from")
        .arg(from);
    if let Some(to) = to {
        xadd.arg("to").arg(to);
    }
    if let Some(skip) = skip {
        xadd.arg("skip").arg(skip);
    }
    if let Some(rule) = rule {
        let json = serde_json::to_string(rule).expect("a RuleSpec always encodes as JSON");
        xadd.arg("rule").arg(json);
    }
    xadd.query(con).map_err(failed("publishing the command"))
}

/// Up to [`READ_BATCH`] entries after `after` (`"0"`: from the start),
/// waiting up to `block` for one to come when there are none.
pub fn read_after(
    con: &mut impl ConnectionLike,
    crawl: &str,
    after: &str,
    block: Option<Duration>,
) -> Result<Vec<StreamCommand>, StreamError> {
    let mut options = StreamReadOptions::default().count(READ_BATCH);
    if let Some(block) = block {
        options = options.block(block.as_millis().max(1) as usize);
    }
    // A BLOCK that times out answers nil.
    let reply: Option<StreamReadReply> = con
        .xread_options(&[stream_key(crawl)], &[after], &options)
        .map_err(failed("reading the command stream"))?;
    Ok(reply
        .into_iter()
        .flat_map(|r| r.keys)
        .flat_map(|k| k.ids)
        .map(|raw| StreamCommand::parse(&raw))
        .collect())
}

/// The rules in force across the crawl, oldest first: those accepted
/// alerts became, then the stream's `AddRule`s, less those removed by
/// [`publish_remove_rule`]. Reads the whole stream, in chunks.
pub fn shared_rules(
    con: &mut impl ConnectionLike,
    crawl: &str,
) -> Result<Vec<RuleSpec>, StreamError> {
    let mut rules = accepted_rules(con, crawl)?;
    let mut after = "-".to_string();
    loop {
        let reply: StreamRangeReply = con
            .xrange_count(stream_key(crawl), &after, "+", 1000)
            .map_err(failed("reading the command stream"))?;
        let Some(last) = reply.ids.last() else {
            return Ok(rules);
        };
        after = next_id(&last.id);
        for raw in &reply.ids {
            let entry = StreamCommand::parse(raw);
            match (entry.command, entry.rule) {
                (Ok(Command::AddRule(spec)), _) if !rules.contains(&spec) => rules.push(spec),
                (Ok(Command::RemoveRule { .. }), Some(spec)) => rules.retain(|r| *r != spec),
                _ => {}
            }
        }
    }
}

/// The rules of the crawl's accepted alerts, by alert number.
fn accepted_rules(
    con: &mut impl ConnectionLike,
    crawl: &str,
) -> Result<Vec<RuleSpec>, StreamError> {
    let decisions: BTreeMap<u64, String> = con
        .hgetall(alert_decisions_key(&key_prefix(crawl)))
        .map_err(failed("reading the alerts' decisions"))?;
    let mut rules = Vec::new();
    for json in decisions.values() {
        let rule = serde_json::from_str::<AlertDecision>(json)
            .ok()
            .filter(|d| d.status == AlertStatus::Accepted)
            .and_then(|d| d.rule);
        if let Some(rule) = rule.filter(|r| !rules.contains(r)) {
            rules.push(rule);
        }
    }
    Ok(rules)
}

/// Whether the stream's last crawl-wide pause or resume was a pause.
pub fn crawl_paused(con: &mut impl ConnectionLike, crawl: &str) -> Result<bool, StreamError> {
    let mut before = "+".to_string();
    loop {
        let reply: StreamRangeReply = con
            .xrevrange_count(stream_key(crawl), &before, "-", 1000)
            .map_err(failed("reading the command stream"))?;
        let Some(oldest) = reply.ids.last() else {
            return Ok(false);
        };
        for raw in &reply.ids {
            match StreamCommand::parse(raw).command {
                Ok(Command::Pause(Target::Global)) => return Ok(true),
                Ok(Command::Resume(Target::Global)) => return Ok(false),
                _ => {}
            }
        }
        match previous_id(&oldest.id) {
            Some(id) => before = id,
            None => return Ok(false),
        }
    }
}

/// The largest stream id before `id`, if there is one.
fn previous_id(id: &str) -> Option<String> {
    let (ms, seq) = id.split_once('-').unwrap_or((id, "0"));
    let (ms, seq): (u64, u64) = (ms.parse().ok()?, seq.parse().ok()?);
    match (ms, seq) {
        (0, 0) => None,
        (ms, 0) => Some(format!("{}-{}", ms - 1, u64::MAX)),
        (ms, seq) => Some(format!("{ms}-{}", seq - 1)),
    }
}

/// The smallest stream id after `id` (`MS-SEQ`), for an exclusive range
/// that Redis 6.0 understands too.
fn next_id(id: &str) -> String {
    let (ms, seq) = id.split_once('-').unwrap_or((id, "0"));
    format!("{ms}-{}", seq.parse::<u64>().unwrap_or(0).saturating_add(1))
}

/// The id of the stream's newest entry, if any.
pub fn last_entry(
    con: &mut impl ConnectionLike,
    crawl: &str,
) -> Result<Option<String>, StreamError> {
    let reply: StreamRangeReply = con
        .xrevrange_count(stream_key(crawl), "+", "-", 1)
        .map_err(failed("reading the command stream"))?;
    Ok(reply.ids.into_iter().next().map(|e| e.id))
}

/// Records `worker`'s answer to `entry` (when it has one) and moves its
/// cursor past the entry, in one transaction.
pub fn record(
    con: &mut impl ConnectionLike,
    crawl: &str,
    entry: &str,
    worker: &str,
    answer: Option<&Answer>,
) -> Result<(), StreamError> {
    let mut pipe = redis::pipe();
    pipe.atomic();
    if let Some(answer) = answer {
        add_answer(&mut pipe, crawl, entry, worker, answer);
    }
    pipe.hset(cursors_key(crawl), worker, entry).ignore();
    pipe.query(con).map_err(failed("recording the answer"))
}

/// Records `worker`'s answer to `entry` and leaves its cursor where it is:
/// a worker that serves its records after the crawl applies nothing, so a
/// later start of it still has every command after its cursor to apply.
pub fn answer_only(
    con: &mut impl ConnectionLike,
    crawl: &str,
    entry: &str,
    worker: &str,
    answer: &Answer,
) -> Result<(), StreamError> {
    let mut pipe = redis::pipe();
    pipe.atomic();
    add_answer(&mut pipe, crawl, entry, worker, answer);
    pipe.query(con).map_err(failed("recording the answer"))
}

fn add_answer(pipe: &mut redis::Pipeline, crawl: &str, entry: &str, worker: &str, answer: &Answer) {
    let key = answers_key(crawl, entry);
    let json = serde_json::to_string(answer).expect("an answer always encodes as JSON");
    pipe.hset(&key, worker, json).ignore();
    pipe.expire(&key, ANSWER_TTL.as_secs() as i64).ignore();
}

/// The last entry `worker` handled, if it handled any.
pub fn cursor(
    con: &mut impl ConnectionLike,
    crawl: &str,
    worker: &str,
) -> Result<Option<String>, StreamError> {
    con.hget(cursors_key(crawl), worker)
        .map_err(failed("reading the worker's stream cursor"))
}

/// The answers to `entry` so far, by worker name.
pub fn answers(
    con: &mut impl ConnectionLike,
    crawl: &str,
    entry: &str,
) -> Result<Vec<(String, Answer)>, StreamError> {
    let raw: Vec<(String, String)> = con
        .hgetall(answers_key(crawl, entry))
        .map_err(failed("reading the answers"))?;
    let mut answers: Vec<(String, Answer)> = raw
        .into_iter()
        .map(|(worker, json)| {
            let answer = serde_json::from_str(&json)
                .unwrap_or_else(|e| Err(format!("unreadable answer: {e}")));
            (worker, answer)
        })
        .collect();
    answers.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(answers)
}

/// Whether a worker that joins later applies the command: what sets the
/// crawl's state (rules, overrides, pauses) does; one-off actions (stop,
/// checkpoint, preview, a breaker reset, an alert's decision, which the
/// frontier shares) do not.
pub fn replays(command: &Command) -> bool {
    match command {
        Command::Pause(_)
        | Command::Resume(_)
        | Command::AddRule(_)
        | Command::RemoveRule { .. }
        | Command::SetHostDelay { .. }
        | Command::SetHostConcurrency { .. }
        | Command::SetGlobalDelay(_)
        | Command::SetGlobalConcurrency(_)
        | Command::SetGlobalRate(_)
        | Command::SetHostBreaker { .. }
        // A seed widens each worker's scope (queued once, by whichever worker comes first).
        | Command::AddSeed(_)
        | Command::AddExtraction(_) => true,
        Command::ResetBreaker(_)
        | Command::ForceOpenBreaker(_)
        | Command::AcceptAlert { .. }
        | Command::DismissAlert { .. }
        | Command::Preview(_)
        | Command::Checkpoint
        | Command::Shutdown => false,
    }
}

/// How a sender names itself in `from`: `KIND on HOST pid N`.
pub fn sender(kind: &str) -> String {
    format!(
        "{kind} on {} pid {}",
        crate::engine::machine_name(),
        std::process::id()
    )
}

#[cfg(test)]
#[path = "commands_tests.rs"]
mod tests;
