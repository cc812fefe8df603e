//! Building the coordinator: open the data directory, let each part restore
//! what a previous run stored, and queue the seeds.

use std::path::Path;
use std::time::Duration;

use tokio::sync::mpsc;
use url::Url;

use super::commands::{Settings, SETTINGS_KEY};
use super::journal::Journal;
use super::{Coordinator, RunState};
use crate::engine::alerts::Alerts;
use crate::engine::archive::Archive;
use crate::engine::config::{parse_seed, CrawlConfig};
use crate::engine::cpu_pool::CpuPool;
use crate::engine::extract::custom::Extractions;
use crate::engine::extract::ExtractOptions;
use crate::engine::fetch::Fetcher;
use crate::engine::frontier::{
    key_prefix, refuse_worker_dir, Frontier, FrontierEntry, FrontierStore, Hold, RedisFrontier,
};
use crate::engine::hosts::HostTable;
use crate::engine::outbox::Outbox;
use crate::engine::probes::SoftProbes;
use crate::engine::recrawl;
use crate::engine::robots::SharedRobots;
use crate::engine::rules::OperatorRules;
use crate::engine::sitemaps::SitemapFiles;
use crate::engine::slots::FetchSlots;
use crate::engine::stats::CrawlStats;
use crate::engine::store::faults::DiskFaults;
use crate::engine::store::warc::WarcWriter;
use crate::engine::store::{Store, StoreError, Tree};
use crate::engine::tasks::{Work, Workers};
use crate::engine::telemetry::CrawlState;
use crate::engine::timers::Timers;
use crate::engine::traps::TrapDetector;
use crate::engine::url_norm::{self, UrlFilter};
use crate::engine::{EngineEnds, EngineError, EngineOptions, RunOverrides};

/// Page processing threads at most; beyond this the coordinator is the limit.
const MAX_CPU_THREADS: usize = 8;
/// Meta key of the seeds of every run of the crawl.
const SEEDS_KEY: &[u8] = b"seeds";

fn store_err(e: StoreError) -> EngineError {
    EngineError::Store(e.to_string())
}

