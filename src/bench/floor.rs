//! The archive's floor: the CPU that compressing the crawl's WARC records
//! alone takes, at the archive's own level, so what archiving adds to a page
//! (CPU per page with it minus without it) can be set against it.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;
use std::time::Duration;

use flate2::bufread::GzDecoder;

use super::ms_per_page;
use crate::engine::archive;
use crate::engine::cpu_tally::thread_cpu;
use crate::engine::store::{gzip, warc};

/// Compressing every record of a crawl's WARC files, one gzip member each.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Floor {
    pub records: u64,
    /// Uncompressed.
    pub bytes: u64,
    /// This thread's CPU time inside the compressor.
    pub cpu: Duration,
}

impl Floor {
    pub(super) fn render(&self, pages: u64) -> String {
        format!(
            "archive floor  {:.3} ms CPU/page: compressing the crawl's {} records ({:.1} MB) alone, as the archive does (libdeflate level 1, one gzip member each)\n",
            ms_per_page(self.cpu, pages),
            self.records,
            self.bytes as f64 / 1e6,
        )
    }
}

/// What `bench --archive-floor` measures.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct FloorReport {
    pub floor: Floor,
    pub work: ArchiveWork,
    /// CPU a page of the same crawl without the archive, run just before.
    pub without_archive_ms: Option<f64>,
}

impl FloorReport {
    /// The floor, the archive's work, and what the archive adds set
    /// against the floor when both crawls' CPU a page are known.
    pub(super) fn render(&self, pages: u64, with_archive_ms: Option<f64>) -> String {
        let mut out = self.floor.render(pages) + &self.work.render(pages);
        if let (Some(with), Some(without)) = (with_archive_ms, self.without_archive_ms) {
            let adds = with - without;
            out.push_str(&format!(
                "archive adds   {adds:.3} ms CPU/page ({with:.3} with it, {without:.3} in the same crawl without it just before): {:.2}× the floor\n",
                self.over_floor(pages, adds),
            ));
        }
        out
    }

    /// What the archive added a page (CPU a page with it, `with_archive_ms`,
    /// minus without it), and that ÷ the floor; `None` until the crawl
    /// without the archive was timed.
    pub fn adds(&self, pages: u64, with_archive_ms: f64) -> Option<(f64, f64)> {
        let adds = with_archive_ms - self.without_archive_ms?;
        Some((adds, self.over_floor(pages, adds)))
    }

    /// `ms` a page ÷ the floor a page.
    fn over_floor(&self, pages: u64, ms: f64) -> f64 {
        ms / ms_per_page(self.floor.cpu, pages).max(1e-9)
    }
}

/// The archive's work during the crawl, CPU time summed over its threads.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ArchiveWork {
    /// Inside the compressor: what the floor measures again.
    pub compressing: Duration,
    /// Encoding records: compressing, the block digests, the headers.
    pub encoding: Duration,
    /// Archiving pages: encoding, the index's digest rows, the WARC writes.
    pub archiving: Duration,
}

impl ArchiveWork {
    /// Counts from now on.
    pub(super) fn start() {
        gzip::COMPRESSING.start();
        warc::ENCODING.start();
        archive::ARCHIVING.start();
    }

    pub(super) fn so_far() -> ArchiveWork {
        ArchiveWork {
            compressing: gzip::COMPRESSING.total(),
            encoding: warc::ENCODING.total(),
            archiving: archive::ARCHIVING.total(),
        }
    }

    pub(super) fn render(&self, pages: u64) -> String {
        let per_page = |time| ms_per_page(time, pages);
        format!(
            "archive work   {:.3} ms CPU/page compressing during the crawl, {:.3} encoding records (and their block digests, headers), {:.3} archiving pages (and the index's digest rows, the WARC writes)\n",
            per_page(self.compressing),
            per_page(self.encoding),
            per_page(self.archiving),
        )
    }
}

/// Decompresses each record of the `.warc.gz` files in `warc_dir` and times
/// compressing it again with the archive's compressor.
pub fn measure(warc_dir: &Path) -> io::Result<Floor> {
    let mut floor = Floor::default();
    let mut record = Vec::new();
    let mut compressed = Vec::new();
    for entry in std::fs::read_dir(warc_dir)? {
        let path = entry?.path();
        if !path.to_string_lossy().ends_with(".warc.gz") {
            continue;
        }
        let mut input = BufReader::with_capacity(1 << 16, File::open(&path)?);
        while !input.fill_buf()?.is_empty() {
            record.clear();
            GzDecoder::new(&mut input).read_to_end(&mut record)?;
            compressed.clear();
            let before = thread_cpu();
            gzip::append_member(&[&record], &mut compressed)?;
            floor.cpu += thread_cpu().saturating_sub(before);
            floor.records += 1;
            floor.bytes += record.len() as u64;
        }
    }
    Ok(floor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_member_of_every_warc_file_is_compressed_again() {
        let dir = tempfile::tempdir().unwrap();
        let records: [&[u8]; 3] = [b"WARC/1.1\r\nfirst\r\n\r\n", &[b'x'; 50_000], b"third"];
        let mut file = Vec::new();
        for record in &records[..2] {
            gzip::append_member(&[record], &mut file).unwrap();
        }
        std::fs::write(dir.path().join("a.warc.gz"), &file).unwrap();
        let mut other = Vec::new();
        gzip::append_member(&[records[2]], &mut other).unwrap();
        std::fs::write(dir.path().join("b.warc.gz"), &other).unwrap();
        std::fs::write(dir.path().join("notes.txt"), b"not a WARC file").unwrap();

        let floor = measure(dir.path()).unwrap();
        assert_eq!(floor.records, 3);
        let bytes: usize = records.iter().map(|r| r.len()).sum();
        assert_eq!(floor.bytes, bytes as u64);
        assert!(floor.render(3).starts_with("archive floor  "));
    }

    #[test]
    fn the_archive_work_is_shown_per_page() {
        let ms = Duration::from_millis;
        let work = ArchiveWork {
            compressing: ms(1000),
            encoding: ms(1200),
            archiving: ms(1500),
        };
        assert_eq!(
            work.render(10_000),
            "archive work   0.100 ms CPU/page compressing during the crawl, 0.120 encoding records (and their block digests, headers), 0.150 archiving pages (and the index's digest rows, the WARC writes)\n"
        );
    }

    #[test]
    fn what_the_archive_adds_is_set_against_the_floor_when_both_crawls_were_timed() {
        let report = FloorReport {
            floor: Floor {
                records: 20,
                bytes: 200_000,
                cpu: Duration::from_millis(1000),
            },
            work: ArchiveWork::default(),
            without_archive_ms: Some(0.2),
        };
        let text = report.render(10_000, Some(0.35));
        let lines: Vec<&str> = text.lines().collect();
        let [floor, work, adds] = lines[..] else {
            panic!("three lines: {text}")
        };
        assert!(floor.starts_with("archive floor  0.100 ms CPU/page"));
        assert!(work.starts_with("archive work   "));
        assert_eq!(adds, "archive adds   0.150 ms CPU/page (0.350 with it, 0.200 in the same crawl without it just before): 1.50× the floor");
        let without_figures = report.render(10_000, None);
        assert!(
            !without_figures.contains("archive adds"),
            "no CPU figures, no ratio"
        );
    }

    #[test]
    fn a_damaged_file_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.warc.gz"), b"\x1f\x8bnot deflate").unwrap();
        assert!(measure(dir.path()).is_err());
    }
}
