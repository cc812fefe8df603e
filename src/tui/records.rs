//! Where the views that read the crawl's records (a host's lists, the page
//! inspector, the quarantine) read them: a data directory, or records kept
//! elsewhere (the workers of a shared crawl), passed in by the caller. The
//! run loop calls these off its thread.

use std::path::PathBuf;
use std::sync::Arc;

use crate::engine::inspect::quarantine::Quarantine;
use crate::engine::inspect::PageInspection;
use crate::results::audit::Finding;
use crate::results::host_lists::{host_list_lines, HostList};
use crate::results::window::{Band, BandRequest};

/// Records the UI cannot open itself (`cluster::reads::WorkerRecords`).
pub trait RemoteRecords: Send + Sync + std::fmt::Debug {
    /// The inspection of `url`.
    fn page(&self, url: &str) -> anyhow::Result<PageInspection>;
    /// The parked URLs by alert.
    fn quarantine(&self) -> anyhow::Result<Quarantine>;
    /// One of `host`'s lists, as lines.
    fn host_list(&self, host: &str, list: HostList) -> Result<Vec<String>, String>;
    /// A band of the Pages view.
    fn page_band(&self, request: &BandRequest) -> anyhow::Result<Band>;
    /// The audit's findings.
    fn audit(&self) -> anyhow::Result<Vec<Finding>>;
}

/// The crawl's records.
#[derive(Debug, Clone)]
pub enum Records {
    /// A data directory (through its engine's control socket while one runs).
    Dir(PathBuf),
    /// Records kept elsewhere.
    Remote(Arc<dyn RemoteRecords>),
}

impl PartialEq for Records {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Records::Dir(a), Records::Dir(b)) => a == b,
            (Records::Remote(a), Records::Remote(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl Records {
    /// The inspection of `url`.
    pub fn page(&self, url: &str) -> Result<PageInspection, String> {
        match self {
            Records::Dir(dir) => crate::results::page::read(dir, url),
            Records::Remote(remote) => remote.page(url),
        }
        .map_err(|e| crate::text::error_chain(&e))
    }

    /// The parked URLs by alert.
    pub fn quarantine(&self) -> Result<Quarantine, String> {
        match self {
            Records::Dir(dir) => crate::results::page::read_quarantine(dir),
            Records::Remote(remote) => remote.quarantine(),
        }
        .map_err(|e| crate::text::error_chain(&e))
    }

    /// One of `host`'s lists, as lines.
    pub fn host_list(&self, host: &str, list: HostList) -> Result<Vec<String>, String> {
        match self {
            Records::Dir(dir) => host_list_lines(dir, host, list),
            Records::Remote(remote) => remote.host_list(host, list),
        }
    }

    /// A band of the Pages view.
    pub fn page_band(&self, request: &BandRequest) -> Result<Band, String> {
        match self {
            Records::Dir(dir) => {
                let request = BandRequest {
                    data_dir: dir.clone(),
                    ..request.clone()
                };
                crate::results::page::open(dir)
                    .and_then(|results| crate::results::window::read_band(&results, &request))
            }
            Records::Remote(remote) => remote.page_band(request),
        }
        .map_err(|e| crate::text::error_chain(&e))
    }

    /// The audit's findings over every page.
    pub fn audit(&self) -> Result<Vec<Finding>, String> {
        match self {
            Records::Dir(dir) => audit_dir(dir),
            Records::Remote(remote) => remote.audit(),
        }
        .map_err(|e| crate::text::error_chain(&e))
    }
}

/// The findings of the crawl in `dir`, as `crawldeck audit DIR` lists them.
pub fn audit_dir(dir: &std::path::Path) -> anyhow::Result<Vec<Finding>> {
    use crate::results::{Format, Listing, Query};
    let results = crate::results::page::open(dir)?;
    let query = Query::new(dir.to_path_buf(), Listing::Audit(None), Format::Table);
    let tally = crate::results::audit::audit(&query, None, &results)?;
    Ok(tally.findings(&crate::results::audit::dir_words(dir)))
}
