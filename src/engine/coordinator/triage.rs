//! Trap triage as the crawl loop applies it: an alert quarantines (parks) the
//! URLs its rule matches; accepting turns the rule into an operator rule and
//! records the parked URLs as blocked; dismissing returns them to the frontier.

use super::results::record_for;
use super::Coordinator;
use crate::engine::config::TrapPolicy;
use crate::engine::control::RuleSpec;
use crate::engine::rules::describe;
use crate::engine::rules::CompiledRule;
use crate::engine::store::PageOutcome;
use crate::engine::telemetry::{AlertStatus, EngineEvent, Level, TrapAlert};
use crate::engine::traps::Detection;

impl Coordinator {
    /// Adds a rule, stores it and blocks the queued URLs it matches; returns
    /// the rule's id and how many URLs it blocked.
    pub(super) fn add_rule(
        &mut self,
        spec: RuleSpec,
        origin: String,
    ) -> Result<(u64, u64), String> {
        let (id, compiled) = self.rules.add(spec.clone(), origin)?;
        let outcome = PageOutcome::Blocked {
            rule_id: id,
            rule: describe(&spec),
        };
        let removed = self
            .frontier
            .remove_matching(
                spec.host.as_deref(),
                &|e| compiled.is_match(&e.url, &e.host),
                &|e| record_for(e, outcome.clone()),
            )
            .map_err(|e| format!("rule stored, but blocking queued URLs failed: {e}"))?;
        self.stats.count().blocked_by_rules += removed;
        self.rules.add_hits(id, removed);
        Ok((id, removed))
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
        let mut impact = self.narrow_for_collateral(&mut d);
        let policy = self.cfg.traps.policy;
        let (mut alert, compiled) = match self.alerts.draft(d, now) {
            Ok(drafted) => drafted,
            Err(e) => {
                tracing::error!("trap detector suggested an invalid rule: {e}");
                return;
            }
        };
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
    fn quarantine_for(
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
        } else if let Err(e) = self.accept_alert(id, None, "auto") {
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

    pub(super) fn accept_alert(
        &mut self,
        id: u64,
        edited: Option<RuleSpec>,
        origin: &str,
    ) -> Result<String, String> {
        let alert = self
            .alerts
            .get(id)
            .cloned()
            .ok_or_else(|| format!("no alert #{id}"))?;
        if alert.status != AlertStatus::Open && alert.status != AlertStatus::Noted {
            return Err(format!("alert #{id} is already {}", alert.status.label()));
        }
        let spec = edited.unwrap_or(alert.suggested_rule);
        let origin = format!("{origin} (alert #{id})");
        let (rule_id, removed) = self.add_rule(spec.clone(), origin)?;
        let outcome = PageOutcome::Blocked {
            rule_id,
            rule: describe(&spec),
        };
        let parked = self
            .frontier
            .drop_parked(id, &|e| record_for(e, outcome.clone()))
            .map_err(|e| format!("rule added, but recording parked URLs failed: {e}"))?;
        self.stats.count().blocked_by_rules += parked;
        self.rules.add_hits(rule_id, parked);
        self.set_alert_status(id, AlertStatus::Accepted);
        Ok(format!(
            "alert #{id} accepted: rule #{rule_id} added, {} URL(s) blocked",
            parked + removed
        ))
    }

    pub(super) fn dismiss_alert(&mut self, id: u64) -> Result<String, String> {
        let alert = self
            .alerts
            .get(id)
            .cloned()
            .ok_or_else(|| format!("no alert #{id}"))?;
        if alert.status != AlertStatus::Open {
            return Err(format!("alert #{id} is already {}", alert.status.label()));
        }
        let back = self
            .frontier
            .unpark(id)
            .map_err(|e| format!("returning parked URLs failed: {e}"))?;
        self.traps.suppress(&alert.host, &alert.suggested_rule);
        self.set_alert_status(id, AlertStatus::Dismissed);
        Ok(format!(
            "alert #{id} dismissed: {back} URL(s) back in the frontier; this pattern will not alert again"
        ))
    }

    fn set_alert_status(&mut self, id: u64, status: AlertStatus) {
        if let Err(e) = self.alerts.set_status(id, status) {
            self.storage_failed(&format!("storing the decision on alert #{id}"), e);
        }
        self.outbox.emit(EngineEvent::AlertChanged {
            alert_id: id,
            status,
        });
    }
}

/// Seconds since the Unix epoch, for an alert's last sighting.
fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
