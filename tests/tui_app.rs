//! The run loop against a fake engine and a test backend: keys in, commands out,
//! and the quit handshake (checkpoint, shutdown, wait for the engine). Each
//! test runs twice: with the engine in-process, and over the control socket.

use std::sync::Arc;

use crawldeck::control::client::loopback;
use crawldeck::engine::control::{Command, CommandResult, PatternKind, RuleSpec, Target};
use crawldeck::engine::telemetry::{CrawlState, EngineEvent, Level, Snapshot};
use crawldeck::engine::{EngineEnds, EngineHandle};
use crawldeck::tui::app::drive;
use crawldeck::tui::keys::keymap_from_str;
use crawldeck::tui::model::Model;
use crawldeck::tui::TuiExit;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use tokio::sync::mpsc;

/// A fake engine: its handle in-process, or as a viewer over the control socket sees it.
async fn fake_engine(over_socket: bool) -> (EngineHandle, EngineEnds) {
    let (handle, ends) = EngineHandle::channel();
    if !over_socket {
        return (handle, ends);
    }
    let remote = loopback(handle).await.expect("loopback connects");
    (remote, ends)
}

/// Runs `$body(over_socket)` as two tests.
macro_rules! both_ways {
    ($body:ident: $in_process:ident, $over_socket:ident) => {
        #[tokio::test(start_paused = true)]
        async fn $in_process() {
            $body(false).await
        }
        #[tokio::test(start_paused = true)]
        async fn $over_socket() {
            $body(true).await
        }
    };
}

/// Every cell of the last frame, row after row.
fn screen_text(terminal: &Terminal<TestBackend>) -> String {
    terminal
        .backend()
        .buffer()
        .content()
        .iter()
        .map(|c| c.symbol())
        .collect()
}

