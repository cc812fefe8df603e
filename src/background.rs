//! `crawldeck URL --data DIR`: the engine runs as its own process in the
//! background (its output in `DIR/engine.out`, its log in `DIR/crawldeck.log`)
//! and the terminal UI attaches to it over the control socket, so quitting
//! can detach and leave the crawl running.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;

use anyhow::Context;
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
    let mut engine = spawn(data_dir)?;
    wait_for_socket(&mut engine, data_dir).await?;
    let gone = crate::remote::attach(data_dir, options, false).await?;
    if let (true, Some(status)) = (gone, engine.try_wait()?) {
        if !status.success() {
            // This process started the engine, so it can say how it ended.
            eprintln!(
                "crawldeck: the engine exited with {status}; see {}",
                data_dir.join(crate::cli::LOG_FILE).display()
            );
            return Ok(());
        }
    }
    if gone {
        // The operator stopped the crawl: return once it released the directory.
        let deadline = Instant::now() + STOP_TIMEOUT;
        while engine.try_wait()?.is_none() {
            if Instant::now() >= deadline {
                eprintln!("crawldeck: the engine is still checkpointing (pid {}); its log is in the data directory", engine.id());
                break;
            }
            tokio::time::sleep(START_POLL).await;
        }
        eprintln!(
            "crawldeck: crawl stopped and checkpointed in {0}; resume with `crawldeck --data {0}`",
            data_dir.display()
        );
    }
    Ok(())
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
async fn wait_for_socket(engine: &mut Child, data_dir: &Path) -> anyhow::Result<()> {
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        if let Some(status) = engine.try_wait()? {
            anyhow::bail!(failed_start(data_dir, status));
        }
        if client::connect(data_dir, true).await.is_ok() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            anyhow::bail!(
                "the engine (pid {}) did not open its control socket within {START_TIMEOUT:?}; see {}",
                engine.id(),
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
