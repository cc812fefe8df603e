//! A listing's reads of a worker's records through Redis: the rows of one
//! read (a verb of the engine's reads, as `control.sock` answers it) pushed
//! by the worker onto the request's reply list in chunks of about 64 KiB, at
//! most [`QUEUED`] ahead of the reader, so neither Redis nor the worker
//! holds a long listing. A reader that goes away leaves a `gone` mark the
//! worker sees before its next chunk.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::control::read_client::{self, Chunks, Rows};
use crate::control::results::JsonRows;

/// Bytes of rows in one chunk.
const CHUNK_BYTES: usize = 64 * 1024;
/// Chunks a worker pushes ahead of its reader.
const QUEUED: usize = 4;
/// Reads a worker streams at once; more are refused as busy (a listing
/// holds six streams per URL prefix).
const MAX_STREAMS: usize = 24;
/// How long a worker waits for its reader to take a chunk, and a reader
/// for the next chunk, before giving up.
pub const ROW_WAIT: Duration = Duration::from_secs(60);
/// How long a reader waits for a worker's first chunk: a worker that does
/// not answer by then is named.
pub const FIRST_WAIT: Duration = Duration::from_secs(10);
/// Reply lists and marks nobody took expire after this.
const KEEP: Duration = Duration::from_secs(120);

/// Streams under way in this process.
static STREAMS: AtomicUsize = AtomicUsize::new(0);

/// One push onto a reply list.
#[derive(Debug, Serialize, Deserialize)]
enum Chunk {
    Rows(Vec<String>),
    End,
    Failed(String),
}

/// The verbs a worker answers itself, beside the engine's: a page's element
/// ids from its archive (`Results::archived_ids`), and the names of its
/// custom extractions, from its crawl.toml.
const ELEMENT_IDS: &str = "element-ids";
const EXTRACTIONS: &str = "extractions";

fn gone_key(reply: &str) -> String {
    format!("{reply}:gone")
}

