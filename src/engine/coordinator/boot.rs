//! Building a scheduler: open the data directory, restore what a previous run
//! stored (seen set, rules, alerts, operator settings) and queue the seeds.

use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;

use super::commands::{RuleRecord, Settings};
use crate::engine::dedup::{url_fingerprint, BloomFilter, RecentSeen};
use crate::engine::extract::ExtractOptions;
use crate::engine::recrawl;

/// Page processing threads at most; beyond this the scheduler is the limit.
const MAX_CPU_THREADS: usize = 8;
use super::Coordinator;
use crate::engine::config::{parse_seed, CrawlConfig};
use crate::engine::fetch::Fetcher;
use crate::engine::frontier::{Frontier, FrontierEntry, Hold};
use crate::engine::politeness::RateLimiter;
use crate::engine::rules::RuleSet;
use crate::engine::stats::CounterRate;
use crate::engine::store::warc::WarcWriter;
use crate::engine::store::{Store, Tree};
use crate::engine::telemetry::{AlertStatus, Counters, CrawlState, TrapAlert};
use crate::engine::traps::TrapDetector;
use crate::engine::url_norm::{self, UrlFilter};
use crate::engine::{EngineEnds, EngineError, EngineOptions};

/// Bloom filter sizing: room for this many URLs beyond those already seen.
const BLOOM_HEADROOM: usize = 1_000_000;

