//! The words of a run of text found sixteen bytes at a time (x86-64).
//!
//! A loop branching on each byte's class mispredicts at most words' start
//! and end, page after page. Here each 64-byte block's word bytes become a
//! bit mask (four SSE2 compares, part of every x86-64 CPU), the loop visits
//! the mask's edges, and each word's value is read from its bytes eight at
//! a time: the same value the byte loop in `FeatureBuilder` builds, which a
//! test holds it to.

use super::fold_eight;
use std::arch::x86_64::{
    __m128i, _mm_add_epi8, _mm_cmplt_epi8, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    _mm_set_epi64x,
};

/// Each byte's 0x80 bit.
const HIGH: u64 = 0x8080_8080_8080_8080;

/// Bit `j` set when `chunk[j]` is a word byte: a letter, a digit, or a
/// byte of a multi-byte character (as `dedup::WORD_BYTES`).
#[target_feature(enable = "sse2")]
fn mask16(chunk: &[u8; 16]) -> u32 {
    let half = |at: usize| {
        let eight: [u8; 8] = chunk[at..at + 8].try_into().expect("eight bytes");
        i64::from_le_bytes(eight)
    };
    let v: __m128i = _mm_set_epi64x(half(8), half(0));
    // Signed compares: a range moved to start at -128 is "below" its end.
    let digit = _mm_cmplt_epi8(_mm_add_epi8(v, _mm_set1_epi8(0x50)), _mm_set1_epi8(-118));
    let lower = _mm_or_si128(v, _mm_set1_epi8(0x20));
    let letter = _mm_cmplt_epi8(
        _mm_add_epi8(lower, _mm_set1_epi8(0x1f)),
        _mm_set1_epi8(-102),
    );
    // A byte's top bit: multi-byte characters' bytes, or a class matched.
    _mm_movemask_epi8(_mm_or_si128(v, _mm_or_si128(digit, letter))) as u32
}

/// Bit `j` set when `block[j]` is a word byte; past the block's end, none.
fn word_mask(block: &[u8]) -> u64 {
    let mut padded = [0u8; 64];
    let block: &[u8; 64] = match block.try_into() {
        Ok(whole) => whole,
        Err(_) => {
            padded[..block.len()].copy_from_slice(block);
            &padded
        }
    };
    let mut mask = 0u64;
    for (i, chunk) in block.chunks_exact(16).enumerate() {
        let chunk: &[u8; 16] = chunk.try_into().expect("sixteen bytes");
        // SAFETY: SSE2 is part of the x86-64 baseline: every CPU this code
        // is built for has it.
        let bits = unsafe { mask16(chunk) };
        mask |= u64::from(bits) << (16 * i);
    }
    mask
}

/// Eight bytes from `at`, the first the most significant, zeros past the end.
fn load_be(text: &[u8], at: usize) -> u64 {
    match text.get(at..at + 8) {
        Some(eight) => u64::from_be_bytes(eight.try_into().expect("eight bytes")),
        None => {
            let mut padded = [0u8; 8];
            let tail = text.get(at..).unwrap_or_default();
            padded[..tail.len()].copy_from_slice(tail);
            u64::from_be_bytes(padded)
        }
    }
}

/// ASCII letters among eight word bytes folded to lower case: a word byte
/// below 0x80 is a letter or a digit, and a digit has the 0x20 bit already.
fn fold_case(word_bytes: u64) -> u64 {
    word_bytes | ((!word_bytes & HIGH) >> 2)
}

/// The value of the word `text[start..end]`: each full eight bytes folded
/// in, the rest packed, as the byte loop builds it.
fn word_value(text: &[u8], start: usize, end: usize) -> u64 {
    let len = end - start;
    if len > 16 || text.len() < 8 {
        return long_word_value(text, start, end);
    }
    // Eight bytes from `at`, loaded from no later than eight bytes before
    // the text's end and shifted into place: no branch on where a word
    // ends, which for the last words of every run was a mispredicted one.
    let last = text.len() - 8;
    let load = |at: usize| {
        let from = at.min(last);
        let eight: [u8; 8] = text[from..from + 8].try_into().expect("eight bytes");
        let shift = 8 * (at - from) as u32;
        fold_case(u64::from_be_bytes(eight).checked_shl(shift).unwrap_or(0))
    };
    let (first, second) = (load(start), load(start + 8));
    let once = fold_eight(0, first);
    let twice = fold_eight(once, second);
    let rest = (len % 8) as u32;
    let tail = if len < 8 { first } else { second };
    let packed = if rest == 0 {
        0
    } else {
        tail >> (64 - 8 * rest)
    };
    let folded = if len >= 16 {
        twice
    } else if len >= 8 {
        once
    } else {
        0
    };
    folded ^ packed
}

