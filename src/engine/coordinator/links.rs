//! A page's links on their way into the frontier: normalization, filters,
//! operator rules, the seen check, trap detection and quarantine.

use url::Url;

use super::admitted::{Admitted, FirstFindings, Outgoing, ADMIT_CHUNK};
use super::results::{record_for, unix_ms};
use super::Coordinator;
use crate::engine::control::HostKey;
use crate::engine::dedup::ContentDigest;
use crate::engine::frontier::FrontierEntry;
use crate::engine::prioritize::priority;
use crate::engine::store::{FilterReason, FilteredUrl, PageRecord, UrlKind};
use crate::engine::traps::LinkParent;
use crate::engine::url_norm::{self, LinkUrl, UrlParts};

/// Where links were found: the page (or sitemap), the referrer to record
/// (none for a sitemap), and the depth and redirect count they get.
pub(super) struct Found<'a> {
    parent: &'a Url,
    referrer: Option<&'a str>,
    /// The host of the page the links are on, leased for its fetch.
    page_host: Option<&'a str>,
    depth: u32,
    redirects: u8,
}

impl Coordinator {
    /// Exact-duplicate check: the first URL stored with this digest, if it
    /// is another one.
    pub(super) fn first_with_digest(
        &mut self,
        digest: &ContentDigest,
        url: &str,
    ) -> Option<String> {
        match self.store.first_url_with_digest(&digest.0, url) {
            Ok(first) => first,
            Err(e) => {
                self.storage_failed("content digest lookup", e);
                None
            }
        }
    }

    /// Normalization, filters, rules, seen check, traps and quarantine for a
    /// page's links, each with the kind it was found as; returns the entries
    /// to queue. Within one page a URL found as a link and as a resource is
    /// a page (links come first); across pages the first finding wins.
    pub(super) fn admit_links(
        &mut self,
        parent: &Url,
        parent_entry: &FrontierEntry,
        links: Outgoing,
        redirect: bool,
    ) -> Admitted {
        let depth = if redirect {
            parent_entry.depth
        } else {
            parent_entry.depth + 1
        };
        let redirects = if redirect {
            parent_entry.redirects.saturating_add(1)
        } else {
            0
        };
        // Extraction normalizes the links it finds; a Location header is not.
        let found = Found {
            parent,
            referrer: Some(&parent_entry.url),
            page_host: Some(&parent_entry.host),
            depth,
            redirects,
        };
        self.admit(found, links, redirect)
    }

    /// A sitemap's URLs take the links' way, one hop below the file (which
    /// is at depth 0): scope, rules, the seen set and quarantine, but no
    /// referrer (a sitemap is no page linking to them: `pages` tells them
    /// apart by that) and no trap detector (a sitemap lists a site's URLs
    /// by design, tens of thousands of them at once).
    pub(super) fn admit_sitemap_urls(
        &mut self,
        sitemap: &Url,
        urls: Vec<Url>,
        depth: u32,
    ) -> Admitted {
        let found = Found {
            parent: sitemap,
            referrer: None,
            page_host: None,
            depth,
            redirects: 0,
        };
        let urls = urls.into_iter().map(|url| (url, UrlKind::Page)).collect();
        self.admit(found, Outgoing::whole(urls), true)
    }

    /// Admits the URLs [`ADMIT_CHUNK`] at a time, so a page's links are
    /// read (and its new ones made entries) a chunk at a time, never all at
    /// once. The last chunk's entries are returned for the page's
    /// completion; earlier ones are queued at once (their seen marks with
    /// them), which changes nothing a crash could see: the page stays
    /// queued until its completion and finds them seen when it is fetched
    /// again.
    fn admit(&mut self, found: Found, outgoing: Outgoing, normalize: bool) -> Admitted {
        let mut firsts = outgoing.first_findings();
        let Outgoing { links, whole } = outgoing;
        // Extraction normalizes the links it finds; a Location header or a
        // sitemap's URL is not.
        let whole = whole.into_iter().map(|(mut url, kind)| {
            if normalize {
                url_norm::normalize(&mut url);
            }
            (LinkUrl::from(url), kind)
        });
        let followed = links
            .followed()
            .map(|link| LinkUrl::with_shape(link.url, link.shape, link.fingerprint));
        let mut urls = followed.map(|url| (url, UrlKind::Page)).chain(whole);
        let mut admitted = Admitted::default();
        loop {
            // A chunk's room taken at once, not grown a link at a time: at
            // most the URLs left (nofollow links counted, not taken).
            let left = urls.size_hint().1.unwrap_or(ADMIT_CHUNK);
            let mut chunk = Vec::with_capacity(left.min(ADMIT_CHUNK));
            chunk.extend(urls.by_ref().take(ADMIT_CHUNK));
            if chunk.is_empty() {
                return admitted;
            }
            let earlier = std::mem::take(&mut admitted.entries);
            if !earlier.is_empty() {
                admitted.count_early(&earlier);
                if let Err(e) = self.frontier.push(earlier) {
                    self.storage_failed("queueing a page's links", e);
                }
            }
            admitted.entries = self.admit_chunk(&found, chunk, &mut firsts);
        }
    }

