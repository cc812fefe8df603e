//! One row per URL: page records and links left out, walked side by side in
//! URL order with their referrers, so a listing of any size streams.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::iter::Peekable;

use serde::Serialize;

use super::facts::RowFacts;
use super::query::{by_alert, Fate, Query, PRIVATE_ADDRESS};
use super::sitemaps::FoundBy;
use crate::control::results::{Results, INLINKS_ASKED_BYTES};
use crate::engine::inspect::quarantine::ParkedEntry;
use crate::engine::store::{
    FilterReason, FilteredUrl, PageOutcome, PageRecord, SitemapEntry, StoreError, UrlKind,
    SOFT_404_PROBE,
};

type Entries<T> = Box<dyn Iterator<Item = Result<T, StoreError>> + Send>;
type ReferrerStream = Peekable<Entries<(String, Vec<String>)>>;
type SitemapStream = Peekable<Entries<SitemapEntry>>;

/// What a listing shows of one URL. It crosses the wire too (a shared
/// crawl's Pages view reads its workers' rows): read back, the fate and kind
/// words become the listing's own.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Row {
    /// The normalized URL.
    pub url: String,
    /// Its host key.
    pub host: String,
    /// The HTTP status, if there was an answer.
    pub status: Option<u16>,
    /// The answer's media type.
    pub content_type: Option<String>,
    /// Body bytes.
    pub size: u64,
    /// Link hops from a seed.
    pub depth: u32,
    /// The page's title.
    pub title: Option<String>,
    /// When it was fetched (or given up, or found), RFC 3339.
    pub fetched_at: String,
    /// The page it was first found on, then a few more.
    pub referrers: Vec<String>,
    /// What became of it.
    #[serde(deserialize_with = "fate_word")]
    pub fate: Word,
    /// What it was queued as: `page`, or `resource` or `external` (only
    /// checked for its status); links left out and parked URLs are `page`.
    #[serde(deserialize_with = "kind_word")]
    pub kind: Word,
    /// Why, for a URL not fetched or failed: `robots`, `rule 3`, `trap alert 2`,
    /// `scope`, `depth`, `extension`, `host`, or the error kind.
    pub reason: Option<String>,
    /// More: the redirect's target, the first URL of a duplicate, the error
    /// message, the rule, why a host was given up, where a parked URL was found.
    pub detail: Option<String>,
    /// The page's links past the per-page cap (`scope.max_links_per_page`,
    /// `scope.max_link_bytes_per_page`), not followed.
    pub links_cut: u32,
    /// The trap alert that parked the URL, or whose accepted rule blocked it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alert: Option<u64>,
    /// Response time, indexability, description, headings, words, links out.
    #[serde(flatten)]
    pub facts: RowFacts,
    /// Found by links, a sitemap, both, or a seed (read with the referrers).
    pub found_by: FoundBy,
    /// The values of each custom extraction (`[[extract]]`) run on the
    /// page, by name: an empty list when it found nothing; no entry for
    /// pages fetched before it was added (or that are not HTML 2xx).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extract: BTreeMap<String, Vec<String>>,
    /// Extractions whose values were cut by the bounds (16 values per page,
    /// 1 KiB each, 64 KiB a page).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extract_cut: Vec<String>,
    #[serde(skip)]
    pub(super) fetched_at_unix_ms: u64,
    #[serde(skip)]
    pub(super) reason_class: Option<String>,
}

/// A listing's word (a fate, a kind). Named, so serde does not borrow it
/// from the input as it would a `&str` field: it is read back as one of
/// the listing's own words.
pub type Word = &'static str;

fn fate_word<'de, D: serde::Deserializer<'de>>(d: D) -> Result<&'static str, D::Error> {
    let word = <String as serde::Deserialize>::deserialize(d)?;
    Fate::parse(&word)
        .map(Fate::label)
        .map_err(serde::de::Error::custom)
}

fn kind_word<'de, D: serde::Deserializer<'de>>(d: D) -> Result<&'static str, D::Error> {
    let word = <String as serde::Deserialize>::deserialize(d)?;
    UrlKind::ALL
        .map(UrlKind::label)
        .into_iter()
        .find(|k| *k == word)
        .ok_or_else(|| serde::de::Error::custom(format!("unknown kind {word:?}")))
}

