//! A shared crawl's trap alerts are the crawl's: an alert another worker
//! raised is joined here (same number and rule, this worker's own evidence)
//! and quarantines this worker's URLs too; a decision made on any worker is
//! applied here as well. A local frontier has no news, so a single process
//! never comes here.

use super::Coordinator;
use crate::engine::frontier::AlertDecision;
use crate::engine::rules::RuleSet;
use crate::engine::telemetry::{AlertStatus, EngineEvent, Level, TrapAlert};

impl Coordinator {
    /// Joins the alerts other workers raised and applies their decisions.
    pub(super) fn follow_shared_alerts(&mut self) {
        let news = match self.frontier.alert_news() {
            Ok(news) => news,
            Err(e) => {
                self.storage_failed("reading the crawl's alerts", e);
                return;
            }
        };
        for alert in news.raised {
            self.join_alert(alert, None);
        }
        for decision in news.decided {
            self.apply_shared_decision(decision);
        }
    }

    /// Takes the crawl's alert `shared` on as this worker's: its number, rule
    /// and impact, with this worker's own evidence (`own`, the detection that
    /// found the same trap here; none yet when only told of it). By this
    /// worker's policy it parks the URLs its rule matches.
    pub(super) fn join_alert(&mut self, shared: TrapAlert, own: Option<TrapAlert>) {
        let id = shared.id;
        self.alerts.reserve_ids_below(id + 1);
        if self.alerts.get(id).is_some() {
            return;
        }
        self.traps
            .mark_raised(&shared.host, shared.kind, &shared.suggested_rule);
        let compiled = match RuleSet::compile(&shared.suggested_rule) {
            Ok(compiled) => compiled,
            Err(e) => {
                tracing::error!("alert #{id} of another worker has an invalid rule: {e}");
                return;
            }
        };
        let found_here = own.is_some();
        let (evidence_count, samples) = match own {
            Some(mine) => (mine.evidence_count, mine.samples),
            None => (0, shared.samples.clone()),
        };
        let mut alert = TrapAlert {
            evidence_count,
            samples,
            matching_queued: 0,
            status: AlertStatus::Open,
            ..shared
        };
        let quarantine = self.quarantine_for(&mut alert, compiled, self.cfg.traps.policy);
        self.outbox.log(
            Level::Info,
            format!(
                "trap alert #{id} on {}: {} {}; {} queued URL(s) parked here",
                alert.host,
                alert.kind.label(),
                if found_here {
                    "found here too, joined"
                } else {
                    "raised by another worker"
                },
                alert.matching_queued
            ),
        );
        self.outbox.emit(EngineEvent::Alert(alert.clone()));
        if let Err(e) = self.alerts.insert(alert, quarantine) {
            self.storage_failed(&format!("storing alert #{id}"), e);
        }
    }

    /// Decides here an alert another worker decided, unless decided here
    /// already.
    fn apply_shared_decision(&mut self, decision: AlertDecision) {
        let id = decision.id;
        let undecided = self
            .alerts
            .get(id)
            .is_some_and(|a| matches!(a.status, AlertStatus::Open | AlertStatus::Noted));
        if !undecided || self.sweeps.decides(id) {
            return;
        }
        let applied = match decision.status {
            AlertStatus::Accepted => self.accept_alert(id, decision.rule, "cluster", None),
            AlertStatus::Dismissed => self.dismiss_alert(id, None),
            AlertStatus::Open | AlertStatus::Noted => return,
        };
        if let Err(e) = applied {
            self.outbox.log(
                Level::Warn,
                format!("applying the crawl's decision on alert #{id}: {e}"),
            );
        }
    }
}
