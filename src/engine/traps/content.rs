//! Traps seen in fetched pages: many near-identical pages under one path
//! prefix, and hosts that hand out far more new URLs per page than a site has.

use std::collections::VecDeque;

use url::Url;

use crate::engine::url_norm::UrlParts;

use super::{anchored_rule, hash_str, push_sample, segments, Detection, GenMap, MAX_SAMPLES};
use crate::engine::config::TrapConfig;
use crate::engine::telemetry::TrapKind;

/// Path prefixes tracked per host (per generation).
const PREFIXES: usize = 32;
/// Distinct page clusters kept per prefix.
const CLUSTERS: usize = 16;
/// A cluster is a trap only if at least one in this many of its prefix's
/// pages since its first one belong to it. Pages sharing a site's template
/// have correlated simhashes, so on a big site a few land within a few bits
/// of one another by chance, scattered over thousands of pages; a trap's
/// copies are a large share of what its prefix yields.
const MIN_SHARE: u32 = 10;
/// A cluster proves itself a trap once this many of its pages were linked
/// from a near duplicate in its directory: a trap's pages beget more of
/// themselves, while a site's similar pages (the type pages of an API
/// reference) are listed by index pages that do not resemble them.
const FED_MIN: u32 = 3;
/// Same-host links remembered per fetched page, for the check above.
const CHILDREN_PER_PAGE: usize = 64;
/// Bits of each generation of a prefix's filter of URLs linked from its near
/// duplicates, and the insertions after which a generation is replaced.
const SPAWNED_BITS: usize = 8192;
const SPAWNED_PER_GENERATION: u32 = 512;

struct Cluster {
    simhash: u64,
    pages: u32,
    /// Pages linked first from a near duplicate of their prefix.
    fed: u32,
    /// Handed over for a soft-404 probe once: a host is probed only once,
    /// and the work of a suspect is not redone on each of its pages.
    suspected: bool,
    /// The prefix's page count before this cluster's first page.
    since: u32,
    samples: VecDeque<String>,
}

impl Cluster {
    /// Enough pages, and a large enough share of the prefix's pages since
    /// its first one.
    fn is_suspect(&self, cfg: &TrapConfig, prefix_pages: u32) -> bool {
        let span = prefix_pages.saturating_sub(self.since);
        (self.pages as usize) > cfg.max_near_duplicates
            && u64::from(self.pages) * u64::from(MIN_SHARE) >= u64::from(span)
    }
}

/// The pages seen under one path prefix and their clusters.
#[derive(Default)]
struct Prefix {
    pages: u32,
    clusters: Vec<Cluster>,
    /// URLs linked from this prefix's near duplicates (allocated on first use).
    spawned: Option<Box<Spawned>>,
}

/// A two-generation Bloom filter of URL hashes (three bits each).
struct Spawned {
    young: Vec<u64>,
    old: Vec<u64>,
    inserted: u32,
}

impl Spawned {
    fn new() -> Self {
        Spawned {
            young: vec![0; SPAWNED_BITS / 64],
            old: vec![0; SPAWNED_BITS / 64],
            inserted: 0,
        }
    }

    fn bits(hash: u64) -> [usize; 3] {
        [0, 21, 42].map(|shift| ((hash >> shift) as usize) % SPAWNED_BITS)
    }

    fn insert(&mut self, hash: u64) {
        if self.inserted >= SPAWNED_PER_GENERATION {
            self.old = std::mem::replace(&mut self.young, vec![0; SPAWNED_BITS / 64]);
            self.inserted = 0;
        }
        for bit in Self::bits(hash) {
            self.young[bit / 64] |= 1 << (bit % 64);
        }
        self.inserted += 1;
    }

    fn contains(&self, hash: u64) -> bool {
        let has = |words: &[u64]| {
            Self::bits(hash)
                .iter()
                .all(|bit| words[bit / 64] & (1 << (bit % 64)) != 0)
        };
        has(&self.young) || has(&self.old)
    }
}

#[derive(Default)]
pub struct NearDupState {
    prefixes: Option<GenMap<String, Prefix>>,
    /// The page whose links are being admitted, and its same-host new links.
    children: Option<(u64, Vec<u64>)>,
}

/// The path prefix a page is grouped under: its first directory, or for a
/// page at the root its own path (with `?` when it has a query).
fn group_prefix(url: &Url) -> String {
    let segs = segments(url);
    if segs.len() >= 2 {
        format!("/{}/", segs[0])
    } else if url.query().is_some() {
        format!("{}?", url.path())
    } else {
        "/".to_string()
    }
}

impl NearDupState {
    /// A new same-host link of the page whose URL hashes to `parent`, which
    /// is about to be reported fetched.
    pub fn on_child(&mut self, parent: u64, child: &impl UrlParts) {
        let children = match &mut self.children {
            Some((p, children)) if *p == parent => children,
            _ => &mut self.children.insert((parent, Vec::new())).1,
        };
        if children.len() < CHILDREN_PER_PAGE {
            children.push(hash_str(child.as_str()));
        }
    }

