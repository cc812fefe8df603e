//! Resources and external links: which of a page's URLs are queued as
//! checks (requested once for their status, never parsed) and the caps on
//! external ones.

use std::collections::HashMap;

use url::Url;

use super::results::unix_ms;
use super::Coordinator;
use crate::engine::control::HostKey;
use crate::engine::store::{FilterReason, FilteredUrl, UrlKind};
use crate::engine::url_norm::{self, Rejection};

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
    pub(super) fn admission(&self, url: &Url, kind: UrlKind, too_deep: bool) -> Admission {
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

    /// Whether an out-of-scope URL may still be queued as an external check.
    fn external_room(&self, url: &Url) -> bool {
        let checks = &self.cfg.checks;
        checks.external
            && self.stats.counters().external_queued < checks.max_external
            && self
                .external_hosts
                .0
                .get(&url_norm::host_key(url))
                .is_none_or(|&n| n < checks.max_external_per_host)
    }

    /// New URLs past the external caps (several of one page may pass the
    /// check above together) are recorded as out of scope instead; the
    /// others are counted.
    pub(super) fn cap_externals(
        &mut self,
        fresh: Vec<(Url, HostKey, UrlKind)>,
        depth: u32,
    ) -> Vec<(Url, HostKey, UrlKind)> {
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
                    url: url.into(),
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
