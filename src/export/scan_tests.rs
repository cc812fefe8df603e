use super::*;
use crate::engine::store::warc::{WarcExchange, WarcWriter};
use std::time::SystemTime;

fn exchange<'a>(url: &'a str, response_head: &'a [u8], body: &'a [u8]) -> WarcExchange<'a> {
    WarcExchange {
        url,
        ip: None,
        date: SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_800_000_000),
        request_head: b"GET / HTTP/1.1\r\nHost: h.localhost\r\n",
        response_head,
        body,
        payload_digest: "sha1:PAYLOAD",
        refers_to: None,
        truncated: false,
    }
}

fn scanned(path: &Path, limit: u64) -> (Vec<ScannedRecord>, u64) {
    let mut records = Vec::new();
    let whole = scan_file(path, limit, |r| {
        records.push(r);
        Ok(())
    })
    .unwrap();
    (records, whole)
}

#[test]
fn records_are_found_where_the_writer_put_them() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = WarcWriter::open(dir.path(), 1 << 30).unwrap();
    let ok = b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n";
    let first = writer
        .write_exchange(&exchange("http://h.localhost/a", ok, &[b'x'; 70_000]))
        .unwrap();
    let not_modified = b"HTTP/1.1 304 Not Modified\r\n";
    let second = writer
        .write_exchange(&exchange("http://h.localhost/b", not_modified, b""))
        .unwrap();
    let path = writer.current_path().to_path_buf();
    let len = std::fs::metadata(&path).unwrap().len();
    let (records, whole) = scanned(&path, len);
    assert_eq!(whole, len);
    let kinds: Vec<&str> = records.iter().map(|r| r.kind.as_str()).collect();
    assert_eq!(
        kinds,
        ["warcinfo", "request", "response", "request", "revisit"]
    );
    let response = &records[2];
    assert_eq!(
        (response.offset, response.length),
        (first.offset, first.length)
    );
    assert_eq!(response.http_status.as_deref(), Some("200"));
    assert_eq!(
        response.http_content_type.as_deref(),
        Some("text/html; charset=utf-8")
    );
    assert_eq!(response.payload_digest.as_deref(), Some("sha1:PAYLOAD"));
    assert_eq!(response.date.as_deref(), Some("2027-01-15T08:00:00Z"));
    let bytes = std::fs::read(&path).unwrap();
    let member = &bytes[first.offset as usize..(first.offset + first.length) as usize];
    assert_eq!(
        response.record_digest,
        format!("sha256:{}", hex(&Sha256::digest(member)))
    );
    let revisit = &records[4];
    assert_eq!(
        (revisit.offset, revisit.length),
        (second.offset, second.length)
    );
    assert_eq!(revisit.http_status.as_deref(), Some("304"));
    // A revisit has no payload digest of its own: that of its empty payload.
    assert_eq!(
        revisit.payload_digest.as_deref(),
        Some("sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ")
    );
    let mut file = File::open(&path).unwrap();
    let head = record_head(&mut file, first.offset).unwrap();
    assert_eq!(field(&head, "WARC-Type"), Some("response"));
}

#[test]
fn a_record_cut_by_the_length_is_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = WarcWriter::open(dir.path(), 1 << 30).unwrap();
    let ok = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n";
    writer
        .write_exchange(&exchange("http://h.localhost/a", ok, b"one"))
        .unwrap();
    let last = writer
        .write_exchange(&exchange("http://h.localhost/b", ok, &[b'y'; 5_000]))
        .unwrap();
    let path = writer.current_path().to_path_buf();
    let (records, whole) = scanned(&path, last.offset + last.length / 2);
    assert_eq!(
        whole, last.offset,
        "the half-written response is not exported"
    );
    assert_eq!(
        records.len(),
        4,
        "warcinfo and the first exchange, then the second request"
    );
    assert!(records.iter().all(|r| r.offset + r.length <= whole));
}

#[test]
fn a_damaged_record_in_the_middle_fails_with_its_offset() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = WarcWriter::open(dir.path(), 1 << 30).unwrap();
    let ok = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n";
    let first = writer
        .write_exchange(&exchange("http://h.localhost/a", ok, b"one"))
        .unwrap();
    writer
        .write_exchange(&exchange("http://h.localhost/b", ok, b"two"))
        .unwrap();
    let path = writer.current_path().to_path_buf();
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[first.offset as usize + 20] ^= 0xff;
    std::fs::write(&path, &bytes).unwrap();
    let e = scan_file(&path, bytes.len() as u64, |_| Ok(())).unwrap_err();
    assert!(
        e.to_string()
            .contains(&format!("damaged at offset {}", first.offset)),
        "{e}"
    );
}
