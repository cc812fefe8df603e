//! The crawl's WARC files read back record by record, as a replay tool
//! would: every gzip member must be whole.

use std::io::Read;
use std::path::Path;

/// One response record: its target URI and the HTTP body it holds.
pub struct ArchivedResponse {
    pub uri: String,
    pub body: Vec<u8>,
}

/// Every response record in the crawl's WARC files, in file order; fails on
/// a partial gzip member or a record cut short.
pub fn responses(dir: &Path) -> Vec<ArchivedResponse> {
    let mut files: Vec<_> = std::fs::read_dir(dir.join("warc"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    files.sort();
    let mut found = Vec::new();
    for path in files {
        let bytes = std::fs::read(path).unwrap();
        let mut rest: &[u8] = &bytes;
        while !rest.is_empty() {
            let mut decoder = flate2::bufread::GzDecoder::new(rest);
            let mut record = Vec::new();
            decoder
                .read_to_end(&mut record)
                .expect("every gzip member is whole");
            rest = decoder.into_inner();
            let head_end = find(&record, b"\r\n\r\n").expect("a WARC head") + 4;
            let head = String::from_utf8_lossy(&record[..head_end]).into_owned();
            let length: usize = header(&head, "Content-Length").parse().unwrap();
            assert_eq!(record.len(), head_end + length + 4, "record is whole");
            if header(&head, "WARC-Type") == "response" {
                let block = &record[head_end..head_end + length];
                let body_at = find(block, b"\r\n\r\n").map_or(block.len(), |i| i + 4);
                found.push(ArchivedResponse {
                    uri: header(&head, "WARC-Target-URI").to_string(),
                    body: block[body_at..].to_vec(),
                });
            }
        }
    }
    found
}

/// The target URI of every response record in the crawl's WARC files.
pub fn response_uris(dir: &Path) -> Vec<String> {
    responses(dir).into_iter().map(|r| r.uri).collect()
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn header<'a>(head: &'a str, name: &str) -> &'a str {
    head.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(": "))
        .unwrap_or_default()
}