/// The detail of a page recrawl pass `pass` found unchanged.
fn not_modified(pass: u32) -> String {
    match pass {
        0 => "not modified at its last recrawl (304)".into(),
        n => format!("not modified in pass {n} (304)"),
    }
}

/// Which rule ids came from accepted trap alerts (id → alert id).
#[derive(Default)]
pub struct RuleOrigins(HashMap<u64, u64>);

impl RuleOrigins {
    /// Why a rule blocked a URL: `rule N`, or `trap alert A (rule N)` for the
    /// rule of an accepted alert.
    fn reason(&self, rule_id: u64) -> String {
        match self.alert_of(rule_id) {
            Some(alert) => format!("trap alert {alert} (rule {rule_id})"),
            None => format!("rule {rule_id}"),
        }
    }

    /// The accepted alert a rule came from.
    fn alert_of(&self, rule_id: u64) -> Option<u64> {
        self.0.get(&rule_id).copied()
    }

    /// Reads the rules' origins (`… (alert #N)`).
    pub fn load(results: &Results) -> Result<RuleOrigins, StoreError> {
        let mut map = HashMap::new();
        for (id, origin) in results.rule_origins()? {
            let alert = origin
                .rsplit_once("alert #")
                .and_then(|(_, rest)| rest.trim_end_matches(')').parse().ok());
            if let Some(alert) = alert {
                map.insert(id, alert);
            }
        }
        Ok(RuleOrigins(map))
    }
}

impl Row {
    /// The row of a page record.
    pub fn of_page(p: PageRecord, rules: &RuleOrigins) -> Row {
        let facts = RowFacts::of(&p);
        let alert = match &p.outcome {
            PageOutcome::Blocked { rule_id, .. } => rules.alert_of(*rule_id),
            _ => None,
        };
        let (fate, status, reason, detail): (Fate, _, Option<String>, _) = match p.outcome {
            PageOutcome::Fetched { status } => {
                let cut = p
                    .truncated
                    .then(|| format!("body cut at fetch.max_body ({} bytes kept)", p.bytes));
                (Fate::Fetched, Some(status), None, cut)
            }
            // The status of the content it holds, as `page` shows it; the
            // 304 is a separate fact. A recrawl only asks again for 2xx pages.
            PageOutcome::NotModified { pass } => {
                (Fate::Fetched, Some(200), None, Some(not_modified(pass)))
            }
            PageOutcome::Redirect { status, location } => {
                let how = (status < 300).then(|| super::links::META_REFRESH.to_string());
                (Fate::Redirect, Some(status), how, Some(location))
            }
            PageOutcome::Duplicate { of } => (Fate::Duplicate, Some(200), None, Some(of)),
            // Refused by policy, not failed: a private address is a reason for blocking.
            PageOutcome::Error { kind, message } if kind == PRIVATE_ADDRESS => {
                (Fate::Blocked, None, Some(kind), Some(message))
            }
            PageOutcome::Error { kind, message } => (Fate::Error, None, Some(kind), Some(message)),
            PageOutcome::RobotsDenied => (Fate::Blocked, None, Some("robots".into()), None),
            PageOutcome::Blocked { rule_id, rule } => {
                (Fate::Blocked, None, Some(rules.reason(rule_id)), Some(rule))
            }
            PageOutcome::NotCrawled { reason } => {
                let by = if reason.starts_with(SOFT_404_PROBE) {
                    "probe"
                } else {
                    "host"
                };
                (Fate::Blocked, None, Some(by.into()), Some(reason))
            }
        };
        let reason_class = reason
            .as_deref()
            .map(|r| r.split(' ').next().unwrap_or(r).to_string());
        let extract_cut = p.custom.iter().filter(|c| c.cut).map(|c| c.name.clone());
        let extract_cut = extract_cut.collect();
        let extract = p.custom.into_iter().map(|c| (c.name, c.values)).collect();
        Row {
            facts,
            extract,
            extract_cut,
            alert,
            found_by: FoundBy::Seed,
            fetched_at: rfc3339(p.fetched_at_unix_ms),
            fetched_at_unix_ms: p.fetched_at_unix_ms,
            url: p.url,
            host: p.host,
            status,
            content_type: p.content_type,
            size: p.bytes,
            depth: p.depth,
            title: p.title,
            referrers: Vec::new(),
            fate: fate.label(),
            kind: p.kind.label(),
            reason_class,
            reason,
            detail,
            links_cut: p.links_dropped,
        }
    }

