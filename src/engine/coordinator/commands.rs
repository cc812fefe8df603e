//! Operator commands: each one changes a part and is stored at once, so it
//! survives a restart. The answer is the text front ends show.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use super::journal::Then;
use super::outage;
use super::preview::{preview, PreviewBudget};
use super::triage::Blocking;
use super::Coordinator;
use crate::engine::config::parse_seed;
use crate::engine::control::{BreakerThresholds, Command, CommandId, RuleSpec, Target, MAX_DELAY};
use crate::engine::frontier::{FrontierEntry, Hold};
use crate::engine::rules::{describe, RuleSet};
use crate::engine::store::{StoreError, Tree};
use crate::engine::telemetry::CrawlState;
use crate::engine::url_norm;

/// Crawl-wide operator settings, stored under `meta/settings`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Settings {
    pub paused: bool,
    pub global_delay: Duration,
    pub global_concurrency: usize,
    pub global_rate: Option<f64>,
    pub next_rule_id: u64,
    pub next_alert_id: u64,
}

/// Meta key of the stored settings.
pub(super) const SETTINGS_KEY: &[u8] = b"settings";

/// An answer to the operator: what was done, or why not.
type Answer = Result<String, String>;

/// Carries out `command`; its answer, or `None` when it comes later (a rule
/// removal is answered once the URLs it blocked are back, a preview once its
/// scan is done, an alert's decision or a rule for every host once its sweep
/// of the frontier is done).
pub(super) fn handle(c: &mut Coordinator, id: CommandId, command: Command) -> Option<Answer> {
    let now = Instant::now();
    if outage::needs_frontier(&command) {
        if let Some(refusal) = c.refusal_while_unreachable() {
            return Some(Err(refusal));
        }
    }
    // Answered when its sweep of the frontier is done (sweep.rs).
    let mut later = false;
    let mut sweeping = |started: Result<(), String>| {
        later = started.is_ok();
        started.map(|()| String::new())
    };
    let unknown_host = host_of(&command).and_then(|host| c.unknown_host_note(host));
    let result = match command {
        Command::Pause(target) => c.pause(target, true),
        Command::Resume(target) => c.pause(target, false),
        Command::AddRule(spec) => {
            let text = describe(&spec);
            match c.add_rule(spec, "operator".into()) {
                Ok((id, Blocking::Done(removed))) => Ok(format!(
                    "rule #{id} added ({text}); {removed} queued URL(s) blocked"
                )),
                Ok((rule_id, Blocking::Sweep(work))) => {
                    c.start_sweep(Some(id), vec![work], Then::RuleAdded { rule_id, text }, 0);
                    sweeping(Ok(()))
                }
                Err(e) => Err(e),
            }
        }
        Command::RemoveRule { rule_id } => match c.remove_rule(id, rule_id) {
            Ok(()) => return None,
            Err(e) => Err(e),
        },
        Command::SetHostDelay { host, delay } => c.set_host_delay(&host, delay, now),
        Command::SetHostConcurrency { host, max } => c.set_host_concurrency(&host, max),
        Command::SetGlobalDelay(d) => c.set_global_delay(d, now),
        Command::SetGlobalConcurrency(n) => c.set_global_concurrency(n),
        Command::SetGlobalRate(rate) => c.set_global_rate(rate, now),
        Command::AddSeed(text) => c.add_seed(&text),
        Command::SetHostBreaker { host, thresholds } => c.set_host_breaker(&host, thresholds),
        Command::ResetBreaker(host) => c.met(&host).map(|()| {
            if let Some(t) = c.hosts.reset_breaker(&host) {
                c.breaker_transition(&host, t, now);
            }
            format!("{host}: breaker closed")
        }),
        Command::ForceOpenBreaker(host) => c.met(&host).map(|()| {
            if let Some(t) = c.hosts.force_open_breaker(&host, now) {
                c.breaker_transition(&host, t, now);
            }
            format!("{host}: breaker opened")
        }),
        Command::AcceptAlert { alert_id, rule } => {
            sweeping(c.accept_alert(alert_id, rule, "operator", Some(id)))
        }
        Command::DismissAlert { alert_id } => sweeping(c.dismiss_alert(alert_id, Some(id))),
        // Reads only: nothing to store; answered when the scan is done.
        Command::Preview(spec) => return c.request_preview(id, spec, PreviewBudget::default()),
        Command::AddExtraction(spec) => c.add_extraction(spec),
        Command::Checkpoint => {
            c.checkpoint();
            Ok("checkpoint written".into())
        }
        Command::Shutdown => {
            c.begin_drain("operator asked to stop");
            Ok("stopping: requests in flight finish, then the crawl is checkpointed".into())
        }
    };
    if let Err(e) = c.save_settings() {
        c.storage_failed("saving the crawl's settings", e);
    }
    let result = match (result, unknown_host) {
        (Ok(done), Some(note)) => Ok(format!("{done}; {note}")),
        (result, _) => result,
    };
    (!later).then_some(result)
}

