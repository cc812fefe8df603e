//! The WACZ 1.1.1 package: a ZIP whose entries are streamed in and hashed
//! as they go, then listed with their SHA-256 and size in
//! `datapackage.json`, itself hashed in `datapackage-digest.json`.
//! Already compressed entries (the WARC files, `index.cdx.gz`) are stored,
//! so a replay tool can read any record with a range request.

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};

use sha2::{Digest, Sha256};
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipWriter};

use super::scan::hex;

pub const WACZ_VERSION: &str = "1.1.1";

/// Entries this large need ZIP64 fields of their own.
const ZIP64_ENTRY: u64 = u32::MAX as u64;

/// One entry as `datapackage.json` lists it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Resource {
    pub name: String,
    pub path: String,
    pub hash: String,
    pub bytes: u64,
}

/// The package's description beside its resources.
#[derive(Debug, Clone, Default)]
pub struct PackageInfo {
    pub title: Option<String>,
    pub main_page_url: Option<String>,
    pub main_page_date: Option<String>,
}

pub struct WaczWriter {
    zip: ZipWriter<BufWriter<File>>,
    resources: Vec<Resource>,
    modified: zip::DateTime,
    created: String,
}

impl WaczWriter {
    pub fn new(file: File) -> Self {
        let created = crate::engine::store::warc::warc_date(std::time::SystemTime::now());
        WaczWriter {
            zip: ZipWriter::new(BufWriter::with_capacity(1 << 20, file)),
            resources: Vec::new(),
            modified: zip_time(&created),
            created,
        }
    }

    /// Streams `reader` into the entry `path`; `size` (known or a bound)
    /// decides whether the entry needs ZIP64 fields.
    pub fn add_stream(
        &mut self,
        path: &str,
        stored: bool,
        size: u64,
        reader: &mut impl Read,
    ) -> io::Result<()> {
        let mut entry = self.start(path, stored, size)?;
        io::copy(reader, &mut entry)?;
        let resource = entry.close();
        self.list(resource);
        Ok(())
    }

    /// Starts the entry `path`, to be written through the returned writer,
    /// closed with [`Entry::close`] and listed with [`WaczWriter::list`].
    pub fn start(&mut self, path: &str, stored: bool, size: u64) -> io::Result<Entry<'_>> {
        let method = if stored {
            CompressionMethod::Stored
        } else {
            CompressionMethod::Deflated
        };
        let options = SimpleFileOptions::default()
            .compression_method(method)
            .last_modified_time(self.modified)
            .large_file(size >= ZIP64_ENTRY)
            .unix_permissions(0o644);
        self.zip
            .start_file(path, options)
            .map_err(io::Error::other)?;
        Ok(Entry {
            path: path.to_string(),
            zip: &mut self.zip,
            digest: Sha256::new(),
            bytes: 0,
        })
    }

    /// Lists an entry in `datapackage.json`.
    pub fn list(&mut self, resource: Resource) {
        self.resources.push(resource);
    }

    /// Writes `datapackage.json` and `datapackage-digest.json` and the ZIP's
    /// directory; returns the resources listed.
    pub fn finish(mut self, info: &PackageInfo) -> io::Result<Vec<Resource>> {
        let mut package = serde_json::json!({
            "profile": "data-package",
            "resources": self.resources,
            "created": self.created,
            "wacz_version": WACZ_VERSION,
            "software": format!("crawldeck {}", env!("CARGO_PKG_VERSION")),
        });
        // Spelled as the WACZ 1.1.1 text: py-wacz writes `mainPageURL`,
        // ReplayWeb.page reads neither, so the spec decides.
        let extra = [
            ("title", &info.title),
            ("mainPageUrl", &info.main_page_url),
            ("mainPageDate", &info.main_page_date),
        ];
        for (name, value) in extra {
            if let Some(value) = value {
                package[name] = serde_json::Value::from(value.as_str());
            }
        }
        let package = serde_json::to_vec_pretty(&package).map_err(io::Error::other)?;
        let digest = serde_json::json!({
            "path": "datapackage.json",
            "hash": format!("sha256:{}", hex(&Sha256::digest(&package))),
        });
        let digest = serde_json::to_vec_pretty(&digest).map_err(io::Error::other)?;
        for (path, bytes) in [
            ("datapackage.json", package),
            ("datapackage-digest.json", digest),
        ] {
            let mut entry = self.start(path, false, bytes.len() as u64)?;
            entry.write_all(&bytes)?;
            drop(entry);
        }
        let mut out = self.zip.finish().map_err(io::Error::other)?;
        out.flush()?;
        out.get_ref().sync_all()?;
        Ok(self.resources)
    }
}

/// An entry being written: what goes through it is hashed and counted.
pub struct Entry<'a> {
    path: String,
    zip: &'a mut ZipWriter<BufWriter<File>>,
    digest: Sha256,
    bytes: u64,
}

impl Entry<'_> {
    /// The entry as `datapackage.json` lists it.
    pub fn close(self) -> Resource {
        let name = self
            .path
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .to_lowercase();
        Resource {
            name,
            hash: format!("sha256:{}", hex(&self.digest.finalize())),
            bytes: self.bytes,
            path: self.path,
        }
    }
}

impl Write for Entry<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.zip.write(buf)?;
        self.digest.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.zip.flush()
    }
}

/// The ZIP's MS-DOS time of `2026-11-22T09:00:00Z`.
fn zip_time(warc_date: &str) -> zip::DateTime {
    let digits = super::cdxj::timestamp(warc_date).unwrap_or_default();
    let part = |from: usize, to: usize| digits.get(from..to).and_then(|d| d.parse::<u16>().ok());
    let parts = (
        part(0, 4),
        part(4, 6),
        part(6, 8),
        part(8, 10),
        part(10, 12),
        part(12, 14),
    );
    match parts {
        (Some(y), Some(mo), Some(d), Some(h), Some(mi), Some(s)) => {
            zip::DateTime::from_date_and_time(y, mo as u8, d as u8, h as u8, mi as u8, s as u8)
                .unwrap_or_default()
        }
        _ => zip::DateTime::default(),
    }
}
