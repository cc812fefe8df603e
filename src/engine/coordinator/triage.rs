//! Trap triage as the crawl loop applies it: an alert quarantines (parks) the
//! URLs its rule matches; accepting turns the rule into an operator rule and
//! records the parked URLs as blocked; dismissing returns them to the frontier.

use super::journal::Then;
use super::results::record_for;
use super::sweep::Work;
use super::Coordinator;
use crate::engine::config::TrapPolicy;
use crate::engine::control::{CommandId, RuleSpec};
use crate::engine::frontier::{AlertDecision, SharedAlert};
use crate::engine::rules::describe;
use crate::engine::rules::{CompiledRule, RuleSet};
use crate::engine::store::PageOutcome;
use crate::engine::telemetry::{AlertStatus, EngineEvent, Level, TrapAlert};
use crate::engine::traps::Detection;
use tokio::time::Instant;

/// How a new rule blocks the queued URLs it matches.
pub(super) enum Blocking {
    /// At once: this many.
    Done(u64),
    /// In the steps of a sweep.
    Sweep(Work),
}

impl Coordinator {
    /// Adds a rule, stores it and blocks the queued URLs it matches: those
    /// of its host at once, those of every host (a rule with no host) in
    /// steps of a sweep. Returns the rule's id and how many it blocked, or
    /// the sweep's work.
    pub(super) fn add_rule(
        &mut self,
        spec: RuleSpec,
        origin: String,
    ) -> Result<(u64, Blocking), String> {
        let (id, compiled) = self.rules.add(spec.clone(), origin)?;
        self.block_queued(id, &spec, compiled)
    }

    /// Blocks the queued URLs rule `id` matches (see [`Coordinator::add_rule`]).
    fn block_queued(
        &mut self,
        id: u64,
        spec: &RuleSpec,
        compiled: CompiledRule,
    ) -> Result<(u64, Blocking), String> {
        let outcome = PageOutcome::Blocked {
            rule_id: id,
            rule: describe(spec),
        };
        let Some(host) = spec.host.as_deref() else {
            let work = Work::Block {
                rule_id: id,
                rule: compiled,
                outcome,
                from: None,
            };
            return Ok((id, Blocking::Sweep(work)));
        };
        let removed = self
            .frontier
            .remove_matching(Some(host), &|e| compiled.is_match(&e.url, &e.host), &|e| {
                record_for(e, outcome.clone())
            })
            .map_err(|e| format!("rule stored, but blocking queued URLs failed: {e}"))?;
        self.stats.count().blocked_by_rules += removed;
        self.rules.add_hits(id, removed);
        Ok((id, Blocking::Done(removed)))
    }

    /// Opens an alert for a detection; by policy it parks the URLs its rule
    /// matches, only notes it, or accepts it at once. The rule is first
    /// narrowed so it spares the host's fetched good pages; one that cannot
    /// be is never accepted automatically.
    pub(super) fn raise_alert(&mut self, mut d: Detection) {
        let now = unix_now();
        if let Some(id) = self.alerts.covering(&d) {
            // One trap, one alert: another detector's view of it is more evidence.
            let key = (d.host.clone(), d.kind, d.rule.pattern.clone());
            self.alerts.seen_again(&key, d.evidence_count, now);
            tracing::info!("{} on {} belongs to alert #{id}", d.kind.label(), d.host);
            return;
        }
        let signature = signature_of(&d);
        let mut impact = self.narrow_for_collateral(&mut d);
        let policy = self.cfg.traps.policy;
        let (mut alert, compiled) = match self.alerts.draft(d, now) {
            Ok(drafted) => drafted,
            Err(e) => {
                tracing::error!("trap detector suggested an invalid rule: {e}");
                return;
            }
        };
        match self.frontier.share_alert(&signature, &alert) {
            Ok(SharedAlert::New(id)) => {
                self.alerts.reserve_ids_below(id + 1);
                alert.id = id;
            }
            Ok(SharedAlert::Joined(shared)) => return self.join_alert(shared, Some(alert)),
            Err(e) => {
                // A number made up here could clash with another worker's:
                // the crawl pauses for the outage and this detection is dropped.
                self.storage_failed("numbering a trap alert", e);
                return;
            }
        }
        let id = alert.id;
        let quarantine = self.quarantine_for(&mut alert, compiled.clone(), policy);
        self.count_blocked(&compiled, &mut impact);
        let collateral = impact.good_fetched > 0;
        self.outbox.log(
            Level::Warn,
            format!(
                "trap alert #{id} on {}: {} ({} URLs; suggested rule {}); {}",
                alert.host,
                alert.kind.label(),
                alert.evidence_count,
                alert.suggested_rule.pattern,
                impact.summary()
            ),
        );
        alert.impact = Some(impact);
        self.outbox.emit(EngineEvent::Alert(alert.clone()));
        self.probe_host(&alert);
        if let Err(e) = self.alerts.insert(alert, quarantine) {
            self.storage_failed(&format!("storing alert #{id}"), e);
        }
        if policy == TrapPolicy::Auto {
            self.auto_accept(id, collateral);
        }
    }

    /// By policy, parks the URLs the new alert's rule matches (and returns
    /// the rule, to park those found later) or only notes the alert.
    pub(super) fn quarantine_for(
        &mut self,
        alert: &mut TrapAlert,
        compiled: CompiledRule,
        policy: TrapPolicy,
    ) -> Option<CompiledRule> {
        if policy == TrapPolicy::AlertOnly {
            alert.status = AlertStatus::Noted;
            return None;
        }
        let id = alert.id;
        let parked = self
            .frontier
            .park(id, &alert.host, &|e| compiled.is_match(&e.url, &e.host));
        alert.matching_queued = parked.unwrap_or_else(|e| {
            self.storage_failed(&format!("parking URLs for alert #{id}"), e);
            0
        });
        Some(compiled)
    }

