//! Rule previews off the crawl loop: the scan runs on its own thread over
//! the frontier's read handle (local: the store's; Redis: a connection of its
//! own), and the loop answers the command when
//! the result comes back (like a rule removal's walk, `unblock.rs`). One
//! preview thread at a time: a request made meanwhile waits, and a newer
//! request replaces a waiting one, which is answered as superseded.

use tokio::sync::mpsc;

use super::preview::{preview_over, PreviewBudget};
use super::Coordinator;
use crate::engine::control::{CommandId, RuleSpec};
use crate::engine::rules::{describe, RuleSet};

/// A finished preview: the command it answers and its answer.
pub(super) type Finished = (CommandId, Result<String, String>);

/// The preview thread's channel and the requests it serves.
pub(super) struct Previews {
    tx: mpsc::Sender<Finished>,
    rx: mpsc::Receiver<Finished>,
    running: Option<CommandId>,
    waiting: Option<(CommandId, RuleSpec, PreviewBudget)>,
}

impl Default for Previews {
    fn default() -> Self {
        // One thread at a time, so one answer in flight at most.
        let (tx, rx) = mpsc::channel(1);
        Previews {
            tx,
            rx,
            running: None,
            waiting: None,
        }
    }
}

impl Previews {
    /// The running preview's answer.
    pub(super) async fn recv(&mut self) -> Option<Finished> {
        self.rx.recv().await
    }
}

impl Coordinator {
    /// Previews `spec` for command `id`: the answer now, or `None` when it
    /// comes later through [`Coordinator::finish_preview`].
    pub(super) fn request_preview(
        &mut self,
        id: CommandId,
        spec: RuleSpec,
        budget: PreviewBudget,
    ) -> Option<Result<String, String>> {
        let Some(mut reader) = self.frontier.reader() else {
            // A frontier without a read handle is scanned on the loop.
            return Some(self.preview_rule(&spec, budget));
        };
        if self.previews.running.is_some() {
            if let Some((older, ..)) = self.previews.waiting.replace((id, spec, budget)) {
                self.outbox.answer(
                    older,
                    Err("preview superseded by a newer one before it ran".into()),
                );
            }
            return None;
        }
        let rule = match RuleSet::compile(&spec) {
            Ok(rule) => rule,
            Err(e) => return Some(Err(e)),
        };
        let (store, tx) = (self.store.clone(), self.previews.tx.clone());
        let spawned = std::thread::Builder::new()
            .name("rule-preview".into())
            .spawn(move || {
                lower_priority();
                let scan = |range, from: Option<&_>, limit| reader.scan(range, from, limit);
                let answer = preview_over(scan, &store, &rule, budget)
                    .map(|found| found.lines(&describe(&spec)).join("\n"))
                    .map_err(|e| format!("could not read the crawl for the preview: {e}"));
                // A closed channel: the crawl ended and no longer waits.
                let _ = tx.blocking_send((id, answer));
            });
        match spawned {
            Ok(_) => {
                self.previews.running = Some(id);
                None
            }
            Err(e) => Some(Err(format!("could not start the preview: {e}"))),
        }
    }

    /// Answers a finished preview and starts the waiting one, if any.
    pub(super) fn finish_preview(&mut self, (id, answer): Finished) {
        self.previews.running = None;
        self.outbox.answer(id, answer);
        if let Some((next, spec, budget)) = self.previews.waiting.take() {
            if let Some(answer) = self.request_preview(next, spec, budget) {
                self.outbox.answer(next, answer);
            }
        }
    }

    /// The crawl ended: answers the previews under way (each thread stops at
    /// its budget) rather than leaving their commands unanswered.
    pub(super) async fn end_previews(&mut self) {
        while self.previews.running.is_some() {
            match self.previews.recv().await {
                Some(finished) => self.finish_preview(finished),
                None => break,
            }
        }
    }
}

/// Lets the crawl have the CPU when both want it: the preview may be slow,
/// and then says "sampled".
#[cfg(target_os = "linux")]
fn lower_priority() {
    // On Linux the nice value is per thread, so this lowers only the calling
    // thread; a failure leaves it at the crawl's priority.
    // SAFETY: setpriority takes plain integers and touches no memory of ours.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, 0, 10);
    }
}

#[cfg(not(target_os = "linux"))]
fn lower_priority() {}

#[cfg(test)]
#[path = "preview_job_tests.rs"]
mod tests;
