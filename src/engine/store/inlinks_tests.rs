use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::super::index::Rows;
use super::super::inlink_files::INLINKS_DIR;
use super::super::inlink_rows::{copy_key, encode_pairs, group_key};
use super::super::keys::url_fingerprint;
use super::super::tests::xorshift;
use super::super::{Store, StoreError};
use super::{InlinkCounts, ROOM, ROW_REMOVALS_PER_WRITE};

/// The key and value lengths of the index's inlink rows, in key order.
fn row_sizes(store: &Store) -> Vec<(usize, usize)> {
    let rows = store.inner.index.rows(Rows::Inlinks).iter();
    let sizes = rows.map(|row| row.into_inner().unwrap());
    sizes.map(|(key, value)| (key.len(), value.len())).collect()
}

fn file(dir: &Path, name: &str) -> PathBuf {
    dir.join(INLINKS_DIR).join(name)
}

fn file_len(dir: &Path, name: &str) -> u64 {
    std::fs::metadata(file(dir, name)).map_or(0, |m| m.len())
}

#[test]
fn inlinks_count_each_linking_page_once_across_groups_and_reopens() {
    let dir = tempfile::tempdir().unwrap();
    let (menu, once) = ("http://a.example/menu", "http://a.example/menu/once");
    {
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        for n in 0..10 {
            let parent = format!("http://a.example/p{n}");
            // The same link twice on one page counts once.
            let links = [(menu, n == 0), (menu, false)];
            store.add_referrers(&parent, links.into_iter()).unwrap();
            if n % 4 == 0 {
                store.flush_all().unwrap();
            }
        }
        let page = "http://a.example/p0";
        store
            .add_referrers(page, [(once, true), (page, false)].into_iter())
            .unwrap();
        store.flush_all().unwrap();
        assert_eq!(store.inlinks(menu), 10);
    }
    let store = Store::open(dir.path(), 1 << 20).unwrap();
    store
        .add_referrers("http://a.example/p99", [(menu, false)].into_iter())
        .unwrap();
    store.flush().unwrap();
    assert_eq!(
        store.inlinks(menu),
        10,
        "a flush writes a group when it is due"
    );
    store.flush_all().unwrap();
    assert_eq!(store.inlinks(menu), 11, "counts survive a reopen");
    assert_eq!(store.inlinks(once), 1);
    assert_eq!(store.inlinks("http://a.example/p0"), 0, "no self-links");
    let listed = store.inlinks_of(&[once, "http://a.example/none", menu]);
    assert_eq!(listed, [1, 0, 11]);
}

#[test]
fn adding_sorted_batches_keeps_every_count_as_a_map_would() {
    let mut counts = InlinkCounts::default();
    let mut model = BTreeMap::new();
    let mut state = 0x9e37_79b9_7f4a_7c15;
    for round in 0..200 {
        let mut batch = BTreeMap::new();
        for _ in 0..(round % 37) * 5 {
            // Few distinct values, so batches meet counts held already.
            let fp = xorshift(&mut state) % 900;
            *batch.entry(fp).or_insert(0u32) += 1;
        }
        let pairs: Vec<(u64, u32)> = batch.into_iter().collect();
        for &(fp, n) in &pairs {
            *model.entry(fp).or_insert(0u32) += n;
        }
        counts.add(&pairs);
    }
    assert!(
        counts.fps.windows(2).all(|w| w[0] < w[1]),
        "ascending, once each"
    );
    let held: BTreeMap<u64, u32> = counts
        .fps
        .iter()
        .copied()
        .zip(counts.counts.iter().copied())
        .collect();
    assert_eq!(held, model);
    assert_eq!(counts.get(u64::MAX), 0);
}

