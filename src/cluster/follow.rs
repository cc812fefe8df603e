//! A worker's follower of the command stream: a thread with its own Redis
//! connection reads the stream (`XREAD BLOCK`, [`READ_BATCH`] entries at a
//! time), hands each command to the engine as one more viewer of the hub,
//! waits for the engine's answer and writes it back.
//!
//! Where to start: after the worker's cursor in Redis (a restarted worker
//! applies nothing twice), else at the stream's beginning. Entries older
//! than the worker (by more than [`REPLAY_GRACE`]) are a replay: only
//! commands that set the crawl's state are applied ([`commands::replays`]),
//! so a worker that joins late has every rule and override but does not
//! run an old `stop`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use crate::cluster::commands::{self, Answer, StreamCommand, StreamError, READ_BATCH};
use crate::control::hub::{CommandSender, Hub};
use crate::engine::control::{Command, CommandId, CommandResult, Target};
use crate::engine::telemetry::{EngineEvent, Snapshot};
use crate::engine::{ClusterTarget, RedisUrl};
use crate::text::strip_control;

/// How long one `XREAD` waits for a new entry (and so how soon the thread
/// notices the engine has stopped).
const BLOCK: Duration = Duration::from_secs(1);
/// How long the engine may take to answer one command.
const ANSWER_WAIT: Duration = Duration::from_secs(30);
/// How often a wait for the engine's answer checks whether to end.
const ANSWER_POLL: Duration = Duration::from_millis(200);
/// Entries younger than this when the follower starts count as live: a
/// `ctl` that saw this worker's first heartbeat may be waiting for it.
const REPLAY_GRACE: Duration = Duration::from_secs(5);
/// How long a rule to remove may take to show in the engine's snapshot.
const RULE_WAIT: Duration = Duration::from_secs(3);
/// Pause before reconnecting after Redis failed.
const RETRY: Duration = Duration::from_secs(1);

/// The follower's thread, which ends once the engine has stopped, or when
/// told to.
pub struct Following {
    stopped: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<()>,
}

impl Following {
    /// Ends the follower and waits for it (at most one read of the stream,
    /// or one command under way), so that nothing answers for the engine
    /// after this returns.
    pub fn stop(self) {
        self.stopped.store(true, Ordering::Relaxed);
        let _ = self.thread.join();
    }
}

/// Starts following the crawl's command stream for `worker`.
/// With `resume`, the engine was started paused and is resumed once the
/// stream is replayed (unless the crawl is paused).
pub fn start(
    hub: &Hub,
    target: &ClusterTarget,
    worker: String,
    resume: bool,
) -> std::io::Result<Following> {
    let viewer = hub.join(false, READ_BATCH * 4);
    let sender = viewer.commands();
    let snapshots = viewer.snapshots.clone();
    let (answers_tx, answers) = mpsc::channel();
    let stopped = Arc::new(AtomicBool::new(false));
    let mut events = viewer.events;
    let stop = stopped.clone();
    // Drains the viewer's events (a full queue would drop answers) and
    // passes the answers on.
    tokio::spawn(async move {
        while let Some(event) = events.recv().await {
            if let EngineEvent::CommandDone(result) = event {
                let _ = answers_tx.send(result);
            }
        }
        stop.store(true, Ordering::Relaxed);
    });
    let follower = Follower {
        url: target.url.clone(),
        crawl: target.crawl.clone(),
        worker,
        sender,
        answers,
        snapshots,
        next_id: 0,
        resume_when_caught_up: Some(resume),
        stopped: stopped.clone(),
    };
    let thread = std::thread::Builder::new()
        .name("command-stream".into())
        .spawn(move || follower.run())?;
    Ok(Following { stopped, thread })
}

struct Follower {
    url: RedisUrl,
    crawl: String,
    worker: String,
    sender: CommandSender,
    answers: mpsc::Receiver<CommandResult>,
    snapshots: tokio::sync::watch::Receiver<Arc<Snapshot>>,
    next_id: u64,
    /// `Some` until the stream is first replayed: whether to resume then.
    resume_when_caught_up: Option<bool>,
    /// Set when the engine has stopped, or the follower is told to end.
    stopped: Arc<AtomicBool>,
}

impl Follower {
    fn run(mut self) {
        let stopped = self.stopped.clone();
        let mut warned = false;
        while !stopped.load(Ordering::Relaxed) {
            match self.follow(&stopped) {
                Ok(()) => return,
                Err(e) if !warned => {
                    // A refused password or command is named, not taken for an outage.
                    let why = match self.url.refusal(e.redis()) {
                        Some(refusal) => refusal,
                        None => e.to_string(),
                    };
                    tracing::warn!("command stream of crawl {}: {why}; retrying", self.crawl);
                    warned = true;
                }
                Err(_) => {}
            }
            std::thread::sleep(RETRY);
        }
    }

