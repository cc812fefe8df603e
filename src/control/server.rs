//! The engine's side of the control socket: accept viewers of this user only,
//! shake hands, then for each connection forward its commands to the hub and
//! write snapshots (latest wins, cut to the viewer's hosts window) and events
//! (bounded, dropped with a count; fetches only of the open detail host) until
//! the engine stops or the viewer leaves. A viewer that vanishes changes
//! nothing in the crawl. A connection that opens with `Read` is served by
//! `reads` instead: one read of the results, no viewer.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::hub::{Hub, Viewer, VIEWER_QUEUE};
use super::protocol::{recv, send, transport, ClientMsg, ServerMsg, WireError, PROTOCOL_VERSION};
use crate::engine::host_window::HostWindow;
use crate::engine::socket_path::SocketPath;
use crate::engine::telemetry::{CrawlState, EngineEvent, Snapshot};

/// How long a new connection may take to say hello.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

/// The control socket, bound before the engine starts so that a socket
/// that cannot be had stops the command before anything runs; dropping it
/// removes the file.
pub struct ControlSocket {
    path: PathBuf,
    listener: Option<UnixListener>,
}

impl Drop for ControlSocket {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

impl ControlSocket {
    /// Listens on `path` (which the caller's [`super::lock::DataDirLock`]
    /// has cleared), mode 0600; a path of any length.
    pub fn bind(path: &Path) -> std::io::Result<ControlSocket> {
        let listener = SocketPath::new(path)
            .and_then(|short| UnixListener::bind(short.as_path()))
            .map_err(|e| {
                std::io::Error::new(
                    e.kind(),
                    format!(
                        "cannot listen on the control socket {}: {e}",
                        path.display()
                    ),
                )
            })?;
        let socket = ControlSocket {
            path: path.to_path_buf(),
            listener: Some(listener),
        };
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
        tracing::info!(socket = %path.display(), "control socket listening");
        Ok(socket)
    }

    /// Accepts the viewers of `hub`'s engine from now on.
    pub fn serve(mut self, hub: Hub) -> ControlServer {
        let listener = self.listener.take().expect("a socket is served once");
        ControlServer {
            accept: tokio::spawn(accept_loop(hub, listener)),
            socket: self,
        }
    }

