//! The connection to Redis, the crawl's key prefix and clock, and the
//! worker's identity.

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use redis::{Connection, ScriptInvocation};
use tokio::time::Instant;

use super::RedisUrl;
use crate::engine::store::StoreError;

/// How long a read or write may take before the server counts as
/// unreachable: a hung server must not hold the crawl loop.
const IO_TIMEOUT: Duration = Duration::from_secs(5);
/// File in the data directory naming this worker, so a restarted worker
/// takes its own leases back at once.
const WORKER_FILE: &str = "cluster-worker";
/// File in the data directory naming the shared crawl it works for, so it is
/// not resumed by mistake as a crawl of its own.
const CRAWL_FILE: &str = "cluster-crawl";

/// Notes in `data_dir` which shared crawl it works for.
/// The URL is written without its password.
pub(super) fn record_crawl(data_dir: &Path, url: &RedisUrl, crawl: &str) -> Result<(), StoreError> {
    let path = data_dir.join(CRAWL_FILE);
    let url = url.without_password();
    crate::engine::store::private::write_private(&path, format!("{url}\n{crawl}\n").as_bytes())
        .map_err(|e| StoreError::Remote {
            op: "recording the shared crawl",
            message: format!("{}: {e}", path.display()),
        })
}

/// `(redis URL, crawl name)` if `data_dir` is a worker of a shared crawl.
pub fn shared_crawl(data_dir: &Path) -> Option<(String, String)> {
    let text = std::fs::read_to_string(data_dir.join(CRAWL_FILE)).ok()?;
    let mut lines = text.lines();
    Some((
        lines.next().unwrap_or("URL").to_string(),
        lines.next().unwrap_or("NAME").to_string(),
    ))
}

