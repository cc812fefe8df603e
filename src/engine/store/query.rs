//! What front ends list after (or during) a crawl, beyond the page records:
//! the links that were never queued because of scope or depth (who links to
//! each URL is in `referrers.rs`). Both are keyed by URL, so they sort like
//! the page records and can be walked side by side with them.

use serde::{Deserialize, Serialize};

use super::index::Rows;
use super::{decode_json, decode_page_entry, keys, PageRecord, Store, StoreError, Tree};

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

impl Store {
    /// Records links that were not queued; a URL keeps its first record.
    /// Returns, for each, whether it was new (so its referrer is the first).
    pub(crate) fn record_filtered(&self, urls: &[FilteredUrl]) -> Result<Vec<bool>, StoreError> {
        let rows = self.inner.index.rows(Rows::Filtered);
        let mut batch = Vec::new();
        let mut fresh = Vec::with_capacity(urls.len());
        let mut in_batch = std::collections::HashSet::new();
        for url in urls {
            let new = !rows
                .contains_key(&url.url)
                .map_err(StoreError::index("filtered URL lookup"))?
                && in_batch.insert(url.url.as_str());
            fresh.push(new);
            if !new {
                continue;
            }
            let value = serde_json::to_vec(url).map_err(|source| StoreError::Encode {
                what: "filtered URL",
                source,
            })?;
            batch.push((url.url.as_bytes().to_vec(), Some(value)));
        }
        self.inner.index.write(Rows::Filtered, batch)?;
        Ok(fresh)
    }

    /// Forgets why these links were left out (they are queued after all).
    pub(crate) fn forget_filtered(&self, urls: &[&str]) -> Result<(), StoreError> {
        // One removal per URL: a single atomic write takes each key once.
        let keys: std::collections::BTreeSet<&str> = urls.iter().copied().collect();
        let removals = keys.into_iter().map(|url| (url.as_bytes().to_vec(), None));
        self.inner.index.write(Rows::Filtered, removals)
    }

    /// Raw rows of the crawl tree under `prefix`, in key order, streamed.
    pub(crate) fn crawl_rows(
        &self,
        prefix: &[u8],
        op: &'static str,
    ) -> Entries<(Vec<u8>, Vec<u8>)> {
        Box::new(
            self.inner
                .crawl
                .scan_prefix(prefix, op)
                .map(|row| row.map(|(k, v)| (k.to_vec(), v.to_vec()))),
        )
    }

    /// Page records whose URL starts with `url_prefix`, in URL order.
    pub fn page_records(&self, url_prefix: &str) -> Entries<PageRecord> {
        let mut prefix = vec![keys::PAGE];
        prefix.extend_from_slice(url_prefix.as_bytes());
        Box::new(
            self.inner
                .crawl
                .scan_prefix(&prefix, "page scan")
                .map(|item| {
                    let (k, v) = item?;
                    decode_page_entry(&k, &v)
                }),
        )
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
        let rows = self.inner.index.rows(Rows::Filtered).prefix(url_prefix);
        Box::new(rows.map(|guard| {
            let v = guard
                .value()
                .map_err(StoreError::index("filtered URL scan"))?;
            decode_json(&v, "filtered URL")
        }))
    }

    /// The record of one link left out, if it was.
    pub fn filtered_url(&self, url: &str) -> Result<Option<FilteredUrl>, StoreError> {
        match self
            .inner
            .index
            .rows(Rows::Filtered)
            .get(url)
            .map_err(StoreError::index("filtered URL lookup"))?
        {
            Some(v) => decode_json(&v, "filtered URL").map(Some),
            None => Ok(None),
        }
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

#[cfg(test)]
mod tests {
    use super::*;

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
