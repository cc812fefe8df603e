//! Who links to each URL: the page it was first found on and a few more.
//!
//! A crawl writes a referrer for nearly every new link of every page, at keys
//! in URL order: random inserts all over a growing key space. In sled, where
//! earlier versions kept them, they cost as much CPU as the rest of the store
//! together and, once they outgrew sled's cache, its memory ran away
//! (docs/PERFORMANCE.md, "Memory"); an LSM tree (`index.rs`) appends them,
//! in sorted batches (`referrer_batch.rs`).

use super::index::{CrawlIndex, Rows};
use super::inlink_tally::InlinkTally;
use super::referrer_batch::PendingReferrers;
use super::{keys, Store, StoreError};
use crate::engine::dedup::{load_ahead, FingerprintSet};

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

/// How many further referrers each URL has, estimated in fixed memory (a
/// count-min sketch over URL fingerprints, two probes, conservative update).
/// It only ever overestimates, so a URL never gets more than
/// `MAX_REFERRERS - 1` further referrers in a run, and checking a link costs
/// no read of the store. It starts empty on resume: a resumed crawl may add
/// that many again.
///
/// It also holds the referrer rows not written yet.
#[derive(Default)]
pub(super) struct ReferrerCounts {
    slots: Vec<u8>,
    pub(super) pending: PendingReferrers,
    /// The links of the pages since the last write, counted (`inlinks`).
    pub(super) inlinks: InlinkTally,
}

impl ReferrerCounts {
    /// `fp`'s two slots, both in one cache line: one miss per link, not two.
    fn slots_of(fp: u64) -> (usize, usize) {
        let a = fp as usize & (COUNT_SLOTS - 1);
        let b = (a & !(LINE - 1)) | ((fp >> 32) as usize & (LINE - 1));
        (a, if b == a { a ^ 1 } else { b })
    }

    /// Reads `fp`'s line, to bring it into the cache.
    fn touch(&self, fp: u64) -> u8 {
        self.slots
            .get(Self::slots_of(fp).0 / 4)
            .copied()
            .unwrap_or(0)
    }

    /// Counts one more referrer of `fp`; false if it has its share already.
    fn admit(&mut self, fp: u64) -> bool {
        if self.slots.is_empty() {
            self.slots = vec![0; COUNT_SLOTS / 4];
        }
        let (a, b) = Self::slots_of(fp);
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

/// Key of a further referrer: the first key and the referring URL
/// (`add_referrers` writes it in its parts).
#[cfg(test)]
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
        let links = links.map(|(target, fresh)| (target, keys::url_fingerprint(target), fresh));
        self.add_fingerprinted_referrers(parent, links)
    }

    /// [`Store::add_referrers`] of links whose fingerprints
    /// (`keys::url_fingerprint`) the caller has already.
    pub(crate) fn add_fingerprinted_referrers<'a>(
        &self,
        parent: &str,
        links: impl Iterator<Item = (&'a str, u64, bool)>,
    ) -> Result<(), StoreError> {
        let mut counts = self.referrer_counts();
        let order = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64)
            .to_be_bytes();
        let links: Vec<(&str, u64, bool)> = links.collect();
        // Each link misses the cache twice: the tally, the counter.
        load_ahead(
            links
                .iter()
                .flat_map(|&(_, fp, _)| [counts.inlinks.touch(fp), u64::from(counts.touch(fp))]),
        );
        let mut done = FingerprintSet::with_capacity_and_hasher(links.len(), Default::default());
        for (target, fingerprint, fresh) in links {
            if !done.insert(fingerprint) {
                continue;
            }
            if target != parent {
                counts.inlinks.add(fingerprint);
            }
            let url = target.as_bytes();
            if fresh {
                counts
                    .pending
                    .push(fingerprint, &[url, &[0]], parent.as_bytes());
            } else if target != parent && counts.admit(fingerprint) {
                let key = [url, &[0], parent.as_bytes()];
                counts.pending.push(fingerprint, &key, &order);
            }
        }
        let inlinks_full = counts.inlinks.is_full();
        let referrers_full = counts.pending.is_full();
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

    /// Writes the referrers held back.
    pub(super) fn write_pending_referrers(&self) -> Result<(), StoreError> {
        // Held while they are written: a read finds each row in one place
        // or the other.
        self.referrer_counts().pending.write(&self.inner.index)
    }

    /// The referrers of `url`: the page it was first found on, then the
    /// others in the order they were found (at most [`MAX_REFERRERS`]).
    pub fn referrers(&self, url: &str) -> Result<Vec<String>, StoreError> {
        let first = first_key(url);
        let counts = self.referrer_counts();
        let mut gathered = Gathered::default();
        for row in self.inner.index.rows(Rows::Referrers).prefix(&first) {
            let (key, value) = row.into_inner().map_err(StoreError::index("scan"))?;
            gathered.take(&key, &value)?;
        }
        let held = counts.pending.rows_of(keys::url_fingerprint(url), &first);
        for (key, value) in held {
            gathered.take(key, value)?;
        }
        Ok(gathered.into_list())
    }