    /// The cluster's detection when it is suspect, and whether its pages
    /// beget one another (else only a soft-404 probe can prove it a trap).
    pub fn on_page(
        &mut self,
        cfg: &TrapConfig,
        host: &str,
        url: &Url,
        simhash: u64,
    ) -> Option<(Detection, bool)> {
        let prefix = group_prefix(url);
        let url_hash = hash_str(url.as_str());
        let children = match self.children.take() {
            Some((parent, children)) if parent == url_hash => children,
            _ => Vec::new(),
        };
        let prefixes = self.prefixes.get_or_insert_with(|| GenMap::new(PREFIXES));
        let state = prefixes.get_or_insert_with(prefix.clone(), Prefix::default);
        let since = state.pages;
        state.pages = state.pages.saturating_add(1);
        let clusters = &mut state.clusters;
        let near = |c: &&mut Cluster| (c.simhash ^ simhash).count_ones() <= cfg.near_duplicate_bits;
        let cluster = match clusters.iter_mut().find(near) {
            Some(c) => c,
            None => {
                if clusters.len() >= CLUSTERS {
                    // Forget the smallest cluster: singletons are the common case.
                    let smallest = (0..clusters.len()).min_by_key(|i| clusters[*i].pages)?;
                    clusters.swap_remove(smallest);
                }
                clusters.push(Cluster {
                    simhash,
                    pages: 0,
                    fed: 0,
                    suspected: false,
                    since,
                    samples: VecDeque::new(),
                });
                clusters.last_mut()?
            }
        };
        // Keyed by the cluster: a page linked from a near duplicate of
        // another cluster (javadoc's "no usage" pages, linked from class
        // pages that resemble each other) is not one that begot itself.
        let key = |page: u64| page ^ cluster.simhash;
        let fed = state
            .spawned
            .as_ref()
            .is_some_and(|s| s.contains(key(url_hash)));
        cluster.pages = cluster.pages.saturating_add(1);
        cluster.fed = cluster.fed.saturating_add(u32::from(fed));
        if cluster.pages >= 2 {
            let spawned = state
                .spawned
                .get_or_insert_with(|| Box::new(Spawned::new()));
            children.into_iter().for_each(|c| spawned.insert(key(c)));
        }
        if cluster.samples.len() < MAX_SAMPLES {
            push_sample(&mut cluster.samples, url.as_str());
        }
        if !cluster.is_suspect(cfg, state.pages) {
            return None;
        }
        let proven = cluster.fed >= FED_MIN;
        if !proven && std::mem::replace(&mut cluster.suspected, true) {
            return None;
        }
        let (path, tail) = match prefix.strip_suffix('?') {
            Some(path) => (path.to_string(), r"\?"),
            None => (prefix, ""),
        };
        let detection = Detection {
            host: host.to_string(),
            kind: TrapKind::NearDuplicates,
            evidence_count: u64::from(cluster.pages),
            samples: cluster.samples.iter().cloned().collect(),
            rule: anchored_rule(url, host, &path, tail),
        };
        Some((detection, proven))
    }
}

/// One page of the budget window.
struct WindowPage {
    new_links: u32,
    /// Its content fingerprint (`None`: not HTML).
    simhash: Option<u64>,
    /// Its content was near none of the window's pages before it.
    distinct: bool,
}

/// Judges a host by its last `budget_window` pages: many new URLs per page
/// is what every large site does while its crawl grows, so a host is suspect
/// only when those pages also stop bringing distinct content.
#[derive(Default)]
pub struct BudgetState {
    window: VecDeque<WindowPage>,
    /// New URLs over the window.
    sum: u64,
    /// Distinct pages in the window.
    distinct: usize,
    /// Recent pages that yielded more than the limit.
    heavy: VecDeque<String>,
}

impl BudgetState {
    pub fn on_page(
        &mut self,
        cfg: &TrapConfig,
        host: &str,
        url: &Url,
        simhash: Option<u64>,
        new_links: usize,
    ) -> Option<Detection> {
        let window = cfg.budget_window.max(1);
        let n = u32::try_from(new_links).unwrap_or(u32::MAX);
        let distinct = simhash.is_some_and(|h| {
            self.window.iter().all(|p| {
                p.simhash
                    .is_none_or(|seen| (seen ^ h).count_ones() > cfg.near_duplicate_bits)
            })
        });
        self.window.push_back(WindowPage {
            new_links: n,
            simhash,
            distinct,
        });
        self.sum += u64::from(n);
        self.distinct += usize::from(distinct);
        while self.window.len() > window {
            if let Some(old) = self.window.pop_front() {
                self.sum -= u64::from(old.new_links);
                self.distinct -= usize::from(old.distinct);
            }
        }
        if f64::from(n) > cfg.max_new_urls_per_page {
            push_sample(&mut self.heavy, url.as_str());
        }
        let rate = self.sum as f64 / self.window.len() as f64;
        let growing_with_content = self.distinct * 2 > self.window.len();
        if self.window.len() < window
            || rate <= cfg.max_new_urls_per_page
            || growing_with_content
            || self.heavy.is_empty()
        {
            return None;
        }
        let heavy: Vec<Url> = self
            .heavy
            .iter()
            .filter_map(|u| Url::parse(u).ok())
            .collect();
        let first = heavy.first()?;
        let prefix = common_directory(&heavy);
        Some(Detection {
            host: host.to_string(),
            kind: TrapKind::HostBudget,
            evidence_count: self.window.len() as u64,
            samples: self.heavy.iter().cloned().collect(),
            rule: anchored_rule(first, host, &prefix, ""),
        })
    }
}

/// The pages' common directory (`/a/b/`); `/`, the whole host, if they share none.
fn common_directory(pages: &[Url]) -> String {
    let dirs: Vec<Vec<&str>> = pages
        .iter()
        .map(|u| {
            let s = segments(u);
            s[..s.len().saturating_sub(1)].to_vec()
        })
        .collect();
    let mut common: Vec<&str> = dirs.first().cloned().unwrap_or_default();
    for d in dirs.iter().skip(1) {
        let keep = common.iter().zip(d).take_while(|(a, b)| a == b).count();
        common.truncate(keep);
    }
    std::iter::once("/".to_string())
        .chain(common.iter().map(|s| format!("{s}/")))
        .collect()
}
