//! Spider-trap detectors. Each looks at discovered links or fetched pages of one
//! host, with bounded state, and reports a `Detection` carrying the narrowest
//! rule that covers the trap.
//!
//! Memory: at most `MAX_HOSTS` hosts; per host, two generations of at most
//! its share of `LINK_MEMORY` path/URL hashes (depth, counter: 1792 with up
//! to 256 hosts, down to 224 with 2048), 32 query paths with up to
//! `max_query_variants + 1` hashes each, 8 session-like parameters with 10
//! values and 256 pages each, 32 prefixes with 16 simhash clusters, and a
//! `budget_window` ring; samples (≤ 5 URLs) are kept only near a threshold.

mod content;
mod counter;
mod path;
mod query;
mod shape;

use std::borrow::Cow;
use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::Hash;

use serde::{Deserialize, Serialize};
use url::Url;

use crate::engine::config::TrapConfig;

use super::control::{HostKey, PatternKind, RuleSpec};
use super::recent_hosts::RecentHosts;
use super::rules::RuleSet;
use super::telemetry::TrapKind;
use super::url_norm::UrlParts;

/// Hosts tracked at once (see `RecentHosts`: every host crawled at once
/// must fit, or no evidence builds up).
pub const MAX_HOSTS: usize = 2048;
/// Links remembered by the depth and counter detectors over all hosts,
/// shared out as hosts come: [`MAX_LINKS_PER_HOST`] each up to 256 hosts,
/// an eighth of it with [`MAX_HOSTS`].
const LINK_MEMORY: usize = 256 * MAX_LINKS_PER_HOST;
/// Paths (depth) and URLs (counter) remembered per host and generation:
/// 7/8 of 2048, so that a full generation fits a hash table of 2048 slots
/// (2048 entries took 4096; with 200 hosts the counter's runs held 36–54 MB).
const MAX_LINKS_PER_HOST: usize = 1792;
/// Alerts remembered for de-duplication.
const MAX_RAISED: usize = 65_536;
/// Samples carried by a detection.
pub const MAX_SAMPLES: usize = 5;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Detection {
    pub host: HostKey,
    pub kind: TrapKind,
    /// URLs (or pages) that showed the pattern.
    pub evidence_count: u64,
    /// At most `MAX_SAMPLES`, each matched by `rule`.
    pub samples: Vec<String>,
    pub rule: RuleSpec,
}

#[derive(Default)]
struct HostState {
    depth: path::DepthState,
    counter: counter::CounterState,
    query: query::QueryState,
    session: query::SessionState,
    near_dup: content::NearDupState,
    budget: content::BudgetState,
}

/// What identifies one trap: its host, the detector, the suggested pattern.
pub type TrapKey = (HostKey, TrapKind, String);

/// The page whose new links are being checked, as the checks read it:
/// worked out once for all its links, not once a link.
pub struct LinkParent<'a> {
    url: &'a Url,
    host: Option<Cow<'a, str>>,
    /// [`hash_str`] of the URL, and of its path.
    hash: u64,
    path_hash: u64,
    /// Segments in its path.
    depth: usize,
    shape: counter::Shape<'a>,
}

impl<'a> LinkParent<'a> {
    pub fn of(url: &'a Url) -> Self {
        LinkParent {
            url,
            host: host_key(url),
            hash: hash_str(url.as_str()),
            path_hash: hash_str(url.path()),
            depth: path_segments(url.path()).count(),
            shape: counter::Shape::of(url),
        }
    }
}

pub struct TrapDetector {
    cfg: TrapConfig,
    hosts: RecentHosts<HostState>,
    raised: HashSet<TrapKey>,
    /// Raised traps seen again since the last `take_repeats`, with their
    /// latest evidence count (detectors count cumulatively).
    repeats: HashMap<TrapKey, u64>,
    suppressed: HashSet<(HostKey, RuleSpec)>,
    /// Near duplicates whose pages do not beget one another, for a soft-404
    /// probe to prove or clear (see `take_suspect`).
    suspect: Option<Detection>,
}

