//! Trap alerts and their quarantine: each open alert's suggested rule parks
//! the URLs it matches until the operator accepts or dismisses it. Alerts
//! and their decisions are stored so they survive a restart.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::control::{HostKey, RuleSpec};
use super::rules::{CompiledRule, RuleSet};
use super::store::{Store, StoreError, Tree};
use super::telemetry::{AlertStatus, TrapAlert, TrapKind};
use super::traps::{Detection, TrapKey};

/// The crawl's trap alerts; the one owner of the `alerts` tree.
pub(crate) struct Alerts {
    alerts: BTreeMap<u64, TrapAlert>,
    /// Compiled suggested rules of open alerts: newly found URLs they match are parked.
    quarantine: HashMap<u64, CompiledRule>,
    /// Which alert each trap belongs to: the alert's own key, and those of
    /// detections its rule covered (one trap seen by two detectors).
    by_key: HashMap<TrapKey, u64>,
    /// Alerts whose evidence changed since they were last stored.
    changed: BTreeSet<u64>,
    next_id: u64,
    store: Store,
}

fn key_of(alert: &TrapAlert) -> TrapKey {
    (
        alert.host.clone(),
        alert.kind,
        alert.suggested_rule.pattern.clone(),
    )
}

impl Alerts {
    /// The stored alerts; open ones quarantine again.
    pub(crate) fn load(store: &Store) -> Result<Self, StoreError> {
        let mut alerts = BTreeMap::new();
        let mut quarantine = HashMap::new();
        let mut next_id = 1;
        let mut by_key = HashMap::new();
        for (_, alert) in store.scan::<TrapAlert>(Tree::Alerts)? {
            by_key.insert(key_of(&alert), alert.id);
            next_id = next_id.max(alert.id + 1);
            if alert.status == AlertStatus::Open {
                if let Ok(rule) = RuleSet::compile(&alert.suggested_rule) {
                    quarantine.insert(alert.id, rule);
                }
            }
            alerts.insert(alert.id, alert);
        }
        Ok(Alerts {
            alerts,
            quarantine,
            by_key,
            changed: BTreeSet::new(),
            next_id,
            store: store.clone(),
        })
    }

    /// Every alert's host, kind and rule (so a restart does not raise them again).
    pub(crate) fn raised(&self) -> Vec<(HostKey, TrapKind, RuleSpec)> {
        self.alerts
            .values()
            .map(|a| (a.host.clone(), a.kind, a.suggested_rule.clone()))
            .collect()
    }

    /// The number the next alert gets.
    pub(crate) fn next_id(&self) -> u64 {
        self.next_id
    }

    /// Never reuses numbers below `next_id`.
    pub(crate) fn reserve_ids_below(&mut self, next_id: u64) {
        self.next_id = self.next_id.max(next_id);
    }

    /// A new open alert for a detection, numbered, with its compiled rule;
    /// not stored until `insert`. Err if the suggested rule does not compile.
    pub(crate) fn draft(
        &mut self,
        d: Detection,
        now_unix: u64,
    ) -> Result<(TrapAlert, CompiledRule), String> {
        let id = self.next_id;
        self.next_id += 1;
        let compiled = RuleSet::compile(&d.rule)?;
        let alert = TrapAlert {
            id,
            host: d.host,
            kind: d.kind,
            evidence_count: d.evidence_count,
            last_seen: now_unix,
            samples: d.samples,
            suggested_rule: d.rule,
            matching_queued: 0,
            impact: None,
            status: AlertStatus::Open,
        };
        Ok((alert, compiled))
    }

    /// Stores and keeps an alert; with `quarantine`, newly found URLs its
    /// rule matches are parked from now on.
    pub(crate) fn insert(
        &mut self,
        alert: TrapAlert,
        quarantine: Option<CompiledRule>,
    ) -> Result<(), StoreError> {
        self.store
            .put(Tree::Alerts, &alert.id.to_be_bytes(), &alert)?;
        if let Some(rule) = quarantine {
            self.quarantine.insert(alert.id, rule);
        }
        self.by_key.insert(key_of(&alert), alert.id);
        self.alerts.insert(alert.id, alert);
        Ok(())
    }