    fn admit_chunk(
        &mut self,
        found: &Found,
        links: Vec<(LinkUrl<'_>, UrlKind)>,
        firsts: &mut FirstFindings,
    ) -> Vec<FrontierEntry> {
        let candidates = self.in_scope(found.referrer, links, found.depth);
        let fresh = self.claim_unseen(found, candidates, firsts);
        let fresh = self.cap_externals(fresh, found.depth);
        let quarantining_before = self.alerts.quarantining_count();
        let (mut admitted, given_up) = self.route_fresh(found, fresh);
        if !given_up.is_empty() {
            if let Err(e) = self.store.record_pages(&given_up) {
                self.storage_failed("recording URLs of given-up hosts", e);
            }
        }
        if self.alerts.quarantining_count() != quarantining_before {
            // An alert raised by this page's links also covers its earlier
            // links (those queued already were parked when it was raised).
            admitted.retain(
                |entry| match self.alerts.quarantining(&entry.url, &entry.host) {
                    Some(alert_id) => {
                        self.park_new(alert_id, entry.clone());
                        false
                    }
                    None => true,
                },
            );
        }
        admitted
    }

    /// New links as frontier entries: those to queue, and records for those
    /// of given-up hosts; links an open alert quarantines or a rule raised
    /// by them blocks go neither way.
    fn route_fresh(
        &mut self,
        found: &Found,
        fresh: Vec<(LinkUrl<'_>, HostKey, UrlKind)>,
    ) -> (Vec<FrontierEntry>, Vec<PageRecord>) {
        let (depth, redirects) = (found.depth, found.redirects);
        let mut admitted = Vec::new();
        let mut given_up = Vec::new();
        let rules_before = self.rules.next_id();
        // The page as the trap checks read it, worked out at its first new
        // link: most pages (once a crawl is under way) have none.
        let mut parent = None;
        for (url, host, kind) in fresh {
            // Checks beget no links, and a sitemap lists URLs by design: no
            // trap grows from either.
            let detection = match (kind, found.referrer) {
                (UrlKind::Page, Some(_)) => {
                    let parent = parent.get_or_insert_with(|| LinkParent::of(found.parent));
                    self.traps.on_discovered(parent, &url)
                }
                _ => None,
            };
            if let Some(d) = detection {
                // The alert's sweep must find the group's links queued.
                self.sync();
                self.raise_alert(d);
            }
            let entry = FrontierEntry {
                priority: priority(&url, depth),
                host,
                url: url.into_string(),
                depth,
                redirects,
                kind,
            };
            if self.rules.next_id() != rules_before
                && self.rules.matches(&entry.url, &entry.host).is_some()
            {
                // An alert this page raised was accepted at once (auto policy).
                self.stats.count().blocked_by_rules += 1;
            } else if let Some(alert_id) = self.alerts.quarantining(&entry.url, &entry.host) {
                self.park_new(alert_id, entry);
            } else if let Some(reason) = self.hosts.finished_reason(&entry.host) {
                // A given-up host takes no new work; its URLs are recorded at once.
                given_up.push(record_for(&entry, reason));
            } else {
                admitted.push(entry);
            }
        }
        (admitted, given_up)
    }

    /// The links that pass depth, scope and operator rules. Those left out
    /// for scope, depth, extension or a rule are recorded, with `parent` as
    /// a referrer, so a listing can say why they were not fetched and who
    /// links to them.
    fn in_scope<'a>(
        &mut self,
        parent: Option<&str>,
        links: Vec<(LinkUrl<'a>, UrlKind)>,
        depth: u32,
    ) -> Vec<(LinkUrl<'a>, UrlKind)> {
        let too_deep = depth > self.cfg.max_depth;
        let mut kept = Vec::with_capacity(links.len());
        let mut filtered = Vec::new();
        for (url, kind) in links {
            let kind = match self.admission(&url, kind, too_deep) {
                Ok(kind) => kind,
                Err(Some(reason)) => {
                    self.stats.count().filtered += 1;
                    filtered.push(FilteredUrl {
                        host: url.host_key_ref().into_owned(),
                        url: url.into_string(),
                        depth,
                        reason,
                        found_at_unix_ms: unix_ms(),
                    });
                    continue;
                }
                Err(None) => {
                    self.stats.count().filtered += 1;
                    continue;
                }
            };
            if let Some(rule) = self.rules.matches_url(&url) {
                self.stats.count().blocked_by_rules += 1;
                filtered.push(FilteredUrl {
                    host: url.host_key_ref().into_owned(),
                    url: url.into_string(),
                    depth,
                    reason: FilterReason::Rule(rule),
                    found_at_unix_ms: unix_ms(),
                });
                continue;
            }
            kept.push((url, kind));
        }
        self.record_filtered(parent, &filtered);
        kept
    }

    /// Records links left out, and `parent` (if any) as their first
    /// referrer (new ones) or a further one.
    fn record_filtered(&mut self, parent: Option<&str>, filtered: &[FilteredUrl]) {
        if filtered.is_empty() {
            return;
        }
        let fresh = match self.store.record_filtered(filtered) {
            Ok(fresh) => fresh,
            Err(e) => return self.storage_failed("recording links left out", e),
        };
        let Some(parent) = parent else {
            return;
        };
        // New to the filtered tree is not new to the crawl: a link too deep
        // here may have been found (and queued) from a shallower page. Only
        // then can it have referrers: the seen set tells the rest from
        // memory, and a read of the referrers probes every table of their
        // level 0 (tens of µs).
        let (store, frontier) = (&self.store, &self.frontier);
        let first = |url: &str| {
            !frontier.may_have_seen(url) || store.referrers(url).is_ok_and(|r| r.is_empty())
        };
        // Read before the referrers are added: adding holds them.
        let referred: Vec<(&str, bool)> = filtered
            .iter()
            .zip(fresh)
            .map(|(f, new)| (f.url.as_str(), new && first(&f.url)))
            .collect();
        if let Err(e) = self.store.add_referrers(parent, referred.into_iter()) {
            self.storage_failed("recording who links to a page", e);
        }
    }

    /// The links never seen before, in one batch, each with its host key
    /// (built for these only: most links of a page were seen); they are
    /// seen from now on. The referrer (if any) is recorded as the first one
    /// of those, a further one of the others (unless an earlier chunk of the
    /// page did).
    fn claim_unseen<'a>(
        &mut self,
        found: &Found,
        links: Vec<(LinkUrl<'a>, UrlKind)>,
        firsts: &mut FirstFindings,
    ) -> Vec<(LinkUrl<'a>, HostKey, UrlKind)> {
        if links.is_empty() {
            return Vec::new();
        }
        let fingerprints: Vec<u64> = links.iter().map(|(url, ..)| url.fingerprint()).collect();
        let claimed = match found.page_host {
            Some(host) => self.frontier.claim_page_links(host, &fingerprints),
            None => self.frontier.claim_fingerprints(&fingerprints),
        };
        let fresh = match claimed {
            Ok(fresh) => fresh,
            Err(e) => {
                self.storage_failed("checking links against the seen URLs", e);
                return Vec::new();
            }
        };
        if let Some(parent) = found.referrer {
            let referred = links
                .iter()
                .zip(&fingerprints)
                .zip(&fresh)
                .map(|(((url, ..), &fp), &f)| (url.as_str(), fp, f))
                .filter(|&(_, fp, _)| !firsts.referred_before(fp));
            if let Err(e) = self.store.add_fingerprinted_referrers(parent, referred) {
                self.storage_failed("recording who links to a page", e);
            }
            firsts.note(&fingerprints);
        }
        links
            .into_iter()
            .zip(fresh)
            .filter(|(_, fresh)| *fresh)
            .map(|((url, kind), _)| {
                let host = url.host_key_ref().into_owned();
                (url, host, kind)
            })
            .collect()
    }

    /// Quarantines a newly found URL under an open alert.
    fn park_new(&mut self, alert_id: u64, entry: FrontierEntry) {
        if let Err(e) = self.frontier.park_new(alert_id, vec![entry]) {
            self.storage_failed("parking a URL", e);
        }
    }
}

#[cfg(test)]
#[path = "links_tests.rs"]
mod tests;
