//! What goes into admission (a page's URLs: its compact links, then URLs held
//! whole) and what comes out of it (the entries of the last chunk, counts of
//! those queued before), for `links.rs`, which admits a chunk at a time.

use url::Url;

use crate::engine::dedup::{url_fingerprint, FingerprintSet};
use crate::engine::extract::PageLinks;
use crate::engine::frontier::FrontierEntry;
use crate::engine::store::UrlKind;

/// URLs admitted at a time: a page's links are read, and the new ones
/// made frontier entries, this many at once, however many it has. A page
/// with at most this many URLs is admitted as one batch.
pub(super) const ADMIT_CHUNK: usize = 4096;

/// A page's URLs on their way to admission: its followed links, compact
/// text read in place a chunk at a time, then URLs held whole (its
/// resources, a redirect's target, a sitemap's URLs), each with its kind.
#[derive(Default)]
pub(super) struct Outgoing {
    pub(super) links: PageLinks,
    pub(super) whole: Vec<(Url, UrlKind)>,
}

impl Outgoing {
    pub(super) fn whole(whole: Vec<(Url, UrlKind)>) -> Self {
        Outgoing {
            links: PageLinks::default(),
            whole,
        }
    }

    /// Admitted in more than one chunk, a resource may meet a link of the
    /// same URL in an earlier chunk: [`FirstFindings`] keeps it from being
    /// counted as a second referral by the page.
    pub(super) fn first_findings(&self) -> FirstFindings {
        if self.links.is_empty() || self.links.len() + self.whole.len() <= ADMIT_CHUNK {
            return FirstFindings(None);
        }
        let later = self
            .whole
            .iter()
            .map(|(url, _)| url_fingerprint(url.as_str()))
            .collect();
        FirstFindings(Some(Later {
            later,
            referred: FingerprintSet::default(),
        }))
    }
}

/// The page's URLs held whole that its links may repeat (a page loads
/// what it links to), by fingerprint, and those of them referred so far:
/// within one batch the store counts a page's URL once
/// (`Store::add_referrers`); across chunks this does. Bounded by the
/// resources a page keeps. `None` for a page admitted in one chunk.
pub(super) struct FirstFindings(Option<Later>);

struct Later {
    later: FingerprintSet,
    referred: FingerprintSet,
}

impl FirstFindings {
    /// Whether an earlier chunk of the page referred to the URL of
    /// `fingerprint` already.
    pub(super) fn referred_before(&self, fingerprint: u64) -> bool {
        self.0
            .as_ref()
            .is_some_and(|l| !l.referred.is_empty() && l.referred.contains(&fingerprint))
    }

    /// A chunk's URLs, by fingerprint, were referred to.
    pub(super) fn note(&mut self, fingerprints: &[u64]) {
        let Some(l) = &mut self.0 else {
            return;
        };
        for fingerprint in fingerprints {
            if l.later.contains(fingerprint) {
                l.referred.insert(*fingerprint);
            }
        }
    }
}

/// What admission queued for a page: the last chunk's entries, to go with
/// the page's completion, and how many earlier chunks queued, by kind.
#[derive(Debug, Default)]
pub(crate) struct Admitted {
    pub(super) entries: Vec<FrontierEntry>,
    /// Queued before the last chunk: pages, resources, externals.
    early: [usize; 3],
}

fn slot(kind: UrlKind) -> usize {
    match kind {
        UrlKind::Page => 0,
        UrlKind::Resource => 1,
        UrlKind::External => 2,
    }
}

impl Admitted {
    /// Entries about to be queued ahead of the page's completion.
    pub(super) fn count_early(&mut self, entries: &[FrontierEntry]) {
        for entry in entries {
            self.early[slot(entry.kind)] += 1;
        }
    }

    /// How many were admitted in all.
    pub(super) fn len(&self) -> usize {
        self.entries.len() + self.early.iter().sum::<usize>()
    }

    /// How many of the kinds `counted` takes were admitted in all.
    pub(super) fn count(&self, counted: impl Fn(UrlKind) -> bool) -> usize {
        let early: usize = UrlKind::ALL
            .into_iter()
            .filter(|&k| counted(k))
            .map(|k| self.early[slot(k)])
            .sum();
        early + self.entries.iter().filter(|e| counted(e.kind)).count()
    }
}

impl From<Vec<FrontierEntry>> for Admitted {
    fn from(entries: Vec<FrontierEntry>) -> Self {
        Admitted {
            entries,
            early: [0; 3],
        }
    }
}
