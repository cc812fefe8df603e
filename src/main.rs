//! The crawldeck binary: parse the command line, log into the data directory,
//! install a panic hook, start the runtime and dispatch.
//!
//! Exit codes: 0 success, 1 runtime failure, 2 usage or configuration error.

use std::future::Future;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;

use anyhow::Context;
use clap::Parser;
use std::time::Duration;

use crawldeck::background;
use crawldeck::bench::{self, BenchOptions};
use crawldeck::cli::{self, Cli, Mode, ResolvedRun, CONFIG_FILE, LOG_FILE};
use crawldeck::cluster::follow::Following;
use crawldeck::cluster::publish::SnapshotPublisher;
use crawldeck::cluster::reads::ReadServer;
use crawldeck::control::hub::Hub;
use crawldeck::control::lock::DataDirLock;
use crawldeck::control::server::{ControlServer, ControlSocket};
use crawldeck::demo::{DemoOptions, DemoWeb};
use crawldeck::engine::config::CrawlConfig;
use crawldeck::engine::reads::StoreReads;
use crawldeck::engine::{self, EngineControl, EngineError, EngineHandle, RunningEngine};
use crawldeck::headless::{self, HeadlessOptions};
use crawldeck::remote::{self, CtlError};
use crawldeck::tui;
use tracing_subscriber::EnvFilter;

// mimalloc: ~18 % less CPU per page than glibc's malloc, and on a large crawl
// glibc's heap grew to twice mimalloc's RSS (docs/PERFORMANCE.md, "Memory").
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const EXIT_RUNTIME: u8 = 1;
const EXIT_USAGE: u8 = 2;

fn main() -> ExitCode {
    crawldeck::allocator::return_freed_memory_at_once();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // --help and --version are "errors" with exit code 0; real ones exit 2.
            let _ = e.print();
            return ExitCode::from(e.exit_code().clamp(0, 255) as u8);
        }
    };
    let run = match cli::resolve(cli) {
        Ok(run) => run,
        Err(e) => {
            eprintln!("crawldeck: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    if let Mode::Diff(query) = &run.mode {
        return diff(query);
    }
    match dispatch(run) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("crawldeck: {}", crawldeck::text::error_chain(&e));
            let usage = matches!(
                e.downcast_ref::<EngineError>(),
                Some(EngineError::Config(_))
            ) || matches!(e.downcast_ref::<CtlError>(), Some(CtlError::Usage(_)));
            ExitCode::from(if usage { EXIT_USAGE } else { EXIT_RUNTIME })
        }
    }
}

