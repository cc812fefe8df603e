//! The workers' own records, read for the cluster TUI: the page inspector,
//! a host's lists and the quarantine's found-on pages live in each worker's
//! data directory, which only that worker (and its machine) can open.
//!
//! A viewer pushes a request onto `reads:WORKER` (a Redis list) of every
//! live worker; each worker's `ReadServer` thread pops it, reads its data
//! directory as `crawldeck pages` or `page` would (through its own engine's
//! control socket), and pushes the answer onto the request's reply list. The
//! viewer waits at most `READ_WAIT` for the answers.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::status::WorkerRow;
use crate::engine::inspect::quarantine::{self, ParkedUrl, Quarantine};
use crate::engine::inspect::PageInspection;
use crate::engine::{key_prefix, ClusterTarget};
use crate::results::host_lists::{host_list_lines, HostList};
use crate::results::window::{Band, BandRequest};
use crate::text::strip_control;
use crate::tui::RemoteRecords;

/// How long a viewer waits for the workers' answers.
pub const READ_WAIT: Duration = Duration::from_secs(5);
/// How long a worker blocks on its request list before it checks for a stop.
const POLL: Duration = Duration::from_secs(1);
/// Requests and answers nobody took expire after this.
const KEEP: Duration = Duration::from_secs(30);

/// What a viewer asks a worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Read {
    /// The inspection of a page this worker fetched.
    Inspect { url: String },
    /// This worker's part of one of a host's lists.
    HostList { host: String, list: HostList },
    /// The page each URL was first found on, where this worker found it.
    FoundOn { urls: Vec<String> },
    /// This worker's rows of ranks 0 to the request's last (the viewer
    /// merges every worker's into the band asked).
    PageBand { request: BandRequest },
    /// The audit's counts over this worker's pages, by check name.
    Audit,
    /// The rows of one of the engine's reads (`pages`, `referrers`, …),
    /// streamed onto the reply list by `rows` (for `pages --redis`).
    Rows { verb: String, arg: String },
}

/// A worker's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Answer {
    /// `None`: this worker has no record of the URL.
    Page(Option<Box<PageInspection>>),
    Lines(Vec<String>),
    FoundOn(Vec<ParkedUrl>),
    Band(Box<Band>),
    Counts(Vec<(String, u64)>),
    Failed(String),
}

#[derive(Serialize, Deserialize)]
struct Request {
    reply: String,
    read: Read,
}

fn request_key(crawl: &str, worker: &str) -> String {
    format!("{}reads:{worker}", key_prefix(crawl))
}

