use std::collections::BTreeMap;

use super::super::index::Rows;
use super::super::inlink_rows::{copy_key, encode_pairs, group_key};
use super::super::keys::url_fingerprint;
use super::super::Store;
use super::{InlinkCounts, LEGACY_REMOVALS_PER_WRITE, PAIRS_PER_ROW};

/// The key and value lengths of the inlink rows, in key order.
fn row_sizes(store: &Store) -> Vec<(usize, usize)> {
    let rows = store.inner.index.rows(Rows::Inlinks).iter();
    let sizes = rows.map(|row| row.into_inner().unwrap());
    sizes.map(|(key, value)| (key.len(), value.len())).collect()
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

/// A small deterministic generator (xorshift), for batches of fingerprints.
fn next(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
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
            let fp = next(&mut state) % 900;
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
fn rows_written_stay_under_twice_the_counts_and_add_up_to_them_on_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let urls: Vec<String> = (0..3_000)
        .map(|n| format!("http://a.example/u{n}"))
        .collect();
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
            assert!(counts.pairs_in_rows <= 2 * counts.fps.len(), "page {page}");
            let rows = store.inner.index.rows(Rows::Inlinks).iter().count();
            assert_eq!(rows, counts.row_keys.len());
        }
    }
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
fn a_whole_copy_spans_rows_of_a_bounded_size() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), 1 << 20).unwrap();
    let urls: Vec<String> = (0..PAIRS_PER_ROW + 10)
        .map(|n| format!("http://b.example/{n}"))
        .collect();
    for chunk in urls.chunks(20_000) {
        let links = chunk.iter().map(|u| (u.as_str(), false));
        store.add_referrers("http://b.example/", links).unwrap();
    }
    store.flush_all().unwrap();
    // A second group of the same URLs: more pairs in rows than counts.
    let links = urls.iter().map(|u| (u.as_str(), false));
    store
        .add_referrers("http://b.example/other", links)
        .unwrap();
    store.flush_all().unwrap();
    let values: Vec<usize> = row_sizes(&store).into_iter().map(|(_, v)| v).collect();
    assert_eq!(
        values,
        [PAIRS_PER_ROW * 12, 10 * 12],
        "one copy, in two rows"
    );
    drop(store);
    let store = Store::open(dir.path(), 1 << 20).unwrap();
    assert!(store.inlinks_of(&urls).iter().all(|&n| n == 2));
}

#[test]
fn counts_in_the_format_before_are_read_and_rewritten() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = ("http://a.example/a", "http://a.example/b");
    // More rows than one write removes.
    let others: Vec<String> = (0..2 * LEGACY_REMOVALS_PER_WRITE + 5)
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
    let keys: Vec<usize> = row_sizes(&store).into_iter().map(|(k, _)| k).collect();
    assert_eq!(
        keys,
        [17],
        "one chunk of a whole copy, no row of the format before"
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

#[test]
fn a_copy_cut_short_leaves_the_rows_before_in_force_and_is_removed() {
    let dir = tempfile::tempdir().unwrap();
    let a = "http://a.example/a";
    {
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        for parent in ["http://a.example/1", "http://a.example/2"] {
            store
                .add_referrers(parent, [(a, false)].into_iter())
                .unwrap();
            store.flush_all().unwrap();
        }
        // The first of a copy's two chunks, the second never written.
        write_row(&store, copy_key(u64::MAX / 2, 0, 2), &[(a, 100)]);
        store.flush().unwrap();
    }
    let store = Store::open(dir.path(), 1 << 20).unwrap();
    assert_eq!(store.inlinks(a), 2);
    let chunk = store
        .inner
        .index
        .rows(Rows::Inlinks)
        .get(copy_key(u64::MAX / 2, 0, 2));
    assert!(chunk.unwrap().is_none(), "the chunk is gone");
}

#[test]
fn a_whole_copy_wins_over_rows_it_replaced_that_a_crash_left() {
    let dir = tempfile::tempdir().unwrap();
    let a = "http://a.example/a";
    {
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        store
            .add_referrers("http://a.example/1", [(a, false)].into_iter())
            .unwrap();
        store.flush_all().unwrap();
        // A whole copy (one chunk of one), and a group after it; the group
        // row before the copy was never removed.
        write_row(&store, copy_key(u64::MAX / 2, 0, 1), &[(a, 5)]);
        write_row(&store, group_key(u64::MAX / 2 + 1), &[(a, 2)]);
        store.flush().unwrap();
    }
    let store = Store::open(dir.path(), 1 << 20).unwrap();
    assert_eq!(store.inlinks(a), 7);
    let keys: Vec<usize> = row_sizes(&store).into_iter().map(|(k, _)| k).collect();
    assert_eq!(keys, [8, 17], "the group after the copy, and the copy");
}
