//! The content measure behind near-duplicate groups, trap alerts and
//! soft-404 probes: a 64-bit simhash (Charikar; Manku et al. 2007) over the
//! word 3-gram shingles of a page's distinctive text.
//!
//! What a host's pages share says nothing about a page, so it is left out
//! before fingerprinting, in two steps:
//! - markup: text inside navigation landmarks (`<nav>`, `<header>`,
//!   `<footer>`, `<aside>`, ARIA navigation roles, the usual sidebar and
//!   navigation classes) is boilerplate;
//! - frequency: text blocks (the text between block-level tags) that recur on
//!   [`TEMPLATE_MIN_PAGES`] or more of the host's pages are its template
//!   (navigation, repeated headings, the same method docs on every type
//!   page), in the spirit of Bar-Yossef & Rajagopalan's template detection.
//!
//! A page whose distinctive text is under a tenth of its main text is
//! fingerprinted by its main text: copies of one page that differ in a date
//! or a counter (a trap's output, soon all "template") stay near duplicates
//! of one another, as do pages that are nothing but the template.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::sync::Mutex;

use crate::engine::dedup::{mix, FingerprintHasher, Votes};
#[cfg(not(target_arch = "x86_64"))]
use crate::engine::page_facts;
use crate::engine::recent_hosts::RecentHosts;

/// Pages a block must be counted on to be template.
pub const TEMPLATE_MIN_PAGES: u16 = 5;
/// Distinctive text under 1/`MIN_DISTINCT_SHARE` of the main text is too
/// little to tell a page by.
const MIN_DISTINCT_SHARE: usize = 10;
/// Blocks remembered per host; the rarest are forgotten past this, or past
/// the host's share of [`BLOCKS`] when many hosts are being crawled. 7/8 of
/// 2048: the most a table of 2048 slots holds (26 KB).
const BLOCKS_PER_HOST: usize = 1792;
/// Blocks remembered over all hosts: the templates' memory, 4–7 MB.
const BLOCKS: usize = 1 << 18;
/// Hosts whose template is remembered (`RecentHosts`): each keeps at least
/// 128 blocks, room for a template.
const HOSTS: usize = BLOCKS / 128;
/// Shingles kept per page: bounded work and memory on any page.
const MAX_SHINGLES: usize = 16_384;

/// A page's text as the measure sees it: shingle hashes in document order,
/// cut into blocks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TextFeatures {
    shingles: Vec<u64>,
    blocks: Vec<Block>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Block {
    /// Hash of the block's words, in order.
    hash: u64,
    /// End of its shingles in `shingles`.
    end: u32,
    /// Inside navigation markup.
    boilerplate: bool,
}

impl TextFeatures {
    /// The blocks with their shingles.
    fn blocks(&self) -> impl Iterator<Item = (&Block, &[u64])> {
        let mut start = 0usize;
        self.blocks.iter().map(move |b| {
            let end = b.end as usize;
            let shingles = &self.shingles[start..end];
            start = end;
            (b, shingles)
        })
    }

    /// Whether the page had any text.
    pub fn is_empty(&self) -> bool {
        self.shingles.is_empty()
    }

    /// The set of shingles outside navigation markup (for exact comparisons).
    #[cfg(test)]
    pub fn main_shingles(&self) -> std::collections::HashSet<u64> {
        self.blocks()
            .filter(|(b, _)| !b.boilerplate)
            .flat_map(|(_, s)| s.iter().copied())
            .collect()
    }
}

/// Builds [`TextFeatures`] from text fed in runs, in one pass with no
/// allocation per word: words are letters and digits (ASCII case-folded,
/// bytes of multi-byte characters are word bytes).
#[derive(Default)]
pub struct FeatureBuilder {
    features: TextFeatures,
    // The byte loop's word so far (on x86-64 a run's words are read whole,
    // `words.rs`): its bytes are packed eight to a u64; longer words fold
    // each full u64 into `folded`. Word bytes are never zero, so packing is
    // injective.
    packed: u64,
    folded: u64,
    len: u32,
    /// The current block's last two words and its word count.
    previous: [u64; 2],
    words: u32,
    block_hash: u64,
    boilerplate: bool,
}

