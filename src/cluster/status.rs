//! `crawldeck status --redis URL --crawl NAME`: the shared crawl as Redis
//! holds it — queues, seen URLs, hosts held, and each worker's heartbeat.

use std::collections::HashMap;
use std::io::Write;
use std::time::Duration;

use serde::Serialize;

use super::publish::snapshot_key;
use crate::engine::control::{PatternKind, RuleSpec};
use crate::engine::telemetry::Snapshot;
use crate::engine::{alert_raisers_key, key_prefix, ClusterTarget, Heartbeat};
use crate::remote::{OpenAlert, StatusReport};
use crate::text::strip_control;

/// URLs waiting to be fetched: all that Redis counts as queued or in flight,
/// less what the workers say they fetch. A worker serves the URLs of a take's
/// batch without telling Redis, which counts them as queued until done.
pub fn not_fetching(redis_queued: u64, redis_in_flight: u64, fetching: u64) -> u64 {
    (redis_queued + redis_in_flight).saturating_sub(fetching)
}

/// One worker as the status shows it.
#[derive(Debug, Clone, Serialize)]
pub struct WorkerRow {
    /// Its last heartbeat.
    #[serde(flatten)]
    pub beat: Heartbeat,
    /// A heartbeat came within its staleness limit.
    pub alive: bool,
    /// Milliseconds since its last heartbeat.
    pub last_beat_ms_ago: u64,
}

/// The shared crawl at one moment.
#[derive(Debug, Clone, Serialize)]
pub struct ClusterStatus {
    pub crawl: String,
    pub queued: u64,
    pub in_flight: u64,
    pub parked: u64,
    /// URLs in the seen set (fingerprints).
    pub seen: u64,
    /// Hosts with queued or leased URLs.
    pub hosts: u64,
    /// Hosts a worker holds the lease of.
    pub hosts_held: u64,
    /// The operator rules every worker applies (from the command stream),
    /// numbered from 1 as `ctl --redis … unrule N` takes them.
    pub rules: Vec<String>,
    pub workers: Vec<WorkerRow>,
    /// Open trap alerts, from the snapshots the workers publish (numbered
    /// across the crawl), once each, with the worker that raised it.
    pub open_alerts: Vec<WorkerAlert>,
}

/// An open trap alert and the worker that raised it.
#[derive(Debug, Clone, Serialize)]
pub struct WorkerAlert {
    /// The worker that raised it; `ctl --redis … accept ID` goes to it
    /// while it lives.
    pub worker: String,
    #[serde(flatten)]
    pub alert: OpenAlert,
}

/// Reads the crawl's state from Redis.
pub fn read(target: &ClusterTarget) -> Result<ClusterStatus, String> {
    let fail = |e: redis::RedisError| {
        format!(
            "cannot read crawl {} from {}: {}; check that the Redis server is running",
            target.crawl,
            target.url,
            target.url.explain(&e)
        )
    };
    let mut con = target.url.connect(Duration::from_secs(5)).map_err(fail)?;
    let Tallies {
        counts,
        seen,
        hosts,
        held,
        beats,
    } = read_tallies(&mut con, &target.crawl).map_err(fail)?;
    if seen == 0 && beats.is_empty() {
        return Err(format!(
            "no crawl named {} on {}; start one with `crawldeck crawl --headless --redis {} --crawl {} URL`",
            target.crawl, target.url, target.url, target.crawl
        ));
    }
    let rules = crate::cluster::commands::shared_rules(&mut con, &target.crawl)
        .map_err(|e| e.to_string())?
        .iter()
        .map(rule_text)
        .collect();
    let workers = worker_rows(&beats);
    let open_alerts = open_alerts(&mut con, &target.crawl, &workers).map_err(fail)?;
    let count = |k: &str| counts.get(k).copied().unwrap_or(0).max(0) as u64;
    let fetching = live_in_flight(&workers);
    Ok(ClusterStatus {
        crawl: target.crawl.clone(),
        queued: not_fetching(count("queued"), count("inflight"), fetching),
        in_flight: fetching,
        parked: count("parked"),
        seen,
        hosts,
        hosts_held: held,
        rules,
        workers,
        open_alerts,
    })
}

