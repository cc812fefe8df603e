use std::collections::HashMap;
use std::io::Read;
use std::time::Duration;

use flate2::bufread::GzDecoder;

use super::*;
use crate::engine::dedup::ContentDigest;

struct Record {
    headers: HashMap<String, String>,
    block: Vec<u8>,
}

/// Splits a file into gzip members and parses exactly one WARC record from each.
fn read_records(path: &Path) -> Vec<Record> {
    let bytes = fs::read(path).unwrap();
    let mut rest: &[u8] = &bytes;
    let mut records = Vec::new();
    while !rest.is_empty() {
        let mut decoder = GzDecoder::new(rest);
        let mut member = Vec::new();
        decoder.read_to_end(&mut member).unwrap();
        rest = decoder.into_inner();
        records.push(parse_record(&member));
    }
    // The whole file also reads as one stream, the way WARC tools read it.
    let mut all = Vec::new();
    flate2::read::MultiGzDecoder::new(&bytes[..])
        .read_to_end(&mut all)
        .unwrap();
    assert!(all.starts_with(b"WARC/1.1\r\n"));
    records
}

fn parse_record(member: &[u8]) -> Record {
    let end = member.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = std::str::from_utf8(&member[..end]).unwrap();
    let mut lines = head.split("\r\n");
    assert_eq!(lines.next(), Some("WARC/1.1"));
    let headers: HashMap<String, String> = lines
        .map(|line| {
            let (name, value) = line.split_once(": ").unwrap();
            (name.to_string(), value.to_string())
        })
        .collect();
    let length: usize = headers["Content-Length"].parse().unwrap();
    let block = member[end + 4..end + 4 + length].to_vec();
    assert_eq!(
        &member[end + 4 + length..],
        b"\r\n\r\n",
        "record ends with two CRLFs"
    );
    let digest: [u8; 20] = Sha1::digest(&block).into();
    assert_eq!(
        headers["WARC-Block-Digest"],
        format!("sha1:{}", data_encoding::BASE32.encode(&digest))
    );
    Record { headers, block }
}

fn exchange<'a>(
    url: &'a str,
    body: &'a [u8],
    digest: &'a str,
    ip: Option<IpAddr>,
) -> WarcExchange<'a> {
    WarcExchange {
        url,
        ip,
        date: UNIX_EPOCH + Duration::from_secs(1_795_338_000),
        request_head: b"GET /a HTTP/1.1\r\nHost: shop.localhost:40123\r\nUser-Agent: crawldeck\r\n",
        response_head: b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n",
        body,
        payload_digest: digest,
        refers_to: None,
        truncated: false,
    }
}