impl FeatureBuilder {
    /// Feeds one run of text that markup ends, so its last word ends with
    /// it. Returns the run's whitespace-separated words as the page facts
    /// count them ([`crate::engine::page_facts::count_words`]; `in_token`:
    /// whether the text before ended inside one), counted in the same pass
    /// over the bytes.
    pub fn feed_run(&mut self, run: &[u8], in_token: &mut bool) -> u32 {
        #[cfg(target_arch = "x86_64")]
        {
            words::for_each_word(run, in_token, |value| self.push_word(value))
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            self.feed_bytes(run);
            self.break_word();
            page_facts::count_words(run, in_token)
        }
    }

    /// Feeds text a byte at a time; a word at its end goes on into the next.
    #[cfg(any(test, not(target_arch = "x86_64")))]
    fn feed_bytes(&mut self, bytes: &[u8]) {
        // The word in locals: kept in registers across the bytes of a run.
        let (mut packed, mut folded, mut len) = (self.packed, self.folded, self.len);
        for &byte in bytes {
            let class = WORD_BYTES[usize::from(byte)];
            if class != 0 {
                packed = (packed << 8) | u64::from(class);
                len += 1;
                if len % 8 == 0 {
                    folded = fold_eight(folded, packed);
                    packed = 0;
                }
            } else if len != 0 {
                (self.packed, self.folded, self.len) = (packed, folded, len);
                self.break_word();
                (packed, folded, len) = (0, 0, 0);
            }
        }
        (self.packed, self.folded, self.len) = (packed, folded, len);
    }

    /// Ends the current word, if any.
    fn break_word(&mut self) {
        if self.len == 0 {
            return;
        }
        let value = self.folded ^ self.packed;
        (self.packed, self.folded, self.len) = (0, 0, 0);
        self.push_word(value);
    }

    /// A whole word, by its value: the block's hash and shingles take it.
    fn push_word(&mut self, value: u64) {
        let word = mix(value);
        self.words += 1;
        self.block_hash =
            (self.block_hash.rotate_left(17) ^ word).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        if self.words >= 3 {
            let [a, b] = self.previous;
            self.push_shingle(shingle(a, b, word));
        }
        self.previous = [self.previous[1], word];
    }

    /// Ends the current block (a block-level tag): shingles never span two.
    pub fn end_block(&mut self) {
        self.break_word();
        if self.words == 0 {
            return;
        }
        if self.words < 3 {
            // A heading or a short item is one shingle of its own.
            self.push_shingle(mix(self.block_hash));
        }
        if self.features.shingles.len() <= MAX_SHINGLES {
            self.features.blocks.push(Block {
                hash: self.block_hash,
                end: self.features.shingles.len() as u32,
                boilerplate: self.boilerplate,
            });
        }
        self.words = 0;
        self.block_hash = 0;
        self.previous = [0; 2];
    }

    /// Text from here on is (or is not) inside navigation markup.
    pub fn set_boilerplate(&mut self, boilerplate: bool) {
        if boilerplate != self.boilerplate {
            self.end_block();
            self.boilerplate = boilerplate;
        }
    }

    fn push_shingle(&mut self, hash: u64) {
        if self.features.shingles.len() < MAX_SHINGLES {
            self.features.shingles.push(hash);
        }
    }

    /// A builder for a page of `bytes` bytes: room for its shingles at once.
    pub fn for_page(bytes: usize) -> Self {
        let mut builder = FeatureBuilder::default();
        builder.features.shingles = Vec::with_capacity((bytes / 8).min(MAX_SHINGLES));
        builder
    }

    pub fn finish(mut self) -> TextFeatures {
        self.end_block();
        self.features
    }
}

/// Each byte's value inside a word (ASCII folded to lower case), 0 outside
/// one: the byte loop's classes, which `words.rs` computes on x86-64.
#[cfg(any(test, not(target_arch = "x86_64")))]
static WORD_BYTES: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let byte = b as u8;
        table[b] = if byte >= 0x80 || byte.is_ascii_digit() || byte.is_ascii_lowercase() {
            byte
        } else if byte.is_ascii_uppercase() {
            byte.to_ascii_lowercase()
        } else {
            0
        };
        b += 1;
    }
    table
};

/// Folds a full eight bytes of a word into the word's value so far.
fn fold_eight(folded: u64, packed: u64) -> u64 {
    (folded ^ packed)
        .wrapping_mul(0x517c_c1b7_2722_0a95)
        .rotate_left(29)
}

/// One hash for three consecutive words (order matters). The words' hashes
/// are mixed already; one multiply keeps shingles sharing words unrelated.
fn shingle(a: u64, b: u64, c: u64) -> u64 {
    let h = (a.rotate_left(21) ^ b.rotate_left(42) ^ c).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    h ^ (h >> 29)
}

