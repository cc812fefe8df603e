use super::*;
use crate::engine::store::{PageRecord, Store};
use crate::results::query::Listing;

fn query(listing: Listing) -> Query {
    Query::new(Default::default(), listing, Format::Json)
}

fn record(url: &str, outcome: PageOutcome) -> PageRecord {
    PageRecord::without_fetch(url, "a.example", 1, 1_700_000_000_000, outcome)
}

fn redirect(to: &str) -> PageOutcome {
    PageOutcome::Redirect {
        status: 301,
        location: to.into(),
    }
}

#[test]
fn a_redirect_loop_is_broken_a_resolving_redirect_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), 4 << 20).unwrap();
    store
        .record_pages(&[
            record("http://a.example/loop1", redirect("http://a.example/loop2")),
            record("http://a.example/loop2", redirect("http://a.example/loop1")),
            record("http://a.example/old", redirect("http://a.example/new")),
            record("http://a.example/new", PageOutcome::Fetched { status: 200 }),
        ])
        .unwrap();
    let results = Results::Local(store);
    let mut out = Vec::new();
    broken(&query(Listing::Broken), &results, &mut out).unwrap();
    let rows: Vec<serde_json::Value> = String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let urls: Vec<&str> = rows.iter().map(|r| r["url"].as_str().unwrap()).collect();
    assert_eq!(urls, ["http://a.example/loop1", "http://a.example/loop2"]);
    assert_eq!(rows[0]["status"], 301);
    assert_eq!(rows[0]["error"], "redirect loop");
}
