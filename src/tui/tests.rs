//! The workstation without a terminal: keys through `update`, panes into a
//! `Buffer`, whole screens through `TestBackend` snapshots.

use std::sync::Arc;
use std::time::Duration;

use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::Rect;
use ratatui::style::Color;
use ratatui::Terminal;

use super::keys::{effective_keymap, KeyMap, DEFAULT_KEYMAP};
use super::model::{Effect, Model, Msg, Overlay, ViewOptions};
use super::ui;
use super::update::update;
use crate::engine::control::{Command, PatternKind, RuleSpec, Target};
use crate::engine::telemetry::*;

fn host(name: &str, queued: u64, phase: BreakerPhase) -> HostView {
    HostView {
        host: name.into(),
        queued,
        in_flight: 1,
        max_in_flight: 1,
        fetched: 40,
        req_per_sec: 0.9,
        mean_latency: Duration::from_millis(120),
        delay: Duration::from_millis(1000),
        delay_source: DelaySource::Config,
        status: StatusMix {
            s2xx: 38,
            s3xx: 1,
            s4xx: 1,
            s5xx: 0,
            errors: 0,
        },
        robots: RobotsState::Ok,
        breaker: BreakerView {
            phase,
            next_probe_in: (phase == BreakerPhase::Open).then(|| Duration::from_secs(12)),
            ..Default::default()
        },
        activity: HostActivity::Waiting,
        queue_head: vec![format!("http://{name}/next")],
        ..Default::default()
    }
}

fn fixture() -> Snapshot {
    let rule = RuleSpec {
        kind: PatternKind::Regex,
        pattern: "^http://cal\\.test/calendar/".into(),
        host: Some("cal.test".into()),
    };
    Snapshot {
        state: CrawlState::Running,
        elapsed: Duration::from_secs(754),
        counters: Counters {
            pages_fetched: 1234,
            bytes: 9_876_543,
            errors: 7,
            duplicates: 12,
            ..Default::default()
        },
        pages_per_sec: 4.5,
        frontier_size: 321,
        in_flight: 3,
        front_queues: [40, 120, 90, 60, 11],
        hosts_ready: 1,
        hosts_waiting: 2,
        hosts_breaker_open: 1,
        hosts_total: 3,
        hosts: vec![
            host("shop.test", 200, BreakerPhase::Closed),
            host("flaky.test", 80, BreakerPhase::Open),
            host("cal.test", 41, BreakerPhase::HalfOpen),
        ],
        rules: vec![RuleView {
            id: 1,
            spec: RuleSpec {
                kind: PatternKind::Glob,
                pattern: "*/print/*".into(),
                host: None,
            },
            hits: 17,
            origin: "operator".into(),
        }],
        alerts: vec![TrapAlert {
            id: 3,
            host: "cal.test".into(),
            kind: TrapKind::Counter,
            evidence_count: 52,
            samples: vec!["http://cal.test/calendar/2031/04/".into()],
            suggested_rule: rule,
            matching_queued: 38,
            status: AlertStatus::Open,
        }],
        quarantined: 38,
        data_dir: "/data/crawl1".into(),
        global_delay: Duration::from_secs(1),
        global_concurrency: 32,
        ..Default::default()
    }
}

fn model_with(options: ViewOptions) -> Model {
    let mut keymap = KeyMap::default();
    keymap.merge_toml(DEFAULT_KEYMAP, "default");
    let mut model = Model::new(keymap, Vec::new(), options);
    update(&mut model, Msg::Snapshot(Arc::new(fixture())));
    for v in [1, 3, 4, 6, 5, 4, 5] {
        model.snapshot = Arc::new(Snapshot {
            pages_per_sec: v as f64,
            ..fixture()
        });
        update(&mut model, Msg::Second);
    }
    update(
        &mut model,
        Msg::Event(EngineEvent::Log {
            level: Level::Warn,
            message: "breaker flaky.test: OK -> OPEN (5 consecutive failures)".into(),
        }),
    );
    model
}

fn model() -> Model {
    model_with(ViewOptions {
        color: true,
        readonly: false,
    })
}

fn press(model: &mut Model, code: KeyCode) -> Vec<Effect> {
    let mods = match code {
        KeyCode::Char(c) if c.is_ascii_uppercase() => KeyModifiers::SHIFT,
        _ => KeyModifiers::NONE,
    };
    update(model, Msg::Key(KeyEvent::new(code, mods)))
}

fn type_text(model: &mut Model, text: &str) {
    for c in text.chars() {
        assert!(press(model, KeyCode::Char(c)).is_empty());
    }
}

#[test]
fn b_then_a_regex_then_enter_sends_add_rule() {
    let mut m = model();
    assert!(press(&mut m, KeyCode::Char('b')).is_empty());
    type_text(&mut m, "/cal.*");
    let effects = press(&mut m, KeyCode::Enter);
    assert_eq!(
        effects,
        vec![Effect::Send(Command::AddRule(RuleSpec {
            kind: PatternKind::Regex,
            pattern: "/cal.*".into(),
            host: None,
        }))]
    );
    assert!(matches!(m.overlay, Overlay::None));
}

