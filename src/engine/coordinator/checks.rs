//! Resources and external links: which of a page's URLs are queued as
//! checks (requested once for their status, never parsed), the caps on
//! external ones, and with `--resources fetch` the resources fetched and
//! archived instead, a stylesheet's `url()`s among them.

use std::collections::HashMap;

use super::admitted::Outgoing;
use super::results::unix_ms;
use super::Coordinator;
use crate::engine::control::HostKey;
use crate::engine::extract::Extracted;
use crate::engine::frontier::FrontierEntry;
use crate::engine::store::{FilterReason, FilteredUrl, UrlKind};
use crate::engine::url_norm::{LinkUrl, Rejection, UrlParts};

/// Resources queued from fetched stylesheets in one crawl: each stylesheet
/// gives at most `checks.max_resources_per_page`, and stylesheets importing
/// ever new stylesheets stop here.
pub(super) const MAX_STYLESHEET_RESOURCES: u64 = 100_000;

/// External URLs queued per host in this run of the engine.
#[derive(Default)]
pub(super) struct ExternalCounts(HashMap<HostKey, u32>);

/// What the scope filter's verdict means for a link of `kind`: `Ok(kind)`
/// to go on as that kind, `Err(Some(reason))` to record as left out,
/// `Err(None)` to drop (scheme, length).
pub(super) type Admission = Result<UrlKind, Option<FilterReason>>;

impl Coordinator {
    /// The scope filter, depth and `[checks]` for one link. Resources are
    /// what extensions deny, so a check ignores them, and depth: nothing is
    /// followed from it.
    pub(super) fn admission(
        &self,
        url: &impl UrlParts,
        kind: UrlKind,
        too_deep: bool,
    ) -> Admission {
        match (self.filter.check(url), kind) {
            (Ok(()), UrlKind::Page) if too_deep => Err(Some(FilterReason::Depth)),
            (Ok(()), kind) => Ok(kind),
            (Err(Rejection::DeniedExtension), UrlKind::Page) => Err(Some(FilterReason::Extension)),
            (Err(Rejection::DeniedExtension), kind) => Ok(kind),
            (Err(Rejection::OutOfScope), _) if self.external_room(url) => Ok(UrlKind::External),
            (Err(Rejection::OutOfScope), _) => Err(Some(FilterReason::Scope)),
            (Err(_), _) => Err(None),
        }
    }

    /// Whether this entry is a resource fetched and archived, not checked.
    pub(super) fn is_fetched_resource(&self, entry: &FrontierEntry) -> bool {
        entry.kind == UrlKind::Resource && self.cfg.checks.fetches_resources()
    }

    /// A fetched stylesheet's `url()` references, queued as resources while
    /// the crawl's [`MAX_STYLESHEET_RESOURCES`] last; the rest are counted
    /// as cut, like a page's resources past its cap.
    pub(super) fn stylesheet_outgoing(&mut self, stylesheet: &Extracted) -> Outgoing {
        let counters = self.stats.count();
        let room = MAX_STYLESHEET_RESOURCES.saturating_sub(counters.stylesheet_resources);
        let taken = stylesheet.resources.len().min(room as usize);
        let cut = stylesheet.resources_cut + (stylesheet.resources.len() - taken);
        counters.resources_cut += cut as u64;
        let whole = stylesheet.resources[..taken]
            .iter()
            .map(|url| (url.clone(), UrlKind::Resource))
            .collect();
        Outgoing::whole(whole)
    }

    /// Whether an out-of-scope URL may still be queued as an external check.
    fn external_room(&self, url: &impl UrlParts) -> bool {
        let checks = &self.cfg.checks;
        checks.external
            && self.stats.counters().external_queued < checks.max_external
            && self
                .external_hosts
                .0
                .get(url.host_key_ref().as_ref())
                .is_none_or(|&n| n < checks.max_external_per_host)
    }

    /// New URLs past the external caps (several of one page may pass the
    /// check above together) are recorded as out of scope instead; the
    /// others are counted.
    pub(super) fn cap_externals<'a>(
        &mut self,
        fresh: Vec<(LinkUrl<'a>, HostKey, UrlKind)>,
        depth: u32,
    ) -> Vec<(LinkUrl<'a>, HostKey, UrlKind)> {
        let mut over = Vec::new();
        let mut kept = Vec::with_capacity(fresh.len());
        for (url, host, kind) in fresh {
            if kind != UrlKind::External {
                kept.push((url, host, kind));
            } else if self.external_room(&url) {
                self.stats.count().external_queued += 1;
                *self.external_hosts.0.entry(host.clone()).or_default() += 1;
                kept.push((url, host, kind));
            } else {
                self.stats.count().filtered += 1;
                over.push(FilteredUrl {
                    url: url.into_string(),
                    host,
                    depth,
                    reason: FilterReason::Scope,
                    found_at_unix_ms: unix_ms(),
                });
            }
        }
        if !over.is_empty() {
            if let Err(e) = self.store.record_filtered(&over) {
                self.storage_failed("recording external links past the cap", e);
            }
        }
        kept
    }
}

#[cfg(test)]
#[path = "checks_tests.rs"]
mod tests;
