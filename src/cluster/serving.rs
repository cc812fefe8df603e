//! A worker of a shared crawl once the crawl is over here: it stays to
//! answer for the records in its data directory (`pages|links|audit
//! --redis`, the cluster view's reads), so a crawl run on several machines
//! is listed whole from any machine that reaches Redis, without a data
//! directory copied. Meanwhile it beats as `serving` and watches the
//! command stream: `stop` ends it; any other command is refused with the
//! way on. Its cursor stays where the crawl left it, so a later start of
//! the worker applies every command that came meanwhile.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::sync::watch;

use crate::cluster::commands::{self, failed, Answer, StreamCommand, StreamError};
use crate::engine::control::Command;
use crate::engine::{key_prefix, records_at, wall_ms, ClusterTarget, Heartbeat, RedisUrl};

/// How often a serving worker beats; it counts as gone after three missed.
pub const BEAT_EVERY: Duration = Duration::from_secs(1);
/// How long one read of the command stream waits for an entry.
const BLOCK: Duration = Duration::from_millis(500);
/// Pause before reconnecting after Redis failed.
const RETRY: Duration = Duration::from_secs(1);

/// The answer to a `stop` while serving.
pub const STOPPED: &str = "stopped serving its records";

/// Serves a finished worker's records until stopped; dropping it stops too.
pub struct Serving {
    stop: Arc<AtomicBool>,
    asked: watch::Receiver<bool>,
    thread: Option<JoinHandle<()>>,
}

impl Serving {
    /// Beats as `worker` of `target`'s crawl, serving, and follows the
    /// command stream for a `stop`. The records themselves are read by the
    /// worker's `ReadServer`, which goes on as before.
    pub fn start(
        target: &ClusterTarget,
        worker: &str,
        data_dir: &Path,
    ) -> std::io::Result<Serving> {
        let stop = Arc::new(AtomicBool::new(false));
        let (asked_tx, asked) = watch::channel(false);
        let mut watcher = Watcher {
            url: target.url.clone(),
            crawl: target.crawl.clone(),
            worker: worker.to_string(),
            records: records_at(data_dir),
            stale_after: 3 * BEAT_EVERY,
            pages: None,
            cursor: None,
            asked: asked_tx,
        };
        let stopping = stop.clone();
        let thread = std::thread::Builder::new()
            .name("cluster-serving".into())
            .spawn(move || watcher.run(&stopping))?;
        Ok(Serving {
            stop,
            asked,
            thread: Some(thread),
        })
    }

    /// Resolves once a `stop` for this worker came on the stream.
    pub async fn stop_asked(&mut self) {
        let _ = self.asked.wait_for(|asked| *asked).await;
    }
}

impl Drop for Serving {
    /// Stops serving: a last heartbeat, stale at once, says the worker is gone.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

struct Watcher {
    url: RedisUrl,
    crawl: String,
    worker: String,
    records: String,
    stale_after: Duration,
    /// The pages of the crawl's last heartbeat, once read.
    pages: Option<u64>,
    /// The last stream entry seen; `None` until first read.
    cursor: Option<String>,
    asked: watch::Sender<bool>,
}

impl Watcher {
    fn run(&mut self, stop: &AtomicBool) {
        let mut warned = false;
        while !stop.load(Ordering::Relaxed) {
            match self.follow(stop) {
                Ok(()) => break,
                Err(e) if !warned => {
                    tracing::warn!("serving the records of crawl {}: {e}; retrying", self.crawl);
                    warned = true;
                }
                Err(_) => {}
            }
            std::thread::sleep(RETRY);
        }
        if let Err(e) = self.say_gone() {
            tracing::warn!("could not say this worker is gone ({e}); its heartbeat goes stale");
        }
    }

    /// Beats and answers the stream until stopped (`Ok`) or Redis fails.
    fn follow(&mut self, stop: &AtomicBool) -> Result<(), StreamError> {
        let mut con = self
            .url
            .connect(Duration::from_secs(5))
            .map_err(failed("connecting to serve the records"))?;
        con.set_read_timeout(Some(BLOCK + Duration::from_secs(5)))
            .map_err(failed("setting the read timeout"))?;
        let mut after = match self.cursor.take() {
            Some(cursor) => cursor,
            // Entries after the crawl's last one are this watch's to answer.
            None => {
                commands::cursor(&mut con, &self.crawl, &self.worker)?.unwrap_or_else(|| "$".into())
            }
        };
        let result = self.watch(&mut con, &mut after, stop);
        self.cursor = Some(after);
        result
    }

    /// Beats every [`BEAT_EVERY`] and answers the entries after `after`.
    fn watch(
        &mut self,
        con: &mut redis::Connection,
        after: &mut String,
        stop: &AtomicBool,
    ) -> Result<(), StreamError> {
        let mut next_beat = std::time::Instant::now();
        while !stop.load(Ordering::Relaxed) {
            if std::time::Instant::now() >= next_beat {
                self.beat(con, true)?;
                next_beat = std::time::Instant::now() + BEAT_EVERY;
            }
            for entry in commands::read_after(con, &self.crawl, after, Some(BLOCK))? {
                *after = entry.entry.clone();
                if !entry.is_for(&self.worker) {
                    continue;
                }
                let answer = answer_to(&entry, &self.crawl);
                commands::answer_only(con, &self.crawl, &entry.entry, &self.worker, &answer)?;
                if matches!(entry.command, Ok(Command::Shutdown)) {
                    self.asked.send_replace(true);
                }
            }
        }
        Ok(())
    }

    /// Writes this worker's heartbeat: serving, or gone at once. The
    /// crawl's last one gives the pages.
    fn beat(&mut self, con: &mut redis::Connection, serving: bool) -> Result<(), StreamError> {
        let prefix = key_prefix(&self.crawl);
        let pages = match self.pages {
            Some(pages) => pages,
            None => {
                let last: Option<String> = redis::cmd("HGET")
                    .arg(format!("{prefix}beats"))
                    .arg(&self.worker)
                    .query(con)
                    .map_err(failed("reading the heartbeat"))?;
                let last = last.and_then(|json| serde_json::from_str::<Heartbeat>(&json).ok());
                *self.pages.insert(last.map_or(0, |beat| beat.pages))
            }
        };
        let stale_after = if serving {
            self.stale_after
        } else {
            Duration::ZERO
        };
        let beat = Heartbeat {
            worker: self.worker.clone(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            pages,
            at_ms: wall_ms(),
            stale_after_ms: stale_after.as_millis() as u64,
            records: self.records.clone(),
            pid: std::process::id(),
            serving,
            ..Heartbeat::default()
        };
        beat.publish(con, &prefix)
            .map_err(failed("publishing the heartbeat"))
    }

    fn say_gone(&mut self) -> Result<(), StreamError> {
        let mut con = (self.url.connect(Duration::from_secs(5)))
            .map_err(failed("connecting to say the worker is gone"))?;
        self.beat(&mut con, false)
    }
}

/// What a serving worker answers to a command of the stream.
fn answer_to(entry: &StreamCommand, crawl: &str) -> Answer {
    match &entry.command {
        Ok(Command::Shutdown) => Ok(STOPPED.into()),
        Ok(command) => Err(format!(
            "the crawl is over on this worker, which only serves its records, so it cannot {}; \
             stop the workers (`crawldeck ctl --redis URL --crawl {crawl} stop`) and start them again to crawl on",
            command.label()
        )),
        Err(why) => Err(why.clone()),
    }
}

#[cfg(test)]
#[path = "serving_tests.rs"]
mod tests;