pub(in crate::engine) fn build(
    config: CrawlConfig,
    data_dir: &Path,
    ends: EngineEnds,
    options: EngineOptions,
) -> Result<Coordinator, EngineError> {
    let store = open_store(&config, data_dir, &options.disk_faults)?;
    let OpenFrontier {
        mut frontier,
        seeds,
        joined: cluster_line,
    } = open_frontier(&store, &config, data_dir, &options)?;
    // Robots first: every host the frontier creates waits for its robots.txt.
    frontier.set_initial_holds(&[Hold::Robots]);
    frontier
        .set_default_max_in_flight(config.politeness.per_host)
        .map_err(store_err)?;
    let fetcher = Fetcher::with_rules(&config, &options.address_rules)
        .map_err(|e| EngineError::Config(e.to_string()))?;

    for seed in &seeds {
        fetcher.guard().add_seed(seed);
    }
    let filter = UrlFilter::new(&config.scope, &seeds);

    let mut rules = OperatorRules::load(&store).map_err(store_err)?;
    let mut traps = TrapDetector::new(&config.traps);
    let mut alerts = Alerts::load(&store).map_err(store_err)?;
    for (host, kind, rule) in alerts.raised() {
        // A decided or open pattern is not raised again after a restart.
        traps.mark_raised(&host, kind, &rule);
    }
    let probes = SoftProbes::load(&store).map_err(store_err)?;
    let sitemaps =
        SitemapFiles::load(&store, config.sitemaps.max_files_per_host).map_err(store_err)?;
    let mut config = config;
    // A pending file is known to the worker that queued it only: another
    // worker of a shared crawl would take it for a page.
    config.sitemaps.enabled &= options.cluster.is_none();
    let journal = Journal::load(&store).map_err(store_err)?;
    let operator = restore_settings(&store, &config, &options.overrides, &mut rules, &mut alerts)?;
    let recrawl_pass = recrawl_pass(&store, frontier.as_mut(), options.recrawl)?;
    // A recrawl pass has counters, limits and elapsed time of its own.
    let stats = CrawlStats::load(&store, options.recrawl).map_err(store_err)?;
    queue_new_seeds(frontier.as_mut(), &seeds)?;
    if options.cluster.is_none() {
        refuse_empty_crawl(&store, frontier.as_mut(), &seeds, data_dir)?;
    }

    let (workers, results) = workers(&config, data_dir, &store, fetcher, &options)?;
    let mut hosts = HostTable::new(
        store.clone(),
        config.politeness.clone(),
        config.breaker.clone(),
        config.robots.clone(),
        operator.default_delay,
    );
    hosts.restore_met(recrawl_pass).map_err(store_err)?;
    let mut settings_report = operator.report;
    settings_report.push(workers.address_guard().describe());
    settings_report.extend(cluster_line);
    if !config.extract.is_empty() {
        let specs: Vec<String> = config.extract.iter().map(|s| s.describe()).collect();
        settings_report.push(format!("custom extraction: {}", specs.join(", ")));
    }
    let mut coordinator = Coordinator {
        data_dir: data_dir.display().to_string(),
        store,
        frontier,
        filter,
        rules,
        traps,
        alerts,
        probes,
        sitemaps,
        hosts,
        workers,
        results,
        commands: ends.commands,
        outbox: Outbox::new(ends.events, ends.snapshots),
        robots_wanted: Vec::new(),
        timers: Timers::default(),
        retries: Default::default(),
        external_hosts: Default::default(),
        stats,
        slots: operator.slots,
        run: RunState {
            state: CrawlState::Starting,
            paused: operator.paused,
            draining: false,
            stopped: false,
            finish_reason: None,
            fault: None,
            wait_for_operator: options.wait_for_operator,
            recrawl_pass,
            outage: None,
        },
        group_commit: Default::default(),
        settings_report,
        returns: Default::default(),
        previews: Default::default(),
        sweeps: Default::default(),
        journal,
        cfg: config,
    };
    coordinator.resume_pending();
    Ok(coordinator)
}

/// The frontier a crawl starts with.
struct OpenFrontier {
    /// This process's, or with `--redis` the shared one.
    frontier: Box<dyn FrontierStore>,
    /// The seeds of every run of the crawl (of every worker's, if shared).
    seeds: Vec<Url>,
    /// For a worker, which shared crawl it joined.
    joined: Option<String>,
}

fn open_frontier(
    store: &Store,
    config: &CrawlConfig,
    data_dir: &Path,
    options: &EngineOptions,
) -> Result<OpenFrontier, EngineError> {
    let seeds = all_seeds(store, config)?;
    let Some(target) = &options.cluster else {
        refuse_worker_dir(data_dir).map_err(EngineError::Config)?;
        let frontier = Frontier::open(store).map_err(store_err)?;
        return Ok(OpenFrontier {
            frontier: Box::new(frontier),
            seeds,
            joined: None,
        });
    };
    let mut shared = RedisFrontier::open(target, data_dir, store).map_err(store_err)?;
    let seeds = shared_seeds(&mut shared, &seeds)?;
    let joined = format!(
        "shared frontier: crawl {} on {}, this worker is {} (host leases of {:?})",
        target.crawl,
        target.url,
        shared.worker(),
        target.lease_ttl
    );
    Ok(OpenFrontier {
        frontier: Box::new(shared),
        seeds,
        joined: Some(joined),
    })
}

/// The crawl-wide settings this run starts with.
struct OperatorSettings {
    slots: FetchSlots,
    paused: bool,
    default_delay: Duration,
    /// Each setting with where it came from, for front ends to show.
    report: Vec<String>,
}

