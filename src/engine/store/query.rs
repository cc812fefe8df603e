//! What front ends list after (or during) a crawl, beyond the page records:
//! who links to each URL (its referrers) and the links that were never queued
//! because of scope or depth. Both live in their own trees, keyed by URL, so
//! they sort like the page records and can be walked side by side with them.

use serde::{Deserialize, Serialize};

use super::{decode_json, decode_page_entry, keys, PageRecord, Store, StoreError, Tree};
use crate::engine::dedup::FingerprintSet;

/// Referrers kept per URL: the page it was first found on and a few more.
/// Bounded so that a link on every page (a site's menu) costs one read per
/// page, not an ever-growing value.
pub const MAX_REFERRERS: usize = 3;

/// Why a link was not queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FilterReason {
    /// Outside the crawl's scope (`scope.mode`, `scope.allow_domains`).
    Scope,
    /// Found on a page at `max_depth`.
    Depth,
    /// A file extension the crawl does not fetch (`.jpg`, `.zip`, …).
    Extension,
    /// An operator rule (by number) matched it when it was found.
    Rule(u64),
}

impl FilterReason {
    /// The word used in listings and for `--by`.
    pub fn label(self) -> &'static str {
        match self {
            FilterReason::Scope => "scope",
            FilterReason::Depth => "depth",
            FilterReason::Extension => "extension",
            FilterReason::Rule(_) => "rule",
        }
    }
}

/// A link that was not queued, as first found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FilteredUrl {
    /// The normalized URL.
    pub url: String,
    /// Its host key.
    pub host: String,
    /// The depth it would have had.
    pub depth: u32,
    /// Why it was not queued.
    pub reason: FilterReason,
    /// When it was first found, in ms since the Unix epoch.
    pub found_at_unix_ms: u64,
}

/// A rule's number and who added it, as the `rules` tree keeps them.
#[derive(Deserialize)]
struct RuleOrigin {
    id: u64,
    origin: String,
}

/// A boxed stream of decoded entries, for listings.
pub type Entries<T> = Box<dyn Iterator<Item = Result<T, StoreError>> + Send>;

/// Slots of the referrer counter, two bits each: 1 MiB whatever the crawl's
/// size, small enough to stay in a core's cache.
const COUNT_SLOTS: usize = 1 << 22;
/// Slots in a 64-byte cache line.
const LINE: usize = 256;
// A slot counts up to MAX_REFERRERS - 1 further referrers in two bits.
const _: () = assert!(MAX_REFERRERS - 1 <= 3);

/// How many further referrers each URL has, estimated in fixed memory (a
/// count-min sketch over URL fingerprints, two probes, conservative update).
/// It only ever overestimates, so a URL never gets more than
/// `MAX_REFERRERS - 1` further referrers in a run, and checking a link costs
/// no read of the store. It starts empty on resume: a resumed crawl may add
/// that many again.
///
/// It also holds the referrer writes not applied yet: sled charges per
/// batch, so they go in groups of [`REFERRER_BATCH`] and at every flush.
#[derive(Default)]
pub(crate) struct ReferrerCounts {
    slots: Vec<u8>,
    pending: sled::Batch,
    pending_len: usize,
}

/// Referrer writes applied together.
const REFERRER_BATCH: usize = 1024;

impl ReferrerCounts {
    /// Counts one more referrer of `fp`; false if it has its share already.
    fn admit(&mut self, fp: u64) -> bool {
        if self.slots.is_empty() {
            self.slots = vec![0; COUNT_SLOTS / 4];
        }
        // Both slots in one cache line: one miss per link, not two.
        let a = fp as usize & (COUNT_SLOTS - 1);
        let b = (a & !(LINE - 1)) | ((fp >> 32) as usize & (LINE - 1));
        let b = if b == a { a ^ 1 } else { b };
        let estimate = self.slot(a).min(self.slot(b));
        if usize::from(estimate) + 1 >= MAX_REFERRERS {
            return false;
        }
        for i in [a, b] {
            if self.slot(i) <= estimate {
                self.slots[i / 4] += 1 << (2 * (i % 4));
            }
        }
        true
    }

