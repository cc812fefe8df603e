//! The wire form of the engine's control API: length-delimited frames
//! (`tokio_util`'s codec), each one JSON message. A connection opens with
//! `Hello` → `Welcome` (or `Refused`); then the client sends commands and its
//! hosts window, and the server sends snapshots (cut to that window) and
//! events until one side leaves. A connection that opens with `Read` instead
//! asks one read of the crawl's results: it is answered by `Rows` frames,
//! then `End` (or `ReadFailed`), and closes; it is no viewer.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use futures_util::{Sink, SinkExt, Stream, StreamExt};
use serde::{de::DeserializeOwned, Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::codec::{Framed, LengthDelimitedCodec};

use crate::engine::control::{Command, CommandId};
use crate::engine::host_window::HostWindow;
use crate::engine::telemetry::{EngineEvent, Snapshot};

/// Bumped whenever a message changes shape; both sides must agree exactly.
pub const PROTOCOL_VERSION: u32 = 3;

/// The largest frame either side accepts. Even a whole snapshot of a wide
/// crawl (500 hosts with their queue heads) is well under this.
pub const MAX_FRAME: usize = 16 << 20;

/// What a client says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ClientMsg {
    /// The first message: who is connecting and how.
    Hello {
        /// The client's [`PROTOCOL_VERSION`].
        version: u32,
        /// Watch only: the server refuses every command that changes the crawl.
        read_only: bool,
    },
    /// An operator command; the answer comes back as `EngineEvent::CommandDone`
    /// with this id (the client's own numbering).
    Command {
        /// The client's id for the command.
        id: CommandId,
        /// What to do.
        command: Command,
    },
    /// The part of the hosts list the viewer shows: snapshots carry only
    /// those rows, and the detail host in full. Until the first one, none.
    Window(HostWindow),
    /// Instead of `Hello`: one read of the crawl's results (`verb arg`, see
    /// `engine::reads`), answered on this connection, which then closes.
    Read {
        /// The client's [`PROTOCOL_VERSION`].
        version: u32,
        /// What to read (`pages`, `page`, `inspect`, …).
        verb: String,
        /// Its argument: a URL or a URL prefix, often empty.
        arg: String,
    },
}

/// What the server says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ServerMsg {
    /// The handshake succeeded.
    Welcome {
        /// The server's [`PROTOCOL_VERSION`].
        version: u32,
        /// This connection's viewer number, as other viewers' logs name it.
        viewer: u32,
        /// The engine's process id.
        pid: u32,
    },
    /// The handshake failed; the connection closes after this.
    Refused {
        /// Why, with the fix.
        reason: String,
    },
    /// The engine's latest state (older ones not yet sent are skipped).
    Snapshot {
        /// The engine's snapshot cut to the viewer's window.
        snapshot: Arc<Snapshot>,
        /// Events this viewer lost because it read too slowly.
        dropped_events: u64,
    },
    /// One engine event.
    Event(EngineEvent),
    /// The engine has stopped; the connection closes after this.
    Gone {
        /// Why, in words ("crawl finished: …", "engine stopped").
        reason: String,
    },
    /// Rows answering a `Read`, in order; more may follow.
    Rows(RowChunk),
    /// The `Read`'s answer is complete; the connection closes after this.
    End,
    /// The `Read` failed after the rows sent before; the connection closes
    /// after this.
    ReadFailed {
        /// Why, with the fix.
        reason: String,
    },
}

/// Rows of a read, each one JSON value as the engine serialized it (passed
/// through untouched, decoded only by the reader that knows their type).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RowChunk(pub Vec<Box<serde_json::value::RawValue>>);

impl PartialEq for RowChunk {
    fn eq(&self, other: &RowChunk) -> bool {
        self.0.len() == other.0.len()
            && self.0.iter().zip(&other.0).all(|(a, b)| a.get() == b.get())
    }
}

/// A byte stream framed into messages.
pub type Transport<S> = Framed<S, LengthDelimitedCodec>;

/// The protocol's framing: a 4-byte big-endian length, then that many
/// bytes, at most [`MAX_FRAME`]. Async transports and the blocking reads
/// client (`control::read_client`) both frame with this.
pub fn codec() -> LengthDelimitedCodec {
    LengthDelimitedCodec::builder()
        .max_frame_length(MAX_FRAME)
        .new_codec()
}

/// Frames `stream` with the protocol's length-delimited codec.
pub fn transport<S: AsyncRead + AsyncWrite>(stream: S) -> Transport<S> {
    Framed::new(stream, codec())
}