#[test]
fn two_exchanges_read_back_as_linked_records() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = WarcWriter::open(dir.path(), 1 << 30).unwrap();
    let body_a = b"<html><title>a</title></html>".to_vec();
    let digest_a = ContentDigest::of(&body_a).warc_label();
    let ip = Some("127.0.0.1".parse().unwrap());
    writer
        .write_exchange(&exchange(
            "http://shop.localhost:40123/a",
            &body_a,
            &digest_a,
            ip,
        ))
        .unwrap();
    let body_b = vec![0u8; 100_000];
    let digest_b = ContentDigest::of(&body_b).warc_label();
    writer
        .write_exchange(&exchange(
            "http://shop.localhost:40123/b\r\nX: y",
            &body_b,
            &digest_b,
            None,
        ))
        .unwrap();
    writer.flush().unwrap();
    let path = dir.path().join("warc/crawldeck-00000.warc.gz");
    assert_eq!(writer.current_path(), path);

    let records = read_records(&path);
    let types: Vec<&str> = records
        .iter()
        .map(|r| r.headers["WARC-Type"].as_str())
        .collect();
    assert_eq!(
        types,
        ["warcinfo", "request", "response", "request", "response"]
    );

    let info = &records[0];
    assert_eq!(info.headers["WARC-Filename"], "crawldeck-00000.warc.gz");
    assert_eq!(info.headers["Content-Type"], "application/warc-fields");
    assert!(String::from_utf8_lossy(&info.block).contains("format: WARC File Format 1.1"));

    let (request, response) = (&records[1], &records[2]);
    assert_eq!(
        request.headers["WARC-Concurrent-To"],
        response.headers["WARC-Record-ID"]
    );
    assert_ne!(
        request.headers["WARC-Record-ID"],
        response.headers["WARC-Record-ID"]
    );
    assert!(response.headers["WARC-Record-ID"].starts_with("<urn:uuid:"));
    assert_eq!(
        request.headers["Content-Type"],
        "application/http;msgtype=request"
    );
    assert_eq!(
        response.headers["Content-Type"],
        "application/http;msgtype=response"
    );
    assert_eq!(response.headers["WARC-Date"], "2026-11-22T09:00:00Z");
    assert_eq!(
        response.headers["WARC-Target-URI"],
        "http://shop.localhost:40123/a"
    );
    assert_eq!(response.headers["WARC-IP-Address"], "127.0.0.1");
    assert_eq!(response.headers["WARC-Payload-Digest"], digest_a);
    // The request head gained its terminating empty line.
    assert!(request.block.ends_with(b"User-Agent: crawldeck\r\n\r\n"));
    assert!(response.block.starts_with(b"HTTP/1.1 200 OK\r\n"));
    assert!(response.block.ends_with(&body_a));
    let head_len = response.block.len() - body_a.len();
    assert!(response.block[..head_len].ends_with(b"\r\n\r\n"));

    let second = &records[4];
    assert_eq!(second.block.len(), 44 + 100_000);
    assert!(!second.headers.contains_key("WARC-IP-Address"));
    // Control characters from the network never split a header.
    assert_eq!(
        second.headers["WARC-Target-URI"],
        "http://shop.localhost:40123/bX: y"
    );
}

#[test]
fn rotation_starts_a_new_file_with_its_own_warcinfo() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = WarcWriter::open(dir.path(), 200).unwrap();
    let body = vec![b'x'; 5_000];
    let digest = ContentDigest::of(&body).warc_label();
    for _ in 0..2 {
        writer
            .write_exchange(&exchange("http://h.localhost/", &body, &digest, None))
            .unwrap();
    }
    writer.flush().unwrap();
    drop(writer);
    let warc = dir.path().join("warc");
    let first = read_records(&warc.join("crawldeck-00000.warc.gz"));
    let second = read_records(&warc.join("crawldeck-00001.warc.gz"));
    // warcinfo alone passes the 200-byte cap, yet each file holds a whole exchange.
    assert_eq!(first.len(), 3);
    assert_eq!(second.len(), 3);
    assert_eq!(second[0].headers["WARC-Type"], "warcinfo");
    assert_eq!(
        second[0].headers["WARC-Filename"],
        "crawldeck-00001.warc.gz"
    );
}

#[test]
fn reopening_continues_numbering_and_ignores_foreign_files() {
    let dir = tempfile::tempdir().unwrap();
    drop(WarcWriter::open(dir.path(), 1 << 20).unwrap());
    let warc = dir.path().join("warc");
    fs::write(warc.join("crawldeck-00007.warc.gz"), b"").unwrap();
    fs::write(warc.join("crawldeck-latest.warc.gz"), b"").unwrap();
    fs::write(warc.join("notes.txt"), b"").unwrap();
    let writer = WarcWriter::open(dir.path(), 1 << 20).unwrap();
    assert_eq!(writer.current_path(), warc.join("crawldeck-00008.warc.gz"));
    drop(writer);
    // The first file is intact: still just its warcinfo.
    assert_eq!(read_records(&warc.join("crawldeck-00000.warc.gz")).len(), 1);
}

#[test]
fn open_reports_the_path_when_the_directory_is_unusable() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("file");
    fs::write(&blocker, b"").unwrap();
    let message = WarcWriter::open(&blocker, 1 << 20)
        .err()
        .unwrap()
        .to_string();
    assert!(message.contains("WARC directory"), "{message}");
    assert!(message.contains("file/warc"), "{message}");
}

#[test]
fn warc_dates_are_utc_iso8601() {
    let at = |secs: u64| warc_date(UNIX_EPOCH + Duration::from_secs(secs));
    assert_eq!(at(0), "1970-01-01T00:00:00Z");
    assert_eq!(at(951_868_799), "2000-02-29T23:59:59Z");
    assert_eq!(at(1_795_338_000), "2026-11-22T09:00:00Z");
    assert_eq!(
        warc_date(UNIX_EPOCH - Duration::from_secs(5)),
        "1970-01-01T00:00:00Z"
    );
}

