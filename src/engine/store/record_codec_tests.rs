use proptest::prelude::*;

use super::{decode, encode};
use crate::engine::page_facts::{ExtractedValues, Hreflang, HtmlFacts, NoindexSource};
use crate::engine::store::{PageOutcome, PageRecord, UrlKind, WarcLocation};

fn fetched_page() -> PageRecord {
    let url = "http://127.0.1.10:8080/articles/000/andadama-96.html";
    PageRecord {
        title: Some("Calsenis Misone Caltur - 127.0.1.10".into()),
        content_digest: Some("sha1:KL7FZ2UU2JR6WCIRUXSTZUFE46HPHWZX".into()),
        etag: Some("\"6b078bf3-5636\"".into()),
        last_modified: Some("Thu, 26 Nov 2026 01:31:31 GMT".into()),
        bytes: 22_070,
        outlinks: 3,
        canonical: Some(url.into()),
        content_type: Some("text/html".into()),
        simhash: Some(18_146_577_480_245_306_867),
        simhash_check: None,
        links_found: Some(47),
        warc: Some(WarcLocation {
            file: "crawldeck-00000.warc.gz".into(),
            offset: 389_772_472,
            length: 13_573,
        }),
        response_ms: Some(37),
        facts: Some(HtmlFacts {
            description: Some("Calsenis misone caltur andadama.".into()),
            h1: Some("Calsenis Misone".into()),
            h1_count: 1,
            words: 812,
            hreflang: Vec::new(),
        }),
        ..PageRecord::without_fetch(
            url,
            "127.0.1.10:8080",
            2,
            1_795_684_688_884,
            PageOutcome::Fetched { status: 200 },
        )
    }
}

fn round_trip(record: &PageRecord) {
    let bytes = encode(record);
    assert_eq!(decode(&record.url, &bytes).as_ref(), Ok(record));
}

#[test]
fn a_fetched_page_round_trips_in_under_a_third_of_its_json() {
    let record = fetched_page();
    round_trip(&record);
    let json = serde_json::to_vec(&record).expect("encodes");
    let compact = encode(&record);
    assert!(
        compact.len() * 3 < json.len(),
        "{} bytes against {} of JSON",
        compact.len(),
        json.len()
    );
}

#[test]
fn every_outcome_and_every_absent_field_round_trips() {
    let outcomes = [
        PageOutcome::Fetched { status: 404 },
        PageOutcome::NotModified { pass: 3 },
        PageOutcome::Redirect {
            status: 301,
            location: "https://b.test/é".into(),
        },
        PageOutcome::Duplicate {
            of: "http://a.test/first".into(),
        },
        PageOutcome::Error {
            kind: "timeout".into(),
            message: "no answer in 30s".into(),
        },
        PageOutcome::RobotsDenied,
        PageOutcome::Blocked {
            rule_id: u64::MAX,
            rule: "regex ^/a on h".into(),
        },
        PageOutcome::NotCrawled {
            reason: "robots.txt never became available".into(),
        },
    ];
    for outcome in outcomes {
        round_trip(&PageRecord::without_fetch(
            "https://a.test/x?y#z",
            "a.test",
            u32::MAX,
            u64::MAX,
            outcome,
        ));
    }
}

#[test]
fn a_host_a_digest_or_a_canonical_unlike_the_usual_ones_is_kept_as_written() {
    let mut record = fetched_page();
    record.url = "http://user@a.test:81/p".into();
    record.host = "a.test:81".into();
    record.content_digest = Some("sha1:not-base32".into());
    record.canonical = Some("http://a.test/other".into());
    record.links_dropped = 9;
    round_trip(&record);

    record.content_digest = Some("md5:abc".into());
    record.url = "not a url".into();
    record.canonical = None;
    round_trip(&record);
}

#[test]
fn every_noindex_source_and_the_facts_of_a_page_round_trip() {
    let mut record = fetched_page();
    for source in [
        NoindexSource::Meta,
        NoindexSource::Header,
        NoindexSource::Both,
    ] {
        record.noindex = Some(source);
        round_trip(&record);
    }
    record.facts = Some(HtmlFacts {
        description: None,
        h1: Some(String::new()),
        h1_count: u32::MAX,
        words: 0,
        hreflang: vec![
            Hreflang {
                lang: "de-AT".into(),
                url: "http://a.test/de/".into(),
            },
            Hreflang {
                lang: "x-default".into(),
                url: "http://a.test/".into(),
            },
        ],
    });
    record.response_ms = Some(u32::MAX);
    round_trip(&record);
    record.facts = Some(HtmlFacts::default());
    round_trip(&record);
}