    fn slot(&self, i: usize) -> u8 {
        (self.slots[i / 4] >> (2 * (i % 4))) & 3
    }
}

/// Key of a URL's first referrer: the URL and a 0 byte (URLs never hold one).
fn first_key(url: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(url.len() + 1);
    key.extend_from_slice(url.as_bytes());
    key.push(0);
    key
}

/// Key of a further referrer: the first key and the referring URL.
fn further_key(url: &str, parent: &str) -> Vec<u8> {
    let mut key = first_key(url);
    key.extend_from_slice(parent.as_bytes());
    key
}

impl Store {
    /// Records `parent` as a referrer of each link: the first referrer of a
    /// link never seen before (`true`), a further one (at most
    /// [`MAX_REFERRERS`]` - 1`) of the others. Writes only, no reads.
    pub(crate) fn add_referrers<'a>(
        &self,
        parent: &str,
        links: impl Iterator<Item = (&'a str, bool)>,
    ) -> Result<(), StoreError> {
        let mut counts = self
            .inner
            .referrer_counts
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let order = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64)
            .to_be_bytes();
        let mut done = FingerprintSet::default();
        for (target, fresh) in links {
            let fingerprint = keys::url_fingerprint(target);
            if !done.insert(fingerprint) {
                continue;
            }
            if fresh {
                counts.pending.insert(first_key(target), parent.as_bytes());
            } else if target != parent && counts.admit(fingerprint) {
                counts
                    .pending
                    .insert(further_key(target, parent), &order[..]);
            } else {
                continue;
            }
            counts.pending_len += 1;
        }
        if counts.pending_len < REFERRER_BATCH {
            return Ok(());
        }
        self.apply_referrers(&mut counts)
    }

    /// Writes the referrers held back (before every flush).
    pub(crate) fn flush_referrers(&self) -> Result<(), StoreError> {
        let mut counts = self
            .inner
            .referrer_counts
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        self.apply_referrers(&mut counts)
    }

    fn apply_referrers(&self, counts: &mut ReferrerCounts) -> Result<(), StoreError> {
        if counts.pending_len == 0 {
            return Ok(());
        }
        counts.pending_len = 0;
        self.inner
            .referrers
            .apply_batch(std::mem::take(&mut counts.pending))
            .map_err(StoreError::sled("referrer write"))
    }

    /// Records links that were not queued; a URL keeps its first record.
    pub(crate) fn record_filtered(&self, urls: &[FilteredUrl]) -> Result<(), StoreError> {
        let tree = &self.inner.filtered;
        let mut batch = sled::Batch::default();
        for url in urls {
            if tree
                .contains_key(&url.url)
                .map_err(StoreError::sled("filtered URL lookup"))?
            {
                continue;
            }
            let value = serde_json::to_vec(url).map_err(|source| StoreError::Encode {
                what: "filtered URL",
                source,
            })?;
            batch.insert(url.url.as_bytes(), value);
        }
        tree.apply_batch(batch)
            .map_err(StoreError::sled("filtered URL write"))
    }

    /// Forgets why these links were left out (they are queued after all).
    pub(crate) fn forget_filtered(&self, urls: &[&str]) -> Result<(), StoreError> {
        let mut batch = sled::Batch::default();
        for url in urls {
            batch.remove(url.as_bytes());
        }
        self.inner
            .filtered
            .apply_batch(batch)
            .map_err(StoreError::sled("filtered URL removal"))
    }

    /// The referrers of `url`: the page it was first found on, then the
    /// others in the order they were found (at most [`MAX_REFERRERS`]).
    pub fn referrers(&self, url: &str) -> Result<Vec<String>, StoreError> {
        let mut entries = ReferrerEntries {
            inner: self.inner.referrers.scan_prefix(first_key(url)).peekable(),
        };
        Ok(entries
            .next()
            .transpose()?
            .map(|(_, r)| r)
            .unwrap_or_default())
    }

    /// Page records whose URL starts with `url_prefix`, in URL order.
    pub fn page_records(&self, url_prefix: &str) -> Entries<PageRecord> {
        let mut prefix = vec![keys::PAGE];
        prefix.extend_from_slice(url_prefix.as_bytes());
        Box::new(self.inner.crawl.scan_prefix(prefix).map(|item| {
            let (k, v) = item.map_err(StoreError::sled("page scan"))?;
            decode_page_entry(&k, &v)
        }))
    }

    /// At most `limit` page records after the one of URL `after` (from the
    /// first if `None`), in URL order, so a caller can bound its work per call.
    pub(crate) fn pages_after(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<PageRecord>, StoreError> {
        let after = after.map(keys::page_key);
        self.scan_after(&[keys::PAGE], after.as_deref(), limit.max(1), |_| false)?
            .iter()
            .map(|(k, v)| decode_page_entry(k, v))
            .collect()
    }

    /// Links not queued whose URL starts with `url_prefix`, in URL order.
    pub fn filtered_urls(&self, url_prefix: &str) -> Entries<FilteredUrl> {
        Box::new(self.inner.filtered.scan_prefix(url_prefix).map(|item| {
            let (_, v) = item.map_err(StoreError::sled("filtered URL scan"))?;
            decode_json(&v, "filtered URL")
        }))
    }

    /// The record of one link left out, if it was.
    pub fn filtered_url(&self, url: &str) -> Result<Option<FilteredUrl>, StoreError> {
        match self
            .inner
            .filtered
            .get(url)
            .map_err(StoreError::sled("filtered URL lookup"))?
        {
            Some(v) => decode_json(&v, "filtered URL").map(Some),
            None => Ok(None),
        }
    }

    /// `(url, referrers)` for URLs starting with `url_prefix`, in URL order.
    pub fn referrer_entries(&self, url_prefix: &str) -> Entries<(String, Vec<String>)> {
        Box::new(ReferrerEntries {
            inner: self.inner.referrers.scan_prefix(url_prefix).peekable(),
        })
    }

    /// `(rule id, origin)` of every stored rule; an accepted trap alert's rule
    /// has an origin ending in `(alert #N)`.
    pub fn rule_origins(&self) -> Result<Vec<(u64, String)>, StoreError> {
        Ok(self
            .scan::<RuleOrigin>(Tree::Rules)?
            .into_iter()
            .map(|(_, r)| (r.id, r.origin))
            .collect())
    }
}

