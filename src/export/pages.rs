//! `pages/pages.jsonl`: the HTML pages fetched with status 200 whose
//! response record lies within the exported part of the archive, read
//! from the crawl's page records (through the running engine when it holds
//! them), each with the time of its WARC record, so a replay tool opens the
//! capture the index lists.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

use anyhow::Context;
use sha2::{Digest, Sha256};

use super::cdxj::PyJson;
use super::scan::{field, hex, record_head};
use super::WarcFile;
use crate::control::results::Results;
use crate::engine::store::{PageOutcome, PageRecord};

pub const HEADER: &str = r#"{"format": "json-pages-1.0", "id": "pages", "title": "All Pages"}"#;

/// The first seed page listed: the package's main page.
#[derive(Debug, Clone, Default)]
pub struct MainPage {
    pub url: String,
    pub ts: String,
    pub title: Option<String>,
}

/// What was listed.
#[derive(Debug, Default)]
pub struct PagesWritten {
    pub count: u64,
    pub main: Option<MainPage>,
}

/// Writes the header and one line per page to `out`.
pub fn write(
    data_dir: &Path,
    files: &[WarcFile],
    out: &mut impl Write,
) -> anyhow::Result<PagesWritten> {
    let results = Results::open(data_dir)
        .with_context(|| format!("cannot read the crawl in {}", data_dir.display()))?;
    let mut archive = Archive {
        files,
        open: HashMap::new(),
        warc_dir: data_dir.join(crate::engine::store::warc::WARC_DIR),
    };
    writeln!(out, "{HEADER}")?;
    let mut written = PagesWritten::default();
    for record in results.pages("")? {
        let record = record?;
        if !is_listed_page(&record) {
            continue;
        }
        let Some(ts) = archive.date_of(&record)? else {
            continue;
        };
        let id = hex(&Sha256::digest(format!("{ts}/{}", record.url)))[..16].to_string();
        let mut line = PyJson::new();
        line.field("id", &id)
            .field("url", &record.url)
            .field("ts", &ts)
            .field("title", record.title.as_deref().unwrap_or(&record.url))
            .number("size", record.bytes);
        writeln!(out, "{}", line.finish())?;
        written.count += 1;
        if written.main.is_none() && record.depth == 0 {
            written.main = Some(MainPage {
                url: record.url.clone(),
                ts,
                title: record.title.clone(),
            });
        }
    }
    Ok(written)
}

/// An HTML page answered 200 with its answer archived.
fn is_listed_page(record: &PageRecord) -> bool {
    let status_200 = matches!(record.outcome, PageOutcome::Fetched { status: 200 });
    let html = record
        .content_type
        .as_deref()
        .is_some_and(|t| t == "text/html" || t == "application/xhtml+xml");
    status_200 && html && record.warc.is_some()
}

/// The exported WARC files, opened as pages need them.
struct Archive<'a> {
    files: &'a [WarcFile],
    open: HashMap<String, File>,
    warc_dir: std::path::PathBuf,
}

impl Archive<'_> {
    /// The `WARC-Date` of the page's response record; `None` when the
    /// record lies past what is exported (written after the export began).
    fn date_of(&mut self, record: &PageRecord) -> io::Result<Option<String>> {
        let Some(at) = &record.warc else {
            return Ok(None);
        };
        let exported = self
            .files
            .iter()
            .find(|f| f.name == at.file)
            .is_some_and(|f| at.offset.saturating_add(at.length) <= f.len);
        if !exported {
            return Ok(None);
        }
        if !self.open.contains_key(&at.file) {
            let file = File::open(self.warc_dir.join(&at.file))?;
            self.open.insert(at.file.clone(), file);
        }
        let Some(file) = self.open.get_mut(&at.file) else {
            return Ok(None);
        };
        let head = record_head(file, at.offset)?;
        Ok(field(&head, "WARC-Date").map(str::to_string))
    }
}
