//! What fetch tasks archive, and how: the WARC writer, shared by the page
//! threads, and the crawl index's content digests, which say whether a
//! payload is archived already. A payload met again is written as an
//! identical-payload revisit (its HTTP head, no body); a 304 as a
//! server-not-modified revisit of the page's earlier record.

use std::io;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};
use std::time::SystemTime;

use super::cpu_tally::CpuTally;
use super::dedup::ContentDigest;
use super::fetch::{Response, Validators};
use super::store::warc::{warc_date, EarlierCapture, EncodedExchange, WarcExchange, WarcWriter};
use super::store::{read_capture, FirstCapture, Store, WarcLocation};

/// What a recrawl knows of a page's last fetch: its validators make the
/// request conditional, and a 304 refers to its record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EarlierFetch {
    pub validators: Option<Validators>,
    /// Where its content was archived.
    pub warc: Option<WarcLocation>,
    /// Its body's size.
    pub bytes: u64,
}

/// Where an exchange was archived, or why not.
#[derive(Debug, Default)]
pub(crate) struct Archived {
    /// The record holding the page's content: for a payload archived
    /// before, that earlier record.
    pub at: Option<WarcLocation>,
    pub error: Option<String>,
    /// A revisit record was written: the body bytes it did not store again.
    pub revisit_saved: Option<u64>,
    /// The page is now its payload's first URL: no duplicate, and the crawl
    /// loop need not ask the index again.
    pub first_of_payload: bool,
}

impl Archived {
    fn failed(e: impl std::fmt::Display) -> Archived {
        Archived {
            error: Some(format!("WARC write failed: {e}")),
            ..Archived::default()
        }
    }
}

/// CPU time the page threads spend archiving pages: encoding their
/// records, the index's digest rows, the WARC writes (`bench --archive-floor`).
pub static ARCHIVING: CpuTally = CpuTally::new();

pub(crate) struct Archive {
    writer: Mutex<WarcWriter>,
    /// The crawl index: the first archived record of each payload.
    store: Store,
    /// Where `warc/` is, to read earlier records back.
    data_dir: PathBuf,
}

impl Archive {
    pub(crate) fn new(writer: WarcWriter, store: Store, data_dir: PathBuf) -> Archive {
        Archive {
            writer: Mutex::new(writer),
            store,
            data_dir,
        }
    }

    /// Writes a request/response pair as fetched (probes, sitemaps, robots.txt).
    pub(crate) fn exchange(&self, response: &Response) -> Archived {
        let label = ContentDigest::of(&response.body).warc_label();
        match self.write(&exchange(response, SystemTime::now(), &label, None)) {
            Ok(at) => Archived {
                at: Some(at),
                ..Archived::default()
            },
            Err(e) => Archived::failed(e),
        }
    }

    /// Writes a page's exchange: a 304 as a revisit of `earlier`, a payload
    /// archived before (by `digest`, of 2xx bodies) as a revisit of its
    /// first record; else in full, the first record of its payload. `url`
    /// is the page's URL as the crawl keeps it.
    pub(crate) fn page(
        &self,
        url: &str,
        response: &Response,
        digest: Option<&ContentDigest>,
        earlier: Option<&EarlierFetch>,
    ) -> Archived {
        ARCHIVING.time(|| self.archive_page(url, response, digest, earlier))
    }

    fn archive_page(
        &self,
        url: &str,
        response: &Response,
        digest: Option<&ContentDigest>,
        earlier: Option<&EarlierFetch>,
    ) -> Archived {
        if response.status == 304 {
            return self.not_modified(response, earlier);
        }
        let Some(digest) = digest else {
            return self.exchange(response);
        };
        let label = digest.warc_label();
        // Known already: no body to compress.
        match self.store.first_capture(&digest.0, &label) {
            Ok(Some(first)) => return self.identical(response, &label, first),
            Ok(None) => {}
            Err(e) => return Archived::failed(e),
        }
        let date = SystemTime::now();
        let encoded = match EncodedExchange::new(&exchange(response, date, &label, None)) {
            Ok(encoded) => encoded,
            Err(e) => return Archived::failed(e),
        };
        let mut writer = self.lock();
        // Checked again under the writer's lock: another page with the same
        // payload may have been archived meanwhile.
        match self.store.first_capture(&digest.0, &label) {
            Ok(Some(first)) => {
                drop(writer);
                return self.identical(response, &label, first);
            }
            Ok(None) => {}
            Err(e) => return Archived::failed(e),
        }
        let (at, on_disk) = match self.append(&mut writer, &encoded) {
            Ok(appended) => appended,
            Err(e) => return Archived::failed(e),
        };
        let first = FirstCapture {
            record: EarlierCapture {
                uri: response.final_url.to_string(),
                date: warc_date(date),
                payload_digest: Some(label),
            },
            at: at.clone(),
        };
        // A row is written only once its record is on disk.
        match self
            .store
            .record_first_capture(&digest.0, url, &first, on_disk)
        {
            Ok(first_of_payload) => Archived {
                at: Some(at),
                first_of_payload,
                ..Archived::default()
            },
            Err(e) => Archived::failed(e),
        }
    }

