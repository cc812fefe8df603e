//! The run loop against a fake engine and a test backend: keys in, commands out,
//! and the quit handshake (checkpoint, shutdown, wait for the engine).

use std::sync::Arc;

use crawldeck::engine::control::{Command, PatternKind, RuleSpec, Target};
use crawldeck::engine::telemetry::{CrawlState, EngineEvent, Level, Snapshot};
use crawldeck::engine::EngineHandle;
use crawldeck::tui::app::drive;
use crawldeck::tui::keys::keymap_from_str;
use crawldeck::tui::model::Model;
use crawldeck::tui::TuiExit;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use tokio::sync::mpsc;

fn key(code: KeyCode) -> Event {
    Event::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

fn chars(text: &str) -> Vec<Event> {
    text.chars().map(|c| key(KeyCode::Char(c))).collect()
}

#[tokio::test(start_paused = true)]
async fn keys_become_commands_and_quit_waits_for_the_engine() {
    let (handle, mut engine) = EngineHandle::channel();
    engine
        .snapshots
        .send(Arc::new(Snapshot {
            state: CrawlState::Running,
            ..Default::default()
        }))
        .unwrap();
    let (input_tx, input_rx) = mpsc::channel(64);
    let model = Model::new(keymap_from_str("").0, false, true);
    let ui = tokio::spawn(async move {
        let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
        let exit = drive(
            &mut terminal,
            handle,
            model,
            input_rx,
            std::future::pending(),
        )
        .await;
        (exit.unwrap(), terminal)
    });

    let mut typed = vec![key(KeyCode::Char('b'))];
    typed.extend(chars("/cal.*"));
    typed.push(key(KeyCode::Enter));
    typed.push(key(KeyCode::Char('p')));
    for ev in typed {
        input_tx.send(ev).await.unwrap();
    }
    let (_, cmd) = engine.commands.recv().await.unwrap();
    assert_eq!(
        cmd,
        Command::AddRule(RuleSpec {
            kind: PatternKind::Regex,
            pattern: "/cal.*".into(),
            host: None
        })
    );
    let (_, cmd) = engine.commands.recv().await.unwrap();
    assert_eq!(cmd, Command::Pause(Target::Global));

    // Quit asks first, then checkpoints and shuts down.
    input_tx.send(key(KeyCode::Char('q'))).await.unwrap();
    input_tx.send(key(KeyCode::Char('y'))).await.unwrap();
    assert_eq!(engine.commands.recv().await.unwrap().1, Command::Checkpoint);
    assert_eq!(engine.commands.recv().await.unwrap().1, Command::Shutdown);
    tokio::time::sleep(std::time::Duration::from_secs(5)).await;
    assert!(!ui.is_finished(), "the UI waits for the engine to finish");

    engine
        .events
        .send(EngineEvent::Log {
            level: Level::Info,
            message: "checkpoint written".into(),
        })
        .await
        .unwrap();
    drop(engine.events);
    let (exit, terminal) = ui.await.unwrap();
    assert_eq!(exit, TuiExit::Quit);
    // Drawn while waiting: the visible checkpointing state.
    let screen: String = terminal
        .backend()
        .buffer()
        .content()
        .iter()
        .map(|c| c.symbol())
        .collect();
    assert!(screen.contains("checkpointing…"), "{screen}");
}

#[tokio::test(start_paused = true)]
async fn quit_gives_up_waiting_after_a_bounded_time() {
    let (handle, mut engine) = EngineHandle::channel();
    let (input_tx, input_rx) = mpsc::channel(8);
    let model = Model::new(keymap_from_str("").0, true, true);
    let ui = tokio::spawn(async move {
        let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
        drive(
            &mut terminal,
            handle,
            model,
            input_rx,
            std::future::pending(),
        )
        .await
        .unwrap()
    });
    input_tx
        .send(Event::Key(KeyEvent::new(
            KeyCode::Char('c'),
            KeyModifiers::CONTROL,
        )))
        .await
        .unwrap();
    assert_eq!(engine.commands.recv().await.unwrap().1, Command::Checkpoint);
    // The engine never answers; paused time runs to the deadline.
    assert_eq!(ui.await.unwrap(), TuiExit::Quit);
    drop(engine);
}

#[tokio::test(start_paused = true)]
async fn sigterm_checkpoints_like_ctrl_c() {
    let (handle, mut engine) = EngineHandle::channel();
    let (_input_tx, input_rx) = mpsc::channel(8);
    let model = Model::new(keymap_from_str("").0, false, true);
    let (term_tx, term_rx) = tokio::sync::oneshot::channel::<()>();
    let ui = tokio::spawn(async move {
        let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
        let terminate = async move {
            let _ = term_rx.await;
        };
        drive(&mut terminal, handle, model, input_rx, terminate)
            .await
            .unwrap()
    });
    term_tx.send(()).unwrap();
    assert_eq!(engine.commands.recv().await.unwrap().1, Command::Checkpoint);
    assert_eq!(engine.commands.recv().await.unwrap().1, Command::Shutdown);
    drop(engine.events);
    assert_eq!(ui.await.unwrap(), TuiExit::Quit);
}