fn dispatch(run: ResolvedRun) -> anyhow::Result<()> {
    if let Some(done) = run_without_engine(&run) {
        return done;
    }
    // Held until the end so a temporary data directory outlives the crawl.
    let (data_dir, _temp_dir) = data_dir_for(&run)?;
    // The UI of `crawldeck URL` attaches to an engine process it starts.
    let ui_of_engine_process = matches!(run.mode, Mode::Tui) && !background::is_engine_process();
    // Before anything is written there: one engine per data directory.
    let lock = match run.mode {
        Mode::Bench { .. } => None,
        _ if ui_of_engine_process => None,
        _ => Some(DataDirLock::acquire(&data_dir)?),
    };
    init_logging(&data_dir, run.log_filter.as_deref())?;
    install_panic_hook();
    tracing::info!(mode = ?run.mode, data = %data_dir.display(), resuming = run.resuming, "crawldeck starting");
    let _ = rustls::crypto::ring::default_provider().install_default();

    // The threads of a process that runs an engine wait their turn when woken
    // (`engine::sched`); a UI attached to its engine process keeps the ordinary policy.
    let runtime = if ui_of_engine_process {
        tokio::runtime::Runtime::new()
    } else {
        crawldeck::engine::sched::engine_runtime()
    }
    .context("cannot start the async runtime")?;
    let result = runtime.block_on(async {
        // Bound before any engine starts: a socket that cannot be had stops here.
        let socket = lock
            .as_ref()
            .map(|l| ControlSocket::bind(l.socket_path()))
            .transpose()?;
        match run.mode {
            Mode::Headless => run_headless(&run, &data_dir, socket).await,
            Mode::Tui if background::is_engine_process() => {
                run_engine_process(&run, &data_dir, socket).await
            }
            Mode::Tui => run_tui_attached(&run, &data_dir).await,
            Mode::Demo { headless, cluster } => {
                run_demo(&run, &data_dir, headless, cluster, socket).await
            }
            Mode::Bench {
                pages,
                hosts,
                delay,
                archive,
                archive_floor,
                tui,
                previews,
                rounds,
            } => {
                let options = BenchOptions {
                    pages: pages as usize,
                    hosts: hosts as usize,
                    delay,
                    data: Some(data_dir.clone()),
                    warc: archive,
                    archive_floor,
                    tui,
                    previews,
                    extract: run.config.extract.clone(),
                    rounds: rounds as usize,
                };
                run_bench(options).await
            }
            Mode::Keys { .. }
            | Mode::Attach { .. }
            | Mode::Status { .. }
            | Mode::ClusterStatus { .. }
            | Mode::ClusterAttach { .. }
            | Mode::ClusterCtl { .. }
            | Mode::Ctl { .. }
            | Mode::BenchWeb { .. }
            | Mode::Results(_)
            | Mode::Diff(_)
            | Mode::Export(_)
            | Mode::Page(_) => {
                unreachable!("handled before the runtime starts")
            }
        }
    });
    if let Err(e) = &result {
        tracing::error!("crawldeck stopped: {}", crawldeck::text::error_chain(e));
    }
    result
}

/// `crawldeck diff`: exits 0 without differences, 1 with some, 2 on any
/// trouble (as diff(1)), so a script can tell "changed" from "failed".
fn diff(query: &crawldeck::results::diff::DiffQuery) -> ExitCode {
    let out = std::io::BufWriter::new(std::io::stdout().lock());
    match crawldeck::results::diff::run(query, out) {
        Ok(summary) => {
            if summary.complete {
                eprintln!("crawldeck: {}", summary.line());
            }
            ExitCode::from(u8::from(summary.total() > 0))
        }
        Err(e) => {
            eprintln!("crawldeck: {}", crawldeck::text::error_chain(&e));
            ExitCode::from(EXIT_USAGE)
        }
    }
}

/// Commands that start no engine here: viewers of a running crawl, the
/// cluster's commands, the key list, and readers of a stored crawl.
fn run_without_engine(run: &ResolvedRun) -> Option<anyhow::Result<()>> {
    let stdout = || std::io::BufWriter::new(std::io::stdout().lock());
    Some(match &run.mode {
        Mode::Keys { file } => print_keys(file.as_deref()),
        Mode::BenchWeb { pages, hosts } => serve_bench_web(*pages, *hosts),
        Mode::Attach { .. }
        | Mode::ClusterAttach { .. }
        | Mode::Status { .. }
        | Mode::Ctl { .. } => run_viewer(run),
        Mode::ClusterCtl {
            target,
            words,
            worker,
        } => cluster_ctl(target, words, worker.as_deref()),
        Mode::ClusterStatus { target, json } => cluster_status(target, *json),
        Mode::Page(query) => match &query.cluster {
            Some(target) => {
                let read = |url: &str| crawldeck::cluster::reads::inspect(target, url);
                crawldeck::results::page::run_with(query, read, stdout())
            }
            None => crawldeck::results::page::run(query, stdout()),
        },
        Mode::Export(query) => crawldeck::export::run(query).map(|summary| {
            eprintln!("crawldeck: {}", summary.line());
        }),
        Mode::Results(query) => {
            if let Some(note) = crawldeck::results::shared_parked_note(query) {
                eprintln!("crawldeck: {note}");
            }
            match &query.cluster {
                Some(target) => {
                    crawldeck::cluster::listing::open(target).and_then(|(results, note)| {
                        eprintln!("crawldeck: {note}");
                        crawldeck::results::run_on(query, &results, stdout())
                    })
                }
                None => crawldeck::results::run(query, stdout()),
            }
        }
        _ => return None,
    })
}

