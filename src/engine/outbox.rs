//! The engine's way out to its front ends: discrete events on a bounded
//! channel (a lagging receiver loses events, and the loss is counted) and the
//! latest snapshot on a watch channel.

use std::sync::Arc;

use tokio::sync::{mpsc, watch};

use super::control::{CommandId, CommandResult};
use super::telemetry::{EngineEvent, Level, Snapshot};

/// Fetched events held before they are sent together.
const FETCHED_BURST: usize = 64;

/// Sends events and snapshots; never blocks the crawl loop.
///
/// A `Fetched` event comes for every page, and each one sent alone woke the
/// front end's threads (thousands of times a second at full speed), so they
/// go out in bursts: when [`FETCHED_BURST`] are held, before any other event
/// (the order is kept), at each snapshot and when the engine stops.
pub(crate) struct Outbox {
    events: mpsc::Sender<EngineEvent>,
    snapshots: watch::Sender<Arc<Snapshot>>,
    held: Vec<EngineEvent>,
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
            held: Vec::new(),
            dropped: 0,
        }
    }

    /// Sends an event (a `Fetched` one with its burst), or counts it as
    /// dropped when the receiver lags.
    pub(crate) fn emit(&mut self, event: EngineEvent) {
        if matches!(event, EngineEvent::Fetched { .. }) {
            self.held.push(event);
            if self.held.len() >= FETCHED_BURST {
                self.send_held();
            }
            return;
        }
        self.send_held();
        self.send(event);
    }

    /// Sends the `Fetched` events held.
    pub(crate) fn send_held(&mut self) {
        let mut held = std::mem::take(&mut self.held);
        for event in held.drain(..) {
            self.send(event);
        }
        self.held = held;
    }

    fn send(&mut self, event: EngineEvent) {
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
    pub(crate) fn publish(&self, snapshot: Arc<Snapshot>) {
        let _ = self.snapshots.send(snapshot);
    }

    /// Events lost so far because a receiver lagged.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped
    }
}

impl Drop for Outbox {
    fn drop(&mut self) {
        self.send_held();
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
        outbox.publish(Arc::new(Snapshot {
            dropped_events: outbox.dropped(),
            ..Snapshot::default()
        }));
        assert_eq!(snapshots.borrow().dropped_events, 1);
    }

    fn fetched(url: &str) -> EngineEvent {
        EngineEvent::Fetched {
            host: "a.test".into(),
            url: url.into(),
            status: Some(200),
            latency: std::time::Duration::ZERO,
            bytes: 0,
            error: None,
        }
    }

    fn url_of(event: EngineEvent) -> String {
        match event {
            EngineEvent::Fetched { url, .. } => url,
            EngineEvent::Log { message, .. } => message,
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn fetched_events_go_out_in_bursts_and_in_order() {
        let (events_tx, mut events) = mpsc::channel(4 * FETCHED_BURST);
        let (snapshots_tx, _snapshots) = watch::channel(Arc::new(Snapshot::default()));
        let mut outbox = Outbox::new(events_tx, snapshots_tx);
        for i in 0..FETCHED_BURST - 1 {
            outbox.emit(fetched(&i.to_string()));
        }
        assert!(events.try_recv().is_err(), "held until the burst is full");
        outbox.emit(fetched("last of the burst"));
        let burst: Vec<String> = std::iter::from_fn(|| events.try_recv().ok())
            .map(url_of)
            .collect();
        assert_eq!(burst.len(), FETCHED_BURST);
        assert_eq!(burst.last().unwrap(), "last of the burst");

        // Another event sends those held before it.
        outbox.emit(fetched("before the log"));
        outbox.log(Level::Info, "a log line".into());
        assert_eq!(url_of(events.try_recv().unwrap()), "before the log");
        assert_eq!(url_of(events.try_recv().unwrap()), "a log line");

        // So do a snapshot's turn and the engine's end.
        outbox.emit(fetched("before a snapshot"));
        outbox.send_held();
        assert_eq!(url_of(events.try_recv().unwrap()), "before a snapshot");
        outbox.emit(fetched("at the end"));
        drop(outbox);
        assert_eq!(url_of(events.try_recv().unwrap()), "at the end");
        assert!(events.try_recv().is_err());
    }
}