/// One crawl-wide setting: a flag for this run wins, else what an operator
/// set in an earlier run, else the configuration. Returns the value and a
/// line saying where it came from.
fn pick<T: Copy + PartialEq>(
    name: &str,
    configured: T,
    stored: Option<T>,
    flag: Option<T>,
    show: impl Fn(T) -> String,
) -> (T, String) {
    match (flag, stored) {
        (Some(v), Some(s)) if s != v && s != configured => (
            v,
            format!(
                "{name} {} (given for this run, over {} set by the operator)",
                show(v),
                show(s)
            ),
        ),
        (Some(v), _) => (v, format!("{name} {} (given for this run)", show(v))),
        (None, Some(s)) if s != configured => (
            s,
            format!("{name} {} (set by the operator in an earlier run)", show(s)),
        ),
        (None, _) => (
            configured,
            format!("{name} {} (configuration)", show(configured)),
        ),
    }
}

/// The crawl-wide settings (pause, delay, concurrency, rate): flags for this
/// run, else what the operator left, else crawl.toml's. Rule and alert
/// numbers are never reused.
fn restore_settings(
    store: &Store,
    config: &CrawlConfig,
    overrides: &RunOverrides,
    rules: &mut OperatorRules,
    alerts: &mut Alerts,
) -> Result<OperatorSettings, EngineError> {
    let stored: Option<Settings> = store.get(Tree::Meta, SETTINGS_KEY).map_err(store_err)?;
    if let Some(s) = &stored {
        rules.reserve_ids_below(s.next_rule_id);
        alerts.reserve_ids_below(s.next_alert_id);
    }
    let show_rate = |r: Option<f64>| r.map_or("none".to_string(), |r| format!("{r} pages/s"));
    let configured_rate = (config.max_rate > 0.0).then_some(config.max_rate);
    let flag_rate = overrides.max_rate.map(|r| (r > 0.0).then_some(r));
    let (delay, delay_line) = pick(
        "default delay",
        config.politeness.min_delay,
        stored.as_ref().map(|s| s.global_delay),
        overrides.delay,
        |d| humantime::format_duration(d).to_string(),
    );
    let (concurrency, concurrency_line) = pick(
        "concurrency",
        config.concurrency,
        stored.as_ref().map(|s| s.global_concurrency),
        overrides.concurrency,
        |n| n.to_string(),
    );
    let (rate, rate_line) = pick(
        "rate cap",
        configured_rate,
        stored.as_ref().map(|s| s.global_rate),
        flag_rate,
        show_rate,
    );
    let was_paused = stored.as_ref().is_some_and(|s| s.paused);
    let paused = overrides.paused.unwrap_or(was_paused);
    let paused_line = match (paused, was_paused, overrides.paused) {
        (true, _, Some(true)) => "paused (given for this run)".to_string(),
        (true, _, _) => "paused (the operator paused it in an earlier run)".to_string(),
        (false, true, _) => {
            "running (the last run was left paused; start with --paused to keep it paused)"
                .to_string()
        }
        (false, false, _) => "running".to_string(),
    };
    Ok(OperatorSettings {
        slots: FetchSlots::new(concurrency, rate),
        paused,
        default_delay: delay,
        report: vec![paused_line, delay_line, concurrency_line, rate_line],
    })
}

/// The seeds of this run and of earlier ones (which keep a resumed crawl's
/// scope), normalized; stored for the next run.
fn all_seeds(store: &Store, config: &CrawlConfig) -> Result<Vec<Url>, EngineError> {
    let mut texts: Vec<String> = store
        .get(Tree::Meta, SEEDS_KEY)
        .map_err(store_err)?
        .unwrap_or_default();
    for s in &config.seeds {
        if !texts.contains(s) {
            texts.push(s.clone());
        }
    }
    store
        .put(Tree::Meta, SEEDS_KEY, &texts)
        .map_err(store_err)?;
    texts
        .iter()
        .map(|s| {
            parse_seed(s).map(|mut u| {
                url_norm::normalize(&mut u);
                u
            })
        })
        .collect::<Result<_, _>>()
        .map_err(EngineError::Config)
}

