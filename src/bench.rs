//! `crawldeck bench`: crawls a synthetic site, served by a process of its
//! own, and reports throughput, the crawler's CPU time and peak memory, and
//! the web's apart.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;

use crate::demo::DemoWeb;
use crate::engine::config::{CrawlConfig, TrapPolicy};
use crate::engine::telemetry::Snapshot;
use url::Url;

mod floor;
mod pace;
mod rounds;
mod usage;
mod web;
pub use floor::{ArchiveWork, Floor, FloorReport};
use pace::{progress_step, Progress, Tenths};
pub use pace::{Pace, Politeness, Rate};
pub use rounds::{RoundFigures, Rounds};
use usage::{current_rss, peak_rss, reset_peak_rss, ThreadGroupsCpu, Usage};
use web::ChildWeb;
pub use web::{serve as serve_web, WebUsage};

#[derive(Debug, Clone)]
pub struct BenchOptions {
    pub pages: usize,
    pub hosts: usize,
    /// Between two requests to a host, one at a time; zero: no delay and
    /// several at a time, a race.
    pub delay: Duration,
    /// Keep the crawl's data directory here instead of a temporary one.
    pub data: Option<PathBuf>,
    pub warc: bool,
    /// Then time compressing the WARC records alone ([`floor::measure`]).
    pub archive_floor: bool,
    /// Drive the TUI during the crawl: in the terminal if stdout is one, else 80x24 in memory.
    pub tui: bool,
    /// Ask for a rule preview every [`PREVIEW_EVERY`] during the crawl (not with `tui`).
    pub previews: bool,
    /// Custom extractions run on every page (`bench --extract`).
    pub extract: Vec<crate::engine::config::ExtractionSpec>,
    /// The whole measure taken this many times (at least once).
    pub rounds: usize,
}

/// How often `--previews` asks: an operator typing a rule without pause, at
/// the TUI's debounce.
pub const PREVIEW_EVERY: Duration = crate::tui::preview::PREVIEW_DEBOUNCE;

/// fjall's background threads (flushes, compactions), by their name: their
/// CPU is what the store pays later for the rows a crawl writes now.
fn is_store_worker(thread: &str) -> bool {
    thread == "fjall:worker"
}

/// The page threads (the CPU pool), by their name.
fn is_page_thread(thread: &str) -> bool {
    thread.starts_with(crate::engine::cpu_pool::THREAD_NAME_PREFIX)
}

/// The crawl loop's thread, by its name.
fn is_crawl_loop(thread: &str) -> bool {
    thread == crate::engine::CRAWL_LOOP_THREAD
}

/// Rule previews asked during a `--previews` run, and how they were answered.
#[derive(Debug, Clone, Copy, Default)]
pub struct PreviewLoad {
    pub asked: u64,
    pub answered: u64,
    /// Answers that hit the engine's time budget.
    pub sampled: u64,
}

#[derive(Debug, Clone)]
pub struct BenchReport {
    pub pages: u64,
    pub wall: Duration,
    pub bytes: u64,
    /// CPU time and context switches of the crawler's process.
    pub usage: Option<Usage>,
    pub peak_rss_bytes: Option<u64>,
    /// The generated web's process, whose figures are not in the crawler's.
    pub web: Option<WebUsage>,
    pub extraction_pages_per_sec: f64,
    pub errors: u64,
    /// Trap alerts raised, by kind: the synthetic site is a normal site, so
    /// any alert is a false positive.
    pub alerts: std::collections::BTreeMap<&'static str, u64>,
    pub previews: Option<PreviewLoad>,
    /// Over the crawl's course (a plain run only).
    pub pace: Option<Pace>,
    pub politeness: Option<Politeness>,
    pub archive: ArchiveMeasure,
    /// Every round's figures, with `--rounds` above one.
    pub rounds: Option<Rounds>,
}

/// What the bench says of the archive.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ArchiveMeasure {
    Off,
    On,
    /// On, and compressing its records alone took this; the archive's work
    /// during the crawl, and the same crawl without the archive, beside it.
    WithFloor(FloorReport),
}

impl BenchReport {
    pub fn pages_per_sec(&self) -> f64 {
        self.pages as f64 / self.wall.as_secs_f64().max(1e-9)
    }

    /// The crawler's CPU a page, where the platform reports it.
    pub fn cpu_ms_per_page(&self) -> Option<f64> {
        Some(ms_per_page(self.usage?.cpu, self.pages))
    }

