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

/// Every answer of a data directory as a replay tool serves it, in file
/// order: a response record's body, or for a revisit record the body of the
/// response it refers to (a payload archived before, or a 304's earlier
/// capture).
pub fn responses(data: &Path) -> Vec<ArchivedResponse> {
    let records = all_records(data);
    let body_of = |r: &Record| {
        let at = r
            .block
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .map_or(r.block.len(), |i| i + 4);
        r.block[at..].to_vec()
    };
    let uri = |r: &Record| r.get("WARC-Target-URI").unwrap_or_default().to_string();
    let referred = |r: &Record| {
        let (to, date) = (
            r.get("WARC-Refers-To-Target-URI")?,
            r.get("WARC-Refers-To-Date")?,
        );
        records.iter().find(|o| {
            o.is("response")
                && o.get("WARC-Target-URI") == Some(to)
                && o.get("WARC-Date") == Some(date)
        })
    };
    records
        .iter()
        .filter_map(|r| {
            let body = match () {
                _ if r.is("response") => body_of(r),
                _ if r.is("revisit") => body_of(referred(r)?),
                _ => return None,
            };
            Some(ArchivedResponse { uri: uri(r), body })
        })
        .collect()
}

/// The target URI of every answer of a data directory (see [`responses`]).
pub fn response_uris(data: &Path) -> Vec<String> {
    responses(data).into_iter().map(|r| r.uri).collect()
}