    /// `(url, referrers)` for URLs starting with `url_prefix`, in URL order.
    pub fn referrer_entries(
        &self,
        url_prefix: &str,
    ) -> super::query::Entries<(String, Vec<String>)> {
        // A listing shows every referrer found so far.
        if let Err(e) = self.write_pending_referrers() {
            return Box::new(std::iter::once(Err(e)));
        }
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

/// One URL's referrer rows, gathered into its list.
#[derive(Default)]
struct Gathered {
    first: Option<String>,
    /// `(when found, referring URL)`.
    further: Vec<(Vec<u8>, String)>,
}

impl Gathered {
    /// Takes one row; returns the URL it is of.
    fn take<'k>(&mut self, key: &'k [u8], value: &[u8]) -> Result<&'k str, StoreError> {
        let (url, parent) = split_key(key)?;
        if parent.is_empty() {
            // The earlier row leads: the stored one before one held back.
            self.first
                .get_or_insert_with(|| String::from_utf8_lossy(value).into_owned());
        } else {
            self.further.push((value.to_vec(), parent.to_string()));
        }
        Ok(url)
    }

    /// The first referrer, then the others in the order they were found.
    fn into_list(mut self) -> Vec<String> {
        self.further.sort();
        let mut list: Vec<String> = self.first.into_iter().collect();
        for (_, parent) in self.further {
            if list.len() >= MAX_REFERRERS {
                break;
            }
            if !list.contains(&parent) {
                list.push(parent);
            }
        }
        list
    }
}

impl Iterator for ReferrerEntries {
    type Item = Result<(String, Vec<String>), StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        let scan_error = StoreError::index("scan");
        let (key, value) = match self.inner.next()? {
            Ok(kv) => kv,
            Err(e) => return Some(Err(scan_error(e))),
        };
        let mut gathered = Gathered::default();
        let url = match gathered.take(&key, &value) {
            Ok(u) => u.to_string(),
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
                    if let Err(e) = gathered.take(&k, &v) {
                        return Some(Err(e));
                    }
                }
                Some(Err(e)) => return Some(Err(scan_error(e))),
                None => break,
            }
        }
        Some(Ok((url, gathered.into_list())))
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
    fn of_two_first_referrers_held_together_the_first_held_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        let target = "http://a.example/t";
        // Rows of other URLs around them, so the sort moves rows about.
        for (n, parent) in ["http://a.example/p1", "http://a.example/p2"]
            .iter()
            .enumerate()
        {
            let before = format!("http://a.example/a{n}");
            let after = format!("http://a.example/z{n}");
            let links = [
                (after.as_str(), true),
                (target, true),
                (before.as_str(), true),
            ];
            store.add_referrers(parent, links.into_iter()).unwrap();
        }
        store.write_pending_referrers().unwrap();
        assert_eq!(store.referrers(target).unwrap(), ["http://a.example/p1"]);
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
    fn referrers_held_back_are_read_before_and_after_they_are_written() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        let (target, early, late) = (
            "http://a.example/t",
            "http://a.example/p1",
            "http://a.example/p2",
        );
        store
            .add_referrers(early, [(target, true)].into_iter())
            .unwrap();
        store.write_pending_referrers().unwrap();
        store
            .add_referrers(late, [(target, false)].into_iter())
            .unwrap();
        store.flush().unwrap();
        assert!(
            !store.referrer_counts().pending.is_due(),
            "a flush does not write a batch just begun"
        );
        assert_eq!(
            store.referrers(target).unwrap(),
            [early, late],
            "stored, then held"
        );
        assert!(store.referrers("http://a.example/t2").unwrap().is_empty());
        let listed: Vec<_> = store
            .referrer_entries("http://a.example/")
            .map(Result::unwrap)
            .collect();
        assert_eq!(
            listed,
            [(
                target.to_string(),
                vec![early.to_string(), late.to_string()]
            )]
        );
        assert_eq!(
            store.referrers(target).unwrap(),
            [early, late],
            "a listing writes them"
        );
    }

    #[test]
    fn held_referrers_survive_a_kill_at_any_flush_and_a_torn_row_is_cut() {
        let dir = tempfile::tempdir().unwrap();
        let held = dir.path().join("referrers.held");
        let (target, parent) = ("http://a.example/t", "http://a.example/p");
        {
            let store = Store::open(dir.path(), 1 << 20).unwrap();
            store
                .add_referrers(parent, [(target, true)].into_iter())
                .unwrap();
            store.flush().unwrap();
            // Dropped without a checkpoint, as by `kill -9`.
        }
        let logged = std::fs::metadata(&held).unwrap().len();
        assert!(logged > 0, "a flush keeps the held rows on disk");
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&held)
            .unwrap();
        std::io::Write::write_all(&mut file, &[9, 0, 0, 0, 1]).unwrap();
        drop(file);
        {
            let store = Store::open(dir.path(), 1 << 20).unwrap();
            assert_eq!(store.referrers(target).unwrap(), [parent]);
            assert_eq!(
                std::fs::metadata(&held).unwrap().len(),
                logged,
                "torn row cut"
            );
            store.flush_all().unwrap();
            assert_eq!(
                std::fs::metadata(&held).unwrap().len(),
                0,
                "written: emptied"
            );
        }
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        assert_eq!(
            store.referrers(target).unwrap(),
            [parent],
            "from the index now"
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
            // A checkpoint: what a plain flush holds back is written.
            store.flush_all().unwrap();
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