/// Errors of the wire: I/O, a frame that is not a message, or an early close.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    /// The socket failed (or a frame was longer than [`MAX_FRAME`]).
    #[error("control socket: {0}")]
    Io(#[from] std::io::Error),
    /// A frame did not hold a message of this protocol.
    #[error("control socket: a malformed message ({0})")]
    Malformed(#[from] serde_json::Error),
    /// The other side closed the connection.
    #[error("control socket: the other side closed the connection")]
    Closed,
}

/// One message as the payload of one frame.
pub fn encode<M: Serialize>(msg: &M) -> Result<Bytes, WireError> {
    Ok(serde_json::to_vec(msg)?.into())
}

/// Sends one message as one frame, on a whole transport or its write half.
pub async fn send<W, M>(wire: &mut W, msg: &M) -> Result<(), WireError>
where
    W: Sink<Bytes, Error = std::io::Error> + Unpin,
    M: Serialize,
{
    wire.send(encode(msg)?).await?;
    Ok(())
}

/// The next message, on a whole transport or its read half;
/// [`WireError::Closed`] at the end of the stream.
pub async fn recv<R, M>(wire: &mut R) -> Result<M, WireError>
where
    R: Stream<Item = Result<BytesMut, std::io::Error>> + Unpin,
    M: DeserializeOwned,
{
    match wire.next().await {
        Some(frame) => Ok(serde_json::from_slice(&frame?)?),
        None => Err(WireError::Closed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn messages_round_trip_through_frames() {
        let (a, b) = tokio::io::duplex(1 << 16);
        let (mut a, mut b) = (transport(a), transport(b));
        let hello = ClientMsg::Hello {
            version: PROTOCOL_VERSION,
            read_only: true,
        };
        send(&mut a, &hello).await.unwrap();
        assert_eq!(recv::<_, ClientMsg>(&mut b).await.unwrap(), hello);
        let snap = ServerMsg::Snapshot {
            snapshot: Arc::new(Snapshot::default()),
            dropped_events: 3,
        };
        send(&mut b, &snap).await.unwrap();
        assert_eq!(recv::<_, ServerMsg>(&mut a).await.unwrap(), snap);
        drop(b);
        assert!(matches!(
            recv::<_, ServerMsg>(&mut a).await,
            Err(WireError::Closed)
        ));
    }

    #[tokio::test]
    async fn a_read_and_its_rows_round_trip_with_the_rows_untouched() {
        // A tab or a newline in the argument is nothing special in JSON.
        let read = ClientMsg::Read {
            version: PROTOCOL_VERSION,
            verb: "pages".into(),
            arg: "http://a.example/\t\n".into(),
        };
        let decoded: ClientMsg = serde_json::from_slice(&encode(&read).unwrap()).unwrap();
        assert_eq!(decoded, read);
        let (a, b) = tokio::io::duplex(1 << 16);
        let (mut a, mut b) = (transport(a), transport(b));
        let rows = [r#"{"url":"http://a.example/","status":200}"#, r#"[1,"x"]"#];
        let raw = |row: &str| serde_json::value::RawValue::from_string(row.into()).unwrap();
        let chunk = ServerMsg::Rows(RowChunk(rows.iter().map(|r| raw(r)).collect()));
        send(&mut b, &chunk).await.unwrap();
        send(&mut b, &ServerMsg::End).await.unwrap();
        let ServerMsg::Rows(RowChunk(got)) = recv::<_, ServerMsg>(&mut a).await.unwrap() else {
            panic!("rows first")
        };
        let got: Vec<&str> = got.iter().map(|row| row.get()).collect();
        assert_eq!(got, rows, "each row as the engine wrote it");
        assert_eq!(recv::<_, ServerMsg>(&mut a).await.unwrap(), ServerMsg::End);
    }

    #[tokio::test]
    async fn garbage_and_oversized_frames_are_errors_not_panics() {
        let (a, b) = tokio::io::duplex(1 << 16);
        let mut b = transport(b);
        let mut raw = tokio_util::codec::FramedWrite::new(a, LengthDelimitedCodec::new());
        raw.send(Bytes::from_static(b"{not json")).await.unwrap();
        assert!(matches!(
            recv::<_, ClientMsg>(&mut b).await,
            Err(WireError::Malformed(_))
        ));
        // A length prefix past the limit is refused before anything is buffered.
        let mut raw = raw.into_inner();
        let huge = (MAX_FRAME as u32 + 1).to_be_bytes();
        tokio::io::AsyncWriteExt::write_all(&mut raw, &huge)
            .await
            .unwrap();
        assert!(matches!(
            recv::<_, ClientMsg>(&mut b).await,
            Err(WireError::Io(_))
        ));
    }
}
