//! The viewer's side of the control socket: connect to the engine of a data
//! directory, and either ask one thing (a snapshot, a command's answer) or
//! turn the connection into an [`EngineHandle`] shaped exactly like the
//! in-process one, so front ends do not care where the engine runs.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::UnixStream;
use tokio::sync::oneshot;

use super::lock::{recorded_engine, SOCKET_FILE};
use super::protocol::{
    recv, send, transport, ClientMsg, ServerMsg, Transport, WireError, PROTOCOL_VERSION,
};
use crate::engine::control::{Command, CommandId};
use crate::engine::socket_path::SocketPath;
use crate::engine::telemetry::{EngineEvent, Snapshot};
use crate::engine::EngineHandle;

/// How long the engine may take to answer the handshake or a question.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a viewer could not talk to an engine.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// Nothing answers on the data directory's socket.
    #[error("no crawl is running in {dir}: {detail}")]
    NotRunning {
        /// The data directory as given.
        dir: String,
        /// What was found instead, with the fix.
        detail: String,
    },
    /// The engine refused the connection.
    #[error("the engine refused the connection: {0}")]
    Refused(String),
    /// The engine did not answer in time.
    #[error("the engine did not answer within {0:?}")]
    Timeout(Duration),
    /// The engine stopped while we waited for it.
    #[error("engine gone: {0}")]
    Gone(String),
    /// The connection failed.
    #[error(transparent)]
    Wire(#[from] WireError),
}

/// A handshaken connection to an engine.
pub struct Connection<S = UnixStream> {
    wire: Transport<S>,
    /// This viewer's number, as the engine's log and other viewers name it.
    pub viewer: u32,
    /// The engine's process id.
    pub pid: u32,
    next_id: u64,
}

/// The control socket of a data directory.
pub fn socket_path(dir: &Path) -> PathBuf {
    dir.join(SOCKET_FILE)
}

/// Connects to the engine running in `dir`.
pub async fn connect(dir: &Path, read_only: bool) -> Result<Connection, ClientError> {
    let path = socket_path(dir);
    let short = SocketPath::new(&path).map_err(|e| not_running(dir, &e))?;
    let stream = UnixStream::connect(short.as_path())
        .await
        .map_err(|e| not_running(dir, &e))?;
    Connection::handshake(stream, read_only).await
}

/// Explains a failed connect: no socket, a dead engine, or one that does not answer.
fn not_running(dir: &Path, error: &std::io::Error) -> ClientError {
    let shown = dir.display().to_string();
    let start = format!(
        "start it with `crawldeck crawl --headless --data {shown} URL` (or without URL to resume)"
    );
    let detail = match recorded_engine(dir) {
        Some((pid, true)) => format!(
            "pid {pid} holds it but its control socket does not answer ({error}); it may be starting or stopping"
        ),
        // A clean exit removes the socket; only a crash leaves one.
        Some((pid, false)) if socket_path(dir).exists() => format!(
            "its engine (pid {pid}) has exited and left a stale socket, which the next crawl there removes; {start}"
        ),
        Some((pid, false)) => format!("its engine (pid {pid}) has exited; {start}"),
        None => format!("no engine has run there ({error}); {start}"),
    };
    ClientError::NotRunning { dir: shown, detail }
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send + 'static> Connection<S> {
    /// Says hello on `stream` and waits for the engine's welcome.
    pub async fn handshake(stream: S, read_only: bool) -> Result<Connection<S>, ClientError> {
        let mut wire = transport(stream);
        let hello = ClientMsg::Hello {
            version: PROTOCOL_VERSION,
            read_only,
        };
        send(&mut wire, &hello).await?;
        match answer(recv::<_, ServerMsg>(&mut wire)).await?? {
            ServerMsg::Welcome { viewer, pid, .. } => Ok(Connection {
                wire,
                viewer,
                pid,
                next_id: 1,
            }),
            ServerMsg::Refused { reason } => Err(ClientError::Refused(reason)),
            other => Err(ClientError::Refused(format!(
                "expected a welcome, got {other:?}"
            ))),
        }
    }

    /// The engine's current state.
    pub async fn snapshot(&mut self) -> Result<Arc<Snapshot>, ClientError> {
        loop {
            match answer(recv::<_, ServerMsg>(&mut self.wire)).await?? {
                ServerMsg::Snapshot { snapshot, .. } => return Ok(snapshot),
                ServerMsg::Gone { reason } => return Err(ClientError::Gone(reason)),
                _ => {}
            }
        }
    }

    /// Sends `command` and waits for the engine's answer: `Ok(summary)` or
    /// `Err(why nothing changed)`.
    pub async fn command(
        &mut self,
        command: Command,
    ) -> Result<Result<String, String>, ClientError> {
        let id = CommandId(self.next_id);
        self.next_id += 1;
        send(&mut self.wire, &ClientMsg::Command { id, command }).await?;
        loop {
            match answer(recv::<_, ServerMsg>(&mut self.wire)).await?? {
                ServerMsg::Event(EngineEvent::CommandDone(done)) if done.id == id => {
                    return Ok(done.outcome)
                }
                ServerMsg::Gone { reason } => return Err(ClientError::Gone(reason)),
                _ => {}
            }
        }
    }

    /// Hands the connection to a task that feeds an [`EngineHandle`]; the
    /// receiver gets why the engine went away (never sent if the handle's
    /// owner left first).
    pub fn into_handle(self) -> (EngineHandle, oneshot::Receiver<String>) {
        let (handle, ends) = EngineHandle::channel();
        let (gone_tx, gone_rx) = oneshot::channel();
        let pid = self.pid;
        tokio::spawn(async move {
            if let Some(reason) = super::pump::run(self.wire, ends, pid).await {
                let _ = gone_tx.send(reason);
            }
        });
        (handle, gone_rx)
    }
}

/// Waits at most [`ANSWER_TIMEOUT`] for the engine.
async fn answer<T>(fut: impl std::future::Future<Output = T>) -> Result<T, ClientError> {
    tokio::time::timeout(ANSWER_TIMEOUT, fut)
        .await
        .map_err(|_| ClientError::Timeout(ANSWER_TIMEOUT))
}

/// `engine` served over a fresh socket pair and handed back as a viewer in
/// another process would hold it: tests run front ends through this to
/// prove they behave the same over the wire.
pub async fn loopback(engine: EngineHandle) -> Result<EngineHandle, ClientError> {
    let (server_end, client_end) = UnixStream::pair().map_err(WireError::from)?;
    let hub = super::hub::Hub::new(engine);
    tokio::spawn(super::server::serve_connection(hub, server_end));
    let connection = Connection::handshake(client_end, false).await?;
    Ok(connection.into_handle().0)
}
