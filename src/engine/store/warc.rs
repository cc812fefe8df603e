//! WARC 1.1 writer: `warc/crawldeck-NNNNN.warc.gz`, one gzip member per record
//! (so tools can seek to any record), rotated by size, resumed by numbering.
//! Records are buffered and written a megabyte at a time, or when the crawl
//! loop is about to store their locations ([`WarcWriter::drain`]). A failed
//! write is cut off again, so a file only ever holds whole records.

use std::fs::{self, File};
use std::io::{self, Seek, SeekFrom, Write};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use sha1::{Digest, Sha1};

use super::faults::DiskFaults;
use super::WarcLocation;
use crate::engine::cpu_tally::CpuTally;

/// The WARC files' directory in a crawl's data directory.
pub const WARC_DIR: &str = "warc";

const FILE_PREFIX: &str = "crawldeck-";
const FILE_SUFFIX: &str = ".warc.gz";
const REVISIT_NOT_MODIFIED: &str = "http://netpreserve.org/warc/1.1/revisit/server-not-modified";
const REVISIT_IDENTICAL: &str = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest";
/// Buffered records are written once they fill this much. One write of a
/// megabyte costs the kernel a third of what 150 writes of 7 KB do (page
/// cache folios, ext4's block reservations), and holds the writer's lock
/// for a copy instead of a system call (docs/PERFORMANCE.md).
const WRITE_BUFFER_BYTES: usize = 1 << 20;

/// The record a revisit stands for: what its `WARC-Refers-To-*` fields name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EarlierCapture {
    /// Its `WARC-Target-URI`.
    pub uri: String,
    /// Its `WARC-Date`, as written.
    pub date: String,
    /// Its `WARC-Payload-Digest`, when known.
    pub payload_digest: Option<String>,
}

/// One HTTP exchange as it goes into the archive.
#[derive(Debug, Clone, Copy)]
pub struct WarcExchange<'a> {
    pub url: &'a str,
    pub ip: Option<IpAddr>,
    pub date: SystemTime,
    /// Request line and headers.
    pub request_head: &'a [u8],
    /// Status line and headers.
    pub response_head: &'a [u8],
    pub body: &'a [u8],
    /// `sha1:BASE32` of the body (`ContentDigest::warc_label`).
    pub payload_digest: &'a str,
    /// An earlier record of the same payload: a 304 refers to it, and any
    /// other answer is then written as an identical-payload revisit.
    pub refers_to: Option<&'a EarlierCapture>,
    /// The body was cut at its cap: the record says so (`WARC-Truncated: length`).
    pub truncated: bool,
}

pub struct WarcWriter {
    dir: PathBuf,
    max_file_bytes: u64,
    next_number: u32,
    /// Holds the bytes [`WarcWriter::drain`] wrote; `flush` makes them durable.
    current: File,
    current_path: PathBuf,
    /// Bytes written to the file (whole records).
    on_disk: u64,
    /// Whole records not written yet, from `on_disk` on.
    pending: Vec<u8>,
    /// A file holding only its warcinfo is never rotated away.
    exchanges_in_file: u64,
    /// The current file still lacks its warcinfo record (its write failed).
    warcinfo_pending: bool,
    faults: DiskFaults,
}

impl WarcWriter {
    /// Opens `dir/warc/` (created if missing) and starts a new file numbered
    /// after any already there, so a resumed crawl never overwrites its archive.
    #[cfg(test)]
    pub fn open(dir: &Path, max_file_bytes: u64) -> io::Result<Self> {
        Self::open_with_faults(dir, max_file_bytes, DiskFaults::default())
    }

    /// [`WarcWriter::open`], its writes failing while `faults` says the disk is full.
    pub fn open_with_faults(
        dir: &Path,
        max_file_bytes: u64,
        faults: DiskFaults,
    ) -> io::Result<Self> {
        let warc_dir = dir.join(WARC_DIR);
        super::private::create_private_dir_all(&warc_dir)
            .map_err(|e| with_path(e, &warc_dir, "cannot create the WARC directory"))?;
        // Archives of an older crawldeck (or copied in) become private too.
        super::private::restrict_tree(&warc_dir)
            .map_err(|e| with_path(e, &warc_dir, "cannot make the WARC directory private"))?;
        let mut highest: Option<u32> = None;
        let entries = fs::read_dir(&warc_dir)
            .map_err(|e| with_path(e, &warc_dir, "cannot list the WARC directory"))?;
        for entry in entries {
            let name = entry?.file_name();
            if let Some(number) = name.to_str().and_then(file_number) {
                highest = Some(highest.map_or(number, |h| h.max(number)));
            }
        }
        let first = highest.map_or(0, |h| h.saturating_add(1));
        let (current, current_path) = create_file(&warc_dir, first)?;
        let mut writer = WarcWriter {
            dir: warc_dir,
            max_file_bytes: max_file_bytes.max(1),
            next_number: first.saturating_add(1),
            current,
            current_path,
            on_disk: 0,
            pending: Vec::new(),
            exchanges_in_file: 0,
            warcinfo_pending: true,
            faults,
        };
        writer.write_warcinfo()?;
        Ok(writer)
    }