#[test]
fn an_invalid_regex_is_shown_inline_and_nothing_is_sent() {
    let mut m = model();
    press(&mut m, KeyCode::Char('b'));
    type_text(&mut m, "cal(");
    assert!(press(&mut m, KeyCode::Enter).is_empty());
    let Overlay::Prompt(prompt) = &m.overlay else {
        panic!("the prompt stays open");
    };
    assert!(
        prompt.error.as_deref().unwrap().contains("invalid regex"),
        "{:?}",
        prompt.error
    );
    let screen = render_to_string(&m, 120, 40);
    assert!(screen.contains("invalid regex"), "{screen}");
    assert!(press(&mut m, KeyCode::Esc).is_empty());
    assert!(matches!(m.overlay, Overlay::None));
}

#[test]
fn glob_prefix_makes_a_glob_rule_for_the_selected_host() {
    let mut m = model();
    press(&mut m, KeyCode::Char('B'));
    // The prompt is pre-filled with the host's origin; replace it.
    update(
        &mut m,
        Msg::Key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL)),
    );
    type_text(&mut m, "glob:*/print/*");
    let effects = press(&mut m, KeyCode::Enter);
    assert_eq!(
        effects,
        vec![Effect::Send(Command::AddRule(RuleSpec {
            kind: PatternKind::Glob,
            pattern: "*/print/*".into(),
            host: Some("shop.test".into()),
        }))]
    );
}

#[test]
fn quitting_asks_then_checkpoints_then_leaves_when_the_engine_stops() {
    let mut m = model();
    assert!(press(&mut m, KeyCode::Char('q')).is_empty());
    assert!(matches!(m.overlay, Overlay::ConfirmQuit));
    assert!(render_to_string(&m, 120, 40).contains("Quit?"));
    assert_eq!(
        press(&mut m, KeyCode::Char('y')),
        vec![
            Effect::Send(Command::Checkpoint),
            Effect::Send(Command::Shutdown)
        ]
    );
    assert_eq!(update(&mut m, Msg::EngineClosed), vec![Effect::Quit]);
}

#[test]
fn any_other_key_cancels_the_quit() {
    let mut m = model();
    press(&mut m, KeyCode::Char('q'));
    assert!(press(&mut m, KeyCode::Char('n')).is_empty());
    assert!(!m.quitting);
}

#[test]
fn readonly_refuses_mutating_commands() {
    let mut m = model_with(ViewOptions {
        color: true,
        readonly: true,
    });
    assert!(press(&mut m, KeyCode::Char('p')).is_empty());
    assert!(m.status.as_ref().unwrap().1.contains("read-only"));
    assert!(press(&mut m, KeyCode::Char('b')).is_empty());
    assert!(matches!(m.overlay, Overlay::None));
}

#[test]
fn pause_throttle_and_alert_actions() {
    let mut m = model();
    assert_eq!(
        press(&mut m, KeyCode::Char('p')),
        vec![Effect::Send(Command::Pause(Target::Global))]
    );
    assert_eq!(
        press(&mut m, KeyCode::Char('P')),
        vec![Effect::Send(Command::Pause(Target::Host(
            "shop.test".into()
        )))]
    );
    assert_eq!(
        press(&mut m, KeyCode::Char('+')),
        vec![Effect::Send(Command::SetHostDelay {
            host: "shop.test".into(),
            delay: Some(Duration::from_millis(2000)),
        })]
    );
    press(&mut m, KeyCode::Char('2'));
    assert_eq!(
        press(&mut m, KeyCode::Char('a')),
        vec![Effect::Send(Command::AcceptAlert {
            alert_id: 3,
            rule: None
        })]
    );
    assert_eq!(
        press(&mut m, KeyCode::Char('d')),
        vec![Effect::Send(Command::DismissAlert { alert_id: 3 })]
    );
}

#[test]
fn command_line_with_host_completion() {
    let mut m = model();
    press(&mut m, KeyCode::Char(':'));
    type_text(&mut m, "throttle fl");
    assert!(press(&mut m, KeyCode::Tab).is_empty());
    type_text(&mut m, "2s");
    assert_eq!(
        press(&mut m, KeyCode::Enter),
        vec![Effect::Send(Command::SetHostDelay {
            host: "flaky.test".into(),
            delay: Some(Duration::from_secs(2)),
        })]
    );
    press(&mut m, KeyCode::Char(':'));
    type_text(&mut m, "throttle nosuch.test 2s");
    assert!(press(&mut m, KeyCode::Enter).is_empty());
    let Overlay::Prompt(prompt) = &m.overlay else {
        panic!("stays open on error");
    };
    assert!(prompt.error.as_deref().unwrap().contains("no host"));
}

