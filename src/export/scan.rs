//! Walks a WARC file's gzip members (one record each) up to a length, so an
//! export of a running crawl reads a fixed point in time. Each record is
//! decompressed as a stream: its heads are read with a cap and its payload
//! only hashed, so memory stays flat whatever the record's size.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

use flate2::bufread::GzDecoder;
use sha1::Sha1;
use sha2::{Digest, Sha256};

/// Longest WARC header block read (it holds a URL and a few fields).
const MAX_WARC_HEAD: u64 = 64 * 1024;
/// Longest HTTP head read (the fetcher caps headers well below).
const MAX_HTTP_HEAD: u64 = 256 * 1024;

/// What an index line needs of one record.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScannedRecord {
    /// `WARC-Type`.
    pub kind: String,
    pub target_uri: Option<String>,
    pub date: Option<String>,
    /// The record's own `Content-Type`.
    pub content_type: Option<String>,
    /// `WARC-Payload-Digest`, or the SHA-1 of the payload when it has none.
    pub payload_digest: Option<String>,
    /// The HTTP status and `Content-Type`, for a record holding an HTTP message.
    pub http_status: Option<String>,
    pub http_content_type: Option<String>,
    /// Where the record's gzip member starts, and its compressed length.
    pub offset: u64,
    pub length: u64,
    /// `sha256:` of the compressed member, as py-wacz's `recordDigest`.
    pub record_digest: String,
}

/// Calls `each` with the records of `path`'s first `limit` bytes, in order.
/// Returns the length of the whole records among them: a record still being
/// written at the end is left out.
pub fn scan_file(
    path: &Path,
    limit: u64,
    mut each: impl FnMut(ScannedRecord) -> io::Result<()>,
) -> io::Result<u64> {
    let file = File::open(path)?;
    let mut input = Tracked::new(file.take(limit));
    loop {
        let start = input.consumed;
        if input.fill_buf()?.is_empty() {
            return Ok(start);
        }
        input.digest = Sha256::new();
        let read = read_record(&mut GzDecoder::new(&mut input));
        let mut record = match read {
            Ok(record) => record,
            // A member cut by `limit` was not whole yet when the export began.
            Err(_) if input.fill_buf()?.is_empty() => return Ok(start),
            Err(e) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{} is damaged at offset {start}: {e}", path.display()),
                ))
            }
        };
        record.offset = start;
        record.length = input.consumed - start;
        let digest = std::mem::take(&mut input.digest).finalize();
        record.record_digest = format!("sha256:{}", hex(&digest));
        each(record)?;
    }
}

/// The WARC head of the record whose member starts at `offset` of `file`.
pub fn record_head(file: &mut File, offset: u64) -> io::Result<Vec<(String, String)>> {
    use std::io::{Seek, SeekFrom};
    file.seek(SeekFrom::Start(offset))?;
    let mut decoded = BufReader::new(flate2::read::GzDecoder::new(&mut *file));
    let head = read_head(&mut decoded, MAX_WARC_HEAD)?;
    Ok(fields(&head))
}

/// Reads one decompressed record to its end.
fn read_record(decoded: &mut impl Read) -> io::Result<ScannedRecord> {
    let mut reader = BufReader::with_capacity(32 * 1024, decoded);
    let warc = fields(&read_head(&mut reader, MAX_WARC_HEAD)?);
    let get = |name: &str| field(&warc, name).map(str::to_string);
    let mut record = ScannedRecord {
        kind: get("WARC-Type").unwrap_or_default(),
        target_uri: get("WARC-Target-URI"),
        date: get("WARC-Date"),
        content_type: get("Content-Type"),
        payload_digest: get("WARC-Payload-Digest"),
        ..ScannedRecord::default()
    };
    let block_len: u64 = field(&warc, "Content-Length")
        .and_then(|n| n.trim().parse().ok())
        .ok_or_else(|| invalid("a record without Content-Length"))?;
    let mut block = (&mut reader).take(block_len);
    let holds_http = record
        .content_type
        .as_deref()
        .is_some_and(|t| t.to_ascii_lowercase().starts_with("application/http"));
    if holds_http {
        let head = read_head(&mut block, MAX_HTTP_HEAD)?;
        let text = String::from_utf8_lossy(&head);
        record.http_status = text
            .lines()
            .next()
            .and_then(|line| line.split_whitespace().nth(1))
            .map(str::to_string);
        record.http_content_type = field(&fields(&head), "Content-Type").map(str::to_string);
    }
    if record.payload_digest.is_none() {
        let mut sha1 = HashWriter(Sha1::new());
        io::copy(&mut block, &mut sha1)?;
        let digest = data_encoding::BASE32.encode(&sha1.0.finalize());
        record.payload_digest = Some(format!("sha1:{digest}"));
    }
    // The rest of the block and the two CRLFs after it; reading to the end
    // also checks the member's CRC.
    io::copy(&mut reader, &mut io::sink())?;
    Ok(record)
}

/// Lines up to and including the first empty one, at most `max` bytes.
fn read_head(reader: &mut impl BufRead, max: u64) -> io::Result<Vec<u8>> {
    let mut head = Vec::new();
    let mut limited = reader.take(max);
    loop {
        let before = head.len();
        let n = limited.read_until(b'\n', &mut head)?;
        if n == 0 {
            return Err(if head.len() as u64 >= max {
                invalid("a header block longer than the cap")
            } else {
                io::Error::new(io::ErrorKind::UnexpectedEof, "a header block cut short")
            });
        }
        let line = &head[before..];
        if line == b"\r\n" || line == b"\n" {
            return Ok(head);
        }
    }
}

/// `Name: value` lines after the first (the version or status line).
fn fields(head: &[u8]) -> Vec<(String, String)> {
    String::from_utf8_lossy(head)
        .lines()
        .skip(1)
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_string(), value.trim().to_string()))
        .collect()
}

pub fn field<'a>(fields: &'a [(String, String)], name: &str) -> Option<&'a str> {
    fields
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn invalid(message: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message.to_string())
}

/// A digest as an `io::Write` sink.
pub struct HashWriter<D>(pub D);

impl<D: Digest> io::Write for HashWriter<D> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A buffered reader that counts and hashes what its reader consumes, so a
/// gzip member's offset, length and digest are exact.
struct Tracked<R> {
    inner: BufReader<R>,
    consumed: u64,
    digest: Sha256,
}

impl<R: Read> Tracked<R> {
    fn new(inner: R) -> Self {
        Tracked {
            inner: BufReader::with_capacity(256 * 1024, inner),
            consumed: 0,
            digest: Sha256::new(),
        }
    }
}

impl<R: Read> Read for Tracked<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(buf.len());
        buf[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl<R: Read> BufRead for Tracked<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.inner.fill_buf()
    }

    fn consume(&mut self, amount: usize) {
        let buffered = self.inner.buffer();
        self.digest.update(&buffered[..amount.min(buffered.len())]);
        self.consumed += amount as u64;
        self.inner.consume(amount);
    }
}

#[cfg(test)]
#[path = "scan_tests.rs"]
mod tests;
