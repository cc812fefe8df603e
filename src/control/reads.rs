//! The engine's side of a `Read` connection: one read of the crawl's results
//! (`engine::reads`), its rows streamed from the read's own thread through
//! its bounded queue onto the socket, then `End` or `ReadFailed`. The
//! connection is no viewer: no snapshots, no events, no `viewer N` in logs.

use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, watch};

use super::hub::Hub;
use super::protocol::{encode, send, RowChunk, ServerMsg, Transport, WireError, MAX_FRAME};
use crate::engine::reads::ReadPiece;

/// A reader that stops reading (or the engine that stops answering) for
/// this long is dropped.
pub const IDLE_LIMIT: std::time::Duration = std::time::Duration::from_secs(60);

/// The longest request accepted (a verb and a URL).
pub const MAX_REQUEST: usize = 16 * 1024;

/// Answers the read `verb arg` on `wire` and ends the connection.
pub(super) async fn serve_read<S>(
    hub: &Hub,
    verb: String,
    arg: String,
    mut wire: Transport<S>,
) -> Result<(), WireError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let refuse = |reason: String| ServerMsg::Refused { reason };
    let Some(reads) = hub.reads() else {
        let reason = "this engine serves no reads of its results".to_string();
        return send(&mut wire, &refuse(reason)).await;
    };
    if verb.len() + arg.len() > MAX_REQUEST {
        let reason = format!("a results request longer than {MAX_REQUEST} bytes");
        return send(&mut wire, &refuse(reason)).await;
    }
    match reads.start(verb, arg) {
        Ok(pieces) => forward(pieces, wire, reads.closed()).await,
        Err(reason) => send(&mut wire, &refuse(reason)).await,
    }
}

/// Sends the read's pieces as they come, each within [`IDLE_LIMIT`]. A
/// client that leaves, or the engine's end, drops the queue, which ends the
/// read's thread at its next row.
async fn forward<S>(
    mut pieces: mpsc::Receiver<ReadPiece>,
    wire: Transport<S>,
    mut closed: watch::Receiver<bool>,
) -> Result<(), WireError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let (mut sink, mut incoming) = wire.split();
    loop {
        let piece = tokio::select! {
            piece = pieces.recv() => piece,
            // A reader says nothing after its request: anything is its end.
            _ = incoming.next() => return Ok(()),
        };
        let (msg, mut last) = message(piece);
        let mut frame = encode(&msg)?;
        if frame.len() > MAX_FRAME {
            last = true;
            let reason = format!(
                "a part of the answer is {} bytes, over the socket's {MAX_FRAME}-byte frame",
                frame.len()
            );
            frame = encode(&ServerMsg::ReadFailed { reason })?;
        }
        tokio::select! {
            sent = tokio::time::timeout(IDLE_LIMIT, sink.send(frame)) => match sent {
                Ok(sent) => sent?,
                Err(_) => return Err(idle()),
            },
            // The engine is ending: let the read's thread go, with its store.
            _ = closed.wait_for(|closed| *closed) => return Ok(()),
        }
        if last {
            return Ok(());
        }
    }
}

/// A piece as the message that carries it, and whether it is the last.
fn message(piece: Option<ReadPiece>) -> (ServerMsg, bool) {
    match piece {
        Some(ReadPiece::Rows(rows)) => (ServerMsg::Rows(RowChunk(rows)), false),
        Some(ReadPiece::End) => (ServerMsg::End, true),
        Some(ReadPiece::Failed(reason)) => (ServerMsg::ReadFailed { reason }, true),
        None => {
            let reason = "the results reader failed; read again".to_string();
            (ServerMsg::ReadFailed { reason }, true)
        }
    }
}

fn idle() -> WireError {
    WireError::Io(std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        format!("the reader read nothing for {IDLE_LIMIT:?}"),
    ))
}
