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
use crate::control::results::Results;
use crate::engine::store::{PageOutcome, PageRecord};

/// Bits two simhashes may differ by and still be near duplicates (the
/// engine's trap detector uses the same default, `traps.near_duplicate_bits`).
pub const NEAR_BITS: u32 = 6;

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
    /// The simhash's second hash, if the record keeps one.
    check: Option<u64>,
    /// Both hashes of the whole main text, if the record keeps them.
    whole: Option<[u64; 2]>,
}

impl Page {
    /// Bits from `other`, if they are near duplicates: within [`NEAR_BITS`]
    /// by the simhash and, where both keep a second hash, within twice
    /// that by both together (a 128-bit simhash's reach: chance pairs of
    /// short similar pages fall out), and where both keep the whole text's
    /// hashes, as near by those: the same distinctive text inside different
    /// template blocks is not a near duplicate (see `near_dup::Fingerprint`).
    fn near(&self, other: &Page) -> Option<u32> {
        let bits = (self.simhash ^ other.simhash).count_ones();
        if bits > NEAR_BITS {
            return None;
        }
        let within = |bits: u32| Some(bits).filter(|b| *b <= 2 * NEAR_BITS);
        if let (Some([a, a_check]), Some([b, b_check])) = (self.whole, other.whole) {
            within((a ^ b).count_ones() + (a_check ^ b_check).count_ones())?;
        }
        match (self.check, other.check) {
            (Some(a), Some(b)) => within(bits + (a ^ b).count_ones()),
            _ => Some(bits * 2),
        }
    }
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

/// Every page of a near-duplicate group but its first, with the first: what
/// `crawldeck audit` counts.
pub(super) fn near_duplicate_urls(
    query: &Query,
    results: &Results,
) -> anyhow::Result<Vec<(String, String)>> {
    let (_, pages) = read_pages(query, results)?;
    let mut near = Vec::new();
    for group in near_groups(&pages) {
        let first = &pages[group[0]].url;
        for &i in &group[1..] {
            near.push((pages[i].url.clone(), first.clone()));
        }
    }
    Ok(near)
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
            if let PageOutcome::Duplicate { of } = &page.outcome {
                exact.entry(of.clone()).or_default().push(page.url);
            } else if let Some(page) = Page::candidate(page) {
                pages.push(page);
            }
        }
    }
    Ok((exact, pages))
}

