//! The connection to Redis, the crawl's key prefix and clock, and the
//! worker's identity.

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use redis::{Connection, ScriptInvocation};
use tokio::time::Instant;

use crate::engine::store::StoreError;

/// How long a connect, read or write may take before the frontier reports
/// the server as unreachable.
const IO_TIMEOUT: Duration = Duration::from_secs(5);
/// File in the data directory naming this worker, so a restarted worker
/// takes its own leases back at once.
const WORKER_FILE: &str = "cluster-worker";
/// File in the data directory naming the shared crawl it works for, so it is
/// not resumed by mistake as a crawl of its own.
const CRAWL_FILE: &str = "cluster-crawl";

/// Notes in `data_dir` which shared crawl it works for.
pub(super) fn record_crawl(data_dir: &Path, url: &str, crawl: &str) -> Result<(), StoreError> {
    let path = data_dir.join(CRAWL_FILE);
    crate::engine::store::private::write_private(&path, format!("{url}\n{crawl}\n").as_bytes())
        .map_err(|e| StoreError::Remote {
            op: "recording the shared crawl",
            message: format!("{}: {e}", path.display()),
        })
}

/// `Err` with what to run instead if `data_dir` is a worker of a shared crawl.
pub fn refuse_worker_dir(data_dir: &Path) -> Result<(), String> {
    let Ok(text) = std::fs::read_to_string(data_dir.join(CRAWL_FILE)) else {
        return Ok(());
    };
    let mut lines = text.lines();
    let (url, crawl) = (
        lines.next().unwrap_or("URL"),
        lines.next().unwrap_or("NAME"),
    );
    Err(format!(
        "{} is a worker of the shared crawl {crawl}; resume it with `crawldeck crawl --headless --redis {url} --crawl {crawl} --data {}`",
        data_dir.display(),
        data_dir.display()
    ))
}

/// A crawl name usable in Redis keys: 1 to 64 of `A-Z a-z 0-9 - _ .`.
pub fn validate_crawl_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "crawl name {name:?} is not usable: use 1 to 64 letters, digits, '-', '_' or '.'"
        ))
    }
}

/// The key prefix of one crawl; the braces keep all its keys in one Redis
/// Cluster slot, as multi-key scripts need.
pub fn key_prefix(crawl: &str) -> String {
    format!("crawldeck:{{{crawl}}}:")
}

pub(super) fn remote(op: &'static str) -> impl FnOnce(redis::RedisError) -> StoreError {
    move |e| StoreError::Remote {
        op,
        message: e.to_string(),
    }
}

/// A connection that reconnects on the next call after a failure.
pub(super) struct Link {
    client: redis::Client,
    conn: Option<Connection>,
}

impl Link {
    pub(super) fn open(url: &str) -> Result<Link, StoreError> {
        let client = redis::Client::open(url).map_err(remote("opening the Redis URL"))?;
        let mut link = Link { client, conn: None };
        link.conn()?;
        Ok(link)
    }

    pub(super) fn conn(&mut self) -> Result<&mut Connection, StoreError> {
        if self.conn.is_none() {
            let conn = self
                .client
                .get_connection_with_timeout(IO_TIMEOUT)
                .map_err(remote("connecting"))?;
            conn.set_read_timeout(Some(IO_TIMEOUT))
                .map_err(remote("connecting"))?;
            conn.set_write_timeout(Some(IO_TIMEOUT))
                .map_err(remote("connecting"))?;
            self.conn = Some(conn);
        }
        Ok(self.conn.as_mut().expect("connected just above"))
    }

    /// Runs a script; a failed call drops the connection so the next one reconnects.
    pub(super) fn run(
        &mut self,
        op: &'static str,
        invocation: &ScriptInvocation<'_>,
    ) -> Result<Vec<Vec<u8>>, StoreError> {
        let result = invocation.invoke::<Vec<Vec<u8>>>(self.conn()?);
        self.check(op, result)
    }

    /// Runs a command or pipeline the same way.
    pub(super) fn query<T: redis::FromRedisValue>(
        &mut self,
        op: &'static str,
        f: impl FnOnce(&mut Connection) -> redis::RedisResult<T>,
    ) -> Result<T, StoreError> {
        let result = f(self.conn()?);
        self.check(op, result)
    }

    fn check<T>(
        &mut self,
        op: &'static str,
        result: redis::RedisResult<T>,
    ) -> Result<T, StoreError> {
        if let Err(e) = &result {
            if e.is_io_error() || e.is_connection_dropped() || e.is_timeout() {
                self.conn = None;
            }
        }
        result.map_err(remote(op))
    }
}

/// Converts between this process's `Instant`s and the crawl's shared clock:
/// nanoseconds since the crawl's epoch (wall clock), exact below 2^53 ns.
#[derive(Debug, Clone, Copy)]
pub(super) struct Clock {
    base: Instant,
    base_ns: i128,
}

impl Clock {
    pub(super) fn new(epoch_ms: i128) -> Clock {
        let wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i128);
        Clock {
            base: Instant::now(),
            base_ns: wall - epoch_ms * 1_000_000,
        }
    }

    pub(super) fn score(&self, at: Instant) -> i128 {
        if at >= self.base {
            self.base_ns + (at - self.base).as_nanos() as i128
        } else {
            self.base_ns - (self.base - at).as_nanos() as i128
        }
    }

    pub(super) fn instant(&self, score: i128) -> Instant {
        let delta = score - self.base_ns;
        let magnitude = Duration::from_nanos(delta.unsigned_abs().min(u64::MAX as u128) as u64);
        if delta >= 0 {
            self.base + magnitude
        } else {
            self.base.checked_sub(magnitude).unwrap_or(self.base)
        }
    }
}

/// Parses a score Redis returned (`%.17g`) as whole nanoseconds.
pub(super) fn parse_score(bytes: &[u8]) -> Option<i128> {
    let text = std::str::from_utf8(bytes).ok()?;
    text.parse::<i128>()
        .ok()
        .or_else(|| text.parse::<f64>().ok().map(|f| f as i128))
}

/// This worker's name: kept in the data directory, made once.
pub fn worker_id(data_dir: &Path) -> Result<String, StoreError> {
    let path = data_dir.join(WORKER_FILE);
    let io = |e: std::io::Error| StoreError::Remote {
        op: "reading the worker name",
        message: format!("{}: {e}", path.display()),
    };
    match std::fs::read_to_string(&path) {
        Ok(text) if !text.trim().is_empty() => return Ok(text.trim().to_string()),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io(e)),
    }
    let id = uuid::Uuid::new_v4().simple().to_string()[..12].to_string();
    crate::engine::store::private::write_private(&path, id.as_bytes()).map_err(io)?;
    Ok(id)
}
