//! Duplicate detection primitives: URL fingerprints, an in-memory Bloom filter
//! in front of the persistent seen set, content digests and simhash.

use sha1::{Digest, Sha1};
use xxhash_rust::xxh3::{xxh3_64, xxh3_64_with_seed};

mod recent;
pub use recent::RecentSeen;

/// xxh3_64 of the normalized URL string; stable across runs and platforms.
/// Query parameters count in name order, so `?b=2&a=1` is seen as
/// `?a=1&b=2` and not fetched twice; the URL itself is fetched as found.
pub fn url_fingerprint(url: &str) -> u64 {
    match sorted_query(url) {
        Some(key) => xxh3_64(key.as_bytes()),
        None => xxh3_64(url.as_bytes()),
    }
}

/// The URL with its query parameters stably sorted by name, or `None` if
/// they already are (the common case: no allocation, and the fingerprints
/// stored by earlier versions stay valid). Values of one name keep their
/// order, since `?id=2&id=1` may be an ordered list.
pub(crate) fn sorted_query(url: &str) -> Option<String> {
    let (head, query) = url.split_once('?')?;
    if !query.contains('&') {
        return None;
    }
    fn name<'a>(param: &&'a str) -> &'a str {
        param.split_once('=').map_or(*param, |(n, _)| n)
    }
    // Checked before collecting: this runs on every link of every page.
    if query.split('&').is_sorted_by_key(|p| name(&p)) {
        return None;
    }
    let mut params: Vec<&str> = query.split('&').collect();
    params.sort_by_key(name);
    Some(format!("{head}?{}", params.join("&")))
}

/// A fixed-size, blocked Bloom filter over 64-bit fingerprints: all k bits
/// of a fingerprint lie in one 64-byte block, so a lookup costs one cache
/// miss, not k, and no division. Blocking raises the false-positive rate a
/// little; the filter is a quarter larger than a plain one to make up for it.
#[derive(Debug, Clone)]
pub struct BloomFilter {
    blocks: Vec<Block>,
    hashes: u32,
}

/// One cache line of bits.
#[derive(Debug, Clone, Copy, Default)]
#[repr(align(64))]
struct Block([u64; 8]);

const BLOCK_BITS: u64 = 512;

/// Reads `words` (one from each cache line a batch is about to use) in
/// independent loads, so their cache misses overlap instead of coming one
/// after another as the batch is worked through.
pub(crate) fn load_ahead(words: impl Iterator<Item = u64>) {
    std::hint::black_box(words.fold(0, |acc, word| acc ^ word));
}

/// A fingerprint's place in one [`BloomFilter`] (its block and double
/// hash), worked out once and then touched, tested or set.
#[derive(Debug, Clone, Copy)]
pub struct BloomProbe {
    block: usize,
    h1: u64,
    h2: u64,
}

impl BloomFilter {
    /// Sized for `expected` items at false-positive rate `fp_rate` (clamped to a sane range).
    pub fn new(expected: usize, fp_rate: f64) -> Self {
        let n = expected.max(1) as f64;
        let p = if fp_rate.is_finite() {
            fp_rate.clamp(1e-9, 0.5)
        } else {
            0.01
        };
        let ln2 = std::f64::consts::LN_2;
        let plain_bits = (-(n * p.ln()) / (ln2 * ln2)).ceil();
        let k = ((plain_bits / n) * ln2).round().clamp(1.0, 30.0) as u32;
        let blocks = (plain_bits * 1.25 / BLOCK_BITS as f64).ceil().max(1.0) as usize;
        BloomFilter {
            blocks: vec![Block::default(); blocks],
            hashes: k,
        }
    }

    /// Where `fp`'s bits lie: its block and its double hash.
    pub fn probe(&self, fp: u64) -> BloomProbe {
        // Re-mix so that fingerprints with structured low bits still spread.
        let mixed = xxh3_64_with_seed(&fp.to_le_bytes(), 0x9E37_79B9);
        BloomProbe {
            block: (((mixed >> 32) * self.blocks.len() as u64) >> 32) as usize,
            h1: mixed & 0xFFFF,
            h2: ((mixed >> 16) & 0xFFFF) | 1,
        }
    }