#[test]
fn filter_narrows_the_hosts_table_and_sort_orders_it() {
    let mut m = model();
    press(&mut m, KeyCode::Char('/'));
    type_text(&mut m, "fla");
    press(&mut m, KeyCode::Enter);
    let rows: Vec<_> = m.host_rows().iter().map(|h| h.host.clone()).collect();
    assert_eq!(rows, vec!["flaky.test"]);
    m.filter.clear();
    // Default sort: queue, largest first.
    assert_eq!(m.host_rows()[0].host, "shop.test");
    press(&mut m, KeyCode::Char('S'));
    assert_eq!(m.host_rows()[0].host, "cal.test");
}

#[test]
fn enter_opens_the_host_detail_view() {
    let mut m = model();
    press(&mut m, KeyCode::Char('j'));
    press(&mut m, KeyCode::Enter);
    assert!(matches!(&m.overlay, Overlay::Detail(h) if h == "flaky.test"));
    let screen = render_to_string(&m, 120, 40);
    assert!(screen.contains("Host flaky.test"), "{screen}");
    assert!(screen.contains("http://flaky.test/next"));
    press(&mut m, KeyCode::Esc);
    assert!(matches!(m.overlay, Overlay::None));
}

#[test]
fn help_is_generated_from_the_key_map() {
    let mut m = model();
    let (user, warnings) = effective_keymap(None);
    assert!(warnings.is_empty() || std::env::var_os("XDG_CONFIG_HOME").is_some());
    let _ = user;
    m.keymap.merge_toml("[normal]\n\"Q\" = \"quit\"\n", "user");
    press(&mut m, KeyCode::Char('?'));
    let lines: Vec<String> = ui::overlay_help_lines(&m)
        .iter()
        .map(|l| l.to_string())
        .collect();
    assert!(
        lines.iter().any(|l| l.contains("Q ") && l.contains("quit")),
        "{lines:?}"
    );
    assert!(render_to_string(&m, 120, 40).contains("Help"));
}

fn render(model: &Model, width: u16, height: u16) -> Buffer {
    let area = Rect::new(0, 0, width, height);
    let mut buf = Buffer::empty(area);
    ui::render(model, area, &mut buf);
    buf
}

fn render_to_string(model: &Model, width: u16, height: u16) -> String {
    let buf = render(model, width, height);
    (0..height)
        .map(|y| {
            (0..width)
                .map(|x| buf[(x, y)].symbol().to_string())
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Finds the first cell where `word` starts.
fn find(buf: &Buffer, word: &str) -> Option<(u16, u16)> {
    let area = buf.area;
    for y in 0..area.height {
        let line: String = (0..area.width)
            .map(|x| buf[(x, y)].symbol().to_string())
            .collect();
        if let Some(i) = line.find(word) {
            return Some((line[..i].chars().count() as u16, y));
        }
    }
    None
}

#[test]
fn an_open_breaker_is_red_and_a_word() {
    let buf = render(&model(), 120, 40);
    let (x, y) = find(&buf, "OPEN 12s").expect("OPEN with the time to the next probe");
    assert_eq!(buf[(x, y)].fg, Color::Red);
    let (x, y) = find(&buf, "HALF").unwrap();
    assert_eq!(buf[(x, y)].fg, Color::Yellow);

    let plain = render(
        &model_with(ViewOptions {
            color: false,
            readonly: false,
        }),
        120,
        40,
    );
    let (x, y) = find(&plain, "OPEN 12s").expect("the word stays without colour");
    assert_eq!(plain[(x, y)].fg, Color::Reset);
}

#[test]
fn control_characters_from_the_network_never_reach_the_screen() {
    let mut m = model();
    let mut snap = fixture();
    snap.hosts[0].host = "evil\u{1b}[2J.test".into();
    snap.hosts[0].robots_summary = Some("x\u{1b}]0;owned\u{7}".into());
    update(&mut m, Msg::Snapshot(Arc::new(snap)));
    update(
        &mut m,
        Msg::Event(EngineEvent::Log {
            level: Level::Info,
            message: "title \u{1b}[31mred".into(),
        }),
    );
    let screen = render_to_string(&m, 120, 40);
    assert!(
        !screen.contains('\u{1b}') && !screen.contains('\u{7}'),
        "{screen}"
    );
    assert!(screen.contains("evil[2J.test"));
}

fn snapshot_screen(model: &Model, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal
        .draw(|f| ui::render(model, f.area(), f.buffer_mut()))
        .unwrap();
    format!("{}", terminal.backend())
}

#[test]
fn screen_120x40() {
    insta::assert_snapshot!(snapshot_screen(&model(), 120, 40));
}

#[test]
fn screen_80x24() {
    insta::assert_snapshot!(snapshot_screen(&model(), 80, 24));
}

#[test]
fn screen_too_small() {
    let screen = snapshot_screen(&model(), 50, 12);
    assert!(screen.contains("terminal too small"));
    insta::assert_snapshot!(screen);
}
