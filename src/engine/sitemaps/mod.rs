//! Sitemaps: the files a host names in robots.txt (or `/sitemap.xml` when it
//! names none), fetched once, when the host is first met, as frontier work
//! like soft-404 probes (so politeness, robots.txt, the breaker, the global
//! slots and the private-address guard apply), and read by [`parse`].
//!
//! [`SitemapFiles`] owns each host's files: how many were queued (at most
//! `sitemaps.max_files_per_host`, index children included) and which are
//! pending, stored in the `sitemaps` tree as soon as they change, so a
//! resumed crawl neither fetches a host's sitemaps again nor mistakes a
//! queued sitemap file for a page. Memory: the pending files only.

pub mod parse;

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::control::HostKey;
use super::store::{Store, StoreError, Tree};

/// A sitemap file waiting to be fetched.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingFile {
    pub url: String,
    /// 0 for a file named by robots.txt or guessed; an index's children
    /// are one deeper (at most `sitemaps.max_index_depth`).
    pub level: u8,
}

/// What the `sitemaps` tree keeps of one host.
#[derive(Debug, Default, Serialize, Deserialize)]
struct HostFiles {
    /// Files queued so far, the pending ones included.
    queued: u32,
    pending: Vec<PendingFile>,
}

/// The crawl's sitemap files; the one owner of the `sitemaps` tree.
pub struct SitemapFiles {
    store: Store,
    max_files_per_host: u32,
    /// Pending files by URL, with their host.
    pending: HashMap<String, (HostKey, u8)>,
}

impl SitemapFiles {
    /// The stored hosts' pending files.
    pub fn load(store: &Store, max_files_per_host: u32) -> Result<Self, StoreError> {
        let mut pending = HashMap::new();
        for (key, files) in store.scan::<HostFiles>(Tree::Sitemaps)? {
            let host = String::from_utf8_lossy(&key).into_owned();
            for file in files.pending {
                pending.insert(file.url, (host.clone(), file.level));
            }
        }
        Ok(SitemapFiles {
            store: store.clone(),
            max_files_per_host,
            pending,
        })
    }

    /// Whether the host's sitemaps were looked for already.
    pub fn met(&self, host: &str) -> Result<bool, StoreError> {
        self.store.contains(Tree::Sitemaps, host.as_bytes())
    }

    /// Takes `files` as the host's pending files, as many as its cap leaves
    /// room for; returns those taken (queue them after this, so a restart
    /// knows what they are). A host with none taken is still met.
    pub fn want(
        &mut self,
        host: &str,
        files: Vec<PendingFile>,
    ) -> Result<Vec<PendingFile>, StoreError> {
        let mut state: HostFiles = self
            .store
            .get(Tree::Sitemaps, host.as_bytes())?
            .unwrap_or_default();
        let room = self.max_files_per_host.saturating_sub(state.queued) as usize;
        let taken: Vec<PendingFile> = files
            .into_iter()
            .filter(|f| !self.pending.contains_key(&f.url))
            .take(room)
            .collect();
        state.queued += taken.len() as u32;
        state.pending.extend(taken.iter().cloned());
        self.store.put(Tree::Sitemaps, host.as_bytes(), &state)?;
        for file in &taken {
            self.pending
                .insert(file.url.clone(), (host.to_string(), file.level));
        }
        Ok(taken)
    }

    /// The pending file of this URL: the host that named it, and its level.
    pub fn pending(&self, url: &str) -> Option<(HostKey, u8)> {
        self.pending.get(url).cloned()
    }

    /// Whether any file is pending (the dispatch loop's cheap check).
    pub fn any_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// The file was fetched (or will not be): no longer pending.
    pub fn finish(&mut self, url: &str) -> Result<(), StoreError> {
        let Some((host, _)) = self.pending.remove(url) else {
            return Ok(());
        };
        let mut state: HostFiles = self
            .store
            .get(Tree::Sitemaps, host.as_bytes())?
            .unwrap_or_default();
        state.pending.retain(|f| f.url != url);
        self.store.put(Tree::Sitemaps, host.as_bytes(), &state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(url: &str, level: u8) -> PendingFile {
        PendingFile {
            url: url.into(),
            level,
        }
    }

    #[test]
    fn files_are_capped_per_host_and_pending_ones_survive_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        let mut files = SitemapFiles::load(&store, 3).unwrap();
        assert!(!files.met("a.test").unwrap());
        let taken = files
            .want("a.test", vec![file("http://a.test/s.xml", 0)])
            .unwrap();
        assert_eq!(taken.len(), 1);
        assert!(files.met("a.test").unwrap());
        let more = (1..=4).map(|i| file(&format!("http://a.test/{i}.xml"), 1));
        let taken = files.want("a.test", more.collect()).unwrap();
        assert_eq!(taken.len(), 2, "three files per host");
        assert!(files.want("b.test", Vec::new()).unwrap().is_empty());
        assert!(files.met("b.test").unwrap(), "met, with nothing to fetch");
        files.finish("http://a.test/1.xml").unwrap();

        let again = SitemapFiles::load(&store, 3).unwrap();
        assert_eq!(
            again.pending("http://a.test/s.xml"),
            Some(("a.test".into(), 0))
        );
        assert_eq!(
            again.pending("http://a.test/2.xml"),
            Some(("a.test".into(), 1))
        );
        assert_eq!(again.pending("http://a.test/1.xml"), None);
        assert!(again.any_pending());
    }
}