    pub fn render(&self) -> String {
        let mb = self.bytes as f64 / 1e6;
        let mut out = format!(
            "pages          {}\nwall time      {:.2} s\npages/s        {:.0}\nMB/s           {:.1} ({:.1} MB)\n",
            self.pages,
            self.wall.as_secs_f64(),
            self.pages_per_sec(),
            mb / self.wall.as_secs_f64().max(1e-9),
            mb
        );
        match self.usage {
            Some(usage) => {
                let cpu = usage.cpu.as_secs_f64();
                let pages = self.pages.max(1) as f64;
                out.push_str(&format!(
                    "CPU time       {cpu:.2} s ({:.0}% of one core; the crawler alone)\n",
                    100.0 * cpu / self.wall.as_secs_f64().max(1e-9)
                ));
                out.push_str(&format!(
                    "per page       {:.3} ms CPU, {:.2} context switches ({:.2} voluntary)\n",
                    ms_per_page(usage.cpu, self.pages),
                    usage.switches() as f64 / pages,
                    usage.voluntary_switches as f64 / pages,
                ));
            }
            None => out.push_str("CPU time       n/a on this platform\n"),
        }
        match self.peak_rss_bytes {
            Some(b) => out.push_str(&format!("peak RSS       {:.0} MB\n", b as f64 / 1e6)),
            None => out.push_str("peak RSS       n/a on this platform\n"),
        }
        if let Some(web) = self.web {
            out.push_str(&format!(
                "generated web  {:.2} s CPU, peak RSS {:.0} MB (its own process, not counted above)\n",
                web.cpu.as_secs_f64(),
                web.peak_rss_bytes as f64 / 1e6
            ));
        }
        let alerts: u64 = self.alerts.values().sum();
        let kinds: Vec<String> = self
            .alerts
            .iter()
            .map(|(kind, n)| format!("{kind} {n}"))
            .collect();
        out.push_str(&match alerts {
            0 => "trap alerts    0\n".to_string(),
            n => format!(
                "trap alerts    {n} ({}; false positives)\n",
                kinds.join(", ")
            ),
        });
        if let Some(p) = self.previews {
            out.push_str(&format!(
                "rule previews  {} asked (one per {} ms), {} answered, {} sampled (over the time budget)\n",
                p.asked,
                PREVIEW_EVERY.as_millis(),
                p.answered,
                p.sampled
            ));
        }
        if let Some(pace) = &self.pace {
            out.push_str(&pace.render());
        }
        if let Some(polite) = &self.politeness {
            out.push_str(&polite.render(self.pace.as_ref()));
        }
        out.push_str(&match self.archive {
            ArchiveMeasure::Off => "archive        off (no WARC files)\n".to_string(),
            ArchiveMeasure::On => "archive        WARC files written\n".to_string(),
            ArchiveMeasure::WithFloor(floor) => {
                "archive        WARC files written\n".to_string()
                    + &floor.render(self.pages, self.cpu_ms_per_page())
            }
        });
        out.push_str(&format!(
            "errors         {}\nlink extraction (1 core, ~23 KB pages, ~50 links): {:.0} pages/s\n",
            self.errors, self.extraction_pages_per_sec
        ));
        if let Some(rounds) = &self.rounds {
            out.push_str(&rounds.render());
        }
        out
    }
}

/// The configuration used for the benchmark crawl: many hosts in parallel,
/// by default without a politeness delay, everything else as in a real crawl
/// (robots, WARC, dedup).
pub fn bench_config(seeds: &[Url], pages: usize, delay: Duration) -> CrawlConfig {
    let mut cfg = CrawlConfig {
        seeds: seeds.iter().map(|u| u.to_string()).collect(),
        max_pages: pages as u64,
        max_depth: 1000,
        concurrency: 128,
        ..CrawlConfig::default()
    };
    if !delay.is_zero() {
        // One request at a time per host, and room for every host at once:
        // a page holds its slot until processed, and hosts that started
        // together come due together, so 128 slots made 2,000 hosts wait
        // their turn beyond their delay.
        cfg.politeness.per_host = 1;
        cfg.concurrency = cfg.concurrency.max(seeds.len());
    } else {
        cfg.politeness.per_host = 4;
    }
    cfg.politeness.min_delay = delay;
    cfg.politeness.delay_factor = 0.0;
    cfg.traps.policy = TrapPolicy::AlertOnly;
    cfg
}

/// Milliseconds of `time` a page.
fn ms_per_page(time: Duration, pages: u64) -> f64 {
    1e3 * time.as_secs_f64() / pages.max(1) as f64
}