/// The host a command is about, if it is about one.
fn host_of(command: &Command) -> Option<&str> {
    match command {
        Command::Pause(Target::Host(host))
        | Command::Resume(Target::Host(host))
        | Command::SetHostDelay { host, .. }
        | Command::SetHostConcurrency { host, .. }
        | Command::SetHostBreaker { host, .. }
        | Command::ResetBreaker(host)
        | Command::ForceOpenBreaker(host) => Some(host),
        _ => None,
    }
}

/// Refuses a delay past [`MAX_DELAY`]: the grammar does, but a command may
/// come from elsewhere (a cluster's stream, a test).
fn check_delay(delay: Option<Duration>) -> Result<(), String> {
    match delay {
        Some(d) if d > MAX_DELAY => Err(format!(
            "a delay of {} is longer than the longest, {}",
            humantime::format_duration(d),
            humantime::format_duration(MAX_DELAY)
        )),
        _ => Ok(()),
    }
}

/// A refusal for a failed write of an operator setting.
fn not_stored(what: &str, e: StoreError) -> String {
    format!("{what} applied, but could not be stored: {e}")
}

/// Hosts named in a note on a host the crawl has not met.
const SIMILAR_HOSTS: usize = 3;

impl Coordinator {
    /// A note on a command for a host the crawl has not met: it takes effect
    /// if the host appears, which a mistyped name (a port left out) never does.
    fn unknown_host_note(&self, host: &str) -> Option<String> {
        let keys = self.hosts.keys();
        let stored = self.store.contains(Tree::Hosts, host.as_bytes());
        if keys.iter().any(|k| k == host) || matches!(stored, Ok(true)) {
            return None;
        }
        let name = |key: &str| key.split(':').next().unwrap_or_default().to_string();
        let mut similar: Vec<&str> = keys
            .iter()
            .filter(|k| name(k) == name(host) || k.contains(host))
            .map(String::as_str)
            .collect();
        similar.sort_unstable();
        similar.truncate(SIMILAR_HOSTS);
        let hint = if similar.is_empty() {
            String::new()
        } else {
            format!(" (did you mean {}?)", similar.join(", "))
        };
        Some(format!(
            "no host {host} in this crawl yet: it applies if one appears{hint}"
        ))
    }

    fn pause(&mut self, target: Target, paused: bool) -> Answer {
        match target {
            Target::Global if paused => {
                self.run.paused = true;
                self.set_state(CrawlState::Paused);
                Ok("crawl paused (requests in flight finish)".to_string())
            }
            Target::Global => {
                self.run.paused = false;
                if let Some(line) = self.outage_line() {
                    return Ok(format!(
                        "operator pause lifted; the crawl resumes by itself once Redis answers ({line})"
                    ));
                }
                if !self.run.draining {
                    self.set_state(CrawlState::Running);
                }
                match self.run.fault.take() {
                    Some(fault) => Ok(format!(
                        "crawl resumed after the storage fault ({fault}); it pauses again if writes still fail"
                    )),
                    None => Ok("crawl resumed".to_string()),
                }
            }
            Target::Host(host) => {
                // A host not in memory has no queue to hold: it takes the
                // stored pause when it appears (`adopt`).
                if self.hosts.is_resident(&host) {
                    self.hold(&host, Hold::Paused, paused);
                }
                self.hosts
                    .set_paused(&host, paused)
                    .map_err(|e| not_stored("pause", e))?;
                let verb = if paused { "paused" } else { "resumed" };
                Ok(format!("{host} {verb}"))
            }
        }
    }

    /// A breaker is opened or closed on a host the crawl has in memory only:
    /// it is a moment's state, not a setting kept for later.
    fn met(&self, host: &str) -> Result<(), String> {
        if self.hosts.is_resident(host) {
            return Ok(());
        }
        Err(format!(
            "no host {host} active in this crawl: its breaker starts closed when it appears"
        ))
    }

    fn set_global_delay(&mut self, delay: Duration, now: Instant) -> Answer {
        check_delay(Some(delay))?;
        self.hosts.set_default_delay(delay);
        for host in self.hosts.keys() {
            self.retime(&host, now);
        }
        Ok(format!(
            "default per-host delay {}",
            humantime::format_duration(delay)
        ))
    }

