//! The seen set: which URLs were ever discovered. A Bloom filter answers most
//! "never seen" questions from memory, a table of recent positives (told
//! apart by 46 of their 64 bits, see `dedup::recent`) answers most "seen"
//! ones, and only the rest ask the persistent marks, which the batches that
//! queue or park a URL write.

use crate::engine::dedup::{
    load_ahead, url_fingerprint, BloomFilter, BloomProbe, FingerprintSet, RecentSeen,
};
use crate::engine::store::{Store, StoreError};

/// Room in the Bloom filter for this many URLs beyond those already seen.
const BLOOM_HEADROOM: usize = 1_000_000;
/// False-positive rate the Bloom filter is sized for.
const BLOOM_FP_RATE: f64 = 0.01;
/// Recently confirmed fingerprints kept in memory (4 bytes each, 8 MiB).
const RECENT_SEEN: usize = 1 << 21;

pub(super) struct SeenSet {
    /// Invariant: holds every fingerprint with a persistent seen mark, so its
    /// "no" is certain.
    bloom: BloomFilter,
    recent: RecentSeen,
}

impl SeenSet {
    pub fn new(bloom: BloomFilter, recent: RecentSeen) -> Self {
        SeenSet { bloom, recent }
    }

    /// Sizes the Bloom filter for the stored marks plus headroom and fills it.
    pub fn load(store: &Store) -> Result<Self, StoreError> {
        let mut count = 0usize;
        store.for_each_seen(|_| count += 1)?;
        let mut bloom = BloomFilter::new(count + BLOOM_HEADROOM, BLOOM_FP_RATE);
        store.for_each_seen(|fp| bloom.insert(fp))?;
        Ok(SeenSet::new(bloom, RecentSeen::new(RECENT_SEEN)))
    }

    /// Marks a fingerprint that is being written to the store; only the Bloom
    /// filter must know it (its invariant), the recent set is a cache.
    pub fn insert_persisted(&mut self, fp: u64) {
        self.bloom.insert(fp);
    }

    /// A claimed fingerprint whose seen mark was never written: the Bloom
    /// filter keeps it (a false positive the store settles), the recent set
    /// must not answer for it.
    pub fn forget(&mut self, fp: u64) {
        self.recent.remove(fp);
    }

    /// Whether `url` may have been claimed: the Bloom filter alone, so a
    /// "no" is certain and nothing is read.
    pub fn may_contain(&self, url: &str) -> bool {
        self.bloom.might_contain(url_fingerprint(url))
    }

    /// Bloom filter first (a "no" is certain), then the recent positives; only
    /// what is left asks the store, and a positive from there is cached.
    fn contains(&mut self, store: &Store, fp: u64, probe: BloomProbe) -> Result<bool, StoreError> {
        if !self.bloom.might_contain_at(probe) {
            return Ok(false);
        }
        if self.recent.contains(fp) {
            return Ok(true);
        }
        let seen = store.seen_contains(fp)?;
        if seen {
            self.recent.insert(fp);
        }
        Ok(seen)
    }

    /// For each URL, by its fingerprint, whether it was never seen; those
    /// are then marked seen. Nothing is marked when a lookup fails, so an
    /// error loses no URL.
    pub fn claim(&mut self, store: &Store, fingerprints: &[u64]) -> Result<Vec<bool>, StoreError> {
        let probes: Vec<(u64, BloomProbe)> = fingerprints
            .iter()
            .map(|&fp| (fp, self.bloom.probe(fp)))
            .collect();
        // Each check misses the cache twice: a Bloom block, a recent bucket.
        load_ahead(
            probes.iter().flat_map(|&(fp, probe)| {
                [self.bloom.touch(probe), u64::from(self.recent.touch(fp))]
            }),
        );
        let mut in_call =
            FingerprintSet::with_capacity_and_hasher(fingerprints.len(), Default::default());
        let mut answers = Vec::with_capacity(fingerprints.len());
        for (fp, probe) in probes {
            let new = in_call.insert(fp) && !self.contains(store, fp, probe)?;
            answers.push((fp, probe, new));
        }
        for &(fp, probe, new) in &answers {
            if new {
                self.bloom.insert_at(probe);
                self.recent.insert(fp);
            }
        }
        Ok(answers.into_iter().map(|(_, _, new)| new).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::store::CrawlBatch;

    #[test]
    fn a_bloom_false_positive_is_settled_by_the_store_and_positives_are_cached() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), 4 << 20).unwrap();
        let mut batch = CrawlBatch::default();
        batch.mark_seen("http://a.example/stored");
        store.apply(batch).unwrap();
        // A saturated filter says "maybe" to everything: the store decides.
        let mut bloom = BloomFilter::new(1, 0.5);
        for fp in 0..10_000 {
            bloom.insert(fp);
        }
        let mut seen = SeenSet::new(bloom, RecentSeen::new(16));
        let urls = ["http://a.example/stored", "http://a.example/new"].map(url_fingerprint);
        assert_eq!(seen.claim(&store, &urls).unwrap(), [false, true]);
        assert!(seen
            .recent
            .contains(url_fingerprint("http://a.example/stored")));
        assert_eq!(seen.claim(&store, &urls).unwrap(), [false, false]);
    }

    #[test]
    fn open_fills_the_bloom_filter_from_the_stored_marks() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), 4 << 20).unwrap();
        let mut batch = CrawlBatch::default();
        batch.mark_seen("http://a.example/1");
        store.apply(batch).unwrap();
        let mut seen = SeenSet::load(&store).unwrap();
        let fp = url_fingerprint("http://a.example/1");
        assert!(seen.bloom.might_contain(fp));
        assert!(!seen.recent.contains(fp), "the recent set starts empty");
    }

    #[test]
    fn parameters_in_another_order_are_seen_before_the_fetch() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), 4 << 20).unwrap();
        let mut seen = SeenSet::load(&store).unwrap();
        let urls = [
            "http://a.example/p?a=1&b=2",
            "http://a.example/p?b=2&a=1",
            "http://a.example/p?b=2&a=2",
        ]
        .map(url_fingerprint);
        assert_eq!(seen.claim(&store, &urls).unwrap(), [true, false, true]);
    }
}