/// What one host's pages have shown so far, per block hash.
#[derive(Default)]
struct HostTemplate {
    /// By block hash, folded to 32 bits (already mixed: not hashed again;
    /// keys a page crafts to collide cost at most a scan of
    /// [`BLOCKS_PER_HOST`] entries).
    blocks: HashMap<u32, Seen, BuildHasherDefault<FingerprintHasher>>,
    /// Pages learnt from: the host's clock for `Seen::born`.
    pages: u32,
}

/// A block as the host's pages showed it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Seen {
    /// Pages it was seen on.
    pages: u16,
    /// The host's page count when it became template (0: not yet).
    born: u32,
}

impl Seen {
    fn is_template(self) -> bool {
        self.pages >= TEMPLATE_MIN_PAGES
    }
}

impl HostTemplate {
    /// Learns the page's blocks, keeping at most `budget`; returns how each
    /// was seen.
    fn learn(&mut self, features: &TextFeatures, learn: bool, budget: usize) -> Vec<Seen> {
        let key = |b: &Block| (b.hash >> 32) as u32 ^ b.hash as u32;
        if learn {
            let mut keys: Vec<u32> = features
                .blocks
                .iter()
                .filter(|b| !b.boilerplate)
                .map(key)
                .collect();
            keys.sort_unstable();
            keys.dedup();
            if self.blocks.len() + keys.len() > budget {
                self.forget_rarest(budget);
            }
            self.pages = self.pages.saturating_add(1);
            for k in keys {
                let seen = self.blocks.entry(k).or_default();
                seen.pages = seen.pages.saturating_add(1);
                if seen.pages == TEMPLATE_MIN_PAGES {
                    seen.born = self.pages;
                }
            }
        }
        features
            .blocks
            .iter()
            .map(|b| self.blocks.get(&key(b)).copied().unwrap_or_default())
            .collect()
    }

    /// Frees at least half of `budget`, keeping the most counted blocks.
    fn forget_rarest(&mut self, budget: usize) {
        let mut floor: u16 = TEMPLATE_MIN_PAGES;
        while self.blocks.len() > budget / 2 {
            self.blocks.retain(|_, seen| seen.pages >= floor);
            floor = match floor.checked_mul(2) {
                Some(f) => f,
                None => {
                    self.blocks.clear();
                    break;
                }
            };
        }
        // A share cut since the host grew gives its memory back too.
        self.blocks.shrink_to(budget);
    }
}

/// The templates of the hosts being crawled, shared by the extraction
/// threads: bounded by blocks, shared out among the hosts.
pub struct Templates {
    hosts: Mutex<RecentHosts<HostTemplate>>,
}

impl Default for Templates {
    fn default() -> Self {
        Templates {
            hosts: Mutex::new(RecentHosts::new(HOSTS)),
        }
    }
}

impl Templates {
    /// A fetched page's fingerprint; its blocks teach the host's template.
    pub fn fingerprint_page(&self, host: &str, features: &TextFeatures) -> Fingerprint {
        self.fingerprint(host, features, true)
    }

    /// A fingerprint to compare with the host's pages (a soft-404 probe's),
    /// learning nothing from it.
    pub fn fingerprint_probe(&self, host: &str, features: &TextFeatures) -> u64 {
        self.fingerprint(host, features, false).simhash
    }

    fn fingerprint(&self, host: &str, features: &TextFeatures, learn: bool) -> Fingerprint {
        if features.is_empty() {
            return Fingerprint::default();
        }
        let template = {
            let mut hosts = self.hosts.lock().unwrap_or_else(|p| p.into_inner());
            let budget = hosts.share(BLOCKS, BLOCKS_PER_HOST);
            hosts.get(host).learn(features, learn, budget)
        };
        fingerprint_with(features, &template)
    }
}

/// A page's content fingerprint: the simhash the crawl compares pages by,
/// a second one of the same shingles under another hash, which a
/// near-duplicate listing checks a pair against, and the same two over the
/// page's whole main text, template included.
///
/// Why a second hash: a 64-bit simhash of a short text is a noisy estimate,
/// and on a site of 20,000 short, similar pages (API entries sharing a
/// sentence) hundreds of unrelated pairs land within the few bits that mark
/// near duplicates by chance. Both within reach at once is about as likely
/// as one 128-bit simhash within twice the bits, which halves the spread of
/// the estimate: chance pairs become rare, true copies stay.
///
/// Why the whole text: leaving the template out keeps pages that share only
/// the site's frame apart, but it also leaves out the template blocks in
/// which two pages differ. One function documented for two architectures
/// has the same distinctive sentence on both pages and different notes,
/// each repeated on hundreds of pages of its own architecture: the same by
/// distinctive text, half the same as pages. A listing of near duplicates
/// wants both: near in what is their own, and near as a whole.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Fingerprint {
    pub simhash: u64,
    pub check: u64,
    /// `simhash` and `check` of the main text (all but the navigation markup).
    pub whole: [u64; 2],
}