/// The crawl's counters, set sizes and heartbeats, as one pipeline reads them.
struct Tallies {
    /// The `n` hash of counters (`queued`, `inflight`, `parked`, …).
    counts: HashMap<String, i64>,
    seen: u64,
    hosts: u64,
    held: u64,
    /// Worker → heartbeat JSON.
    beats: HashMap<String, String>,
}

/// Reads [`Tallies`] in one round trip, so the figures are of one moment.
fn read_tallies(con: &mut redis::Connection, crawl: &str) -> redis::RedisResult<Tallies> {
    let p = key_prefix(crawl);
    #[allow(clippy::type_complexity)]
    let (counts, seen, hosts, held, beats): (
        HashMap<String, i64>,
        u64,
        u64,
        u64,
        HashMap<String, String>,
    ) = redis::pipe()
        .cmd("HGETALL")
        .arg(format!("{p}n"))
        .cmd("SCARD")
        .arg(format!("{p}seen"))
        .cmd("SCARD")
        .arg(format!("{p}hosts"))
        .cmd("HLEN")
        .arg(format!("{p}held"))
        .cmd("HGETALL")
        .arg(format!("{p}beats"))
        .query(con)?;
    Ok(Tallies {
        counts,
        seen,
        hosts,
        held,
        beats,
    })
}

/// What live workers fetch, from their heartbeats.
fn live_in_flight(workers: &[WorkerRow]) -> u64 {
    workers
        .iter()
        .filter(|w| w.alive)
        .map(|w| w.beat.in_flight)
        .sum()
}

/// The open alerts of the workers' published snapshots (gone workers'
/// snapshots have expired), once per alert (every worker joins one another
/// raised), each named with its raiser.
fn open_alerts(
    con: &mut redis::Connection,
    crawl: &str,
    workers: &[WorkerRow],
) -> redis::RedisResult<Vec<WorkerAlert>> {
    let raisers: HashMap<u64, String> = redis::cmd("HGETALL")
        .arg(alert_raisers_key(&key_prefix(crawl)))
        .query(con)?;
    let mut alerts: Vec<WorkerAlert> = Vec::new();
    for w in workers {
        let json: Option<String> = redis::cmd("GET")
            .arg(snapshot_key(crawl, &w.beat.worker))
            .query(con)?;
        let Some(snapshot) = json.and_then(|j| serde_json::from_str::<Snapshot>(&j).ok()) else {
            continue;
        };
        let report = StatusReport::of(&snapshot, 0);
        for alert in report.open_alerts {
            if alerts.iter().any(|a| a.alert.id == alert.id) {
                continue;
            }
            let worker = raisers.get(&alert.id).unwrap_or(&w.beat.worker).clone();
            alerts.push(WorkerAlert { worker, alert });
        }
    }
    alerts.sort_by_key(|a| a.alert.id);
    Ok(alerts)
}

/// Every worker of `crawl` with a heartbeat (see `worker_rows`).
pub fn read_workers(
    con: &mut redis::Connection,
    crawl: &str,
) -> redis::RedisResult<Vec<WorkerRow>> {
    let beats: HashMap<String, String> = redis::cmd("HGETALL")
        .arg(format!("{}beats", key_prefix(crawl)))
        .query(con)?;
    Ok(worker_rows(&beats))
}

/// The workers of the `beats` hash (worker → heartbeat JSON), by name;
/// unreadable heartbeats are left out.
pub fn worker_rows(beats: &HashMap<String, String>) -> Vec<WorkerRow> {
    let now = crate::engine::wall_ms();
    let mut workers: Vec<WorkerRow> = beats
        .values()
        .filter_map(|json| serde_json::from_str::<Heartbeat>(json).ok())
        .map(|beat| {
            let ago = now.saturating_sub(beat.at_ms);
            WorkerRow {
                alive: ago <= beat.stale_after_ms,
                last_beat_ms_ago: ago,
                beat,
            }
        })
        .collect();
    workers.sort_by(|a, b| a.beat.worker.cmp(&b.beat.worker));
    workers
}

fn rule_text(rule: &RuleSpec) -> String {
    let kind = match rule.kind {
        PatternKind::Regex => "regex",
        PatternKind::Glob => "glob",
    };
    match &rule.host {
        Some(host) => format!("{kind}:{} (host {host})", rule.pattern),
        None => format!("{kind}:{}", rule.pattern),
    }
}

