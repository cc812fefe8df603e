//! `crawldeck pages --duplicates`: groups of byte-identical pages (the
//! engine's content digest) and of near-identical ones (text simhashes within
//! a few bits), each led by the URL fetched first.
//!
//! Near neighbours are found by the pigeonhole trick: two 64-bit hashes at
//! most `k` bits apart agree exactly on at least one of `k + 1` bands, so only
//! pages sharing a band value are compared. Holds one entry per page with a
//! simhash in memory.

use std::collections::HashMap;
use std::io::Write;

use serde::Serialize;

use super::output::{col, Column, Output};
use super::query::Query;
use crate::engine::store::remote::Results;
use crate::engine::store::PageOutcome;

/// Bits two simhashes may differ by and still be near duplicates (the
/// engine's trap detector uses the same default, `traps.near_duplicate_bits`).
pub const NEAR_BITS: u32 = 3;

/// Pages compared within one band bucket, newest first: keeps a bucket of
/// thousands of identical hashes linear.
const BUCKET_COMPARES: usize = 16;

static COLUMNS: [Column; 4] = [
    col("group", Some(5)),
    col("kind", Some(5)),
    col("first", Some(60)),
    col("url", None),
];

#[derive(Serialize)]
struct Group<'a> {
    group: usize,
    kind: &'static str,
    first: &'a str,
    urls: Vec<&'a str>,
}

/// The URLs of byte-identical copies, by the URL they duplicate.
type Copies = HashMap<String, Vec<String>>;

struct Page {
    url: String,
    fetched_at: u64,
    simhash: u64,
}

/// Lists the groups: exact ones first, then near ones, each with its URLs.
pub(super) fn list(query: &Query, results: &Results, out: impl Write) -> anyhow::Result<()> {
    let (exact, pages) = read_pages(query, results)?;
    let groups = all_groups(exact, &pages);
    let mut output = Output::start(out, query.format, &COLUMNS)?;
    for (n, (kind, urls)) in groups
        .iter()
        .enumerate()
        .take(query.limit.unwrap_or(usize::MAX))
    {
        let group = n + 1;
        let first = &urls[0];
        let json = Group {
            group,
            kind,
            first,
            urls: urls.iter().map(String::as_str).collect(),
        };
        if query.format == super::Format::Json {
            output.row(&[], &json)?;
            continue;
        }
        for url in urls {
            let fields = [
                group.to_string(),
                kind.to_string(),
                first.clone(),
                url.clone(),
            ];
            output.row(&fields, &json)?;
        }
    }
    output.finish()?;
    Ok(())
}

/// The query's pages: copies by the URL they duplicate, and the successful
/// fetches with a simhash (the candidates for near duplicates).
fn read_pages(query: &Query, results: &Results) -> anyhow::Result<(Copies, Vec<Page>)> {
    let mut exact = Copies::new();
    let mut pages = Vec::new();
    for prefix in query.url_prefixes() {
        for page in results.pages(&prefix)? {
            let page = page?;
            if query.host.as_deref().is_some_and(|h| h != page.host) {
                continue;
            }
            match (page.outcome, page.simhash) {
                (PageOutcome::Duplicate { of }, _) => exact.entry(of).or_default().push(page.url),
                (PageOutcome::Fetched { status: 200..=299 }, Some(simhash)) => pages.push(Page {
                    url: page.url,
                    fetched_at: page.fetched_at_unix_ms,
                    simhash,
                }),
                _ => {}
            }
        }
    }
    Ok((exact, pages))
}

/// Every group as its kind and URLs, first URL first: the exact groups by
/// original URL, then the near ones.
fn all_groups(exact: Copies, pages: &[Page]) -> Vec<(&'static str, Vec<String>)> {
    let mut groups: Vec<(&'static str, Vec<String>)> = Vec::new();
    let mut exact: Vec<_> = exact.into_iter().collect();
    exact.sort();
    for (first, copies) in exact {
        groups.push(("exact", std::iter::once(first).chain(copies).collect()));
    }
    for members in near_groups(pages) {
        groups.push((
            "near",
            members.into_iter().map(|i| pages[i].url.clone()).collect(),
        ));
    }
    groups
}

/// Groups of two or more pages within [`NEAR_BITS`] of each other (linked
/// transitively), as indexes into `pages`, earliest fetch first.
fn near_groups(pages: &[Page]) -> Vec<Vec<usize>> {
    let bands = NEAR_BITS as usize + 1;
    let width = 64 / bands;
    let mut parent: Vec<usize> = (0..pages.len()).collect();
    let mut buckets: HashMap<(usize, u64), Vec<usize>> = HashMap::new();
    for (i, page) in pages.iter().enumerate() {
        for band in 0..bands {
            let shift = band * width;
            let bits = if band + 1 == bands { 64 - shift } else { width };
            let value = (page.simhash >> shift) & (u64::MAX >> (64 - bits));
            let bucket = buckets.entry((band, value)).or_default();
            for &j in bucket.iter().rev().take(BUCKET_COMPARES) {
                if (pages[j].simhash ^ page.simhash).count_ones() <= NEAR_BITS {
                    union(&mut parent, i, j);
                }
            }
            bucket.push(i);
        }
    }
    let mut groups: HashMap<usize, Vec<usize>> = HashMap::new();
    for i in 0..pages.len() {
        let root = find(&mut parent, i);
        groups.entry(root).or_default().push(i);
    }
    let mut groups: Vec<Vec<usize>> = groups.into_values().filter(|g| g.len() > 1).collect();
    for g in &mut groups {
        g.sort_by_key(|&i| (pages[i].fetched_at, pages[i].url.as_str()));
    }
    groups.sort_by(|a, b| pages[a[0]].url.cmp(&pages[b[0]].url));
    groups
}

fn find(parent: &mut [usize], mut i: usize) -> usize {
    while parent[i] != i {
        parent[i] = parent[parent[i]];
        i = parent[i];
    }
    i
}

fn union(parent: &mut [usize], a: usize, b: usize) {
    let (ra, rb) = (find(parent, a), find(parent, b));
    if ra != rb {
        parent[ra.max(rb)] = ra.min(rb);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(url: &str, simhash: u64) -> Page {
        Page {
            url: url.into(),
            fetched_at: 0,
            simhash,
        }
    }

    #[test]
    fn pages_a_few_bits_apart_group_and_others_do_not() {
        let base = 0xDEAD_BEEF_0123_4567u64;
        let pages = [
            page("a", base),
            page("b", base ^ 0b101),                 // 2 bits from a
            page("c", base ^ 0b101 ^ (1 << 40)),     // 1 bit from b, 3 from a
            page("d", !base),                        // far from all
            page("e", base ^ 0xFF00_0000_0000_0000), // 8 bits from a
        ];
        assert_eq!(near_groups(&pages), vec![vec![0, 1, 2]]);
    }
}