pub async fn run(opts: BenchOptions) -> anyhow::Result<BenchReport> {
    let extraction_pages_per_sec =
        tokio::task::spawn_blocking(|| crate::engine::extract::measure_extraction(3000))
            .await?
            .pages_per_sec;
    let rounds = opts.rounds.max(1);
    let several_crawls = rounds > 1 || (opts.warc && opts.archive_floor);
    let (mut figures, mut last) = (Vec::with_capacity(rounds), None);
    for round in 1..=rounds {
        if !reset_peak_rss() && several_crawls && round == 1 {
            eprintln!("the peak RSS reported covers every crawl so far: it cannot be reset here");
        }
        let data = match rounds {
            1 => opts.data.clone(),
            _ => {
                eprintln!("round {round} of {rounds}");
                // A fresh crawl each round, not a resumed one.
                opts.data.as_ref().map(|d| d.join(format!("round-{round}")))
            }
        };
        let this = run_round(
            BenchOptions {
                data,
                ..opts.clone()
            },
            extraction_pages_per_sec,
        )
        .await?;
        figures.push(RoundFigures::of(&this));
        last = Some(this);
    }
    let last = last.context("no round was run")?;
    Ok(BenchReport {
        rounds: (rounds > 1).then_some(Rounds(figures)),
        ..last
    })
}

/// One round: the crawl, or with `--archive-floor` the same crawl without
/// the archive and then with it.
async fn run_round(
    opts: BenchOptions,
    extraction_pages_per_sec: f64,
) -> anyhow::Result<BenchReport> {
    if !(opts.warc && opts.archive_floor) {
        return run_once(opts, extraction_pages_per_sec).await;
    }
    // What the archive adds is set against the same crawl without it, run
    // first in the same sitting.
    eprintln!("first the same crawl without the archive, to set what the archive adds against");
    let without = run_once(
        BenchOptions {
            warc: false,
            archive_floor: false,
            data: None,
            ..opts.clone()
        },
        extraction_pages_per_sec,
    )
    .await?;
    eprintln!("then with the archive");
    reset_peak_rss();
    let mut report = run_once(opts, extraction_pages_per_sec).await?;
    if let ArchiveMeasure::WithFloor(floor) = &mut report.archive {
        floor.without_archive_ms = without.cpu_ms_per_page();
    }
    Ok(report)
}

/// One crawl of a new generated web; link extraction's speed, measured
/// alone before, goes into its report.
async fn run_once(
    opts: BenchOptions,
    extraction_pages_per_sec: f64,
) -> anyhow::Result<BenchReport> {
    let (pages, hosts) = (opts.pages, opts.hosts);
    let web = tokio::task::spawn_blocking(move || ChildWeb::start(pages, hosts)).await??;
    let temp;
    let dir = match &opts.data {
        Some(d) => d.clone(),
        None => {
            temp = tempfile::tempdir().context("creating a temporary data directory")?;
            temp.path().to_path_buf()
        }
    };
    let mut cfg = bench_config(web.seeds(), opts.pages, opts.delay);
    cfg.storage.warc = opts.warc;
    cfg.extract = opts.extract.clone();
    if opts.archive_floor {
        ArchiveWork::start();
    }
    let usage_before = Usage::now();
    let started = Instant::now();
    let running = crate::engine::start(cfg, &dir, std::future::pending()).await?;
    let (snapshot, previews, pace) = match (opts.tui, opts.previews) {
        (true, _) => (with_tui(running).await?, None, None),
        (false, true) => {
            let (snapshot, load) = with_previews(running).await?;
            (snapshot, Some(load), None)
        }
        (false, false) => {
            let site_pages = DemoWeb::bench_pages(opts.pages, opts.hosts) as u64;
            let (snapshot, pace) = with_progress(running, site_pages, started).await?;
            (snapshot, None, pace)
        }
    };
    let wall = started.elapsed();
    let usage = match (usage_before, Usage::now()) {
        (Some(before), Some(after)) => Some(after.since(&before)),
        _ => None,
    };
    let web_usage = tokio::task::spawn_blocking(move || web.stop()).await?;
    let archive = match (opts.warc, opts.archive_floor) {
        (false, _) => ArchiveMeasure::Off,
        (true, false) => ArchiveMeasure::On,
        (true, true) => {
            let work = ArchiveWork::so_far();
            let warc = dir.join(crate::engine::store::warc::WARC_DIR);
            let floor = tokio::task::spawn_blocking(move || floor::measure(&warc))
                .await?
                .context("timing the compression of the crawl's WARC records")?;
            ArchiveMeasure::WithFloor(FloorReport {
                floor,
                work,
                without_archive_ms: None,
            })
        }
    };
    Ok(BenchReport {
        pages: snapshot.counters.pages_fetched,
        wall,
        bytes: snapshot.counters.bytes,
        usage,
        peak_rss_bytes: peak_rss(),
        web: web_usage,
        extraction_pages_per_sec,
        errors: snapshot.counters.errors,
        alerts: snapshot
            .alerts
            .iter()
            .fold(Default::default(), |mut by_kind, alert| {
                *by_kind.entry(alert.kind.label()).or_default() += 1;
                by_kind
            }),
        previews,
        pace,
        archive,
        politeness: (!opts.delay.is_zero()).then_some(Politeness {
            delay: opts.delay,
            hosts: opts.hosts,
        }),
        rounds: None,
    })
}

