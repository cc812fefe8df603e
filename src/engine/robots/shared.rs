//! robots.txt once per origin per TTL across the workers of a shared crawl.
//!
//! A worker that needs an origin's robots.txt looks in Redis first
//! (`PREFIX robots:ORIGIN`, a hash: `kind` body/allow/disallow, `body`,
//! `status`, `at_ms`, expiring with the answer's TTL). On a miss it takes
//! `PREFIX robots-lock:ORIGIN` (`SET NX PX`), fetches, stores the answer
//! and drops the lock; a worker that finds the lock taken waits for the
//! answer, and fetches itself only if none comes before the lock's time is
//! up. Unavailable answers are not shared: each worker backs off on its own.
//! If Redis fails, the worker fetches on its own (politeness stays safe: the
//! request is made under the host's lease).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use redis::Connection;
use url::Url;

use super::{complete_lines, fetch_robots_with_body, RobotsFetch, RobotsRules, RobotsVerdict};
use crate::engine::config::RobotsConfig;
use crate::engine::fetch::{Fetcher, Response};

const IO_TIMEOUT: Duration = Duration::from_secs(5);
/// How often a worker waiting on another's fetch looks for its answer.
const WAIT_POLL: Duration = Duration::from_millis(50);
/// The lock outlives one fetch by this much.
const LOCK_SLACK: Duration = Duration::from_secs(2);

/// An answer as workers share it.
#[derive(Debug, Clone, PartialEq)]
enum Shared {
    /// A file to parse (each worker parses it for its own product token).
    Body(Vec<u8>),
    AllowAll,
    DisallowAll,
}

/// The crawl's robots.txt cache in Redis, with a connection of its own.
pub(crate) struct SharedRobots {
    client: redis::Client,
    conn: Mutex<Option<Connection>>,
    prefix: String,
}

impl SharedRobots {
    /// The cache under the crawl's key `prefix` on the server at `url`.
    pub(crate) fn new(
        url: &crate::engine::frontier::RedisUrl,
        prefix: String,
    ) -> Result<SharedRobots, redis::RedisError> {
        Ok(SharedRobots {
            client: url.client()?,
            conn: Mutex::new(None),
            prefix,
        })
    }

    /// Runs `f` on the connection (made on first use); a failure drops it.
    fn call<T>(
        &self,
        f: impl FnOnce(&mut Connection) -> redis::RedisResult<T>,
    ) -> redis::RedisResult<T> {
        let mut guard = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        if guard.is_none() {
            let conn = self.client.get_connection_with_timeout(IO_TIMEOUT)?;
            conn.set_read_timeout(Some(IO_TIMEOUT))?;
            conn.set_write_timeout(Some(IO_TIMEOUT))?;
            *guard = Some(conn);
        }
        let result = f(guard.as_mut().expect("connected just above"));
        if result.is_err() {
            *guard = None;
        }
        result
    }

    fn key(&self, origin: &str) -> String {
        format!("{}robots:{origin}", self.prefix)
    }

    fn lock_key(&self, origin: &str) -> String {
        format!("{}robots-lock:{origin}", self.prefix)
    }

    /// The shared answer for `origin` and how long it stays valid.
    fn lookup(&self, origin: &str) -> redis::RedisResult<Option<(Shared, Duration)>> {
        let key = self.key(origin);
        let (kind, body, ttl_ms): (Option<String>, Option<Vec<u8>>, i64) = self.call(|c| {
            redis::pipe()
                .hget(&key, "kind")
                .hget(&key, "body")
                .pttl(&key)
                .query(c)
        })?;
        let shared = match (kind.as_deref(), body) {
            (Some("body"), Some(body)) => Shared::Body(body),
            (Some("allow"), _) => Shared::AllowAll,
            (Some("disallow"), _) => Shared::DisallowAll,
            _ => return Ok(None),
        };
        // No expiry (-1) or gone meanwhile (-2): treat as a miss.
        if ttl_ms <= 0 {
            return Ok(None);
        }
        Ok(Some((shared, Duration::from_millis(ttl_ms as u64))))
    }

    fn try_lock(&self, origin: &str, hold: Duration) -> redis::RedisResult<bool> {
        let key = self.lock_key(origin);
        let set: Option<String> = self.call(|c| {
            redis::cmd("SET")
                .arg(&key)
                .arg(1)
                .arg("NX")
                .arg("PX")
                .arg(hold.as_millis() as u64)
                .query(c)
        })?;
        Ok(set.is_some())
    }