    /// A 304: a revisit naming the page's earlier record when it still reads.
    fn not_modified(&self, response: &Response, earlier: Option<&EarlierFetch>) -> Archived {
        let earlier_at = earlier.and_then(|e| e.warc.as_ref());
        if let Some(at) = earlier_at {
            let mut writer = self.lock();
            if writer.buffers(at) {
                if let Err(e) = self.drain_locked(&mut writer) {
                    return Archived::failed(e);
                }
            }
        }
        let capture = earlier_at.and_then(|at| read_capture(&self.data_dir, at).ok());
        match self.write(&exchange(response, SystemTime::now(), "", capture.as_ref())) {
            Ok(at) => Archived {
                at: Some(at),
                revisit_saved: Some(earlier.map_or(0, |e| e.bytes)),
                ..Archived::default()
            },
            Err(e) => Archived::failed(e),
        }
    }

    /// A payload archived before: a revisit of its first record, which holds the content.
    fn identical(&self, response: &Response, label: &str, first: FirstCapture) -> Archived {
        match self.write(&exchange(
            response,
            SystemTime::now(),
            label,
            Some(&first.record),
        )) {
            Ok(_) => Archived {
                at: Some(first.at),
                revisit_saved: Some(response.body.len() as u64),
                ..Archived::default()
            },
            Err(e) => Archived::failed(e),
        }
    }

    /// Compresses an exchange, then appends it.
    fn write(&self, exchange: &WarcExchange) -> io::Result<WarcLocation> {
        let encoded = EncodedExchange::new(exchange)?;
        let (at, _) = self.append(&mut self.lock(), &encoded)?;
        Ok(at)
    }

    /// Appends under the writer's lock; whether the record is on disk
    /// already (the append wrote a full buffer, and with it the records of
    /// every row waiting, which may now be written).
    fn append(
        &self,
        writer: &mut WarcWriter,
        encoded: &EncodedExchange,
    ) -> io::Result<(WarcLocation, bool)> {
        let at = writer.append(encoded)?;
        let on_disk = writer.is_drained();
        if on_disk {
            self.store.release_digest_rows();
        }
        Ok((at, on_disk))
    }

    /// An archive of its own in `dir`: WARC files and a crawl index.
    #[cfg(test)]
    pub(crate) fn in_dir(dir: &std::path::Path) -> Archive {
        let writer = WarcWriter::open(dir, 1 << 30).unwrap();
        let store = Store::open(dir, 1 << 20).unwrap();
        Archive::new(writer, store, dir.to_path_buf())
    }

    /// Writes the buffered records to their file: before the crawl loop
    /// stores their locations.
    pub(crate) fn drain(&self) -> io::Result<()> {
        self.drain_locked(&mut self.lock())
    }

    fn drain_locked(&self, writer: &mut WarcWriter) -> io::Result<()> {
        if writer.is_drained() {
            // No row waits: each append that emptied the buffer released them.
            return Ok(());
        }
        writer.drain()?;
        // Their payloads' rows may now be written: every row waiting named
        // a record appended before, under this lock.
        self.store.release_digest_rows();
        Ok(())
    }

    /// Makes what was appended durable.
    pub(crate) fn flush(&self) -> io::Result<()> {
        let mut writer = self.lock();
        writer.flush()?;
        self.store.release_digest_rows();
        Ok(())
    }

    fn lock(&self) -> MutexGuard<'_, WarcWriter> {
        self.writer.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn exchange<'a>(
    response: &'a Response,
    date: SystemTime,
    payload_digest: &'a str,
    refers_to: Option<&'a EarlierCapture>,
) -> WarcExchange<'a> {
    WarcExchange {
        url: response.final_url.as_str(),
        ip: response.remote_ip,
        date,
        request_head: &response.request_head,
        response_head: &response.response_head,
        body: &response.body,
        payload_digest,
        refers_to,
        truncated: response.truncated,
    }
}

#[cfg(test)]
#[path = "archive_tests.rs"]
mod tests;
