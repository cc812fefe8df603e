//! The Pages view's window on a crawl's pages: a filter typed as words
//! (`status:404 fate:fetched docs`), an order by any column, and the rows of
//! one band of ranks around what is on screen. A band is read in one
//! streaming pass over the rows in URL order (two for any other order: the
//! first picks the band's keys with a heap no larger than the band's last
//! rank, the second collects its rows), so a viewer holds a band, never
//! the crawl's rows, however many there are.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::audit::Check;
use super::facts::{FactFilters, Missing};
use super::query::{parse_host, Fate, Format, Listing, Query};
use super::rows::Row;
use crate::control::results::Results;

/// A column of the Pages view: what a band can be ordered by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum PageColumn {
    Url,
    Status,
    Type,
    Size,
    Time,
    Depth,
    Title,
    Index,
    Inlinks,
    Fate,
}

impl PageColumn {
    /// Every column, in the order the view shows them and `s` steps through.
    pub const ALL: [PageColumn; 10] = [
        PageColumn::Url,
        PageColumn::Status,
        PageColumn::Type,
        PageColumn::Size,
        PageColumn::Time,
        PageColumn::Depth,
        PageColumn::Title,
        PageColumn::Index,
        PageColumn::Inlinks,
        PageColumn::Fate,
    ];

    /// The column's heading.
    pub fn label(self) -> &'static str {
        match self {
            PageColumn::Url => "url",
            PageColumn::Status => "status",
            PageColumn::Type => "type",
            PageColumn::Size => "size",
            PageColumn::Time => "time",
            PageColumn::Depth => "depth",
            PageColumn::Title => "title",
            PageColumn::Index => "index",
            PageColumn::Inlinks => "inlinks",
            PageColumn::Fate => "fate",
        }
    }

    /// The next column (`s`).
    pub fn next(self) -> PageColumn {
        let at = PageColumn::ALL.iter().position(|c| *c == self).unwrap_or(0);
        PageColumn::ALL[(at + 1) % PageColumn::ALL.len()]
    }

    /// Whether its natural order is largest first (sizes, times, inlinks),
    /// as an operator looks for the biggest, slowest, most linked.
    pub fn largest_first(self) -> bool {
        matches!(
            self,
            PageColumn::Size | PageColumn::Time | PageColumn::Inlinks
        )
    }

    /// The row's value in this column; `None` (no answer, no title) sorts
    /// last either way.
    fn key(self, row: &Row) -> Option<SortValue> {
        let text = |s: Option<&str>| s.map(|s| SortValue::Text(sort_text(s)));
        let num = |n: Option<u64>| n.map(SortValue::Num);
        match self {
            PageColumn::Url => text(Some(&row.url)),
            PageColumn::Status => num(row.status.map(u64::from)),
            PageColumn::Type => text(row.content_type.as_deref()),
            PageColumn::Size => num(Some(row.size)),
            PageColumn::Time => num(row.facts.response_ms.map(u64::from)),
            PageColumn::Depth => num(Some(u64::from(row.depth))),
            PageColumn::Title => text(row.title.as_deref()),
            PageColumn::Index => num(row.facts.indexable.map(u64::from)),
            PageColumn::Inlinks => num(Some(u64::from(row.facts.inlinks))),
            PageColumn::Fate => text(Some(row.fate)),
        }
    }
}

/// Text keys compare by their first bytes, lower-cased: enough to order
/// titles and types, and a heap entry stays small.
const SORT_TEXT_BYTES: usize = 48;

fn sort_text(s: &str) -> Box<str> {
    let mut end = s.len().min(SORT_TEXT_BYTES);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_lowercase().into_boxed_str()
}

/// A row's value in an order.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum SortValue {
    Num(u64),
    Text(Box<str>),
}

/// What a viewer asks for: a filter, an order and the ranks it wants.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BandRequest {
    /// The crawl's data directory (the filter's `Query` names it).
    pub data_dir: PathBuf,
    /// The filter as typed.
    pub filter: String,
    pub sort: PageColumn,
    /// Reverse of the column's natural order.
    pub reverse: bool,
    /// The first rank wanted.
    pub first: usize,
    /// How many rows from `first`.
    pub rows: usize,
    /// Count every row that passes. Without it a band in URL order ends
    /// the pass once read (a move near the top of a million rows reads a
    /// few hundred), and its total is only a lower bound.
    pub count: bool,
}

/// The rows of ranks `first..first + rows.len()` of a filtered, ordered list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Band {
    /// What was asked.
    pub request: BandRequest,
    /// Rows that pass the filter, in all; at least this many when not `counted`.
    pub total: usize,
    /// Whether `total` counts them all.
    pub counted: bool,
    /// The rank of `rows[0]`.
    pub first: usize,
    pub rows: Vec<Row>,
}

impl Band {
    /// The rows of `request`'s ranks among `total`.
    fn new(request: &BandRequest, total: usize, counted: bool, rows: Vec<Row>) -> Band {
        Band {
            request: request.clone(),
            total,
            counted,
            first: request.first.min(total),
            rows,
        }
    }

