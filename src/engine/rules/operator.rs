//! The operator's rules as the crawl keeps them: compiled for matching,
//! numbered, counted, and stored so they survive a restart.

use serde::{Deserialize, Serialize};

use super::{CompiledRule, RuleSet};
use crate::engine::control::{PatternKind, RuleSpec};
use crate::engine::store::{Store, StoreError, Tree};
use crate::engine::telemetry::RuleView;
use crate::engine::url_norm::UrlParts;

/// A rule as stored in the `rules` tree.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct RuleRecord {
    id: u64,
    spec: RuleSpec,
    origin: String,
    #[serde(default)]
    hits: u64,
}

/// The crawl's rules; the one owner of the `rules` tree.
pub(crate) struct OperatorRules {
    set: RuleSet,
    next_id: u64,
    store: Store,
}

impl OperatorRules {
    /// The stored rules. One that no longer compiles (a newer regex syntax
    /// rule, say) is skipped with a warning rather than failing the crawl.
    pub(crate) fn load(store: &Store) -> Result<Self, StoreError> {
        let mut set = RuleSet::default();
        let mut next_id = 1;
        for (_, record) in store.scan::<RuleRecord>(Tree::Rules)? {
            next_id = next_id.max(record.id + 1);
            if let Err(e) = set.add_with_hits(record.id, record.spec, record.origin, record.hits) {
                tracing::warn!("stored rule #{} no longer compiles: {e}", record.id);
            }
        }
        Ok(OperatorRules {
            set,
            next_id,
            store: store.clone(),
        })
    }

    /// The number the next rule gets.
    pub(crate) fn next_id(&self) -> u64 {
        self.next_id
    }

    /// Never reuses numbers below `next_id` (kept in the crawl's settings, so
    /// a removed rule's number is not given out again after a restart).
    pub(crate) fn reserve_ids_below(&mut self, next_id: u64) {
        self.next_id = self.next_id.max(next_id);
    }

    /// Compiles, numbers and stores a rule; returns its id and the compiled
    /// rule (to sweep what is already queued).
    pub(crate) fn add(
        &mut self,
        spec: RuleSpec,
        origin: String,
    ) -> Result<(u64, CompiledRule), String> {
        let compiled = RuleSet::compile(&spec)?;
        let id = self.next_id;
        self.set.add(id, spec.clone(), origin.clone())?;
        self.next_id += 1;
        let record = RuleRecord {
            id,
            spec,
            origin,
            hits: 0,
        };
        if let Err(e) = self.store.put(Tree::Rules, &id.to_be_bytes(), &record) {
            self.set.remove(id);
            return Err(format!("could not store the rule: {e}"));
        }
        Ok((id, compiled))
    }

    /// Removes a rule from matching and from the store.
    pub(crate) fn remove(&mut self, id: u64) -> Result<RuleSpec, String> {
        let spec = self
            .set
            .remove(id)
            .ok_or_else(|| format!("no rule #{id}"))?;
        self.store
            .remove(Tree::Rules, &id.to_be_bytes())
            .map_err(|e| format!("rule #{id} removed, but not from the store: {e}"))?;
        Ok(spec)
    }

    /// The first rule blocking the link `url`; counts the hit.
    pub(crate) fn matches_url(&self, url: &impl UrlParts) -> Option<u64> {
        self.set.matches_url(url)
    }

    /// The first rule blocking `url` of `host`; counts the hit.
    pub(crate) fn matches(&self, url: &str, host: &str) -> Option<u64> {
        self.set.matches(url, host)
    }

    /// Counts `n` URLs blocked by rule `id` outside `matches`.
    pub(crate) fn add_hits(&self, id: u64, n: u64) {
        self.set.add_hits(id, n);
    }

    /// Stores the hit counters (they change with every blocked link, so they
    /// are written at checkpoints only).
    pub(crate) fn save_hits(&self) -> Result<(), StoreError> {
        for view in self.set.views() {
            let record = RuleRecord {
                id: view.id,
                spec: view.spec,
                origin: view.origin,
                hits: view.hits,
            };
            self.store
                .put(Tree::Rules, &record.id.to_be_bytes(), &record)?;
        }
        Ok(())
    }

    /// The rules as front ends show them.
    pub(crate) fn views(&self) -> Vec<RuleView> {
        self.set.views()
    }
}

/// A rule in words, for log lines and answers: `regex ^/a on h`.
pub(crate) fn describe(spec: &RuleSpec) -> String {
    let kind = match spec.kind {
        PatternKind::Regex => "regex",
        PatternKind::Glob => "glob",
    };
    match &spec.host {
        Some(h) => format!("{kind} {} on {h}", spec.pattern),
        None => format!("{kind} {}", spec.pattern),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(pattern: &str) -> RuleSpec {
        RuleSpec {
            kind: PatternKind::Regex,
            pattern: pattern.into(),
            host: None,
        }
    }

    #[test]
    fn rules_survive_a_reopen_with_their_numbers_and_hits() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Store::open(dir.path(), 1 << 20).expect("store");
        let mut rules = OperatorRules::load(&store).expect("load");
        let (first, _) = rules.add(spec("/a/"), "operator".into()).expect("add");
        let (second, _) = rules.add(spec("/b/"), "operator".into()).expect("add");
        assert_eq!((first, second), (1, 2));
        assert!(rules.add(spec("(unclosed"), "operator".into()).is_err());
        assert_eq!(rules.matches("http://h/a/1", "h"), Some(first));
        rules.add_hits(first, 4);
        rules.save_hits().expect("hits saved");
        rules.remove(second).expect("removed");
        assert!(rules.remove(second).is_err(), "a rule is removed once");

        let mut reopened = OperatorRules::load(&store).expect("reload");
        let views = reopened.views();
        assert_eq!(views.len(), 1);
        assert_eq!((views[0].id, views[0].hits), (first, 5));
        reopened.reserve_ids_below(3);
        let (third, _) = reopened.add(spec("/c/"), "operator".into()).expect("add");
        assert_eq!(third, 3, "a removed rule's number is not given out again");
    }
}
