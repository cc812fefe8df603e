//! Accepting an alert, dismissing one and adding a rule for every host can
//! touch many frontier URLs. Like a rule removal (`unblock.rs`), the loop
//! does it in steps of at most [`STEP`] URLs per turn (commands and fetch
//! results are served first), the crawl does not end while one is under way,
//! and the command is answered with the count once it is done. Each sweep
//! is kept in the journal (`journal.rs`) with its cursor, so a crawl killed
//! during one resumes it at boot.

use std::collections::VecDeque;

use super::journal::{PendingSweep, PendingWork, Then};
use super::results::record_for;
use super::Coordinator;
use crate::engine::control::CommandId;
use crate::engine::frontier::{FrontierEntry, FrontierStore, ScanCursor};
use crate::engine::rules::{describe, CompiledRule, RuleSet};
use crate::engine::store::{PageOutcome, PageRecord, StoreError};
use crate::engine::telemetry::{AlertStatus, Level};

/// Frontier rows one loop turn reads at most (a few ms of store writes).
pub(super) const STEP: usize = 256;

/// What a sweep does to the frontier.
pub(super) enum Work {
    /// Removes the queued URLs of every host the rule matches, recorded as
    /// blocked by it.
    Block {
        rule_id: u64,
        rule: CompiledRule,
        outcome: PageOutcome,
        from: Option<ScanCursor>,
    },
    /// Takes an alert's parked URLs out of quarantine: recorded as blocked
    /// by rule `.0` (`Some`), or queued again.
    Release {
        alert_id: u64,
        blocked: Option<(u64, PageOutcome)>,
    },
}

impl Work {
    /// The rule whose hits this work adds to.
    fn blocking_rule(&self) -> Option<u64> {
        match self {
            Work::Block { rule_id, .. } => Some(*rule_id),
            Work::Release { blocked, .. } => blocked.as_ref().map(|(rule_id, _)| *rule_id),
        }
    }

    /// The work as the journal keeps it.
    fn pending(&self) -> PendingWork {
        match self {
            Work::Block { rule_id, from, .. } => PendingWork::Block {
                rule_id: *rule_id,
                from: from.clone(),
            },
            Work::Release { alert_id, .. } => PendingWork::Release {
                alert_id: *alert_id,
                blocked_by: self.blocking_rule(),
            },
        }
    }
}

struct Sweep {
    /// Its key in the journal.
    key: u64,
    answer_to: Option<CommandId>,
    work: VecDeque<Work>,
    /// URLs blocked or returned so far.
    count: u64,
    then: Then,
}

/// Sweeps under way, done one after the other.
#[derive(Default)]
pub(super) struct Sweeps {
    queue: VecDeque<Sweep>,
}

impl Sweep {
    fn pending(&self) -> PendingSweep {
        PendingSweep {
            work: self.work.iter().map(Work::pending).collect(),
            count: self.count,
            then: self.then.clone(),
        }
    }
}

impl Sweeps {
    /// No sweep is under way.
    pub(super) fn is_idle(&self) -> bool {
        self.queue.is_empty()
    }

    /// Rule `rule_id` was removed: no sweep blocks with it any more, and the
    /// parked URLs an accepting sweep has not blocked yet go back to the
    /// queue (those it blocked come back with the rule's other URLs).
    /// Returns the sweeps changed, to record.
    fn forget_rule(&mut self, rule_id: u64) -> Vec<(u64, PendingSweep)> {
        let mut changed = Vec::new();
        for sweep in &mut self.queue {
            let before = sweep.work.len();
            let mut touched = false;
            sweep
                .work
                .retain(|w| !matches!(w, Work::Block { rule_id: r, .. } if *r == rule_id));
            for work in &mut sweep.work {
                if let Work::Release { blocked, .. } = work {
                    if blocked.as_ref().is_some_and(|(r, _)| *r == rule_id) {
                        *blocked = None;
                        touched = true;
                    }
                }
            }
            if touched || sweep.work.len() != before {
                changed.push((sweep.key, sweep.pending()));
            }
        }
        changed
    }