/// `Err` with what to run instead if `data_dir` is a worker of a shared crawl.
pub fn refuse_worker_dir(data_dir: &Path) -> Result<(), String> {
    let Some((url, crawl)) = shared_crawl(data_dir) else {
        return Ok(());
    };
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

/// How long connecting may take before the server counts as unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// The connection to Redis. A call that fails for a connection reason marks
/// the link down: later calls fail at once, without a round trip, until
/// [`Link::reconnect`] succeeds (the frontier decides what waits meanwhile).
pub(super) struct Link {
    client: redis::Client,
    conn: Option<Connection>,
    url: RedisUrl,
    /// The server's URL without credentials, for messages.
    server: String,
    /// Why the server is out of reach, while it is.
    down: Option<String>,
}

impl Link {
    pub(super) fn open(url: &RedisUrl) -> Result<Link, StoreError> {
        let client = url.client().map_err(remote("opening the Redis URL"))?;
        let mut link = Link {
            client,
            conn: None,
            url: url.clone(),
            server: url.to_string(),
            down: None,
        };
        link.conn()?;
        Ok(link)
    }

    /// Refuses a server older than the scripts need (`SMISMEMBER`: 6.2).
    pub(super) fn check_version(&mut self) -> Result<(), StoreError> {
        let info: String = self.query("reading the server's version", |c| {
            redis::cmd("INFO").arg("server").query(c)
        })?;
        let version = info
            .lines()
            .find_map(|line| line.strip_prefix("redis_version:"))
            .unwrap_or("")
            .trim();
        if at_least(version, MIN_VERSION) {
            return Ok(());
        }
        Err(StoreError::Remote {
            op: "checking the server's version",
            message: format!(
                "{} runs Redis {version:?}; crawldeck needs {}.{} or later",
                self.server, MIN_VERSION.0, MIN_VERSION.1
            ),
        })
    }

    /// The server's URL without credentials.
    pub(super) fn server(&self) -> &str {
        &self.server
    }

    /// Why the server is out of reach, if it is.
    pub(super) fn down(&self) -> Option<&str> {
        self.down.as_deref()
    }

    /// Connects again and checks the server answers (`PING`; a server still
    /// loading its data answers `LOADING`); clears the down mark on success.
    pub(super) fn reconnect(&mut self) -> Result<(), StoreError> {
        self.conn = None;
        let conn = self.connect()?;
        let result = redis::cmd("PING").query::<()>(conn);
        self.down = None;
        self.check("checking the server answers", result)
    }

    fn connect(&mut self) -> Result<&mut Connection, StoreError> {
        if self.conn.is_none() {
            let connected = self
                .client
                .get_connection_with_timeout(CONNECT_TIMEOUT)
                .and_then(|conn| {
                    conn.set_read_timeout(Some(IO_TIMEOUT))?;
                    conn.set_write_timeout(Some(IO_TIMEOUT))?;
                    Ok(conn)
                });
            match connected {
                Ok(conn) => self.conn = Some(conn),
                Err(e) => return Err(self.failed("connecting", e)),
            }
        }
        Ok(self.conn.as_mut().expect("connected just above"))
    }

    fn conn(&mut self) -> Result<&mut Connection, StoreError> {
        if let Some(reason) = &self.down {
            return Err(StoreError::Unreachable {
                server: self.server.clone(),
                reason: reason.clone(),
            });
        }
        self.connect()
    }

    /// Runs a script.
    pub(super) fn run(
        &mut self,
        op: &'static str,
        invocation: &ScriptInvocation<'_>,
    ) -> Result<Vec<Vec<u8>>, StoreError> {
        let result = invocation.invoke::<Vec<Vec<u8>>>(self.conn()?);
        self.check(op, result)
    }

    /// Runs several scripts in one pipeline: one answer each. Scripts the
    /// server lost (a restart) are loaded and the pipeline sent again: every
    /// call failed alike, and the scripts' writes bear a replay anyway.
    pub(super) fn run_all(
        &mut self,
        op: &'static str,
        invocations: &[ScriptInvocation<'_>],
    ) -> Result<Vec<Vec<Vec<u8>>>, StoreError> {
        let mut pipe = redis::pipe();
        for inv in invocations {
            pipe.invoke_script(inv);
        }
        let result = {
            let conn = self.conn()?;
            match pipe.query::<Vec<Vec<Vec<u8>>>>(conn) {
                Err(e) if e.kind() == redis::ErrorKind::NoScriptError => invocations
                    .iter()
                    .try_for_each(|inv| inv.load(conn).map(drop))
                    .and_then(|()| pipe.query(conn)),
                other => other,
            }
        };
        self.check(op, result)
    }

    /// Runs a command or pipeline.
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
        result.map_err(|e| self.failed(op, e))
    }

    /// The error to report; a connection failure drops the connection and
    /// marks the link down.
    fn failed(&mut self, op: &'static str, e: redis::RedisError) -> StoreError {
        if let Some(message) = self.url.refusal(&e) {
            return StoreError::Remote { op, message };
        }
        match unreachable_reason(&e) {
            Some(reason) => {
                self.conn = None;
                self.down = Some(reason.clone());
                StoreError::Unreachable {
                    server: self.server.clone(),
                    reason,
                }
            }
            None => remote(op)(e),
        }
    }
}

/// A few words on why the server is out of reach, or `None` for an error
/// that retrying would not cure (a script error, a wrong type).
/// `ZRANGE` bounds of a sorted set's first `n` members: `1 0` is empty,
/// where `0 -1` would be every member.
pub(super) fn first_members(n: usize) -> (usize, isize) {
    (usize::from(n == 0), n.max(1) as isize - 1)
}

/// The oldest Redis the scripts run on.
const MIN_VERSION: (u32, u32) = (6, 2);

/// `version` (`major.minor.patch`) is `min` or later.
fn at_least(version: &str, min: (u32, u32)) -> bool {
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let major = parts.next().unwrap_or(0);
    let minor = parts.next().unwrap_or(0);
    (major, minor) >= min
}

pub(super) fn unreachable_reason(e: &redis::RedisError) -> Option<String> {
    use redis::ErrorKind;
    let reason = if e.is_connection_refusal() {
        "connection refused".to_string()
    } else if e.is_timeout() {
        format!("no answer within {} s", IO_TIMEOUT.as_secs())
    } else if e.is_connection_dropped() {
        "connection lost".to_string()
    } else if e.kind() == ErrorKind::BusyLoadingError {
        "loading its data after a restart".to_string()
    } else if matches!(
        e.kind(),
        ErrorKind::TryAgain | ErrorKind::MasterDown | ErrorKind::ClusterDown
    ) || e.is_io_error()
    {
        e.to_string()
    } else {
        return None;
    };
    Some(reason)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_members_of_none_is_an_empty_range() {
        assert_eq!(first_members(0), (1, 0));
        assert_eq!(first_members(1), (0, 0));
        assert_eq!(first_members(5), (0, 4));
    }

    #[test]
    fn servers_older_than_6_2_are_refused() {
        for old in ["6.0.16", "5.0.14", "6.1.0", "", "garbage"] {
            assert!(!at_least(old, MIN_VERSION), "{old}");
        }
        for new in ["6.2.0", "6.2.14", "7.0.15", "10.0.1"] {
            assert!(at_least(new, MIN_VERSION), "{new}");
        }
    }
}