#[test]
fn groups_fill_the_counts_room_without_moving_them_then_it_doubles() {
    let mut counts = InlinkCounts::default();
    counts.add(&[(3, 1)]);
    let (fps, held) = (counts.fps.as_ptr(), counts.counts.as_ptr());
    assert!(counts.fps.capacity() >= ROOM && counts.counts.capacity() >= ROOM);
    let mut state = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..20 {
        let mut group: Vec<(u64, u32)> = (0..5_000).map(|_| (xorshift(&mut state), 1)).collect();
        group.sort_unstable();
        group.dedup_by_key(|pair| pair.0);
        counts.add(&group);
    }
    // Never copied while the room lasted.
    assert_eq!((counts.fps.as_ptr(), counts.counts.as_ptr()), (fps, held));
    let filled = counts.fps.len();
    let past: Vec<(u64, u32)> = (0..(ROOM - filled + 1) as u64)
        .map(|k| (u64::MAX - ROOM as u64 + k, 1))
        .collect();
    counts.add(&past);
    assert_eq!(counts.fps.len(), ROOM + 1);
    assert!(counts.fps.capacity() >= 2 * ROOM, "twice the room");
    assert_eq!(counts.get(u64::MAX - ROOM as u64), 1);
}

#[test]
fn the_log_stays_under_the_counts_and_adds_up_to_them_on_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let urls: Vec<String> = (0..3_000)
        .map(|n| format!("http://a.example/u{n}"))
        .collect();
    let mut copies = 0;
    {
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        for page in 0..60 {
            let parent = format!("http://a.example/page{page}");
            // Each page links a window of the URLs: groups overlap.
            let links = urls[page * 40..page * 40 + 400]
                .iter()
                .map(|u| (u.as_str(), false));
            store.add_referrers(&parent, links).unwrap();
            store.flush_all().unwrap();
            let counts = store.inlink_counts();
            assert!(counts.pairs_in_log <= counts.fps.len(), "page {page}");
            copies += usize::from(counts.pairs_in_log == 0);
            // A record is its pairs and 16 bytes of head and checksum.
            let groups = file_len(dir.path(), "groups") as usize;
            assert!(groups <= counts.pairs_in_log * 12 + 16 * 60, "page {page}");
        }
        assert!(row_sizes(&store).is_empty(), "nothing in the index");
    }
    assert!(copies > 3, "whole copies were written: {copies}");
    let store = Store::open(dir.path(), 1 << 20).unwrap();
    let expected = |n: usize| {
        (0..60)
            .filter(|p| (p * 40..p * 40 + 400).contains(&n))
            .count() as u32
    };
    let got = store.inlinks_of(&urls);
    let want: Vec<u32> = (0..urls.len()).map(expected).collect();
    assert_eq!(got, want);
}

#[test]
fn a_whole_copy_empties_the_log_and_a_crash_before_that_counts_nothing_twice() {
    let dir = tempfile::tempdir().unwrap();
    let urls: Vec<String> = (0..500).map(|n| format!("http://b.example/{n}")).collect();
    let link_all = |store: &Store, parent: &str| {
        let links = urls.iter().map(|u| (u.as_str(), false));
        store.add_referrers(parent, links).unwrap();
        store.flush_all().unwrap();
    };
    let kept_log;
    {
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        link_all(&store, "http://b.example/");
        // A record: its pairs and 16 bytes of head and checksum.
        assert_eq!(file_len(dir.path(), "groups"), 16 + 500 * 12);
        assert_eq!(file_len(dir.path(), "counts"), 0);
        kept_log = std::fs::read(file(dir.path(), "groups")).unwrap();
        // A second record would outnumber the counts: a copy instead.
        link_all(&store, "http://b.example/second");
        assert_eq!(file_len(dir.path(), "counts"), 28 + 500 * 12);
        assert_eq!(file_len(dir.path(), "groups"), 0);
    }
    // As if the process died between the copy's rename and the log's end:
    // the record the copy holds is still in the log.
    std::fs::write(file(dir.path(), "groups"), &kept_log).unwrap();
    let store = Store::open(dir.path(), 1 << 20).unwrap();
    assert!(store.inlinks_of(&urls).iter().all(|&n| n == 2));
    link_all(&store, "http://b.example/third");
    assert!(store.inlinks_of(&urls).iter().all(|&n| n == 3));
}

