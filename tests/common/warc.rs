//! Reading a crawl's WARC files back in tests: each gzip member must hold
//! exactly one whole record.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

/// One record: its file, header fields and block.
pub struct Record {
    pub file: String,
    pub headers: HashMap<String, String>,
    pub block: Vec<u8>,
}

impl Record {
    pub fn get(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }

    pub fn is(&self, kind: &str) -> bool {
        self.get("WARC-Type") == Some(kind)
    }
}

/// The WARC files of a data directory, in order.
pub fn files(data: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(data.join("warc"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
}

/// Every record of a file; fails on a partial gzip member or a record cut short.
pub fn records(path: &Path) -> Vec<Record> {
    let bytes = std::fs::read(path).unwrap();
    let file = path.file_name().unwrap().to_string_lossy().into_owned();
    let mut rest: &[u8] = &bytes;
    let mut records = Vec::new();
    while !rest.is_empty() {
        let mut decoder = flate2::bufread::GzDecoder::new(rest);
        let mut member = Vec::new();
        decoder
            .read_to_end(&mut member)
            .expect("every gzip member is whole");
        rest = decoder.into_inner();
        records.push(record(file.clone(), &member));
    }
    records
}

/// Every record of every file of a data directory.
pub fn all_records(data: &Path) -> Vec<Record> {
    files(data).iter().flat_map(|f| records(f)).collect()
}

fn record(file: String, member: &[u8]) -> Record {
    let end = member.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let head = String::from_utf8_lossy(&member[..end]);
    assert!(head.starts_with("WARC/1.1\r\n"), "{file}: {head}");
    let headers: HashMap<String, String> = head
        .lines()
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_string(), value.trim().to_string()))
        .collect();
    let length: usize = headers["Content-Length"].parse().unwrap();
    assert_eq!(
        member.len(),
        end + length + 4,
        "{file}: the record is whole, two CRLFs after its block"
    );
    Record {
        block: member[end..end + length].to_vec(),
        file,
        headers,
    }
}

/// One response record: its target URI and the HTTP body it holds.
pub struct ArchivedResponse {
    pub uri: String,
    pub body: Vec<u8>,
}

/// Every response record of a data directory, in file order.
pub fn responses(data: &Path) -> Vec<ArchivedResponse> {
    all_records(data)
        .into_iter()
        .filter(|r| r.is("response"))
        .map(|r| {
            let body_at = r
                .block
                .windows(4)
                .position(|w| w == b"\r\n\r\n")
                .map_or(r.block.len(), |i| i + 4);
            ArchivedResponse {
                uri: r.get("WARC-Target-URI").unwrap_or_default().to_string(),
                body: r.block[body_at..].to_vec(),
            }
        })
        .collect()
}

/// The target URI of every response record of a data directory.
pub fn response_uris(data: &Path) -> Vec<String> {
    responses(data).into_iter().map(|r| r.uri).collect()
}
