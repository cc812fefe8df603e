//! pywb's compressed ("zipnum") CDXJ index, as py-wacz writes it for a WACZ:
//! `index.cdx.gz` holds the sorted lines in blocks, each its own gzip member,
//! and `index.idx` has one line per block (its first line's key and time, its
//! offset, length and digest) under a `!meta` header naming the data file.
//! A replay tool reads the small idx and fetches only the blocks it needs.

use std::io::{self, Write};

use sha2::{Digest, Sha256};

use super::cdxj::PyJson;
use super::scan::hex;
use crate::engine::store::gzip;

/// Lines per block: py-wacz's (and ArchiveWeb.page's) size.
pub const LINES_PER_BLOCK: usize = 1024;

pub struct ZipnumWriter<W: Write> {
    data: W,
    lines_per_block: usize,
    offset: u64,
    block: Vec<u8>,
    lines_in_block: usize,
    /// The `urlkey timestamp` of the block's first line.
    prefix: String,
    idx: Vec<u8>,
}

impl<W: Write> ZipnumWriter<W> {
    /// Writes blocks to `data`, which the idx will name `data_name`.
    pub fn new(data: W, data_name: &str, lines_per_block: usize) -> Self {
        let mut meta = PyJson::new();
        meta.field("format", "cdxj-gzip-1.0")
            .field("filename", data_name);
        let idx = format!("!meta 0 {}\n", meta.finish()).into_bytes();
        ZipnumWriter {
            data,
            lines_per_block: lines_per_block.max(1),
            offset: 0,
            block: Vec::new(),
            lines_in_block: 0,
            prefix: String::new(),
            idx,
        }
    }

    /// Adds one index line (without its `\n`), in sorted order.
    pub fn push(&mut self, line: &str) -> io::Result<()> {
        if self.lines_in_block == 0 {
            self.prefix = line
                .split('{')
                .next()
                .unwrap_or_default()
                .trim()
                .to_string();
        }
        self.block.extend_from_slice(line.as_bytes());
        self.block.push(b'\n');
        self.lines_in_block += 1;
        if self.lines_in_block == self.lines_per_block {
            self.flush_block()?;
        }
        Ok(())
    }

    /// Writes the last block; returns the data writer and the idx's bytes.
    pub fn finish(mut self) -> io::Result<(W, Vec<u8>)> {
        self.flush_block()?;
        self.data.flush()?;
        Ok((self.data, self.idx))
    }

    fn flush_block(&mut self) -> io::Result<()> {
        if self.lines_in_block == 0 {
            return Ok(());
        }
        let mut member = Vec::with_capacity(self.block.len() / 4);
        gzip::append_member(&[&self.block], &mut member)?;
        self.data.write_all(&member)?;
        let mut entry = PyJson::new();
        entry
            .number("offset", self.offset)
            .number("length", member.len() as u64)
            .field(
                "digest",
                &format!("sha256:{}", hex(&Sha256::digest(&member))),
            );
        self.idx
            .extend_from_slice(format!("{} {}\n", self.prefix, entry.finish()).as_bytes());
        self.offset += member.len() as u64;
        self.block.clear();
        self.lines_in_block = 0;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn each_idx_line_points_at_its_block() {
        let lines: Vec<String> = (0..10)
            .map(|n| format!("com,example)/{n} 2026010100000{n} {{\"url\": \"u{n}\"}}"))
            .collect();
        let mut writer = ZipnumWriter::new(Vec::new(), "index.cdx.gz", 4);
        for line in &lines {
            writer.push(line).unwrap();
        }
        let (data, idx) = writer.finish().unwrap();
        let idx = String::from_utf8(idx).unwrap();
        let mut idx_lines = idx.lines();
        assert_eq!(
            idx_lines.next().unwrap(),
            "!meta 0 {\"format\": \"cdxj-gzip-1.0\", \"filename\": \"index.cdx.gz\"}"
        );
        let blocks: Vec<&str> = idx_lines.collect();
        assert_eq!(blocks.len(), 3, "4 + 4 + 2 lines");
        let mut end = 0;
        for (n, block) in blocks.iter().enumerate() {
            let (prefix, json) = block.split_once(" {").unwrap();
            let first = &lines[n * 4];
            assert!(first.starts_with(prefix), "{prefix} starts {first}");
            let json: serde_json::Value = serde_json::from_str(&format!("{{{json}")).unwrap();
            let offset = json["offset"].as_u64().unwrap() as usize;
            let length = json["length"].as_u64().unwrap() as usize;
            assert_eq!(offset, end, "blocks are contiguous");
            end = offset + length;
            let member = &data[offset..end];
            let digest = format!("sha256:{}", hex(&Sha256::digest(member)));
            assert_eq!(json["digest"], digest.as_str());
            let mut text = String::new();
            flate2::read::GzDecoder::new(member)
                .read_to_string(&mut text)
                .unwrap();
            let want: String = lines[n * 4..(n * 4 + 4).min(10)]
                .iter()
                .map(|l| format!("{l}\n"))
                .collect();
            assert_eq!(text, want);
        }
        assert_eq!(end, data.len());
    }
}
