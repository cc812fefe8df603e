//! Operator commands and the trap-alert workflow (quarantine, accept, dismiss).
//! Every change an operator makes is stored so it survives a restart.

use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use super::results::record_for;
use super::Coordinator;
use crate::engine::config::{parse_seed, TrapPolicy};
use crate::engine::control::{Command, PatternKind, RuleSpec, Target};
use crate::engine::frontier::Hold;
use crate::engine::rules::RuleSet;
use crate::engine::store::{PageOutcome, Tree};
use crate::engine::telemetry::{AlertStatus, CrawlState, EngineEvent, Level, TrapAlert};
use crate::engine::traps::Detection;
use crate::engine::url_norm;

/// A rule as stored in the `rules` tree.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RuleRecord {
    pub id: u64,
    pub spec: RuleSpec,
    pub origin: String,
    #[serde(default)]
    pub hits: u64,
}

/// Crawl-wide operator settings, stored under `meta/settings`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Settings {
    pub paused: bool,
    pub global_delay: std::time::Duration,
    pub global_concurrency: usize,
    pub global_rate: Option<f64>,
    pub next_rule_id: u64,
    pub next_alert_id: u64,
}

fn describe(spec: &RuleSpec) -> String {
    let kind = match spec.kind {
        PatternKind::Regex => "regex",
        PatternKind::Glob => "glob",
    };
    match &spec.host {
        Some(h) => format!("{kind} {} on {h}", spec.pattern),
        None => format!("{kind} {}", spec.pattern),
    }
}

pub fn handle(s: &mut Coordinator, command: Command) -> Result<String, String> {
    let now = Instant::now();
    let result = match command {
        Command::Pause(Target::Global) => {
            s.paused = true;
            s.set_state(CrawlState::Paused);
            Ok("crawl paused (requests in flight finish)".to_string())
        }
        Command::Resume(Target::Global) => {
            s.paused = false;
            if !s.draining {
                s.set_state(CrawlState::Running);
            }
            Ok("crawl resumed".to_string())
        }
        Command::Pause(Target::Host(host)) => {
            s.set_host_paused(&host, true);
            Ok(format!("{host} paused"))
        }
        Command::Resume(Target::Host(host)) => {
            s.set_host_paused(&host, false);
            Ok(format!("{host} resumed"))
        }
        Command::AddRule(spec) => {
            let text = describe(&spec);
            s.add_rule(spec, "operator".into()).map(|(id, removed)| {
                format!("rule #{id} added ({text}); {removed} queued URL(s) blocked")
            })
        }
        Command::RemoveRule { rule_id } => match s.rules.remove(rule_id) {
            Some(spec) => {
                let _ = s.store.remove(Tree::Rules, &rule_id.to_be_bytes());
                Ok(format!("rule #{rule_id} removed ({})", describe(&spec)))
            }
            None => Err(format!("no rule #{rule_id}")),
        },
        Command::SetHostDelay { host, delay } => {
            s.host_mut(&host).politeness.set_override_delay(delay);
            s.save_host(&host);
            Ok(match delay {
                Some(d) => format!("{host}: delay {}", humantime::format_duration(d)),
                None => format!("{host}: delay override removed"),
            })
        }
        Command::SetHostConcurrency { host, max } => {
            if max == Some(0) {
                return Err("concurrency must be at least 1 (pause the host instead)".into());
            }
            let politeness = s.cfg.politeness.clone();
            let state = s.host_mut(&host);
            state.politeness.set_override_concurrency(max);
            let effective = state.politeness.max_in_flight(&politeness);
            s.frontier.set_max_in_flight(&host, effective);
            s.save_host(&host);
            Ok(format!("{host}: {effective} request(s) in flight at most"))
        }
        Command::SetGlobalDelay(d) => {
            s.global_delay = d;
            Ok(format!(
                "default per-host delay {}",
                humantime::format_duration(d)
            ))
        }
        Command::SetGlobalConcurrency(n) => {
            if n == 0 {
                return Err("global concurrency must be at least 1 (pause instead)".into());
            }
            s.global_concurrency = n;
            Ok(format!("{n} request(s) in flight across the crawl at most"))
        }
        Command::SetGlobalRate(rate) => match rate {
            Some(r) if !(r > 0.0 && r.is_finite()) => Err(format!(
                "rate must be a positive number of pages/s, got {r}"
            )),
            _ => {
                s.rate.set_rate(rate, now);
                Ok(match rate {
                    Some(r) => format!("global rate capped at {r} pages/s"),
                    None => "global rate cap removed".into(),
                })
            }
        },
        Command::AddSeed(text) => s.add_seed(&text),
        Command::SetHostBreaker { host, thresholds } => {
            if thresholds.is_some_and(|t| t.consecutive_failures == 0) {
                return Err("a breaker needs at least 1 failure to open".into());
            }
            s.host_mut(&host).breaker_thresholds = thresholds;
            s.save_host(&host);
            Ok(match thresholds {
                Some(t) => format!(
                    "{host}: breaker opens after {} consecutive failures, first cooldown {}",
                    t.consecutive_failures,
                    humantime::format_duration(t.cooldown)
                ),
                None => format!("{host}: breaker thresholds from crawl.toml again"),
            })
        }
        Command::ResetBreaker(host) => {
            let transition = s.host_mut(&host).breaker.reset();
            if let Some(t) = transition {
                s.breaker_transition(&host, t, now);
            }
            Ok(format!("{host}: breaker closed"))
        }
        Command::ForceOpenBreaker(host) => {
            let base = s.cfg.breaker.clone();
            let state = s.host_mut(&host);
            let cfg = state.breaker_config(&base);
            let transition = state.breaker.force_open(now, &cfg);
            if let Some(t) = transition {
                s.breaker_transition(&host, t, now);
            }
            Ok(format!("{host}: breaker opened"))
        }
        Command::AcceptAlert { alert_id, rule } => s.accept_alert(alert_id, rule, "operator"),
        Command::DismissAlert { alert_id } => s.dismiss_alert(alert_id),
        Command::Checkpoint => {
            s.checkpoint();
            Ok("checkpoint written".into())
        }
        Command::Shutdown => {
            s.begin_drain("operator asked to stop");
            Ok("stopping: requests in flight finish, then the crawl is checkpointed".into())
        }
    };
    save_settings(s);
    result
}