    /// The file records are currently written to.
    #[cfg(test)]
    pub fn current_path(&self) -> &Path {
        &self.current_path
    }

    /// Writes a `request` and a `response` record; the request names the
    /// response in `WARC-Concurrent-To`. Both land in the same file.
    #[cfg(test)]
    pub fn write_exchange(&mut self, ex: &WarcExchange) -> io::Result<WarcLocation> {
        let encoded = EncodedExchange::new(ex)?;
        let at = self.append(&encoded)?;
        self.drain()?;
        Ok(at)
    }

    /// Archives `body` as an HTML 200 answer to `url` in a new file of
    /// `dir`, as a page's fetch does; returns where.
    #[cfg(test)]
    pub fn archive_html(dir: &Path, url: &str, body: &[u8]) -> WarcLocation {
        let mut writer = WarcWriter::open(dir, 1 << 30).unwrap();
        writer
            .write_exchange(&WarcExchange {
                url,
                ip: None,
                date: SystemTime::now(),
                request_head: b"GET / HTTP/1.1\r\n",
                response_head: b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n",
                body,
                payload_digest: "sha1:X",
                refers_to: None,
                truncated: false,
            })
            .unwrap()
    }

    /// Appends an exchange compressed beforehand, rotating to a new file
    /// first if the current one is full; returns where its response record
    /// goes. It may wait in the buffer: its location is stored only after a
    /// [`WarcWriter::drain`]. On `Err` the file and buffer are as they were.
    pub fn append(&mut self, exchange: &EncodedExchange) -> io::Result<WarcLocation> {
        if self.end() >= self.max_file_bytes && self.exchanges_in_file > 0 {
            self.rotate()?;
        }
        if self.warcinfo_pending {
            self.write_warcinfo()?;
        }
        let start = self.end();
        self.append_members(&exchange.members)?;
        self.exchanges_in_file += 1;
        Ok(WarcLocation {
            file: self.current_name().to_string(),
            offset: start + exchange.request_len as u64,
            length: (exchange.members.len() - exchange.request_len) as u64,
        })
    }

