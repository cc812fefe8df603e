//! Operator rules: blacklist patterns (regex or glob) over absolute URLs,
//! optionally limited to one host, with hit counters.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use regex::bytes::{Regex, RegexBuilder, RegexSet, RegexSetBuilder};

use super::control::{PatternKind, RuleSpec};
use super::telemetry::RuleView;
use super::url_norm::UrlParts;

/// Compiled size cap per pattern: a hostile or careless pattern cannot eat memory.
pub const MAX_COMPILED_BYTES: usize = 1 << 20;
/// Longest pattern accepted, in bytes.
pub const MAX_PATTERN_LEN: usize = 2048;

/// One rule, ready to match.
#[derive(Debug, Clone)]
pub struct CompiledRule {
    spec: RuleSpec,
    /// Regex form of the pattern (globs are translated, anchored on the whole URL).
    source: String,
    regex: Regex,
}

impl CompiledRule {
    #[cfg(test)]
    pub fn spec(&self) -> &RuleSpec {
        &self.spec
    }

    /// Whether the rule covers `url` of `host` (host as `url_norm::host_key`).
    pub fn is_match(&self, url: &str, host: &str) -> bool {
        host_in_scope(&self.spec, host) && self.regex.is_match(url.as_bytes())
    }
}

fn host_in_scope(spec: &RuleSpec, host: &str) -> bool {
    spec.host
        .as_deref()
        .is_none_or(|h| h.eq_ignore_ascii_case(host))
}

struct Entry {
    id: u64,
    rule: CompiledRule,
    origin: String,
    hits: AtomicU64,
}

/// The operator's rules. `matches` is `&self` (counters are atomic) so the
/// coordinator can check many URLs without exclusive access.
#[derive(Default)]
pub struct RuleSet {
    /// In insertion order: the first matching rule wins.
    entries: Vec<Entry>,
    /// Every rule without a host, in one automaton.
    global: Option<RegexSet>,
    /// `global` pattern index -> `entries` index.
    global_index: Vec<usize>,
    /// Lowercased host -> `entries` indices, ascending.
    by_host: HashMap<String, Vec<usize>>,
}

impl RuleSet {
    #[cfg(test)]
    pub fn new() -> Self {
        RuleSet::default()
    }

    /// Checks and compiles a rule; the error says what is wrong and what to do.
    pub fn compile(spec: &RuleSpec) -> Result<CompiledRule, String> {
        let mut spec = spec.clone();
        if let Some(h) = spec.host.as_mut() {
            *h = h.trim().to_ascii_lowercase();
            if h.is_empty() {
                spec.host = None;
            }
        }
        let kind = match spec.kind {
            PatternKind::Regex => "regex",
            PatternKind::Glob => "glob",
        };
        let shown = shorten(&spec.pattern);
        if spec.pattern.trim().is_empty() {
            return Err(format!("empty {kind} pattern — type a pattern to block"));
        }
        if spec.pattern.len() > MAX_PATTERN_LEN {
            return Err(format!(
                "{kind} pattern \"{shown}\" is too long ({} bytes, limit {MAX_PATTERN_LEN}) — shorten it",
                spec.pattern.len()
            ));
        }
        let source = match spec.kind {
            PatternKind::Regex => spec.pattern.clone(),
            PatternKind::Glob => globset::GlobBuilder::new(&spec.pattern)
                .literal_separator(false)
                .build()
                .map_err(|e| {
                    format!(
                        "invalid glob \"{shown}\": {} — globs use * (anything, including /), ? (one character), [abc] and {{a,b}}",
                        e.kind()
                    )
                })?
                .regex()
                .to_string(),
        };
        let regex = RegexBuilder::new(&source)
            .size_limit(MAX_COMPILED_BYTES)
            .dfa_size_limit(MAX_COMPILED_BYTES)
            .build()
            .map_err(|e| regex_error(kind, &shown, &e))?;
        Ok(CompiledRule {
            spec,
            source,
            regex,
        })
    }

    /// Adds a rule under `id`; `origin` says who added it ("operator", "alert #3").
    pub fn add(&mut self, id: u64, spec: RuleSpec, origin: String) -> Result<(), String> {
        self.add_with_hits(id, spec, origin, 0)
    }

    /// As `add`, keeping a hit count restored from storage.
    pub fn add_with_hits(
        &mut self,
        id: u64,
        spec: RuleSpec,
        origin: String,
        hits: u64,
    ) -> Result<(), String> {
        if self.entries.iter().any(|e| e.id == id) {
            return Err(format!("rule #{id} already exists — remove it first"));
        }
        let rule = RuleSet::compile(&spec)?;
        self.entries.push(Entry {
            id,
            rule,
            origin,
            hits: AtomicU64::new(hits),
        });
        self.rebuild();
        Ok(())
    }

