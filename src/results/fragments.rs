//! Broken `#fragment` links: a page linked as `page#part` that has no element
//! with `id="part"` (or `<a name="part">`). Each linked page is read back from
//! the archive once; a page without an archived HTML 2xx answer is not
//! judged here (a broken page is a broken link already).

use crate::control::results::Results;
use crate::engine::extract::fragment_found;
use crate::engine::store::PageOutcome;

use super::query::Query;

/// One link to a fragment its page does not have.
#[derive(Debug, Clone)]
pub struct BrokenFragment {
    /// The page, without the fragment.
    pub page: String,
    /// The fragment as linked.
    pub fragment: String,
    /// The first page found linking to it.
    pub linked_from: String,
}

impl BrokenFragment {
    /// `page#fragment`.
    pub fn url(&self) -> String {
        format!("{}#{}", self.page, self.fragment)
    }
}

/// Calls `each` with every broken fragment link of the query's pages, in
/// page order, until it returns false.
pub fn for_each_broken(
    query: &Query,
    results: &Results,
    mut each: impl FnMut(BrokenFragment) -> anyhow::Result<bool>,
) -> anyhow::Result<()> {
    for prefix in query.url_prefixes() {
        for entry in results.fragment_links(&prefix)? {
            let (page, links) = entry?;
            let Some(ids) = page_ids(query, results, &page)? else {
                continue;
            };
            for (fragment, linked_from) in links {
                if fragment_found(&fragment, &ids) {
                    continue;
                }
                let broken = BrokenFragment {
                    page: page.clone(),
                    fragment,
                    linked_from,
                };
                if !each(broken)? {
                    return Ok(());
                }
            }
        }
    }
    Ok(())
}

/// The ids of an archived HTML 2xx page of the query's host, if it can be judged.
fn page_ids(
    query: &Query,
    results: &Results,
    page: &str,
) -> anyhow::Result<Option<std::collections::HashSet<String>>> {
    let Some(record) = results.page(page)? else {
        return Ok(None);
    };
    let answered = matches!(
        record.outcome,
        PageOutcome::Fetched { status: 200..=299 } | PageOutcome::NotModified { .. }
    );
    let html = record.facts.is_some();
    if !answered || !html || query.host.as_deref().is_some_and(|h| h != record.host) {
        return Ok(None);
    }
    // A record the archive cannot give back is not judged either.
    Ok(results.archived_ids(&query.data_dir, &record)?)
}
