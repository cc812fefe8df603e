use super::*;
use crate::engine::store::{PageOutcome, PageRecord};

/// Rows without end.
fn endless(_: &Store, _: &Path, _: &str) -> Result<Entries<serde_json::Value>, StoreError> {
    Ok(Box::new(std::iter::repeat_with(|| {
        Ok(serde_json::Value::String("e".repeat(500)))
    })))
}

const EXTRA: &[ExtraRead] = &[ExtraRead {
    name: "endless",
    read: ExtraAnswer::Lines(endless),
}];

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

fn store_of(dir: &Path, pages: usize) -> Store {
    let store = Store::open(dir, 4 << 20).unwrap();
    let records: Vec<PageRecord> = (0..pages)
        .map(|i| {
            let url = format!("http://a.example/{i:05}");
            let fetched = PageOutcome::Fetched { status: 200 };
            PageRecord::without_fetch(&url, "a.example", 1, 1, fetched)
        })
        .collect();
    store.record_pages(&records).unwrap();
    store
}

/// Every piece of `verb arg`, until its queue closes.
fn pieces(runtime: &tokio::runtime::Runtime, reads: &StoreReads, verb: &str) -> Vec<ReadPiece> {
    let mut rx = reads.start(verb.into(), String::new()).unwrap();
    runtime.block_on(async {
        let mut all = Vec::new();
        while let Some(piece) = rx.recv().await {
            all.push(piece);
        }
        all
    })
}

#[test]
fn rows_come_in_bounded_chunks_then_the_end_or_the_failure() {
    let runtime = runtime();
    let _entered = runtime.enter();
    let dir = tempfile::tempdir().unwrap();
    let store = store_of(dir.path(), 2000);
    let reads = StoreReads::new(store.clone(), dir.path(), EXTRA);
    let listing = pieces(&runtime, &reads, "pages");
    let (last, chunks) = listing.split_last().unwrap();
    assert!(matches!(last, ReadPiece::End), "{last:?}");
    assert!(chunks.len() > 1, "{} chunks", chunks.len());
    let mut urls = Vec::new();
    for chunk in chunks {
        let ReadPiece::Rows(rows) = chunk else {
            panic!("{chunk:?}")
        };
        let bytes: usize = rows.iter().map(|r| r.get().len()).sum();
        let widest = rows.iter().map(|r| r.get().len()).max().unwrap();
        assert!(bytes < CHUNK_BYTES + widest, "{bytes} bytes in a chunk");
        for row in rows {
            let record: PageRecord = serde_json::from_str(row.get()).unwrap();
            urls.push(record.url);
        }
    }
    let local: Vec<String> = store.page_records("").map(|r| r.unwrap().url).collect();
    assert_eq!(urls, local);

    let unknown = pieces(&runtime, &reads, "no-such-read");
    assert!(
        matches!(&unknown[..], [ReadPiece::Failed(why)] if why.contains("unknown request")),
        "{unknown:?}"
    );
}

#[test]
fn the_engines_end_stops_a_waiting_reader_and_frees_the_store() {
    let runtime = runtime();
    let _entered = runtime.enter();
    let dir = tempfile::tempdir().unwrap();
    let reads = StoreReads::new(store_of(dir.path(), 1), dir.path(), EXTRA);
    // Nobody takes the pieces: the thread fills its queue and waits.
    let _queue = reads.start("endless".into(), String::new()).unwrap();
    let mut waits = reads.waits_for_clients();
    runtime
        .block_on(tokio::time::timeout(
            Duration::from_secs(30),
            waits.wait_for(|n| *n > 0),
        ))
        .expect("the reader waits for room")
        .unwrap();
    assert_eq!(*reads.readers().borrow(), 1);

    reads.close(runtime.handle());
    assert_eq!(*reads.readers().borrow(), 0, "the thread has ended");
    Store::open(dir.path(), 4 << 20).expect("nothing holds the store any more");
    let refused = reads.start("pages".into(), String::new()).unwrap_err();
    assert!(refused.contains("the crawl has stopped"), "{refused}");
}

#[test]
fn reads_reopened_after_the_engines_end_answer_from_the_store_on_disk() {
    let runtime = runtime();
    let _entered = runtime.enter();
    let dir = tempfile::tempdir().unwrap();
    let reads = StoreReads::new(store_of(dir.path(), 3), dir.path(), EXTRA);
    reads.close(runtime.handle());
    assert!(reads.start("pages".into(), String::new()).is_err());

    reads.reopen().unwrap();
    let listing = pieces(&runtime, &reads, "pages");
    let rows: usize = listing
        .iter()
        .map(|piece| match piece {
            ReadPiece::Rows(rows) => rows.len(),
            _ => 0,
        })
        .sum();
    assert!(
        matches!(listing.last(), Some(ReadPiece::End)),
        "{listing:?}"
    );
    assert_eq!(rows, 3);
    let second = Store::open(dir.path(), 4 << 20).err();
    assert!(
        matches!(second, Some(StoreError::Locked { .. })),
        "the reads hold the store: {second:?}"
    );
}
