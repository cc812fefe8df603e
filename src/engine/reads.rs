//! The store's reads a running engine serves to other readers (`crawldeck
//! pages`, `links`, `page`, `diff`, `export`, the TUI's lists and inspector)
//! beside the crawl loop. The store locks its database for one process, so
//! while a crawl runs its results are read through the engine: each read
//! runs on a thread of its own and hands its rows, serialized, in chunks to
//! a bounded queue. A long listing is never held whole, and a client that
//! reads slowly holds its thread back instead of growing memory. The control
//! socket (`control::reads`) puts the chunks on the wire.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde::Serialize;
use serde_json::value::RawValue;
use tokio::sync::{mpsc, watch};

use super::store::{Entries, Store, StoreError};

/// Readers served at once; more are told the engine is busy. One `pages`
/// listing holds up to five streams per URL prefix (pages, links left out,
/// referrers, fragments read by audit, sitemap rows; two prefixes
/// with `--host`) and then the parked URLs; `diff DIR` reads two passes at
/// once, four streams per prefix each. A closed stream's thread ends a
/// moment after the client moves on.
pub const MAX_READERS: usize = 24;

/// What a reader past [`MAX_READERS`] is told.
pub const BUSY: &str = "too many readers at once; try again shortly";

/// Rows go out in chunks of about this many bytes (one row more at most).
pub const CHUNK_BYTES: usize = 64 * 1024;

/// Chunks a read may have queued before its thread waits for the client:
/// with the chunk being filled, what one read holds beside the socket.
pub const QUEUED_CHUNKS: usize = 4;

/// How long the engine's end waits for readers to let go of the store.
const CLOSE_LIMIT: Duration = Duration::from_secs(10);

/// A read served beside the store's own, by a module above the store (the
/// page inspector): `name` is its request verb, `read` answers one argument.
#[derive(Clone, Copy)]
pub struct ExtraRead {
    /// The request verb.
    pub name: &'static str,
    /// Answers the request's argument from the store and the data directory.
    pub read: ExtraAnswer,
}

/// How an [`ExtraRead`] answers: one value, or a stream of them (one row
/// each, so a long listing is never held whole).
#[derive(Clone, Copy)]
pub enum ExtraAnswer {
    /// One JSON value.
    One(fn(&Store, &Path, &str) -> Result<serde_json::Value, StoreError>),
    /// JSON values, one a row.
    Lines(fn(&Store, &Path, &str) -> Result<Entries<serde_json::Value>, StoreError>),
}

/// What a read's thread hands over, in order: chunks of rows, then `End`
/// or `Failed`. A queue that closes without either lost its thread.
#[derive(Debug)]
pub enum ReadPiece {
    /// Rows of the answer, each one JSON value.
    Rows(Vec<Box<RawValue>>),
    /// The answer is complete.
    End,
    /// The read failed after the rows before it; why, on one line.
    Failed(String),
}

/// The engine's reads of its own store, shared by every connection that
/// asks; cheap to clone. Closed at the engine's end, before its store.
#[derive(Clone)]
pub struct StoreReads {
    shared: Arc<Shared>,
}

struct Shared {
    /// `None` once the engine has ended: no read starts any more.
    store: Mutex<Option<Store>>,
    data_dir: PathBuf,
    extra: &'static [ExtraRead],
    /// Reads whose thread is at work.
    readers: watch::Sender<usize>,
    /// Set when the engine ends: threads stop between rows.
    closed: watch::Sender<bool>,
    /// How often a thread found its queue full and waited for its client.
    waits: watch::Sender<u64>,
    /// Where a thread waits for room in its queue, or for the engine's end.
    runtime: tokio::runtime::Handle,
}

/// A reader's place among the [`MAX_READERS`], with its handle on the
/// store; given back (store first) when its thread ends.
struct Slot {
    store: Option<Store>,
    shared: Arc<Shared>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        drop(self.store.take());
        self.shared.readers.send_modify(|n| *n -= 1);
    }
}

impl StoreReads {
    /// Serves reads of `store` (the crawl in `data_dir`) and of `extra`;
    /// called within the engine's runtime.
    pub(crate) fn new(store: Store, data_dir: &Path, extra: &'static [ExtraRead]) -> StoreReads {
        StoreReads {
            shared: Arc::new(Shared {
                store: Mutex::new(Some(store)),
                data_dir: data_dir.to_path_buf(),
                extra,
                readers: watch::Sender::new(0),
                closed: watch::Sender::new(false),
                waits: watch::Sender::new(0),
                runtime: tokio::runtime::Handle::current(),
            }),
        }
    }