    /// The row of a link that was not queued.
    pub fn of_filtered(f: FilteredUrl, rules: &RuleOrigins) -> Row {
        let (reason, alert) = match f.reason {
            FilterReason::Rule(id) => (rules.reason(id), rules.alert_of(id)),
            other => (other.label().to_string(), None),
        };
        let class = reason.split(' ').next().unwrap_or_default().to_string();
        Row {
            fetched_at: rfc3339(f.found_at_unix_ms),
            fetched_at_unix_ms: f.found_at_unix_ms,
            url: f.url,
            host: f.host,
            status: None,
            content_type: None,
            size: 0,
            depth: f.depth,
            title: None,
            referrers: Vec::new(),
            fate: Fate::Blocked.label(),
            kind: UrlKind::Page.label(),
            reason_class: Some(class),
            reason: Some(reason),
            detail: None,
            links_cut: 0,
            alert,
            facts: RowFacts::default(),
            found_by: FoundBy::Seed,
            extract: BTreeMap::new(),
            extract_cut: Vec::new(),
        }
    }

    /// The row of a URL parked by an open alert: never fetched, no time of
    /// its own, found on its first referrer.
    pub fn of_parked(p: ParkedEntry) -> Row {
        let detail = p.found_on.first().map(|page| format!("found on {page}"));
        // Parked URLs are read by alert, not beside the sitemap rows.
        let found_by = FoundBy::of(!p.found_on.is_empty(), None);
        Row {
            fetched_at: String::new(),
            fetched_at_unix_ms: 0,
            url: p.url,
            host: p.host,
            status: None,
            content_type: None,
            size: 0,
            depth: p.depth,
            title: None,
            referrers: p.found_on,
            fate: Fate::Parked.label(),
            kind: UrlKind::Page.label(),
            reason_class: Some("trap".into()),
            reason: Some(format!("trap alert {}", p.alert_id)),
            detail,
            alert: Some(p.alert_id),
            links_cut: 0,
            facts: RowFacts::default(),
            found_by,
            extract: BTreeMap::new(),
            extract_cut: Vec::new(),
        }
    }

    /// A 4xx, 5xx or no answer at all: a broken link target. A refused
    /// private address is blocked, not broken, and a sitemap file is no
    /// link (a guessed /sitemap.xml is mostly absent).
    pub fn is_broken(&self) -> bool {
        self.found_by != FoundBy::SitemapFile
            && (self.fate == Fate::Error.label()
                || (self.fate == Fate::Fetched.label() && self.status.is_some_and(|s| s >= 400)))
    }

    /// Whether the row passes the query's filters.
    pub fn passes(&self, q: &Query) -> bool {
        q.status_matches(self.status)
            && q.fate.is_none_or(|f| f.label() == self.fate)
            && q.by.as_deref().is_none_or(|by| match by_alert(by) {
                Some(id) => self.alert == Some(id),
                None => self.reason_class.as_deref() == Some(by),
            })
            && q.host.as_deref().is_none_or(|h| h == self.host)
            && q.facts.passes(&self.facts, self.title.as_deref())
            && q.found_by.is_none_or(|f| f == self.found_by)
            && q.facts
                .extract_missing
                .as_deref()
                .is_none_or(|name| self.values_of(name).is_some_and(<[String]>::is_empty))
    }

    /// The values extraction `name` found on the page (names match ignoring
    /// case, as they are unique that way); `None` if it did not run on it.
    pub fn values_of(&self, name: &str) -> Option<&[String]> {
        self.extract
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, values)| values.as_slice())
    }
}

fn rfc3339(unix_ms: u64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(unix_ms);
    humantime::format_rfc3339_millis(t).to_string()
}

/// Rows whose inlinks are asked for at once.
const ROWS_PER_BATCH: usize = 256;