/// `--data DIR`, created if missing, or else a temporary directory, which
/// is returned too: it is deleted when dropped.
fn data_dir_for(run: &ResolvedRun) -> anyhow::Result<(PathBuf, Option<tempfile::TempDir>)> {
    if let Some(dir) = &run.data_dir {
        crawldeck::engine::store::private::create_private_dir_all(dir).with_context(|| {
            format!(
                "cannot create the data directory {}; give a writable --data DIR",
                dir.display()
            )
        })?;
        return Ok((dir.clone(), None));
    }
    let temp_dir = tempfile::Builder::new()
        .prefix("crawldeck-")
        .tempdir()
        .context("cannot create a temporary data directory; give --data DIR")?;
    Ok((temp_dir.path().to_path_buf(), Some(temp_dir)))
}

/// Starts the engine and records the effective config so `--data DIR` alone resumes.
async fn start_engine(
    run: &ResolvedRun,
    data_dir: &Path,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<RunningEngine> {
    let options = engine::EngineOptions {
        recrawl: run.recrawl,
        overrides: engine::RunOverrides {
            // Nobody can resume a paused headless crawl: it runs unless asked.
            // A worker of a shared crawl waits until it has replayed the
            // crawl's commands (`cluster::follow` resumes it).
            // So do `--accept`/`--dismiss`: decided before anything is fetched.
            paused: Some(
                run.overrides.paused.unwrap_or(false)
                    || run.cluster.is_some()
                    || !run.decisions.is_empty(),
            ),
            ..run.overrides
        },
        cluster: run.cluster.clone(),
        ..engine::EngineOptions::default()
    };
    start_and_save(run, data_dir, shutdown, options).await
}

/// Starts the engine and keeps its configuration for the next resume. A
/// first start writes it before anything can fail, so a start the disk
/// refuses keeps its seeds; a resume writes it only once the engine took it,
/// so a rejected one never replaces the stored one.
async fn start_and_save(
    run: &ResolvedRun,
    data_dir: &Path,
    shutdown: impl Future<Output = ()> + Send + 'static,
    options: engine::EngineOptions,
) -> anyhow::Result<RunningEngine> {
    let path = data_dir.join(CONFIG_FILE);
    if !run.resuming {
        run.config.save(&path)?;
    }
    let engine = engine::start_with(run.config.clone(), data_dir, shutdown, options).await?;
    if !run.resuming {
        return Ok(engine);
    }
    if let Err(e) = run.config.save(&path) {
        stop_engine(&engine.handle.control, engine.done).await;
        return Err(e.into());
    }
    Ok(engine)
}

/// How long an engine stopped for a front end's error may take to checkpoint.
const ENGINE_STOP_LIMIT: Duration = Duration::from_secs(20);

/// Stops an engine whose front end cannot go on, so that it checkpoints
/// before the error ends the process (the runtime's end would cut it off).
async fn stop_engine<T>(control: &EngineControl, done: tokio::task::JoinHandle<T>) {
    control.send(engine::control::Command::Shutdown);
    let _ = tokio::time::timeout(ENGINE_STOP_LIMIT, done).await;
}

/// Serves the engine (its viewers and reads of its store) on the control
/// socket (when there is one) and returns the handle this process's own
/// front end uses: one viewer among others.
fn serve(
    handle: EngineHandle,
    reads: StoreReads,
    socket: Option<ControlSocket>,
) -> (EngineHandle, Option<ControlServer>) {
    let hub = Hub::new(handle).with_reads(reads);
    let server = socket.map(|socket| socket.serve(hub.clone()));
    (hub.local_handle(), server)
}

/// The engine's end, reported once the hub has handed out its last events,
/// so the headless summary counts them all (bounded: a stray sender must not
/// hold the exit).
fn after_drained(
    done: tokio::task::JoinHandle<Result<engine::telemetry::Snapshot, EngineError>>,
    drained: impl Future<Output = ()> + Send + 'static,
) -> tokio::task::JoinHandle<Result<engine::telemetry::Snapshot, EngineError>> {
    tokio::spawn(async move {
        let result = done.await;
        let _ = tokio::time::timeout(Duration::from_secs(2), drained).await;
        match result {
            Ok(result) => result,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(e) => Err(EngineError::Store(format!("the engine task ended: {e}"))),
        }
    })
}

async fn run_headless(
    run: &ResolvedRun,
    data_dir: &Path,
    socket: Option<ControlSocket>,
) -> anyhow::Result<()> {
    let json = run.ui.json;
    if !json {
        announce_headless(run, data_dir);
    }
    let engine = start_engine(run, data_dir, shutdown_signal(!json)).await?;
    if !json {
        for line in &engine.settings {
            eprintln!("crawldeck: {line}");
        }
        if run.cluster.is_some() && run.overrides.paused != Some(true) {
            eprintln!("crawldeck: this worker crawls once it has replayed the crawl's commands (rules, overrides, pauses) from Redis");
        }
    }
    let hub = Hub::new(engine.handle).with_reads(engine.reads);
    let _server = socket.map(|socket| socket.serve(hub.clone()));
    let mut handle = hub.local_handle();
    let part = match &run.cluster {
        Some(target) => match join_cluster(run, target, &hub, &handle, data_dir) {
            Ok(part) => Some(part),
            Err(e) => {
                stop_engine(&handle.control, engine.done).await;
                return Err(e);
            }
        },
        None => None,
    };
    if !run.decisions.is_empty() {
        let resume = run.overrides.paused != Some(true);
        if let Err(e) = headless::decide(&mut handle, &run.decisions, resume).await {
            stop_engine(&handle.control, engine.done).await;
            return Err(e);
        }
    }
    let done = after_drained(engine.done, hub.drained());
    if !json {
        eprintln!(
            "crawldeck: watch and steer it with `crawldeck attach {}`",
            data_dir.display()
        );
    }
    let opts = HeadlessOptions {
        json,
        live: !json && std::io::stderr().is_terminal(),
        max_pages: run.config.max_pages,
        data_dir: data_dir.to_path_buf(),
        allow_private: run.config.fetch.allow_private,
    };
    let result = headless::run(handle, done, opts).await;
    let over = result.as_ref().is_ok_and(|snapshot| !snapshot.stopped);
    let Some(ClusterPart {
        target,
        worker,
        following,
        reads: _reads,
        publisher,
    }) = part
    else {
        return result.map(drop);
    };
    tokio::task::spawn_blocking(move || following.stop()).await?;
    let served = match over && run.serve_when_done {
        true => serve_records(&target, &worker, data_dir, &hub, json).await,
        false => Ok(()),
    };
    tokio::task::spawn_blocking(move || publisher.stop()).await?;
    result?;
    served
}

/// A worker whose crawl is over stays to serve its records to listings of
/// the shared crawl (`cluster::serving`) until a `stop` comes on the
/// command stream, or Ctrl-C or SIGTERM.
async fn serve_records(
    target: &engine::ClusterTarget,
    worker: &str,
    data_dir: &Path,
    hub: &Hub,
    json: bool,
) -> anyhow::Result<()> {
    if let Some(reads) = hub.reads() {
        reads
            .reopen()
            .context("cannot open the crawl's records again to serve them")?;
    }
    let mut serving = crawldeck::cluster::serving::Serving::start(target, worker, data_dir)
        .context("cannot start serving the crawl's records")?;
    if !json {
        let crawl = &target.crawl;
        eprintln!(
            "crawldeck: the crawl is over here; this worker serves its records to \
             `crawldeck pages|links|audit --redis URL --crawl {crawl}` until \
             `crawldeck ctl --redis URL --crawl {crawl} stop` or Ctrl-C \
             (workers started with --exit-when-done end with the crawl)"
        );
    }
    tokio::select! {
        _ = serving.stop_asked() => {}
        _ = wait_for_signal() => {}
    }
    tokio::task::spawn_blocking(move || drop(serving)).await?;
    Ok(())
}

/// The first line on stderr: whether the crawl starts, resumes or recrawls,
/// where, and where its log goes.
fn announce_headless(run: &ResolvedRun, data_dir: &Path) {
    let verb = match (run.recrawl, run.resuming) {
        (true, _) => "recrawling",
        (false, true) => "resuming",
        (false, false) => "starting",
    };
    eprintln!(
        "crawldeck: {verb} crawl in {} (log: {}; Ctrl-C stops and checkpoints)",
        data_dir.display(),
        data_dir.join(LOG_FILE).display()
    );
}

/// A worker's part in a shared crawl, for as long as it is held.
struct ClusterPart {
    target: engine::ClusterTarget,
    /// This worker's name in the crawl.
    worker: String,
    /// Replays the crawl's commands, then applies them as they come;
    /// stopped at the engine's end.
    following: Following,
    /// Answers the cluster view's and the listings' reads of its records.
    reads: ReadServer,
    publisher: SnapshotPublisher,
}

/// A worker's part in a shared crawl: it follows the crawl's commands
/// (resuming once they are replayed, unless started paused), answers the
/// reads of its records and publishes its snapshots.
fn join_cluster(
    run: &ResolvedRun,
    target: &engine::ClusterTarget,
    hub: &Hub,
    handle: &EngineHandle,
    data_dir: &Path,
) -> anyhow::Result<ClusterPart> {
    let resume = !run.overrides.paused.unwrap_or(false);
    let worker = engine::worker_id(data_dir)?;
    let following = crawldeck::cluster::follow::start(hub, target, worker.clone(), resume)
        .context("cannot start the command stream's reader thread")?;
    let reads = ReadServer::start(target, &worker, data_dir).map_err(anyhow::Error::msg)?;
    let snapshots = handle.snapshots.clone();
    let publisher = SnapshotPublisher::start(&target.url, &target.crawl, &worker, snapshots)
        .map_err(anyhow::Error::msg)?;
    Ok(ClusterPart {
        target: target.clone(),
        worker,
        following,
        reads,
        publisher,
    })
}

/// `crawldeck URL`: the engine in a background process of its own, the
/// terminal UI attached to it (quitting offers to detach).
async fn run_tui_attached(run: &ResolvedRun, data_dir: &Path) -> anyhow::Result<()> {
    require_terminal()?;
    background::run(data_dir, tui_options(run, true, data_dir)).await
}

/// The terminal UI needs one: scripts and pipes get a message instead.
fn require_terminal() -> anyhow::Result<()> {
    if !std::io::stdout().is_terminal() {
        anyhow::bail!(
            "the terminal UI needs a terminal; use `crawldeck crawl --headless …` for scripts and pipes"
        );
    }
    Ok(())
}

/// The UI's options as the command line set them, over the crawl in `data_dir`.
fn tui_options(run: &ResolvedRun, attached: bool, data_dir: &Path) -> tui::TuiOptions {
    tui::TuiOptions {
        no_color: !run.ui.color,
        no_mouse: !run.ui.mouse,
        readonly: run.ui.readonly,
        attached,
        keys_file: run.ui.keys.clone(),
        records: Some(tui::Records::Dir(data_dir.to_path_buf())),
    }
}

/// An engine an operator watches: open alerts and storage faults wait for them.
fn operator_options(run: &ResolvedRun) -> engine::EngineOptions {
    engine::EngineOptions {
        wait_for_operator: true,
        recrawl: run.recrawl,
        overrides: run.overrides,
        ..engine::EngineOptions::default()
    }
}

/// The background engine of `crawldeck URL`: serves its control socket until
/// the crawl ends or is stopped (by a viewer, SIGTERM or SIGINT). Decisions
/// on trap alerts wait for the operator.
async fn run_engine_process(
    run: &ResolvedRun,
    data_dir: &Path,
    socket: Option<ControlSocket>,
) -> anyhow::Result<()> {
    let socket = socket.context("the engine process holds the data directory's lock")?;
    let running =
        start_and_save(run, data_dir, shutdown_signal(false), operator_options(run)).await?;
    for line in &running.settings {
        println!("crawldeck: {line}");
    }
    // No front end here: every viewer attaches over the socket.
    let _server = socket.serve(Hub::new(running.handle).with_reads(running.reads));
    let snapshot = running.done.await??;
    println!(
        "crawldeck: {} pages; crawl checkpointed ({})",
        snapshot.counters.pages_fetched,
        snapshot.finish_reason.as_deref().unwrap_or("stopped")
    );
    Ok(())
}

/// The terminal UI over an engine in this process (`crawldeck demo`, whose
/// web lives here too). Decisions on trap alerts wait for the operator, so
/// the engine keeps running until they quit.
async fn run_tui(
    run: &ResolvedRun,
    data_dir: &Path,
    socket: Option<ControlSocket>,
) -> anyhow::Result<()> {
    require_terminal()?;
    // The UI handles Ctrl-C (a key in raw mode) and SIGTERM itself.
    let running =
        start_and_save(run, data_dir, std::future::pending(), operator_options(run)).await?;
    let tui_options = tui_options(run, false, data_dir);
    let (handle, _server) = serve(running.handle, running.reads, socket);
    let control = handle.control.clone();
    let exit = tui::run(handle, tui_options).await;
    // However the UI ended, the engine checkpoints and stops.
    control.send(engine::control::Command::Shutdown);
    let summary = tokio::time::timeout(ENGINE_STOP_LIMIT, running.done).await;
    let exit = exit?;
    match summary {
        Ok(Ok(Ok(snapshot))) => eprintln!(
            "crawldeck: {} pages; crawl checkpointed in {} ({:?}); resume with `crawldeck --data {}`",
            snapshot.counters.pages_fetched,
            data_dir.display(),
            exit,
            data_dir.display()
        ),
        Ok(Ok(Err(e))) => return Err(e.into()),
        Ok(Err(e)) => anyhow::bail!("the engine failed: {e}"),
        Err(_) => eprintln!(
            "crawldeck: requests in flight did not finish in time; they will be fetched again on resume"
        ),
    }
    Ok(())
}

async fn run_demo(
    run: &ResolvedRun,
    data_dir: &Path,
    headless: bool,
    cluster: Option<usize>,
    socket: Option<ControlSocket>,
) -> anyhow::Result<()> {
    let demo = DemoWeb::start(DemoOptions::standard())
        .await
        .context("cannot start the demo web on 127.0.0.1")?;
    let mut run = run.clone();
    run.config.seeds = demo.seeds().iter().map(|u| u.to_string()).collect();
    demo_pace(&mut run.config);
    if !run.ui.json {
        eprintln!(
            "crawldeck: demo web serving {} sites on 127.0.0.1",
            demo.kinds().len()
        );
    }
    let result = if let Some(workers) = cluster {
        let options = tui_options(&run, false, data_dir);
        let kept = run.data_dir.is_some();
        crawldeck::cluster::demo::run(workers, data_dir, kept, &run.config, options).await
    } else if headless {
        run_headless(&run, data_dir, socket).await
    } else {
        run_tui(&run, data_dir, socket).await
    };
    demo.shutdown().await;
    result
}

/// A demo pace: quick enough to watch the whole demo web being crawled, its
/// breakers recover and its traps get caught, still polite. Settings the user
/// changed from the defaults are kept.
fn demo_pace(config: &mut CrawlConfig) {
    let defaults = CrawlConfig::default();
    if config.politeness.min_delay == defaults.politeness.min_delay {
        config.politeness.min_delay = Duration::from_millis(250);
    }
    if config.max_depth == defaults.max_depth {
        // Let the trap detectors, not the depth limit, stop the traps.
        config.max_depth = 100;
    }
    if config.breaker == defaults.breaker {
        config.breaker.cooldown = Duration::from_secs(1);
        config.breaker.max_cooldown = Duration::from_secs(5);
    }
    if config.robots.give_up_after == defaults.robots.give_up_after {
        config.robots.give_up_after = Duration::from_secs(120);
    }
}

/// `attach`, `status` and `ctl`: viewers of a crawl another process runs.
/// They write nothing into its data directory.
/// `ctl --redis URL --crawl NAME WORDS…`: usage errors exit 2, the rest 1.
fn cluster_ctl(
    target: &engine::ClusterTarget,
    words: &[String],
    worker: Option<&str>,
) -> anyhow::Result<()> {
    use crawldeck::cluster::ctl::{self, ClusterCtlError};
    let mut out = std::io::stdout();
    let Some(command) = remote::ctl_command(words, &mut out)? else {
        return Ok(());
    };
    match ctl::run(target, &command, worker, &mut out) {
        Ok(()) => Ok(()),
        Err(ClusterCtlError::Usage(why)) => Err(CtlError::Usage(why).into()),
        Err(e) => Err(e.into()),
    }
}

/// `crawldeck status --redis`: the shared crawl's state, read from Redis.
fn cluster_status(target: &engine::ClusterTarget, json: bool) -> anyhow::Result<()> {
    let status = crawldeck::cluster::status::read(target).map_err(anyhow::Error::msg)?;
    crawldeck::cluster::status::print(&status, json, &mut std::io::stdout())?;
    Ok(())
}

/// The viewers: `attach`, `status` and `ctl` on a running crawl, and the
/// cluster view; they start no engine.
fn run_viewer(run: &ResolvedRun) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        match &run.mode {
            Mode::Status { dir, json } => remote::status(dir, *json, &mut std::io::stdout()).await,
            Mode::Ctl { dir, words } => Ok(remote::ctl(dir, words, &mut std::io::stdout()).await?),
            Mode::Attach { dir, wait } => {
                let dir = match dir {
                    Some(dir) => dir.clone(),
                    None => remote::find_running_crawl(Path::new("."))?,
                };
                remote::attach(&dir, tui_options(run, true, &dir), *wait, None)
                    .await
                    .map(drop)
            }
            Mode::ClusterAttach { target } => {
                let options = tui_options(run, true, Path::new("."));
                crawldeck::cluster::attach::attach(target, options).await
            }
            _ => unreachable!("only viewers come here"),
        }
    })
}