/// A crawl with no seeds, nothing queued or parked and no page recorded
/// would end at once as if done: say how to give it seeds instead.
fn refuse_empty_crawl(
    store: &Store,
    frontier: &mut dyn FrontierStore,
    seeds: &[Url],
    data_dir: &Path,
) -> Result<(), EngineError> {
    if !seeds.is_empty() || store.has_pages() {
        return Ok(());
    }
    let counts = frontier.counts().map_err(store_err)?;
    if counts.queued + counts.parked + counts.in_flight > 0 {
        return Ok(());
    }
    let dir = data_dir.display();
    Err(EngineError::Config(format!(
        "{dir} has no seeds and nothing queued: give a URL, `crawldeck crawl --headless URL --data {dir}`"
    )))
}

/// The seeds of every worker of a shared crawl (scope and allowed address
/// classes come from them, also on a worker that joined without seeds).
fn shared_seeds(frontier: &mut RedisFrontier, mine: &[Url]) -> Result<Vec<Url>, EngineError> {
    let texts: Vec<String> = mine.iter().map(Url::to_string).collect();
    let all = frontier.share_seeds(&texts).map_err(store_err)?;
    all.iter()
        .map(|s| Url::parse(s).map_err(|e| EngineError::Config(format!("shared seed {s}: {e}"))))
        .collect()
}

/// Queues the seeds the crawl has not seen yet.
fn queue_new_seeds(frontier: &mut dyn FrontierStore, seeds: &[Url]) -> Result<(), EngineError> {
    let texts: Vec<&str> = seeds.iter().map(Url::as_str).collect();
    let fresh = frontier.claim_unseen(&texts).map_err(store_err)?;
    let new_seeds = seeds
        .iter()
        .zip(fresh)
        .filter(|(_, fresh)| *fresh)
        .map(|(seed, _)| FrontierEntry {
            url: seed.to_string(),
            host: url_norm::host_key(seed),
            depth: 0,
            priority: 0,
            redirects: 0,
            kind: crate::engine::store::UrlKind::Page,
        })
        .collect();
    frontier.push(new_seeds).map_err(store_err)?;
    Ok(())
}

/// The fetch workers and the channel their results arrive on.
fn workers(
    config: &CrawlConfig,
    data_dir: &Path,
    store: &Store,
    fetcher: Fetcher,
    options: &EngineOptions,
) -> Result<(Workers, mpsc::UnboundedReceiver<Work>), EngineError> {
    let faults = &options.disk_faults;
    let warc = if config.storage.warc {
        let writer =
            WarcWriter::open_with_faults(data_dir, config.storage.warc_max_bytes, faults.clone())
                .map_err(|e| EngineError::DataDir {
                path: data_dir
                    .join(crate::engine::store::warc::WARC_DIR)
                    .display()
                    .to_string(),
                message: format!("cannot open WARC output: {e}"),
            })?;
        Some(Archive::new(writer, store.clone(), data_dir.to_path_buf()))
    } else {
        None
    };
    let extract = ExtractOptions {
        product_token: config.identity.token(),
        max_links: config.scope.max_links_per_page,
        max_link_bytes: config.scope.max_link_bytes_per_page,
        max_url_len: config.scope.max_url_len,
        max_resources: config.checks.resources_per_page(),
    };
    let (mut workers, results) = Workers::new(
        fetcher,
        extract,
        warc,
        CpuPool::new(MAX_CPU_THREADS),
        config.fetch.max_body,
        config.robots.clone(),
    );
    let custom = Extractions::compile(&config.extract).map_err(EngineError::Config)?;
    workers.set_extractions(custom);
    if let Some(target) = &options.cluster {
        // Workers of one shared crawl fetch each robots.txt once between them.
        let cache = SharedRobots::new(&target.url, key_prefix(&target.crawl))
            .map_err(|e| EngineError::Config(format!("--redis {}: {e}", target.url)))?;
        workers.share_robots(cache);
    }
    Ok((workers, results))
}