    /// Starts answering `verb arg` on a thread of its own; its pieces come
    /// through the returned queue. Refused, with why, past [`MAX_READERS`]
    /// or once the engine has ended.
    pub fn start(&self, verb: String, arg: String) -> Result<mpsc::Receiver<ReadPiece>, String> {
        let slot = self.take_slot()?;
        let (tx, rx) = mpsc::channel(QUEUED_CHUNKS);
        std::thread::Builder::new()
            .name("results-reader".into())
            .spawn(move || {
                let ended = read_thread(&slot, &verb, &arg, tx);
                tracing::debug!(verb, "results read ended: {ended}");
            })
            .map_err(|e| format!("cannot start a results reader: {e}"))?;
        Ok(rx)
    }

    fn take_slot(&self) -> Result<Slot, String> {
        let store = lock(&self.shared.store);
        let Some(store) = store.as_ref() else {
            return Err("the crawl has stopped; read its results again".into());
        };
        let mut admitted = false;
        self.shared.readers.send_if_modified(|n| {
            admitted = *n < MAX_READERS;
            *n += usize::from(admitted);
            admitted
        });
        if !admitted {
            return Err(BUSY.into());
        }
        Ok(Slot {
            store: Some(store.clone()),
            shared: self.shared.clone(),
        })
    }

    /// Becomes true when the engine ends: a connection stops waiting on its
    /// client then, so its thread lets go of the store.
    pub fn closed(&self) -> watch::Receiver<bool> {
        self.shared.closed.subscribe()
    }

    /// Reads whose thread is at work.
    pub fn readers(&self) -> watch::Receiver<usize> {
        self.shared.readers.subscribe()
    }

    /// How often a read's thread waited for a client slower than the store.
    pub fn waits_for_clients(&self) -> watch::Receiver<u64> {
        self.shared.waits.subscribe()
    }

    /// The engine's end: no read starts any more, running ones stop at their
    /// next row, and this returns once their threads have let go of the
    /// store (at most [`CLOSE_LIMIT`]), so that a restart can open it.
    pub(crate) fn close(&self, runtime: &tokio::runtime::Handle) {
        self.shared.closed.send_replace(true);
        drop(lock(&self.shared.store).take());
        let mut readers = self.readers();
        let waited = runtime.block_on(async {
            tokio::time::timeout(CLOSE_LIMIT, readers.wait_for(|n| *n == 0)).await
        });
        if waited.is_err() {
            let left = *self.shared.readers.borrow();
            tracing::warn!("{left} results readers still hold the store after {CLOSE_LIMIT:?}");
        }
    }
}

/// The read cache of a store opened again after the engine's end.
const REOPEN_CACHE_BYTES: u64 = 64 * 1024 * 1024;

impl StoreReads {
    /// Serves reads again after the engine's end, from the store opened
    /// anew: a worker of a shared crawl stays to answer for its records
    /// once the crawl is over.
    pub fn reopen(&self) -> Result<(), StoreError> {
        let store = Store::open(&self.shared.data_dir, REOPEN_CACHE_BYTES)?;
        *lock(&self.shared.store) = Some(store);
        self.shared.closed.send_replace(false);
        Ok(())
    }
}

fn lock(store: &Mutex<Option<Store>>) -> MutexGuard<'_, Option<Store>> {
    // Only ever taken whole or cloned: a panic elsewhere leaves it consistent.
    store.lock().unwrap_or_else(|e| e.into_inner())
}

/// Answers one read and hands its last piece over; says how it ended.
fn read_thread(slot: &Slot, verb: &str, arg: &str, tx: mpsc::Sender<ReadPiece>) -> &'static str {
    let Some(store) = slot.store.as_ref() else {
        return "no store";
    };
    let shared = &slot.shared;
    let mut out = Chunks {
        tx,
        rows: Vec::new(),
        bytes: 0,
        shared,
    };
    let reading = Reading {
        store,
        data_dir: &shared.data_dir,
        extra: shared.extra,
    };
    let last = match answer(verb, arg, &reading, &mut out).and_then(|()| out.flush()) {
        Ok(()) => ReadPiece::End,
        Err(Answer::Gone) => return "the client left",
        Err(Answer::Store(e)) => match out.flush() {
            Ok(()) => ReadPiece::Failed(one_line(&e.to_string())),
            Err(_) => return "the client left",
        },
    };
    match out.send(last) {
        Ok(()) => "answered",
        Err(_) => "the client left",
    }
}