/// Every row under `prefix` in URL order: page records, then (for URLs
/// without one) links left out; with their inlinks, and their referrers and
/// `found_by` if `referrers`. Rows are read a batch ahead, to ask for their
/// inlinks in one request.
pub struct Rows<'a> {
    pages: Peekable<Entries<PageRecord>>,
    filtered: Option<Peekable<Entries<FilteredUrl>>>,
    referrers: Option<ReferrerStream>,
    sitemaps: Option<SitemapStream>,
    rules: std::sync::Arc<RuleOrigins>,
    results: &'a Results,
    /// Rows read with their inlinks, then the error that ended the reading.
    ready: VecDeque<Result<Row, StoreError>>,
    /// A row read past the last batch's bytes, for the next one.
    carried: Option<Row>,
}

impl<'a> Rows<'a> {
    /// Opens the streams under `prefix`. Links left out are skipped when the
    /// query can only match pages with an answer.
    pub fn open(
        results: &'a Results,
        prefix: &str,
        with_filtered: bool,
        with_referrers: bool,
        rules: std::sync::Arc<RuleOrigins>,
    ) -> Result<Rows<'a>, StoreError> {
        let pages = results.pages(prefix)?;
        Rows::with_pages(pages, results, prefix, with_filtered, with_referrers, rules)
    }

    /// [`Rows::open`] over these page records (the previous recrawl pass's).
    pub fn with_pages(
        pages: Entries<PageRecord>,
        results: &'a Results,
        prefix: &str,
        with_filtered: bool,
        with_referrers: bool,
        rules: std::sync::Arc<RuleOrigins>,
    ) -> Result<Rows<'a>, StoreError> {
        Ok(Rows {
            pages: pages.peekable(),
            filtered: if with_filtered {
                Some(results.filtered(prefix)?.peekable())
            } else {
                None
            },
            referrers: if with_referrers {
                Some(results.referrer_entries(prefix)?.peekable())
            } else {
                None
            },
            sitemaps: if with_referrers {
                Some(results.sitemap_entries(prefix)?.peekable())
            } else {
                None
            },
            rules,
            results,
            ready: VecDeque::new(),
            carried: None,
        })
    }

    fn next_row(&mut self) -> Option<Result<Row, StoreError>> {
        let rules = &self.rules;
        let page_url = match self.pages.peek() {
            Some(Ok(p)) => Some(p.url.as_str()),
            Some(Err(_)) => return self.pages.next().map(|r| r.map(|p| Row::of_page(p, rules))),
            None => None,
        };
        if let Some(filtered) = &mut self.filtered {
            // A page record wins over a link left out (a URL too deep from
            // one page may have been fetched from another).
            loop {
                let take = match (filtered.peek(), page_url) {
                    (Some(Err(_)), _) => true,
                    (Some(Ok(f)), Some(url)) if f.url.as_str() == url => {
                        filtered.next();
                        continue;
                    }
                    (Some(Ok(f)), Some(url)) => f.url.as_str() < url,
                    (Some(Ok(_)), None) => true,
                    (None, _) => false,
                };
                if take {
                    return filtered
                        .next()
                        .map(|r| r.map(|f| Row::of_filtered(f, rules)));
                }
                break;
            }
        }
        self.pages.next().map(|r| r.map(|p| Row::of_page(p, rules)))
    }

    fn attach_referrers(&mut self, row: &mut Row) -> Result<(), StoreError> {
        if let Some(refs) = &mut self.referrers {
            if let Some(list) = entry_of(refs, &row.url)? {
                row.referrers = list;
            }
        }
        Ok(())
    }

    /// The next row with its referrers and `found_by`.
    fn next_attached(&mut self) -> Option<Result<Row, StoreError>> {
        let mut row = match self.next_row()? {
            Ok(row) => row,
            Err(e) => return Some(Err(e)),
        };
        let attached = self
            .attach_referrers(&mut row)
            .and_then(|()| self.attach_found_by(&mut row));
        Some(attached.map(|()| row))
    }

    /// Reads the next batch of rows (up to [`ROWS_PER_BATCH`], their URLs
    /// within [`INLINKS_ASKED_BYTES`]) and their inlinks.
    fn read_batch(&mut self) {
        let mut batch: Vec<Row> = Vec::new();
        let mut bytes = 0;
        let mut failed = None;
        while batch.len() < ROWS_PER_BATCH {
            let row = match self.carried.take().map(Ok).or_else(|| self.next_attached()) {
                None => break,
                Some(Err(e)) => {
                    failed = Some(e);
                    break;
                }
                Some(Ok(row)) => row,
            };
            let asked = asked_bytes(&row);
            if !batch.is_empty() && bytes + asked > INLINKS_ASKED_BYTES {
                self.carried = Some(row);
                break;
            }
            bytes += asked;
            batch.push(row);
        }
        match self.attach_inlinks(&mut batch) {
            Ok(()) => self.ready.extend(batch.into_iter().map(Ok)),
            Err(e) => self.ready.push_back(Err(e)),
        }
        self.ready.extend(failed.map(Err));
    }

    fn attach_inlinks(&self, batch: &mut [Row]) -> Result<(), StoreError> {
        // A URL too long to ask about was never admitted, so never counted.
        let mut asked: Vec<&mut Row> = batch
            .iter_mut()
            .filter(|row| asked_bytes(row) <= INLINKS_ASKED_BYTES)
            .collect();
        let urls: Vec<String> = asked.iter().map(|row| row.url.clone()).collect();
        let counts = self.results.inlinks_of(&urls)?;
        for (row, n) in asked.iter_mut().zip(counts) {
            row.facts.inlinks = n;
        }
        Ok(())
    }
}

