//! What front ends list after (or during) a crawl, beyond the page records:
//! who links to each URL (its referrers) and the links that were never queued
//! because of scope or depth. Both live in their own trees, keyed by URL, so
//! they sort like the page records and can be walked side by side with them.

use serde::{Deserialize, Serialize};

use super::{decode_json, keys, PageRecord, Store, StoreError, Tree};

/// Referrers kept per URL: the page it was first found on and a few more.
/// Bounded so that a link on every page (a site's menu) costs one read per
/// page, not an ever-growing value.
pub const MAX_REFERRERS: usize = 5;

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
}

impl FilterReason {
    /// The word used in listings and for `--by`.
    pub fn label(self) -> &'static str {
        match self {
            FilterReason::Scope => "scope",
            FilterReason::Depth => "depth",
            FilterReason::Extension => "extension",
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
    /// Adds `parent` to the referrers of each target that has fewer than
    /// [`MAX_REFERRERS`]; the first one recorded is the page the URL was found on.
    pub(crate) fn add_referrers<'a>(
        &self,
        parent: &str,
        targets: impl Iterator<Item = &'a str>,
    ) -> Result<(), StoreError> {
        let tree = &self.inner.referrers;
        let mut batch = sled::Batch::default();
        for target in targets {
            let current = tree
                .get(target)
                .map_err(StoreError::sled("referrer lookup"))?;
            let value = match current {
                None => parent.as_bytes().to_vec(),
                Some(v) => {
                    let mut list = v.split(|b| *b == b'\n');
                    if v.split(|b| *b == b'\n').count() >= MAX_REFERRERS
                        || list.any(|r| r == parent.as_bytes())
                    {
                        continue;
                    }
                    let mut value = v.to_vec();
                    value.push(b'\n');
                    value.extend_from_slice(parent.as_bytes());
                    value
                }
            };
            batch.insert(target.as_bytes(), value);
        }
        tree.apply_batch(batch)
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

    /// The referrers of `url`, first-found first.
    pub fn referrers(&self, url: &str) -> Result<Vec<String>, StoreError> {
        let value = self
            .inner
            .referrers
            .get(url)
            .map_err(StoreError::sled("referrer lookup"))?;
        Ok(value.map(|v| split_referrers(&v)).unwrap_or_default())
    }

    /// Page records whose URL starts with `url_prefix`, in URL order.
    pub fn page_records(&self, url_prefix: &str) -> Entries<PageRecord> {
        let mut prefix = vec![keys::PAGE];
        prefix.extend_from_slice(url_prefix.as_bytes());
        Box::new(self.inner.crawl.scan_prefix(prefix).map(|item| {
            let (_, v) = item.map_err(StoreError::sled("page scan"))?;
            decode_json(&v, "page record")
        }))
    }

    /// Raw page records (their stored JSON), for the results socket.
    pub(crate) fn raw_page_records(&self, url_prefix: &str) -> Entries<sled::IVec> {
        let mut prefix = vec![keys::PAGE];
        prefix.extend_from_slice(url_prefix.as_bytes());
        Box::new(
            self.inner
                .crawl
                .scan_prefix(prefix)
                .map(|item| Ok(item.map_err(StoreError::sled("page scan"))?.1)),
        )
    }

    /// Links not queued whose URL starts with `url_prefix`, in URL order.
    pub fn filtered_urls(&self, url_prefix: &str) -> Entries<FilteredUrl> {
        Box::new(self.inner.filtered.scan_prefix(url_prefix).map(|item| {
            let (_, v) = item.map_err(StoreError::sled("filtered URL scan"))?;
            decode_json(&v, "filtered URL")
        }))
    }

    /// `(url, referrers)` for URLs starting with `url_prefix`, in URL order.
    pub fn referrer_entries(&self, url_prefix: &str) -> Entries<(String, Vec<String>)> {
        Box::new(self.inner.referrers.scan_prefix(url_prefix).map(|item| {
            let (k, v) = item.map_err(StoreError::sled("referrer scan"))?;
            let url = String::from_utf8(k.to_vec())
                .map_err(|_| super::corrupt("referrer key", "not UTF-8"))?;
            Ok((url, split_referrers(&v)))
        }))
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

fn split_referrers(value: &[u8]) -> Vec<String> {
    value
        .split(|b| *b == b'\n')
        .map(|r| String::from_utf8_lossy(r).into_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn referrers_keep_the_first_and_a_bounded_number_more() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        let target = "http://a.example/t";
        for n in 0..10 {
            let parent = format!("http://a.example/p{n}");
            store
                .add_referrers(&parent, [target, "http://a.example/other"].into_iter())
                .unwrap();
            // The same page linking twice is one referrer.
            store.add_referrers(&parent, [target].into_iter()).unwrap();
        }
        let refs = store.referrers(target).unwrap();
        assert_eq!(refs.len(), MAX_REFERRERS);
        assert_eq!(refs[0], "http://a.example/p0");
        assert_eq!(refs[4], "http://a.example/p4");
        assert!(store.referrers("http://a.example/none").unwrap().is_empty());
        let urls: Vec<String> = store
            .referrer_entries("http://a.example/")
            .map(|e| e.unwrap().0)
            .collect();
        assert_eq!(urls, ["http://a.example/other", target]);
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
