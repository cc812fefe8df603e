//! Trap alerts as the crawl's, not a worker's: one alert per trap signature
//! (`alert-traps`), kept in `alerts` as its raiser stored it, and one
//! decision per alert (`alert-decisions`), which every worker applies. A
//! worker looks for news when `alert-changes` moved, at most every
//! [`ALERT_POLL`].

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use super::meta::alert_decisions_key;
use super::outage::Write;
use super::RedisFrontier;
use crate::engine::frontier::{AlertDecision, AlertNews, SharedAlert};
use crate::engine::store::StoreError;
use crate::engine::telemetry::TrapAlert;

/// How often a worker looks whether alerts were raised or decided.
const ALERT_POLL: Duration = Duration::from_millis(500);
/// Alerts read per look; more wait for the next.
const ALERTS_PER_POLL: usize = 64;

/// What this worker has seen of the crawl's alerts.
#[derive(Debug, Default)]
pub(super) struct AlertsSeen {
    /// `alert-changes` when everything up to it was read.
    changes: Option<u64>,
    /// Alerts this worker raised, joined or was told of.
    known: HashSet<u64>,
    /// Decisions as last read (JSON), so only new ones are news.
    decisions: HashMap<u64, String>,
    looks: super::meta::Looks,
}

impl RedisFrontier {
    /// See [`crate::engine::frontier::FrontierStore::share_alert`].
    pub(super) fn raise_shared_alert(
        &mut self,
        signature: &str,
        alert: &TrapAlert,
    ) -> Result<SharedAlert, StoreError> {
        let json = encode(alert, "trap alert")?;
        let mut inv = self.scripts.raise_alert.prepare_invoke();
        inv.arg(&self.prefix)
            .arg(&self.worker)
            .arg(alert.id)
            .arg(signature)
            .arg(json);
        let out = self.link.run("numbering a trap alert", &inv)?;
        let text = |i: usize| out.get(i).map(|v| String::from_utf8_lossy(v).into_owned());
        let number = text(1).and_then(|n| n.parse::<u64>().ok());
        let shared = match (text(0).as_deref(), number) {
            (Some("new"), Some(id)) => SharedAlert::New(id),
            (Some("joined"), Some(id)) => {
                SharedAlert::Joined(decode_alert(id, &text(2).unwrap_or_default())?)
            }
            _ => return Err(malformed("numbering a trap alert")),
        };
        let (SharedAlert::New(id) | SharedAlert::Joined(TrapAlert { id, .. })) = &shared;
        self.alerts_seen.known.insert(*id);
        Ok(shared)
    }

    /// See [`crate::engine::frontier::FrontierStore::decide_alert`]; held
    /// while Redis is out of reach, like a lease's end.
    pub(super) fn share_decision(&mut self, decision: &AlertDecision) -> Result<(), StoreError> {
        let json = encode(decision, "alert decision")?;
        self.alerts_seen
            .decisions
            .entry(decision.id)
            .or_insert(json.clone());
        self.write(Write::DecideAlert {
            id: decision.id,
            decision: json,
        })
        .map(drop)
    }

    /// See [`crate::engine::frontier::FrontierStore::alert_news`].
    pub(super) fn read_alert_news(&mut self) -> Result<AlertNews, StoreError> {
        let reachable = self.link.down().is_none();
        let seen = &mut self.alerts_seen;
        if !seen.looks.take(ALERT_POLL, reachable) {
            return Ok(AlertNews::default());
        }
        let (p, last) = (self.prefix.clone(), seen.changes);
        let changes: Option<u64> = self.link.query("reading the crawl's alerts", |c| {
            redis::cmd("GET").arg(format!("{p}alert-changes")).query(c)
        })?;
        if changes == last {
            return Ok(AlertNews::default());
        }
        let (ids, decisions): (Vec<u64>, HashMap<u64, String>) =
            self.link.query("reading the crawl's alerts", |c| {
                redis::pipe()
                    .cmd("HKEYS")
                    .arg(format!("{p}alerts"))
                    .cmd("HGETALL")
                    .arg(alert_decisions_key(&p))
                    .query(c)
            })?;
        let mut news = AlertNews {
            raised: self.read_new_alerts(ids, changes)?,
            decided: Vec::new(),
        };
        for (id, json) in decisions {
            if self.alerts_seen.decisions.get(&id) == Some(&json) {
                continue;
            }
            match serde_json::from_str::<AlertDecision>(&json) {
                Ok(decision) => news.decided.push(AlertDecision { id, ..decision }),
                Err(e) => tracing::warn!("unreadable decision on alert #{id} in Redis: {e}"),
            }
            self.alerts_seen.decisions.insert(id, json);
        }
        news.decided.sort_by_key(|d| d.id);
        Ok(news)
    }

    /// The next `alert_news` looks at once.
    #[cfg(test)]
    pub(super) fn look_at_alerts_now(&mut self) {
        self.alerts_seen.looks.forget();
    }

    /// The alerts of `ids` this worker does not know, a bounded number at a
    /// time; once none is left, `changes` is read up to.
    fn read_new_alerts(
        &mut self,
        ids: Vec<u64>,
        changes: Option<u64>,
    ) -> Result<Vec<TrapAlert>, StoreError> {
        let mut new: Vec<u64> = ids
            .into_iter()
            .filter(|id| !self.alerts_seen.known.contains(id))
            .collect();
        new.sort_unstable();
        if new.len() <= ALERTS_PER_POLL {
            self.alerts_seen.changes = changes;
        }
        new.truncate(ALERTS_PER_POLL);
        if new.is_empty() {
            return Ok(Vec::new());
        }
        let key = format!("{}alerts", self.prefix);
        let jsons: Vec<Option<String>> = self.link.query("reading the crawl's alerts", |c| {
            redis::cmd("HMGET").arg(&key).arg(&new).query(c)
        })?;
        let mut raised = Vec::new();
        for (id, json) in new.into_iter().zip(jsons) {
            self.alerts_seen.known.insert(id);
            match decode_alert(id, json.as_deref().unwrap_or_default()) {
                Ok(alert) => raised.push(alert),
                Err(e) => tracing::warn!("{e}"),
            }
        }
        Ok(raised)
    }
}

fn encode<T: serde::Serialize>(value: &T, what: &'static str) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|source| StoreError::Encode { what, source })
}

/// An alert as `alerts` keeps it, under its crawl-wide number.
fn decode_alert(id: u64, json: &str) -> Result<TrapAlert, StoreError> {
    let alert: TrapAlert = serde_json::from_str(json).map_err(|e| StoreError::Remote {
        op: "reading a trap alert",
        message: format!("alert #{id} is unreadable: {e}"),
    })?;
    Ok(TrapAlert { id, ..alert })
}

fn malformed(op: &'static str) -> StoreError {
    StoreError::Remote {
        op,
        message: "the script answered no number".into(),
    }
}
