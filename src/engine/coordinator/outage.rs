//! The shared frontier out of reach (Redis stopped, restarting, loading, or
//! not answering): the crawl pauses with the reason, requests in flight
//! finish and their writes are held by the frontier, and the loop retries
//! with backoff; once the server answers, the held writes are made and the
//! crawl resumes by itself. Nothing new is dispatched meanwhile, so what is
//! held is bounded by what was in flight.

use std::time::Duration;

use tokio::time::Instant;

use super::results::record_for;
use super::Coordinator;
use crate::engine::control::{Command, HostKey};
use crate::engine::store::{PageOutcome, StoreError};
use crate::engine::telemetry::{CrawlState, Level};

/// The first retry after the server is found out of reach.
const FIRST_RETRY: Duration = Duration::from_millis(500);
/// Retries are never further apart than this.
const MAX_RETRY: Duration = Duration::from_secs(30);

/// The wait before retry number `attempt` (0 is the first): doubling, capped.
pub(super) fn backoff(attempt: u32) -> Duration {
    FIRST_RETRY
        .saturating_mul(1u32 << attempt.min(16))
        .min(MAX_RETRY)
}

/// Why the crawl waits for the shared frontier, and when it tries again.
#[derive(Debug)]
pub(super) struct Outage {
    reason: String,
    since: Instant,
    attempts: u32,
    retry_at: Instant,
    /// Hosts given up meanwhile whose queued URLs are still to be recorded.
    unfinished: Vec<(HostKey, PageOutcome)>,
}

impl Outage {
    fn new(reason: String, now: Instant) -> Outage {
        Outage {
            reason,
            since: now,
            attempts: 0,
            retry_at: now + backoff(0),
            unfinished: Vec::new(),
        }
    }

    /// When the loop must try the server again.
    pub(super) fn retry_at(&self) -> Instant {
        self.retry_at
    }

    fn failed_again(&mut self, reason: String, now: Instant) {
        self.reason = reason;
        self.attempts += 1;
        self.retry_at = now + backoff(self.attempts);
    }

    /// `Redis at URL: connection refused; retrying in 4 s`.
    pub(super) fn describe(&self, now: Instant) -> String {
        let wait = self.retry_at.saturating_duration_since(now);
        format!("{}; retrying in {}", self.reason, seconds(wait))
    }
}

/// `0.5 s`, `4 s`, `30 s`.
fn seconds(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{:.1} s", d.as_secs_f64())
    } else {
        format!("{} s", d.as_secs_f64().round() as u64)
    }
}

/// Commands that read or rewrite the shared queues wholesale: refused while
/// the server is out of reach (the rest only change this worker, or are
/// writes the frontier holds).
pub(super) fn needs_frontier(command: &Command) -> bool {
    matches!(
        command,
        Command::AddRule(_)
            | Command::RemoveRule { .. }
            | Command::AddSeed(_)
            | Command::AcceptAlert { .. }
            | Command::DismissAlert { .. }
            | Command::Preview(_)
    )
}

impl Coordinator {
    /// The shared frontier's server is out of reach: pause until it answers.
    pub(super) fn frontier_unreachable(&mut self, e: StoreError) {
        if self.run.outage.is_some() {
            return;
        }
        let now = Instant::now();
        let outage = Outage::new(e.to_string(), now);
        self.outbox.log(
            Level::Error,
            format!(
                "{}; crawl paused: requests in flight finish and their results are held",
                outage.describe(now)
            ),
        );
        self.run.outage = Some(outage);
        self.set_state(CrawlState::Paused);
    }

    /// Once a turn: notices an outage the frontier met in a write it held,
    /// and retries the server when it is due.
    pub(super) fn watch_frontier(&mut self, now: Instant) {
        match &self.run.outage {
            None => {
                if let Some(e) = self.frontier.unreachable() {
                    self.frontier_unreachable(e);
                }
            }
            Some(outage) if outage.retry_at <= now => self.retry_frontier(now),
            Some(_) => {}
        }
    }

    /// A host given up while the server is out of reach: its queued URLs
    /// are recorded (and leave the shared queues) once it answers.
    pub(super) fn finish_after_outage(&mut self, host: &str, outcome: PageOutcome) {
        if let Some(outage) = self.run.outage.as_mut() {
            outage.unfinished.push((host.to_string(), outcome));
        }
    }

    /// Records the queued URLs of a host given up during the outage.
    fn drop_given_up(&mut self, host: &str, outcome: PageOutcome) {
        let dropped = self
            .frontier
            .drop_host(host, &|e| record_for(e, outcome.clone()));
        match dropped {
            Ok(n) => self.outbox.log(
                Level::Info,
                format!("{host}: {n} queued URL(s) recorded as not crawled after the outage"),
            ),
            Err(e) if e.is_unreachable() => {
                self.storage_failed(&format!("recording the queued URLs of {host}"), e);
                self.finish_after_outage(host, outcome);
            }
            Err(e) => self.storage_failed(&format!("recording the queued URLs of {host}"), e),
        }
    }

    /// Why the crawl waits for the shared frontier, while it does.
    pub(super) fn outage_line(&self) -> Option<String> {
        Some(self.run.outage.as_ref()?.describe(Instant::now()))
    }

    /// Why a command that needs the shared queues is refused now.
    pub(super) fn refusal_while_unreachable(&self) -> Option<String> {
        Some(format!(
            "{}; the crawl is paused until it answers: try again then",
            self.outage_line()?
        ))
    }