    /// Where the socket is.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The control socket serving an engine; dropping it stops accepting and
/// removes the file.
pub struct ControlServer {
    socket: ControlSocket,
    accept: JoinHandle<()>,
}

impl Drop for ControlServer {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

impl ControlServer {
    /// Where the socket is.
    pub fn path(&self) -> &Path {
        self.socket.path()
    }
}

async fn accept_loop(hub: Hub, listener: UnixListener) {
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of file descriptors and the like: wait, then go on.
                tracing::warn!("control socket: accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        if let Err(why) = check_peer(&stream) {
            tracing::warn!("control socket: refused a connection: {why}");
            continue;
        }
        let hub = hub.clone();
        tokio::spawn(async move {
            if let Err(e) = serve_connection(hub, stream).await {
                tracing::info!("control socket: a connection ended: {e}");
            }
        });
    }
}

/// Only this user's processes may steer the crawl (the 0600 mode says the
/// same; this holds even if the mode is loosened).
pub fn check_peer(stream: &UnixStream) -> Result<(), String> {
    let peer = stream
        .peer_cred()
        .map_err(|e| format!("cannot read the peer's credentials: {e}"))?;
    same_user(peer.uid())
}

/// Whether `uid` is this process's effective user.
pub fn same_user(uid: u32) -> Result<(), String> {
    let own = rustix::process::geteuid().as_raw();
    if uid == own {
        Ok(())
    } else {
        Err(format!("uid {uid} is not the engine's user (uid {own})"))
    }
}

/// Serves one viewer on any byte stream until it leaves or the engine stops,
/// or one read of the results when the connection opens with `Read`.
pub async fn serve_connection<S>(hub: Hub, stream: S) -> Result<(), WireError>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let mut wire = transport(stream);
    let hello = tokio::time::timeout(HANDSHAKE_TIMEOUT, recv::<_, ClientMsg>(&mut wire))
        .await
        .map_err(|_| WireError::Closed)??;
    let read_only = match hello {
        ClientMsg::Hello { version, .. } if version != PROTOCOL_VERSION => {
            let reason = format!(
                "this engine speaks control protocol {PROTOCOL_VERSION}, the viewer {version}; attach with the same crawldeck version as the running crawl"
            );
            return send(&mut wire, &ServerMsg::Refused { reason }).await;
        }
        ClientMsg::Read { version, .. } if version != PROTOCOL_VERSION => {
            let reason = format!(
                "this engine speaks control protocol {PROTOCOL_VERSION}, the reader {version}; read the crawl with the same crawldeck version as runs it"
            );
            return send(&mut wire, &ServerMsg::Refused { reason }).await;
        }
        ClientMsg::Hello { read_only, .. } => read_only,
        ClientMsg::Read { verb, arg, .. } => {
            return super::reads::serve_read(&hub, verb, arg, wire).await;
        }
        ClientMsg::Command { .. } | ClientMsg::Window(_) => {
            let reason = "a connection must start with Hello or Read".to_string();
            return send(&mut wire, &ServerMsg::Refused { reason }).await;
        }
    };
    let viewer = hub.join(read_only, VIEWER_QUEUE);
    tracing::info!(viewer = viewer.id, read_only, "viewer attached");
    let welcome = ServerMsg::Welcome {
        version: PROTOCOL_VERSION,
        viewer: viewer.id,
        pid: std::process::id(),
    };
    send(&mut wire, &welcome).await?;
    let (mut sink, mut incoming) = wire.split();
    let commands = viewer.commands();
    let id = viewer.id;
    let (window_tx, window) = watch::channel(HostWindow::default());
    let mut reader = tokio::spawn(async move {
        loop {
            match recv::<_, ClientMsg>(&mut incoming).await {
                Ok(ClientMsg::Command { id, command }) => commands.send(id, command),
                Ok(ClientMsg::Window(asked)) => {
                    window_tx.send_replace(asked.bounded());
                }
                Ok(ClientMsg::Hello { .. } | ClientMsg::Read { .. }) => {}
                Err(e) => return e,
            }
        }
    });
    let result = write_updates(viewer, window, &mut sink, &mut reader).await;
    reader.abort();
    tracing::info!(viewer = id, "viewer detached");
    result
}

/// Writes snapshots (again at once when the viewer's window changes) and
/// events to the viewer until the engine stops (then a last snapshot and
/// `Gone`) or the viewer's reader ends.
async fn write_updates<W>(
    mut viewer: Viewer,
    mut window: watch::Receiver<HostWindow>,
    sink: &mut W,
    reader: &mut JoinHandle<WireError>,
) -> Result<(), WireError>
where
    W: futures_util::Sink<bytes::Bytes, Error = std::io::Error> + Unpin,
{
    viewer.snapshots.mark_changed();
    let mut snapshots_open = true;
    let mut window_open = true;
    loop {
        tokio::select! {
            event = viewer.events.recv() => match event {
                Some(event) if for_window(&event, &window.borrow()) => {
                    send(sink, &ServerMsg::Event(event)).await?
                }
                Some(_) => {}
                None => break,
            },
            changed = viewer.snapshots.changed(), if snapshots_open => match changed {
                Ok(()) => {
                    let whole = viewer.snapshots.borrow_and_update().clone();
                    let msg = snapshot_msg(&viewer, &whole, &window.borrow());
                    send(sink, &msg).await?;
                }
                Err(_) => snapshots_open = false,
            },
            changed = window.changed(), if window_open => match changed {
                Ok(()) => {
                    let whole = viewer.snapshots.borrow().clone();
                    let msg = snapshot_msg(&viewer, &whole, &window.borrow_and_update());
                    send(sink, &msg).await?;
                }
                // The reader has ended; it says why below.
                Err(_) => window_open = false,
            },
            left = &mut *reader => {
                return match left {
                    Ok(WireError::Closed) | Err(_) => Ok(()),
                    Ok(e) => Err(e),
                };
            }
        }
    }
    let last = viewer.snapshots.borrow().clone();
    let reason = gone_reason(&last);
    let msg = snapshot_msg(&viewer, &last, &window.borrow());
    send(sink, &msg).await?;
    send(sink, &ServerMsg::Gone { reason }).await
}

/// Whether the viewer gets `event`: a fetch is part of its host's detail,
/// sent only while that detail is open; every other event goes to all.
fn for_window(event: &EngineEvent, window: &HostWindow) -> bool {
    match event {
        EngineEvent::Fetched { host, .. } => window.detail.as_ref() == Some(host),
        _ => true,
    }
}

/// `whole` cut to the viewer's window, with the events it has lost.
fn snapshot_msg(viewer: &Viewer, whole: &Snapshot, window: &HostWindow) -> ServerMsg {
    ServerMsg::Snapshot {
        snapshot: Arc::new(whole.windowed(window)),
        dropped_events: viewer.dropped.load(Ordering::Relaxed),
    }
}

/// How a viewer is told the crawl ended as it should (not an error).
pub const FINISHED: &str = "the crawl finished";

fn gone_reason(last: &Arc<Snapshot>) -> String {
    match (&last.state, &last.finish_reason) {
        (CrawlState::Done, Some(why)) => format!("{FINISHED}: {why}"),
        _ => "the engine stopped".into(),
    }
}