fn key(code: KeyCode) -> Event {
    Event::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

fn chars(text: &str) -> Vec<Event> {
    text.chars().map(|c| key(KeyCode::Char(c))).collect()
}

both_ways!(keys_become_commands_and_quit_waits_for_the_engine:
    keys_become_commands_and_quit_waits_for_the_engine_in_process,
    keys_become_commands_and_quit_waits_for_the_engine_over_the_socket);

async fn keys_become_commands_and_quit_waits_for_the_engine(over_socket: bool) {
    let (handle, mut engine) = fake_engine(over_socket).await;
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
    let screen = screen_text(&terminal);
    assert!(screen.contains("checkpointing…"), "{screen}");
}

both_ways!(quit_gives_up_waiting_after_a_bounded_time:
    quit_gives_up_waiting_after_a_bounded_time_in_process,
    quit_gives_up_waiting_after_a_bounded_time_over_the_socket);

async fn quit_gives_up_waiting_after_a_bounded_time(over_socket: bool) {
    let (handle, mut engine) = fake_engine(over_socket).await;
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

both_ways!(sigterm_checkpoints_like_ctrl_c:
    sigterm_checkpoints_like_ctrl_c_in_process,
    sigterm_checkpoints_like_ctrl_c_over_the_socket);

async fn sigterm_checkpoints_like_ctrl_c(over_socket: bool) {
    let (handle, mut engine) = fake_engine(over_socket).await;
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

/// Runs the UI as a viewer attached to an engine in another process.
fn attached_ui(
    handle: EngineHandle,
    readonly: bool,
    terminate: tokio::sync::oneshot::Receiver<()>,
) -> (mpsc::Sender<Event>, tokio::task::JoinHandle<TuiExit>) {
    let (input_tx, input_rx) = mpsc::channel(8);
    let mut model = Model::new(keymap_from_str("").0, readonly, true);
    model.attached = true;
    let ui = tokio::spawn(async move {
        let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
        let terminate = async move {
            if terminate.await.is_err() {
                std::future::pending::<()>().await;
            }
        };
        drive(&mut terminal, handle, model, input_rx, terminate)
            .await
            .unwrap()
    });
    (input_tx, ui)
}

#[tokio::test(start_paused = true)]
async fn an_attached_viewer_detaches_by_default_and_the_crawl_is_left_alone() {
    let (handle, mut engine) = fake_engine(true).await;
    let (_term_tx, term_rx) = tokio::sync::oneshot::channel();
    let (input, ui) = attached_ui(handle, false, term_rx);
    input.send(key(KeyCode::Char('q'))).await.unwrap();
    input.send(key(KeyCode::Enter)).await.unwrap();
    assert_eq!(ui.await.unwrap(), TuiExit::Detach);
    assert!(
        engine.commands.try_recv().is_err(),
        "detaching sends nothing"
    );

    // So does Ctrl-C: it never stops a crawl others may be watching.
    let (handle, mut engine) = fake_engine(true).await;
    let (_term_tx, term_rx) = tokio::sync::oneshot::channel();
    let (input, ui) = attached_ui(handle, false, term_rx);
    let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
    input.send(Event::Key(ctrl_c)).await.unwrap();
    assert_eq!(ui.await.unwrap(), TuiExit::Detach);
    assert!(engine.commands.try_recv().is_err());

    // A signal to a viewer detaches it too.
    let (handle, mut engine) = fake_engine(true).await;
    let (term_tx, term_rx) = tokio::sync::oneshot::channel();
    let (_input, ui) = attached_ui(handle, false, term_rx);
    term_tx.send(()).unwrap();
    assert_eq!(ui.await.unwrap(), TuiExit::Detach);
    assert!(engine.commands.try_recv().is_err());
}

#[tokio::test(start_paused = true)]
async fn an_attached_viewer_stops_the_crawl_with_s_unless_read_only() {
    let (handle, mut engine) = fake_engine(true).await;
    let (_term_tx, term_rx) = tokio::sync::oneshot::channel();
    let (input, ui) = attached_ui(handle, false, term_rx);
    input.send(key(KeyCode::Char('q'))).await.unwrap();
    input.send(key(KeyCode::Char('s'))).await.unwrap();
    assert_eq!(engine.commands.recv().await.unwrap().1, Command::Checkpoint);
    assert_eq!(engine.commands.recv().await.unwrap().1, Command::Shutdown);
    drop(engine.events);
    assert_eq!(ui.await.unwrap(), TuiExit::Quit);

    let (handle, mut engine) = fake_engine(true).await;
    let (_term_tx, term_rx) = tokio::sync::oneshot::channel();
    let (input, ui) = attached_ui(handle, true, term_rx);
    for c in ['q', 's', 'p', 'q', 'd'] {
        input.send(key(KeyCode::Char(c))).await.unwrap();
    }
    assert_eq!(ui.await.unwrap(), TuiExit::Detach);
    assert!(
        engine.commands.try_recv().is_err(),
        "a read-only viewer neither stops nor pauses the crawl"
    );
}

both_ways!(a_rule_prompt_shows_its_preview_before_enter:
    a_rule_prompt_shows_its_preview_before_enter_in_process,
    a_rule_prompt_shows_its_preview_before_enter_over_the_socket);

async fn a_rule_prompt_shows_its_preview_before_enter(over_socket: bool) {
    let (handle, mut engine) = fake_engine(over_socket).await;
    let (input, input_rx) = mpsc::channel(8);
    let (term_tx, term_rx) = tokio::sync::oneshot::channel::<()>();
    let mut model = Model::new(keymap_from_str("").0, false, true);
    // Attached, a signal leaves at once with the prompt still open on screen.
    model.attached = true;
    let ui = tokio::spawn(async move {
        let mut terminal = Terminal::new(TestBackend::new(100, 30)).unwrap();
        let terminate = async move {
            let _ = term_rx.await;
        };
        let exit = drive(&mut terminal, handle, model, input_rx, terminate).await;
        (exit.unwrap(), terminal)
    });
    let pause = std::time::Duration::from_millis(100);
    // Typed with short pauses, then an invalid pattern: nothing is asked.
    for ev in std::iter::once(key(KeyCode::Char('b'))).chain(chars("cal(")) {
        input.send(ev).await.unwrap();
        tokio::time::sleep(pause).await;
    }
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    assert!(engine.commands.try_recv().is_err(), "no preview of cal(");

    // Fixed: one preview, once typing has paused for the debounce.
    input.send(key(KeyCode::Backspace)).await.unwrap();
    let typed_at = tokio::time::Instant::now();
    let (id, cmd) = engine.commands.recv().await.unwrap();
    assert!(typed_at.elapsed() >= std::time::Duration::from_millis(300));
    let rule = RuleSpec {
        kind: PatternKind::Regex,
        pattern: "cal".into(),
        host: None,
    };
    assert_eq!(cmd, Command::Preview(rule));
    let answer = "regex cal matches 2 queued, 0 parked, 1 fetched URL(s)\n  shop.test: 2 queued, 0 parked, 1 fetched\n    http://shop.test/cal/1";
    engine
        .events
        .send(EngineEvent::CommandDone(CommandResult {
            id,
            outcome: Ok(answer.into()),
        }))
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    assert!(engine.commands.try_recv().is_err(), "asked once");

    term_tx.send(()).unwrap();
    let (exit, terminal) = ui.await.unwrap();
    assert_eq!(exit, TuiExit::Detach);
    let screen = screen_text(&terminal);
    assert!(
        screen.contains("blacklist regex: cal "),
        "the prompt is open: {screen}"
    );
    for line in answer.lines() {
        assert!(screen.contains(line), "{line:?} not on screen: {screen}");
    }
}

both_ways!(a_fresh_alert_becomes_a_rule_in_three_keys_with_its_preview_first:
    a_fresh_alert_becomes_a_rule_in_three_keys_with_its_preview_first_in_process,
    a_fresh_alert_becomes_a_rule_in_three_keys_with_its_preview_first_over_the_socket);

/// `2` (alerts pane), `e` (edit the suggested rule), then `Enter` when
/// `press_enter`: returns the commands the engine got and the last screen.
/// The engine answers the preview it is asked for.
async fn alert_keys(over_socket: bool, press_enter: bool) -> (Vec<Command>, String) {
    use crawldeck::engine::telemetry::{AlertStatus, RuleImpact, TrapAlert, TrapKind};
    let (handle, mut engine) = fake_engine(over_socket).await;
    let rule = RuleSpec {
        kind: PatternKind::Regex,
        pattern: r"^https?://manual\.test/docs/gone\-[0-9a-f]+\.html$".into(),
        host: Some("manual.test".into()),
    };
    let alert = TrapAlert {
        id: 1,
        host: "manual.test".into(),
        kind: TrapKind::SoftNotFound,
        evidence_count: 21,
        last_seen: 0,
        samples: vec!["http://manual.test/crawldeck-probe-0a1b.html".into()],
        suggested_rule: rule.clone(),
        matching_queued: 40,
        status: AlertStatus::Open,
        impact: Some(RuleImpact {
            parked: 40,
            ..RuleImpact::default()
        }),
    };
    engine
        .snapshots
        .send(Arc::new(Snapshot {
            state: CrawlState::Running,
            alerts: vec![alert],
            ..Default::default()
        }))
        .unwrap();
    let (input, input_rx) = mpsc::channel(8);
    let (term_tx, term_rx) = tokio::sync::oneshot::channel::<()>();
    let mut model = Model::new(keymap_from_str("").0, false, true);
    model.attached = true;
    let ui = tokio::spawn(async move {
        let mut terminal = Terminal::new(TestBackend::new(120, 36)).unwrap();
        let terminate = async move {
            let _ = term_rx.await;
        };
        let exit = drive(&mut terminal, handle, model, input_rx, terminate).await;
        (exit.unwrap(), terminal)
    });
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    for c in ['2', 'e'] {
        input.send(key(KeyCode::Char(c))).await.unwrap();
    }
    let (id, cmd) = engine.commands.recv().await.unwrap();
    assert_eq!(cmd, Command::Preview(rule));
    let answer = "matches 0 queued, 40 parked, 0 fetched URL(s)";
    engine
        .events
        .send(EngineEvent::CommandDone(CommandResult {
            id,
            outcome: Ok(answer.into()),
        }))
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    let mut commands = vec![cmd];
    if press_enter {
        input.send(key(KeyCode::Enter)).await.unwrap();
        commands.push(engine.commands.recv().await.unwrap().1);
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    }
    term_tx.send(()).unwrap();
    let (_, terminal) = ui.await.unwrap();
    (commands, screen_text(&terminal))
}

async fn a_fresh_alert_becomes_a_rule_in_three_keys_with_its_preview_first(over_socket: bool) {
    // Before the last key: the prompt holds the suggested rule, the preview
    // and what the alert measured are on screen, and nothing was applied.
    let (commands, screen) = alert_keys(over_socket, false).await;
    assert_eq!(commands.len(), 1, "{commands:?}");
    assert!(
        screen.contains("matches 0 queued, 40 parked, 0 fetched URL(s)"),
        "{screen}"
    );
    assert!(screen.contains("gone\\-[0-9a-f]+"), "{screen}");
    assert!(
        screen.contains("would block 0 queued, 40 parked; 0 fetched good pages match"),
        "{screen}"
    );
    // The same keys and Enter: the rule is applied.
    let (commands, _) = alert_keys(over_socket, true).await;
    assert!(
        matches!(
            &commands[1],
            Command::AcceptAlert { alert_id: 1, rule: Some(r) } if r.pattern.contains(r"gone\-[0-9a-f]+")
        ),
        "{commands:?}"
    );
}