#[test]
fn file_numbers_parse_only_our_names() {
    assert_eq!(file_number("crawldeck-00042.warc.gz"), Some(42));
    assert_eq!(file_number("crawldeck-123456.warc.gz"), Some(123_456));
    assert_eq!(file_number("crawldeck-.warc.gz"), None);
    assert_eq!(file_number("crawldeck-+1.warc.gz"), None);
    assert_eq!(file_number("other-00001.warc.gz"), None);
}

#[test]
fn a_304_is_archived_as_a_server_not_modified_revisit() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = WarcWriter::open(dir.path(), 1 << 30).unwrap();
    let mut ex = exchange("http://shop.localhost:40123/a", b"", "sha1:unused", None);
    ex.response_head = b"HTTP/1.1 304 Not Modified\r\nETag: \"a1\"\r\n\r\n";
    writer.write_exchange(&ex).unwrap();
    writer.flush().unwrap();
    let records = read_records(&dir.path().join("warc/crawldeck-00000.warc.gz"));
    let revisit = &records[2];
    assert_eq!(revisit.headers["WARC-Type"], "revisit");
    assert_eq!(
        revisit.headers["WARC-Profile"],
        "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
    );
    assert!(!revisit.headers.contains_key("WARC-Payload-Digest"));
    assert!(revisit.block.starts_with(b"HTTP/1.1 304"));
    assert_eq!(status_code(b"HTTP/1.1 200 OK\r\n"), Some(200));
    assert_eq!(status_code(b"garbage"), None);
}

/// The response record of `ex` written as a revisit of an earlier record of
/// `http://shop.localhost:40123/a` with payload `sha1:EARLIER`.
fn written_as_revisit(ex: WarcExchange) -> Record {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = WarcWriter::open(dir.path(), 1 << 30).unwrap();
    let earlier = EarlierCapture {
        uri: "http://shop.localhost:40123/a".into(),
        date: "2026-11-22T09:00:00Z".into(),
        payload_digest: Some("sha1:EARLIER".into()),
    };
    let ex = WarcExchange {
        refers_to: Some(&earlier),
        ..ex
    };
    writer.write_exchange(&ex).unwrap();
    let records = read_records(&dir.path().join("warc/crawldeck-00000.warc.gz"));
    let revisit = records.into_iter().nth(2).unwrap();
    assert_eq!(revisit.headers["WARC-Type"], "revisit");
    assert_eq!(
        revisit.headers["WARC-Refers-To-Target-URI"],
        "http://shop.localhost:40123/a"
    );
    assert_eq!(
        revisit.headers["WARC-Refers-To-Date"],
        "2026-11-22T09:00:00Z"
    );
    assert!(!revisit.headers.contains_key("WARC-Truncated"));
    revisit
}

#[test]
fn a_payload_archived_before_is_an_identical_payload_revisit_with_its_head_only() {
    let ex = exchange(
        "http://shop.localhost:40123/b",
        b"<p>same</p>",
        "sha1:EARLIER",
        None,
    );
    let revisit = written_as_revisit(ex);
    assert_eq!(
        revisit.headers["WARC-Profile"],
        "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
    );
    assert_eq!(revisit.headers["WARC-Payload-Digest"], "sha1:EARLIER");
    assert_eq!(
        revisit.block, b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n",
        "the HTTP head, no body"
    );
}

#[test]
fn a_304_with_an_earlier_record_refers_to_it_and_carries_its_payload_digest() {
    let mut ex = exchange("http://shop.localhost:40123/a", b"", "sha1:unused", None);
    ex.response_head = b"HTTP/1.1 304 Not Modified\r\n\r\n";
    let revisit = written_as_revisit(ex);
    assert_eq!(
        revisit.headers["WARC-Profile"],
        "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
    );
    assert_eq!(revisit.headers["WARC-Payload-Digest"], "sha1:EARLIER");
    assert!(revisit.block.starts_with(b"HTTP/1.1 304"));
}

