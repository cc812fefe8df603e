//! A suggested rule's collateral: the already fetched good pages of its host
//! that it would have blocked. A detection's rule is narrowed until it spares
//! them; when no narrower rule covering the evidence does, the alert says so
//! and policy `auto` does not apply it.
//!
//! Bounded and off the hot path: it runs only when an alert is raised, reads
//! at most [`PAGES_READ`] page records per origin of the host (http and
//! https) from the store's `pages` tree and keeps at most [`PAGES_KEPT`] of
//! those the candidate rules match.

use std::collections::HashSet;
use std::time::Duration;

use super::preview::{preview, PreviewBudget};
use super::Coordinator;
use crate::engine::control::RuleSpec;
use crate::engine::rules::{CompiledRule, RuleSet};
use crate::engine::store::{PageOutcome, PageRecord, StoreError};
use crate::engine::telemetry::{RuleImpact, TrapAlert};
use crate::engine::traps::{narrower_rules, Detection};

/// Page records read per origin for one alert.
const PAGES_READ: usize = 20_000;
/// Matched pages kept for the verdict.
const PAGES_KEPT: usize = 4_096;
/// Good pages named in an alert.
const EXAMPLES: usize = 3;
/// The queued and parked count is a preview with this (smaller) budget.
const COUNT_BUDGET: PreviewBudget = PreviewBudget {
    time: Duration::from_millis(20),
    rows: 50_000,
};

/// A fetched 2xx page some candidate rule matches.
struct Matched {
    url: String,
    /// Its content fingerprint (HTML pages).
    simhash: Option<u64>,
}

/// What the fetched pages say about one rule.
struct Verdict {
    good: Vec<String>,
}

impl Coordinator {
    /// Narrows `d.rule` to the broadest candidate that matches no good page;
    /// returns the impact's good-page part for the rule kept (the narrowest
    /// one when every candidate has collateral).
    pub(super) fn narrow_for_collateral(&mut self, d: &mut Detection) -> RuleImpact {
        let mut candidates = vec![d.rule.clone()];
        for rule in narrower_rules(d, None) {
            if !candidates.contains(&rule) {
                candidates.push(rule);
            }
        }
        let Some((spec, impact)) = self.first_clean(&d.host, &d.samples, candidates) else {
            return RuleImpact::default();
        };
        d.rule = spec;
        impact
    }

    /// An alert's impact measured now, for the rule it suggests.
    pub(super) fn measure_impact(&mut self, alert: &TrapAlert) -> RuleImpact {
        let rule = alert.suggested_rule.clone();
        let mut impact = self
            .first_clean(&alert.host, &alert.samples, vec![rule.clone()])
            .map(|(_, impact)| impact)
            .unwrap_or_default();
        if let Ok(compiled) = RuleSet::compile(&rule) {
            self.count_blocked(&compiled, &mut impact);
        }
        impact
    }

    /// The first of `candidates` that matches no good page of `host` (else
    /// the last), with the good-page part of its impact.
    fn first_clean(
        &mut self,
        host: &str,
        evidence: &[String],
        candidates: Vec<RuleSpec>,
    ) -> Option<(RuleSpec, RuleImpact)> {
        let compiled: Vec<(RuleSpec, CompiledRule)> = candidates
            .into_iter()
            .filter_map(|spec| RuleSet::compile(&spec).ok().map(|c| (spec, c)))
            .collect();
        if compiled.is_empty() {
            return None;
        }
        let (matched, sampled) = self.matched_pages(host, &compiled);
        let hashes = self.evidence_hashes(evidence);
        let samples: HashSet<&str> = evidence.iter().map(String::as_str).collect();
        let near = self.cfg.traps.near_duplicate_bits;
        let mut last = None;
        for (spec, rule) in &compiled {
            let verdict = judge(&matched, rule, host, &hashes, &samples, near);
            let clean = verdict.good.is_empty();
            last = Some((spec.clone(), verdict));
            if clean {
                break;
            }
        }
        let (spec, verdict) = last?;
        let impact = RuleImpact {
            good_fetched: verdict.good.len() as u64,
            good_examples: verdict.good.into_iter().take(EXAMPLES).collect(),
            sampled,
            ..RuleImpact::default()
        };
        Some((spec, impact))
    }

    /// Fills in the queued and parked URLs `rule` matches now.
    pub(super) fn count_blocked(&mut self, rule: &CompiledRule, impact: &mut RuleImpact) {
        match preview(self.frontier.as_mut(), &self.store, rule, COUNT_BUDGET) {
            Ok(found) => {
                impact.queued = found.total.queued;
                impact.parked = found.total.parked;
                impact.sampled |= found.sampled;
            }
            Err(e) => self.storage_failed("counting the URLs an alert's rule matches", e),
        }
    }

    /// The host's fetched HTML pages any of `rules` matches, and whether the
    /// read stopped at its bound.
    fn matched_pages(
        &mut self,
        host: &str,
        rules: &[(RuleSpec, CompiledRule)],
    ) -> (Vec<Matched>, bool) {
        let mut matched = Vec::new();
        let mut sampled = false;
        for scheme in ["http", "https"] {
            let prefix = format!("{scheme}://{host}/");
            for (read, page) in self.store.page_records(&prefix).enumerate() {
                if read >= PAGES_READ || matched.len() >= PAGES_KEPT {
                    sampled = true;
                    break;
                }
                let page = match page {
                    Ok(page) => page,
                    Err(StoreError::Corrupt { .. }) => continue,
                    Err(e) => {
                        self.storage_failed("reading fetched pages for an alert's rule", e);
                        return (matched, true);
                    }
                };
                if let Some(m) = html_page(page, rules) {
                    matched.push(m);
                }
            }
        }
        (matched, sampled)
    }

