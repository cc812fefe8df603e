use std::os::unix::fs::PermissionsExt;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::UnixStream;

use super::client::{self, loopback, Connection};
use super::hub::Hub;
use super::lock::DataDirLock;
use super::protocol::{recv, send, transport, ClientMsg, ServerMsg};
use super::server::{same_user, serve_connection, ControlSocket};
use crate::engine::control::{Command, CommandId, CommandResult, Target};
use crate::engine::telemetry::{CrawlState, EngineEvent, Level, Snapshot};
use crate::engine::EngineHandle;

fn log(message: &str) -> EngineEvent {
    EngineEvent::Log {
        level: Level::Info,
        message: message.into(),
    }
}

#[tokio::test]
async fn answers_go_to_the_issuer_and_every_viewer_sees_who_sent_it() {
    let (handle, mut engine) = EngineHandle::channel();
    let hub = Hub::new(handle);
    let mut one = hub.join(false, 16);
    let mut two = hub.join(false, 16);
    one.commands()
        .send(CommandId(7), Command::Pause(Target::Global));
    let (engine_id, cmd) = engine.commands.recv().await.unwrap();
    assert_eq!(cmd, Command::Pause(Target::Global));
    let announced = log(&format!("viewer {}: pause crawl", one.id));
    assert_eq!(two.events.recv().await.unwrap(), announced);
    assert_eq!(one.events.recv().await.unwrap(), announced);
    engine
        .events
        .send(EngineEvent::CommandDone(CommandResult {
            id: engine_id,
            outcome: Ok("paused".into()),
        }))
        .await
        .unwrap();
    engine.events.send(log("after")).await.unwrap();
    let answer = one.events.recv().await.unwrap();
    assert_eq!(
        answer,
        EngineEvent::CommandDone(CommandResult {
            id: CommandId(7),
            outcome: Ok("paused".into())
        })
    );
    // The other viewer gets the next event, not someone else's answer.
    assert_eq!(two.events.recv().await.unwrap(), log("after"));
}

#[tokio::test]
async fn a_viewer_that_joins_after_the_start_gets_the_settings_lines_first() {
    let (handle, engine) = EngineHandle::channel();
    let hub = Hub::new(handle);
    let mut early = hub.join(false, 16);
    let started = EngineEvent::StateChanged(CrawlState::Running);
    for event in [log("setting: running"), started.clone(), log("later")] {
        engine.events.send(event.clone()).await.unwrap();
        assert_eq!(early.events.recv().await.unwrap(), event);
    }
    let mut late = hub.join(false, 16);
    engine.events.send(log("after joining")).await.unwrap();
    assert_eq!(late.events.recv().await.unwrap(), log("setting: running"));
    assert_eq!(late.events.recv().await.unwrap(), log("after joining"));
    assert_eq!(early.events.recv().await.unwrap(), log("after joining"));
}

#[tokio::test]
async fn a_read_only_viewer_is_refused_every_command_that_changes_the_crawl() {
    let (handle, mut engine) = EngineHandle::channel();
    let hub = Hub::new(handle);
    let mut watcher = hub.join(true, 16);
    watcher
        .commands()
        .send(CommandId(1), Command::AddSeed("http://127.0.0.1/".into()));
    match watcher.events.recv().await.unwrap() {
        EngineEvent::CommandDone(CommandResult {
            id: CommandId(1),
            outcome: Err(why),
        }) => assert!(why.contains("read-only viewer"), "{why}"),
        other => panic!("{other:?}"),
    }
    watcher.commands().send(CommandId(2), Command::Checkpoint);
    assert_eq!(engine.commands.recv().await.unwrap().1, Command::Checkpoint);
}

#[tokio::test]
async fn a_viewer_that_does_not_read_loses_events_with_a_count_and_never_blocks_the_engine() {
    let (handle, engine) = EngineHandle::channel();
    let hub = Hub::new(handle);
    let stuck = hub.join(false, 2);
    let mut reading = hub.join(false, 64);
    for i in 0..10 {
        // `send` would wait if the hub waited for the stuck viewer.
        tokio::time::timeout(
            Duration::from_secs(5),
            engine.events.send(log(&i.to_string())),
        )
        .await
        .expect("the engine is never held up")
        .unwrap();
    }
    for i in 0..10 {
        assert_eq!(reading.events.recv().await.unwrap(), log(&i.to_string()));
    }
    assert_eq!(stuck.dropped.load(Ordering::Relaxed), 8);
}