/// `crawldeck bench`: a synthetic site crawled in-process, measured.
async fn run_bench(options: BenchOptions) -> anyhow::Result<()> {
    let ui = match (options.tui, options.previews) {
        (true, _) => ", TUI drawing at 80x24 in memory",
        (false, true) => ", a rule preview asked every 300 ms",
        (false, false) => "",
    };
    let specs: Vec<String> = options.extract.iter().map(|s| s.describe()).collect();
    let extracting = match specs.is_empty() {
        true => String::new(),
        false => format!(", extracting {}", specs.join(", ")),
    };
    let politeness = match options.delay.is_zero() {
        true => "no politeness delay".to_string(),
        false => format!(
            "{} between requests to a host",
            humantime::format_duration(options.delay)
        ),
    };
    let archive = if options.warc { "" } else { ", no WARC files" };
    eprintln!(
        "crawldeck bench: {} pages on {} hosts (127.0.0.1), {politeness}{archive}{ui}{extracting}",
        options.pages, options.hosts
    );
    let report = bench::run(options).await?;
    print!("{}", report.render());
    Ok(())
}

/// `crawldeck bench-web`: the web `bench` crawls, in a process of its own.
fn serve_bench_web(pages: u64, hosts: u32) -> anyhow::Result<()> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?
        .block_on(bench::serve_web(pages as usize, hosts as usize))
}

