//! `crawldeck export`: its flags, checked into an [`ExportQuery`] before
//! anything is read or written.

use std::path::{Path, PathBuf};

use clap::Args;

use super::UsageError;
use crate::export::{warc_files, ExportQuery, COMPRESSED_INDEX_FROM};

#[derive(Debug, Args, Clone)]
pub struct ExportArgs {
    /// The crawl's data directory (a running crawl is exported as it is now).
    #[arg(value_name = "DIR")]
    pub data: PathBuf,
    /// Write a WACZ 1.1.1 package: the WARC files, their index, the page list.
    #[arg(long, value_name = "OUT.wacz")]
    pub wacz: Option<PathBuf>,
    /// Write the CDXJ index of the WARC files (pywb's format, sorted).
    #[arg(long, value_name = "OUT.cdxj")]
    pub cdxj: Option<PathBuf>,
    /// Replace output files that exist.
    #[arg(long)]
    pub force: bool,
    /// A WACZ whose index has more lines than this gets the compressed
    /// index (index.cdx.gz + index.idx) instead of index.cdx (CDXJ lines).
    #[arg(long, value_name = "LINES", default_value_t = COMPRESSED_INDEX_FROM)]
    pub compressed_index_from: u64,
}

/// The query of `crawldeck export`.
pub fn export_query(args: ExportArgs) -> Result<ExportQuery, UsageError> {
    if args.wacz.is_none() && args.cdxj.is_none() {
        return Err(UsageError(
            "export: nothing to write; give --wacz OUT.wacz and/or --cdxj OUT.cdxj".into(),
        ));
    }
    if let Some(wacz) = &args.wacz {
        if wacz.extension().is_none_or(|e| e != "wacz") {
            return Err(UsageError(format!(
                "--wacz {}: a WACZ file's name must end in .wacz",
                wacz.display()
            )));
        }
    }
    if args.wacz.is_some() && args.wacz == args.cdxj {
        return Err(UsageError(
            "--wacz and --cdxj name the same file; give two names".into(),
        ));
    }
    check_crawl(&args.data)?;
    for out in args.wacz.iter().chain(&args.cdxj) {
        check_output(out, args.force)?;
    }
    Ok(ExportQuery {
        data_dir: args.data,
        wacz: args.wacz,
        cdxj: args.cdxj,
        force: args.force,
        compressed_index_from: args.compressed_index_from,
    })
}

fn check_crawl(dir: &Path) -> Result<(), UsageError> {
    if !crate::engine::store::Store::exists_in(dir) {
        return Err(UsageError(format!(
            "{} holds no crawl (no index/ inside); give the data directory of a crawl",
            dir.display()
        )));
    }
    match warc_files(dir) {
        Ok(files) if !files.is_empty() => Ok(()),
        _ => Err(UsageError(format!(
            "{} holds no WARC files (warc/crawldeck-NNNNN.warc.gz): nothing to export",
            dir.display()
        ))),
    }
}

fn check_output(out: &Path, force: bool) -> Result<(), UsageError> {
    if out.is_dir() {
        return Err(UsageError(format!(
            "{} is a directory; give a file name",
            out.display()
        )));
    }
    if out.exists() && !force {
        return Err(UsageError(format!(
            "{} exists; add --force to replace it",
            out.display()
        )));
    }
    let parent = out.parent().filter(|p| !p.as_os_str().is_empty());
    if parent.is_some_and(|p| !p.is_dir()) {
        return Err(UsageError(format!(
            "{}: its directory does not exist; create it first",
            out.display()
        )));
    }
    Ok(())
}