    /// Removes the rule; its spec if it existed.
    pub fn remove(&mut self, id: u64) -> Option<RuleSpec> {
        let pos = self.entries.iter().position(|e| e.id == id)?;
        let entry = self.entries.remove(pos);
        self.rebuild();
        Some(entry.rule.spec)
    }

    fn rebuild(&mut self) {
        let mut patterns = Vec::new();
        let mut global_index = Vec::new();
        let mut by_host: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, e) in self.entries.iter().enumerate() {
            match &e.rule.spec.host {
                None => {
                    patterns.push(e.rule.source.as_str());
                    global_index.push(i);
                }
                Some(h) => by_host.entry(h.clone()).or_default().push(i),
            }
        }
        // Each pattern compiled alone; if together they exceed the cap, match one by one.
        self.global = if patterns.is_empty() {
            None
        } else {
            RegexSetBuilder::new(&patterns)
                .size_limit(MAX_COMPILED_BYTES * 8)
                .dfa_size_limit(MAX_COMPILED_BYTES * 8)
                .build()
                .ok()
        };
        self.global_index = global_index;
        self.by_host = by_host;
    }

    fn first_global(&self, url: &[u8]) -> Option<usize> {
        match &self.global {
            Some(set) => set.matches(url).iter().next().map(|p| self.global_index[p]),
            None => self
                .global_index
                .iter()
                .copied()
                .find(|i| self.entries[*i].rule.regex.is_match(url)),
        }
    }

    /// [`RuleSet::matches`] for a link: its host key is built only when a
    /// rule is of one host (most links are checked against none).
    pub fn matches_url(&self, url: &impl UrlParts) -> Option<u64> {
        let host = match self.by_host.is_empty() {
            true => std::borrow::Cow::Borrowed(""),
            false => url.host_key_ref(),
        };
        self.matches(url.as_str(), &host)
    }

    /// The first matching rule's id (in insertion order); counts a hit on it.
    pub fn matches(&self, url: &str, host: &str) -> Option<u64> {
        let mut first = self.first_global(url.as_bytes());
        if !self.by_host.is_empty() {
            if let Some(indices) = self.by_host.get(&host.to_ascii_lowercase()) {
                let limit = first.unwrap_or(usize::MAX);
                if let Some(i) = indices
                    .iter()
                    .copied()
                    .take_while(|i| *i < limit)
                    .find(|i| self.entries[*i].rule.regex.is_match(url.as_bytes()))
                {
                    first = Some(i);
                }
            }
        }
        let entry = &self.entries[first?];
        entry.hits.fetch_add(1, Ordering::Relaxed);
        Some(entry.id)
    }

    #[cfg(test)]
    pub fn get(&self, id: u64) -> Option<&CompiledRule> {
        self.entries.iter().find(|e| e.id == id).map(|e| &e.rule)
    }

    /// Adds hits counted elsewhere (URLs already queued that a new rule removed).
    pub fn add_hits(&self, id: u64, n: u64) {
        if let Some(e) = self.entries.iter().find(|e| e.id == id) {
            e.hits.fetch_add(n, Ordering::Relaxed);
        }
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn views(&self) -> Vec<RuleView> {
        self.entries
            .iter()
            .map(|e| RuleView {
                id: e.id,
                spec: e.rule.spec.clone(),
                hits: e.hits.load(Ordering::Relaxed),
                origin: e.origin.clone(),
            })
            .collect()
    }
}

fn shorten(pattern: &str) -> String {
    const SHOWN: usize = 80;
    if pattern.chars().count() <= SHOWN {
        pattern.to_string()
    } else {
        let head: String = pattern.chars().take(SHOWN).collect();
        format!("{head}…")
    }
}

fn short_regex_error(e: &regex::Error) -> String {
    match e {
        regex::Error::CompiledTooBig(limit) => {
            format!("compiled size over {} KiB", limit / 1024)
        }
        regex::Error::Syntax(text) => text
            .lines()
            .rev()
            .find_map(|l| l.trim().strip_prefix("error: "))
            .unwrap_or("syntax error")
            .to_string(),
        other => other.to_string(),
    }
}

fn regex_error(kind: &str, shown: &str, e: &regex::Error) -> String {
    let hint = match e {
        regex::Error::CompiledTooBig(_) => {
            "simplify it (large repetition counts like {1000} are expensive)"
        }
        _ if kind == "glob" => "check the glob's brackets and braces",
        _ => "check brackets and escape special characters such as . ? ( [ with \\",
    };
    format!(
        "invalid {kind} \"{shown}\": {} — {hint}",
        short_regex_error(e)
    )
}

mod operator;

pub(crate) use operator::{describe, OperatorRules};

#[cfg(test)]
mod tests;