/// Why a read stopped early.
enum Answer {
    /// The store failed, or the engine ended: the client is told.
    Store(StoreError),
    /// The client went away: nobody to tell.
    Gone,
}

impl From<StoreError> for Answer {
    fn from(e: StoreError) -> Self {
        Answer::Store(e)
    }
}

/// What a read's thread reads from.
struct Reading<'a> {
    store: &'a Store,
    data_dir: &'a Path,
    extra: &'static [ExtraRead],
}

/// Rows gathered into chunks and queued for the client.
struct Chunks<'a> {
    tx: mpsc::Sender<ReadPiece>,
    rows: Vec<Box<RawValue>>,
    bytes: usize,
    shared: &'a Shared,
}

impl Chunks<'_> {
    fn row<T: Serialize>(&mut self, value: &T) -> Result<(), Answer> {
        if *self.shared.closed.borrow() {
            return Err(Answer::Store(stopped()));
        }
        if self.tx.is_closed() {
            return Err(Answer::Gone);
        }
        let row = serde_json::value::to_raw_value(value).map_err(|source| StoreError::Encode {
            what: "results row",
            source,
        })?;
        self.bytes += row.get().len();
        self.rows.push(row);
        if self.bytes >= CHUNK_BYTES {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), Answer> {
        if self.rows.is_empty() {
            return Ok(());
        }
        self.bytes = 0;
        let rows = std::mem::take(&mut self.rows);
        self.send(ReadPiece::Rows(rows))
    }

    /// Queues `piece`, waiting while the client's queue is full (until the
    /// engine ends).
    fn send(&mut self, piece: ReadPiece) -> Result<(), Answer> {
        let piece = match self.tx.try_send(piece) {
            Ok(()) => return Ok(()),
            Err(mpsc::error::TrySendError::Closed(_)) => return Err(Answer::Gone),
            Err(mpsc::error::TrySendError::Full(piece)) => piece,
        };
        self.shared.waits.send_modify(|n| *n += 1);
        let mut closed = self.shared.closed.subscribe();
        let tx = &self.tx;
        self.shared.runtime.block_on(async move {
            tokio::select! {
                sent = tx.send(piece) => sent.map_err(|_| Answer::Gone),
                _ = closed.wait_for(|closed| *closed) => Err(Answer::Store(stopped())),
            }
        })
    }
}

fn answer(verb: &str, arg: &str, reading: &Reading, out: &mut Chunks) -> Result<(), Answer> {
    let store = reading.store;
    match verb {
        "pages" => send_all(store.page_records(arg), out),
        "filtered" => send_all(store.filtered_urls(arg), out),
        "referrers" => send_all(store.referrer_entries(arg), out),
        "inlinks-of" => out.row(&store.inlinks_of(&arg.split('\n').collect::<Vec<_>>())),
        "fragments" => send_all(store.fragment_links(arg), out),
        "sitemaps" => send_all(store.sitemap_entries(arg), out),
        "previous-pages" => send_all(store.previous_pass_records(arg), out),
        "recrawl-pass" => out.row(&store.recrawl_pass()),
        "page" => out.row(&store.page(arg)?),
        "referrers-of" => out.row(&store.referrers(arg)?),
        "rules" => out.row(&store.rule_origins()?),
        _ => match reading.extra.iter().find(|e| e.name == verb) {
            Some(extra) => match extra.read {
                ExtraAnswer::One(read) => out.row(&read(store, reading.data_dir, arg)?),
                ExtraAnswer::Lines(read) => send_all(read(store, reading.data_dir, arg)?, out),
            },
            None => Err(Answer::Store(StoreError::Corrupt {
                what: "results request",
                message: format!("unknown request {:?}", one_line(verb)),
            })),
        },
    }
}

fn send_all<T: Serialize>(entries: Entries<T>, out: &mut Chunks) -> Result<(), Answer> {
    for entry in entries {
        out.row(&entry?)?;
    }
    Ok(())
}

fn stopped() -> StoreError {
    StoreError::Corrupt {
        what: "results stream",
        message: "the crawl stopped while the results were being read; read them again".into(),
    }
}

fn one_line(s: &str) -> String {
    s.replace(['\n', '\r', '\t'], " ")
}

#[cfg(test)]
#[path = "reads_tests.rs"]
mod tests;