impl TrapDetector {
    pub fn new(cfg: &TrapConfig) -> Self {
        TrapDetector {
            cfg: cfg.clone(),
            hosts: RecentHosts::new(MAX_HOSTS),
            raised: HashSet::new(),
            repeats: HashMap::new(),
            suppressed: HashSet::new(),
            suspect: None,
        }
    }

    /// A link from `parent` to the newly discovered `child`.
    pub fn on_discovered(
        &mut self,
        parent: &LinkParent,
        child: &impl UrlParts,
    ) -> Option<Detection> {
        let host = host_key(child)?;
        let same_host = parent.host.as_deref() == Some(&*host);
        let links = self.hosts.share(LINK_MEMORY, MAX_LINKS_PER_HOST);
        let (cfg, state) = self.host_state(&host);
        let mut found = Vec::new();
        found.extend(path::repeated_segments(cfg, &host, child));
        if same_host {
            state.near_dup.on_child(parent.hash, child);
            found.extend(state.depth.on_link(cfg, &host, parent, child, links));
            found.extend(state.counter.on_link(cfg, &host, parent, child, links));
            found.extend(state.query.on_link(cfg, &host, parent.url, child));
        }
        found.extend(state.session.on_link(&host, child));
        if found.is_empty() {
            return None;
        }
        // Parsed for the evidence only when a detector fired.
        let child = Url::parse(child.as_str()).ok()?;
        found.into_iter().find_map(|d| self.raise(d, &child))
    }

    /// A fetched page: its simhash (HTML only), how many new URLs it yielded, and whether its
    /// body is an exact copy of a stored page. Exact copies are left to the content digest
    /// (their links are not followed, so they cannot grow a trap): labelling them "near
    /// duplicates" would tell the operator less than the results already do.
    pub fn on_fetched(
        &mut self,
        url: &Url,
        simhash: Option<u64>,
        new_links: usize,
        exact_copy: bool,
    ) -> Option<Detection> {
        let host = host_key(url)?;
        let (cfg, state) = self.host_state(&host);
        let mut found = Vec::new();
        let mut unproven = None;
        if let (Some(h), false) = (simhash, exact_copy) {
            match state.near_dup.on_page(cfg, &host, url, h) {
                Some((d, true)) => found.push(d),
                Some((d, false)) => unproven = Some(d),
                None => {}
            }
        }
        found.extend(state.budget.on_page(cfg, &host, url, simhash, new_links));
        let raised = found.into_iter().find_map(|d| self.raise(d, url));
        if raised.is_none() {
            if let Some(d) = unproven.and_then(|d| self.shaped(d, url)) {
                self.suspect = Some(d);
            }
        }
        raised
    }

    /// Many near duplicates that a finite site could also have (similar pages
    /// listed by an index): a trap only if the host answers a made-up URL
    /// with the same content. Not remembered as raised, so the cluster can
    /// still prove itself by begetting more of itself.
    pub fn take_suspect(&mut self) -> Option<Detection> {
        self.suspect.take()
    }

    /// Raised traps seen again since the last call, with their latest
    /// evidence count: one entry per trap however often it was seen.
    pub fn take_repeats(&mut self) -> Vec<(TrapKey, u64)> {
        self.repeats.drain().collect()
    }

    /// The operator dismissed an alert with this rule: never suggest it again.
    pub fn suppress(&mut self, host: &str, rule: &RuleSpec) {
        self.suppressed.insert((host.to_string(), rule.clone()));
    }

    /// Restores the memory of an alert raised before a restart.
    pub fn mark_raised(&mut self, host: &str, kind: TrapKind, rule: &RuleSpec) {
        if self.raised.len() < MAX_RAISED {
            self.raised
                .insert((host.to_string(), kind, rule.pattern.clone()));
        }
    }

    #[cfg(test)]
    pub fn hosts_tracked(&self) -> usize {
        self.hosts.len()
    }