    /// Policy `auto`: accepts the alert, unless its rule has collateral.
    fn auto_accept(&mut self, id: u64, collateral: bool) {
        if collateral {
            self.outbox.log(
                Level::Warn,
                format!(
                    "alert #{id} not applied automatically: its rule matches fetched good pages"
                ),
            );
        } else if let Err(e) = self.accept_alert(id, None, "auto", None) {
            self.outbox
                .log(Level::Error, format!("auto-accepting alert #{id}: {e}"));
        }
    }

    /// Applies the sightings of already alerted traps since the last call.
    pub(super) fn note_repeated_traps(&mut self) {
        let now = unix_now();
        for (key, evidence) in self.traps.take_repeats() {
            self.alerts.seen_again(&key, evidence, now);
        }
    }

    /// Measures again the impact of an alert whose evidence grew (one per
    /// call, each alert at most once per `alerts::IMPACT_EVERY`), so the
    /// operator does not decide on numbers from when it was raised.
    pub(super) fn refresh_an_impact(&mut self, now: Instant) {
        let Some(alert) = self.alerts.impact_due(now) else {
            return;
        };
        let impact = self.measure_impact(&alert);
        self.alerts.set_impact(alert.id, impact);
    }

    /// Accepts alert `id`: its rule (or `edited`) becomes an operator rule,
    /// and its parked URLs are recorded as blocked by it, in the steps of a
    /// sweep answered to `answer_to` (none: logged).
    pub(super) fn accept_alert(
        &mut self,
        id: u64,
        edited: Option<RuleSpec>,
        origin: &str,
        answer_to: Option<CommandId>,
    ) -> Result<(), String> {
        let alert = self.undecided(id, &[AlertStatus::Open, AlertStatus::Noted])?;
        let spec = edited.unwrap_or(alert.suggested_rule);
        let origin = format!("{origin} (alert #{id})");
        // Accepted already by a run that stopped before its sweep was recorded.
        let earlier = self
            .rules
            .views()
            .into_iter()
            .find(|r| r.spec == spec && r.origin.ends_with(&format!("(alert #{id})")));
        let (rule_id, blocking) = match earlier {
            Some(rule) => {
                let compiled = RuleSet::compile(&spec)?;
                self.block_queued(rule.id, &spec, compiled)?
            }
            None => self.add_rule(spec.clone(), origin)?,
        };
        let mut work = Vec::new();
        let mut already = 0;
        match blocking {
            Blocking::Done(n) => already = n,
            Blocking::Sweep(block) => work.push(block),
        }
        let outcome = PageOutcome::Blocked {
            rule_id,
            rule: describe(&spec),
        };
        work.push(Work::Release {
            alert_id: id,
            blocked: Some((rule_id, outcome)),
        });
        let then = Then::Accepted {
            alert_id: id,
            rule_id,
        };
        self.start_sweep(answer_to, work, then, already);
        Ok(())
    }

    /// Dismisses alert `id`: its parked URLs go back to the frontier in the
    /// steps of a sweep answered to `answer_to`.
    pub(super) fn dismiss_alert(
        &mut self,
        id: u64,
        answer_to: Option<CommandId>,
    ) -> Result<(), String> {
        self.undecided(id, &[AlertStatus::Open])?;
        let work = vec![Work::Release {
            alert_id: id,
            blocked: None,
        }];
        self.start_sweep(answer_to, work, Then::Dismissed { alert_id: id }, 0);
        Ok(())
    }

    /// Alert `id`, if its status is one of `open` and no sweep is deciding it.
    fn undecided(&self, id: u64, open: &[AlertStatus]) -> Result<TrapAlert, String> {
        let alert = self
            .alerts
            .get(id)
            .cloned()
            .ok_or_else(|| format!("no alert #{id}"))?;
        if self.sweeps.decides(id) {
            return Err(format!("alert #{id} is being decided already"));
        }
        if !open.contains(&alert.status) {
            return Err(format!("alert #{id} is already {}", alert.status.label()));
        }
        Ok(alert)
    }

    /// Records the decision on alert `id` here and for every worker of a
    /// shared crawl (`rule`: the rule an accepted alert became).
    pub(super) fn set_alert_status(
        &mut self,
        id: u64,
        status: AlertStatus,
        rule: Option<RuleSpec>,
    ) {
        if let Err(e) = self.alerts.set_status(id, status) {
            self.storage_failed(&format!("storing the decision on alert #{id}"), e);
        }
        let decision = AlertDecision { id, status, rule };
        if let Err(e) = self.frontier.decide_alert(&decision) {
            self.storage_failed(&format!("sharing the decision on alert #{id}"), e);
        }
        self.outbox.emit(EngineEvent::AlertChanged {
            alert_id: id,
            status,
        });
    }
}

/// What makes two detections one trap across workers: host, detector and
/// the detector's own pattern (before it is narrowed against a worker's pages).
fn signature_of(d: &Detection) -> String {
    format!("{} {:?} {}", d.host, d.kind, d.rule.pattern)
}

/// Seconds since the Unix epoch, for an alert's last sighting.
fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
#[path = "triage_tests.rs"]
mod tests;