    /// Follows the stream until the engine stops (`Ok`) or Redis fails.
    fn follow(&mut self, stopped: &AtomicBool) -> Result<(), FollowError> {
        let mut con = self.url.connect(Duration::from_secs(5))?;
        // Reads block for BLOCK; the socket waits a little longer.
        con.set_read_timeout(Some(BLOCK + Duration::from_secs(5)))?;
        let mut cursor =
            commands::cursor(&mut con, &self.crawl, &self.worker)?.unwrap_or_else(|| "0".into());
        let (secs, micros): (u64, u64) = redis::cmd("TIME").query(&mut con)?;
        let live_from_ms =
            (secs * 1000 + micros / 1000).saturating_sub(REPLAY_GRACE.as_millis() as u64);
        while !stopped.load(Ordering::Relaxed) {
            // Without waiting until caught up, so the crawl starts at once.
            let block = self.resume_when_caught_up.is_none().then_some(BLOCK);
            let batch = commands::read_after(&mut con, &self.crawl, &cursor, block)?;
            let caught_up = batch.len() < READ_BATCH;
            for entry in batch {
                let replay = entry_ms(&entry.entry) < live_from_ms;
                let answer = self.handle(&entry, replay);
                commands::record(
                    &mut con,
                    &self.crawl,
                    &entry.entry,
                    &self.worker,
                    answer.as_ref(),
                )?;
                cursor = entry.entry;
            }
            if caught_up {
                self.start_crawling(&mut con)?;
            }
        }
        Ok(())
    }

    /// Once the stream is replayed, resumes the worker (started paused, so
    /// that it fetches nothing a rule would block) unless the crawl is paused.
    fn start_crawling(&mut self, con: &mut redis::Connection) -> Result<(), FollowError> {
        if self.resume_when_caught_up.take() != Some(true) {
            return Ok(());
        }
        if commands::crawl_paused(con, &self.crawl)? {
            tracing::info!("command stream replayed; the crawl is paused, so this worker waits");
            return Ok(());
        }
        let answer = self.apply(Command::Resume(Target::Global));
        tracing::info!("command stream replayed; crawling: {answer:?}");
        Ok(())
    }

    /// Applies one entry if it is for this worker; returns the answer to record.
    fn handle(&mut self, entry: &StreamCommand, replay: bool) -> Option<Answer> {
        if !entry.is_for(&self.worker) {
            return None;
        }
        let command = match &entry.command {
            Ok(command) => command.clone(),
            Err(why) if replay => {
                tracing::warn!("{why}");
                return None;
            }
            Err(why) => return Some(Err(why.clone())),
        };
        if replay && !commands::replays(&command) {
            return None;
        }
        let command = match self.local_rule(command, entry) {
            Ok(command) => command,
            Err(why) => return Some(Err(why)),
        };
        let answer = self.apply(command.clone());
        tracing::info!(
            "applied {} from {} (stream entry {}){}: {}",
            command.label(),
            strip_control(&entry.from),
            entry.entry,
            if replay { ", replayed" } else { "" },
            match &answer {
                Ok(summary) => summary.clone(),
                Err(why) => format!("refused: {why}"),
            }
        );
        Some(answer)
    }

    /// A shared rule's removal names the rule by its pattern: this worker's
    /// number for it comes from its snapshot (which may lag an `AddRule`
    /// just applied, hence the short wait).
    fn local_rule(&self, command: Command, entry: &StreamCommand) -> Result<Command, String> {
        let Command::RemoveRule { .. } = command else {
            return Ok(command);
        };
        let Some(spec) = &entry.rule else {
            return Err("rule numbers differ between workers: remove a shared rule with `crawldeck ctl --redis URL --crawl NAME unrule N` (N as `crawldeck status --redis URL --crawl NAME` lists it)".into());
        };
        let deadline = std::time::Instant::now() + RULE_WAIT;
        loop {
            let found = self
                .snapshots
                .borrow()
                .rules
                .iter()
                .find(|r| r.spec == *spec)
                .map(|r| r.id);
            match found {
                Some(rule_id) => return Ok(Command::RemoveRule { rule_id }),
                None if std::time::Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(50))
                }
                None => return Err(format!("no rule {:?} on this worker", spec.pattern)),
            }
        }
    }

    /// Sends `command` to the engine and waits for its answer.
    fn apply(&mut self, command: Command) -> Answer {
        self.next_id += 1;
        let id = CommandId(self.next_id);
        self.sender.send(id, command);
        let deadline = std::time::Instant::now() + ANSWER_WAIT;
        loop {
            match self.answers.recv_timeout(ANSWER_POLL) {
                Ok(result) if result.id == id => return result.outcome,
                Ok(_) => continue,
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err("the engine has stopped".into())
                }
                Err(mpsc::RecvTimeoutError::Timeout) if self.stopped.load(Ordering::Relaxed) => {
                    return Err("the engine has stopped".into())
                }
                Err(mpsc::RecvTimeoutError::Timeout) if std::time::Instant::now() < deadline => {}
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    return Err(format!(
                        "the engine did not answer within {}s",
                        ANSWER_WAIT.as_secs()
                    ))
                }
            }
        }
    }
}

/// The server time (ms) at which a stream entry (`MS-SEQ`) was added.
fn entry_ms(id: &str) -> u64 {
    let ms = id.split_once('-').map_or(id, |(ms, _)| ms);
    ms.parse().unwrap_or(0)
}

#[derive(Debug, thiserror::Error)]
enum FollowError {
    #[error(transparent)]
    Stream(#[from] StreamError),
    #[error("connecting to Redis: {0}")]
    Connect(#[from] redis::RedisError),
}

impl FollowError {
    fn redis(&self) -> &redis::RedisError {
        match self {
            FollowError::Stream(e) => e.redis(),
            FollowError::Connect(e) => e,
        }
    }
}

#[cfg(test)]
mod entry_tests {
    use super::entry_ms;

    #[test]
    fn an_entry_id_starts_with_its_time() {
        assert_eq!(entry_ms("1700000000001-7"), 1_700_000_000_001);
        assert_eq!(entry_ms("garbage"), 0);
    }
}

#[cfg(test)]
#[path = "follow_tests.rs"]
mod tests;
