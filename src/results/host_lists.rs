//! A host's lists as the detail view shows them (and a cluster worker sends
//! them): `crawldeck pages`/`links` tables cut to one host.

use std::path::Path;

use super::{Fate, Format, Listing, Query};

/// Which of a host's lists the detail view shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum HostList {
    /// 4xx, 5xx and failed URLs with their referrers.
    Errors,
    /// Redirect chains.
    Redirects,
    /// URLs not fetched, with the reason.
    Blocked,
}

impl HostList {
    /// The list's title.
    pub fn label(self) -> &'static str {
        match self {
            HostList::Errors => "broken URLs and who links to them",
            HostList::Redirects => "redirect chains",
            HostList::Blocked => "URLs not fetched and why",
        }
    }
}

/// Most lines a host list shows; `crawldeck pages`/`links` give the rest.
pub const HOST_LIST_LINES: usize = 500;

/// One of a host's lists, as `crawldeck pages`/`links` would print it in a table.
pub fn host_list_lines(data_dir: &Path, host: &str, list: HostList) -> Result<Vec<String>, String> {
    let (listing, fate) = match list {
        HostList::Errors => (Listing::Broken, None),
        HostList::Redirects => (Listing::Redirects, None),
        HostList::Blocked => (Listing::Pages, Some(Fate::Blocked)),
    };
    let query = Query {
        fate,
        host: Some(host.to_string()),
        limit: Some(HOST_LIST_LINES),
        ..Query::new(data_dir.to_path_buf(), listing, Format::Table)
    };
    let mut out = Vec::new();
    crate::results::run(&query, &mut out).map_err(|e| crate::text::error_chain(&e))?;
    Ok(String::from_utf8_lossy(&out)
        .lines()
        .map(str::to_string)
        .collect())
}
