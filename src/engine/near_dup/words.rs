//! The words of a run of text found sixteen bytes at a time (x86-64).
//!
//! A loop branching on each byte's class mispredicts at most words' start
//! and end, page after page. Here each 64-byte block's word bytes become a
//! bit mask (four SSE2 compares, part of every x86-64 CPU), the loop visits
//! the mask's edges, and each word's value is read from its bytes eight at
//! a time: the same value the byte loop in `FeatureBuilder` builds, which a
//! test holds it to. The same pass masks the whitespace, for the page
//! facts' word count (`page_facts::count_words`), so the text is read once.

use super::fold_eight;
use std::arch::x86_64::{
    __m128i, _mm_add_epi8, _mm_andnot_si128, _mm_cmpeq_epi8, _mm_cmplt_epi8, _mm_movemask_epi8,
    _mm_or_si128, _mm_set1_epi8, _mm_set_epi64x,
};

/// Each byte's 0x80 bit.
const HIGH: u64 = 0x8080_8080_8080_8080;

/// Which bytes of a block are word bytes and which whitespace, a bit each.
struct Masks {
    /// A letter, a digit, or a byte of a multi-byte character (as the byte
    /// loop's `WORD_BYTES`).
    word: u64,
    /// ASCII whitespace as `page_facts::count_words` has it: space, tab,
    /// line feed, form feed, carriage return.
    space: u64,
}

/// [`Masks`] of sixteen bytes, in the low 16 bits of each.
#[target_feature(enable = "sse2")]
fn masks16(chunk: &[u8; 16]) -> (u32, u32) {
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
    let word = _mm_movemask_epi8(_mm_or_si128(v, _mm_or_si128(digit, letter))) as u32;
    // 9 to 13 but not 11 (vertical tab), or a space.
    let controls = _mm_cmplt_epi8(_mm_add_epi8(v, _mm_set1_epi8(0x77)), _mm_set1_epi8(-123));
    let controls = _mm_andnot_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8(0x0b)), controls);
    let space = _mm_or_si128(controls, _mm_cmpeq_epi8(v, _mm_set1_epi8(0x20)));
    (word, _mm_movemask_epi8(space) as u32)
}

/// [`Masks`] of a block of up to 64 bytes; past its end, neither.
fn masks(block: &[u8]) -> Masks {
    let (mut word, mut space) = (0u64, 0u64);
    let mut add = |i: usize, chunk: &[u8; 16]| {
        // SAFETY: SSE2 is part of the x86-64 baseline: every CPU this code
        // is built for has it.
        let (words, spaces) = unsafe { masks16(chunk) };
        word |= u64::from(words) << (16 * i);
        space |= u64::from(spaces) << (16 * i);
    };
    let mut chunks = block.chunks_exact(16);
    for (i, chunk) in chunks.by_ref().enumerate() {
        add(i, chunk.try_into().expect("sixteen bytes"));
    }
    // A short block's last bytes (most runs end in one), padded to sixteen
    // only: the chunks past them are not classed at all.
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut padded = [0u8; 16];
        padded[..rest.len()].copy_from_slice(rest);
        add(block.len() / 16, &padded);
    }
    Masks { word, space }
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