    /// The settings and the host's state (created if new).
    fn host_state(&mut self, host: &str) -> (&TrapConfig, &mut HostState) {
        (&self.cfg, self.hosts.get(host))
    }

    fn raise(&mut self, d: Detection, trigger: &Url) -> Option<Detection> {
        let d = self.shaped(d, trigger)?;
        let key = (d.host.clone(), d.kind, d.rule.pattern.clone());
        if self.raised.len() < MAX_RAISED {
            self.raised.insert(key);
        }
        Some(d)
    }

    /// The detection with its narrowest rule and the samples it covers;
    /// `None` when it was suppressed, raised already (counted as a repeat)
    /// or its rule covers none of its evidence.
    fn shaped(&mut self, mut d: Detection, trigger: &Url) -> Option<Detection> {
        // One shape: its pattern. Several (a trap varying its structure):
        // the detector's rule, which later variants cannot escape; the
        // collateral check may still fall back to the alternatives.
        if let Some(narrow) = narrowest(&d, Some(trigger)).filter(|n| !n.alternatives) {
            if let Some(pattern) = narrow.patterns.into_iter().next() {
                d.rule = regex_rule(&d.host, pattern);
            }
        }
        if self.suppressed.contains(&(d.host.clone(), d.rule.clone())) {
            return None;
        }
        let key = (d.host.clone(), d.kind, d.rule.pattern.clone());
        if self.raised.contains(&key) {
            let evidence = self.repeats.entry(key).or_default();
            *evidence = (*evidence).max(d.evidence_count);
            return None;
        }
        // A suggestion that does not cover its own evidence would park nothing.
        let rule = match RuleSet::compile(&d.rule) {
            Ok(rule) => rule,
            Err(e) => {
                tracing::error!("trap rule for {} does not compile: {e}", d.host);
                return None;
            }
        };
        d.samples.retain(|s| rule.is_match(s, &d.host));
        d.samples.dedup();
        d.samples.truncate(MAX_SAMPLES);
        if d.samples.is_empty() {
            if !rule.is_match(trigger.as_str(), &d.host) {
                tracing::error!(
                    "trap rule {} matches none of its evidence ({})",
                    d.rule.pattern,
                    trigger.as_str()
                );
                return None;
            }
            d.samples.push(trigger.to_string());
        }
        Some(d)
    }
}

/// Rules narrower than a content detector's directory rule, each covering
/// the detection's evidence (its samples and `trigger`), broadest first.
/// Empty for the shape detectors (paths, queries, session ids), whose own
/// rule already follows the trap's shape and must keep covering URLs the
/// trap has not generated yet, and when the evidence has no common shape.
pub(crate) fn narrower_rules(d: &Detection, trigger: Option<&Url>) -> Vec<RuleSpec> {
    narrowest(d, trigger)
        .map(|n| n.patterns)
        .unwrap_or_default()
        .into_iter()
        .map(|pattern| regex_rule(&d.host, pattern))
        .collect()
}

/// The narrowest shape of a content or counter detection's evidence.
fn narrowest(d: &Detection, trigger: Option<&Url>) -> Option<shape::Narrowest> {
    if !matches!(
        d.kind,
        TrapKind::NearDuplicates
            | TrapKind::HostBudget
            | TrapKind::Counter
            | TrapKind::SoftNotFound
    ) {
        return None;
    }
    let mut evidence: Vec<Url> = d
        .samples
        .iter()
        .filter_map(|s| Url::parse(s).ok())
        .collect();
    evidence.extend(trigger.cloned());
    evidence.retain(|u| host_key(u).as_deref() == Some(d.host.as_str()));
    shape::narrowest(&d.host, &evidence)
}

/// `host` or `host:port` when the port is not the scheme's default,
/// lowercase; `None` for a URL without a host.
pub(crate) fn host_key(url: &impl UrlParts) -> Option<Cow<'_, str>> {
    url.host_str().map(|_| url.host_key_ref())
}