    /// The row of `rank`, if the band holds it.
    pub fn row(&self, rank: usize) -> Option<&Row> {
        self.rows.get(rank.checked_sub(self.first)?)
    }

    /// Whether the band holds every row of ranks `from..from + count` that exists.
    pub fn covers(&self, from: usize, count: usize) -> bool {
        let end = (from + count).min(self.total);
        from >= self.first && end <= self.first + self.rows.len()
    }
}

/// A filter of the Pages view: `key:value` words and free text.
#[derive(Debug, Clone)]
pub struct PageFilter {
    query: Query,
    /// Lower-cased words that the URL or the title must each contain.
    words: Vec<String>,
    /// Lower-cased text the media type must contain (`type:`).
    media: Option<String>,
    /// Only the URLs an audit check names.
    audit: Option<Check>,
    /// Only pages on which this custom extraction found something.
    extract: Option<String>,
}

impl PageFilter {
    /// Parses a filter as typed; a bad word is named with what it takes.
    pub fn parse(text: &str, data_dir: &Path) -> Result<PageFilter, String> {
        let mut query = Query::new(data_dir.to_path_buf(), Listing::Pages, Format::Json);
        let mut words = Vec::new();
        let (mut media, mut audit, mut extract) = (None, None, None);
        for word in text.split_whitespace() {
            let Some((key, value)) = word.split_once(':') else {
                words.push(word.to_lowercase());
                continue;
            };
            match key.to_ascii_lowercase().as_str() {
                "status" => query.status = Query::parse_status(value)?,
                "fate" => query.fate = Some(Fate::parse(value)?),
                "indexable" => query.facts.indexable = Some(FactFilters::parse_indexable(value)?),
                "host" => query.host = Some(parse_host(value)?),
                "by" => query.by = Some(Query::parse_by(value)?),
                "missing" => query.facts.missing = Missing::parse_list(value)?,
                "type" => media = Some(value.to_lowercase()),
                "audit" => audit = Some(Check::parse(value)?),
                "extract" => extract = Some(value.to_string()),
                // Not a key (a colon in free text, as in a URL): a word.
                _ => words.push(word.to_lowercase()),
            }
        }
        Ok(PageFilter {
            query,
            words,
            media,
            audit,
            extract,
        })
    }

    fn passes(&self, row: &Row, audit_urls: Option<&HashSet<u64>>) -> bool {
        row.passes(&self.query)
            && self.media.as_deref().is_none_or(|media| {
                let media_type = row.content_type.as_deref().unwrap_or_default();
                media_type.to_lowercase().contains(media)
            })
            && self.words_match(row)
            && audit_urls.is_none_or(|urls| urls.contains(&url_hash(&row.url)))
            && self
                .extract
                .as_deref()
                .is_none_or(|name| row.values_of(name).is_some_and(|v| !v.is_empty()))
    }
}

impl PageFilter {
    /// Whether the row's URL or title holds every word (each lower-cased
    /// once a row, not once a word).
    fn words_match(&self, row: &Row) -> bool {
        if self.words.is_empty() {
            return true;
        }
        let url = row.url.to_lowercase();
        let title = row.title.as_deref().map(str::to_lowercase);
        self.words.iter().all(|w| {
            url.contains(w.as_str()) || title.as_deref().is_some_and(|t| t.contains(w.as_str()))
        })
    }
}

/// A URL's hash, fragment left off (a broken fragment's finding names its page).
fn url_hash(url: &str) -> u64 {
    let url = url.split_once('#').map_or(url, |(page, _)| page);
    let mut hasher = std::hash::DefaultHasher::new();
    url.hash(&mut hasher);
    hasher.finish()
}

/// Reads the band a viewer asks for.
pub fn read_band(results: &Results, request: &BandRequest) -> anyhow::Result<Band> {
    let filter = PageFilter::parse(&request.filter, &request.data_dir)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let audit_urls = match filter.audit {
        Some(check) => Some(audit_urls(&filter.query, check, results)?),
        None => None,
    };
    let pass = Pass {
        filter: &filter,
        audit_urls: audit_urls.as_ref(),
        results,
    };
    if request.sort == PageColumn::Url && !request.reverse {
        pass.url_order(request)
    } else {
        pass.ordered(request)
    }
}

/// Hashes of the URLs `check` names.
fn audit_urls(query: &Query, check: Check, results: &Results) -> anyhow::Result<HashSet<u64>> {
    let tally = super::audit::audit(query, Some(check), results)?;
    Ok(tally.shown_urls().map(url_hash).collect())
}

struct Pass<'a> {
    filter: &'a PageFilter,
    audit_urls: Option<&'a HashSet<u64>>,
    results: &'a Results,
}

/// A row's place: its column's value, then the order the crawl met it in
/// (as site crawlers list ties), then its URL's hash.
type Rank = (Option<SortValue>, u64, u64);

/// An entry of the band-picking heap, compared in the order asked.
struct Ranked {
    rank: Rank,
    reverse: bool,
}

