//! Reads of a running crawl over the control socket: the engine's store
//! reads served on a real socket in a data directory, read back by the
//! blocking client and `Results`.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::client;
use super::hub::Hub;
use super::lock::DataDirLock;
use super::read_client;
use super::results::{RemoteStore, Results};
use super::server::{ControlServer, ControlSocket};
use crate::engine::reads::{
    ExtraAnswer, ExtraRead, StoreReads, BUSY, CHUNK_BYTES, MAX_READERS, QUEUED_CHUNKS,
};
use crate::engine::store::{Entries, PageOutcome, PageRecord, Store, StoreError};
use crate::engine::EngineHandle;

/// No wait of these tests may take longer.
const LIMIT: Duration = Duration::from_secs(30);

/// Rows of `ENDLESS` handed to a reader so far.
static ENDLESS_PULLED: AtomicU64 = AtomicU64::new(0);
/// The bytes of one `ENDLESS` row as JSON (a string of 1000 `x`, quoted).
const ENDLESS_ROW: usize = 1002;

fn endless(_: &Store, _: &Path, _: &str) -> Result<Entries<serde_json::Value>, StoreError> {
    Ok(Box::new(std::iter::repeat_with(|| {
        ENDLESS_PULLED.fetch_add(1, Ordering::SeqCst);
        Ok(serde_json::Value::String("x".repeat(ENDLESS_ROW - 2)))
    })))
}

/// Rows of one MiB each, more of them than one frame holds.
const BIG_ROWS: usize = 20;

fn big(_: &Store, _: &Path, _: &str) -> Result<Entries<serde_json::Value>, StoreError> {
    Ok(Box::new((0..BIG_ROWS).map(|i| {
        let row = format!("{i:02}{}", "y".repeat((1 << 20) - 2));
        Ok(serde_json::Value::String(row))
    })))
}

/// Rows without end, uncounted.
fn unending(_: &Store, _: &Path, _: &str) -> Result<Entries<serde_json::Value>, StoreError> {
    Ok(Box::new(std::iter::repeat_with(|| {
        Ok(serde_json::Value::String("z".repeat(100)))
    })))
}

const TEST_READS: &[ExtraRead] = &[
    ExtraRead {
        name: "unending",
        read: ExtraAnswer::Lines(unending),
    },
    ExtraRead {
        name: "endless",
        read: ExtraAnswer::Lines(endless),
    },
    ExtraRead {
        name: "big",
        read: ExtraAnswer::Lines(big),
    },
];

/// A crawl's store with `pages` records, served on the control socket of
/// its data directory as a running engine's is.
struct Served {
    dir: tempfile::TempDir,
    store: Store,
    reads: StoreReads,
    _lock: DataDirLock,
    _server: ControlServer,
}

fn serve(pages: usize) -> Served {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), 4 << 20).unwrap();
    let records: Vec<PageRecord> = (0..pages)
        .map(|i| {
            let url = format!("http://a.example/page-{i:05}");
            let fetched = PageOutcome::Fetched { status: 200 };
            let mut record = PageRecord::without_fetch(&url, "a.example", 1, 1, fetched);
            record.title = Some(format!("Page {i} of a listing longer than one frame"));
            record
        })
        .collect();
    store.record_pages(&records).unwrap();
    let reads = StoreReads::new(store.clone(), dir.path(), TEST_READS);
    let lock = DataDirLock::acquire(dir.path()).unwrap();
    let (handle, _engine) = EngineHandle::channel();
    let hub = Hub::new(handle).with_reads(reads.clone());
    let server = ControlSocket::bind(lock.socket_path()).unwrap().serve(hub);
    Served {
        dir,
        store,
        reads,
        _lock: lock,
        _server: server,
    }
}

