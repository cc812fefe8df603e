//! The TUI tells the engine which part of the hosts list is on screen: the
//! rows the table has, where it is scrolled, its sort, and the open detail.

use std::sync::Arc;
use std::time::Duration;

use crawldeck::engine::control::HostKey;
use crawldeck::engine::host_window::{HostWindow, SortColumn};
use crawldeck::engine::telemetry::{HostView, Snapshot};
use crawldeck::engine::EngineHandle;
use crawldeck::tui::app::drive;
use crawldeck::tui::keys::keymap_from_str;
use crawldeck::tui::model::Model;
use crawldeck::tui::TuiExit;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use tokio::sync::{mpsc, oneshot, watch};

fn key(code: KeyCode) -> Event {
    Event::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

/// 300 hosts, `host-000` with the longest queue.
fn wide_snapshot() -> Snapshot {
    let hosts = (0..300u64)
        .map(|i| HostView {
            host: HostKey::from(format!("host-{i:03}.test")),
            queued: 1000 - i,
            ..HostView::default()
        })
        .collect();
    Snapshot {
        hosts,
        ..Snapshot::default()
    }
}

async fn window_where(
    windows: &mut watch::Receiver<HostWindow>,
    ok: impl FnMut(&HostWindow) -> bool,
) -> HostWindow {
    let found = tokio::time::timeout(Duration::from_secs(10), windows.wait_for(ok)).await;
    found.expect("the window in time").unwrap().clone()
}

#[tokio::test(start_paused = true)]
async fn the_tui_says_its_window_as_it_scrolls_sorts_and_opens_a_host() {
    let (handle, mut engine) = EngineHandle::channel();
    engine.snapshots.send_replace(Arc::new(wide_snapshot()));
    let (input_tx, input_rx) = mpsc::channel(64);
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let mut model = Model::new(keymap_from_str("").0, false, true);
    model.attached = true;
    let ui = tokio::spawn(async move {
        let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
        let terminate = async move {
            let _ = stop_rx.await;
        };
        drive(&mut terminal, handle, model, input_rx, terminate).await
    });

    // 24 lines: header 3, tabs 1, status 1, borders 2, column titles 1.
    let drawn = window_where(&mut engine.window, |w| w.rows > 0).await;
    assert_eq!(
        drawn,
        HostWindow {
            rows: 16,
            ..HostWindow::default()
        }
    );
    input_tx.send(key(KeyCode::End)).await.unwrap();
    let bottom = window_where(&mut engine.window, |w| w.first > 0).await;
    assert_eq!(bottom.first, 300 - 16);
    input_tx.send(key(KeyCode::Home)).await.unwrap();
    window_where(&mut engine.window, |w| w.first == 0).await;
    for _ in 0..20 {
        input_tx.send(key(KeyCode::Down)).await.unwrap();
    }
    // Row 20 selected: the table scrolled just enough to show it.
    window_where(&mut engine.window, |w| w.first == 20 + 1 - 16).await;

    input_tx.send(key(KeyCode::Char('s'))).await.unwrap();
    let sorted = window_where(&mut engine.window, |w| w.sort != SortColumn::Queued).await;
    assert_eq!(sorted.sort, SortColumn::InFlight);
    input_tx.send(key(KeyCode::Enter)).await.unwrap();
    let opened = window_where(&mut engine.window, |w| w.detail.is_some()).await;
    assert!(opened.detail.unwrap().starts_with("host-"));
    input_tx.send(key(KeyCode::Esc)).await.unwrap();
    window_where(&mut engine.window, |w| w.detail.is_none()).await;

    stop_tx.send(()).unwrap();
    assert_eq!(ui.await.unwrap().unwrap(), TuiExit::Detach);
}