    /// Simhashes of the evidence pages that were fetched.
    pub(super) fn evidence_hashes(&mut self, samples: &[String]) -> Vec<u64> {
        samples
            .iter()
            .filter_map(|url| self.store.page(url).ok().flatten())
            .filter_map(|page| page.simhash)
            .collect()
    }
}

/// A fetched 2xx page that one of `rules` matches.
fn html_page(page: PageRecord, rules: &[(RuleSpec, CompiledRule)]) -> Option<Matched> {
    let ok =
        matches!(page.outcome, PageOutcome::Fetched { status } if (200..300).contains(&status));
    if !ok {
        return None;
    }
    rules
        .iter()
        .any(|(_, r)| r.is_match(&page.url, &page.host))
        .then_some(Matched {
            url: page.url,
            simhash: page.simhash,
        })
}

/// The good pages `rule` matches: every fetched 2xx page that is not the
/// trap's evidence (a sample, or a page the detector would count with them:
/// within `near_bits` of a sample's content). Whether matched pages resemble
/// one another or have links says nothing: a site's real pages may do both.
fn judge(
    matched: &[Matched],
    rule: &CompiledRule,
    host: &str,
    evidence: &[u64],
    samples: &HashSet<&str>,
    near_bits: u32,
) -> Verdict {
    let hits: Vec<&Matched> = matched
        .iter()
        .filter(|m| rule.is_match(&m.url, host) && !samples.contains(m.url.as_str()))
        .collect();
    // The trap's pages: near the evidence, or near such a page (its
    // fingerprints drift as its shared text becomes the host's template).
    // Distinct pages of a site are ~32 bits apart, far beyond either step.
    // A worklist: each fingerprint is compared with the hits once.
    let mut is_evidence = vec![false; hits.len()];
    let mut to_visit: Vec<u64> = evidence.to_vec();
    while let Some(e) = to_visit.pop() {
        for (i, m) in hits.iter().enumerate() {
            // Twice the bits: a step of the drift, not a new page.
            let near = m
                .simhash
                .is_some_and(|h| (e ^ h).count_ones() <= 2 * near_bits);
            if near && !is_evidence[i] {
                is_evidence[i] = true;
                to_visit.extend(m.simhash);
            }
        }
    }
    let good = hits
        .iter()
        .zip(&is_evidence)
        .filter(|(_, evidence)| !**evidence)
        .map(|(m, _)| m.url.clone())
        .collect();
    Verdict { good }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::control::PatternKind;

    fn rule(pattern: &str) -> CompiledRule {
        RuleSet::compile(&RuleSpec {
            kind: PatternKind::Regex,
            pattern: pattern.into(),
            host: Some("h".into()),
        })
        .unwrap()
    }

    fn page(path: &str, simhash: u64) -> Matched {
        Matched {
            url: format!("http://h{path}"),
            simhash: Some(simhash),
        }
    }

    #[test]
    fn distinct_pages_are_good_and_the_trap_pages_are_not() {
        let trap = 0xF0F0_F0F0_F0F0_F0F0u64;
        let matched = vec![
            page("/docs/gone-1.html", trap),
            page("/docs/gone-2.html", trap ^ 1),
            page("/docs/gone-3.html", trap ^ 2),
            page("/docs/page-1.html", 0x1234_5678_9ABC_DEF0),
            page("/docs/page-2.html", 0x0FED_CBA9_8765_4321),
        ];
        let samples = HashSet::from(["http://h/docs/gone-1.html"]);
        let directory = judge(
            &matched,
            &rule("^https?://h/docs/"),
            "h",
            &[trap],
            &samples,
            3,
        );
        assert_eq!(
            directory.good,
            ["http://h/docs/page-1.html", "http://h/docs/page-2.html"]
        );
        let narrow = judge(
            &matched,
            &rule(r"^https?://h/docs/gone\-\d+\.html$"),
            "h",
            &[trap],
            &samples,
            3,
        );
        assert!(narrow.good.is_empty());
    }

    #[test]
    fn pages_alike_linkless_or_not_html_are_good_unless_they_are_evidence() {
        // Similar pages of a site's template, a page without links and a
        // PDF: none is the trap's evidence, so each counts.
        let template = 0x0F0F_0F0F_0F0F_0F0Fu64;
        let matched = vec![
            page("/api/struct.A.html", template),
            page("/api/struct.B.html", template ^ 1),
            page("/api/empty.html", 0x1111_2222_3333_4444),
            Matched {
                url: "http://h/api/manual.pdf".into(),
                simhash: None,
            },
        ];
        let verdict = judge(
            &matched,
            &rule("^https?://h/api/"),
            "h",
            &[],
            &HashSet::new(),
            3,
        );
        assert_eq!(verdict.good.len(), 4, "{:?}", verdict.good);
    }

    #[test]
    fn every_fetched_2xx_page_a_rule_matches_is_read() {
        let rules = [(
            RuleSpec {
                kind: PatternKind::Regex,
                pattern: "/docs/".into(),
                host: Some("h".into()),
            },
            rule("/docs/"),
        )];
        let record = |status: u16, simhash: Option<u64>| {
            let mut r = PageRecord::without_fetch(
                "http://h/docs/a.html",
                "h",
                1,
                0,
                PageOutcome::Fetched { status },
            );
            r.simhash = simhash;
            r
        };
        assert!(html_page(record(200, Some(7)), &rules).is_some());
        assert!(html_page(record(200, None), &rules).is_some());
        assert!(html_page(record(404, Some(7)), &rules).is_none());
    }
}