pub fn build(
    config: CrawlConfig,
    data_dir: &Path,
    ends: EngineEnds,
    options: EngineOptions,
) -> Result<Coordinator, EngineError> {
    config
        .validate()
        .map_err(|e| EngineError::Config(e.to_string()))?;
    std::fs::create_dir_all(data_dir).map_err(|e| EngineError::DataDir {
        path: data_dir.display().to_string(),
        message: format!("cannot create it: {e}"),
    })?;
    let store_err = |e: crate::engine::store::StoreError| EngineError::Store(e.to_string());
    let store = Store::open(data_dir, config.storage.cache_bytes).map_err(store_err)?;
    let mut frontier = Frontier::open(&store).map_err(store_err)?;
    // Robots first: every host the frontier creates waits for its robots.txt.
    frontier.set_initial_holds(&[Hold::Robots]);
    frontier.set_default_max_in_flight(config.politeness.per_host);
    let fetcher = Fetcher::new(&config).map_err(|e| EngineError::Config(e.to_string()))?;

    // Seeds of earlier runs keep the scope of a resumed crawl.
    let mut seed_texts: Vec<String> = store
        .get(Tree::Meta, b"seeds")
        .map_err(store_err)?
        .unwrap_or_default();
    for s in &config.seeds {
        if !seed_texts.contains(s) {
            seed_texts.push(s.clone());
        }
    }
    store
        .put(Tree::Meta, b"seeds", &seed_texts)
        .map_err(store_err)?;
    let seeds: Vec<url::Url> = seed_texts
        .iter()
        .map(|s| {
            parse_seed(s).map(|mut u| {
                url_norm::normalize(&mut u);
                u
            })
        })
        .collect::<Result<_, _>>()
        .map_err(EngineError::Config)?;
    let filter = UrlFilter::new(&config.scope, &seeds);

    let mut seen_count = 0usize;
    store
        .for_each_seen(|_| seen_count += 1)
        .map_err(store_err)?;
    let mut bloom = BloomFilter::new(seen_count + BLOOM_HEADROOM, 0.01);
    store
        .for_each_seen(|fp| bloom.insert(fp))
        .map_err(store_err)?;

    let mut rules = RuleSet::default();
    let mut next_rule_id = 1;
    for (_, record) in store.scan::<RuleRecord>(Tree::Rules).map_err(store_err)? {
        next_rule_id = next_rule_id.max(record.id + 1);
        if let Err(e) = rules.add_with_hits(record.id, record.spec, record.origin, record.hits) {
            tracing::warn!("stored rule #{} no longer compiles: {e}", record.id);
        }
    }
    let mut traps = TrapDetector::new(&config.traps);
    let mut alerts = BTreeMap::new();
    let mut alert_rules = HashMap::new();
    let mut next_alert_id = 1;
    for (_, alert) in store.scan::<TrapAlert>(Tree::Alerts).map_err(store_err)? {
        next_alert_id = next_alert_id.max(alert.id + 1);
        // A decided or open pattern is not raised again after a restart.
        traps.mark_raised(&alert.host, alert.kind, &alert.suggested_rule);
        if alert.status == AlertStatus::Open {
            if let Ok(rule) = RuleSet::compile(&alert.suggested_rule) {
                alert_rules.insert(alert.id, rule);
            }
        }
        alerts.insert(alert.id, alert);
    }
    let settings: Option<Settings> = store.get(Tree::Meta, b"settings").map_err(store_err)?;
    let now = Instant::now();
    let mut rate = RateLimiter::new((config.max_rate > 0.0).then_some(config.max_rate));
    let (paused, global_delay, global_concurrency) = match &settings {
        Some(s) => {
            rate.set_rate(s.global_rate, now);
            next_rule_id = next_rule_id.max(s.next_rule_id);
            next_alert_id = next_alert_id.max(s.next_alert_id);
            (s.paused, s.global_delay, s.global_concurrency)
        }
        None => (false, config.politeness.min_delay, config.concurrency),
    };
    let mut counters: Counters = store
        .get(Tree::Meta, b"counters")
        .map_err(store_err)?
        .unwrap_or_default();
    let mut elapsed_ms: u64 = store
        .get(Tree::Meta, b"elapsed_ms")
        .map_err(store_err)?
        .unwrap_or(0);
    let recrawl_pass = if options.recrawl {
        let (pass, queued) = recrawl::start_pass(&store, &mut frontier)?;
        tracing::info!("recrawl pass {pass}: {queued} pages queued with their validators");
        // Counters, limits and elapsed time are the new pass's own.
        counters = Counters::default();
        elapsed_ms = 0;
        pass
    } else {
        store
            .get(Tree::Meta, recrawl::PASS_KEY)
            .map_err(store_err)?
            .unwrap_or(0)
    };

    let warc = if config.storage.warc {
        let writer = WarcWriter::open(data_dir, config.storage.warc_max_bytes).map_err(|e| {
            EngineError::DataDir {
                path: data_dir.join("warc").display().to_string(),
                message: format!("cannot open WARC output: {e}"),
            }
        })?;
        Some(Arc::new(Mutex::new(writer)))
    } else {
        None
    };

    let mut new_seeds = Vec::new();
    for seed in &seeds {
        let fp = url_fingerprint(seed.as_str());
        if bloom.might_contain(fp) && store.seen_contains(fp).map_err(store_err)? {
            continue;
        }
        bloom.insert(fp);
        new_seeds.push(FrontierEntry {
            url: seed.to_string(),
            host: url_norm::host_key(seed),
            depth: 0,
            priority: 0,
            redirects: 0,
        });
    }
    frontier.push(new_seeds).map_err(store_err)?;

    let extract = Arc::new(ExtractOptions {
        product_token: config.identity.product_token.clone(),
        max_links: config.scope.max_links_per_page,
        max_url_len: config.scope.max_url_len,
    });
    let (work_tx, work_rx) = mpsc::unbounded_channel();
    let scheduler = Coordinator {
        traps,
        data_dir: data_dir.display().to_string(),
        store,
        frontier,
        fetcher,
        filter,
        rules,
        bloom,
        recent_seen: RecentSeen::new(super::RECENT_SEEN),
        hosts: HashMap::new(),
        alerts,
        alert_rules,
        extract,
        warc,
        cpu: crate::engine::cpu_pool::CpuPool::new(MAX_CPU_THREADS),
        ends,
        work_tx,
        work_rx,
        robots_wanted: Vec::new(),
        timers: BinaryHeap::new(),
        attempts: HashMap::new(),
        counters,
        unsynced: false,
        in_flight: 0,
        robots_in_flight: 0,
        state: CrawlState::Starting,
        paused,
        draining: false,
        global_delay,
        global_concurrency,
        rate,
        rate_wake: None,
        next_rule_id,
        next_alert_id,
        started: now,
        elapsed_before: Duration::from_millis(elapsed_ms),
        pages_rate: CounterRate::new(Duration::from_secs(5)),
        bytes_rate: CounterRate::new(Duration::from_secs(5)),
        dropped_events: 0,
        finish_reason: None,
        wait_for_operator: options.wait_for_operator,
        recrawl_pass,
        cfg: config,
    };
    Ok(scheduler)
}
