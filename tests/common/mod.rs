//! Shared helpers for the engine's integration tests: a fast, still polite
//! configuration and a crawl of the demo web that is bounded in time.

pub mod cluster;
pub mod python;
pub mod term;
pub mod warc;

use std::path::Path;
use std::time::Duration;

use crawldeck::demo::{DemoOptions, DemoWeb, SiteKind};
use crawldeck::engine::config::CrawlConfig;
use crawldeck::engine::store::{PageRecord, Store};
use crawldeck::engine::telemetry::Snapshot;

/// No test crawl may run longer than this.
pub const CRAWL_LIMIT: Duration = Duration::from_secs(120);

/// Short delays and timeouts so tests finish quickly, but politeness still on.
pub fn test_config(demo: &DemoWeb) -> CrawlConfig {
    let mut cfg = CrawlConfig {
        seeds: demo.seeds().iter().map(|u| u.to_string()).collect(),
        concurrency: 16,
        ..CrawlConfig::default()
    };
    cfg.politeness.min_delay = Duration::from_millis(20);
    cfg.politeness.delay_factor = 0.0;
    cfg.fetch.connect_timeout = Duration::from_secs(2);
    cfg.fetch.read_timeout = Duration::from_millis(800);
    cfg.fetch.total_timeout = Duration::from_secs(5);
    cfg.fetch.max_body = 1024 * 1024;
    cfg.robots.give_up_after = Duration::from_secs(20);
    cfg.breaker.cooldown = Duration::from_millis(300);
    cfg.breaker.max_cooldown = Duration::from_secs(2);
    cfg.storage.cache_bytes = 8 * 1024 * 1024;
    cfg
}

/// A crawl of hand-made loopback servers: no delay factor, a short delay, a
/// small cache.
pub fn seeded_config(seeds: Vec<String>) -> CrawlConfig {
    let mut cfg = CrawlConfig {
        seeds,
        ..CrawlConfig::default()
    };
    cfg.politeness.min_delay = Duration::from_millis(10);
    cfg.politeness.delay_factor = 0.0;
    cfg.storage.cache_bytes = 8 * 1024 * 1024;
    cfg
}

pub async fn start_demo(sites: Vec<SiteKind>) -> DemoWeb {
    DemoWeb::start(DemoOptions {
        sites,
        latency_scale: 0.1,
    })
    .await
    .expect("demo web starts on 127.0.0.1")
}

/// A crawl started in this process, served on its data directory's control
/// socket as `crawldeck` serves one, so that other processes read it.
pub struct Served {
    _server: crawldeck::control::server::ControlServer,
    _lock: crawldeck::control::lock::DataDirLock,
}

/// Serves `running` (started in `dir`) on `dir`'s control socket; from now
/// on `running.handle` is a viewer of it, as a front end in `crawldeck`'s
/// own process is.
pub fn serve_control(dir: &Path, running: &mut crawldeck::engine::RunningEngine) -> Served {
    use crawldeck::control::{hub::Hub, lock::DataDirLock, server::ControlSocket};
    let lock = DataDirLock::acquire(dir).expect("the data directory locks");
    let socket = ControlSocket::bind(lock.socket_path()).expect("the control socket binds");
    let (unused, _) = crawldeck::engine::EngineHandle::channel();
    let handle = std::mem::replace(&mut running.handle, unused);
    let hub = Hub::new(handle).with_reads(running.reads.clone());
    running.handle = hub.local_handle();
    Served {
        _server: socket.serve(hub),
        _lock: lock,
    }
}

/// A crawl a test leaves running while it reads the data directory.
pub struct LiveCrawl {
    pub running: crawldeck::engine::RunningEngine,
    pub stop: tokio::sync::oneshot::Sender<()>,
    _served: Served,
}

impl LiveCrawl {
    /// `running`, started in `dir`, served on its control socket; `stop`
    /// ends it.
    pub fn serve(
        dir: &Path,
        mut running: crawldeck::engine::RunningEngine,
        stop: tokio::sync::oneshot::Sender<()>,
    ) -> LiveCrawl {
        let served = serve_control(dir, &mut running);
        LiveCrawl {
            running,
            stop,
            _served: served,
        }
    }

    /// Stops the crawl and waits, within [`CRAWL_LIMIT`], for its clean end.
    pub async fn stop(self) {
        let _ = self.stop.send(());
        tokio::time::timeout(CRAWL_LIMIT, self.running.done)
            .await
            .expect("the crawl stops")
            .expect("no panic")
            .expect("no engine error");
    }
}