    /// Stores an answer (when it is one to share) and drops the lock.
    fn store(
        &self,
        origin: &str,
        answer: Option<(&Shared, u16)>,
        ttl: Duration,
    ) -> redis::RedisResult<()> {
        let (key, lock) = (self.key(origin), self.lock_key(origin));
        self.call(|c| {
            let mut pipe = redis::pipe();
            pipe.atomic();
            if let (Some((shared, status)), true) = (answer, ttl >= Duration::from_millis(1)) {
                let (kind, body): (&str, &[u8]) = match shared {
                    Shared::Body(body) => ("body", body),
                    Shared::AllowAll => ("allow", b""),
                    Shared::DisallowAll => ("disallow", b""),
                };
                pipe.del(&key).ignore();
                pipe.hset_multiple(
                    &key,
                    &[
                        ("kind", kind.as_bytes()),
                        ("body", body),
                        ("status", status.to_string().as_bytes()),
                        ("at_ms", wall_ms().to_string().as_bytes()),
                    ],
                )
                .ignore();
                pipe.pexpire(&key, ttl.as_millis() as i64).ignore();
            }
            pipe.del(&lock).ignore();
            pipe.query(c)
        })
    }
}

fn wall_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Runs a Redis call off the async runtime.
async fn off_runtime<T: Send + 'static>(
    cache: &Arc<SharedRobots>,
    f: impl FnOnce(&SharedRobots) -> redis::RedisResult<T> + Send + 'static,
) -> redis::RedisResult<T> {
    let cache = cache.clone();
    tokio::task::spawn_blocking(move || f(&cache))
        .await
        .unwrap_or_else(|e| {
            Err(redis::RedisError::from(std::io::Error::other(
                e.to_string(),
            )))
        })
}

/// The verdict for `origin` (and its TTL): from the crawl's cache, else
/// fetched once for the whole cluster (with the responses received).
pub(crate) async fn fetch_shared(
    cache: &Arc<SharedRobots>,
    fetcher: &Fetcher,
    origin: &Url,
    cfg: &RobotsConfig,
    product_token: &str,
) -> (RobotsVerdict, Duration, Vec<Response>) {
    let name = origin.origin().ascii_serialization();
    let hold = fetcher.total_timeout() + LOCK_SLACK;
    let give_up = tokio::time::Instant::now() + hold;
    let mut locked = false;
    loop {
        let key = name.clone();
        match off_runtime(cache, move |c| c.lookup(&key)).await {
            Ok(Some((shared, ttl))) => {
                if locked {
                    // Stored between our miss and our lock: hand the lock back.
                    let key = name.clone();
                    let _ = off_runtime(cache, move |c| c.store(&key, None, ttl)).await;
                }
                return (
                    verdict_of(shared, cfg, product_token).await,
                    ttl,
                    Vec::new(),
                );
            }
            Ok(None) if locked => break,
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(origin = %name, "shared robots.txt cache unreadable, fetching alone: {e}");
                return fetch_alone(fetcher, origin, cfg, product_token).await;
            }
        }
        let key = name.clone();
        match off_runtime(cache, move |c| c.try_lock(&key, hold)).await {
            // Looked up once more under the lock: the holder may have just stored it.
            Ok(true) => locked = true,
            Ok(false) if tokio::time::Instant::now() < give_up => {
                tokio::time::sleep(WAIT_POLL).await;
            }
            // Another worker's fetch is overdue (or Redis fails): fetch alone.
            _ => return fetch_alone(fetcher, origin, cfg, product_token).await,
        }
    }
    let RobotsFetch {
        verdict,
        ttl,
        statuses,
        body,
        responses,
    } = fetch_robots_with_body(fetcher, origin, cfg, product_token).await;
    let shared = match (&verdict, body) {
        (RobotsVerdict::Parsed(_), Some(body)) => Some(Shared::Body(body)),
        (RobotsVerdict::AllowAll, _) => Some(Shared::AllowAll),
        (RobotsVerdict::DisallowAll, _) => Some(Shared::DisallowAll),
        _ => None,
    };
    let status = statuses.last().copied().unwrap_or(super::NO_RESPONSE);
    let result = off_runtime(cache, move |c| {
        c.store(&name, shared.as_ref().map(|s| (s, status)), ttl)
    })
    .await;
    if let Err(e) = result {
        tracing::warn!(%origin, "could not share robots.txt: {e}");
    }
    (verdict, ttl, responses)
}

async fn fetch_alone(
    fetcher: &Fetcher,
    origin: &Url,
    cfg: &RobotsConfig,
    product_token: &str,
) -> (RobotsVerdict, Duration, Vec<Response>) {
    let fetch = fetch_robots_with_body(fetcher, origin, cfg, product_token).await;
    (fetch.verdict, fetch.ttl, fetch.responses)
}

async fn verdict_of(shared: Shared, cfg: &RobotsConfig, product_token: &str) -> RobotsVerdict {
    match shared {
        Shared::AllowAll => RobotsVerdict::AllowAll,
        Shared::DisallowAll => RobotsVerdict::DisallowAll,
        Shared::Body(body) => {
            let (token, max_delay, max_size) =
                (product_token.to_string(), cfg.max_crawl_delay, cfg.max_size);
            let parsed = tokio::task::spawn_blocking(move || {
                RobotsRules::parse(complete_lines(&body, max_size), &token, max_delay)
            })
            .await;
            match parsed {
                Ok(rules) => RobotsVerdict::Parsed(rules),
                Err(_) => RobotsVerdict::Unavailable { retry_after: None },
            }
        }
    }
}

#[cfg(test)]
#[path = "tests/shared.rs"]
mod tests;