    /// Writes the buffered records to the file (not synced).
    pub fn drain(&mut self) -> io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let pending = std::mem::take(&mut self.pending);
        let written = self.write_at_end(&pending);
        self.pending = pending;
        written?;
        self.pending.clear();
        if self.pending.capacity() > 4 * WRITE_BUFFER_BYTES {
            // One huge record grew it: not kept.
            self.pending = Vec::new();
        }
        Ok(())
    }

    /// Whether every record appended is in the file.
    pub fn is_drained(&self) -> bool {
        self.pending.is_empty()
    }

    /// Whether `at` is a record still only in the buffer.
    pub fn buffers(&self, at: &WarcLocation) -> bool {
        at.offset + at.length > self.on_disk && at.file == self.current_name()
    }

    /// Where the next record goes: the file's length once the buffer is written.
    fn end(&self) -> u64 {
        self.on_disk + self.pending.len() as u64
    }

    /// The current file's name, as locations name it.
    fn current_name(&self) -> &str {
        self.current_path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
    }

    /// Writes the buffered records and makes everything appended durable.
    pub fn flush(&mut self) -> io::Result<()> {
        self.drain()?;
        self.faults
            .take_write()
            .and_then(|()| self.current.sync_data())
            .map_err(|e| with_path(e, &self.current_path, "cannot flush the WARC file"))
    }

    fn rotate(&mut self) -> io::Result<()> {
        self.flush()?;
        let (file, path) = create_file(&self.dir, self.next_number)?;
        self.next_number = self.next_number.saturating_add(1);
        self.current = file;
        self.current_path = path;
        self.on_disk = 0;
        self.exchanges_in_file = 0;
        self.warcinfo_pending = true;
        self.write_warcinfo()
    }

    fn write_warcinfo(&mut self) -> io::Result<()> {
        let fields = format!(
            "software: crawldeck/{}\r\nformat: WARC File Format 1.1\r\n\
             conformsTo: http://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/\r\n",
            env!("CARGO_PKG_VERSION")
        );
        let headers = vec![
            ("WARC-Type", "warcinfo".to_string()),
            ("WARC-Record-ID", record_id()),
            ("WARC-Date", warc_date(SystemTime::now())),
            ("WARC-Filename", self.current_name().to_string()),
            ("Content-Type", "application/warc-fields".into()),
        ];
        let mut member = Vec::new();
        encode_record(headers, &[fields.as_bytes()], &mut member)?;
        // Written at once (the buffer is empty when a file starts): a file
        // always begins with its warcinfo.
        self.write_at_end(&member)?;
        self.warcinfo_pending = false;
        Ok(())
    }

    /// Buffers whole records, writing the buffer once it is full. A record
    /// that fills a buffer the disk then refuses is not kept: what a full
    /// disk cannot take does not pile up in memory.
    fn append_members(&mut self, members: &[u8]) -> io::Result<()> {
        self.pending.extend_from_slice(members);
        if self.pending.len() >= WRITE_BUFFER_BYTES {
            if let Err(e) = self.drain() {
                self.pending.truncate(self.pending.len() - members.len());
                return Err(e);
            }
        }
        Ok(())
    }

    /// Writes whole records after the last one on disk, counting them there,
    /// or, on failure, cuts the file back to it: a reader never meets half a
    /// gzip member.
    fn write_at_end(&mut self, members: &[u8]) -> io::Result<()> {
        let written = self.write_all_or_part(members);
        if let Err(e) = written {
            let cut = self
                .current
                .set_len(self.on_disk)
                .and_then(|()| self.current.seek(SeekFrom::Start(self.on_disk)));
            let e = match cut {
                Ok(_) => e,
                Err(cut) => io::Error::new(
                    e.kind(),
                    format!("{e}; cutting the partial record off failed too: {cut}"),
                ),
            };
            return Err(with_path(
                e,
                &self.current_path,
                "cannot write to the WARC file",
            ));
        }
        self.on_disk += members.len() as u64;
        Ok(())
    }

    /// `write_all`, except that a full disk (real or simulated) leaves part
    /// of the bytes written, as a real one does.
    fn write_all_or_part(&mut self, bytes: &[u8]) -> io::Result<()> {
        if let Err(e) = self.faults.take_write() {
            self.current.write_all(&bytes[..bytes.len() / 2])?;
            return Err(e);
        }
        self.current.write_all(bytes)
    }
}

/// An exchange's two records, each a gzip member. Compressing is the costly
/// part of archiving, so page threads do it before they take the shared writer.
pub struct EncodedExchange {
    members: Vec<u8>,
    /// Bytes of the request record's member; the response's follows it.
    request_len: usize,
}

/// CPU time the crawl's threads spend encoding exchanges: digests, headers
/// and compression (`bench --archive-floor`).
pub static ENCODING: CpuTally = CpuTally::new();

impl EncodedExchange {
    pub fn new(ex: &WarcExchange) -> io::Result<Self> {
        ENCODING.time(|| Self::encode(ex))
    }

    fn encode(ex: &WarcExchange) -> io::Result<Self> {
        let request_id = record_id();
        let response_id = record_id();
        let date = warc_date(ex.date);
        let url = header_value(ex.url);
        let ip = ex.ip.map(|ip| ip.to_string());

        let request_block = [ex.request_head, head_terminator(ex.request_head)];
        let mut headers = vec![
            ("WARC-Type", "request".to_string()),
            ("WARC-Record-ID", request_id),
            ("WARC-Date", date.clone()),
            ("WARC-Target-URI", url.clone()),
        ];
        if let Some(ip) = &ip {
            headers.push(("WARC-IP-Address", ip.clone()));
        }
        headers.push(("WARC-Concurrent-To", response_id.clone()));
        headers.push(("Content-Type", "application/http;msgtype=request".into()));
        let mut members = Vec::new();
        encode_record(headers, &request_block, &mut members)?;
        let request_len = members.len();

        // A 304 to a conditional request (a recrawl) is a revisit: the
        // content is in the record of an earlier fetch. So is a payload
        // archived before: its record keeps the HTTP head only.
        let not_modified = status_code(ex.response_head) == Some(304);
        let identical = !not_modified && ex.refers_to.is_some();
        let body: &[u8] = if identical { b"" } else { ex.body };
        let response_block = [ex.response_head, head_terminator(ex.response_head), body];
        let kind = if not_modified || identical {
            "revisit"
        } else {
            "response"
        };
        let mut headers = vec![
            ("WARC-Type", kind.to_string()),
            ("WARC-Record-ID", response_id),
            ("WARC-Date", date),
            ("WARC-Target-URI", url),
        ];
        if let Some(ip) = ip {
            headers.push(("WARC-IP-Address", ip));
        }
        headers.extend(revisit_fields(ex, not_modified, identical));
        if ex.truncated && kind == "response" {
            headers.push(("WARC-Truncated", "length".into()));
        }
        headers.push(("Content-Type", "application/http;msgtype=response".into()));
        encode_record(headers, &response_block, &mut members)?;
        Ok(EncodedExchange {
            members,
            request_len,
        })
    }
}