/// Answers the viewers' reads of one worker's data directory.
pub struct ReadServer {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl ReadServer {
    /// Starts answering the reads sent to `worker` of `target`'s crawl.
    pub fn start(
        target: &ClusterTarget,
        worker: &str,
        data_dir: &std::path::Path,
    ) -> Result<ReadServer, String> {
        let client = target
            .url
            .client()
            .map_err(|e| format!("{}: {e}", target.url))?;
        let key = request_key(&target.crawl, worker);
        let data_dir = data_dir.to_path_buf();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::Builder::new()
            .name("cluster-reads".into())
            .spawn(move || serve(&client, &key, &data_dir, &stopped))
            .map_err(|e| format!("cannot start the cluster read thread: {e}"))?;
        Ok(ReadServer {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for ReadServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn serve(client: &redis::Client, key: &str, data_dir: &std::path::Path, stop: &AtomicBool) {
    let mut con: Option<redis::Connection> = None;
    let mut failing = false;
    while !stop.load(Ordering::Relaxed) {
        match serve_one(client, &mut con, key, data_dir) {
            Ok(()) => failing = false,
            Err(e) => {
                con = None;
                if !failing {
                    // Once per failure: the crawl itself reports Redis trouble.
                    tracing::warn!("answering the cluster view's reads: {e}");
                }
                failing = true;
                std::thread::sleep(POLL);
            }
        }
    }
}

/// A connection whose reads give up a little after a `BLPOP` of `block`
/// would have, so a server that stops answering cannot hang the thread.
pub(super) fn connect(
    client: &redis::Client,
    block: Duration,
) -> redis::RedisResult<redis::Connection> {
    let con = client.get_connection_with_timeout(Duration::from_secs(2))?;
    con.set_read_timeout(Some(block + Duration::from_secs(2)))?;
    con.set_write_timeout(Some(Duration::from_secs(2)))?;
    Ok(con)
}

/// Waits up to `POLL` for one request and answers it.
fn serve_one(
    client: &redis::Client,
    con: &mut Option<redis::Connection>,
    key: &str,
    data_dir: &std::path::Path,
) -> redis::RedisResult<()> {
    let con = match con {
        Some(con) => con,
        None => con.insert(connect(client, POLL)?),
    };
    let popped: Option<(String, String)> = redis::cmd("BLPOP")
        .arg(key)
        .arg(POLL.as_secs_f64())
        .query(con)?;
    let Some((_, json)) = popped else {
        return Ok(());
    };
    let Ok(request) = serde_json::from_str::<Request>(&json) else {
        tracing::warn!("an unreadable cluster read request was dropped");
        return Ok(());
    };
    if let Read::Rows { verb, arg } = request.read {
        let streamer = connect(client, super::rows::ROW_WAIT)?;
        super::rows::serve(streamer, request.reply, verb, arg, data_dir);
        return Ok(());
    }
    let answer = answer(&request.read, data_dir);
    let json = serde_json::to_string(&answer).unwrap_or_else(|e| {
        serde_json::to_string(&Answer::Failed(e.to_string())).expect("a string encodes")
    });
    redis::pipe()
        .cmd("RPUSH")
        .arg(&request.reply)
        .arg(json)
        .ignore()
        .cmd("PEXPIRE")
        .arg(&request.reply)
        .arg(KEEP.as_millis() as u64)
        .ignore()
        .query(con)
}

/// Reads `read` from this worker's data directory.
pub fn answer(read: &Read, data_dir: &std::path::Path) -> Answer {
    let failed = |e: &dyn std::fmt::Display| Answer::Failed(format!("{e:#}"));
    match read {
        Read::Inspect { url } => crate::results::page::find(data_dir, url)
            .map_or_else(|e| failed(&e), |page| Answer::Page(page.map(Box::new))),
        Read::HostList { host, list } => {
            host_list_lines(data_dir, host, *list).map_or_else(|e| failed(&e), Answer::Lines)
        }
        Read::FoundOn { urls } => crate::results::page::open(data_dir)
            .and_then(|r| Ok(r.found_on(urls)?))
            .map_or_else(|e| failed(&e), Answer::FoundOn),
        Read::PageBand { request } => {
            let own = BandRequest {
                data_dir: data_dir.to_path_buf(),
                first: 0,
                rows: request.first.saturating_add(request.rows),
                ..request.clone()
            };
            crate::results::page::open(data_dir)
                .and_then(|r| crate::results::window::read_band(&r, &own))
                .map_or_else(|e| failed(&e), |band| Answer::Band(Box::new(band)))
        }
        Read::Rows { .. } => Answer::Failed("rows are streamed, not answered at once".into()),
        Read::Audit => crate::tui::records::audit_dir(data_dir).map_or_else(
            |e| failed(&e),
            |findings| {
                let counts = findings.iter().map(|f| (f.check.to_string(), f.urls));
                Answer::Counts(counts.collect())
            },
        ),
    }
}

/// The deepest rank a shared crawl's Pages view reads: each worker sends
/// its rows up to the band's last, so the depth is what bounds an answer.
pub const MAX_CLUSTER_RANK: usize = 20_000;

/// A band of every live worker's pages together.
pub fn page_band(target: &ClusterTarget, request: &BandRequest) -> anyhow::Result<Band> {
    if request.first.saturating_add(request.rows) > MAX_CLUSTER_RANK {
        anyhow::bail!(
            "a shared crawl's Pages view reads its first {MAX_CLUSTER_RANK} rows of an order: \
             narrow the filter, reverse the order (S), or list a worker's pages with `crawldeck pages DIR`"
        );
    }
    let read = Read::PageBand {
        request: request.clone(),
    };
    let Asked { answers, gone } = ask(target, &read)?;
    let mut bands = Vec::new();
    for (worker, answer) in answers {
        match answer {
            Answer::Band(band) => bands.push(*band),
            Answer::Failed(why) => anyhow::bail!("worker {}: {why}", strip_control(&worker)),
            _ => {}
        }
    }
    if !gone.is_empty() {
        tracing::info!("the Pages view leaves out workers that are gone{gone}");
    }
    Ok(crate::results::window::merge(request, bands))
}

/// The audit's findings over every live worker's pages: each check's URLs
/// added up (a check that compares pages, such as duplicate titles, compares
/// them within a worker).
pub fn audit(target: &ClusterTarget) -> anyhow::Result<Vec<crate::results::audit::Finding>> {
    use crate::results::audit::{ranked, Check};
    let mut counts = std::collections::HashMap::new();
    for (worker, answer) in ask(target, &Read::Audit)?.answers {
        match answer {
            Answer::Counts(found) => {
                for (name, urls) in found {
                    if let Ok(check) = Check::parse(&name) {
                        *counts.entry(check).or_insert(0) += urls;
                    }
                }
            }
            Answer::Failed(why) => anyhow::bail!("worker {}: {why}", strip_control(&worker)),
            _ => {}
        }
    }
    Ok(ranked(&counts, "DIR"))
}

/// Sends `read` to one worker; its answer comes on the returned list.
pub(super) fn send(
    con: &mut redis::Connection,
    crawl: &str,
    worker: &str,
    read: Read,
) -> anyhow::Result<String> {
    let nonce = format!("{:x}-{:x}", std::process::id(), fastrand::u64(..));
    let reply = format!("{}read-reply:{nonce}:{worker}", key_prefix(crawl));
    let request = serde_json::to_string(&Request {
        reply: reply.clone(),
        read,
    })?;
    let key = request_key(crawl, worker);
    redis::pipe()
        .cmd("RPUSH")
        .arg(&key)
        .arg(request)
        .ignore()
        .cmd("PEXPIRE")
        .arg(&key)
        .arg(KEEP.as_millis() as u64)
        .ignore()
        .query::<()>(con)?;
    Ok(reply)
}

/// The answers to one read, by worker.
struct Asked {
    /// Those that came within `READ_WAIT`, by worker name.
    answers: Vec<(String, Answer)>,
    /// `; gone: NAME (records in MACHINE:DIR), …` for the workers that are
    /// gone, whose records no read reaches; empty if none is.
    gone: String,
}

/// Sends `read` to every live worker and collects their answers.
fn ask(target: &ClusterTarget, read: &Read) -> anyhow::Result<Asked> {
    let client = target.url.client()?;
    let mut con = connect(&client, READ_WAIT)?;
    let (live, gone): (Vec<WorkerRow>, Vec<WorkerRow>) =
        super::status::read_workers(&mut con, &target.crawl)?
            .into_iter()
            .partition(|row| row.alive);
    let gone = gone_note(&gone);
    if live.is_empty() {
        anyhow::bail!(
            "no live worker in crawl {}: the records are in the workers' data directories{gone}",
            target.crawl
        );
    }
    let mut pending = std::collections::HashMap::new();
    for worker in live.into_iter().map(|row| row.beat.worker) {
        let reply = send(&mut con, &target.crawl, &worker, read.clone())?;
        pending.insert(reply, worker);
    }
    let mut answers = Vec::new();
    let deadline = Instant::now() + READ_WAIT;
    while !pending.is_empty() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        let keys: Vec<&String> = pending.keys().collect();
        let popped: Option<(String, String)> = redis::cmd("BLPOP")
            .arg(&keys)
            .arg(left.as_secs_f64().max(0.01))
            .query(&mut con)?;
        let Some((key, json)) = popped else { break };
        if let Some(worker) = pending.remove(&key) {
            let answer = serde_json::from_str(&json)
                .unwrap_or_else(|e| Answer::Failed(format!("an unreadable answer: {e}")));
            answers.push((worker, answer));
        }
    }
    answers.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(Asked { answers, gone })
}

/// `; gone: NAME (records in MACHINE:DIR), …`, or empty without any.
fn gone_note(gone: &[WorkerRow]) -> String {
    let named: Vec<String> = gone
        .iter()
        .map(|row| match row.beat.records.as_str() {
            "" => strip_control(&row.beat.worker).into_owned(),
            at => format!(
                "{} (records in {})",
                strip_control(&row.beat.worker),
                strip_control(at)
            ),
        })
        .collect();
    if named.is_empty() {
        String::new()
    } else {
        format!("; gone: {}", named.join(", "))
    }
}

/// The page of `url`, from whichever worker fetched it.
pub fn inspect(target: &ClusterTarget, url: &str) -> anyhow::Result<PageInspection> {
    let read = Read::Inspect {
        url: url.to_string(),
    };
    let Asked { answers, mut gone } = ask(target, &read)?;
    let mut refusals = Vec::new();
    for (worker, answer) in answers {
        match answer {
            Answer::Page(Some(page)) => return Ok(*page),
            Answer::Failed(why) => refusals.push(format!("{worker}: {why}")),
            _ => {}
        }
    }
    if !gone.is_empty() {
        gone.push_str(" (`crawldeck page DIR URL` on that machine reads one)");
    }
    anyhow::bail!(
        "no live worker of crawl {} has a record of {}{}{gone}",
        target.crawl,
        strip_control(url),
        if refusals.is_empty() {
            String::new()
        } else {
            format!(" ({})", refusals.join("; "))
        }
    )
}

/// One of a host's lists: each worker's rows under its name.
pub fn host_list(
    target: &ClusterTarget,
    host: &str,
    list: HostList,
) -> Result<Vec<String>, String> {
    let read = Read::HostList {
        host: host.to_string(),
        list,
    };
    let asked = ask(target, &read).map_err(|e| format!("{e:#}"))?;
    let mut lines = Vec::new();
    for (worker, answer) in asked.answers {
        match answer {
            // A table's first line is its header: more means rows.
            Answer::Lines(rows) if rows.len() > 1 => {
                lines.push(format!("worker {}:", strip_control(&worker)));
                lines.extend(rows);
            }
            Answer::Failed(why) => lines.push(format!("worker {}: {why}", strip_control(&worker))),
            _ => {}
        }
    }
    Ok(lines)
}

/// The parked URLs by alert from Redis, with the page each was found on
/// from the worker that found it.
pub fn read_quarantine(target: &ClusterTarget) -> anyhow::Result<Quarantine> {
    let mut read = quarantine::read_shared(&target.url, &target.crawl)?;
    let urls: Vec<String> = read
        .alerts
        .iter()
        .flat_map(|a| a.urls.iter().map(|u| u.url.clone()))
        .collect();
    if urls.is_empty() {
        return Ok(read);
    }
    let mut found = std::collections::HashMap::new();
    for (_, answer) in ask(target, &Read::FoundOn { urls })?.answers {
        if let Answer::FoundOn(parked) = answer {
            for p in parked.into_iter().filter(|p| p.referrer.is_some()) {
                found.entry(p.url.clone()).or_insert(p);
            }
        }
    }
    for url in read.alerts.iter_mut().flat_map(|a| a.urls.iter_mut()) {
        if let Some(known) = found.remove(&url.url) {
            *url = known;
        }
    }
    Ok(read)
}

/// The workers' records of a shared crawl, for the cluster TUI.
#[derive(Debug)]
pub struct WorkerRecords(pub ClusterTarget);

impl RemoteRecords for WorkerRecords {
    fn page(&self, url: &str) -> anyhow::Result<PageInspection> {
        inspect(&self.0, url)
    }

    fn quarantine(&self) -> anyhow::Result<Quarantine> {
        read_quarantine(&self.0)
    }

    fn host_list(&self, host: &str, list: HostList) -> Result<Vec<String>, String> {
        host_list(&self.0, host, list)
    }

    fn page_band(&self, request: &BandRequest) -> anyhow::Result<Band> {
        page_band(&self.0, request)
    }

    fn audit(&self) -> anyhow::Result<Vec<crate::results::audit::Finding>> {
        audit(&self.0)
    }
}

#[cfg(test)]
#[path = "reads_tests.rs"]
mod tests;