/// Hit counters change with every blocked link; they are stored at checkpoints.
pub fn save_rule_hits(s: &Coordinator) {
    for view in s.rules.views() {
        let record = RuleRecord {
            id: view.id,
            spec: view.spec,
            origin: view.origin,
            hits: view.hits,
        };
        if let Err(e) = s.store.put(Tree::Rules, &record.id.to_be_bytes(), &record) {
            tracing::error!("saving rule #{}: {e}", record.id);
        }
    }
}

pub fn save_settings(s: &mut Coordinator) {
    let settings = Settings {
        paused: s.paused,
        global_delay: s.global_delay,
        global_concurrency: s.global_concurrency,
        global_rate: s.rate.rate(),
        next_rule_id: s.next_rule_id,
        next_alert_id: s.next_alert_id,
    };
    if let Err(e) = s.store.put(Tree::Meta, b"settings", &settings) {
        tracing::error!("saving settings: {e}");
    }
}

impl Coordinator {
    /// Adds a rule, stores it and blocks the queued URLs it matches.
    pub fn add_rule(&mut self, spec: RuleSpec, origin: String) -> Result<(u64, u64), String> {
        RuleSet::compile(&spec)?;
        let id = self.next_rule_id;
        self.rules.add(id, spec.clone(), origin.clone())?;
        self.next_rule_id += 1;
        let record = RuleRecord {
            id,
            spec: spec.clone(),
            origin,
            hits: 0,
        };
        if let Err(e) = self.store.put(Tree::Rules, &id.to_be_bytes(), &record) {
            self.rules.remove(id);
            return Err(format!("could not store the rule: {e}"));
        }
        let compiled = RuleSet::compile(&spec)?;
        let rule_text = describe(&spec);
        let outcome = PageOutcome::Blocked {
            rule_id: id,
            rule: rule_text,
        };
        let removed = self
            .frontier
            .remove_matching(
                spec.host.as_deref(),
                &|e| compiled.is_match(&e.url, &e.host),
                &|e| record_for(e, outcome.clone()),
            )
            .map_err(|e| format!("rule stored, but blocking queued URLs failed: {e}"))?;
        self.counters.blocked_by_rules += removed;
        self.rules.add_hits(id, removed);
        Ok((id, removed))
    }