/// The plain crawl, with a progress line on stderr every [`progress_step`] pages.
async fn with_progress(
    running: crate::engine::RunningEngine,
    pages: u64,
    started: Instant,
) -> anyhow::Result<(Snapshot, Option<Pace>)> {
    let crate::engine::RunningEngine { handle, done, .. } = running;
    let mut snapshots = handle.snapshots;
    let cpu_at_start = Usage::now().map_or(Duration::ZERO, |u| u.cpu);
    let threads = ThreadGroupsCpu::new([is_page_thread, is_crawl_loop, is_store_worker]);
    let now = |pages| {
        let [page_cpu, loop_cpu, store_cpu] = threads.since_start();
        Progress {
            pages,
            at: started.elapsed(),
            cpu: Usage::now().map_or(Duration::ZERO, |u| u.cpu.saturating_sub(cpu_at_start)),
            page_cpu,
            loop_cpu,
            store_cpu,
        }
    };
    let mut last = Progress::START;
    let mut tenths = Tenths::new(pages);
    let step = progress_step(pages);
    tokio::pin!(done);
    let snapshot = loop {
        tokio::select! {
            result = &mut done => break result??,
            changed = snapshots.changed() => {
                if changed.is_err() {
                    break done.await??;
                }
                let at = now(snapshots.borrow_and_update().counters.pages_fetched);
                tenths.observe(at);
                if at.pages >= last.pages + step {
                    eprintln!("{}", at.line(&last, current_rss()));
                    last = at;
                }
            }
        }
    };
    let pace = tenths.pace(now(snapshot.counters.pages_fetched));
    Ok((snapshot, pace))
}

/// The crawl while a rule preview is asked for every [`PREVIEW_EVERY`], so the
/// difference to a plain run is what previews cost the crawl.
async fn with_previews(
    running: crate::engine::RunningEngine,
) -> anyhow::Result<(Snapshot, PreviewLoad)> {
    use crate::engine::control::{Command, PatternKind, RuleSpec};
    use crate::engine::telemetry::EngineEvent;

    let crate::engine::RunningEngine { handle, done, .. } = running;
    let (control, mut events) = (handle.control, handle.events);
    let _snapshots = handle.snapshots;
    let spec = RuleSpec {
        kind: PatternKind::Regex,
        pattern: r"/[a-z]*\d*7\d*$".into(),
        host: None,
    };
    let mut load = PreviewLoad::default();
    let mut ticker = tokio::time::interval(PREVIEW_EVERY);
    tokio::pin!(done);
    loop {
        tokio::select! {
            result = &mut done => return Ok((result??, load)),
            _ = ticker.tick() => {
                control.send(Command::Preview(spec.clone()));
                load.asked += 1;
            }
            Some(event) = events.recv() => {
                if let EngineEvent::CommandDone(result) = event {
                    load.answered += 1;
                    if result.outcome.is_ok_and(|text| text.contains("sampled")) {
                        load.sampled += 1;
                    }
                }
            }
        }
    }
}

/// The crawl with the TUI's event loop drawing every frame, so the difference
/// to a plain run is the UI's cost: into the terminal when standard output is
/// one (run it in a pseudo-terminal to count the terminal's output too), else
/// into an 80x24 screen in memory.
async fn with_tui(running: crate::engine::RunningEngine) -> anyhow::Result<Snapshot> {
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;
    use std::io::IsTerminal;

    let (keymap, _) = crate::tui::keys::effective_keymap(None);
    let model = crate::tui::model::Model::new(keymap, true, false);
    let (_input_tx, input_rx) = tokio::sync::mpsc::channel(1);
    let (done_tx, done_rx) = tokio::sync::oneshot::channel::<()>();
    let done = async {
        let _ = done_rx.await;
    };
    let handle = running.handle;
    let on_terminal = std::io::stdout().is_terminal();
    let ui = tokio::spawn(async move {
        use crate::tui::app::drive;
        if on_terminal {
            let mut terminal = ratatui::try_init()?;
            let drawn = drive(&mut terminal, handle, model, input_rx, done).await;
            ratatui::restore();
            drawn
        } else {
            let mut terminal = Terminal::new(TestBackend::new(80, 24))?;
            drive(&mut terminal, handle, model, input_rx, done).await
        }
    });
    let snapshot = running.done.await??;
    let _ = done_tx.send(());
    let _ = tokio::time::timeout(Duration::from_secs(5), ui).await;
    Ok(snapshot)
}