/// The second hash of a shingle (the splitmix64 finaliser): bits
/// independent of the shingle's own.
fn check_hash(shingle: u64) -> u64 {
    let mut z = shingle.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The simhash of the page's distinctive shingles: neither boilerplate nor
/// template. When they are too few (a trap's copies, whose shared text
/// becomes template too), the template blocks that became template late in
/// the host's crawl, as the page's own did, with what is left: the site's
/// menu, template long before, stays out, so the copies keep one
/// fingerprint however many there are. Failing all that, all of the text.
fn fingerprint_with(features: &TextFeatures, seen: &[Seen]) -> Fingerprint {
    let seen = |i: usize| seen.get(i).copied().unwrap_or_default();
    let (mut main, mut distinct, mut youngest) = (0usize, 0usize, 0u32);
    for (i, (block, shingles)) in features.blocks().enumerate() {
        if block.boilerplate {
            continue;
        }
        main += shingles.len();
        if seen(i).is_template() {
            youngest = youngest.max(seen(i).born);
        } else {
            distinct += shingles.len();
        }
    }
    let keep: &dyn Fn(&Block, usize) -> bool =
        if distinct * MIN_DISTINCT_SHARE >= main && distinct > 0 {
            &|b, i| !b.boilerplate && !seen(i).is_template()
        } else if main > 0 {
            &|b, i| {
                let s = seen(i);
                !b.boilerplate && (!s.is_template() || s.born.saturating_mul(2) >= youngest)
            }
        } else {
            &|_, _| true
        };
    // Kept blocks vote for both fingerprints, the rest of the main text
    // for the whole one only: each shingle is hashed once.
    let mut kept = [Votes::default(), Votes::default()];
    let mut rest = [Votes::default(), Votes::default()];
    VOTED.with(|voted| {
        let mut voted = voted.borrow_mut();
        voted.fill(0);
        for (i, (block, shingles)) in features.blocks().enumerate() {
            let votes = match (keep(block, i), block.boilerplate) {
                (true, _) => &mut kept,
                (false, false) => &mut rest,
                (false, true) => continue,
            };
            for &s in shingles {
                // A set, not a multiset: one shingle repeated hundreds of
                // times (a permalink sign, a prompt) would otherwise decide
                // every bit.
                let bit = (s >> 40) as usize % VOTED_BITS;
                let (word, mask) = (bit / 64, 1u64 << (bit % 64));
                if voted[word] & mask == 0 {
                    voted[word] |= mask;
                    votes[0].add(s);
                    votes[1].add(check_hash(s));
                }
            }
        }
    });
    let [votes, check] = kept;
    let [rest_votes, rest_check] = rest;
    Fingerprint {
        whole: [
            votes.clone().plus(rest_votes).hash(),
            check.clone().plus(rest_check).hash(),
        ],
        simhash: votes.hash(),
        check: check.hash(),
    }
}

thread_local! {
    /// The shingles that voted, per extraction thread (reused, not allocated per page).
    static VOTED: std::cell::RefCell<Vec<u64>> = std::cell::RefCell::new(vec![0; VOTED_BITS / 64]);
}

/// Bits of the filter that lets each shingle vote once: a few percent of a
/// long page's distinct shingles collide and are skipped, alike on its copies.
const VOTED_BITS: usize = 1 << 16;

/// A fingerprint with no host template (markup boilerplate still left out).
#[cfg(test)]
pub fn fingerprint_alone(features: &TextFeatures) -> u64 {
    fingerprint_with(features, &[]).simhash
}

/// Features of plain text, one block per line.
#[cfg(test)]
pub fn features_of_text(text: &str) -> TextFeatures {
    let mut builder = FeatureBuilder::default();
    for line in text.lines() {
        builder.feed_run(line.as_bytes(), &mut false);
        builder.end_block();
    }
    builder.finish()
}

#[cfg(target_arch = "x86_64")]
mod words;

#[cfg(test)]
mod tests;
