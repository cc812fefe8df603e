//! Reading one response record back from the archive, for the page
//! inspector: the record's gzip member is decompressed with a cap, so a huge
//! or hostile page costs at most `max_body` bytes of memory.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

use flate2::read::GzDecoder;

use super::warc::EarlierCapture;
use super::WarcLocation;

/// Longest WARC header block read (it holds a URL and a few fields).
const MAX_WARC_HEAD: usize = 64 * 1024;
/// Longest HTTP response head read (the fetcher caps headers well below).
const MAX_HTTP_HEAD: usize = 256 * 1024;
/// Largest compressed member read: a 5 MiB body compresses to less, and
/// a bogus length must not make us read a whole file.
const MAX_MEMBER: u64 = 64 * 1024 * 1024;

/// A response as archived: its HTTP head and (the start of) its body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchivedResponse {
    /// The HTTP status; `None` if the status line does not parse.
    pub status: Option<u16>,
    /// The header fields in their order, as `(name, value)`.
    pub headers: Vec<(String, String)>,
    /// The body, at most the `max_body` asked for.
    pub body: Vec<u8>,
    /// The body was longer than `max_body` and was cut.
    pub truncated: bool,
}

/// Reads the response record at `at` in `data_dir/warc/`, its body cut at `max_body` bytes.
pub fn read_response(
    data_dir: &Path,
    at: &WarcLocation,
    max_body: usize,
) -> io::Result<ArchivedResponse> {
    let limit = MAX_WARC_HEAD + MAX_HTTP_HEAD + max_body + 1;
    let record = decompress(data_dir, at, limit)?;
    parse_record(&record, max_body)
}

/// What a revisit of the record at `at` names: the record's own URI, date
/// and payload digest, or, for a revisit, those of the record it refers to.
pub(crate) fn read_capture(data_dir: &Path, at: &WarcLocation) -> io::Result<EarlierCapture> {
    let record = decompress(data_dir, at, MAX_WARC_HEAD)?;
    let end = head_end(&record, MAX_WARC_HEAD)
        .ok_or_else(|| invalid("the WARC record has no header block".into()))?;
    let head = String::from_utf8_lossy(&record[..end]);
    let field = |name: &str| {
        head.split("\r\n")
            .filter_map(|line| line.split_once(':'))
            .find(|(n, _)| n.trim().eq_ignore_ascii_case(name))
            .map(|(_, value)| value.trim().to_string())
    };
    let (uri, date) = if field("WARC-Type").as_deref() == Some("revisit") {
        ("WARC-Refers-To-Target-URI", "WARC-Refers-To-Date")
    } else {
        ("WARC-Target-URI", "WARC-Date")
    };
    match (field(uri), field(date)) {
        (Some(uri), Some(date)) => Ok(EarlierCapture {
            uri,
            date,
            payload_digest: field("WARC-Payload-Digest"),
        }),
        _ => Err(invalid(format!("the record names no {uri} and {date}"))),
    }
}

/// The first `limit` bytes of the record at `at`, decompressed.
fn decompress(data_dir: &Path, at: &WarcLocation, limit: usize) -> io::Result<Vec<u8>> {
    // The name comes from the store; it must still never leave `warc/`.
    if super::warc::file_number(&at.file).is_none() {
        return Err(invalid(format!("{:?} is not a WARC file name", at.file)));
    }
    let path = data_dir.join(super::warc::WARC_DIR).join(&at.file);
    let mut file = File::open(&path)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot open {}: {e}", path.display())))?;
    file.seek(SeekFrom::Start(at.offset))?;
    let member = file.take(at.length.min(MAX_MEMBER));
    let mut record = Vec::new();
    GzDecoder::new(member)
        .take(limit as u64)
        .read_to_end(&mut record)
        .map_err(|e| {
            invalid(format!(
                "the record in {} does not decompress: {e}",
                path.display()
            ))
        })?;
    Ok(record)
}

/// Splits a decompressed record into its WARC head, HTTP head and body.
fn parse_record(record: &[u8], max_body: usize) -> io::Result<ArchivedResponse> {
    let warc_end = head_end(record, MAX_WARC_HEAD)
        .ok_or_else(|| invalid("the WARC record has no header block".into()))?;
    if !record.starts_with(b"WARC/") {
        return Err(invalid("not a WARC record".into()));
    }
    let block = &record[warc_end..];
    let http_end = head_end(block, MAX_HTTP_HEAD)
        .ok_or_else(|| invalid("the archived response has no HTTP head".into()))?;
    let head = String::from_utf8_lossy(&block[..http_end]);
    let mut lines = head.split("\r\n").filter(|l| !l.is_empty());
    let status = lines
        .next()
        .and_then(|line| line.split(' ').nth(1))
        .and_then(|code| code.parse().ok());
    let headers = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_string(), value.trim().to_string()))
        .collect();
    let mut body = block[http_end..].to_vec();
    // The record ends with two CRLFs after the block.
    if body.ends_with(b"\r\n\r\n") {
        body.truncate(body.len() - 4);
    }
    let truncated = body.len() > max_body;
    body.truncate(max_body);
    Ok(ArchivedResponse {
        status,
        headers,
        body,
        truncated,
    })
}

/// Where the bytes after the first empty line start, looked for in the first `max` bytes.
fn head_end(bytes: &[u8], max: usize) -> Option<usize> {
    let window = &bytes[..bytes.len().min(max)];
    window
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|at| at + 4)
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::store::warc::{WarcExchange, WarcWriter};
    use std::time::SystemTime;

    fn write(dir: &Path, body: &[u8]) -> WarcLocation {
        let mut writer = WarcWriter::open(dir, 1 << 30).unwrap();
        let ex = WarcExchange {
            url: "http://h.localhost/a",
            ip: None,
            date: SystemTime::now(),
            request_head: b"GET /a HTTP/1.1\r\nHost: h.localhost\r\n",
            response_head: b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nX-Test: 1\r\n",
            body,
            payload_digest: "sha1:X",
            refers_to: None,
            truncated: false,
        };
        // A first exchange, so the second's offset is not the file's start.
        writer.write_exchange(&ex).unwrap();
        writer.write_exchange(&ex).unwrap()
    }

    #[test]
    fn a_response_reads_back_with_its_head_and_body() {
        let dir = tempfile::tempdir().unwrap();
        let at = write(dir.path(), b"<title>T</title>");
        let got = read_response(dir.path(), &at, 1024).unwrap();
        assert_eq!(got.status, Some(200));
        assert!(got.headers.contains(&("X-Test".into(), "1".into())));
        assert_eq!(got.body, b"<title>T</title>");
        assert!(!got.truncated);
    }

    #[test]
    fn a_long_body_is_cut_at_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let at = write(dir.path(), &vec![b'a'; 100_000]);
        let got = read_response(dir.path(), &at, 1000).unwrap();
        assert_eq!(got.body.len(), 1000);
        assert!(got.truncated);
    }

    #[test]
    fn a_file_name_outside_the_archive_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut at = write(dir.path(), b"x");
        at.file = "../db/conf".into();
        let e = read_response(dir.path(), &at, 10).unwrap_err();
        assert!(e.to_string().contains("not a WARC file name"), "{e}");
    }
}