    pub fn raise_alert(&mut self, d: Detection) {
        let id = self.next_alert_id;
        self.next_alert_id += 1;
        let policy = self.cfg.traps.policy;
        let mut alert = TrapAlert {
            id,
            host: d.host.clone(),
            kind: d.kind,
            evidence_count: d.evidence_count,
            samples: d.samples,
            suggested_rule: d.rule.clone(),
            matching_queued: 0,
            status: AlertStatus::Open,
        };
        let Ok(compiled) = RuleSet::compile(&d.rule) else {
            tracing::error!("trap detector suggested an invalid rule: {:?}", d.rule);
            return;
        };
        match policy {
            TrapPolicy::AlertOnly => alert.status = AlertStatus::Noted,
            TrapPolicy::Quarantine | TrapPolicy::Auto => {
                let parked = self
                    .frontier
                    .park(id, &d.host, &|e| compiled.is_match(&e.url, &e.host))
                    .unwrap_or_else(|e| {
                        tracing::error!("parking URLs for alert #{id}: {e}");
                        0
                    });
                alert.matching_queued = parked;
                self.alert_rules.insert(id, compiled);
            }
        }
        self.log(
            Level::Warn,
            format!(
                "trap alert #{id} on {}: {} ({} URLs; suggested rule {}); {} queued URL(s) parked",
                alert.host,
                alert.kind.label(),
                alert.evidence_count,
                alert.suggested_rule.pattern,
                alert.matching_queued
            ),
        );
        self.store_alert(&alert);
        self.emit(EngineEvent::Alert(alert.clone()));
        self.alerts.insert(id, alert);
        if policy == TrapPolicy::Auto {
            if let Err(e) = self.accept_alert(id, None, "auto") {
                self.log(Level::Error, format!("auto-accepting alert #{id}: {e}"));
            }
        }
    }

    fn store_alert(&mut self, alert: &TrapAlert) {
        if let Err(e) = self.store.put(Tree::Alerts, &alert.id.to_be_bytes(), alert) {
            tracing::error!("saving alert #{}: {e}", alert.id);
        }
    }

    fn set_alert_status(&mut self, id: u64, status: AlertStatus) {
        if let Some(alert) = self.alerts.get_mut(&id) {
            alert.status = status;
            let alert = alert.clone();
            self.store_alert(&alert);
        }
        self.alert_rules.remove(&id);
        self.emit(EngineEvent::AlertChanged {
            alert_id: id,
            status,
        });
    }

    pub fn accept_alert(
        &mut self,
        id: u64,
        edited: Option<RuleSpec>,
        origin: &str,
    ) -> Result<String, String> {
        let alert = self
            .alerts
            .get(&id)
            .cloned()
            .ok_or_else(|| format!("no alert #{id}"))?;
        if alert.status != AlertStatus::Open && alert.status != AlertStatus::Noted {
            return Err(format!("alert #{id} is already {}", alert.status.label()));
        }
        let spec = edited.unwrap_or(alert.suggested_rule.clone());
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
        self.counters.blocked_by_rules += parked;
        self.rules.add_hits(rule_id, parked);
        self.set_alert_status(id, AlertStatus::Accepted);
        Ok(format!(
            "alert #{id} accepted: rule #{rule_id} added, {} URL(s) blocked",
            parked + removed
        ))
    }

    pub fn dismiss_alert(&mut self, id: u64) -> Result<String, String> {
        let alert = self
            .alerts
            .get(&id)
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

    pub fn add_seed(&mut self, text: &str) -> Result<String, String> {
        let mut url = parse_seed(text)?;
        url_norm::normalize(&mut url);
        self.filter.add_seed(&url);
        let fp = crate::engine::dedup::url_fingerprint(url.as_str());
        if self.is_seen(fp) {
            return Err(format!("{url} was already seen in this crawl"));
        }
        let host = url_norm::host_key(&url);
        self.mark_seen(fp);
        let entry = crate::engine::frontier::FrontierEntry {
            priority: 0,
            url: url.to_string(),
            host,
            depth: 0,
            redirects: 0,
        };
        self.frontier
            .push(vec![entry])
            .map_err(|e| format!("could not queue {url}: {e}"))?;
        Ok(format!("seed {url} queued"))
    }

    pub fn set_host_paused(&mut self, host: &str, paused: bool) {
        self.host_mut(host).paused = paused;
        self.frontier.set_hold(host, Hold::Paused, paused);
        self.save_host(host);
    }
}
