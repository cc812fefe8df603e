//! `crawldeck export`: a crawl's archive as a WACZ 1.1.1 package and/or a
//! CDXJ index, the formats pywb, py-wacz and ReplayWeb.page read.
//!
//! A fixed point in time: each WARC file's length is taken first, and only
//! the whole records below it are indexed and packaged (the writer appends
//! whole gzip members, so a record cut by the length is one still being
//! written). The page list is read after, and keeps only pages whose record
//! lies below those lengths. Memory stays flat: index lines are sorted
//! externally in a directory beside the output, and files are streamed.

pub mod cdxj;
mod pages;
pub mod scan;
pub mod sort;
pub mod surt;
mod wacz;
pub mod zipnum;

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;

use crate::engine::store::warc::file_number;

/// Above this many index lines a WACZ gets the compressed index
/// (`index.cdx.gz` + `index.idx`): a replay tool loads a plain index whole,
/// but only the idx and the blocks it needs of a compressed one.
pub const COMPRESSED_INDEX_FROM: u64 = 50_000;

/// Index lines held in memory before a sorted run goes to disk.
const SORT_BUDGET: usize = 32 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportQuery {
    pub data_dir: PathBuf,
    pub wacz: Option<PathBuf>,
    pub cdxj: Option<PathBuf>,
    /// Replace outputs that exist.
    pub force: bool,
    /// See [`COMPRESSED_INDEX_FROM`].
    pub compressed_index_from: u64,
}

/// What an export wrote, for its summary line.
#[derive(Debug, Clone)]
pub struct ExportSummary {
    pub records: u64,
    pub pages: Option<u64>,
    pub bytes: u64,
    pub elapsed: Duration,
}

impl ExportSummary {
    pub fn line(&self) -> String {
        let pages = self
            .pages
            .map(|n| format!(", {n} pages"))
            .unwrap_or_default();
        format!(
            "exported {} records indexed{pages}, {} bytes written in {:.1} s",
            self.records,
            self.bytes,
            self.elapsed.as_secs_f64()
        )
    }
}

/// A WARC file of the crawl and how much of it is exported.
#[derive(Debug, Clone)]
pub struct WarcFile {
    pub name: String,
    pub path: PathBuf,
    pub len: u64,
}

/// The crawl's WARC files in order, each with its length now.
pub fn warc_files(data_dir: &Path) -> io::Result<Vec<WarcFile>> {
    let dir = data_dir.join(crate::engine::store::warc::WARC_DIR);
    let mut files = Vec::new();
    for entry in std::fs::read_dir(&dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(number) = file_number(&name) {
            let len = entry.metadata()?.len();
            files.push((
                number,
                WarcFile {
                    name,
                    path: entry.path(),
                    len,
                },
            ));
        }
    }
    files.sort_by_key(|(number, _)| *number);
    Ok(files.into_iter().map(|(_, file)| file).collect())
}

pub fn run(query: &ExportQuery) -> anyhow::Result<ExportSummary> {
    let started = Instant::now();
    let mut files = warc_files(&query.data_dir)
        .with_context(|| format!("cannot list the WARC files of {}", query.data_dir.display()))?;
    let first_output = query
        .wacz
        .as_ref()
        .or(query.cdxj.as_ref())
        .context("no output given")?;
    let work = tempfile::Builder::new()
        .prefix(".crawldeck-export-")
        .tempdir_in(parent_of(first_output))
        .context("cannot create a working directory beside the output")?;
    let sorted_path = work.path().join("index.cdxj");
    let records = index(&mut files, work.path(), &sorted_path)?;
    let mut summary = ExportSummary {
        records,
        pages: None,
        bytes: 0,
        elapsed: Duration::ZERO,
    };
    if let Some(out) = &query.cdxj {
        let mut sorted = File::open(&sorted_path)?;
        summary.bytes += write_output(out, query.force, |file| {
            io::copy(&mut sorted, file)?;
            Ok(())
        })?;
    }
    if let Some(out) = &query.wacz {
        let mut pages = 0;
        summary.bytes += write_output(out, query.force, |file| {
            pages = package(query, &files, &sorted_path, records, file)?;
            Ok(())
        })?;
        summary.pages = Some(pages);
    }
    summary.elapsed = started.elapsed();
    Ok(summary)
}