/// `crawldeck keys`: prints the effective key map.
fn print_keys(file: Option<&Path>) -> anyhow::Result<()> {
    let (map, warnings) = tui::keys::effective_keymap(file);
    for warning in &warnings {
        eprintln!("crawldeck: warning: {warning}");
    }
    print!("{}", tui::keys::describe(&map));
    Ok(())
}

/// Log to `<data>/crawldeck.log`, never to the terminal (the TUI draws there).
fn init_logging(data_dir: &Path, filter: Option<&str>) -> anyhow::Result<()> {
    let path = data_dir.join(LOG_FILE);
    let file = crawldeck::engine::store::private::private_file_options()
        .create(true)
        .append(true)
        .open(&path)
        .with_context(|| format!("cannot open the log file {}", path.display()))?;
    // A log left by an older version may be world-readable.
    crawldeck::engine::store::private::restrict_tree(&path)
        .with_context(|| format!("cannot make the log file {} private", path.display()))?;
    let (filter, bad_env) = match filter {
        Some(f) => (EnvFilter::try_new(f)?, None),
        None => match EnvFilter::try_from_default_env() {
            Ok(f) => (f, None),
            Err(e) => {
                let bad = std::env::var("RUST_LOG")
                    .ok()
                    .map(|v| format!("RUST_LOG={v:?}: {e}"));
                (EnvFilter::new("info"), bad)
            }
        },
    };
    tracing_subscriber::fmt()
        .with_writer(Mutex::new(file))
        .with_ansi(false)
        .with_env_filter(filter)
        .try_init()
        .map_err(|e| anyhow::anyhow!("cannot set up logging: {e}"))?;
    if let Some(bad) = bad_env {
        tracing::warn!("ignored an invalid log filter ({bad}); logging at info");
    }
    Ok(())
}