    /// A sweep will decide alert `alert_id`.
    pub(super) fn decides(&self, alert_id: u64) -> bool {
        self.queue.iter().any(|s| match s.then {
            Then::Accepted { alert_id: a, .. } | Then::Dismissed { alert_id: a } => a == alert_id,
            Then::RuleAdded { .. } => false,
        })
    }
}

impl Coordinator {
    /// Queues a sweep; `answer_to` (none: an automatic decision, logged) is
    /// answered when it is done, counting `count` URLs handled already.
    pub(super) fn start_sweep(
        &mut self,
        answer_to: Option<CommandId>,
        work: Vec<Work>,
        then: Then,
        count: u64,
    ) {
        let sweep = Sweep {
            key: self.journal.next_sweep_key(),
            answer_to,
            work: work.into(),
            count,
            then,
        };
        self.record_sweep(&sweep);
        self.sweeps.queue.push_back(sweep);
    }

    /// Rule `rule_id` was removed: see [`Sweeps::forget_rule`].
    pub(super) fn forget_rule_in_sweeps(&mut self, rule_id: u64) {
        for (key, pending) in self.sweeps.forget_rule(rule_id) {
            if let Err(e) = self.journal.put_sweep(key, pending) {
                self.storage_failed("recording a sweep's progress", e);
            }
        }
    }

    /// Resumes the sweeps an earlier run left unfinished (logged when done).
    pub(super) fn resume_sweeps(&mut self, left: Vec<(u64, PendingSweep)>) {
        for (key, pending) in left {
            let work: Vec<Work> = pending
                .work
                .into_iter()
                .filter_map(|w| self.work_from(w))
                .collect();
            self.outbox.log(
                Level::Info,
                format!("{}: resumed after a restart", what(&pending.then)),
            );
            self.sweeps.queue.push_back(Sweep {
                key,
                answer_to: None,
                work: work.into(),
                count: pending.count,
                then: pending.then,
            });
        }
    }

    /// Stored work made live again; a block with a rule since removed is dropped.
    fn work_from(&self, pending: PendingWork) -> Option<Work> {
        let blocked_by = |rule_id: u64| {
            let spec = self
                .rules
                .views()
                .into_iter()
                .find(|r| r.id == rule_id)?
                .spec;
            let outcome = PageOutcome::Blocked {
                rule_id,
                rule: describe(&spec),
            };
            Some((spec, outcome))
        };
        match pending {
            PendingWork::Block { rule_id, from } => {
                let (spec, outcome) = blocked_by(rule_id)?;
                let rule = RuleSet::compile(&spec).ok()?;
                Some(Work::Block {
                    rule_id,
                    rule,
                    outcome,
                    from,
                })
            }
            PendingWork::Release {
                alert_id,
                blocked_by: rule,
            } => Some(Work::Release {
                alert_id,
                blocked: rule.and_then(|id| Some((id, blocked_by(id)?.1))),
            }),
        }
    }

    fn record_sweep(&mut self, sweep: &Sweep) {
        if let Err(e) = self.journal.put_sweep(sweep.key, sweep.pending()) {
            self.storage_failed("recording a sweep's progress", e);
        }
    }

    /// One step of the oldest sweep; finishes it when its work is done.
    pub(super) fn sweep_step(&mut self) {
        let Some(mut sweep) = self.sweeps.queue.pop_front() else {
            return;
        };
        let Some(work) = sweep.work.front_mut() else {
            return self.finish_sweep(sweep);
        };
        match step(&mut *self.frontier, work) {
            Ok((n, done)) => {
                sweep.count += n;
                if let Some(rule_id) = work.blocking_rule() {
                    self.stats.count().blocked_by_rules += n;
                    self.rules.add_hits(rule_id, n);
                }
                if done {
                    sweep.work.pop_front();
                }
                if sweep.work.is_empty() {
                    self.finish_sweep(sweep);
                } else {
                    self.record_sweep(&sweep);
                    self.sweeps.queue.push_front(sweep);
                }
            }
            Err(e) => {
                let answer = format!(
                    "{} stopped after {} URL(s): {e}",
                    what(&sweep.then),
                    sweep.count
                );
                self.reply(sweep.answer_to, Err(answer));
                self.storage_failed("sweeping the frontier", e);
            }
        }
    }