/// Bytes a row's URL takes in an inlinks request (with its separator).
fn asked_bytes(row: &Row) -> usize {
    row.url.len() + 1
}

/// The value of `url` in a stream of `(url, value)` in URL order, skipping
/// the URLs before it; the stream stays at the first URL after it.
fn entry_of<T>(
    stream: &mut Peekable<Entries<(String, T)>>,
    url: &str,
) -> Result<Option<T>, StoreError> {
    loop {
        match stream.peek() {
            Some(Ok((at, _))) if at.as_str() < url => {
                stream.next();
            }
            Some(Ok((at, _))) if at == url => {
                return Ok(stream.next().and_then(Result::ok).map(|(_, value)| value));
            }
            Some(Err(_)) => return stream.next().map_or(Ok(None), |r| r.map(|_| None)),
            _ => return Ok(None),
        }
    }
}

impl Rows<'_> {
    /// Sets `found_by` from the referrers and the URL's sitemap row.
    fn attach_found_by(&mut self, row: &mut Row) -> Result<(), StoreError> {
        let Some(rows) = &mut self.sitemaps else {
            return Ok(());
        };
        loop {
            match rows.peek() {
                Some(Ok(e)) if e.url.as_str() < row.url.as_str() => {
                    rows.next();
                }
                Some(Err(_)) => return rows.next().map_or(Ok(()), |r| r.map(|_| ())),
                next => {
                    let listed = next
                        .and_then(|r| r.as_ref().ok())
                        .filter(|e| e.url == row.url);
                    row.found_by = FoundBy::of(!row.referrers.is_empty(), listed);
                    return Ok(());
                }
            }
        }
    }
}

