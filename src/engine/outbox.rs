//! The engine's way out to its front ends: discrete events on a bounded
//! channel (a lagging receiver loses events, and the loss is counted) and the
//! latest snapshot on a watch channel.

use std::sync::Arc;

use tokio::sync::{mpsc, watch};

use super::control::{CommandId, CommandResult};
use super::telemetry::{EngineEvent, Level, Snapshot};

/// Sends events and snapshots; never blocks the crawl loop.
pub(crate) struct Outbox {
    events: mpsc::Sender<EngineEvent>,
    snapshots: watch::Sender<Arc<Snapshot>>,
    dropped: u64,
}

impl Outbox {
    pub(crate) fn new(
        events: mpsc::Sender<EngineEvent>,
        snapshots: watch::Sender<Arc<Snapshot>>,
    ) -> Self {
        Outbox {
            events,
            snapshots,
            dropped: 0,
        }
    }

    /// Sends an event, or counts it as dropped when the receiver lags.
    pub(crate) fn emit(&mut self, event: EngineEvent) {
        if self.events.try_send(event).is_err() {
            self.dropped += 1;
        }
    }

    /// A log line for the front ends and the tracing log alike.
    pub(crate) fn log(&mut self, level: Level, message: String) {
        match level {
            Level::Info => tracing::info!("{message}"),
            Level::Warn => tracing::warn!("{message}"),
            Level::Error => tracing::error!("{message}"),
        }
        self.emit(EngineEvent::Log { level, message });
    }

    /// The engine's answer to an operator command.
    pub(crate) fn answer(&mut self, id: CommandId, outcome: Result<String, String>) {
        match &outcome {
            Ok(m) => tracing::info!(command = id.0, "{m}"),
            Err(m) => tracing::warn!(command = id.0, "refused: {m}"),
        }
        self.emit(EngineEvent::CommandDone(CommandResult { id, outcome }));
    }

    /// Replaces the snapshot front ends see.
    pub(crate) fn publish(&self, snapshot: Snapshot) {
        let _ = self.snapshots.send(Arc::new(snapshot));
    }

    /// Events lost so far because a receiver lagged.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::control::CommandId;

    #[test]
    fn a_lagging_receiver_loses_events_and_the_loss_is_counted() {
        let (events_tx, mut events) = mpsc::channel(2);
        let (snapshots_tx, snapshots) = watch::channel(Arc::new(Snapshot::default()));
        let mut outbox = Outbox::new(events_tx, snapshots_tx);
        outbox.answer(CommandId(1), Ok("done".into()));
        outbox.log(Level::Info, "one".into());
        outbox.log(Level::Info, "two".into());
        assert_eq!(
            outbox.dropped(),
            1,
            "the third event found the channel full"
        );
        assert!(matches!(
            events.try_recv(),
            Ok(EngineEvent::CommandDone(CommandResult {
                id: CommandId(1),
                ..
            }))
        ));
        outbox.publish(Snapshot {
            dropped_events: outbox.dropped(),
            ..Snapshot::default()
        });
        assert_eq!(snapshots.borrow().dropped_events, 1);
    }
}