    fn retry_frontier(&mut self, now: Instant) {
        // Finished pages waiting for their group go first, in order.
        self.write_group();
        match self.frontier.reconnect() {
            Ok(held) => {
                let Some(outage) = self.run.outage.take() else {
                    return;
                };
                let down_for = seconds(now.saturating_duration_since(outage.since));
                self.outbox.log(
                    Level::Info,
                    format!(
                        "shared frontier answers again after {down_for}: {held} held write(s) made; crawl resumed"
                    ),
                );
                self.set_state(if self.run.draining {
                    CrawlState::Draining
                } else if self.run.paused {
                    CrawlState::Paused
                } else {
                    CrawlState::Running
                });
                for (host, outcome) in outage.unfinished {
                    self.drop_given_up(&host, outcome);
                }
            }
            Err(e) if e.is_unreachable() => {
                if let Some(outage) = self.run.outage.as_mut() {
                    outage.failed_again(e.to_string(), now);
                    let line = outage.describe(now);
                    self.outbox.log(Level::Warn, line);
                }
            }
            Err(e) => {
                self.run.outage = None;
                self.storage_failed("writing the results held during the outage", e);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::redis_server::RedisServer;
    use crate::engine::frontier::ClusterTarget;
    use crate::engine::telemetry::EngineEvent;

    /// The log lines the coordinator sent so far.
    fn logged(handle: &mut crate::engine::EngineHandle) -> Vec<String> {
        let mut lines = Vec::new();
        while let Ok(event) = handle.events.try_recv() {
            if let EngineEvent::Log { message, .. } = event {
                lines.push(message);
            }
        }
        lines
    }

    #[tokio::test(start_paused = true)]
    async fn a_worker_pauses_while_redis_is_away_retries_with_backoff_and_resumes() {
        let mut server = RedisServer::for_test();
        let dir = tempfile::tempdir().unwrap();
        let options = crate::engine::EngineOptions {
            cluster: Some(ClusterTarget {
                url: server.redis_url(),
                crawl: "paused".into(),
                lease_ttl: Duration::from_secs(30),
                host_affinity: crate::engine::DEFAULT_HOST_AFFINITY,
            }),
            ..Default::default()
        };
        let (mut handle, ends) = crate::engine::EngineHandle::channel();
        let cfg = super::super::closed_port_config();
        let mut c = super::super::boot::build(cfg, dir.path(), ends, options).unwrap();
        let start = Instant::now();
        c.next_wakeup(start);
        assert!(c.run.outage.is_none());
        logged(&mut handle);

        server.kill9().unwrap();
        c.next_wakeup(start);
        let url = server.url();
        assert_eq!(c.run.state, CrawlState::Paused);
        assert!(
            c.run.fault.is_none(),
            "no storage fault: the crawl resumes by itself"
        );
        assert!(!c.run.draining, "headless too, the worker waits");
        let first = format!("Redis at {url}: connection lost; retrying in 0.5 s");
        assert_eq!(c.publish().outage.as_deref(), Some(first.as_str()));
        let log = logged(&mut handle);
        assert!(log.iter().any(|l| l.starts_with(&first)), "{log:?}");
        assert_eq!(
            c.next_wakeup(start),
            Some(start + backoff(0)),
            "only the retry"
        );
        assert_eq!(c.finished(), None, "a crawl waiting for Redis is not over");
        let refused = super::super::commands::handle(
            &mut c,
            crate::engine::control::CommandId(1),
            Command::AddSeed("http://127.0.0.1:9/x".into()),
        );
        assert!(
            matches!(&refused, Some(Err(e)) if e.contains("try again then")),
            "{refused:?}"
        );

        // Still down: each retry waits twice as long.
        for attempt in 0..3 {
            tokio::time::advance(backoff(attempt)).await;
            c.watch_frontier(Instant::now());
            let waited = c.run.outage.as_ref().expect("still away").retry_at() - Instant::now();
            assert_eq!(waited, backoff(attempt + 1));
        }
        let log = logged(&mut handle);
        assert_eq!(
            log.last().map(String::as_str),
            Some(format!("Redis at {url}: connection refused; retrying in 4 s").as_str())
        );

        server.restart().unwrap();
        tokio::time::advance(backoff(3)).await;
        c.watch_frontier(Instant::now());
        assert!(c.run.outage.is_none());
        assert_eq!(c.run.state, CrawlState::Running);
        assert!(c.publish().outage.is_none());
        let log = logged(&mut handle);
        assert!(
            log.iter()
                .any(|l| l.starts_with("shared frontier answers again after 8 s")),
            "{log:?}"
        );
    }

    #[test]
    fn retries_double_from_half_a_second_up_to_thirty() {
        let waits: Vec<f64> = (0..9).map(|n| backoff(n).as_secs_f64()).collect();
        assert_eq!(waits, [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0, 30.0]);
        assert_eq!(backoff(u32::MAX), MAX_RETRY);
    }

    #[test]
    fn the_reason_says_when_the_next_try_is() {
        let now = Instant::now();
        let mut outage = Outage::new(
            "Redis at redis://127.0.0.1:1/0: connection refused".into(),
            now,
        );
        assert_eq!(
            outage.describe(now),
            "Redis at redis://127.0.0.1:1/0: connection refused; retrying in 0.5 s"
        );
        for _ in 0..3 {
            outage.failed_again(
                "Redis at redis://127.0.0.1:1/0: connection refused".into(),
                now,
            );
        }
        assert_eq!(outage.retry_at(), now + Duration::from_secs(4));
        assert!(outage.describe(now).ends_with("retrying in 4 s"));
    }
}