impl Ranked {
    /// The value in the order asked, missing values last; ties in crawl
    /// order either way.
    fn order(&self, other: &Ranked) -> Ordering {
        let (a, b) = (&self.rank.0, &other.rank.0);
        let value = match self.reverse {
            false => a.cmp(b),
            true => b.cmp(a),
        };
        let missing_last = a.is_none().cmp(&b.is_none());
        missing_last
            .then(value)
            .then_with(|| (self.rank.1, self.rank.2).cmp(&(other.rank.1, other.rank.2)))
    }
}

impl PartialEq for Ranked {
    fn eq(&self, other: &Self) -> bool {
        self.order(other) == Ordering::Equal
    }
}
impl Eq for Ranked {}
impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Ranked {
    fn cmp(&self, other: &Self) -> Ordering {
        self.order(other)
    }
}

impl Pass<'_> {
    /// Every row that passes, in URL order.
    fn each(&self, mut each: impl FnMut(Row)) -> anyhow::Result<()> {
        self.each_while(|row| {
            each(row);
            true
        })
    }

    /// Every row that passes, in URL order, until `each` says stop.
    fn each_while(&self, mut each: impl FnMut(Row) -> bool) -> anyhow::Result<()> {
        let with_referrers = self.filter.query.found_by.is_some();
        for row in super::matching_rows(&self.filter.query, self.results, with_referrers)? {
            let row = row?;
            if self.filter.passes(&row, self.audit_urls) && !each(row) {
                break;
            }
        }
        Ok(())
    }

    /// URL order: the band's rows are kept as they pass, the rest counted
    /// (or, without `count`, one more looked for, to know there are more).
    fn url_order(&self, request: &BandRequest) -> anyhow::Result<Band> {
        let mut total = 0;
        let mut rows = Vec::new();
        let end = request.first.saturating_add(request.rows);
        self.each_while(|row| {
            if (request.first..end).contains(&total) {
                rows.push(row);
            }
            total += 1;
            request.count || total <= end
        })?;
        let counted = request.count || total <= end;
        Ok(Band::new(request, total, counted, rows))
    }

    /// Any other order: a heap keeps the ranks up to the band's last (the
    /// largest on top, pushed out by smaller ones), then a second pass
    /// collects the rows of the band's ranks.
    fn ordered(&self, request: &BandRequest) -> anyhow::Result<Band> {
        let reverse = request.reverse != request.sort.largest_first();
        let keep = request.first.saturating_add(request.rows);
        let mut heap = BinaryHeap::with_capacity(keep.min(1 << 16));
        let mut total = 0usize;
        self.each(|row| {
            total += 1;
            if keep == 0 {
                return;
            }
            let ranked = Ranked {
                rank: rank_of(request.sort, &row),
                reverse,
            };
            if heap.len() < keep {
                heap.push(ranked);
            } else if heap.peek().is_some_and(|top| ranked < *top) {
                heap.pop();
                heap.push(ranked);
            }
        })?;
        let band: Vec<Ranked> = heap
            .into_sorted_vec()
            .into_iter()
            .skip(request.first)
            .collect();
        let place: HashMap<u64, usize> = band
            .iter()
            .enumerate()
            .map(|(at, r)| (r.rank.2, at))
            .collect();
        let mut found: Vec<(usize, Row)> = Vec::with_capacity(band.len());
        self.each(|row| {
            if let Some(at) = place.get(&url_hash(&row.url)) {
                found.push((*at, row));
            }
        })?;
        found.sort_by_key(|(at, _)| *at);
        let rows = found.into_iter().map(|(_, row)| row).collect();
        Ok(Band::new(request, total, true, rows))
    }
}

/// Bands of the same request from several crawls with disjoint URLs (the
/// workers of a shared crawl), each read from rank 0 to the request's last:
/// the request's band of all of them together.
pub fn merge(request: &BandRequest, bands: Vec<Band>) -> Band {
    let reverse = request.reverse != request.sort.largest_first();
    let total = bands.iter().map(|b| b.total).sum();
    let counted = bands.iter().all(|b| b.counted);
    let mut rows: Vec<(Ranked, Row)> = bands
        .into_iter()
        .flat_map(|b| b.rows)
        .map(|mut row| {
            // Not on the wire: read back from the time it was written as.
            if row.fetched_at_unix_ms == 0 {
                row.fetched_at_unix_ms = unix_ms(&row.fetched_at);
            }
            let rank = match request.sort == PageColumn::Url && !request.reverse {
                // URL order is the stores' own, not a key's.
                true => (Some(SortValue::Text(row.url.clone().into())), 0, 0),
                false => rank_of(request.sort, &row),
            };
            (Ranked { rank, reverse }, row)
        })
        .collect();
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    let rows = rows
        .into_iter()
        .skip(request.first)
        .take(request.rows)
        .map(|(_, row)| row)
        .collect();
    Band::new(request, total, counted, rows)
}

fn unix_ms(rfc3339: &str) -> u64 {
    humantime::parse_rfc3339(rfc3339)
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_millis() as u64)
}

fn rank_of(sort: PageColumn, row: &Row) -> Rank {
    (sort.key(row), row.fetched_at_unix_ms, url_hash(&row.url))
}

#[cfg(test)]
#[path = "window_tests.rs"]
mod tests;