/// Writes exchange `n` (`http://h.localhost/n`), as the page threads do.
fn write_numbered(writer: &mut WarcWriter, n: usize) -> io::Result<()> {
    let url = format!("http://h.localhost/{n}");
    let body = format!("page {n} {}", "x".repeat(3_000));
    let digest = ContentDigest::of(body.as_bytes()).warc_label();
    writer
        .write_exchange(&exchange(&url, body.as_bytes(), &digest, None))
        .map(drop)
}

fn target_uris(records: &[Record]) -> Vec<String> {
    records
        .iter()
        .filter(|r| r.headers["WARC-Type"] == "response")
        .map(|r| r.headers["WARC-Target-URI"].clone())
        .collect()
}

#[test]
fn a_full_disk_leaves_only_whole_records_and_writing_goes_on_once_it_heals() {
    let dir = tempfile::tempdir().unwrap();
    // warcinfo, then four exchanges; the fifth write fails half done.
    let faults = DiskFaults::full_after(5);
    let mut writer = WarcWriter::open_with_faults(dir.path(), 1 << 20, faults.clone()).unwrap();
    for n in 0..4 {
        write_numbered(&mut writer, n).unwrap();
    }
    // The fifth exchange is buffered; writing it fails.
    let err = write_numbered(&mut writer, 4).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::StorageFull);
    let message = err.to_string();
    assert!(message.contains("crawldeck-00000.warc.gz"), "{message}");
    assert!(message.contains("No space left on device"), "{message}");
    assert!(writer.drain().is_err(), "still full");
    assert!(!writer.is_drained());
    let path = writer.current_path().to_path_buf();
    // read_records fails on any partial gzip member.
    assert_eq!(read_records(&path).len(), 1 + 4 * 2);

    faults.heal();
    // The buffered exchange goes where its location said.
    writer.drain().unwrap();
    write_numbered(&mut writer, 5).unwrap();
    writer.flush().unwrap();
    let uris = target_uris(&read_records(&path));
    let expected: Vec<String> = (0..6).map(|n| format!("http://h.localhost/{n}")).collect();
    assert_eq!(uris, expected, "each exchange once, in order");
}

#[test]
fn a_new_file_whose_warcinfo_failed_gets_it_before_its_first_exchange() {
    let dir = tempfile::tempdir().unwrap();
    // warcinfo and one exchange fill the first file; the rotation syncs it
    // (a write), creates the next file, and its warcinfo fails.
    let faults = DiskFaults::full_after(3);
    let mut writer = WarcWriter::open_with_faults(dir.path(), 200, faults.clone()).unwrap();
    write_numbered(&mut writer, 0).unwrap();
    assert!(write_numbered(&mut writer, 1).is_err());
    let warc = dir.path().join("warc");
    assert_eq!(
        fs::metadata(warc.join("crawldeck-00001.warc.gz"))
            .unwrap()
            .len(),
        0
    );
    faults.heal();
    write_numbered(&mut writer, 1).unwrap();
    writer.flush().unwrap();
    let second = read_records(&warc.join("crawldeck-00001.warc.gz"));
    assert_eq!(second[0].headers["WARC-Type"], "warcinfo");
    assert_eq!(target_uris(&second), ["http://h.localhost/1"]);
    assert_eq!(
        target_uris(&read_records(&warc.join("crawldeck-00000.warc.gz"))),
        ["http://h.localhost/0"]
    );
}

#[test]
fn a_body_cut_at_its_cap_is_marked_truncated_by_length() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = WarcWriter::open(dir.path(), 1 << 30).unwrap();
    let url = "http://shop.localhost:40123/a";
    let whole = exchange(url, b"<html>all</html>", "sha1:A", None);
    let cut = WarcExchange {
        truncated: true,
        ..exchange(url, b"<html>first part", "sha1:B", None)
    };
    writer.write_exchange(&whole).unwrap();
    writer.write_exchange(&cut).unwrap();
    writer.flush().unwrap();
    let records = read_records(&dir.path().join("warc/crawldeck-00000.warc.gz"));
    let responses: Vec<_> = records
        .iter()
        .filter(|r| r.headers["WARC-Type"] == "response")
        .collect();
    assert_eq!(responses.len(), 2);
    assert!(!responses[0].headers.contains_key("WARC-Truncated"));
    assert_eq!(responses[1].headers["WARC-Truncated"], "length");
}