#[tokio::test]
async fn a_viewer_of_another_protocol_version_is_refused_with_the_fix() {
    let (handle, _engine) = EngineHandle::channel();
    let (server_end, client_end) = UnixStream::pair().unwrap();
    tokio::spawn(serve_connection(Hub::new(handle), server_end));
    let mut wire = transport(client_end);
    let hello = ClientMsg::Hello {
        version: 999,
        read_only: false,
    };
    send(&mut wire, &hello).await.unwrap();
    match recv::<_, ServerMsg>(&mut wire).await.unwrap() {
        ServerMsg::Refused { reason } => {
            assert!(reason.contains("the viewer 999"), "{reason}");
            assert!(reason.contains("same crawldeck version"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn the_socket_is_private_and_other_users_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let lock = DataDirLock::acquire(dir.path()).unwrap();
    let (handle, _engine) = EngineHandle::channel();
    let server = ControlSocket::bind(lock.socket_path())
        .unwrap()
        .serve(Hub::new(handle));
    let mode = std::fs::metadata(server.path())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let own = rustix::process::geteuid().as_raw();
    assert!(same_user(own).is_ok());
    let refused = same_user(own.wrapping_add(1)).unwrap_err();
    assert!(refused.contains("is not the engine's user"), "{refused}");
    // This user connects; the welcome carries this process's pid.
    let connection = client::connect(dir.path(), true).await.unwrap();
    assert_eq!(connection.pid, std::process::id());
    drop(server);
    assert!(
        !lock.socket_path().exists(),
        "the socket goes with the server"
    );
}

/// The viewer's last event before its stream closed.
async fn last_event(viewer: &mut EngineHandle) -> Option<EngineEvent> {
    let mut last = None;
    while let Some(event) = viewer.events.recv().await {
        last = Some(event);
    }
    last
}

#[tokio::test]
async fn a_stopped_engine_reaches_the_viewer_as_engine_gone_then_a_closed_stream() {
    let (handle, engine) = EngineHandle::channel();
    let mut viewer = loopback(handle).await.unwrap();
    drop(engine);
    assert_eq!(
        last_event(&mut viewer).await,
        Some(EngineEvent::Ended {
            finished: false,
            reason: "the engine stopped".into()
        })
    );
}

#[tokio::test]
async fn a_finished_crawl_reaches_the_viewer_as_news_not_an_error() {
    let (handle, engine) = EngineHandle::channel();
    let mut viewer = loopback(handle).await.unwrap();
    let done = Snapshot {
        state: CrawlState::Done,
        finish_reason: Some("frontier empty".into()),
        ..Snapshot::default()
    };
    engine.snapshots.send_replace(Arc::new(done));
    drop(engine);
    assert_eq!(
        last_event(&mut viewer).await,
        Some(EngineEvent::Ended {
            finished: true,
            reason: "frontier empty".into()
        })
    );
}

#[tokio::test]
async fn one_shot_questions_get_the_snapshot_and_the_answer() {
    let (handle, mut engine) = EngineHandle::channel();
    let (server_end, client_end) = UnixStream::pair().unwrap();
    tokio::spawn(serve_connection(Hub::new(handle), server_end));
    let mut connection = Connection::handshake(client_end, false).await.unwrap();
    assert_eq!(
        connection.snapshot().await.unwrap().state,
        Default::default()
    );
    let asking = tokio::spawn(async move { connection.command(Command::Checkpoint).await });
    let (id, _) = engine.commands.recv().await.unwrap();
    let refusal = Err("disk full".to_string());
    let done = CommandResult {
        id,
        outcome: refusal.clone(),
    };
    engine
        .events
        .send(EngineEvent::CommandDone(done))
        .await
        .unwrap();
    assert_eq!(asking.await.unwrap().unwrap(), refusal);
}

#[tokio::test]
async fn drained_means_every_event_reached_the_local_viewer() {
    let (handle, engine) = EngineHandle::channel();
    let hub = Hub::new(handle);
    let mut local = hub.local_handle();
    for i in 0..5 {
        engine.events.send(log(&i.to_string())).await.unwrap();
    }
    drop(engine);
    hub.drained().await;
    for i in 0..5 {
        assert_eq!(local.events.try_recv().unwrap(), log(&i.to_string()));
    }
}

#[tokio::test]
async fn an_engine_that_exited_is_said_to_leave_a_socket_only_when_it_did() {
    let dir = tempfile::tempdir().unwrap();
    // Above any pid_max: never a live process.
    std::fs::write(dir.path().join(super::lock::LOCK_FILE), b"999999999\n").unwrap();
    let err = client::connect(dir.path(), true)
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("no crawl is running in"), "{err}");
    assert!(
        err.contains("its engine (pid 999999999) has exited; start it with"),
        "{err}"
    );
    assert!(!err.contains("stale socket"), "{err}");

    std::fs::write(dir.path().join(super::lock::SOCKET_FILE), b"").unwrap();
    let err = client::connect(dir.path(), true)
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("has exited and left a stale socket"), "{err}");
}
