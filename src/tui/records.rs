//! Where the views that read the crawl's records (a host's lists, the page
//! inspector, the quarantine) read them: a data directory, or records kept
//! elsewhere (the workers of a shared crawl), passed in by the caller. The
//! run loop calls these off its thread.

use std::path::PathBuf;
use std::sync::Arc;

use crate::engine::inspect::quarantine::Quarantine;
use crate::engine::inspect::PageInspection;
use crate::results::host_lists::{host_list_lines, HostList};

/// Records the UI cannot open itself (`cluster::reads::WorkerRecords`).
pub trait RemoteRecords: Send + Sync + std::fmt::Debug {
    /// The inspection of `url`.
    fn page(&self, url: &str) -> anyhow::Result<PageInspection>;
    /// The parked URLs by alert.
    fn quarantine(&self) -> anyhow::Result<Quarantine>;
    /// One of `host`'s lists, as lines.
    fn host_list(&self, host: &str, list: HostList) -> Result<Vec<String>, String>;
}

/// The crawl's records.
#[derive(Debug, Clone)]
pub enum Records {
    /// A data directory (through its engine's results socket while one runs).
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
}