    fn finish_sweep(&mut self, sweep: Sweep) {
        let n = sweep.count;
        if let Err(e) = self.journal.end_sweep(sweep.key) {
            self.storage_failed("recording the end of a sweep", e);
        }
        let answer = match sweep.then {
            Then::RuleAdded { rule_id, text } => {
                format!("rule #{rule_id} added ({text}); {n} queued URL(s) blocked")
            }
            Then::Accepted { alert_id, rule_id } => {
                let rule = self.rules.views().into_iter().find(|r| r.id == rule_id);
                self.set_alert_status(alert_id, AlertStatus::Accepted, rule.map(|r| r.spec));
                format!("alert #{alert_id} accepted: rule #{rule_id} added, {n} URL(s) blocked")
            }
            Then::Dismissed { alert_id } => {
                if let Some(alert) = self.alerts.get(alert_id).cloned() {
                    self.traps.suppress(&alert.host, &alert.suggested_rule);
                }
                self.set_alert_status(alert_id, AlertStatus::Dismissed, None);
                format!(
                    "alert #{alert_id} dismissed: {n} URL(s) back in the frontier; this pattern will not alert again"
                )
            }
        };
        self.reply(sweep.answer_to, Ok(answer));
    }

    /// The crawl ended during sweeps: each is answered with what it did; the
    /// rest stays in the journal, to resume after a restart.
    pub(super) fn end_sweeps(&mut self) {
        for sweep in std::mem::take(&mut self.sweeps.queue) {
            let answer = format!(
                "{}: stopped by the end of the crawl after {} URL(s); the rest resumes on restart",
                what(&sweep.then),
                sweep.count
            );
            self.reply(sweep.answer_to, Err(answer));
        }
    }

    pub(super) fn reply(&mut self, to: Option<CommandId>, answer: Result<String, String>) {
        match to {
            Some(id) => self.outbox.answer(id, answer),
            None => {
                let (level, text) = match answer {
                    Ok(text) => (Level::Info, text),
                    Err(text) => (Level::Error, text),
                };
                self.outbox.log(level, text);
            }
        }
    }
}

/// One step of `work`: how many URLs it blocked or returned, and whether it is done.
fn step(frontier: &mut dyn FrontierStore, work: &mut Work) -> Result<(u64, bool), StoreError> {
    match work {
        Work::Block {
            rule,
            outcome,
            from,
            ..
        } => {
            let (n, next) = frontier.remove_matching_step(
                &|e| rule.is_match(&e.url, &e.host),
                &|e| record_for(e, outcome.clone()),
                from.as_ref(),
                STEP,
            )?;
            let done = next.is_none();
            *from = next;
            Ok((n, done))
        }
        Work::Release { alert_id, blocked } => {
            let recorder;
            let record: Option<&dyn Fn(&FrontierEntry) -> PageRecord> = match blocked {
                Some((_, outcome)) => {
                    recorder = |e: &FrontierEntry| record_for(e, outcome.clone());
                    Some(&recorder)
                }
                None => None,
            };
            let (n, more) = frontier.release_parked_step(*alert_id, record, STEP)?;
            Ok((n, !more))
        }
    }
}

/// The operation a sweep carries out, for its answer.
fn what(then: &Then) -> String {
    match then {
        Then::RuleAdded { rule_id, text } => format!("rule #{rule_id} added ({text}), blocking"),
        Then::Accepted { alert_id, .. } => format!("accepting alert #{alert_id}"),
        Then::Dismissed { alert_id } => format!("dismissing alert #{alert_id}"),
    }
}

#[cfg(test)]
#[path = "sweep_tests.rs"]
mod tests;