/// The referrer keys of one URL after another, gathered per URL. Keys sort
/// by URL first (the 0 byte sorts before any URL character), so one URL's
/// keys are adjacent and URLs come in the order page records do.
struct ReferrerEntries {
    inner: std::iter::Peekable<sled::Iter>,
}

/// `(url, referring URL)` of a key; the referring URL is empty in a first-referrer key.
fn split_key(key: &[u8]) -> Result<(&str, &str), StoreError> {
    let at = key
        .iter()
        .position(|b| *b == 0)
        .ok_or_else(|| super::corrupt("referrer key", "no separator"))?;
    let text = |b| std::str::from_utf8(b).map_err(|_| super::corrupt("referrer key", "not UTF-8"));
    Ok((text(&key[..at])?, text(&key[at + 1..])?))
}

impl Iterator for ReferrerEntries {
    type Item = Result<(String, Vec<String>), StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        let (key, value) = match self.inner.next()? {
            Ok(kv) => kv,
            Err(e) => return Some(Err(StoreError::sled("referrer scan")(e))),
        };
        let mut first = None;
        let mut further: Vec<(sled::IVec, String)> = Vec::new();
        let mut take = |key: &[u8], value: sled::IVec| -> Result<String, StoreError> {
            let (url, parent) = split_key(key)?;
            if parent.is_empty() {
                first = Some(String::from_utf8_lossy(&value).into_owned());
            } else {
                further.push((value, parent.to_string()));
            }
            Ok(url.to_string())
        };
        let url = match take(&key, value) {
            Ok(u) => u,
            Err(e) => return Some(Err(e)),
        };
        loop {
            let same = match self.inner.peek() {
                Some(Ok((k, _))) => split_key(k).is_ok_and(|(u, _)| u == url),
                _ => false,
            };
            if !same {
                break;
            }
            if let Some(Ok((k, v))) = self.inner.next() {
                if let Err(e) = take(&k, v) {
                    return Some(Err(e));
                }
            }
        }
        further.sort();
        let mut list: Vec<String> = first.into_iter().collect();
        for (_, parent) in further {
            if list.len() >= MAX_REFERRERS {
                break;
            }
            if !list.contains(&parent) {
                list.push(parent);
            }
        }
        Some(Ok((url, list)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn referrers_keep_the_first_and_a_bounded_number_more() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        let (target, other) = ("http://a.example/t", "http://a.example/t/x");
        store
            .add_referrers(
                "http://a.example/p0",
                [(target, true), (other, true)].into_iter(),
            )
            .unwrap();
        for n in 1..10 {
            let parent = format!("http://a.example/p{n}");
            let links = [(target, false), (target, false), (other, false)];
            store.add_referrers(&parent, links.into_iter()).unwrap();
        }
        store.flush().unwrap();
        let refs = store.referrers(target).unwrap();
        assert_eq!(refs.len(), MAX_REFERRERS, "{refs:?}");
        assert_eq!(refs[0], "http://a.example/p0", "the first-found page leads");
        assert!(refs.iter().all(|r| r.starts_with("http://a.example/p")));
        assert!(store.referrers("http://a.example/none").unwrap().is_empty());
        assert!(store.referrers("http://a.example/").unwrap().is_empty());
        let entries: Vec<(String, usize)> = store
            .referrer_entries("http://a.example/")
            .map(|e| e.map(|(url, refs)| (url, refs.len())).unwrap())
            .collect();
        assert_eq!(
            entries,
            [
                (target.to_string(), MAX_REFERRERS),
                (other.to_string(), MAX_REFERRERS)
            ]
        );
    }

    #[test]
    fn the_referrer_count_never_lets_a_url_past_its_share() {
        let mut counts = ReferrerCounts::default();
        let admitted = (0..100).filter(|_| counts.admit(42)).count();
        assert_eq!(admitted, MAX_REFERRERS - 1);
        assert!(counts.admit(43), "another URL has its own count");
    }

    #[test]
    fn packed_counts_of_many_urls_stay_apart() {
        let mut counts = ReferrerCounts::default();
        let urls: Vec<u64> = (0..50_000u64)
            .map(|i| keys::url_fingerprint(&format!("http://a.test/{i}")))
            .collect();
        let mut admitted = vec![0usize; urls.len()];
        for _ in 0..MAX_REFERRERS + 1 {
            for (n, &fp) in admitted.iter_mut().zip(&urls) {
                *n += usize::from(counts.admit(fp));
            }
        }
        assert!(admitted.iter().all(|&n| n < MAX_REFERRERS));
        let full = admitted.iter().filter(|&&n| n == MAX_REFERRERS - 1).count();
        assert!(
            full * 100 >= urls.len() * 99,
            "{full} of {} got their share",
            urls.len()
        );
    }

    #[test]
    fn a_filtered_url_keeps_its_first_record() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        let first = FilteredUrl {
            url: "http://b.example/x".into(),
            host: "b.example".into(),
            depth: 3,
            reason: FilterReason::Depth,
            found_at_unix_ms: 1,
        };
        let later = FilteredUrl {
            reason: FilterReason::Scope,
            ..first.clone()
        };
        store.record_filtered(std::slice::from_ref(&first)).unwrap();
        store.record_filtered(&[later]).unwrap();
        let all: Vec<FilteredUrl> = store.filtered_urls("").map(|f| f.unwrap()).collect();
        assert_eq!(all, [first]);
    }
}
