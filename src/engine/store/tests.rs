use super::*;

/// A small deterministic generator (xorshift), for test data: fingerprints,
/// bytes that do not compress.
pub(super) fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

fn record(url: &str, outcome: PageOutcome) -> PageRecord {
    PageRecord::without_fetch(url, "a.example", 1, 1_700_000_000_000, outcome)
}

#[test]
fn the_first_page_record_marks_the_store_as_holding_pages_across_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = Store::open(dir.path(), 4 << 20).unwrap();
        let mut queued = CrawlBatch::default();
        queued.enqueue(b"qa.example\0\0seq", b"entry");
        queued.set_seq(1);
        store.apply(queued).unwrap();
        assert!(!store.has_pages(), "a queue row is not a page");
        let blocked = PageOutcome::Blocked {
            rule_id: 3,
            rule: "regex /cal/".into(),
        };
        store
            .record_pages(&[
                record("http://a.example/1", PageOutcome::RobotsDenied),
                record("http://a.example/2", blocked.clone()),
                record("http://a.example/1", PageOutcome::RobotsDenied),
            ])
            .unwrap();
        assert!(store.has_pages());
        store
            .record_pages(&[record("http://a.example/2", blocked)])
            .unwrap();
        store.flush().unwrap();
    }
    let store = Store::open(dir.path(), 4 << 20).unwrap();
    assert!(store.has_pages(), "the mark survives reopening");
    assert_eq!(store.count_pages(), 2);
    let page = store.page("http://a.example/1").unwrap().unwrap();
    assert_eq!(page.outcome, PageOutcome::RobotsDenied);
    assert!(store.page("http://a.example/3").unwrap().is_none());
    let mut urls = Vec::new();
    store.for_each_page(|p| urls.push(p.url)).unwrap();
    assert_eq!(urls, ["http://a.example/1", "http://a.example/2"]);
}

#[test]
fn seen_marks_are_listed_and_looked_up() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), 4 << 20).unwrap();
    let mut batch = CrawlBatch::default();
    batch.mark_seen("http://a.example/");
    batch.mark_seen("http://b.example/");
    store.apply(batch).unwrap();
    let fp = keys::url_fingerprint("http://a.example/");
    assert!(store.seen_contains(fp).unwrap());
    assert!(!store
        .seen_contains(keys::url_fingerprint("http://c.example/"))
        .unwrap());
    let mut all = Vec::new();
    store.for_each_seen(|fp| all.push(fp)).unwrap();
    all.sort_unstable();
    let mut expected = vec![fp, keys::url_fingerprint("http://b.example/")];
    expected.sort_unstable();
    assert_eq!(all, expected);
}

#[test]
fn a_second_open_of_the_same_directory_says_it_is_in_use() {
    let dir = tempfile::tempdir().unwrap();
    let _first = Store::open(dir.path(), 4 << 20).unwrap();
    let err = match Store::open(dir.path(), 4 << 20) {
        Ok(_) => panic!("second open succeeded"),
        Err(e) => e,
    };
    assert!(matches!(err, StoreError::Locked { .. }), "{err:?}");
    assert!(err.to_string().contains("in use by another crawldeck"));
}

#[test]
fn scan_after_continues_within_a_prefix_and_skips() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), 4 << 20).unwrap();
    let mut batch = CrawlBatch::default();
    for seq in 0..5 {
        batch.enqueue(&keys::queue_key("a", 0, seq), b"x");
        batch.enqueue(&keys::queue_key("ab", 0, seq), b"y");
    }
    store.apply(batch).unwrap();
    let prefix = keys::queue_prefix("a");
    let first = store.scan_after(&prefix, None, 2, |_| false).unwrap();
    assert_eq!(first.len(), 2);
    let skip = keys::queue_key("a", 0, 3);
    let rest = store
        .scan_after(&prefix, Some(&first[1].0), 10, |k| k == skip.as_slice())
        .unwrap();
    let seqs: Vec<u64> = rest
        .iter()
        .map(|(k, _)| keys::parse_queue_key(k).unwrap().1)
        .collect();
    assert_eq!(seqs, [2, 4]);
    assert!(rest.iter().all(|(_, v)| v == b"x"));
}