/// `scheme://host[:port]` as it appears at the start of the URL.
fn origin(url: &impl UrlParts, host: &str) -> String {
    format!("{}://{}", url.scheme(), host)
}

/// A regex rule anchored on the URL's origin followed by `path_prefix`
/// (literal) and then `tail` (regex syntax).
fn anchored_rule(url: &impl UrlParts, host: &str, path_prefix: &str, tail: &str) -> RuleSpec {
    regex_rule(
        host,
        format!(
            "^{}{}{tail}",
            regex::escape(&origin(url, host)),
            regex::escape(path_prefix)
        ),
    )
}

fn regex_rule(host: &str, pattern: String) -> RuleSpec {
    RuleSpec {
        kind: PatternKind::Regex,
        pattern,
        host: Some(host.to_string()),
    }
}

/// Non-empty path segments.
fn segments(url: &impl UrlParts) -> Vec<&str> {
    path_segments(url.path()).collect()
}

/// [`segments`], one at a time: for a link's checks, which mostly need
/// only how many there are, or the first.
fn path_segments(path: &str) -> impl Iterator<Item = &str> {
    path.split('/').filter(|s| !s.is_empty())
}

fn hash_str(s: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(s.as_bytes())
}

/// A map that forgets its least recently used half when full: entries live in
/// a young and an old generation; when the young one fills, the old one is
/// dropped and the young one becomes old. Lookups promote.
///
/// Its keys are mostly hashes, looked up for every link: hashed again by a
/// fast hasher with a seed of the process's, not std's SipHash.
pub(crate) struct GenMap<K, V> {
    young: HashMap<K, V, foldhash::fast::RandomState>,
    old: HashMap<K, V, foldhash::fast::RandomState>,
    cap: usize,
}

impl<K: Hash + Eq + Clone, V> GenMap<K, V> {
    pub(crate) fn new(cap: usize) -> Self {
        GenMap {
            young: HashMap::default(),
            old: HashMap::default(),
            cap: cap.max(1),
        }
    }

    pub(crate) fn get(&mut self, key: &K) -> Option<&mut V> {
        if !self.young.contains_key(key) {
            let v = self.old.remove(key)?;
            self.insert(key.clone(), v);
        }
        self.young.get_mut(key)
    }

    pub(crate) fn insert(&mut self, key: K, value: V) {
        if self.young.len() >= self.cap && !self.young.contains_key(&key) {
            self.old = std::mem::take(&mut self.young);
            self.old.remove(&key);
        }
        self.young.insert(key, value);
    }

    pub(crate) fn get_or_insert_with(&mut self, key: K, f: impl FnOnce() -> V) -> &mut V {
        if self.get(&key).is_none() {
            self.insert(key.clone(), f());
        }
        self.young.get_mut(&key).expect("just inserted")
    }

    /// The map in `slot`, made on first use, holding at most `cap` entries a
    /// generation from its next rotation on: a detector's share of memory,
    /// which shrinks as hosts come.
    pub(crate) fn capped(slot: &mut Option<Self>, cap: usize) -> &mut Self {
        let map = slot.get_or_insert_with(|| GenMap::new(cap));
        map.set_cap(cap);
        map
    }

    /// Holds at most `cap` entries a generation from the next rotation on.
    pub(crate) fn set_cap(&mut self, cap: usize) {
        self.cap = cap.max(1);
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.young.len() + self.old.len()
    }
}

impl<K: Hash + Eq + Clone, V> Default for GenMap<K, V> {
    fn default() -> Self {
        GenMap::new(256)
    }
}

/// Keeps the last `MAX_SAMPLES` strings.
fn push_sample(samples: &mut VecDeque<String>, url: &str) {
    if samples.iter().any(|s| s == url) {
        return;
    }
    if samples.len() >= MAX_SAMPLES {
        samples.pop_front();
    }
    samples.push_back(url.to_string());
}

#[cfg(test)]
mod false_positives;
#[cfg(test)]
mod sim;
#[cfg(test)]
mod state_tests;
#[cfg(test)]
mod tests;