impl Served {
    /// Waits until no read's thread is at work any more.
    async fn readers_end(&self, why: &str) {
        let mut readers = self.reads.readers();
        tokio::time::timeout(LIMIT, readers.wait_for(|n| *n == 0))
            .await
            .expect(why)
            .unwrap();
    }
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::time::timeout(LIMIT, tokio::task::spawn_blocking(f))
        .await
        .expect("within the limit")
        .expect("no panic")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listing_streams_over_the_control_socket_in_frames() {
    let served = serve(3000);
    let local: Vec<PageRecord> = served.store.page_records("").map(Result::unwrap).collect();
    let bytes: usize = local
        .iter()
        .map(|r| serde_json::to_vec(r).unwrap().len())
        .sum();
    assert!(bytes > 3 * CHUNK_BYTES, "several chunks: {bytes} bytes");
    let dir = served.dir.path().to_path_buf();
    let (remote, big) = blocking(move || {
        let results = Results::open(&dir).unwrap();
        assert!(results.is_live(), "read through the running engine");
        let pages: Vec<PageRecord> = results.pages("").unwrap().map(Result::unwrap).collect();
        let Results::Remote(remote) = results else {
            unreachable!()
        };
        let big: Vec<String> = remote
            .stream("big", "")
            .unwrap()
            .map(Result::unwrap)
            .collect();
        (pages, big)
    })
    .await;
    assert_eq!(remote, local, "every record, in URL order");
    // Twenty MiB: more than the largest frame, so necessarily streamed.
    assert_eq!(big.len(), BIG_ROWS);
    let total: usize = big.iter().map(String::len).sum();
    assert!(total > super::protocol::MAX_FRAME, "{total} bytes");
    assert!(big
        .iter()
        .enumerate()
        .all(|(i, row)| row.starts_with(&format!("{i:02}")) && row.len() == 1 << 20));
    // A read is no viewer: the first one to attach is viewer 1.
    let viewer = client::connect(served.dir.path(), true).await.unwrap();
    assert_eq!(viewer.viewer, 1);
    served.readers_end("each read's thread ends").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inlinks_of_a_batch_of_urls_are_read_through_the_engine_in_their_order() {
    let served = serve(3);
    let page = |i: usize| format!("http://a.example/page-{i:05}");
    for parent in ["http://b.example/1", "http://b.example/2"] {
        let links = [(page(2), false), (page(0), false)];
        let links = links.iter().map(|(u, fresh)| (u.as_str(), *fresh));
        served.store.add_referrers(parent, links).unwrap();
    }
    served
        .store
        .add_referrers(
            "http://b.example/3",
            [(page(2).as_str(), false)].into_iter(),
        )
        .unwrap();
    served.store.flush_all().unwrap();
    let dir = served.dir.path().to_path_buf();
    let counts = blocking(move || {
        let results = Results::open(&dir).unwrap();
        assert!(results.is_live(), "read through the running engine");
        let asked = [page(2), page(1), "http://else.example/".into(), page(0)];
        results.inlinks_of(&asked).unwrap()
    })
    .await;
    assert_eq!(counts, [3, 0, 0, 2]);
    served.readers_end("the read's thread ends").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stops_reading_holds_the_reader_back_within_the_bound() {
    let served = serve(1);
    let mut waits = served.reads.waits_for_clients();
    let dir = served.dir.path().to_path_buf();
    // Asks, then reads nothing.
    let stalled = blocking(move || read_client::read(&dir, "endless", "").unwrap()).await;
    tokio::time::timeout(LIMIT, waits.wait_for(|n| *n > 0))
        .await
        .expect("the reader waits for its client instead of reading on")
        .unwrap();
    // Queued chunks, the one being filled, the one being written, and what
    // the kernel's socket buffers hold: nothing grows with the listing.
    let pulled = ENDLESS_PULLED.load(Ordering::SeqCst) as usize * ENDLESS_ROW;
    let held = (QUEUED_CHUNKS + 2) * (CHUNK_BYTES + ENDLESS_ROW);
    let kernel = 4 << 20;
    assert!(
        pulled <= held + kernel,
        "{pulled} bytes read for a client that reads nothing"
    );
    // A reader that goes away ends its thread, and with it its hold on the store.
    drop(stalled);
    served
        .readers_end("the thread ends once its client has gone")
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_past_the_limit_are_told_the_engine_is_busy() {
    let served = serve(1);
    let dir = served.dir.path().to_path_buf();
    let (busy, open) = blocking(move || {
        // Each holds its reader: it has read a row and reads no more.
        let open: Vec<_> = (0..MAX_READERS)
            .map(|_| {
                let mut answer = read_client::read(&dir, "unending", "").unwrap();
                answer.next().unwrap().unwrap();
                answer
            })
            .collect();
        let busy = RemoteStore::connect(&dir).err().expect("refused");
        (busy, open)
    })
    .await;
    assert!(busy.to_string().contains(BUSY), "{busy}");
    assert_eq!(*served.reads.readers().borrow(), MAX_READERS);
    drop(open);
    served
        .readers_end("their threads end once they have gone")
        .await;
    let dir = served.dir.path().to_path_buf();
    let rules = blocking(move || RemoteStore::connect(&dir).map(|_| ())).await;
    assert!(rules.is_ok(), "served again: {rules:?}");
}

#[tokio::test(start_paused = true)]
async fn a_reader_that_reads_nothing_for_the_idle_limit_is_dropped() {
    use super::protocol::{send, transport, ClientMsg, PROTOCOL_VERSION};
    use super::reads::IDLE_LIMIT;
    let dir = tempfile::tempdir().unwrap();
    let reads = StoreReads::new(
        Store::open(dir.path(), 4 << 20).unwrap(),
        dir.path(),
        TEST_READS,
    );
    let (handle, _engine) = EngineHandle::channel();
    let hub = Hub::new(handle).with_reads(reads.clone());
    let (server_end, client_end) = tokio::io::duplex(64 * 1024);
    let mut wire = transport(client_end);
    let read = ClientMsg::Read {
        version: PROTOCOL_VERSION,
        verb: "unending".into(),
        arg: String::new(),
    };
    send(&mut wire, &read).await.unwrap();
    let started = tokio::time::Instant::now();
    // The client keeps its end open and reads nothing.
    let served = super::server::serve_connection(hub, server_end).await;
    let Err(super::protocol::WireError::Io(e)) = served else {
        panic!("{served:?}")
    };
    assert_eq!(e.kind(), std::io::ErrorKind::TimedOut, "{e}");
    assert!(started.elapsed() >= IDLE_LIMIT);
    let mut readers = reads.readers();
    readers.wait_for(|n| *n == 0).await.unwrap();
    drop(wire);
}