/// Calls `on_word` with the value of each word of `text`, in order, its
/// end ending the last one. Returns how many whitespace-separated words
/// start in `text` (`in_token`: whether the text before ended inside one;
/// on return, whether `text` does).
pub(super) fn for_each_word(text: &[u8], in_token: &mut bool, mut on_word: impl FnMut(u64)) -> u32 {
    let (mut carry, mut start) = (0u64, 0usize);
    let (mut token_carry, mut tokens) = (u64::from(*in_token), 0u32);
    for (index, block) in text.chunks(64).enumerate() {
        let Masks { word: mask, space } = masks(block);
        let inside = u64::MAX >> (64 - block.len());
        let token = !space & inside;
        tokens += (token & !((token << 1) | token_carry)).count_ones();
        // The block's last byte: bit 63, or a short last block's last.
        token_carry = (token >> (block.len() - 1)) & 1;
        // A word byte after a gap starts a word; a gap after a word ends one
        // (past a short last block's end there is a gap).
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
    // A whole last block ending in a word.
    if carry != 0 {
        on_word(word_value(text, start, text.len()));
    }
    if !text.is_empty() {
        *in_token = token_carry != 0;
    }
    tokens
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use proptest::test_runner::RngSeed;

    use super::*;
    use crate::engine::near_dup::{FeatureBuilder, TextFeatures, WORD_BYTES};
    use crate::engine::page_facts::count_words;

    /// Runs of text, some followed by a block's end, fed by words
    /// (`feed_run`) or a byte at a time (`feed_bytes`, each run's last word
    /// ended), with the page facts' word count of the runs.
    fn features(runs: &[(Vec<u8>, bool)], by_words: bool) -> (TextFeatures, u32) {
        let mut builder = FeatureBuilder::default();
        let (mut in_token, mut tokens) = (false, 0);
        for (run, ends_block) in runs {
            if by_words {
                tokens += builder.feed_run(run, &mut in_token);
            } else {
                builder.feed_bytes(run);
                builder.break_word();
                tokens += count_words(run, &mut in_token);
            }
            if *ends_block {
                builder.end_block();
            }
        }
        (builder.finish(), tokens)
    }

    /// Mostly word bytes (so words of every length, past 16 too), cased
    /// letters, digits, a character's bytes, and the gaps between: every
    /// whitespace byte, the vertical tab (which is not) and punctuation.
    fn text_byte() -> impl Strategy<Value = u8> {
        prop_oneof![
            6 => prop::sample::select(b"abcxyzABCXYZ0189".to_vec()),
            1 => prop::sample::select(vec![0xc3, 0xa9, 0xe2, 0x80, 0xa0, 0xff]),
            3 => prop::sample::select(b" \n\t\r\x0c\x0b.,-@[`{/:".to_vec()),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 512,
            rng_seed: RngSeed::Fixed(0x00c0_ffee_d0c5),
            ..ProptestConfig::default()
        })]

        #[test]
        fn words_found_by_masks_give_the_byte_loops_features_and_count(
            runs in prop::collection::vec(
                (prop::collection::vec(text_byte(), 0..200), any::<bool>()),
                0..6,
            )
        ) {
            prop_assert_eq!(features(&runs, true), features(&runs, false));
        }
    }

    #[test]
    fn words_of_every_length_at_every_cut_match_the_byte_loop() {
        for len in 1..40 {
            let word: Vec<u8> = (0..len).map(|i| b"aZ9\xc3bY8\xa9cX7"[i % 11]).collect();
            let mut text = b"one ".to_vec();
            text.extend_from_slice(&word);
            text.extend_from_slice(b" two ");
            text.extend_from_slice(&word);
            for cut in 0..text.len() {
                let runs = [(text[..cut].to_vec(), false), (text[cut..].to_vec(), false)];
                assert_eq!(
                    features(&runs, true),
                    features(&runs, false),
                    "{len} at {cut}"
                );
            }
        }
    }

    #[test]
    fn a_run_of_whole_blocks_ending_in_a_word_ends_that_word() {
        for len in [64, 128] {
            let mut run = b"ab ".repeat(len / 3);
            run.resize(len, b'z');
            let runs = [(run, true)];
            assert_eq!(features(&runs, true), features(&runs, false), "{len}");
        }
    }

    #[test]
    fn the_masks_class_every_byte_as_the_table_and_the_word_count_do() {
        let all: Vec<u8> = (0..=255).collect();
        for block in all.chunks(64) {
            let Masks { word, space } = masks(block);
            for (j, &b) in block.iter().enumerate() {
                let is_word = WORD_BYTES[usize::from(b)] != 0;
                assert_eq!((word >> j) & 1 == 1, is_word, "byte {b:#04x}");
                let is_space = count_words(&[b], &mut false) == 0;
                assert_eq!((space >> j) & 1 == 1, is_space, "byte {b:#04x}");
            }
        }
        // Past a short block's end: neither.
        let Masks { word, space } = masks(b"a ");
        assert_eq!((word, space), (0b01, 0b10));
    }
}