#[test]
fn a_log_record_cut_short_is_cut_off_and_the_records_before_count() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = ("http://a.example/a", "http://a.example/b");
    let link = |store: &Store, parent: &str, links: &[&str]| {
        let links = links.iter().map(|u| (*u, false));
        store.add_referrers(parent, links).unwrap();
        store.flush_all().unwrap();
    };
    let whole;
    {
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        // A record of two, then a copy (a 2, b 1), then records of one.
        link(&store, "http://a.example/1", &[a, b]);
        link(&store, "http://a.example/2", &[a]);
        assert_eq!(file_len(dir.path(), "groups"), 0, "a copy");
        link(&store, "http://a.example/3", &[b]);
        whole = file_len(dir.path(), "groups");
        assert_eq!(whole, 16 + 12, "b's record");
        link(&store, "http://a.example/4", &[b]);
    }
    let log = file(dir.path(), "groups");
    let bytes = std::fs::read(&log).unwrap();
    // The last record loses its last byte, as a write cut short would.
    std::fs::write(&log, &bytes[..bytes.len() - 1]).unwrap();
    {
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        assert_eq!(store.inlinks_of(&[a, b]), [2, 2]);
        assert_eq!(
            file_len(dir.path(), "groups"),
            whole,
            "cut at the whole record"
        );
        link(&store, "http://a.example/5", &[a]);
        assert_eq!(store.inlinks_of(&[a, b]), [3, 2]);
    }
    // A damaged byte inside a record ends the log there too.
    let mut bytes = std::fs::read(&log).unwrap();
    let last = bytes.len() - 5;
    bytes[last] ^= 0xFF;
    std::fs::write(&log, &bytes).unwrap();
    let store = Store::open(dir.path(), 1 << 20).unwrap();
    assert_eq!(store.inlinks_of(&[a, b]), [2, 2]);
}

#[test]
fn a_damaged_copy_fails_the_opening_and_names_the_counts() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        for parent in ["http://a.example/", "http://a.example/again"] {
            let links = [("http://a.example/a", false), ("http://a.example/b", false)];
            store.add_referrers(parent, links.into_iter()).unwrap();
            store.flush_all().unwrap();
        }
    }
    let copy = file(dir.path(), "counts");
    let mut bytes = std::fs::read(&copy).unwrap();
    bytes[30] ^= 1;
    std::fs::write(&copy, &bytes).unwrap();
    let err = Store::open(dir.path(), 1 << 20).err().expect("refused");
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
    assert!(err.to_string().contains("inlink counts"), "{err}");
    std::fs::write(&copy, &bytes[..bytes.len() - 3]).unwrap();
    let err = Store::open(dir.path(), 1 << 20).err().expect("refused");
    assert!(err.to_string().contains("length"), "{err}");
}

#[test]
fn counts_in_the_format_before_are_read_and_rewritten() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = ("http://a.example/a", "http://a.example/b");
    // More rows than one write removes.
    let others: Vec<String> = (0..2 * ROW_REMOVALS_PER_WRITE + 5)
        .map(|n| format!("http://c.example/{n}"))
        .collect();
    {
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        // `url 0 group → count`: a's in two groups.
        let legacy = |url: &str, group: u64, n: u32| {
            let mut key = url.as_bytes().to_vec();
            key.push(0);
            key.extend_from_slice(&group.to_be_bytes());
            (key, Some(n.to_le_bytes().to_vec()))
        };
        let rows = [legacy(a, 1, 3), legacy(a, 2, 4), legacy(b, 1, 1)];
        store.inner.index.write(Rows::Inlinks, rows).unwrap();
        let rows = others.iter().map(|url| legacy(url, 7, 2));
        store.inner.index.write(Rows::Inlinks, rows).unwrap();
        store.flush().unwrap();
    }
    let store = Store::open(dir.path(), 1 << 20).unwrap();
    assert_eq!(store.inlinks_of(&[a, b]), [7, 1]);
    assert!(store.inlinks_of(&others).iter().all(|&n| n == 2));
    assert!(row_sizes(&store).is_empty(), "no row left in the index");
    assert_eq!(
        file_len(dir.path(), "counts"),
        28 + (2 + others.len() as u64) * 12
    );
    drop(store);
    let store = Store::open(dir.path(), 1 << 20).unwrap();
    assert_eq!(store.inlinks_of(&[a, b]), [7, 1]);
    assert!(store.inlinks_of(&others).iter().all(|&n| n == 2));
}