/// A response's profile, `WARC-Refers-To-*` and payload digest fields.
fn revisit_fields(
    ex: &WarcExchange,
    not_modified: bool,
    identical: bool,
) -> Vec<(&'static str, String)> {
    let mut fields = Vec::new();
    if not_modified {
        fields.push(("WARC-Profile", REVISIT_NOT_MODIFIED.to_string()));
    } else if identical {
        fields.push(("WARC-Profile", REVISIT_IDENTICAL.to_string()));
    }
    if let Some(earlier) = ex.refers_to {
        fields.push(("WARC-Refers-To-Target-URI", header_value(&earlier.uri)));
        fields.push(("WARC-Refers-To-Date", header_value(&earlier.date)));
    }
    // A 304's payload is the earlier record's, known or not.
    let payload = match (not_modified, ex.refers_to) {
        (true, Some(earlier)) => earlier.payload_digest.as_deref(),
        (true, None) => None,
        (false, _) => Some(ex.payload_digest),
    };
    if let Some(digest) = payload {
        fields.push(("WARC-Payload-Digest", header_value(digest)));
    }
    fields
}

/// Appends one record to `out` as one gzip member; adds Block-Digest and
/// Content-Length.
fn encode_record(
    mut headers: Vec<(&str, String)>,
    block: &[&[u8]],
    out: &mut Vec<u8>,
) -> io::Result<()> {
    let length: usize = block.iter().map(|part| part.len()).sum();
    let mut digest = Sha1::new();
    for part in block {
        digest.update(part);
    }
    let block_digest: [u8; 20] = digest.finalize().into();
    headers.push((
        "WARC-Block-Digest",
        format!("sha1:{}", data_encoding::BASE32.encode(&block_digest)),
    ));
    headers.push(("Content-Length", length.to_string()));

    let mut head = String::from("WARC/1.1\r\n");
    for (name, value) in &headers {
        head.push_str(name);
        head.push_str(": ");
        head.push_str(value);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");

    let mut parts = Vec::with_capacity(block.len() + 2);
    parts.push(head.as_bytes());
    parts.extend_from_slice(block);
    parts.push(b"\r\n\r\n");
    super::gzip::append_member(&parts, out)
}

fn create_file(dir: &Path, number: u32) -> io::Result<(File, PathBuf)> {
    let path = dir.join(format!("{FILE_PREFIX}{number:05}{FILE_SUFFIX}"));
    let file = super::private::private_file_options()
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(|e| with_path(e, &path, "cannot create the WARC file"))?;
    Ok((file, path))
}

/// `crawldeck-00042.warc.gz` -> 42.
pub(crate) fn file_number(name: &str) -> Option<u32> {
    let digits = name.strip_prefix(FILE_PREFIX)?.strip_suffix(FILE_SUFFIX)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

fn with_path(error: io::Error, path: &Path, what: &str) -> io::Error {
    io::Error::new(
        error.kind(),
        format!(
            "{what} {}: {error} (check the data directory's permissions and free space)",
            path.display()
        ),
    )
}

fn record_id() -> String {
    format!("<urn:uuid:{}>", uuid::Uuid::new_v4())
}

/// A header value cannot carry line breaks or other control characters.
fn header_value(value: &str) -> String {
    value.chars().filter(|c| !c.is_control()).collect()
}

/// The status code of an HTTP response head (`HTTP/1.1 304 Not Modified`).
fn status_code(head: &[u8]) -> Option<u16> {
    let line = head.split(|&b| b == b'\n').next()?;
    let code = line.split(|&b| b == b' ').nth(1)?;
    std::str::from_utf8(code).ok()?.trim().parse().ok()
}

/// What must follow a header block so that it ends with an empty line.
fn head_terminator(head: &[u8]) -> &'static [u8] {
    if head.is_empty() || head.ends_with(b"\r\n\r\n") {
        b""
    } else if head.ends_with(b"\r\n") {
        b"\r\n"
    } else {
        b"\r\n\r\n"
    }
}

/// `2026-11-22T09:00:00Z` (UTC, second precision; WARC 1.1 allows more, readers expect this).
pub fn warc_date(time: SystemTime) -> String {
    let secs = time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
#[path = "warc_tests.rs"]
mod tests;