/// Starts a crawl of `demo` in `dir` and returns once it has fetched `pages`.
pub async fn crawl_until(demo: &DemoWeb, dir: &Path, pages: u64) -> LiveCrawl {
    let (stop, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let running = crawldeck::engine::start(test_config(demo), dir, async {
        let _ = stop_rx.await;
    })
    .await
    .expect("engine starts");
    let mut snapshots = running.handle.snapshots.clone();
    tokio::time::timeout(CRAWL_LIMIT, async {
        while snapshots.borrow().counters.pages_fetched < pages {
            snapshots.changed().await.expect("engine runs");
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{pages} pages within the limit"));
    LiveCrawl::serve(dir, running, stop)
}

/// Crawls to the end and returns the final snapshot.
pub async fn crawl(cfg: CrawlConfig, dir: &Path) -> Snapshot {
    let running = crawldeck::engine::start(cfg, dir, std::future::pending())
        .await
        .expect("engine starts");
    run_to_end(running).await
}

/// Waits for a started crawl to end, its handle kept alive until then (so its
/// command channel stays open).
async fn run_to_end(running: crawldeck::engine::RunningEngine) -> Snapshot {
    let crawldeck::engine::RunningEngine { handle, done, .. } = running;
    let result = tokio::time::timeout(CRAWL_LIMIT, done)
        .await
        .expect("crawl ends within the limit")
        .expect("engine task does not panic")
        .expect("engine runs without error");
    drop(handle);
    result
}

/// Crawls to the end with the regex rule `pattern` (any host) in force from
/// before the first fetch: the engine starts paused, takes the rule, resumes.
pub async fn crawl_with_rule(cfg: CrawlConfig, dir: &Path, pattern: &str) -> Snapshot {
    use crawldeck::engine::control::{Command, PatternKind, RuleSpec, Target};
    use crawldeck::engine::{EngineOptions, RunOverrides};

    let options = EngineOptions {
        overrides: RunOverrides {
            paused: Some(true),
            ..RunOverrides::default()
        },
        ..EngineOptions::default()
    };
    let running = crawldeck::engine::start_with(cfg, dir, std::future::pending(), options)
        .await
        .expect("engine starts");
    running.handle.control.send(Command::AddRule(RuleSpec {
        kind: PatternKind::Regex,
        pattern: pattern.into(),
        host: None,
    }));
    running.handle.control.send(Command::Resume(Target::Global));
    run_to_end(running).await
}

/// All page records of a finished crawl.
pub fn pages(dir: &Path) -> Vec<PageRecord> {
    let store = Store::open(dir, 8 * 1024 * 1024).expect("store reopens after the crawl");
    let mut pages = Vec::new();
    store
        .for_each_page(|p| pages.push(p))
        .expect("pages readable");
    pages
}

/// A child process killed (SIGKILL) and reaped when dropped, so no test
/// leaves a crawldeck behind.
pub struct Killed(pub std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// No run of the binary in a listing test may take longer than this.
pub const RUN_LIMIT: Duration = Duration::from_secs(60);

/// Runs the crawldeck binary with `args`, reading its output while it runs
/// (a long listing cannot stall on a full pipe); killed by pid past
/// [`RUN_LIMIT`].
pub fn run_binary(args: &[&str]) -> std::process::Output {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_crawldeck"));
    command.args(args);
    run_bounded(command)
}

/// Runs `command` (the binary, its arguments and environment set) as
/// [`run_binary`] does.
pub fn run_bounded(mut command: std::process::Command) -> std::process::Output {
    use std::process::Stdio;
    let args: Vec<_> = command.get_args().map(|a| a.to_owned()).collect();
    let mut child = command
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let (stdout, stderr) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let out = std::thread::spawn(move || std::io::read_to_string(stdout));
    let err = std::thread::spawn(move || std::io::read_to_string(stderr));
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("child state") {
            break status;
        }
        if started.elapsed() > RUN_LIMIT {
            let _ = child.kill();
            panic!("crawldeck {args:?} (pid {}) hangs", child.id());
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    std::process::Output {
        status,
        stdout: out.join().unwrap().expect("UTF-8 stdout").into_bytes(),
        stderr: err.join().unwrap().expect("UTF-8 stderr").into_bytes(),
    }
}

/// The binary's stdout, which must succeed.
pub fn ok_stdout(args: &[&str]) -> String {
    let out = run_binary(args);
    assert!(
        out.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

/// The binary's JSON lines.
pub fn json_lines(args: &[&str]) -> Vec<serde_json::Value> {
    ok_stdout(args)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?} is not JSON: {e}")))
        .collect()
}

/// Starts a crawl whose disk fills after `faults` says, pausing (not
/// ending) on a storage fault so the test can heal it and resume.
pub async fn start_faulted(
    cfg: CrawlConfig,
    dir: &Path,
    faults: &crawldeck::engine::store::faults::DiskFaults,
) -> crawldeck::engine::RunningEngine {
    let options = crawldeck::engine::EngineOptions {
        wait_for_operator: true,
        disk_faults: faults.clone(),
        ..crawldeck::engine::EngineOptions::default()
    };
    crawldeck::engine::start_with(cfg, dir, std::future::pending(), options)
        .await
        .expect("engine starts")
}

/// The first snapshot of a crawl paused on a storage fault with nothing in flight.
pub async fn paused_on_fault(handle: &mut crawldeck::engine::EngineHandle) -> Snapshot {
    use crawldeck::engine::telemetry::CrawlState;
    tokio::time::timeout(CRAWL_LIMIT, async {
        loop {
            handle.snapshots.changed().await.expect("engine runs");
            let s: Snapshot = (**handle.snapshots.borrow()).clone();
            if s.fault.is_some() && s.state == CrawlState::Paused && s.in_flight == 0 {
                return s;
            }
        }
    })
    .await
    .expect("the crawl pauses on the fault")
}
