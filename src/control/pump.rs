//! Feeds an [`EngineHandle`] from a connection: the handle's commands and
//! hosts window go out, snapshots and events come in. The front end reading
//! the handle cannot tell it from the engine's own.

use std::sync::Arc;

use futures_util::StreamExt;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc::error::TrySendError;

use super::protocol::{recv, send, ClientMsg, ServerMsg, Transport, WireError};
use crate::engine::telemetry::{EngineEvent, Snapshot};
use crate::engine::EngineEnds;

/// Runs until the engine goes (returns why) or the front end drops its
/// handle (returns `None`). On the way out the front end gets a log line
/// ([`EngineEvent::Ended`]: the crawl finished, or the engine gone and why),
/// then its event stream closes.
pub(super) async fn run<S>(wire: Transport<S>, mut ends: EngineEnds, pid: u32) -> Option<String>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut sink, mut incoming) = wire.split();
    // Events lost here, because the front end read too slowly.
    let mut dropped_here = 0u64;
    let reason = loop {
        tokio::select! {
            command = ends.commands.recv() => match command {
                Some((id, command)) => {
                    if send(&mut sink, &ClientMsg::Command { id, command }).await.is_err() {
                        break lost(pid);
                    }
                }
                // The front end detached.
                None => return None,
            },
            changed = ends.window.changed() => {
                if changed.is_err() {
                    // The handle is gone with its control: the front end detached.
                    return None;
                }
                let window = ends.window.borrow_and_update().clone();
                if send(&mut sink, &ClientMsg::Window(window)).await.is_err() {
                    break lost(pid);
                }
            },
            msg = recv::<_, ServerMsg>(&mut incoming) => match msg {
                Ok(ServerMsg::Snapshot { snapshot, dropped_events }) => {
                    let lost = dropped_events + dropped_here;
                    ends.snapshots.send_replace(with_dropped(snapshot, lost));
                }
                Ok(ServerMsg::Event(event)) => {
                    if let Err(TrySendError::Full(_)) = ends.events.try_send(event) {
                        dropped_here += 1;
                    }
                }
                Ok(ServerMsg::Gone { reason }) => break reason,
                // Not for a viewer: the handshake's, and a read's answers.
                Ok(
                    ServerMsg::Welcome { .. }
                    | ServerMsg::Refused { .. }
                    | ServerMsg::Rows(_)
                    | ServerMsg::End
                    | ServerMsg::ReadFailed { .. },
                ) => {}
                Err(WireError::Malformed(e)) => {
                    tracing::warn!("control socket: ignored a malformed message: {e}");
                }
                Err(_) => break lost(pid),
            },
        }
    };
    let event = match reason.strip_prefix(super::server::FINISHED) {
        Some(why) => EngineEvent::Ended {
            finished: true,
            reason: why.trim_start_matches(": ").to_string(),
        },
        None => EngineEvent::Ended {
            finished: false,
            reason: reason.clone(),
        },
    };
    let _ = ends.events.try_send(event);
    Some(reason)
}

/// The snapshot with this viewer's lost events added to the engine's own count.
fn with_dropped(snapshot: Arc<Snapshot>, lost: u64) -> Arc<Snapshot> {
    if lost == 0 {
        return snapshot;
    }
    let mut snapshot = Arc::unwrap_or_clone(snapshot);
    snapshot.dropped_events += lost;
    Arc::new(snapshot)
}

/// Why the connection ended without a goodbye.
fn lost(pid: u32) -> String {
    let alive = rustix::process::Pid::from_raw(pid as i32)
        .is_some_and(|p| rustix::process::test_kill_process(p).is_ok());
    if alive {
        format!("the connection to the engine (pid {pid}) was lost")
    } else {
        format!("the engine (pid {pid}) exited without a goodbye (killed or crashed)")
    }
}