/// Writes one row of counts as `key`, as a crash may have left it.
fn write_row(store: &Store, key: Vec<u8>, counts: &[(&str, u32)]) {
    let mut pairs: Vec<(u64, u32)> = counts
        .iter()
        .map(|(u, n)| (url_fingerprint(u), *n))
        .collect();
    pairs.sort_unstable();
    let value = encode_pairs(pairs.into_iter());
    store
        .inner
        .index
        .write(Rows::Inlinks, [(key, Some(value))])
        .unwrap();
}

/// Leaves in `dir`'s index the rows the version before wrote: each row's
/// key and the count it holds for `url`.
fn leave_rows(dir: &Path, url: &str, rows: &[(Vec<u8>, u32)]) {
    let store = Store::open(dir, 1 << 20).unwrap();
    for (key, n) in rows {
        write_row(&store, key.clone(), &[(url, *n)]);
    }
    store.flush().unwrap();
}

#[test]
fn an_index_copy_cut_short_leaves_the_rows_before_in_force_and_all_are_moved() {
    let dir = tempfile::tempdir().unwrap();
    let a = "http://a.example/a";
    // Two group rows, and the first of a copy's two chunks, the second
    // never written.
    let rows = [
        (group_key(1), 1),
        (group_key(2), 1),
        (copy_key(u64::MAX / 2, 0, 2), 100),
    ];
    leave_rows(dir.path(), a, &rows);
    let store = Store::open(dir.path(), 1 << 20).unwrap();
    assert_eq!(store.inlinks(a), 2);
    assert!(row_sizes(&store).is_empty(), "every row moved");
    drop(store);
    let store = Store::open(dir.path(), 1 << 20).unwrap();
    assert_eq!(store.inlinks(a), 2, "from the files");
}

#[test]
fn an_index_copy_wins_over_rows_it_replaced_that_a_crash_left() {
    let dir = tempfile::tempdir().unwrap();
    let a = "http://a.example/a";
    // A whole copy (one chunk of one), and a group after it; the group row
    // before the copy was never removed.
    let rows = [
        (group_key(1), 1),
        (copy_key(u64::MAX / 2, 0, 1), 5),
        (group_key(u64::MAX / 2 + 1), 2),
    ];
    leave_rows(dir.path(), a, &rows);
    let store = Store::open(dir.path(), 1 << 20).unwrap();
    assert_eq!(store.inlinks(a), 7);
    assert!(row_sizes(&store).is_empty(), "every row moved");
}

#[test]
fn rows_left_beside_the_files_by_a_crash_are_removed_not_counted_again() {
    let dir = tempfile::tempdir().unwrap();
    let a = "http://a.example/a";
    {
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        store
            .add_referrers("http://a.example/1", [(a, false)].into_iter())
            .unwrap();
        store.flush_all().unwrap();
        // As if the move from the index had written its copy and died
        // before removing the rows.
        write_row(&store, group_key(1), &[(a, 1)]);
        store.flush().unwrap();
    }
    let store = Store::open(dir.path(), 1 << 20).unwrap();
    assert_eq!(store.inlinks(a), 1);
    assert!(row_sizes(&store).is_empty());
}

#[test]
fn the_galloping_search_finds_what_a_whole_search_finds() {
    let mut state = 0x2545_f491_4f6c_dd1d;
    for len in [0, 1, 2, 3, 7, 8, 9, 100, 1000] {
        let mut fps: Vec<u64> = (0..len).map(|_| xorshift(&mut state) % 5000).collect();
        fps.sort_unstable();
        fps.dedup();
        let counts = InlinkCounts {
            counts: vec![1; fps.len()],
            fps,
            ..InlinkCounts::default()
        };
        for from in 0..=counts.fps.len() {
            for fp in [
                0,
                1,
                2499,
                4999,
                5000,
                u64::MAX,
                xorshift(&mut state) % 5000,
            ] {
                let whole = from + counts.fps[from..].partition_point(|&h| h < fp);
                assert_eq!(counts.position_from(from, fp), whole, "{len} {from} {fp}");
            }
        }
    }
}
