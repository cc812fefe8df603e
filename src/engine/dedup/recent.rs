//! Recently confirmed "seen" fingerprints, so a Bloom filter's positives
//! (most links on a page point to pages already seen) rarely need the
//! persistent set.
//!
//! A table of 16-way buckets, one cache line each, least recently used way
//! replaced. A way holds 32 bits of the fingerprint (a tag), so 8 MiB keep
//! 2^21 fingerprints: full 8-byte fingerprints in 4-way buckets kept 2^20,
//! and with the million-page bench's million URLs in it, 18 % of the seen
//! checks missed and read the store (docs/PERFORMANCE.md).
//!
//! A fingerprint is told apart by its bucket (its low bits) and its tag
//! (bits `TAG_SHIFT..TAG_SHIFT + 32`): 46 bits in a table of at least
//! 2^14 buckets, as the seen set's is from the start. So an unseen URL is taken
//! for a seen one only if the Bloom filter says "maybe" (at most about 1 %)
//! and one of the at most 2^21 kept fingerprints shares those 46 bits: about
//! 3 × 10^-10 a new URL, far below what a crawl of any size would meet.

/// Ways in a bucket: 16 tags of 4 bytes fill a 64-byte cache line.
const WAYS: usize = 16;
/// Buckets a new table starts with (1 MiB). The tag starts at this bucket
/// index's width, so growing splits a bucket by a bit the tags still hold.
const FIRST_BUCKETS_LOG2: u32 = 14;
const TAG_SHIFT: u32 = FIRST_BUCKETS_LOG2;
/// Marks a free way.
const FREE: u32 = 0;

#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Bucket([u32; WAYS]);

impl Bucket {
    const EMPTY: Bucket = Bucket([FREE; WAYS]);

    /// The way holding `tag`, if any (a compare the compiler vectorizes).
    fn way_of(&self, tag: u32) -> Option<usize> {
        let mut hits = 0u32;
        for (i, &way) in self.0.iter().enumerate() {
            hits |= u32::from(way == tag) << i;
        }
        (hits != 0).then(|| hits.trailing_zeros() as usize)
    }

    /// Ways are filled from the front: a bucket is full when its last is.
    fn is_full(&self) -> bool {
        self.0[WAYS - 1] != FREE
    }
}

/// The tag of `fp`: never the free mark (a zero tag is kept as 1, which
/// only makes two of its 2^32 values share a tag).
fn tag_of(fp: u64) -> u32 {
    ((fp >> TAG_SHIFT) as u32).max(1)
}

/// See the module's text. It starts small and doubles, up to its capacity,
/// when an insert would drop a fingerprint while at least half of it is in
/// use: a small crawl does not hold the whole capacity.
pub struct RecentSeen {
    buckets: Vec<Bucket>,
    kept: usize,
    max_buckets: usize,
}

impl RecentSeen {
    /// Room for at most `capacity` fingerprints (rounded down to a power of
    /// two buckets).
    pub fn new(capacity: usize) -> Self {
        let wanted = (capacity / WAYS).max(1);
        let max_buckets = 1usize << wanted.ilog2();
        let buckets = max_buckets.min(1 << FIRST_BUCKETS_LOG2);
        RecentSeen {
            buckets: vec![Bucket::EMPTY; buckets],
            kept: 0,
            max_buckets,
        }
    }

    fn index(&self, fp: u64) -> usize {
        fp as usize & (self.buckets.len() - 1)
    }

    fn bucket(&mut self, fp: u64) -> &mut Bucket {
        let index = self.index(fp);
        &mut self.buckets[index]
    }

    /// Reads a way of `fp`'s bucket, to bring it into the cache.
    pub fn touch(&self, fp: u64) -> u32 {
        self.buckets[self.index(fp)].0[0]
    }

    /// Whether `fp` is kept; a hit becomes its bucket's most recent.
    pub fn contains(&mut self, fp: u64) -> bool {
        let tag = tag_of(fp);
        let bucket = self.bucket(fp);
        let Some(i) = bucket.way_of(tag) else {
            return false;
        };
        bucket.0[..=i].rotate_right(1);
        true
    }

    pub fn remove(&mut self, fp: u64) {
        let tag = tag_of(fp);
        let bucket = self.bucket(fp);
        let Some(i) = bucket.way_of(tag) else {
            return;
        };
        bucket.0[i..].rotate_left(1);
        bucket.0[WAYS - 1] = FREE;
        self.kept -= 1;
    }

    /// Keeps `fp` as its bucket's most recent, dropping the least recent
    /// when its bucket is full and the table cannot grow.
    pub fn insert(&mut self, fp: u64) {
        let tag = tag_of(fp);
        let bucket = self.bucket(fp);
        let found = bucket.way_of(tag);
        let full = bucket.is_full();
        if found.is_none() && full && self.may_grow() {
            self.grow();
            return self.insert(fp);
        }
        let bucket = self.bucket(fp);
        bucket.0[..=found.unwrap_or(WAYS - 1)].rotate_right(1);
        bucket.0[0] = tag;
        if found.is_none() && !full {
            self.kept += 1;
        }
    }