impl Page {
    /// A successful fetch measured whole: a page cut at the body cap is
    /// compared by its bytes only (exact copies), since its text is a part
    /// and two long pages alike at their start say nothing of the rest.
    fn candidate(page: PageRecord) -> Option<Page> {
        let fetched = matches!(page.outcome, PageOutcome::Fetched { status: 200..=299 });
        if !fetched || page.truncated {
            return None;
        }
        Some(Page {
            fetched_at: page.fetched_at_unix_ms,
            simhash: page.simhash?,
            check: page.simhash_check,
            whole: page.simhash_whole,
            url: page.url,
        })
    }
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

/// Groups of two or more pages within [`NEAR_BITS`] of their group's first
/// page, as indexes into `pages`, earliest fetch first. Each page joins the
/// nearest earlier representative, or leads a group of its own: A ≈ B and
/// B ≈ C do not chain unrelated A and C into one group.
fn near_groups(pages: &[Page]) -> Vec<Vec<usize>> {
    let bands = NEAR_BITS as usize + 1;
    let width = 64 / bands;
    let band_value = |simhash: u64, band: usize| {
        let shift = band * width;
        let bits = if band + 1 == bands { 64 - shift } else { width };
        (simhash >> shift) & (u64::MAX >> (64 - bits))
    };
    let mut order: Vec<usize> = (0..pages.len()).collect();
    order.sort_by_key(|&i| (pages[i].fetched_at, pages[i].url.as_str()));
    // Representatives by band value; each leads `groups[its group]`.
    let mut buckets: HashMap<(usize, u64), Vec<usize>> = HashMap::new();
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut group_of: HashMap<usize, usize> = HashMap::new();
    for i in order {
        let simhash = pages[i].simhash;
        let nearest = (0..bands)
            .filter_map(|band| buckets.get(&(band, band_value(simhash, band))))
            .flat_map(|bucket| bucket.iter().rev().take(BUCKET_COMPARES))
            .filter_map(|&rep| Some((pages[rep].near(&pages[i])?, rep)))
            .min();
        match nearest {
            Some((_, rep)) => groups[group_of[&rep]].push(i),
            None => {
                group_of.insert(i, groups.len());
                groups.push(vec![i]);
                for band in 0..bands {
                    buckets
                        .entry((band, band_value(simhash, band)))
                        .or_default()
                        .push(i);
                }
            }
        }
    }
    let mut groups: Vec<Vec<usize>> = groups.into_iter().filter(|g| g.len() > 1).collect();
    groups.sort_by(|a, b| pages[a[0]].url.cmp(&pages[b[0]].url));
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(url: &str, simhash: u64) -> Page {
        Page {
            url: url.into(),
            fetched_at: 0,
            simhash,
            check: None,
            whole: None,
        }
    }

    #[test]
    fn a_pair_near_by_chance_on_one_hash_is_no_group_when_the_second_disagrees() {
        let (base, check) = (0xDEAD_BEEF_0123_4567u64, 0x0F0F_1234_5678_9ABCu64);
        let with = |url: &str, simhash: u64, c: u64| Page {
            check: Some(c),
            ..page(url, simhash)
        };
        let pages = [
            with("a", base, check),
            // 5 bits by the simhash, 20 by the second: a chance pair.
            with("b", base ^ 0b11111, check ^ 0xFFFFF),
            // 5 and 5: a copy.
            with("c", base ^ (0b11111 << 20), check ^ (0b11111 << 30)),
            // A record without a second hash is judged by the simhash alone.
            page("d", base ^ 0b11),
        ];
        assert_eq!(near_groups(&pages), vec![vec![0, 2, 3]]);
    }

    #[test]
    fn the_same_distinctive_text_in_different_template_is_no_group() {
        let (base, check, whole) = (
            0xDEAD_BEEF_0123_4567u64,
            0x0F0F_1234_5678_9ABCu64,
            0x1357_9BDF_2468_ACE0u64,
        );
        let with = |url: &str, distinct_bits: u64, whole_bits: [u64; 2]| Page {
            check: Some(check ^ distinct_bits),
            whole: Some([whole ^ whole_bits[0], check ^ whole_bits[1]]),
            ..page(url, base ^ distinct_bits)
        };
        let pages = [
            with("a", 0, [0, 0]),
            // Its own text the same, the pages 10 + 10 bits apart: other notes around it.
            with("b", 0, [0x3FF, 0x3FF << 20]),
            // 2 + 2 distinctive bits and 4 + 5 whole: a copy with another date.
            with("c", 0b11 << 8, [0b1111 << 40, 0b11111]),
            // A record without the whole text's hashes is judged without them.
            Page {
                whole: None,
                ..with("d", 0, [u64::MAX, u64::MAX])
            },
        ];
        assert_eq!(near_groups(&pages), vec![vec![0, 2, 3]]);
    }

    #[test]
    fn a_page_cut_at_the_body_cap_is_no_near_duplicate_candidate() {
        let mut record = PageRecord::without_fetch(
            "http://h.example/big.rs.html",
            "h.example",
            1,
            0,
            PageOutcome::Fetched { status: 200 },
        );
        record.simhash = Some(7);
        assert!(Page::candidate(record.clone()).is_some());
        record.truncated = true;
        assert!(Page::candidate(record.clone()).is_none());
        record.truncated = false;
        record.outcome = PageOutcome::Fetched { status: 404 };
        assert!(Page::candidate(record).is_none());
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

#[cfg(test)]
mod chain_tests {
    use super::*;

    #[test]
    fn a_chain_of_near_pages_does_not_join_its_ends() {
        // Each page 4 bits from the one before: a is 16 bits from e.
        let base = 0x0123_4567_89AB_CDEFu64;
        let pages: Vec<Page> = (0..5)
            .map(|k| Page {
                url: format!("{}", (b'a' + k as u8) as char),
                fetched_at: k,
                simhash: base ^ ((1u64 << (4 * k)) - 1),
                check: None,
                whole: None,
            })
            .collect();
        let groups = near_groups(&pages);
        for g in &groups {
            for &m in &g[1..] {
                let bits = (pages[m].simhash ^ pages[g[0]].simhash).count_ones();
                assert!(
                    bits <= NEAR_BITS,
                    "{} is {bits} bits from {}",
                    pages[m].url,
                    pages[g[0]].url
                );
            }
        }
        assert_eq!(groups, vec![vec![0, 1], vec![2, 3]]);
    }
}