/// Prints the status as text (or one JSON object).
pub fn print(status: &ClusterStatus, json: bool, out: &mut impl Write) -> std::io::Result<()> {
    if json {
        return writeln!(
            out,
            "{}",
            serde_json::to_string(status).map_err(std::io::Error::other)?
        );
    }
    writeln!(
        out,
        "crawl {}: {} queued, {} in flight, {} parked, {} URLs seen, {} hosts ({} held)",
        status.crawl,
        status.queued,
        status.in_flight,
        status.parked,
        status.seen,
        status.hosts,
        status.hosts_held
    )?;
    writeln!(out, "shared rules: {}", status.rules.len())?;
    for (i, rule) in status.rules.iter().enumerate() {
        writeln!(out, "  #{} {}", i + 1, strip_control(rule))?;
    }
    print_alerts(status, out)?;
    print_workers(status, out)
}

/// The open trap alerts, each with the `ctl` command that accepts it.
fn print_alerts(status: &ClusterStatus, out: &mut impl Write) -> std::io::Result<()> {
    writeln!(out, "open trap alerts: {}", status.open_alerts.len())?;
    for a in &status.open_alerts {
        let impact = a.alert.impact.as_deref().unwrap_or("");
        writeln!(
            out,
            "  #{} {} {} {}: {} {}(accept: ctl --redis URL --crawl {} accept {})",
            a.alert.id,
            strip_control(&a.worker),
            strip_control(&a.alert.host),
            a.alert.kind,
            strip_control(&a.alert.rule),
            if impact.is_empty() {
                String::new()
            } else {
                format!("[{}] ", strip_control(impact))
            },
            strip_control(&status.crawl),
            a.alert.id
        )?;
    }
    Ok(())
}