    /// The k bit positions of a probe in its block.
    fn bits(&self, probe: BloomProbe) -> impl Iterator<Item = u64> {
        (0..u64::from(self.hashes))
            .map(move |i| probe.h1.wrapping_add(i.wrapping_mul(probe.h2)) % BLOCK_BITS)
    }

    pub fn insert(&mut self, fp: u64) {
        self.insert_at(self.probe(fp));
    }

    pub fn insert_at(&mut self, probe: BloomProbe) {
        for bit in self.bits(probe) {
            self.blocks[probe.block].0[(bit / 64) as usize] |= 1 << (bit % 64);
        }
    }

    /// Reads a word of the probe's block, to bring it into the cache.
    pub fn touch(&self, probe: BloomProbe) -> u64 {
        self.blocks[probe.block].0[0]
    }

    pub fn might_contain(&self, fp: u64) -> bool {
        self.might_contain_at(self.probe(fp))
    }

    pub fn might_contain_at(&self, probe: BloomProbe) -> bool {
        let words = &self.blocks[probe.block].0;
        self.bits(probe)
            .all(|bit| words[(bit / 64) as usize] & (1 << (bit % 64)) != 0)
    }

    #[cfg(test)]
    pub fn memory_bytes(&self) -> usize {
        self.blocks.len() * std::mem::size_of::<Block>()
    }

    /// Number of hash functions in use.
    #[cfg(test)]
    pub fn hash_count(&self) -> u32 {
        self.hashes
    }
}

/// SHA-1 of a response body, as WARC's payload digest and for exact duplicates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ContentDigest(pub [u8; 20]);

impl ContentDigest {
    pub fn of(body: &[u8]) -> Self {
        ContentDigest(Sha1::digest(body).into())
    }

    /// `sha1:` followed by the RFC 4648 base32 digest, as WARC tools expect.
    pub fn warc_label(&self) -> String {
        format!("sha1:{}", data_encoding::BASE32.encode(&self.0))
    }
}

/// 64-bit simhash: every token occurrence votes on every bit.
#[cfg(test)]
pub fn simhash<'a>(tokens: impl Iterator<Item = &'a str>) -> u64 {
    let mut votes = Votes::default();
    for token in tokens.filter(|t| !t.is_empty()) {
        votes.add(xxh3_64(token.as_bytes()));
    }
    votes.hash()
}