    /// The alert a new detection belongs to, if it is a trap already alerted
    /// on: an alert on the host (not dismissed) whose rule matches all of the
    /// detection's evidence. The detection's key is then that alert's too.
    pub(crate) fn covering(&mut self, d: &Detection) -> Option<u64> {
        if d.samples.is_empty() {
            return None;
        }
        let id = self
            .alerts
            .values()
            .filter(|a| a.host == d.host && a.status != AlertStatus::Dismissed)
            .find(|a| {
                RuleSet::compile(&a.suggested_rule)
                    .is_ok_and(|rule| d.samples.iter().all(|s| rule.is_match(s, &d.host)))
            })?
            .id;
        self.by_key
            .insert((d.host.clone(), d.kind, d.rule.pattern.clone()), id);
        Some(id)
    }

    /// A trap seen again: its alert's evidence grows to `evidence` (detectors
    /// count cumulatively) and its last sighting moves. Stored by `save_changed`.
    pub(crate) fn seen_again(&mut self, key: &TrapKey, evidence: u64, now_unix: u64) {
        let Some(&id) = self.by_key.get(key) else {
            return;
        };
        if let Some(alert) = self.alerts.get_mut(&id) {
            alert.evidence_count = alert.evidence_count.max(evidence);
            alert.last_seen = now_unix;
            self.changed.insert(id);
        }
    }