/// Indexes the files' records into `sorted` (sorted, one line each); each
/// file's length becomes that of its whole records. Returns the line count.
fn index(files: &mut [WarcFile], work: &Path, sorted: &Path) -> anyhow::Result<u64> {
    let mut sort = sort::ExternalSort::new(work, SORT_BUDGET);
    for file in files.iter_mut() {
        let name = file.name.clone();
        file.len = scan::scan_file(&file.path, file.len, |record| {
            match cdxj::line(&record, &name) {
                Some(line) => sort.push(line),
                None => Ok(()),
            }
        })
        .with_context(|| format!("cannot index {}", file.path.display()))?;
    }
    let mut out = BufWriter::new(File::create(sorted)?);
    let lines = sort.finish(&mut |line| writeln!(out, "{line}"))?;
    out.flush()?;
    Ok(lines)
}

/// Writes the WACZ into `file`; returns the pages listed.
fn package(
    query: &ExportQuery,
    files: &[WarcFile],
    sorted: &Path,
    lines: u64,
    file: &mut File,
) -> anyhow::Result<u64> {
    let mut wacz = wacz::WaczWriter::new(file.try_clone()?);
    for warc in files {
        let mut reader = File::open(&warc.path)?.take(warc.len);
        wacz.add_stream(
            &format!("archive/{}", warc.name),
            true,
            warc.len,
            &mut reader,
        )
        .with_context(|| format!("cannot package {}", warc.path.display()))?;
    }
    let index_bytes = std::fs::metadata(sorted)?.len();
    if lines > query.compressed_index_from {
        let entry = wacz.start("indexes/index.cdx.gz", true, index_bytes)?;
        let mut blocks = zipnum::ZipnumWriter::new(entry, "index.cdx.gz", zipnum::LINES_PER_BLOCK);
        for line in BufReader::new(File::open(sorted)?).lines() {
            blocks.push(&line?)?;
        }
        let (entry, idx) = blocks.finish()?;
        let resource = entry.close();
        wacz.list(resource);
        wacz.add_stream(
            "indexes/index.idx",
            false,
            idx.len() as u64,
            &mut idx.as_slice(),
        )?;
    } else {
        // CDXJ lines under the `.cdx` name: pywb's `wb-manager add` takes
        // only `.cdx`/`.cdx.gz` indexes from a WACZ; ReplayWeb.page both.
        wacz.add_stream(
            "indexes/index.cdx",
            false,
            index_bytes,
            &mut File::open(sorted)?,
        )?;
    }
    let mut entry = wacz.start("pages/pages.jsonl", false, 0)?;
    let written = pages::write(&query.data_dir, files, &mut entry)?;
    let resource = entry.close();
    wacz.list(resource);
    let main = written.main.clone().unwrap_or_default();
    let info = wacz::PackageInfo {
        title: main.title.clone(),
        main_page_url: written.main.as_ref().map(|m| m.url.clone()),
        main_page_date: written.main.as_ref().map(|m| m.ts.clone()),
    };
    wacz.finish(&info)?;
    Ok(written.count)
}

/// Writes `path` through a temporary file beside it, renamed into place
/// once whole (over an existing file only with `force`); returns its size.
fn write_output(
    path: &Path,
    force: bool,
    fill: impl FnOnce(&mut File) -> anyhow::Result<()>,
) -> anyhow::Result<u64> {
    let mut temp = tempfile::Builder::new()
        .prefix(".crawldeck-export-")
        .tempfile_in(parent_of(path))
        .with_context(|| format!("cannot write beside {}", path.display()))?;
    fill(temp.as_file_mut()).with_context(|| format!("cannot write {}", path.display()))?;
    temp.as_file_mut().flush()?;
    let bytes = temp.as_file().metadata()?.len();
    let kept = if force {
        temp.persist(path)
    } else {
        temp.persist_noclobber(path)
    };
    kept.map_err(|e| e.error)
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(bytes)
}

fn parent_of(path: &Path) -> &Path {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}
