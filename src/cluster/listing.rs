//! `crawldeck pages|links|audit --redis URL --crawl NAME`: the whole shared
//! crawl, its workers' records merged by URL (`control::results::Merged`).
//!
//! Each worker keeps the records of what it fetched in its own data
//! directory. A live worker is read through Redis (its `ReadServer` streams
//! the rows, `rows`), wherever it runs; a gone worker (killed, or ended with
//! the crawl) through its data directory, where its heartbeat says it is,
//! when this machine can read it there (its own machine, a shared
//! filesystem, or a copy at that path). Any other gone worker is named, with
//! its machine, pid, data directory and last heartbeat, and the listing is
//! refused rather than printed without its pages.

use super::reads::{self, Read};
use super::rows;
use super::status::{read_workers, WorkerRow};
use crate::control::results::{JsonRows, Merged, Part, RemoteStore, Results, RowSource};
use crate::engine::ClusterTarget;
use crate::text::strip_control;

/// Opens every worker's records of `target`'s crawl as one crawl; with a
/// line saying where each worker's came from.
pub fn open(target: &ClusterTarget) -> anyhow::Result<(Results, String)> {
    let unreachable = |e: redis::RedisError| {
        anyhow::anyhow!(
            "cannot read crawl {} from {}: {}; check that the Redis server is running and the URL",
            target.crawl,
            target.url,
            target.url.explain(&e)
        )
    };
    let client = target.url.client().map_err(unreachable)?;
    let mut con = reads::connect(&client, rows::FIRST_WAIT).map_err(unreachable)?;
    let workers = read_workers(&mut con, &target.crawl).map_err(unreachable)?;
    if workers.is_empty() {
        anyhow::bail!(
            "no crawl {} in the Redis at {}: no worker ever joined it; check --crawl \
             (a worker starts it: `crawldeck crawl --headless --redis {} --crawl NAME …`)",
            target.crawl,
            target.url,
            target.url
        );
    }
    let mut parts = Vec::new();
    let mut unread = Vec::new();
    let mut sources = Vec::new();
    for row in &workers {
        match part_of(&client, target, row) {
            Ok((part, source)) => {
                sources.push(format!("{} {source}", strip_control(&part.worker)));
                parts.push(part);
            }
            Err(why) => unread.push(format!("{} ({why})", named(row))),
        }
    }
    if !unread.is_empty() {
        anyhow::bail!(
            "cannot read every worker of crawl {}, so no listing of it would be whole: {}; \
             make each such data directory readable here at the same path (mounted or \
             copied), or list its part on its machine with `crawldeck pages DIR`",
            target.crawl,
            unread.join("; ")
        );
    }
    let note = format!("crawl {}: {}", target.crawl, sources.join(", "));
    Ok((Results::Merged(Merged::new(parts)), note))
}

/// A worker's records, and where they are read: through Redis while it
/// lives, else its directory here.
fn part_of(
    client: &redis::Client,
    target: &ClusterTarget,
    row: &WorkerRow,
) -> Result<(Part, String), String> {
    let worker = row.beat.worker.clone();
    let own = rows::own_dir(&row.beat.records, &worker);
    let mut why = "gone, and its data directory is not readable here".to_string();
    if row.alive {
        let source = WorkerRows {
            client: client.clone(),
            crawl: target.crawl.clone(),
            worker: worker.clone(),
        };
        match RemoteStore::through(Box::new(source)) {
            Ok(remote) => {
                let results = Results::Remote(remote);
                let part = Part {
                    worker,
                    dir: None,
                    results,
                };
                return Ok((part, "through Redis".into()));
            }
            Err(e) => why = format!("live, but its reads through Redis did not answer: {e}"),
        }
    }
    let Some(dir) = own else { return Err(why) };
    // A worker killed a moment ago may still look alive: its store is free.
    let source = match row.alive {
        true => format!("from {} ({why})", dir.display()),
        false => format!("from {} (gone)", dir.display()),
    };
    Results::open(&dir)
        .map(|results| {
            let part = Part {
                worker,
                dir: Some(dir),
                results,
            };
            (part, strip_control(&source).into_owned())
        })
        .map_err(|e| format!("its data directory cannot be read: {e}"))
}

/// `worker W on MACHINE pid N, data directory DIR, last heartbeat Ts ago`.
fn named(row: &WorkerRow) -> String {
    let beat = &row.beat;
    let (machine, dir) = beat
        .records
        .split_once(':')
        .unwrap_or(("an unknown machine", "unknown"));
    format!(
        "worker {} on {} pid {}, data directory {}, last heartbeat {}s ago",
        strip_control(&beat.worker),
        strip_control(machine),
        beat.pid,
        strip_control(dir),
        row.last_beat_ms_ago / 1000
    )
}

/// One live worker's reads, through Redis.
struct WorkerRows {
    client: redis::Client,
    crawl: String,
    worker: String,
}

impl RowSource for WorkerRows {
    fn rows(&self, verb: &str, arg: &str) -> Result<JsonRows, String> {
        let failed = |e: &dyn std::fmt::Display| format!("asking worker {}: {e}", self.worker);
        let mut con = reads::connect(&self.client, rows::ROW_WAIT).map_err(|e| failed(&e))?;
        let read = Read::Rows {
            verb: verb.to_string(),
            arg: arg.to_string(),
        };
        let reply =
            reads::send(&mut con, &self.crawl, &self.worker, read).map_err(|e| failed(&e))?;
        Ok(Box::new(rows::reply(con, reply, &self.worker)))
    }
}
