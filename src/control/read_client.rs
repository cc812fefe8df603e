//! The reader's side of a `Read` connection, blocking: listings run on
//! threads (`crawldeck pages`, the TUI's and the cluster's readers), through
//! [`super::results::Results`]. The frames are the protocol's own
//! ([`super::protocol::codec`]), read from a plain Unix stream.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;

use bytes::BytesMut;
use serde_json::value::RawValue;
use tokio_util::codec::{Decoder, Encoder, LengthDelimitedCodec};

use super::client::socket_path;
use super::protocol::{codec, encode, ClientMsg, RowChunk, ServerMsg, PROTOCOL_VERSION};
use super::reads::IDLE_LIMIT;
use crate::engine::socket_path::SocketPath;

/// Bytes read from the socket at a time.
const READ_BUFFER: usize = 64 * 1024;

/// Where a streamed read's rows come from, a chunk at a time.
pub trait Chunks {
    /// One row.
    type Row;
    /// The next chunk of rows, `None` after the last, or why the read broke off.
    fn next_chunk(&mut self) -> Result<Option<Vec<Self::Row>>, String>;
}

/// A streamed read's rows, chunk after chunk; ends after the last row, or
/// with one error.
pub struct Rows<C: Chunks> {
    chunks: C,
    rows: VecDeque<C::Row>,
    done: bool,
}

impl<C: Chunks> Rows<C> {
    /// The rows of `chunks`.
    pub fn new(chunks: C) -> Rows<C> {
        Rows {
            chunks,
            rows: VecDeque::new(),
            done: false,
        }
    }
}

impl<C: Chunks> Iterator for Rows<C> {
    type Item = Result<C::Row, String>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(row) = self.rows.pop_front() {
                return Some(Ok(row));
            }
            if self.done {
                return None;
            }
            match self.chunks.next_chunk() {
                Ok(Some(rows)) => self.rows.extend(rows),
                Ok(None) => self.done = true,
                Err(why) => {
                    self.done = true;
                    return Some(Err(why));
                }
            }
        }
    }
}

/// The answer to one read, row by row as the engine streams it; ends after
/// the last row, or with one error (the engine's, or the connection's).
pub type ReadAnswer = Rows<Frames>;

/// The frames of one read's answer on the control socket.
pub struct Frames {
    stream: UnixStream,
    codec: LengthDelimitedCodec,
    received: BytesMut,
    buffer: Vec<u8>,
}

/// Asks the engine running in `dir` to read `verb arg`.
pub fn read(dir: &Path, verb: &str, arg: &str) -> Result<ReadAnswer, String> {
    let path = socket_path(dir);
    let mut stream = SocketPath::new(&path)
        .and_then(|short| UnixStream::connect(short.as_path()))
        .map_err(|e| format!("cannot connect to {}: {e}", path.display()))?;
    let request = ClientMsg::Read {
        version: PROTOCOL_VERSION,
        verb: verb.to_string(),
        arg: arg.to_string(),
    };
    let mut codec = codec();
    let mut frame = BytesMut::new();
    let payload = encode(&request).map_err(|e| e.to_string())?;
    codec
        .encode(payload, &mut frame)
        .and_then(|()| stream.set_read_timeout(Some(IDLE_LIMIT)))
        .and_then(|()| stream.set_write_timeout(Some(IDLE_LIMIT)))
        .and_then(|()| stream.write_all(&frame))
        .map_err(|e| format!("cannot ask {}: {e}", path.display()))?;
    Ok(Rows::new(Frames {
        stream,
        codec,
        received: BytesMut::new(),
        buffer: vec![0; READ_BUFFER],
    }))
}

impl Chunks for Frames {
    type Row = Box<RawValue>;

    fn next_chunk(&mut self) -> Result<Option<Vec<Box<RawValue>>>, String> {
        match self.next_message()? {
            ServerMsg::Rows(RowChunk(rows)) => Ok(Some(rows)),
            ServerMsg::End => Ok(None),
            ServerMsg::ReadFailed { reason }
            | ServerMsg::Refused { reason }
            | ServerMsg::Gone { reason } => Err(reason),
            _ => Err("the engine answered a read with a viewer's message".into()),
        }
    }
}

impl Frames {
    /// The next whole frame's message, reading as much as it takes.
    fn next_message(&mut self) -> Result<ServerMsg, String> {
        loop {
            let frame = self
                .codec
                .decode(&mut self.received)
                .map_err(|e| format!("control socket: {e}"))?;
            if let Some(frame) = frame {
                return serde_json::from_slice(&frame)
                    .map_err(|e| format!("control socket: a malformed message ({e})"));
            }
            match self.stream.read(&mut self.buffer) {
                Ok(0) => return Err("the engine closed the connection early".into()),
                Ok(n) => self.received.extend_from_slice(&self.buffer[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(format!("control socket: {e}")),
            }
        }
    }
}
