use super::*;
use crate::engine::store::{PageOutcome, PageRecord, Store};

/// A store of `n` pages `http://a.example/pNNNN`: status 404 for every tenth,
/// sizes that fall as the URL rises, titles "Page NNNN".
fn crawl(n: usize) -> (tempfile::TempDir, Results) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), 4 << 20).unwrap();
    let records: Vec<PageRecord> = (0..n)
        .map(|i| {
            let status = if i % 10 == 3 { 404 } else { 200 };
            let mut r = PageRecord::without_fetch(
                &format!("http://a.example/p{i:04}"),
                "a.example",
                1,
                1_700_000_000_000 + i as u64,
                PageOutcome::Fetched { status },
            );
            r.bytes = (n - i) as u64 * 10;
            r.title = Some(format!("Page {i:04}"));
            r.response_ms = Some((i % 7) as u32);
            r
        })
        .collect();
    store.record_pages(&records).unwrap();
    (dir, Results::Local(store))
}

fn request(dir: &Path, filter: &str, sort: PageColumn, first: usize, rows: usize) -> BandRequest {
    BandRequest {
        data_dir: dir.to_path_buf(),
        filter: filter.into(),
        sort,
        reverse: false,
        first,
        rows,
        count: true,
    }
}

fn urls(band: &Band) -> Vec<&str> {
    band.rows.iter().map(|r| r.url.as_str()).collect()
}

#[test]
fn a_band_in_url_order_is_the_ranks_asked_and_counts_every_row() {
    let (dir, results) = crawl(1000);
    let band = read_band(&results, &request(dir.path(), "", PageColumn::Url, 500, 3)).unwrap();
    assert_eq!(band.total, 1000);
    assert_eq!(band.first, 500);
    assert_eq!(
        urls(&band),
        [
            "http://a.example/p0500",
            "http://a.example/p0501",
            "http://a.example/p0502"
        ]
    );
    assert!(band.covers(500, 3));
    assert!(!band.covers(499, 3));
    assert_eq!(band.row(501).unwrap().url, "http://a.example/p0501");
}

#[test]
fn filter_words_combine_keys_and_text() {
    let (dir, results) = crawl(100);
    let band = read_band(
        &results,
        &request(dir.path(), "status:404", PageColumn::Url, 0, 100),
    )
    .unwrap();
    assert_eq!(band.total, 10);
    assert!(band.rows.iter().all(|r| r.status == Some(404)));
    let band = read_band(
        &results,
        &request(dir.path(), "status:4xx page 0013", PageColumn::Url, 0, 100),
    )
    .unwrap();
    assert_eq!(urls(&band), ["http://a.example/p0013"]);
    // Free text matches the title too, case folded.
    let band = read_band(
        &results,
        &request(dir.path(), "PAGE 0042", PageColumn::Url, 0, 9),
    )
    .unwrap();
    assert_eq!(urls(&band), ["http://a.example/p0042"]);
}

#[test]
fn a_bad_filter_word_is_named_with_what_it_takes() {
    let dir = tempfile::tempdir().unwrap();
    let err = PageFilter::parse("status:9xx", dir.path()).unwrap_err();
    assert!(err.contains("bad status"), "{err}");
    let err = PageFilter::parse("fate:gone", dir.path()).unwrap_err();
    assert!(err.contains("use one of"), "{err}");
    let err = PageFilter::parse("audit:nonsense", dir.path()).unwrap_err();
    assert!(err.contains("nonsense"), "{err}");
    // A colon in a free word is text, not a key.
    assert!(PageFilter::parse("http://a.example", dir.path()).is_ok());
}

#[test]
fn a_sorted_band_deep_in_the_order_is_exactly_the_ranks_a_full_sort_gives() {
    let (dir, results) = crawl(500);
    // Largest first: size falls as the URL rises, so rank r is page r.
    let band = read_band(&results, &request(dir.path(), "", PageColumn::Size, 200, 4)).unwrap();
    assert_eq!(band.total, 500);
    assert_eq!(
        urls(&band),
        [
            "http://a.example/p0200",
            "http://a.example/p0201",
            "http://a.example/p0202",
            "http://a.example/p0203"
        ]
    );
    let mut reversed = request(dir.path(), "", PageColumn::Size, 0, 2);
    reversed.reverse = true;
    let band = read_band(&results, &reversed).unwrap();
    assert_eq!(
        urls(&band),
        ["http://a.example/p0499", "http://a.example/p0498"]
    );
}

