//! Gzip members for WARC records, from a deflate state kept per thread: a new
//! encoder per record allocates and clears hundreds of KB, which costs as much
//! as compressing a small record.

use std::cell::RefCell;
use std::io;

use flate2::{Compress, Compression, Crc, FlushCompress, Status};

/// ID1 ID2 CM=deflate FLG=0 MTIME=0 XFL=4 (fastest) OS=255 (unknown).
const HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 4, 255];

thread_local! {
    static DEFLATE: RefCell<Compress> = RefCell::new(Compress::new(Compression::fast(), false));
}

/// Appends one gzip member holding `parts` concatenated to `out`.
pub fn append_member(parts: &[&[u8]], out: &mut Vec<u8>) -> io::Result<()> {
    out.extend_from_slice(&HEADER);
    let mut crc = Crc::new();
    DEFLATE.with_borrow_mut(|deflate| {
        deflate.reset();
        for (i, part) in parts.iter().enumerate() {
            crc.update(part);
            let last = i + 1 == parts.len();
            deflate_part(deflate, part, last, out)?;
        }
        if parts.is_empty() {
            deflate_part(deflate, &[], true, out)?;
        }
        Ok::<(), io::Error>(())
    })?;
    out.extend_from_slice(&crc.sum().to_le_bytes());
    out.extend_from_slice(&crc.amount().to_le_bytes());
    Ok(())
}

fn deflate_part(
    deflate: &mut Compress,
    mut input: &[u8],
    last: bool,
    out: &mut Vec<u8>,
) -> io::Result<()> {
    let flush = if last {
        FlushCompress::Finish
    } else {
        FlushCompress::None
    };
    loop {
        // compress_vec writes only into spare capacity.
        out.reserve(input.len() / 2 + 256);
        let before = deflate.total_in();
        let status = deflate
            .compress_vec(input, out, flush)
            .map_err(io::Error::other)?;
        input = &input[(deflate.total_in() - before) as usize..];
        let done = if last {
            status == Status::StreamEnd
        } else {
            input.is_empty()
        };
        if done {
            return Ok(());
        }
    }
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
}