/// Spreads a word hash over all 64 bits (MurmurHash3's finalizer).
pub(crate) fn mix(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// Per-bit votes of token hashes: a bit is set in the simhash when more than
/// half the hashes have it. Ones are counted in counters packed into words,
/// with shifts, masks and adds only: nibble lane `k` counts bits `4j + k` of
/// the hash in its nibble `j` (four adds per hash); every [`NIBBLE_MAX`]
/// hashes the nibbles are spilled into byte lanes (lane `m` counts bits
/// `8j + m` in its byte `j`), and those into `ones` before they overflow.
#[derive(Clone)]
pub(crate) struct Votes {
    nibbles: [u64; 4],
    /// Hashes added to `nibbles` since they were last spilled.
    in_nibbles: u32,
    bytes: [u64; 8],
    /// Spills into `bytes` since they were last emptied.
    spills: u32,
    ones: [u32; 64],
    total: u32,
}

impl Default for Votes {
    fn default() -> Self {
        Votes {
            nibbles: [0; 4],
            in_nibbles: 0,
            bytes: [0; 8],
            spills: 0,
            ones: [0; 64],
            total: 0,
        }
    }
}

/// Hashes a nibble counts before it is spilled.
const NIBBLE_MAX: u32 = 15;
/// Spills a byte takes before it is emptied (17 × 15 = 255).
const SPILLS_MAX: u32 = 255 / NIBBLE_MAX;
const LOW_BIT_OF_NIBBLES: u64 = 0x1111_1111_1111_1111;
const LOW_NIBBLE_OF_BYTES: u64 = 0x0f0f_0f0f_0f0f_0f0f;

impl Votes {
    pub(crate) fn add(&mut self, hash: u64) {
        if self.total == u32::from(u16::MAX) {
            return;
        }
        self.total += 1;
        for (k, lane) in self.nibbles.iter_mut().enumerate() {
            *lane += (hash >> k) & LOW_BIT_OF_NIBBLES;
        }
        self.in_nibbles += 1;
        if self.in_nibbles == NIBBLE_MAX {
            self.spill_nibbles();
        }
    }

    fn spill_nibbles(&mut self) {
        for (k, lane) in self.nibbles.iter_mut().enumerate() {
            // Even nibbles hold bits 8j + k, odd ones bits 8j + 4 + k.
            self.bytes[k] += *lane & LOW_NIBBLE_OF_BYTES;
            self.bytes[k + 4] += (*lane >> 4) & LOW_NIBBLE_OF_BYTES;
            *lane = 0;
        }
        self.in_nibbles = 0;
        self.spills += 1;
        if self.spills == SPILLS_MAX {
            self.empty_bytes();
        }
    }

    fn empty_bytes(&mut self) {
        for (m, lane) in self.bytes.iter_mut().enumerate() {
            for j in 0..8 {
                self.ones[8 * j + m] += ((*lane >> (8 * j)) & 0xff) as u32;
            }
            *lane = 0;
        }
        self.spills = 0;
    }

    /// Everything counted so far into `ones`.
    fn empty_lanes(&mut self) {
        self.spill_nibbles();
        self.empty_bytes();
    }

    /// The votes of both sets of hashes (a simhash is a sum of votes, so a
    /// larger text's is its parts' added up, each counted once).
    pub(crate) fn plus(mut self, mut other: Votes) -> Votes {
        self.empty_lanes();
        other.empty_lanes();
        for (mine, theirs) in self.ones.iter_mut().zip(other.ones) {
            *mine += theirs;
        }
        self.total += other.total;
        self
    }

    pub(crate) fn hash(mut self) -> u64 {
        self.empty_lanes();
        self.ones
            .iter()
            .enumerate()
            .fold(0u64, |hash, (bit, &ones)| {
                if 2 * ones > self.total {
                    hash | (1 << bit)
                } else {
                    hash
                }
            })
    }
}

#[cfg(test)]
pub fn hamming(a: u64, b: u64) -> u32 {
    (a ^ b).count_ones()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn votes_count_every_bit_as_64_plain_counters_do() {
        for count in [
            0usize, 1, 2, 14, 15, 16, 254, 255, 256, 1_000, 4_096, 70_000,
        ] {
            let mut votes = Votes::default();
            let mut plain = [0u32; 64];
            let mut total = 0u32;
            for i in 0..count {
                // Skewed, and bit 40 always set: lanes fill at different rates, one at full speed.
                let hash = xxh3_64(&i.to_le_bytes()) | (i as u64 % 3) | 1 << 40;
                votes.add(hash);
                if total < u32::from(u16::MAX) {
                    total += 1;
                    for (bit, ones) in plain.iter_mut().enumerate() {
                        *ones += ((hash >> bit) & 1) as u32;
                    }
                }
            }
            let expected = (0..64).fold(0u64, |h, bit| {
                if 2 * plain[bit] > total {
                    h | (1 << bit)
                } else {
                    h
                }
            });
            assert_eq!(votes.hash(), expected, "{count} hashes");
        }
    }

    #[test]
    fn fingerprint_is_stable_and_distinguishes() {
        // xxh3_64 is a fixed algorithm: the value must never change between releases.
        assert_eq!(url_fingerprint(""), 0x2D06_8005_38D3_94C2);
        assert_ne!(
            url_fingerprint("http://a.example/"),
            url_fingerprint("http://b.example/")
        );
    }

    #[test]
    fn query_parameter_order_does_not_change_the_fingerprint() {
        let fp = url_fingerprint;
        assert_eq!(
            fp("http://a.example/?b=2&a=1"),
            fp("http://a.example/?a=1&b=2")
        );
        assert_eq!(
            fp("http://a.example/?c&b=2&a"),
            fp("http://a.example/?a&b=2&c")
        );
        // A sorted query keeps the fingerprint of its own text (stored marks stay valid).
        assert_eq!(
            fp("http://a.example/?a=1&b=2"),
            xxh3_64(b"http://a.example/?a=1&b=2")
        );
        // Values of one name keep their order: `?id=1&id=2` may be a list.
        assert_ne!(
            fp("http://a.example/?id=2&id=1"),
            fp("http://a.example/?id=1&id=2")
        );
        assert_ne!(
            fp("http://a.example/?a=1&b=2"),
            fp("http://a.example/?a=2&b=1")
        );
    }

    #[test]
    fn bloom_has_no_false_negatives_and_near_target_fp_rate() {
        let n = 100_000;
        let mut bloom = BloomFilter::new(n, 0.01);
        for i in 0..n {
            bloom.insert(url_fingerprint(&format!("http://h.example/page/{i}")));
        }
        for i in 0..n {
            assert!(bloom.might_contain(url_fingerprint(&format!("http://h.example/page/{i}"))));
        }
        let probes = 100_000;
        let false_positives = (0..probes)
            .filter(|i| bloom.might_contain(url_fingerprint(&format!("http://other.example/{i}"))))
            .count();
        let rate = false_positives as f64 / probes as f64;
        assert!(rate < 0.02, "false-positive rate {rate} too far above 0.01");
        assert!(
            rate > 0.002,
            "false-positive rate {rate} suspiciously low for the size"
        );
        // ~9.6 bits per item at 1 %.
        assert!(bloom.memory_bytes() < n * 2);
        assert_eq!(bloom.hash_count(), 7);
    }

    #[test]
    fn bloom_survives_degenerate_parameters() {
        let mut bloom = BloomFilter::new(0, f64::NAN);
        bloom.insert(1);
        assert!(bloom.might_contain(1));
        let mut tiny = BloomFilter::new(10, 0.9);
        tiny.insert(42);
        assert!(tiny.might_contain(42));
    }

    #[test]
    fn content_digest_matches_known_sha1_and_base32() {
        let digest = ContentDigest::of(b"abc");
        assert_eq!(
            digest.0,
            [
                0xa9, 0x99, 0x3e, 0x36, 0x47, 0x06, 0x81, 0x6a, 0xba, 0x3e, 0x25, 0x71, 0x78, 0x50,
                0xc2, 0x6c, 0x9c, 0xd0, 0xd8, 0x9d
            ]
        );
        assert_eq!(digest.warc_label(), "sha1:VGMT4NSHA2AWVOR6EVYXQUGCNSONBWE5");
    }

    fn words(text: &str) -> impl Iterator<Item = &str> {
        text.split_whitespace()
    }

    #[test]
    fn simhash_near_duplicates_are_close_and_unrelated_texts_far() {
        let base: String = (0..300)
            .map(|i| format!("word{} ", i % 120))
            .collect::<String>()
            + "the quick brown fox jumps over the lazy dog calendar page for march";
        let near = base.replace("march", "april");
        let unrelated: String = (0..300).map(|i| format!("other{} ", i * 7)).collect();
        let a = simhash(words(&base));
        let b = simhash(words(&near));
        let c = simhash(words(&unrelated));
        assert!(
            hamming(a, b) <= 6,
            "near duplicates differ in {} bits",
            hamming(a, b)
        );
        assert!(
            hamming(a, c) >= 16,
            "unrelated texts differ in only {} bits",
            hamming(a, c)
        );
        assert_eq!(simhash(words(&base)), a);
        assert_eq!(simhash(std::iter::empty()), 0);
    }

    #[test]
    fn hamming_counts_differing_bits() {
        assert_eq!(hamming(0, 0), 0);
        assert_eq!(hamming(0, u64::MAX), 64);
        assert_eq!(hamming(0b1010, 0b0110), 2);
    }
}

/// Fingerprints are already well-mixed hashes; hashing them again is waste.
#[derive(Default, Clone, Copy)]
pub struct FingerprintHasher(u64);

impl std::hash::Hasher for FingerprintHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }

    /// A 32-bit hash in both halves: the table picks buckets by the low bits
    /// and tells keys apart by the top seven.
    fn write_u32(&mut self, n: u32) {
        self.0 = u64::from(n) << 32 | u64::from(n);
    }
}

/// A set of fingerprints, not hashed again.
pub(crate) type FingerprintSet =
    std::collections::HashSet<u64, std::hash::BuildHasherDefault<FingerprintHasher>>;

/// A map keyed by fingerprints, not hashed again.
pub(crate) type FingerprintMap<V> =
    std::collections::HashMap<u64, V, std::hash::BuildHasherDefault<FingerprintHasher>>;
