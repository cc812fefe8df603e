//! Building the coordinator: open the data directory, let each part restore
//! what a previous run stored, and queue the seeds.

use std::path::Path;

use tokio::sync::mpsc;
use tokio::time::Instant;
use url::Url;

use super::commands::{Settings, SETTINGS_KEY};
use super::{Coordinator, RunState};
use crate::engine::alerts::Alerts;
use crate::engine::config::{parse_seed, CrawlConfig};
use crate::engine::cpu_pool::CpuPool;
use crate::engine::extract::ExtractOptions;
use crate::engine::fetch::Fetcher;
use crate::engine::frontier::{Frontier, FrontierEntry, FrontierStore, Hold};
use crate::engine::hosts::HostTable;
use crate::engine::outbox::Outbox;
use crate::engine::recrawl;
use crate::engine::rules::OperatorRules;
use crate::engine::slots::FetchSlots;
use crate::engine::stats::CrawlStats;
use crate::engine::store::warc::WarcWriter;
use crate::engine::store::{Store, StoreError, Tree};
use crate::engine::tasks::{Work, Workers};
use crate::engine::telemetry::CrawlState;
use crate::engine::timers::Timers;
use crate::engine::traps::TrapDetector;
use crate::engine::url_norm::{self, UrlFilter};
use crate::engine::{EngineEnds, EngineError, EngineOptions};

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
    config
        .validate()
        .map_err(|e| EngineError::Config(e.to_string()))?;
    crate::engine::store::private::create_private_dir_all(data_dir).map_err(|e| {
        EngineError::DataDir {
            path: data_dir.display().to_string(),
            message: format!("cannot create it: {e}"),
        }
    })?;
    let store = Store::open(data_dir, config.storage.cache_bytes).map_err(store_err)?;
    let mut frontier: Box<dyn FrontierStore> = Box::new(Frontier::open(&store).map_err(store_err)?);
    // Robots first: every host the frontier creates waits for its robots.txt.
    frontier.set_initial_holds(&[Hold::Robots]);
    frontier
        .set_default_max_in_flight(config.politeness.per_host)
        .map_err(store_err)?;
    let fetcher = Fetcher::new(&config).map_err(|e| EngineError::Config(e.to_string()))?;

    let seeds = all_seeds(&store, &config)?;
    let filter = UrlFilter::new(&config.scope, &seeds);

    let mut rules = OperatorRules::load(&store).map_err(store_err)?;
    let mut traps = TrapDetector::new(&config.traps);
    let mut alerts = Alerts::load(&store).map_err(store_err)?;
    for (host, kind, rule) in alerts.raised() {
        // A decided or open pattern is not raised again after a restart.
        traps.mark_raised(&host, kind, &rule);
    }
    let operator = restore_settings(&store, &config, &mut rules, &mut alerts)?;
    let recrawl_pass = if options.recrawl {
        let (pass, queued) = recrawl::start_pass(&store, frontier.as_mut())?;
        tracing::info!("recrawl pass {pass}: {queued} pages queued with their validators");
        pass
    } else {
        recrawl::current_pass(&store).map_err(store_err)?
    };
    // A recrawl pass has counters, limits and elapsed time of its own.
    let stats = CrawlStats::load(&store, options.recrawl).map_err(store_err)?;
    queue_new_seeds(frontier.as_mut(), &seeds)?;

    let (workers, results) = workers(&config, data_dir, fetcher)?;
    let hosts = HostTable::new(
        store.clone(),
        config.politeness.clone(),
        config.breaker.clone(),
        config.robots.clone(),
        operator.default_delay,
    );
    Ok(Coordinator {
        data_dir: data_dir.display().to_string(),
        store,
        frontier,
        filter,
        rules,
        traps,
        alerts,
        hosts,
        workers,
        results,
        commands: ends.commands,
        outbox: Outbox::new(ends.events, ends.snapshots),
        robots_wanted: Vec::new(),
        timers: Timers::default(),
        retries: Default::default(),
        stats,
        slots: operator.slots,
        run: RunState {
            state: CrawlState::Starting,
            paused: operator.paused,
            draining: false,
            finish_reason: None,
            wait_for_operator: options.wait_for_operator,
            recrawl_pass,
        },
        unsynced: false,
        cfg: config,
    })
}

/// What the operator changed at runtime in earlier runs, over crawl.toml.
struct OperatorSettings {
    slots: FetchSlots,
    paused: bool,
    default_delay: std::time::Duration,
}

/// The crawl-wide settings the operator left (pause, delay, concurrency,
/// rate), or crawl.toml's; rule and alert numbers are never reused.
fn restore_settings(
    store: &Store,
    config: &CrawlConfig,
    rules: &mut OperatorRules,
    alerts: &mut Alerts,
) -> Result<OperatorSettings, EngineError> {
    let settings: Option<Settings> = store.get(Tree::Meta, SETTINGS_KEY).map_err(store_err)?;
    let rate = (config.max_rate > 0.0).then_some(config.max_rate);
    let mut restored = OperatorSettings {
        slots: FetchSlots::new(config.concurrency, rate),
        paused: false,
        default_delay: config.politeness.min_delay,
    };
    if let Some(s) = settings {
        restored.slots.set_rate(s.global_rate, Instant::now());
        restored.slots.set_concurrency(s.global_concurrency);
        restored.paused = s.paused;
        restored.default_delay = s.global_delay;
        rules.reserve_ids_below(s.next_rule_id);
        alerts.reserve_ids_below(s.next_alert_id);
    }
    Ok(restored)
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
        })
        .collect();
    frontier.push(new_seeds).map_err(store_err)?;
    Ok(())
}

/// The fetch workers and the channel their results arrive on.
fn workers(
    config: &CrawlConfig,
    data_dir: &Path,
    fetcher: Fetcher,
) -> Result<(Workers, mpsc::UnboundedReceiver<Work>), EngineError> {
    let warc = if config.storage.warc {
        let writer = WarcWriter::open(data_dir, config.storage.warc_max_bytes).map_err(|e| {
            EngineError::DataDir {
                path: data_dir.join("warc").display().to_string(),
                message: format!("cannot open WARC output: {e}"),
            }
        })?;
        Some(writer)
    } else {
        None
    };
    let extract = ExtractOptions {
        product_token: config.identity.product_token.clone(),
        max_links: config.scope.max_links_per_page,
        max_url_len: config.scope.max_url_len,
    };
    Ok(Workers::new(
        fetcher,
        extract,
        warc,
        CpuPool::new(MAX_CPU_THREADS),
        config.fetch.max_body,
        config.robots.clone(),
    ))
}