#[test]
fn records_stored_as_json_still_decode() {
    let record = fetched_page();
    let json = serde_json::to_vec(&record).expect("encodes");
    assert_eq!(decode(&record.url, &json), Ok(record));
}

#[test]
fn a_cut_or_damaged_record_is_an_error_not_a_panic() {
    let bytes = encode(&fetched_page());
    for end in 0..bytes.len() {
        assert!(decode("http://127.0.1.10:8080/a", &bytes[..end]).is_err());
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(decode("http://127.0.1.10:8080/a", &longer).is_err());
    assert!(decode("http://a.test/", &[9, 0, 0]).is_err());
}

proptest! {
    #[test]
    fn any_record_round_trips(
        url in "[a-z]{1,5}://[a-z.:@]{0,12}(/[a-zé?#]{0,10})?",
        host in "[a-z.:]{0,12}",
        text in proptest::option::of(".{0,20}"),
        digest in proptest::option::of(prop_oneof![
            "sha1:[A-Z2-7]{32}",
            ".{0,40}",
        ]),
        numbers in (any::<u32>(), any::<u64>(), any::<u64>(), any::<u32>(), any::<u32>()),
        simhash in proptest::option::of(any::<u64>()),
        canonical_is_url in any::<bool>(),
    ) {
        let (depth, at, bytes, outlinks, dropped) = numbers;
        let mut record = PageRecord::without_fetch(&url, &host, depth, at, PageOutcome::NotModified { pass: 1 });
        record.title = text.clone();
        record.etag = text.clone();
        record.content_digest = digest;
        record.bytes = bytes;
        record.outlinks = outlinks;
        record.links_dropped = dropped;
        record.simhash = simhash;
        record.simhash_check = simhash.map(|h| h.rotate_left(7));
        // Records written before the whole text's hashes were kept lack them.
        record.simhash_whole = simhash.filter(|h| h % 3 != 0).map(|h| [h.rotate_left(13), !h]);
        record.truncated = bytes % 2 == 1;
        record.links_found = simhash.map(|h| h as u32);
        record.canonical = if canonical_is_url { Some(url.clone()) } else { text };
        prop_assert_eq!(decode(&url, &encode(&record)), Ok(record));
    }
}

#[test]
fn checked_kinds_take_a_second_flags_word_and_pages_do_not() {
    let page = fetched_page();
    let page_len = encode(&page).len();
    for kind in [UrlKind::Resource, UrlKind::External] {
        let checked = PageRecord {
            kind,
            ..fetched_page()
        };
        round_trip(&checked);
        assert_eq!(encode(&checked).len(), page_len + 2);
    }
    assert_eq!(
        decode(&page.url, &encode(&page)).unwrap().kind,
        UrlKind::Page
    );
}

#[test]
fn custom_extraction_values_round_trip_and_cost_nothing_without_them() {
    let plain = encode(&fetched_page()).len();
    let mut record = fetched_page();
    record.custom = vec![
        ExtractedValues {
            name: "price".into(),
            values: vec!["€ 19,99".into(), String::new()],
            cut: false,
        },
        ExtractedValues {
            name: "missing".into(),
            values: Vec::new(),
            cut: false,
        },
        ExtractedValues {
            name: "items".into(),
            values: vec!["x".repeat(1024); 16],
            cut: true,
        },
    ];
    round_trip(&record);
    let empty_found = PageRecord {
        custom: vec![ExtractedValues {
            name: "none".into(),
            ..Default::default()
        }],
        ..fetched_page()
    };
    round_trip(&empty_found);
    assert!(
        encode(&empty_found).len() > plain,
        "evaluated with nothing found is not the same as not evaluated"
    );
    // A resource's kind and the values share the second word.
    record.kind = UrlKind::Resource;
    round_trip(&record);
    assert_eq!(encode(&fetched_page()).len(), plain);
    let bytes = encode(&record);
    for end in plain..bytes.len() {
        assert!(decode(&record.url, &bytes[..end]).is_err());
    }
}
