//! Gzip members for WARC records. libdeflate at level 1 compresses as fast
//! as zlib's fastest mode and writes about 30 % less (its level 1 is a
//! real LZ77 + Huffman pass, not zlib's static-table "quick" strategy). It
//! needs the whole input at once, so a record's parts are joined in a buffer
//! kept per thread, as is the compressor's state.

use std::cell::RefCell;
use std::io;

use flate2::Crc;
use libdeflater::{CompressionLvl, Compressor};

use crate::engine::cpu_tally::CpuTally;

/// ID1 ID2 CM=deflate FLG=0 MTIME=0 XFL=4 (fastest) OS=255 (unknown).
const HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 4, 255];

/// A join buffer grown past this by one big record is not kept.
const KEPT_JOIN_CAPACITY: usize = 1 << 20;

/// libdeflate's level 0 stores without compressing; 1 is its fastest that compresses.
const LEVEL: CompressionLvl = match CompressionLvl::new(1) {
    Ok(level) => level,
    Err(_) => panic!("libdeflate has level 1"),
};

struct Deflate {
    compressor: Compressor,
    joined: Vec<u8>,
}

thread_local! {
    static DEFLATE: RefCell<Deflate> = RefCell::new(Deflate {
        compressor: Compressor::new(LEVEL),
        joined: Vec::new(),
    });
}

/// CPU time the crawl's threads spend in [`append_member`] (`bench --archive-floor`).
pub static COMPRESSING: CpuTally = CpuTally::new();

/// Appends one gzip member holding `parts` concatenated to `out`.
pub fn append_member(parts: &[&[u8]], out: &mut Vec<u8>) -> io::Result<()> {
    COMPRESSING.time(|| append(parts, out))
}

fn append(parts: &[&[u8]], out: &mut Vec<u8>) -> io::Result<()> {
    let mut crc = Crc::new();
    for part in parts {
        crc.update(part);
    }
    out.extend_from_slice(&HEADER);
    DEFLATE.with_borrow_mut(|deflate| {
        let input: &[u8] = match parts {
            [] => &[],
            [one] => one,
            _ => {
                deflate.joined.clear();
                for part in parts {
                    deflate.joined.extend_from_slice(part);
                }
                &deflate.joined
            }
        };
        let start = out.len();
        out.resize(
            start + deflate.compressor.deflate_compress_bound(input.len()),
            0,
        );
        let written = deflate
            .compressor
            .deflate_compress(input, &mut out[start..])
            .map_err(io::Error::other)?;
        out.truncate(start + written);
        if deflate.joined.capacity() > KEPT_JOIN_CAPACITY {
            deflate.joined = Vec::new();
        }
        Ok::<(), io::Error>(())
    })?;
    out.extend_from_slice(&crc.sum().to_le_bytes());
    out.extend_from_slice(&crc.amount().to_le_bytes());
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::append_member;

    fn gunzip(member: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(member)
            .read_to_end(&mut out)
            .expect("a valid gzip member");
        out
    }

    #[test]
    fn members_round_trip_and_the_state_is_reused_cleanly() {
        let big: Vec<u8> = (0..200_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        for parts in [
            vec![&b"WARC/1.1\r\n"[..], &b""[..], &big[..]],
            vec![&b"short"[..]],
            vec![],
            vec![&big[..1000], &big[1000..]],
        ] {
            let mut out = b"previous".to_vec();
            append_member(&parts, &mut out).expect("compresses");
            assert!(out.starts_with(b"previous"), "appends, never overwrites");
            assert_eq!(gunzip(&out[8..]), parts.concat());
        }
    }

    #[test]
    fn text_is_compressed_not_only_wrapped() {
        let words = [
            "crawl",
            "frontier",
            "politeness",
            "robots",
            "archive",
            "seen",
        ];
        let text: String = (0..20_000usize)
            .map(|i| words[(i * 7 + i / 3) % words.len()])
            .collect::<Vec<_>>()
            .join(" ");
        let mut out = Vec::new();
        append_member(&[text.as_bytes()], &mut out).expect("compresses");
        assert!(
            out.len() * 5 < text.len(),
            "{} bytes for {} of text",
            out.len(),
            text.len()
        );
        assert_eq!(gunzip(&out), text.as_bytes());
    }
}
