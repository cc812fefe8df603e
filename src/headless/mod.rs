//! Headless front end: a progress line a second on stderr (a live bar when
//! stderr is a terminal) or JSON lines on stdout, then a summary of the crawl.
//! It drives the engine through the same [`EngineHandle`] as the TUI.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use serde::Serialize;

mod summary;

pub(crate) use summary::revisits_value;
use summary::{alert_summary, alert_text, clock, human_bytes, summarize};
pub use summary::{summary_text, AlertSummary, Summary};
use tokio::task::JoinHandle;
use tokio::time::{Instant, MissedTickBehavior};

use crate::engine::control::{Command, Target};
use crate::engine::telemetry::{EngineEvent, Snapshot};
use crate::engine::{EngineError, EngineHandle};
use crate::text::strip_control;

const SPINNER: [char; 4] = ['|', '/', '-', '\\'];

#[derive(Debug, Clone, Default)]
pub struct HeadlessOptions {
    /// JSON lines on stdout instead of text on stderr.
    pub json: bool,
    /// stderr is a terminal: redraw one line instead of scrolling.
    pub live: bool,
    /// For the progress bar (0 = no limit: a spinner).
    pub max_pages: u64,
    pub data_dir: PathBuf,
    /// `fetch.allow_private` (`--allow-private`), for the summary.
    pub allow_private: bool,
}

/// The per-second JSON line.
#[derive(Debug, Clone, PartialEq, Serialize)]
struct Progress {
    elapsed_secs: u64,
    state: &'static str,
    pages: u64,
    pages_per_sec: f64,
    frontier: u64,
    in_flight: u32,
    hosts: u32,
    errors: u64,
    bytes: u64,
    quarantined: u64,
    /// Hosts held back and why, so a crawl that is waiting says on what.
    hosts_breaker_open: u32,
    hosts_robots_pending: u32,
    hosts_paused: u32,
    /// The crawl waits for its shared frontier: why, and when it tries again.
    #[serde(skip_serializing_if = "Option::is_none")]
    waiting_for: Option<String>,
}

/// Applies `--accept`/`--dismiss` to an engine started paused, one at a
/// time, each answer on stderr (an accept or dismiss is answered once its
/// sweep is done); then resumes the crawl if `resume`. A refusal is an error.
pub async fn decide(
    handle: &mut EngineHandle,
    decisions: &[Command],
    resume: bool,
) -> anyhow::Result<()> {
    eprintln!("crawldeck: deciding trap alerts before anything is fetched");
    for decision in decisions {
        let id = handle.control.send(decision.clone());
        let outcome = loop {
            match handle.events.recv().await {
                Some(EngineEvent::CommandDone(done)) if done.id == id => break done.outcome,
                Some(_) => {}
                None => anyhow::bail!("the engine stopped before it answered {}", decision.label()),
            }
        };
        match outcome {
            Ok(answer) => eprintln!("crawldeck: {}", strip_control(&answer)),
            Err(why) => anyhow::bail!("{}: refused: {}", decision.label(), strip_control(&why)),
        }
    }
    if resume {
        handle.control.send(Command::Resume(Target::Global));
    }
    Ok(())
}

/// Runs until the engine task ends; returns its final snapshot.
pub async fn run(
    handle: EngineHandle,
    done: JoinHandle<Result<Snapshot, EngineError>>,
    opts: HeadlessOptions,
) -> anyhow::Result<Snapshot> {
    run_with(
        handle,
        done,
        opts,
        &mut std::io::stdout(),
        &mut std::io::stderr(),
    )
    .await
}

/// [`run`] with the output streams given (tests pass buffers).
pub async fn run_with(
    mut handle: EngineHandle,
    mut done: JoinHandle<Result<Snapshot, EngineError>>,
    opts: HeadlessOptions,
    out: &mut (dyn Write + Send),
    err: &mut (dyn Write + Send),
) -> anyhow::Result<Snapshot> {
    let started = Instant::now();
    let mut ticker =
        tokio::time::interval_at(started + Duration::from_secs(1), Duration::from_secs(1));
    ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut events_open = true;
    let mut ticks: usize = 0;

    let finished = loop {
        tokio::select! {
            result = &mut done => break result,
            _ = ticker.tick() => {
                let snapshot = handle.snapshots.borrow().clone();
                let progress = progress_of(&snapshot, started.elapsed());
                write_progress(&progress, &opts, ticks, out, err)?;
                ticks += 1;
            }
            event = handle.events.recv(), if events_open => match event {
                Some(event) => {
                    if let (EngineEvent::Alert(alert), false) = (&event, opts.json) {
                        // Clear the live bar first; the next tick redraws it.
                        let clear = if opts.live { "\r\x1b[2K" } else { "" };
                        writeln!(err, "{clear}trap alert {}", alert_text(&alert_summary(alert)))?;
                    }
                }
                None => events_open = false,
            },
        }
    };
    if opts.live && !opts.json && ticks > 0 {
        writeln!(err)?;
    }

    let snapshot = finished
        .context("the crawl engine stopped unexpectedly (see crawldeck.log)")?
        .context("the crawl engine failed")?;
    let summary = summarize(&snapshot, started.elapsed(), &opts);
    write_summary(&summary, &opts, out, err)?;
    check_stopped_cleanly(&snapshot)?;
    Ok(snapshot)
}