/// Answers one read on a thread of its own, streaming its rows onto `reply`.
pub fn serve(mut con: redis::Connection, reply: String, verb: String, arg: String, dir: &Path) {
    if STREAMS.fetch_add(1, Ordering::SeqCst) >= MAX_STREAMS {
        STREAMS.fetch_sub(1, Ordering::SeqCst);
        let busy = format!("the worker is busy with {MAX_STREAMS} reads; try again");
        let _ = push(&mut con, &reply, &Chunk::Failed(busy));
        return;
    }
    let dir = dir.to_path_buf();
    let spawned = std::thread::Builder::new()
        .name("cluster-rows".into())
        .spawn(move || {
            if let Err(e) = stream(&mut con, &reply, rows_of(&dir, &verb, &arg)) {
                tracing::warn!("streaming a read of {verb} to a listing: {e}");
            }
            STREAMS.fetch_sub(1, Ordering::SeqCst);
        });
    if spawned.is_err() {
        STREAMS.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The rows of `verb arg` from this worker's data directory: the engine's
/// reads through its control socket, or the archive's element ids.
fn rows_of(dir: &Path, verb: &str, arg: &str) -> Result<JsonRows, String> {
    let one = |value: anyhow::Result<serde_json::Value>| -> Result<JsonRows, String> {
        let json = value.map_err(|e| format!("{e:#}"))?.to_string();
        Ok(Box::new(std::iter::once(Ok(json))))
    };
    match verb {
        ELEMENT_IDS => return one(element_ids(dir, arg).map(|ids| serde_json::json!(ids))),
        EXTRACTIONS => {
            let names = crate::results::extraction_names(dir);
            return one(names.map(|names| serde_json::json!(names)));
        }
        _ => {}
    }
    let answer = read_client::read(dir, verb, arg)?;
    Ok(Box::new(answer.map(|row| row.map(|r| r.get().to_string()))))
}

fn element_ids(dir: &Path, url: &str) -> anyhow::Result<Option<std::collections::HashSet<String>>> {
    let results = crate::results::page::open(dir)?;
    match results.page(url)? {
        Some(record) => Ok(results.archived_ids(dir, &record)?),
        None => Ok(None),
    }
}

/// Pushes the rows a chunk at a time, then the end or the failure.
fn stream(
    con: &mut redis::Connection,
    reply: &str,
    rows: Result<JsonRows, String>,
) -> redis::RedisResult<()> {
    let rows = match rows {
        Ok(rows) => rows,
        Err(why) => return push(con, reply, &Chunk::Failed(why)).map(drop),
    };
    let (mut chunk, mut bytes) = (Vec::new(), 0);
    for row in rows {
        let row = match row {
            Ok(row) => row,
            Err(why) => {
                // The rows before the failure are the reader's too.
                if !chunk.is_empty() && !push(con, reply, &Chunk::Rows(chunk))? {
                    return Ok(());
                }
                return push(con, reply, &Chunk::Failed(why)).map(drop);
            }
        };
        bytes += row.len();
        chunk.push(row);
        if bytes >= CHUNK_BYTES {
            bytes = 0;
            if !push(con, reply, &Chunk::Rows(std::mem::take(&mut chunk)))? {
                return Ok(());
            }
        }
    }
    if !chunk.is_empty() && !push(con, reply, &Chunk::Rows(chunk))? {
        return Ok(());
    }
    push(con, reply, &Chunk::End).map(drop)
}

/// Pushes one chunk once the reader has room for it; false if the reader
/// went away or took nothing for [`ROW_WAIT`].
fn push(con: &mut redis::Connection, reply: &str, chunk: &Chunk) -> redis::RedisResult<bool> {
    let deadline = Instant::now() + ROW_WAIT;
    loop {
        let (queued, gone): (usize, bool) = redis::pipe()
            .cmd("LLEN")
            .arg(reply)
            .cmd("EXISTS")
            .arg(gone_key(reply))
            .query(con)?;
        if gone || Instant::now() > deadline {
            return Ok(false);
        }
        if queued < QUEUED {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let json = serde_json::to_string(chunk).expect("strings encode");
    redis::pipe()
        .cmd("RPUSH")
        .arg(reply)
        .arg(json)
        .ignore()
        .cmd("PEXPIRE")
        .arg(reply)
        .arg(KEEP.as_millis() as u64)
        .ignore()
        .query::<()>(con)?;
    Ok(true)
}

/// The rows a worker pushes onto `reply`, as a listing reads them.
pub type Reply = Rows<ReplyChunks>;

/// The chunks a worker pushes onto `reply`.
pub struct ReplyChunks {
    con: redis::Connection,
    reply: String,
    worker: String,
    first: bool,
    ended: bool,
}

/// Reads `reply` over `con`, whose read timeout outlasts [`ROW_WAIT`].
pub fn reply(con: redis::Connection, reply: String, worker: &str) -> Reply {
    Rows::new(ReplyChunks {
        con,
        reply,
        worker: crate::text::strip_control(worker).into_owned(),
        first: true,
        ended: false,
    })
}

impl Chunks for ReplyChunks {
    type Row = String;

    fn next_chunk(&mut self) -> Result<Option<Vec<String>>, String> {
        let wait = match std::mem::replace(&mut self.first, false) {
            true => FIRST_WAIT,
            false => ROW_WAIT,
        };
        let worker = &self.worker;
        let popped: Option<(String, String)> = redis::cmd("BLPOP")
            .arg(&self.reply)
            .arg(wait.as_secs_f64())
            .query(&mut self.con)
            .map_err(|e| format!("reading worker {worker}'s rows: {e}"))?;
        let Some((_, json)) = popped else {
            return Err(format!("worker {worker} sent nothing for {wait:?}"));
        };
        let chunk = serde_json::from_str(&json)
            .map_err(|e| format!("worker {worker} sent an unreadable chunk: {e}"))?;
        self.ended = !matches!(chunk, Chunk::Rows(_));
        match chunk {
            Chunk::Rows(rows) => Ok(Some(rows)),
            Chunk::End => Ok(None),
            Chunk::Failed(why) => Err(format!("worker {}: {why}", self.worker)),
        }
    }
}

impl Drop for ReplyChunks {
    fn drop(&mut self) {
        if !self.ended {
            // The worker stops at its next chunk instead of waiting it out.
            let _ = redis::pipe()
                .cmd("SET")
                .arg(gone_key(&self.reply))
                .arg(1)
                .arg("PX")
                .arg(KEEP.as_millis() as u64)
                .ignore()
                .cmd("DEL")
                .arg(&self.reply)
                .ignore()
                .query::<()>(&mut self.con);
        }
    }
}

/// The data directory a heartbeat names (`MACHINE:DIR`), if it is readable
/// here and holds that worker's records (a worker's name is its own).
pub fn own_dir(records: &str, worker: &str) -> Option<PathBuf> {
    let (_, dir) = records.split_once(':')?;
    let dir = PathBuf::from(dir);
    let named = std::fs::read_to_string(dir.join("cluster-worker")).ok()?;
    (named.trim() == worker).then_some(dir)
}

#[cfg(test)]
#[path = "rows_tests.rs"]
mod tests;