#[inline(never)]
fn long_word_value(text: &[u8], start: usize, end: usize) -> u64 {
    let mut folded = 0u64;
    let mut at = start;
    while end - at >= 8 {
        folded = fold_eight(folded, fold_case(load_be(text, at)));
        at += 8;
    }
    let rest = end - at;
    if rest == 0 {
        return folded;
    }
    folded ^ (fold_case(load_be(text, at)) >> (8 * (8 - rest)))
}

/// Calls `on_word` with the value of each word of `text`, in order. No
/// word may run to its end: the last byte, if any, is not a word byte.
pub(super) fn for_each_word(text: &[u8], mut on_word: impl FnMut(u64)) {
    let (mut carry, mut start) = (0u64, 0usize);
    for (index, block) in text.chunks(64).enumerate() {
        let mask = word_mask(block);
        // A word byte after a gap starts a word; a gap after a word ends one.
        let mut edges = mask ^ ((mask << 1) | carry);
        carry = mask >> 63;
        while edges != 0 {
            let bit = edges.trailing_zeros();
            edges &= edges - 1;
            let at = index * 64 + bit as usize;
            if (mask >> bit) & 1 != 0 {
                start = at;
            } else {
                on_word(word_value(text, start, at));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use proptest::test_runner::RngSeed;

    use super::*;
    use crate::engine::dedup::WORD_BYTES;
    use crate::engine::near_dup::{FeatureBuilder, TextFeatures};

    /// Text as pieces, some followed by a block's end: the same calls to
    /// `feed` (by words) and `feed_bytes` (a byte at a time).
    fn features(pieces: &[(Vec<u8>, bool)], by_words: bool) -> TextFeatures {
        let mut builder = FeatureBuilder::default();
        for (piece, ends_block) in pieces {
            if by_words {
                builder.feed(piece);
            } else {
                builder.feed_bytes(piece);
            }
            if *ends_block {
                builder.end_block();
            }
        }
        builder.finish()
    }

    /// Mostly word bytes (so words of every length, past 16 too), cased
    /// letters, digits, a character's bytes, and the gaps between.
    fn text_byte() -> impl Strategy<Value = u8> {
        prop_oneof![
            6 => prop::sample::select(b"abcxyzABCXYZ0189".to_vec()),
            1 => prop::sample::select(vec![0xc3, 0xa9, 0xe2, 0x80, 0xff]),
            2 => prop::sample::select(b" \n\t.,-@[`{/:".to_vec()),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 512,
            rng_seed: RngSeed::Fixed(0x00c0_ffee_d0c5),
            ..ProptestConfig::default()
        })]

        #[test]
        fn words_found_by_masks_give_the_byte_loops_features(
            pieces in prop::collection::vec(
                (prop::collection::vec(text_byte(), 0..200), any::<bool>()),
                0..6,
            )
        ) {
            prop_assert_eq!(features(&pieces, true), features(&pieces, false));
        }
    }

    #[test]
    fn words_of_every_length_across_piece_ends_match_the_byte_loop() {
        for len in 1..40 {
            let word: Vec<u8> = (0..len).map(|i| b"aZ9\xc3bY8\xa9cX7"[i % 11]).collect();
            let mut text = b"one ".to_vec();
            text.extend_from_slice(&word);
            text.extend_from_slice(b" two ");
            text.extend_from_slice(&word);
            for cut in 0..text.len() {
                let pieces = [(text[..cut].to_vec(), false), (text[cut..].to_vec(), false)];
                assert_eq!(
                    features(&pieces, true),
                    features(&pieces, false),
                    "{len} at {cut}"
                );
            }
        }
    }

    #[test]
    fn the_mask_classes_every_byte_as_the_table_does() {
        let all: Vec<u8> = (0..=255).collect();
        for block in all.chunks(64) {
            let mask = word_mask(block);
            for (j, &b) in block.iter().enumerate() {
                let word = WORD_BYTES[usize::from(b)] != 0;
                assert_eq!((mask >> j) & 1 == 1, word, "byte {b:#04x}");
            }
        }
        // Past a short block's end: no word bytes.
        assert_eq!(word_mask(b"ab"), 0b11);
    }
}