    /// Stores the alerts whose evidence changed (at checkpoints: sightings
    /// are frequent, and losing the latest count to a crash loses nothing).
    pub(crate) fn save_changed(&mut self) -> Result<(), StoreError> {
        while let Some(id) = self.changed.pop_first() {
            if let Some(alert) = self.alerts.get(&id) {
                if let Err(e) = self.store.put(Tree::Alerts, &id.to_be_bytes(), alert) {
                    self.changed.insert(id);
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// A probe showed the alert's pages are a soft 404: relabelled, with
    /// the probe's URL first in its evidence.
    pub(crate) fn confirm_soft_404(&mut self, id: u64, probe_url: &str) -> Result<(), StoreError> {
        let Some(alert) = self.alerts.get_mut(&id) else {
            return Ok(());
        };
        alert.kind = TrapKind::SoftNotFound;
        alert.samples.retain(|s| s != probe_url);
        alert.samples.insert(0, probe_url.to_string());
        self.by_key.insert(key_of(alert), id);
        self.store.put(Tree::Alerts, &id.to_be_bytes(), &*alert)
    }

    /// An alert by number.
    pub(crate) fn get(&self, id: u64) -> Option<&TrapAlert> {
        self.alerts.get(&id)
    }

    /// Records the operator's decision; the alert stops quarantining.
    pub(crate) fn set_status(&mut self, id: u64, status: AlertStatus) -> Result<(), StoreError> {
        self.quarantine.remove(&id);
        let Some(alert) = self.alerts.get_mut(&id) else {
            return Ok(());
        };
        alert.status = status;
        self.store.put(Tree::Alerts, &id.to_be_bytes(), &*alert)
    }

    /// The open alert whose rule covers this URL of `host`, if any.
    pub(crate) fn quarantining(&self, url: &str, host: &str) -> Option<u64> {
        self.quarantine
            .iter()
            .find(|(id, rule)| {
                self.alerts.get(id).is_some_and(|a| a.host == host) && rule.is_match(url, host)
            })
            .map(|(id, _)| *id)
    }

    /// Alerts quarantining URLs now (changes when one is raised or decided).
    pub(crate) fn quarantining_count(&self) -> usize {
        self.quarantine.len()
    }

    /// Alerts waiting for the operator.
    pub(crate) fn open_count(&self) -> usize {
        self.alerts
            .values()
            .filter(|a| a.status == AlertStatus::Open)
            .count()
    }

    /// Every alert, oldest first, as front ends show them.
    pub(crate) fn views(&self) -> Vec<TrapAlert> {
        self.alerts.values().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::control::PatternKind;

    #[test]
    fn kinds_are_labelled_for_what_was_detected_and_old_names_still_load() {
        for (stored, label) in [
            ("Counter", "calendar"),
            ("DepthGrowth", "deep path"),
            ("RepeatedSegments", "repeating path"),
            ("SessionId", "session ids"),
            ("QueryExplosion", "parameter explosion"),
            ("NearDuplicates", "near duplicates"),
            ("HostBudget", "host budget"),
        ] {
            let kind: TrapKind = serde_json::from_str(&format!("\"{stored}\"")).unwrap();
            assert_eq!(kind.label(), label);
            assert_eq!(
                serde_json::to_string(&kind).unwrap(),
                format!("\"{stored}\"")
            );
        }
    }

    fn detection(host: &str, pattern: &str) -> Detection {
        Detection {
            host: host.into(),
            kind: TrapKind::Counter,
            evidence_count: 12,
            samples: vec![format!("http://{host}/cal/2024/01")],
            rule: RuleSpec {
                kind: PatternKind::Regex,
                pattern: pattern.into(),
                host: Some(host.into()),
            },
        }
    }

    #[test]
    fn open_alerts_quarantine_their_host_until_decided_and_after_a_reopen() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Store::open(dir.path(), 1 << 20).expect("store");
        let mut alerts = Alerts::load(&store).expect("load");
        let (alert, rule) = alerts
            .draft(detection("cal.test", "/cal/"), 0)
            .expect("draft");
        let id = alert.id;
        alerts.insert(alert, Some(rule)).expect("insert");
        assert_eq!(
            alerts.quarantining("http://cal.test/cal/1999", "cal.test"),
            Some(id)
        );
        assert_eq!(
            alerts.quarantining("http://other.test/cal/1999", "other.test"),
            None,
            "an alert quarantines its own host only"
        );
        assert!(alerts.draft(detection("x.test", "("), 0).is_err());

        let reopened = Alerts::load(&store).expect("reload");
        assert_eq!(reopened.open_count(), 1);
        assert_eq!(
            reopened.quarantining("http://cal.test/cal/1", "cal.test"),
            Some(id)
        );
        assert!(reopened.next_id() > id, "numbers are not reused");

        alerts
            .set_status(id, AlertStatus::Dismissed)
            .expect("decided");
        assert_eq!(
            alerts.quarantining("http://cal.test/cal/1", "cal.test"),
            None
        );
        let reopened = Alerts::load(&store).expect("reload");
        assert_eq!(reopened.open_count(), 0);
        assert_eq!(reopened.quarantining_count(), 0);
    }

    #[test]
    fn a_trap_seen_again_or_by_another_detector_stays_one_alert() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Store::open(dir.path(), 1 << 20).expect("store");
        let mut alerts = Alerts::load(&store).expect("load");
        let first = detection("cal.test", "^http://cal\\.test/cal/");
        let (alert, rule) = alerts.draft(first.clone(), 100).expect("draft");
        let id = alert.id;
        alerts.insert(alert, Some(rule)).expect("insert");

        let key = (first.host.clone(), first.kind, first.rule.pattern.clone());
        alerts.seen_again(&key, 40, 160);
        alerts.seen_again(&key, 30, 170);
        let seen = alerts.get(id).expect("kept");
        assert_eq!((seen.evidence_count, seen.last_seen), (40, 170));

        // The same calendar, found by the depth detector with a rule of its own.
        let mut deeper = detection("cal.test", "^http://cal\\.test/cal/2024/");
        deeper.kind = TrapKind::DepthGrowth;
        deeper.evidence_count = 55;
        assert_eq!(alerts.covering(&deeper), Some(id));
        let deeper_key = (
            deeper.host.clone(),
            deeper.kind,
            deeper.rule.pattern.clone(),
        );
        alerts.seen_again(&deeper_key, 55, 180);
        assert_eq!(alerts.get(id).map(|a| a.evidence_count), Some(55));
        assert_eq!(alerts.views().len(), 1, "one trap, one alert");

        let elsewhere = detection("other.test", "^http://other\\.test/cal/");
        assert_eq!(
            alerts.covering(&elsewhere),
            None,
            "another host is another trap"
        );

        alerts.save_changed().expect("saved");
        let reopened = Alerts::load(&store).expect("reload");
        let stored = reopened.get(id).expect("stored");
        assert_eq!((stored.evidence_count, stored.last_seen), (55, 180));
    }
}