/// One tick's progress: a JSON line on `out`, the live bar or a text line on `err`.
fn write_progress(
    progress: &Progress,
    opts: &HeadlessOptions,
    ticks: usize,
    out: &mut (dyn Write + Send),
    err: &mut (dyn Write + Send),
) -> anyhow::Result<()> {
    if opts.json {
        writeln!(out, "{}", serde_json::to_string(progress)?)?;
        out.flush()?;
    } else if opts.live {
        write!(
            err,
            "\r\x1b[2K{}",
            live_line(progress, opts.max_pages, ticks)
        )?;
        err.flush()?;
    } else {
        writeln!(err, "{}", progress_line(progress))?;
    }
    Ok(())
}

/// The summary: a `{"summary": …}` line on `out`, or text on `err`.
fn write_summary(
    summary: &Summary,
    opts: &HeadlessOptions,
    out: &mut (dyn Write + Send),
    err: &mut (dyn Write + Send),
) -> anyhow::Result<()> {
    if opts.json {
        writeln!(out, "{}", serde_json::json!({ "summary": summary }))?;
        out.flush()?;
    } else {
        write!(err, "{}", summary_text(summary))?;
        err.flush()?;
    }
    Ok(())
}

/// A crawl that ended on a frontier outage or a storage fault fails the run
/// (after its summary), so scripts see it did not finish.
fn check_stopped_cleanly(snapshot: &Snapshot) -> anyhow::Result<()> {
    if let Some(outage) = &snapshot.outage {
        anyhow::bail!(
            "stopped while the shared frontier was out of reach ({outage}); the pages fetched meanwhile \
             are stored here and fetched again once their leases expire; run the same command again to resume"
        );
    }
    if let Some(fault) = &snapshot.fault {
        anyhow::bail!(
            "storage fault: {fault}; what the crawl stored before it is kept: free space (or fix the permissions), \
             then run the same command again to resume"
        );
    }
    Ok(())
}

fn progress_of(s: &Snapshot, elapsed: Duration) -> Progress {
    Progress {
        elapsed_secs: elapsed.as_secs(),
        state: s.state.label(),
        pages: s.counters.pages_fetched,
        pages_per_sec: (s.pages_per_sec * 10.0).round() / 10.0,
        frontier: s.frontier_size,
        in_flight: s.in_flight,
        hosts: s.hosts_total,
        errors: s.counters.errors,
        bytes: s.counters.bytes,
        quarantined: s.quarantined,
        hosts_breaker_open: s.hosts_breaker_open,
        hosts_robots_pending: s.hosts_robots_pending,
        hosts_paused: s.hosts_paused,
        waiting_for: s
            .outage
            .as_deref()
            .map(|o| crate::text::strip_control(o).into_owned()),
    }
}

/// The figures both progress forms share.
fn figures(p: &Progress) -> String {
    let mut held = Vec::new();
    for (count, what) in [
        (p.hosts_breaker_open, "breaker open"),
        (p.hosts_robots_pending, "robots pending"),
        (p.hosts_paused, "paused"),
    ] {
        if count > 0 {
            held.push(format!("{count} {what}"));
        }
    }
    let held = if held.is_empty() {
        String::new()
    } else {
        format!(" ({})", held.join(", "))
    };
    let waiting = p
        .waiting_for
        .as_ref()
        .map_or(String::new(), |why| format!(" | waiting: {why}"));
    format!(
        "frontier {} | in flight {} | hosts {}{held} | errors {} | {}{waiting}",
        p.frontier,
        p.in_flight,
        p.hosts,
        p.errors,
        human_bytes(p.bytes)
    )
}

fn progress_line(p: &Progress) -> String {
    format!(
        "[{:>5}] {:<8} pages {} ({:.1}/s) | {}",
        clock(p.elapsed_secs),
        p.state,
        p.pages,
        p.pages_per_sec,
        figures(p)
    )
}

fn live_line(p: &Progress, max_pages: u64, tick: usize) -> String {
    const WIDTH: u128 = 20;
    // u128: pages × WIDTH cannot overflow; max_pages == 0 (no limit) gives a spinner.
    let filled = (u128::from(p.pages.min(max_pages)) * WIDTH).checked_div(u128::from(max_pages));
    let gauge = match filled {
        Some(filled) => format!(
            "[{}{}] {}/{}",
            "#".repeat(filled as usize),
            ".".repeat((WIDTH - filled) as usize),
            p.pages,
            max_pages
        ),
        None => format!("{} {} pages", SPINNER[tick % SPINNER.len()], p.pages),
    };
    format!(
        "{gauge} {:.1}/s | {} | {}",
        p.pages_per_sec,
        figures(p),
        clock(p.elapsed_secs)
    )
}

#[cfg(test)]
mod tests;
