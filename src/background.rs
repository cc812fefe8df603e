//! `crawldeck URL --data DIR`: the engine runs as its own process in the
//! background (its output in `DIR/engine.out`, its log in `DIR/crawldeck.log`)
//! and the terminal UI attaches to it over the control socket, so quitting
//! can detach and leave the crawl running.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;

use anyhow::Context;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::control::client;
use crate::tui::TuiOptions;

/// Set in the environment of the background engine process.
pub const ENGINE_PROCESS_ENV: &str = "CRAWLDECK_ENGINE_PROCESS";
/// The background engine's stdout and stderr, inside the data directory.
pub const ENGINE_OUTPUT: &str = "engine.out";
/// How long the engine may take to open its control socket.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// How often the socket is tried while the engine starts.
const START_POLL: Duration = Duration::from_millis(50);
/// How long a stopped crawl may take to checkpoint and exit.
const STOP_TIMEOUT: Duration = Duration::from_secs(30);

/// Whether this process is the background engine of a `crawldeck URL`.
pub fn is_engine_process() -> bool {
    std::env::var_os(ENGINE_PROCESS_ENV).is_some()
}

/// Starts this binary again with the same arguments as the background
/// engine of `data_dir`, in its own process group (Ctrl-C in this terminal
/// does not reach it), and attaches the terminal UI to it.
pub async fn run(data_dir: &Path, options: TuiOptions) -> anyhow::Result<()> {
    let engine = reap(spawn(data_dir)?)?;
    wait_for_socket(&engine, data_dir).await?;
    let gone = crate::remote::attach(data_dir, options, false, Some(engine.exited.clone())).await?;
    if gone {
        // Stopped or ended: return once the engine released the directory.
        let mut exited = engine.exited.clone();
        let status = tokio::time::timeout(STOP_TIMEOUT, exited.wait_for(Option::is_some))
            .await
            .ok()
            .and_then(|waited| waited.ok().and_then(|s| *s));
        eprintln!("crawldeck: {}", after_exit(data_dir, engine.pid, status));
    }
    Ok(())
}

/// What is said once a stopped or ended engine has exited (`status`), or
/// has not within [`STOP_TIMEOUT`] (`None`).
pub fn after_exit(data_dir: &Path, pid: u32, status: Option<ExitStatus>) -> String {
    match status {
        None => format!(
            "the engine is still checkpointing (pid {pid}); its log is in the data directory"
        ),
        // This process started the engine, so it can say how it ended.
        Some(status) if !status.success() => format!(
            "the engine exited with {status}; see {}",
            data_dir.join(crate::cli::LOG_FILE).display()
        ),
        Some(status) => format!(
            "the engine exited ({status}); crawl checkpointed in {0}; resume with `crawldeck --data {0}`",
            data_dir.display()
        ),
    }
}

/// The background engine, waited on by a thread of its own from the start,
/// so it never lingers as a zombie however long the UI stays open.
struct Engine {
    pid: u32,
    /// `Some` once it has exited: how.
    exited: watch::Receiver<Option<ExitStatus>>,
}

fn reap(mut child: Child) -> anyhow::Result<Engine> {
    let pid = child.id();
    let (tell, exited) = watch::channel(None);
    let waiter = std::thread::Builder::new()
        .name("crawldeck-reaper".into())
        .spawn(move || {
            if let Ok(status) = child.wait() {
                tell.send_replace(Some(status));
            }
        });
    if let Err(e) = waiter {
        // The child went with the closure; nothing would wait on it.
        anyhow::bail!("cannot watch the engine process (pid {pid}): {e}");
    }
    Ok(Engine { pid, exited })
}

fn spawn(data_dir: &Path) -> anyhow::Result<Child> {
    use std::os::unix::process::CommandExt;
    let output_path = data_dir.join(ENGINE_OUTPUT);
    let output = crate::engine::store::private::private_file_options()
        .create(true)
        .write(true)
        .truncate(true)
        .open(&output_path)
        .with_context(|| format!("cannot create {}", output_path.display()))?;
    let exe = std::env::current_exe().context("cannot find this program to start the engine")?;
    Command::new(exe)
        .args(std::env::args_os().skip(1))
        .env(ENGINE_PROCESS_ENV, "1")
        .stdin(Stdio::null())
        .stdout(output.try_clone()?)
        .stderr(output)
        .process_group(0)
        .spawn()
        .context("cannot start the engine process")
}

/// Waits until the engine answers on its socket; if it exits first, its
/// own words say why.
async fn wait_for_socket(engine: &Engine, data_dir: &Path) -> anyhow::Result<()> {
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        let exited = *engine.exited.borrow();
        if let Some(status) = exited {
            anyhow::bail!(failed_start(data_dir, status));
        }
        if client::connect(data_dir, true).await.is_ok() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            anyhow::bail!(
                "the engine (pid {}) did not open its control socket within {START_TIMEOUT:?}; see {}",
                engine.pid,
                data_dir.join(crate::cli::LOG_FILE).display()
            );
        }
        tokio::time::sleep(START_POLL).await;
    }
}

/// The engine's own message (its last line of output) when it failed to start.
fn failed_start(data_dir: &Path, status: ExitStatus) -> String {
    let output: PathBuf = data_dir.join(ENGINE_OUTPUT);
    let text = std::fs::read_to_string(&output).unwrap_or_default();
    let last = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map(|l| l.trim_start_matches("crawldeck: ").to_string());
    match last {
        Some(line) => line,
        None => format!("the engine exited ({status}) before it was ready"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    #[test]
    fn after_exit_gives_the_exit_status_or_says_it_is_not_known_yet() {
        let dir = Path::new("./c1");
        assert_eq!(
            after_exit(dir, 42, Some(ExitStatus::from_raw(0))),
            "the engine exited (exit status: 0); crawl checkpointed in ./c1; resume with `crawldeck --data ./c1`"
        );
        let killed = after_exit(dir, 42, Some(ExitStatus::from_raw(9)));
        assert!(
            killed.starts_with("the engine exited with signal: 9"),
            "{killed}"
        );
        assert!(after_exit(dir, 42, None).contains("still checkpointing (pid 42)"));
    }

    #[test]
    fn the_engine_is_reaped_as_soon_as_it_exits() {
        let child = Command::new("true").spawn().unwrap();
        let engine = reap(child).unwrap();
        let mut exited = engine.exited.clone();
        let status = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap()
            .block_on(async {
                let waited =
                    tokio::time::timeout(Duration::from_secs(10), exited.wait_for(Option::is_some));
                *waited.await.expect("exits at once").unwrap()
            });
        assert!(status.unwrap().success());
        // Reaped: no zombie left in the process table.
        assert!(!Path::new(&format!("/proc/{}", engine.pid)).exists());
    }
}