/// Panics go to the log too (the terminal may be in the TUI's alternate screen).
fn install_panic_hook() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let backtrace = std::backtrace::Backtrace::force_capture();
        tracing::error!(target: "panic", "{info}\n{backtrace}");
        default(info);
    }));
}

/// Completes on the first Ctrl-C or SIGTERM (the engine then checkpoints and
/// stops); a second one quits at once.
fn shutdown_signal(notice: bool) -> impl Future<Output = ()> + Send + 'static {
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        wait_for_signal().await;
        if tx.send(()).is_err() {
            // The engine has ended (a worker serving its records): nothing to stop here.
            return;
        }
        tracing::info!("stop requested by signal");
        if notice {
            eprintln!("\ncrawldeck: stopping — finishing requests in flight and checkpointing (Ctrl-C again quits at once)");
        }
        wait_for_signal().await;
        tracing::warn!("second stop signal: quitting without checkpoint");
        eprintln!("crawldeck: quit; URLs that were in flight are fetched again on resume");
        std::process::exit(130);
    });
    async move {
        if rx.await.is_err() {
            // The signal task is gone (runtime shutting down): never stop the engine from here.
            std::future::pending::<()>().await;
        }
    }
}

async fn wait_for_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => tokio::select! {
                _ = ctrl_c => {}
                _ = term.recv() => {}
            },
            Err(_) => ctrl_c.await,
        }
    }
    #[cfg(not(unix))]
    ctrl_c.await;
}