#[test]
fn ties_keep_the_crawl_order_and_bands_partition_the_order() {
    let (dir, results) = crawl(300);
    // Response times repeat every 7 pages: many ties.
    let mut seen = Vec::new();
    for first in (0..300).step_by(37) {
        let band = read_band(
            &results,
            &request(dir.path(), "", PageColumn::Time, first, 37),
        )
        .unwrap();
        seen.extend(
            band.rows
                .iter()
                .map(|r| (r.facts.response_ms, r.url.clone())),
        );
    }
    assert_eq!(seen.len(), 300);
    let mut expected = seen.clone();
    // Slowest first, then the order the crawl met them (URL order here).
    expected.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    assert_eq!(seen, expected);
}

#[test]
fn a_band_past_the_end_is_empty_and_says_where_the_end_is() {
    let (dir, results) = crawl(10);
    let band = read_band(
        &results,
        &request(dir.path(), "", PageColumn::Status, 50, 5),
    )
    .unwrap();
    assert_eq!(band.total, 10);
    assert!(band.rows.is_empty());
    assert!(band.covers(50, 5));
}

#[test]
fn rows_without_a_value_sort_last_in_either_direction() {
    let (dir, results) = crawl(3);
    let store = match &results {
        Results::Local(store) => store,
        _ => unreachable!(),
    };
    let unanswered = PageRecord::without_fetch(
        "http://a.example/a-timeout",
        "a.example",
        1,
        1_600_000_000_000,
        PageOutcome::Error {
            kind: "timeout".into(),
            message: "timed out".into(),
        },
    );
    store.record_pages(&[unanswered]).unwrap();
    for reverse in [false, true] {
        let mut asked = request(dir.path(), "", PageColumn::Status, 0, 10);
        asked.reverse = reverse;
        let band = read_band(&results, &asked).unwrap();
        assert_eq!(band.rows.last().unwrap().url, "http://a.example/a-timeout");
    }
}

#[test]
fn bands_of_disjoint_crawls_merge_into_the_band_of_both() {
    // One crawl, and the same pages split over two (as workers split hosts).
    let (dir, all) = crawl(120);
    let (odd_dir, even_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (odd, even) = (
        Store::open(odd_dir.path(), 4 << 20).unwrap(),
        Store::open(even_dir.path(), 4 << 20).unwrap(),
    );
    let Results::Local(store) = &all else {
        unreachable!()
    };
    for (i, record) in store.page_records("").enumerate() {
        let target = if i % 2 == 1 { &odd } else { &even };
        target.record_pages(&[record.unwrap()]).unwrap();
    }
    let parts = [Results::Local(odd), Results::Local(even)];
    for sort in [PageColumn::Url, PageColumn::Size, PageColumn::Time] {
        let asked = request(dir.path(), "", sort, 30, 20);
        let each = BandRequest {
            first: 0,
            rows: 50,
            ..asked.clone()
        };
        let bands: Vec<Band> = parts.iter().map(|r| read_band(r, &each).unwrap()).collect();
        // Across the wire and back, as a shared crawl's workers send them.
        let bands = bands
            .into_iter()
            .map(|b| serde_json::from_str(&serde_json::to_string(&b).unwrap()).unwrap())
            .collect();
        let merged = merge(&asked, bands);
        let whole = read_band(&all, &asked).unwrap();
        assert_eq!(merged.total, 120);
        assert_eq!(urls(&merged), urls(&whole), "{sort:?}");
    }
}

#[test]
fn a_band_read_without_counting_stops_past_its_last_row() {
    let (dir, results) = crawl(1000);
    let mut asked = request(dir.path(), "", PageColumn::Url, 10, 5);
    asked.count = false;
    let band = read_band(&results, &asked).unwrap();
    assert_eq!(urls(&band)[0], "http://a.example/p0010");
    assert_eq!(band.rows.len(), 5);
    // One row past the band was seen: a lower bound, not a count.
    assert_eq!((band.total, band.counted), (16, false));
    // Near the end it reaches the last row, and so has counted them all.
    asked.first = 995;
    let band = read_band(&results, &asked).unwrap();
    assert_eq!((band.total, band.counted), (1000, true));
}

#[test]
fn a_key_without_a_colon_is_a_word_and_type_filters_the_media_type() {
    let (dir, results) = crawl(30);
    // "status" alone is free text: no URL or title holds it.
    let band = read_band(
        &results,
        &request(dir.path(), "status", PageColumn::Url, 0, 50),
    )
    .unwrap();
    assert_eq!(band.total, 0);
    let band = read_band(
        &results,
        &request(dir.path(), "type:pdf", PageColumn::Url, 0, 50),
    )
    .unwrap();
    assert_eq!(band.total, 0);
}