/// How many workers are alive, then each worker's heartbeat figures.
fn print_workers(status: &ClusterStatus, out: &mut impl Write) -> std::io::Result<()> {
    let alive = status.workers.iter().filter(|w| w.alive).count();
    writeln!(out, "workers: {alive} alive of {}", status.workers.len())?;
    for w in &status.workers {
        writeln!(
            out,
            "  {} {:5} v{} {} pages, {:.1} pages/s, {} hosts held, {} in flight, last heartbeat {:.1}s ago{}",
            strip_control(&w.beat.worker),
            match (w.alive, w.beat.serving) {
                (false, _) => "gone",
                (true, true) => "serving",
                (true, false) => "alive",
            },
            strip_control(&w.beat.version),
            w.beat.pages,
            w.beat.pages_per_s,
            w.beat.hosts_held,
            w.beat.in_flight,
            w.last_beat_ms_ago as f64 / 1000.0,
            match w.beat.records.as_str() {
                "" => String::new(),
                at => format!(", records in {}", strip_control(at)),
            }
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_status_names_each_worker_without_control_characters() {
        let beat = |worker: &str, at_ms| Heartbeat {
            worker: worker.to_string(),
            version: "0.1.0".into(),
            pages: 12,
            pages_per_s: 3.5,
            hosts_held: 2,
            in_flight: 1,
            at_ms,
            stale_after_ms: 30_000,
            records: String::new(),
            pid: 0,
            serving: false,
        };
        let status = ClusterStatus {
            crawl: "news".into(),
            queued: 40,
            in_flight: 1,
            parked: 0,
            seen: 90,
            hosts: 3,
            hosts_held: 2,
            rules: vec!["regex:cal/\u{1b}\\d".into()],
            workers: vec![
                WorkerRow {
                    beat: beat("a1", 0),
                    alive: true,
                    last_beat_ms_ago: 1500,
                },
                WorkerRow {
                    beat: Heartbeat {
                        records: "m2:/srv/\u{1b}[2Jw2".into(),
                        ..beat("\u{1b}[2Jb2", 0)
                    },
                    alive: false,
                    last_beat_ms_ago: 90_000,
                },
            ],
            open_alerts: vec![WorkerAlert {
                worker: "a1".into(),
                alert: OpenAlert {
                    id: 3,
                    host: "cal.example".into(),
                    kind: "calendar".into(),
                    rule: "^https?://cal\\.example/\u{1b}day/".into(),
                    matching_queued: 7,
                    impact: Some(
                        "would block 7 queued, 0 parked; 0 fetched good pages match".into(),
                    ),
                },
            }],
        };
        let mut out = Vec::new();
        print(&status, false, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains(
                "crawl news: 40 queued, 1 in flight, 0 parked, 90 URLs seen, 3 hosts (2 held)"
            ),
            "{text}"
        );
        assert!(
            text.contains("shared rules: 1\n  #1 regex:cal/\\d\n"),
            "{text}"
        );
        assert!(text.contains("workers: 1 alive of 2"), "{text}");
        assert!(
            text.contains("open trap alerts: 1\n  #3 a1 cal.example calendar: ^https?://cal\\.example/day/ [would block 7 queued, 0 parked; 0 fetched good pages match] (accept: ctl --redis URL --crawl news accept 3)"),
            "{text}"
        );
        assert!(text.contains("a1 alive v0.1.0 12 pages, 3.5 pages/s, 2 hosts held, 1 in flight, last heartbeat 1.5s ago"), "{text}");
        assert!(text.contains("gone"), "{text}");
        assert!(
            text.contains("last heartbeat 90.0s ago, records in m2:/srv/[2Jw2"),
            "{text}"
        );
        assert!(!text.contains('\u{1b}'), "{text:?}");
        let mut json = Vec::new();
        print(&status, true, &mut json).unwrap();
        let value: serde_json::Value = serde_json::from_slice(&json).unwrap();
        assert_eq!(value["workers"][0]["pages_per_s"], 3.5);
        assert_eq!(value["open_alerts"][0]["worker"], "a1");
        assert_eq!(value["open_alerts"][0]["id"], 3);
    }

    #[test]
    fn status_lists_each_workers_open_alerts_from_its_published_snapshot() {
        use crate::cluster::redis_server::RedisServer;
        use crate::engine::telemetry::{AlertStatus, TrapAlert, TrapKind};
        let server = RedisServer::for_test();
        let target = ClusterTarget {
            url: server.redis_url(),
            crawl: "alerts".into(),
            lease_ttl: Duration::from_secs(10),
            host_affinity: crate::engine::DEFAULT_HOST_AFFINITY,
        };
        let alert = |id, status| TrapAlert {
            id,
            host: "cal.example".into(),
            kind: TrapKind::Counter,
            evidence_count: 12,
            last_seen: 0,
            samples: vec![],
            suggested_rule: RuleSpec {
                kind: PatternKind::Regex,
                pattern: "/cal/".into(),
                host: Some("cal.example".into()),
            },
            matching_queued: 4,
            status,
            impact: None,
        };
        let snapshot = Snapshot {
            alerts: vec![alert(1, AlertStatus::Accepted), alert(2, AlertStatus::Open)],
            ..Snapshot::default()
        };
        let now = crate::engine::wall_ms();
        let beat = Heartbeat {
            worker: "w1".into(),
            version: "0.1.0".into(),
            pages: 5,
            pages_per_s: 1.0,
            hosts_held: 1,
            // One URL taken through Redis, two served from a take's batch.
            in_flight: 3,
            at_ms: now,
            stale_after_ms: 30_000,
            records: String::new(),
            pid: 0,
            serving: false,
        };
        let mut con = redis::Client::open(server.url())
            .unwrap()
            .get_connection()
            .unwrap();
        let p = key_prefix("alerts");
        let _: () = redis::pipe()
            .cmd("HSET")
            .arg(format!("{p}beats"))
            .arg("w1")
            .arg(serde_json::to_string(&beat).unwrap())
            .cmd("SET")
            .arg(snapshot_key("alerts", "w1"))
            .arg(serde_json::to_string(&snapshot).unwrap())
            .cmd("HSET")
            .arg(format!("{p}n"))
            .arg(&[("queued", 10), ("inflight", 1)])
            .query(&mut con)
            .unwrap();
        let status = read(&target).unwrap();
        assert_eq!(
            (status.queued, status.in_flight),
            (8, 3),
            "batch URLs are in flight"
        );
        assert_eq!(status.open_alerts.len(), 1, "{:?}", status.open_alerts);
        let open = &status.open_alerts[0];
        assert_eq!((open.worker.as_str(), open.alert.id), ("w1", 2));
        assert_eq!(open.alert.rule, "/cal/");
    }
}