    fn may_grow(&self) -> bool {
        self.buckets.len() < self.max_buckets && self.kept * 2 >= self.buckets.len() * WAYS
    }

    /// Doubles the buckets; each old bucket's tags split between the two it
    /// becomes by the fingerprint bit the new index adds (inside the tag,
    /// see `FIRST_BUCKETS_LOG2`), in the order they were.
    fn grow(&mut self) {
        let old_len = self.buckets.len();
        let split_bit = old_len.ilog2() - TAG_SHIFT;
        let old = std::mem::replace(&mut self.buckets, vec![Bucket::EMPTY; old_len * 2]);
        for (b, bucket) in old.iter().enumerate() {
            let mut filled = [0usize; 2];
            for &tag in bucket.0.iter().filter(|&&t| t != FREE) {
                let half = ((tag >> split_bit) & 1) as usize;
                self.buckets[b + half * old_len].0[filled[half]] = tag;
                filled[half] += 1;
            }
        }
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.buckets
            .iter()
            .flat_map(|b| b.0)
            .filter(|&t| t != FREE)
            .count()
    }

    #[cfg(test)]
    fn slots(&self) -> usize {
        self.buckets.len() * WAYS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fingerprint in bucket `bucket` (of a table that small) with tag `n`.
    fn fp(bucket: u64, n: u64) -> u64 {
        n << TAG_SHIFT | bucket
    }

    #[test]
    fn recent_set_is_bounded_and_keeps_what_is_used() {
        let mut recent = RecentSeen::new(100);
        recent.insert(fp(0, 7));
        for n in 1000..1200 {
            recent.insert(fp(n % 4, n));
            assert!(recent.contains(fp(0, 7)), "a fingerprint in use survives");
            assert!(recent.len() <= 100);
        }
        assert!(!recent.contains(fp(0, 1000)), "old unused ones are dropped");
        assert!(recent.contains(fp(1199 % 4, 1199)));
    }

    #[test]
    fn a_full_bucket_drops_its_least_recently_used_fingerprint() {
        // 8 buckets, all there from the start.
        let mut recent = RecentSeen::new(WAYS * 8);
        let first: Vec<u64> = (1..=WAYS as u64).map(|n| fp(3, n)).collect();
        for &f in &first {
            recent.insert(f);
        }
        assert!(recent.contains(first[0]), "now the most recent");
        recent.insert(fp(3, 100));
        assert!(!recent.contains(first[1]), "the least recent is dropped");
        assert!(recent.contains(first[0]) && recent.contains(fp(3, 100)));
        assert!(first[2..].iter().all(|&f| recent.contains(f)));
        recent.remove(first[5]);
        assert!(!recent.contains(first[5]));
        recent.insert(fp(3, 101));
        assert!(
            recent.contains(first[0]) && recent.contains(fp(3, 100)),
            "a removed fingerprint's way is taken first"
        );
        assert_eq!(recent.len(), WAYS);
        assert!(!recent.contains(fp(4, 100)), "another bucket, same tag");
    }

    #[test]
    fn a_zero_tag_is_kept_too() {
        let mut recent = RecentSeen::new(WAYS * 8);
        recent.insert(fp(2, 0));
        assert!(recent.contains(fp(2, 0)));
        recent.remove(fp(2, 0));
        assert!(!recent.contains(fp(2, 0)));
        assert_eq!(recent.len(), 0);
    }

    #[test]
    fn the_table_grows_with_what_it_keeps_up_to_its_capacity() {
        let capacity = 1 << 21;
        let mut recent = RecentSeen::new(capacity);
        let first = recent.slots();
        assert!(first < capacity, "a new table is small");
        let spread = |i: u64| i.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let n = 600_000u64;
        for i in 1..=n {
            recent.insert(spread(i));
        }
        assert!(recent.slots() > first, "it grew");
        assert!(
            recent.slots() <= 4 * n as usize,
            "to about twice what it keeps"
        );
        // Growing split every bucket by a bit of the tags: all are found.
        let kept = (1..=n).filter(|&i| recent.contains(spread(i))).count();
        assert!(kept as u64 >= n * 99 / 100, "it keeps nearly all: {kept}");
        let absent = (n + 1..=2 * n)
            .filter(|&i| recent.contains(spread(i)))
            .count();
        assert_eq!(absent, 0, "46 bits tell these apart");
        for i in 2 * n..2 * n + 4 * capacity as u64 {
            recent.insert(spread(i));
        }
        assert_eq!(recent.slots(), capacity, "never past its capacity");
        assert_eq!(recent.len(), capacity);
    }
}