impl Iterator for Rows<'_> {
    type Item = Result<Row, StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.ready.is_empty() {
            self.read_batch();
        }
        self.ready.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::query::{Format, Listing};

    #[test]
    fn rows_read_in_batches_carry_each_urls_inlinks() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::engine::store::Store::open(dir.path(), 4 << 20).unwrap();
        // Long URLs: a batch ends at its bytes, before its rows.
        let url = |i: usize| format!("http://a.example/{}/{i:04}", "x".repeat(100));
        let urls: Vec<String> = (0..700).map(url).collect();
        let fetched = PageOutcome::Fetched { status: 200 };
        let records: Vec<PageRecord> = urls
            .iter()
            .map(|u| PageRecord::without_fetch(u, "a.example", 1, 0, fetched.clone()))
            .collect();
        store.record_pages(&records).unwrap();
        // Page p links the URLs i with i % 5 > p: i % 5 pages link to i.
        for p in 0..5 {
            let linked = urls.iter().enumerate().filter(|(i, _)| i % 5 > p);
            let links = linked.map(|(_, u)| (u.as_str(), false));
            store
                .add_referrers(&format!("http://b.example/{p}"), links)
                .unwrap();
        }
        store.flush_all().unwrap();
        let results = Results::Local(store);
        let rules = std::sync::Arc::new(RuleOrigins::default());
        let rows = Rows::open(&results, "http://a.example/", false, false, rules).unwrap();
        let got: Vec<(String, u32)> = rows
            .map(|r| r.map(|row| (row.url, row.facts.inlinks)).unwrap())
            .collect();
        let want: Vec<(String, u32)> = (0..700).map(|i| (url(i), (i % 5) as u32)).collect();
        assert_eq!(got, want);
    }

    fn query(fate: Option<Fate>, by: Option<&str>) -> Query {
        Query {
            fate,
            by: by.map(str::to_string),
            ..Query::new("/nowhere".into(), Listing::Pages, Format::Json)
        }
    }

    fn row(outcome: PageOutcome, rules: &RuleOrigins) -> Row {
        Row::of_page(
            PageRecord::without_fetch("http://h.example/x", "h.example", 1, 0, outcome),
            rules,
        )
    }

    #[test]
    fn each_fate_names_its_reason_and_passes_its_by_filter() {
        let rules = RuleOrigins(HashMap::from([(5, 2)]));
        let blocked = |rule_id| PageOutcome::Blocked {
            rule_id,
            rule: "regex ^/x".into(),
        };
        let cases = [
            (row(PageOutcome::RobotsDenied, &rules), "robots", "robots"),
            (row(blocked(4), &rules), "rule", "rule 4"),
            (row(blocked(5), &rules), "trap", "trap alert 2 (rule 5)"),
            (
                row(
                    PageOutcome::Error {
                        kind: "timeout".into(),
                        message: "slow".into(),
                    },
                    &rules,
                ),
                "timeout",
                "timeout",
            ),
        ];
        for (row, by, reason) in &cases {
            assert_eq!(row.reason.as_deref(), Some(*reason));
            assert!(
                row.passes(&query(None, Some(by))),
                "{reason} passes --by {by}"
            );
            for (other, other_by, _) in &cases {
                if other_by != by {
                    assert!(!other.passes(&query(None, Some(by))));
                }
            }
        }
        let probe = row(
            PageOutcome::NotCrawled {
                reason: format!("{SOFT_404_PROBE}: 404, a real not-found"),
            },
            &rules,
        );
        assert!(probe.passes(&query(Some(Fate::Blocked), Some("probe"))));
        assert!(!probe.passes(&query(Some(Fate::Blocked), Some("host"))));
        let given_up = row(
            PageOutcome::NotCrawled {
                reason: "robots.txt never became available".into(),
            },
            &rules,
        );
        assert!(given_up.passes(&query(Some(Fate::Blocked), Some("host"))));
        assert!(cases[1].0.passes(&query(Some(Fate::Blocked), None)));
        assert!(!cases[3].0.passes(&query(Some(Fate::Blocked), None)));
        let filtered = Row::of_filtered(
            FilteredUrl {
                url: "http://elsewhere.example/".into(),
                host: "elsewhere.example".into(),
                depth: 2,
                reason: FilterReason::Scope,
                found_at_unix_ms: 0,
            },
            &rules,
        );
        assert!(filtered.passes(&query(Some(Fate::Blocked), Some("scope"))));
        let refused = row(
            PageOutcome::Error {
                kind: PRIVATE_ADDRESS.into(),
                message: "10.0.0.1 is a private (RFC 1918) address, refused".into(),
            },
            &rules,
        );
        assert!(refused.passes(&query(Some(Fate::Blocked), Some(PRIVATE_ADDRESS))));
        assert!(!refused.passes(&query(Some(Fate::Error), None)));
        assert!(!filtered.passes(&query(Some(Fate::Blocked), Some("depth"))));
        let ruled = |rule_id| {
            Row::of_filtered(
                FilteredUrl {
                    url: "http://h.example/calendar/2031".into(),
                    host: "h.example".into(),
                    depth: 2,
                    reason: FilterReason::Rule(rule_id),
                    found_at_unix_ms: 0,
                },
                &rules,
            )
        };
        assert_eq!(ruled(7).reason.as_deref(), Some("rule 7"));
        assert!(ruled(7).passes(&query(Some(Fate::Blocked), Some("rule"))));
        assert_eq!(ruled(5).reason.as_deref(), Some("trap alert 2 (rule 5)"));
        assert!(ruled(5).passes(&query(Some(Fate::Blocked), Some("trap"))));
    }

    #[test]
    fn a_parked_url_is_listed_under_its_alert_with_its_found_on_page() {
        let parked = Row::of_parked(ParkedEntry {
            alert_id: 3,
            url: "http://h.example/tag-x-9.html".into(),
            host: "h.example".into(),
            depth: 4,
            found_on: vec!["http://h.example/story-1.html".into()],
        });
        assert_eq!(parked.fate, "parked");
        assert_eq!(parked.reason.as_deref(), Some("trap alert 3"));
        assert_eq!(
            parked.detail.as_deref(),
            Some("found on http://h.example/story-1.html")
        );
        assert!(parked.passes(&query(Some(Fate::Parked), None)));
        assert!(parked.passes(&query(None, Some("trap"))));
        assert!(parked.passes(&query(None, Some("alert:3"))));
        assert!(!parked.passes(&query(None, Some("alert:4"))));
        assert!(!parked.passes(&query(Some(Fate::Blocked), None)));
        // The rule of accepted alert 2 blocked this one: `alert:2` finds it too.
        let rules = RuleOrigins(HashMap::from([(5, 2)]));
        let blocked = row(
            PageOutcome::Blocked {
                rule_id: 5,
                rule: "regex ^/x".into(),
            },
            &rules,
        );
        assert!(blocked.passes(&query(None, Some("alert:2"))));
        assert!(!blocked.passes(&query(None, Some("alert:3"))));
    }

    #[test]
    fn an_unchanged_page_of_a_recrawl_has_the_status_of_its_content() {
        let unchanged = row(
            PageOutcome::NotModified { pass: 2 },
            &RuleOrigins::default(),
        );
        assert_eq!(unchanged.status, Some(200));
        assert_eq!(unchanged.fate, Fate::Fetched.label());
        assert_eq!(
            unchanged.detail.as_deref(),
            Some("not modified in pass 2 (304)")
        );
        let mut q = query(None, None);
        q.status = Query::parse_status("2xx").unwrap();
        assert!(unchanged.passes(&q));
    }

    #[test]
    fn a_page_cut_at_the_body_cap_says_so_and_how_much_was_kept() {
        let mut record = PageRecord::without_fetch(
            "http://h.example/big.html",
            "h.example",
            1,
            0,
            PageOutcome::Fetched { status: 200 },
        );
        record.bytes = 5_242_880;
        let whole = Row::of_page(record.clone(), &RuleOrigins::default());
        assert_eq!(whole.detail, None);
        record.truncated = true;
        let cut = Row::of_page(record, &RuleOrigins::default());
        assert_eq!((cut.fate, cut.status), (Fate::Fetched.label(), Some(200)));
        assert_eq!(
            cut.detail.as_deref(),
            Some("body cut at fetch.max_body (5242880 bytes kept)")
        );
    }

    #[test]
    fn extracted_values_are_listed_by_name_and_found_by_extract_missing() {
        use crate::engine::page_facts::ExtractedValues;
        let found = |name: &str, values: &[&str], cut| ExtractedValues {
            name: name.into(),
            values: values.iter().map(|v| v.to_string()).collect(),
            cut,
        };
        let mut record = PageRecord::without_fetch(
            "http://h.example/p",
            "h.example",
            1,
            0,
            PageOutcome::Fetched { status: 200 },
        );
        record.custom = vec![found("price", &["9.99"], false), found("sku", &[], true)];
        let row = Row::of_page(record, &RuleOrigins::default());
        assert_eq!(row.values_of("Price"), Some(&["9.99".to_string()][..]));
        assert_eq!(row.values_of("sku"), Some(&[][..]));
        assert_eq!(row.values_of("color"), None);
        assert_eq!(row.extract_cut, ["sku"]);
        let json = serde_json::to_value(&row).unwrap();
        assert_eq!(
            json["extract"],
            serde_json::json!({"price": ["9.99"], "sku": []})
        );
        let missing = |name: &str| {
            let mut q = query(None, None);
            q.facts.extract_missing = Some(name.into());
            row.passes(&q)
        };
        assert!(missing("sku") && !missing("price"));
        assert!(!missing("color"), "not run on the page: not missing");
        let earlier = row_without_values();
        assert!(serde_json::to_value(&earlier)
            .unwrap()
            .get("extract")
            .is_none());
    }

    fn row_without_values() -> Row {
        row(
            PageOutcome::Fetched { status: 200 },
            &RuleOrigins::default(),
        )
    }
}
