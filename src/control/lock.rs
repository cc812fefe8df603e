//! One engine per data directory: `engine.pid` holds the engine's pid under an
//! exclusive `flock`. The kernel drops the lock when the process dies, however
//! it dies, so a lock left by a killed engine is never trusted: the next engine
//! takes it, and removes the socket the dead one left.

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

use rustix::fs::{flock, FlockOperation};

/// The lock and pid file inside a data directory.
pub const LOCK_FILE: &str = "engine.pid";
/// The control socket inside a data directory.
pub const SOCKET_FILE: &str = "control.sock";

/// The reads socket of earlier versions, removed when an engine starts.
const OLD_RESULTS_SOCKET: &str = "results.sock";

/// Why a data directory could not be locked.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another live engine holds it.
    #[error("a crawl is running in {dir} (pid {pid}); attach with `crawldeck attach {dir}`")]
    Running {
        /// The data directory as the user gave it.
        dir: String,
        /// The running engine's pid (0 if it has not written it yet).
        pid: u32,
    },
    /// The lock file could not be created or written.
    #[error("cannot lock the data directory {dir}: {source}")]
    Io {
        /// The data directory as the user gave it.
        dir: String,
        /// What failed.
        source: std::io::Error,
    },
}

/// Held by the running engine's process; dropping it releases the directory.
#[derive(Debug)]
pub struct DataDirLock {
    _file: File,
    socket: PathBuf,
}

impl DataDirLock {
    /// Locks `dir` for this process, records its pid, and removes a socket a
    /// dead engine left behind.
    pub fn acquire(dir: &Path) -> Result<DataDirLock, LockError> {
        let shown = dir.display().to_string();
        let io = |source| LockError::Io {
            dir: shown.clone(),
            source,
        };
        let mut file = crate::engine::store::private::private_file_options()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(dir.join(LOCK_FILE))
            .map_err(io)?;
        if let Err(e) = flock(&file, FlockOperation::NonBlockingLockExclusive) {
            if e == rustix::io::Errno::WOULDBLOCK {
                let pid = read_pid(&mut file).unwrap_or(0);
                return Err(LockError::Running { dir: shown, pid });
            }
            return Err(io(e.into()));
        }
        file.set_len(0).map_err(io)?;
        file.rewind().map_err(io)?;
        writeln!(file, "{}", std::process::id()).map_err(io)?;
        file.flush().map_err(io)?;
        let socket = dir.join(SOCKET_FILE);
        if remove_if_present(&socket).map_err(io)? {
            tracing::info!("removed a control socket left by an engine that died");
        }
        // Earlier versions served reads on a second socket; nothing answers it now.
        remove_if_present(&dir.join(OLD_RESULTS_SOCKET)).map_err(io)?;
        Ok(DataDirLock {
            _file: file,
            socket,
        })
    }

    /// Where this engine's control socket goes.
    pub fn socket_path(&self) -> &Path {
        &self.socket
    }
}

/// Removes `path`; whether there was one.
fn remove_if_present(path: &Path) -> std::io::Result<bool> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

fn read_pid(file: &mut File) -> Option<u32> {
    let mut text = String::new();
    file.rewind().ok()?;
    file.read_to_string(&mut text).ok()?;
    text.trim().parse().ok()
}

/// The pid recorded in `dir`'s lock file and whether that process is alive;
/// `None` when there is no readable pid. Never takes the lock (that would
/// make a starting engine refuse).
pub fn recorded_engine(dir: &Path) -> Option<(u32, bool)> {
    let mut file = File::open(dir.join(LOCK_FILE)).ok()?;
    let pid = read_pid(&mut file)?;
    let alive = rustix::process::Pid::from_raw(pid as i32)
        .is_some_and(|p| rustix::process::test_kill_process(p).is_ok());
    Some((pid, alive))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_is_refused_with_the_pid_and_the_attach_command() {
        let dir = tempfile::tempdir().unwrap();
        let first = DataDirLock::acquire(dir.path()).unwrap();
        let err = DataDirLock::acquire(dir.path()).unwrap_err();
        let pid = std::process::id();
        assert_eq!(
            err.to_string(),
            format!(
                "a crawl is running in {0} (pid {pid}); attach with `crawldeck attach {0}`",
                dir.path().display()
            )
        );
        assert_eq!(recorded_engine(dir.path()), Some((pid, true)));
        drop(first);
        assert!(free_soon(dir.path()), "free again once released");
    }

    /// Whether `dir` can be locked within a few seconds. A parallel test that
    /// spawns a process shares our descriptors from its fork until its exec,
    /// and with them the lock, so the release shows only once that exec ran.
    fn free_soon(dir: &Path) -> bool {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        loop {
            match DataDirLock::acquire(dir) {
                Ok(_) => return true,
                Err(LockError::Running { .. }) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(5))
                }
                Err(_) => return false,
            }
        }
    }

    #[test]
    fn a_stale_socket_is_removed_when_the_lock_is_free() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(SOCKET_FILE), b"").unwrap();
        std::fs::write(dir.path().join(OLD_RESULTS_SOCKET), b"").unwrap();
        std::fs::write(dir.path().join(LOCK_FILE), b"999999999\n").unwrap();
        let lock = DataDirLock::acquire(dir.path()).unwrap();
        assert!(!lock.socket_path().exists());
        assert!(!dir.path().join(OLD_RESULTS_SOCKET).exists());
        let text = std::fs::read_to_string(dir.path().join(LOCK_FILE)).unwrap();
        assert_eq!(text.trim(), std::process::id().to_string());
    }
}
