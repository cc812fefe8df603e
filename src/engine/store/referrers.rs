//! Who links to each URL: the page it was first found on and a few more.
//!
//! A crawl writes a referrer for nearly every new link of every page, at keys
//! in URL order: random inserts all over a growing key space. In sled, where
//! earlier versions kept them, they cost as much CPU as the rest of the store
//! together and, once they outgrew sled's cache, its memory ran away
//! (docs/PERFORMANCE.md, "Memory"); an LSM tree (`index.rs`) appends them.

use super::index::{CrawlIndex, Rows};
use super::inlinks::InlinkTally;
use super::{keys, Store, StoreError};
use crate::engine::dedup::FingerprintSet;

/// Referrers kept per URL: the page it was first found on and a few more.
/// Bounded so that a link on every page (a site's menu) costs one read per
/// page, not an ever-growing value.
pub const MAX_REFERRERS: usize = 3;

/// Slots of the referrer counter, two bits each: 1 MiB whatever the crawl's
/// size, small enough to stay in a core's cache.
const COUNT_SLOTS: usize = 1 << 22;
/// Slots in a 64-byte cache line.
const LINE: usize = 256;
// A slot counts up to MAX_REFERRERS - 1 further referrers in two bits.
const _: () = assert!(MAX_REFERRERS - 1 <= 3);

/// Referrer writes applied together (one journal write each).
const REFERRER_BATCH: usize = 1024;

/// How many further referrers each URL has, estimated in fixed memory (a
/// count-min sketch over URL fingerprints, two probes, conservative update).
/// It only ever overestimates, so a URL never gets more than
/// `MAX_REFERRERS - 1` further referrers in a run, and checking a link costs
/// no read of the store. It starts empty on resume: a resumed crawl may add
/// that many again.
///
/// It also holds the referrer writes not applied yet, applied in groups of
/// [`REFERRER_BATCH`] and at every flush.
#[derive(Default)]
pub(super) struct ReferrerCounts {
    slots: Vec<u8>,
    pending: Vec<(Vec<u8>, Vec<u8>)>,
    /// The links of the pages since the last write, counted (`inlinks`).
    pub(super) inlinks: InlinkTally,
}

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
        let mut counts = self.referrer_counts();
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
            if target != parent {
                counts.inlinks.add(fingerprint);
            }
            if fresh {
                counts
                    .pending
                    .push((first_key(target), parent.as_bytes().to_vec()));
            } else if target != parent && counts.admit(fingerprint) {
                counts
                    .pending
                    .push((further_key(target, parent), order.to_vec()));
            }
        }
        let inlinks_full = counts.inlinks.is_full();
        let referrers_full = counts.pending.len() >= REFERRER_BATCH;
        drop(counts);
        if inlinks_full {
            self.write_pending_inlinks()?;
        }
        if referrers_full {
            self.write_pending_referrers()?;
        }
        Ok(())
    }

    pub(super) fn referrer_counts(&self) -> std::sync::MutexGuard<'_, ReferrerCounts> {
        self.inner
            .referrer_counts
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Writes the referrers held back (durable at the index's next persist).
    pub(super) fn write_pending_referrers(&self) -> Result<(), StoreError> {
        let pending = std::mem::take(&mut self.referrer_counts().pending);
        let rows = pending.into_iter().map(|(key, value)| (key, Some(value)));
        self.inner.index.write(Rows::Referrers, rows)
    }

    /// The referrers of `url`: the page it was first found on, then the
    /// others in the order they were found (at most [`MAX_REFERRERS`]).
    pub fn referrers(&self, url: &str) -> Result<Vec<String>, StoreError> {
        let mut entries = ReferrerEntries::new(&self.inner.index, &first_key(url));
        Ok(entries
            .next()
            .transpose()?
            .map(|(_, r)| r)
            .unwrap_or_default())
    }

    /// `(url, referrers)` for URLs starting with `url_prefix`, in URL order.
    pub fn referrer_entries(
        &self,
        url_prefix: &str,
    ) -> super::query::Entries<(String, Vec<String>)> {
        Box::new(ReferrerEntries::new(
            &self.inner.index,
            url_prefix.as_bytes(),
        ))
    }
}

type KvRows = std::iter::Peekable<Box<dyn Iterator<Item = fjall::Result<fjall::KvPair>> + Send>>;

/// The referrer keys of one URL after another, gathered per URL. Keys sort
/// by URL first (the 0 byte sorts before any URL character), so one URL's
/// keys are adjacent and URLs come in the order page records do.
struct ReferrerEntries {
    inner: KvRows,
}

impl ReferrerEntries {
    fn new(index: &CrawlIndex, prefix: &[u8]) -> ReferrerEntries {
        let rows: Box<dyn Iterator<Item = _> + Send> = Box::new(
            index
                .rows(Rows::Referrers)
                .prefix(prefix)
                .map(|guard| guard.into_inner()),
        );
        ReferrerEntries {
            inner: rows.peekable(),
        }
    }
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
        let scan_error = |source| StoreError::Index { op: "scan", source };
        let (key, value) = match self.inner.next()? {
            Ok(kv) => kv,
            Err(e) => return Some(Err(scan_error(e))),
        };
        let mut first = None;
        let mut further: Vec<(Vec<u8>, String)> = Vec::new();
        let mut take = |key: &[u8], value: &[u8]| -> Result<String, StoreError> {
            let (url, parent) = split_key(key)?;
            if parent.is_empty() {
                first = Some(String::from_utf8_lossy(value).into_owned());
            } else {
                further.push((value.to_vec(), parent.to_string()));
            }
            Ok(url.to_string())
        };
        let url = match take(&key, &value) {
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
            match self.inner.next() {
                Some(Ok((k, v))) => {
                    if let Err(e) = take(&k, &v) {
                        return Some(Err(e));
                    }
                }
                Some(Err(e)) => return Some(Err(scan_error(e))),
                None => break,
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
    fn referrers_survive_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = Store::open(dir.path(), 1 << 20).unwrap();
            let links = [("http://a.example/t", true)];
            store
                .add_referrers("http://a.example/p", links.into_iter())
                .unwrap();
            store.flush().unwrap();
        }
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        assert_eq!(
            store.referrers("http://a.example/t").unwrap(),
            ["http://a.example/p"]
        );
    }

    #[test]
    fn referrers_an_earlier_version_kept_in_sled_move_to_the_index() {
        let dir = tempfile::tempdir().unwrap();
        {
            let db = sled::open(dir.path().join("db")).unwrap();
            let legacy = db.open_tree("referrers").unwrap();
            let target = "http://a.example/t";
            legacy
                .insert(first_key(target), "http://a.example/p0")
                .unwrap();
            legacy
                .insert(
                    further_key(target, "http://a.example/p1"),
                    &7u64.to_be_bytes(),
                )
                .unwrap();
            db.flush().unwrap();
        }
        let expected = ["http://a.example/p0", "http://a.example/p1"];
        {
            let store = Store::open(dir.path(), 1 << 20).unwrap();
            assert_eq!(store.referrers("http://a.example/t").unwrap(), expected);
            assert!(!dir.path().join("db").exists(), "sled's directory is gone");
        }
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        assert_eq!(store.referrers("http://a.example/t").unwrap(), expected);
    }
}
