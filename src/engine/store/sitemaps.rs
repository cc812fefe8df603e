//! Which URLs a sitemap listed: one row per URL in the crawl tree (`x
//! <url>`, see `keys.rs`), so a listing walks them beside the page records
//! and referrers in URL order. A URL listed by several sitemaps keeps the
//! last one read. Written before the sitemap file's lease is completed
//! (which queues its URLs), so no URL is queued from a sitemap without its
//! row; a file fetched again after a crash writes the same rows again.

use serde::{Deserialize, Serialize};

use super::query::Entries;
use super::{decode_json, keys, CrawlBatch, Store, StoreError};

/// A URL a sitemap listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SitemapEntry {
    /// The URL as listed, normalized.
    pub url: String,
    /// The sitemap file that listed it; for a file named by robots.txt or
    /// guessed (`/sitemap.xml`), the robots.txt URL or the file itself.
    pub sitemap: String,
    /// Its `<lastmod>`, as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lastmod: Option<String>,
    /// A sitemap file (from robots.txt, a guess or an index), not a page.
    #[serde(default)]
    pub file: bool,
}

/// The stored value: the entry without its URL (the key holds it).
#[derive(Serialize, Deserialize)]
struct Value {
    sitemap: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    lastmod: Option<String>,
    #[serde(default)]
    file: bool,
}

impl Store {
    /// Records the URLs a sitemap listed, in one batch.
    pub(crate) fn record_sitemap_entries(
        &self,
        entries: &[SitemapEntry],
    ) -> Result<(), StoreError> {
        let mut batch = CrawlBatch::default();
        for e in entries {
            let value = Value {
                sitemap: e.sitemap.clone(),
                lastmod: e.lastmod.clone(),
                file: e.file,
            };
            let json = serde_json::to_vec(&value).map_err(|source| StoreError::Encode {
                what: "sitemap entry",
                source,
            })?;
            batch.put_row(keys::sitemap_key(&e.url), json);
        }
        self.apply(batch)
    }

    /// URLs sitemaps listed, starting with `url_prefix`, in URL order.
    pub fn sitemap_entries(&self, url_prefix: &str) -> Entries<SitemapEntry> {
        let prefix = keys::sitemap_key(url_prefix);
        Box::new(
            self.inner
                .crawl
                .scan_prefix(&prefix, "sitemap entry scan")
                .map(|row| {
                    let (key, value) = row?;
                    let url = std::str::from_utf8(&key[1..])
                        .map_err(|_| super::corrupt("sitemap entry", "URL is not UTF-8"))?;
                    let v: Value = decode_json(&value, "sitemap entry")?;
                    Ok(SitemapEntry {
                        url: url.to_string(),
                        sitemap: v.sitemap,
                        lastmod: v.lastmod,
                        file: v.file,
                    })
                }),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_come_back_in_url_order_and_the_last_listing_wins() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        let entry = |url: &str, sitemap: &str| SitemapEntry {
            url: url.into(),
            sitemap: sitemap.into(),
            lastmod: Some("2024-01-01".into()),
            file: false,
        };
        store
            .record_sitemap_entries(&[
                entry("http://b.test/", "s1"),
                entry("http://a.test/x", "s1"),
            ])
            .unwrap();
        store
            .record_sitemap_entries(&[entry("http://a.test/x", "s2")])
            .unwrap();
        let all: Vec<SitemapEntry> = store.sitemap_entries("").map(Result::unwrap).collect();
        assert_eq!(
            all,
            [
                entry("http://a.test/x", "s2"),
                entry("http://b.test/", "s1")
            ]
        );
        let a: Vec<_> = store.sitemap_entries("http://a.test/").collect();
        assert_eq!(a.len(), 1);
        assert!(!store.has_pages(), "no page record was written");
    }
}