/// Checks the settings, then opens (or creates) the crawl's store.
fn open_store(
    config: &CrawlConfig,
    data_dir: &Path,
    faults: &DiskFaults,
) -> Result<Store, EngineError> {
    config
        .validate()
        .map_err(|e| EngineError::Config(e.to_string()))?;
    crate::engine::store::private::create_private_dir_all(data_dir).map_err(|e| {
        EngineError::DataDir {
            path: data_dir.display().to_string(),
            message: format!("cannot create it: {e}"),
        }
    })?;
    Store::open_with_faults(data_dir, config.storage.cache_bytes, faults.clone()).map_err(store_err)
}

/// The recrawl pass this run is in: a new one started with `--recrawl`
/// (every fetched page queued again with its validators), else the current one.
fn recrawl_pass(
    store: &Store,
    frontier: &mut dyn FrontierStore,
    start_new: bool,
) -> Result<u32, EngineError> {
    if !start_new {
        return recrawl::current_pass(store).map_err(store_err);
    }
    let (pass, queued) = recrawl::start_pass(store, frontier)?;
    tracing::info!("recrawl pass {pass}: {queued} pages queued with their validators");
    Ok(pass)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(store: &Store) {
        let settings = Settings {
            paused: true,
            global_delay: Duration::from_secs(5),
            global_concurrency: 3,
            global_rate: Some(2.0),
            next_rule_id: 7,
            next_alert_id: 4,
        };
        store
            .put(Tree::Meta, SETTINGS_KEY, &settings)
            .expect("settings stored");
    }

    #[test]
    fn flags_win_over_settings_the_operator_left_and_the_rest_is_kept() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Store::open(dir.path(), 1 << 20).expect("store");
        stored(&store);
        let config = CrawlConfig::default();
        let mut rules = OperatorRules::load(&store).expect("rules");
        let mut alerts = Alerts::load(&store).expect("alerts");
        let overrides = RunOverrides {
            delay: Some(Duration::from_millis(500)),
            ..RunOverrides::default()
        };
        let s = restore_settings(&store, &config, &overrides, &mut rules, &mut alerts)
            .expect("restored");
        assert_eq!(s.default_delay, Duration::from_millis(500), "the flag wins");
        assert_eq!(
            s.slots.concurrency(),
            3,
            "what the user did not give is kept"
        );
        assert_eq!(s.slots.rate(), Some(2.0));
        assert!(s.paused, "the terminal UI keeps a paused crawl paused");
        assert_eq!(rules.next_id(), 7, "rule numbers are not reused");
        assert_eq!(alerts.next_id(), 4);
        assert_eq!(
            s.report[1],
            "default delay 500ms (given for this run, over 5s set by the operator)"
        );
        assert_eq!(
            s.report[2],
            "concurrency 3 (set by the operator in an earlier run)"
        );

        let headless = RunOverrides {
            paused: Some(false),
            max_rate: Some(0.0),
            ..RunOverrides::default()
        };
        let s = restore_settings(&store, &config, &headless, &mut rules, &mut alerts)
            .expect("restored");
        assert!(!s.paused, "a headless resume runs unless --paused");
        assert!(s.report[0].contains("--paused"), "{}", s.report[0]);
        assert_eq!(s.slots.rate(), None, "--max-rate 0 lifts the stored cap");
        assert_eq!(s.default_delay, Duration::from_secs(5));
    }

    #[test]
    fn a_new_crawl_takes_its_settings_from_the_configuration() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Store::open(dir.path(), 1 << 20).expect("store");
        let config = CrawlConfig::default();
        let mut rules = OperatorRules::load(&store).expect("rules");
        let mut alerts = Alerts::load(&store).expect("alerts");
        let s = restore_settings(
            &store,
            &config,
            &RunOverrides::default(),
            &mut rules,
            &mut alerts,
        )
        .expect("restored");
        assert!(!s.paused);
        assert_eq!(s.default_delay, config.politeness.min_delay);
        assert_eq!(s.slots.concurrency(), config.concurrency);
        assert!(s
            .report
            .iter()
            .skip(1)
            .all(|l| l.ends_with("(configuration)")));
    }
}