    fn set_host_delay(&mut self, host: &str, delay: Option<Duration>, now: Instant) -> Answer {
        check_delay(delay)?;
        self.hosts
            .set_delay_override(host, delay)
            .map_err(|e| not_stored("delay", e))?;
        self.retime(host, now);
        Ok(match delay {
            Some(d) => format!("{host}: delay {}", humantime::format_duration(d)),
            None => format!("{host}: delay override removed"),
        })
    }

    fn set_host_concurrency(&mut self, host: &str, max: Option<usize>) -> Answer {
        if max == Some(0) {
            return Err("concurrency must be at least 1 (pause the host instead)".into());
        }
        let resident = self.hosts.is_resident(host);
        let effective = self
            .hosts
            .set_concurrency_override(host, max)
            .map_err(|e| not_stored("concurrency", e))?;
        // A host not in memory takes its limit when it appears (`adopt`).
        if resident {
            self.frontier
                .set_max_in_flight(host, effective)
                .map_err(|e| not_stored("concurrency", e))?;
        }
        Ok(format!("{host}: {effective} request(s) in flight at most"))
    }

    fn set_global_concurrency(&mut self, n: usize) -> Answer {
        if n == 0 {
            return Err("global concurrency must be at least 1 (pause instead)".into());
        }
        self.slots.set_concurrency(n);
        Ok(format!("{n} request(s) in flight across the crawl at most"))
    }

    fn set_global_rate(&mut self, rate: Option<f64>, now: Instant) -> Answer {
        if let Some(r) = rate.filter(|r| !(*r > 0.0 && r.is_finite())) {
            return Err(format!(
                "rate must be a positive number of pages/s, got {r}"
            ));
        }
        self.slots.set_rate(rate, now);
        Ok(match rate {
            Some(r) => format!("global rate capped at {r} pages/s"),
            None => "global rate cap removed".into(),
        })
    }

    fn set_host_breaker(&mut self, host: &str, thresholds: Option<BreakerThresholds>) -> Answer {
        if thresholds.is_some_and(|t| t.consecutive_failures == 0) {
            return Err("a breaker needs at least 1 failure to open".into());
        }
        self.hosts
            .set_breaker_thresholds(host, thresholds)
            .map_err(|e| not_stored("breaker thresholds", e))?;
        Ok(match thresholds {
            Some(t) => format!(
                "{host}: breaker opens after {} consecutive failures, first cooldown {}",
                t.consecutive_failures,
                humantime::format_duration(t.cooldown)
            ),
            None => format!("{host}: breaker thresholds from crawl.toml again"),
        })
    }

    fn add_seed(&mut self, text: &str) -> Answer {
        let mut url = parse_seed(text)?;
        url_norm::normalize(&mut url);
        self.filter.add_seed(&url);
        // Its name's classes are learned when its robots.txt is fetched.
        self.workers.address_guard().add_seed(&url);
        let fresh = self
            .frontier
            .claim_unseen(&[url.as_str()])
            .map_err(|e| format!("could not check {url} against the seen URLs: {e}"))?;
        if fresh.first() != Some(&true) {
            return Err(format!("{url} was already seen in this crawl"));
        }
        let entry = FrontierEntry {
            priority: 0,
            url: url.to_string(),
            host: url_norm::host_key(&url),
            depth: 0,
            redirects: 0,
            kind: crate::engine::store::UrlKind::Page,
        };
        self.frontier
            .push(vec![entry])
            .map_err(|e| format!("could not queue {url}: {e}"))?;
        Ok(format!("seed {url} queued"))
    }

    /// What `spec` would match, as terminal lines; reads only, within `budget`.
    pub(super) fn preview_rule(&mut self, spec: &RuleSpec, budget: PreviewBudget) -> Answer {
        let rule = RuleSet::compile(spec)?;
        let found = preview(self.frontier.as_mut(), &self.store, &rule, budget)
            .map_err(|e| format!("could not read the crawl for the preview: {e}"))?;
        Ok(found.lines(&describe(spec)).join("\n"))
    }

    /// Stores the crawl-wide settings (at the start and after every command).
    pub(super) fn save_settings(&self) -> Result<(), StoreError> {
        let settings = Settings {
            paused: self.run.paused,
            global_delay: self.hosts.default_delay(),
            global_concurrency: self.slots.concurrency(),
            global_rate: self.slots.rate(),
            next_rule_id: self.rules.next_id(),
            next_alert_id: self.alerts.next_id(),
        };
        self.store.put(Tree::Meta, SETTINGS_KEY, &settings)
    }
}

#[cfg(test)]
#[path = "commands_tests.rs"]
mod tests;