/// An exchange whose body does not compress: `bytes` of xorshift output.
fn incompressible(writer: &mut WarcWriter, n: u64, bytes: usize) -> io::Result<WarcLocation> {
    let mut state = n.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let body: Vec<u8> = (0..bytes)
        .map(|_| crate::engine::store::tests::xorshift(&mut state) as u8)
        .collect();
    let url = format!("http://h.localhost/{n}");
    let digest = ContentDigest::of(&body).warc_label();
    writer.append(&EncodedExchange::new(&exchange(
        &url, &body, &digest, None,
    ))?)
}

#[test]
fn records_wait_in_the_buffer_until_drained_and_go_where_their_locations_say() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = WarcWriter::open(dir.path(), 1 << 30).unwrap();
    let body = b"<html>buffered</html>";
    let digest = ContentDigest::of(body).warc_label();
    let first = writer
        .append(
            &EncodedExchange::new(&exchange("http://h.localhost/a", body, &digest, None)).unwrap(),
        )
        .unwrap();
    let second = incompressible(&mut writer, 1, 10_000).unwrap();
    let path = writer.current_path().to_path_buf();
    assert_eq!(read_records(&path).len(), 1, "only the warcinfo is written");
    assert!(writer.buffers(&first) && writer.buffers(&second));
    assert!(!writer.is_drained());

    writer.drain().unwrap();
    assert!(writer.is_drained());
    assert!(!writer.buffers(&first) && !writer.buffers(&second));
    assert_eq!(read_records(&path).len(), 1 + 2 * 2);
    let read = crate::engine::store::read_response(dir.path(), &first, 1 << 20).unwrap();
    assert_eq!(read.body, body);
    let read = crate::engine::store::read_response(dir.path(), &second, 1 << 20).unwrap();
    assert_eq!(read.body.len(), 10_000);
}

#[test]
fn the_append_that_fills_the_buffer_writes_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = WarcWriter::open(dir.path(), 1 << 30).unwrap();
    let path = writer.current_path().to_path_buf();
    let record = WRITE_BUFFER_BYTES / 5;
    for n in 0..4 {
        incompressible(&mut writer, n, record).unwrap();
    }
    assert_eq!(read_records(&path).len(), 1);
    let last = incompressible(&mut writer, 4, record).unwrap();
    assert!(
        writer.is_drained(),
        "a megabyte buffered is written at once"
    );
    assert!(!writer.buffers(&last));
    assert_eq!(read_records(&path).len(), 1 + 5 * 2);
}

#[test]
fn a_record_that_fills_the_buffer_on_a_full_disk_is_refused_and_the_rest_kept() {
    let dir = tempfile::tempdir().unwrap();
    // The warcinfo is the one write that succeeds.
    let faults = DiskFaults::full_after(1);
    let mut writer = WarcWriter::open_with_faults(dir.path(), 1 << 30, faults.clone()).unwrap();
    let path = writer.current_path().to_path_buf();
    let record = WRITE_BUFFER_BYTES / 5;
    let kept: Vec<WarcLocation> = (0..4)
        .map(|n| incompressible(&mut writer, n, record).unwrap())
        .collect();
    let err = incompressible(&mut writer, 4, record).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::StorageFull);
    assert_eq!(read_records(&path).len(), 1, "whole records only");

    faults.heal();
    writer.drain().unwrap();
    let records = read_records(&path);
    assert_eq!(records.len(), 1 + 4 * 2, "the refused record is not kept");
    for (n, at) in kept.iter().enumerate() {
        let read = crate::engine::store::read_response(dir.path(), at, 1 << 20).unwrap();
        assert_eq!(
            read.body.len(),
            record,
            "record {n} where its location says"
        );
    }
    // The next record goes right after them.
    let next = incompressible(&mut writer, 5, 100).unwrap();
    writer.drain().unwrap();
    assert_eq!(
        crate::engine::store::read_response(dir.path(), &next, 1 << 20)
            .unwrap()
            .body
            .len(),
        100
    );
}
