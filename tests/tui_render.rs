//! Full-screen and widget rendering of the TUI from a fixture snapshot.

use std::sync::Arc;
use std::time::Duration;

use crawldeck::engine::control::{CommandId, CommandResult, PatternKind, RuleSpec};
use crawldeck::engine::telemetry::*;
use crawldeck::tui::keys::keymap_from_str;
use crawldeck::tui::model::{Model, Pane};
use crawldeck::tui::ui;
use crawldeck::tui::update::{update, Msg};
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::crossterm::event::{KeyCode, KeyEvent};
use ratatui::layout::Rect;
use ratatui::style::Color;
use ratatui::Terminal;

fn host(name: &str, queued: u64, phase: BreakerPhase) -> HostView {
    HostView {
        host: name.into(),
        queued,
        in_flight: 1,
        max_in_flight: 2,
        fetched: queued * 3,
        req_per_sec: 0.8,
        mean_latency: Duration::from_millis(120),
        delay: Duration::from_secs(1),
        delay_source: DelaySource::CrawlDelay,
        status: StatusMix {
            s2xx: 50,
            s3xx: 4,
            s4xx: 2,
            s5xx: 1,
            errors: 0,
            refused: 0,
        },
        robots: RobotsState::Ok,
        breaker: BreakerView {
            phase,
            next_probe_in: (phase == BreakerPhase::Open).then_some(Duration::from_secs(12)),
            ..Default::default()
        },
        activity: HostActivity::Ready,
        queue_head: vec![format!("http://{name}/next")],
        robots_summary: Some("3 rules, crawl-delay 1s".into()),
        ..Default::default()
    }
}

fn fixture() -> Snapshot {
    Snapshot {
        state: CrawlState::Running,
        elapsed: Duration::from_secs(754),
        counters: Counters {
            pages_fetched: 1234,
            bytes: 5_500_000,
            errors: 7,
            duplicates: 12,
            blocked_by_rules: 40,
            ..Default::default()
        },
        pages_per_sec: 3.2,
        frontier_size: 4567,
        in_flight: 3,
        front_queues: [120, 800, 2400, 900, 347],
        hosts_ready: 2,
        hosts_waiting: 1,
        hosts_breaker_open: 1,
        hosts_total: 4,
        hosts: vec![
            host("shop.localhost:8080", 2400, BreakerPhase::Closed),
            host("blog.localhost:8080", 900, BreakerPhase::HalfOpen),
            host("flaky.localhost:8080", 300, BreakerPhase::Open),
            host("evil\u{1b}[31m.localhost:8080", 10, BreakerPhase::Closed),
        ],
        rules: vec![RuleView {
            id: 1,
            spec: RuleSpec {
                kind: PatternKind::Glob,
                pattern: "*?sessionid=*".into(),
                host: None,
            },
            hits: 42,
            origin: "operator".into(),
        }],
        alerts: vec![TrapAlert {
            id: 3,
            host: "shop.localhost:8080".into(),
            kind: TrapKind::Counter,
            evidence_count: 120,
            last_seen: 0,
            samples: vec!["http://shop.localhost:8080/calendar/2031/01".into()],
            suggested_rule: RuleSpec {
                kind: PatternKind::Regex,
                pattern: "^https?://shop\\.localhost:8080/calendar/".into(),
                host: Some("shop.localhost:8080".into()),
            },
            matching_queued: 80,
            impact: Some(crawldeck::engine::telemetry::RuleImpact {
                parked: 80,
                ..Default::default()
            }),
            status: AlertStatus::Open,
        }],
        data_dir: "./crawl-data".into(),
        global_delay: Duration::from_secs(1),
        global_concurrency: 8,
        ..Default::default()
    }
}

fn model(no_color: bool) -> Model {
    let (keymap, _) = keymap_from_str("");
    let mut m = Model::new(keymap, false, no_color);
    for second in 0..60u64 {
        let s = Snapshot {
            elapsed: Duration::from_secs(second),
            pages_per_sec: (second % 7) as f64,
            ..Default::default()
        };
        update(&mut m, Msg::Snapshot(Arc::new(s)));
    }
    update(&mut m, Msg::Snapshot(Arc::new(fixture())));
    let log = |level, message: &str| {
        Msg::Event(EngineEvent::Log {
            level,
            message: message.into(),
        })
    };
    update(
        &mut m,
        log(Level::Info, "robots.txt of shop.localhost:8080: 3 rules"),
    );
    update(&mut m, log(Level::Warn, "title \u{1b}]0;pwned\u{7}here"));
    update(
        &mut m,
        Msg::Event(EngineEvent::BreakerChanged {
            host: "flaky.localhost:8080".into(),
            from: BreakerPhase::Closed,
            to: BreakerPhase::Open,
            reason: "5 consecutive failures".into(),
        }),
    );
    for (status, error) in [(Some(200), None), (None, Some("connect: refused"))] {
        let fetched = EngineEvent::Fetched {
            host: "shop.localhost:8080".into(),
            url: "http://shop.localhost:8080/p/\u{1b}[2Jx".into(),
            status,
            latency: Duration::from_millis(85),
            bytes: 2048,
            error: error.map(String::from),
        };
        update(&mut m, Msg::Event(fetched));
    }
    update(
        &mut m,
        Msg::Sent {
            id: CommandId(1),
            what: "pause crawl".into(),
        },
    );
    let done = CommandResult {
        id: CommandId(1),
        outcome: Ok("paused".into()),
    };
    update(&mut m, Msg::Event(EngineEvent::CommandDone(done)));
    m
}

fn draw(m: &Model, width: u16, height: u16) -> Terminal<TestBackend> {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal
        .draw(|f| ui::render(m, f.area(), f.buffer_mut()))
        .unwrap();
    terminal
}

fn text(buf: &Buffer) -> String {
    let mut out = String::new();
    for y in 0..buf.area.height {
        for x in 0..buf.area.width {
            out.push_str(buf[(x, y)].symbol());
        }
        out.push('\n');
    }
    out
}

#[test]
fn the_header_shows_the_identity_without_moving_the_other_lines() {
    let plain = model(true);
    let mut named = model(true);
    let ident = Snapshot {
        product_token: "acmebot".into(),
        user_agent: "AcmeBot/2.0 (+https://acme.example/bot)\u{1b}[2J".into(),
        ..fixture()
    };
    update(&mut named, Msg::Snapshot(Arc::new(ident)));
    for (width, height) in [(120, 40), (80, 24)] {
        let before = text(draw(&plain, width, height).backend().buffer());
        let after = text(draw(&named, width, height).backend().buffer());
        let (before, after): (Vec<&str>, Vec<&str>) =
            (before.lines().collect(), after.lines().collect());
        assert_eq!(before[0], after[0], "gauges unchanged at {width}");
        assert_eq!(before[2], after[2], "settings unchanged at {width}");
        assert!(after[1].contains(" acmebot · AcmeBot/2.0 "), "{}", after[1]);
        assert!(after[1].starts_with(" pages/s "), "{}", after[1]);
        assert!(!after[1].contains('\u{1b}'), "{}", after[1]);
    }
    let wide = text(draw(&named, 120, 40).backend().buffer());
    assert!(
        wide.lines()
            .nth(1)
            .unwrap()
            .contains("(+https://acme.example/bot)[2J "),
        "{wide}"
    );
    let narrow = text(draw(&named, 80, 24).backend().buffer());
    assert!(narrow.lines().nth(1).unwrap().ends_with("… "), "{narrow}");
}

#[test]
fn full_screen_120x40() {
    let m = model(true);
    insta::assert_snapshot!(draw(&m, 120, 40).backend());
}

#[test]
fn full_screen_80x24() {
    let m = model(true);
    let t = draw(&m, 80, 24);
    let screen = text(t.backend().buffer());
    for must in [
        "RUNNING",
        "pages 1,234",
        "frontier 4,567",
        "Hosts",
        "OPEN 12s",
        "HALF",
        "Alerts (1)",
    ] {
        assert!(screen.contains(must), "{must} missing at 80x24:\n{screen}");
    }
    insta::assert_snapshot!(t.backend());
}

#[test]
fn other_panes_at_80x24() {
    let mut m = model(true);
    for pane in [Pane::Alerts, Pane::Rules, Pane::Log, Pane::Queues] {
        m.pane = pane;
        insta::assert_snapshot!(
            format!("pane_{}", pane.title().to_lowercase()),
            draw(&m, 80, 24).backend()
        );
    }
}

#[test]
fn host_detail_and_help_overlay() {
    let mut m = model(true);
    update(&mut m, Msg::Key(KeyEvent::from(KeyCode::Enter)));
    insta::assert_snapshot!("detail", draw(&m, 100, 30).backend());
    update(&mut m, Msg::Key(KeyEvent::from(KeyCode::Char('?'))));
    let screen = text(draw(&m, 100, 30).backend().buffer());
    assert!(screen.contains("Help"), "{screen}");
    assert!(screen.contains("close its breaker now"), "{screen}");
}

#[test]
fn the_host_detail_shows_urls_refused_for_their_private_address() {
    let mut m = model(true);
    let why = "http://10.0.0.7/admin: 10.0.0.7 is a private (RFC 1918) address\u{1b}[2J, refused";
    let mut snap = fixture();
    snap.hosts[0].status.errors = 2;
    snap.hosts[0].status.refused = 2;
    snap.hosts[0].last_refusal = Some(why.into());
    update(&mut m, Msg::Snapshot(Arc::new(snap)));
    update(
        &mut m,
        Msg::Event(EngineEvent::Fetched {
            host: "shop.localhost:8080".into(),
            url: "http://10.0.0.7/admin".into(),
            status: None,
            latency: Duration::ZERO,
            bytes: 0,
            error: Some(format!("private-address: {why}")),
        }),
    );
    m.detail = Some("shop.localhost:8080".into());
    let detail = text(draw(&m, 160, 30).backend().buffer());
    assert!(
        detail.contains("refused 2 (private address), latest: http://10.0.0.7/admin: 10.0.0.7 is a private (RFC 1918) address[2J"),
        "{detail}"
    );
    assert!(
        detail.contains("(private-address: http://10.0.0.7/admin"),
        "{detail}"
    );
}

#[test]
fn too_small_terminal_shows_a_notice() {
    let m = model(true);
    insta::assert_snapshot!(draw(&m, 40, 10).backend());
}

#[test]
fn control_characters_never_reach_the_screen() {
    let mut m = model(false);
    for (w, h) in [(120, 40), (80, 24)] {
        for pane in [Pane::Hosts, Pane::Log] {
            m.pane = pane;
            m.detail = None;
            let buf = draw(&m, w, h).backend().buffer().clone();
            for cell in buf.content() {
                assert!(
                    !cell.symbol().chars().any(char::is_control),
                    "control char in {:?}",
                    cell.symbol()
                );
            }
            let screen = text(&buf);
            m.detail = Some("shop.localhost:8080".into());
            let detail = text(draw(&m, w, h).backend().buffer());
            assert!(detail.contains("/p/[2Jx"), "{detail}");
            m.detail = None;
            if pane == Pane::Hosts {
                assert!(screen.contains("evil[31m."), "{screen}");
            } else {
                assert!(screen.contains("title ]0;pwnedhere"), "{screen}");
            }
        }
    }
}

/// Bidi overrides and isolates and zero-width characters draw nothing but can
/// reorder or hide text; they never reach a cell either.
#[test]
fn bidi_and_zero_width_characters_never_reach_the_screen() {
    let invisible = |c: char| matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}');
    let mut m = model(false);
    update(
        &mut m,
        Msg::Event(EngineEvent::Log {
            level: Level::Warn,
            message: "title a\u{202E}gnp.exe\u{2066}b\u{2069}\u{200B}c".into(),
        }),
    );
    update(
        &mut m,
        Msg::Event(EngineEvent::Fetched {
            host: "shop.localhost:8080".into(),
            url: "http://shop.localhost:8080/q/\u{202D}z\u{200F}y".into(),
            status: Some(200),
            latency: Duration::from_millis(5),
            bytes: 10,
            error: None,
        }),
    );
    for (w, h) in [(120, 40), (80, 24)] {
        m.pane = Pane::Log;
        m.detail = None;
        let log_screen = draw(&m, w, h).backend().buffer().clone();
        m.detail = Some("shop.localhost:8080".into());
        let detail_screen = draw(&m, w, h).backend().buffer().clone();
        for buf in [&log_screen, &detail_screen] {
            for cell in buf.content() {
                assert!(
                    !cell.symbol().chars().any(invisible),
                    "invisible char in {:?}",
                    cell.symbol()
                );
            }
        }
        let screen = text(&log_screen);
        assert!(screen.contains("title agnp.exebc"), "{screen}");
        let detail = text(&detail_screen);
        assert!(detail.contains("/q/zy"), "{detail}");
    }
}

fn find(buf: &Buffer, needle: &str) -> (u16, u16) {
    let screen = text(buf);
    for (y, line) in screen.lines().enumerate() {
        if let Some(byte) = line.find(needle) {
            let x = line[..byte].chars().count();
            return (x as u16, y as u16);
        }
    }
    panic!("{needle} not on screen:\n{screen}");
}

#[test]
fn breaker_open_is_red_with_color_and_a_word_without() {
    let area = Rect::new(0, 0, 120, 40);
    let mut buf = Buffer::empty(area);
    ui::render(&model(false), area, &mut buf);
    let (x, y) = find(&buf, "OPEN 12s");
    assert_eq!(buf[(x, y)].fg, Color::Red);

    let mut buf = Buffer::empty(area);
    ui::render(&model(true), area, &mut buf);
    let (x, y) = find(&buf, "OPEN 12s");
    assert_eq!(buf[(x, y)].fg, Color::Reset);
    assert!(buf
        .content()
        .iter()
        .all(|c| c.fg == Color::Reset && c.bg == Color::Reset));
}

#[test]
fn a_storage_fault_takes_the_settings_line_in_red() {
    let mut m = model(false);
    let faulted = Snapshot {
        state: CrawlState::Paused,
        fault: Some(
            "archiving http://a/x: cannot write to the WARC file ./crawl-data/warc/crawldeck-00000.warc.gz: \
             No space left on device\u{1b}[2J"
                .into(),
        ),
        ..fixture()
    };
    update(&mut m, Msg::Snapshot(Arc::new(faulted)));
    let area = Rect::new(0, 0, 160, 40);
    let mut buf = Buffer::empty(area);
    ui::render(&m, area, &mut buf);
    let screen = text(&buf);
    let line = screen.lines().nth(2).unwrap();
    assert!(
        line.starts_with(" STORAGE FAULT, paused: archiving http://a/x"),
        "{line}"
    );
    assert!(
        line.contains("crawldeck-00000.warc.gz: No space left on device[2J"),
        "{line}"
    );
    assert!(!screen.contains('\u{1b}'));
    let (x, y) = find(&buf, "STORAGE FAULT");
    assert_eq!(buf[(x, y)].fg, Color::Red);
}

#[test]
fn the_alerts_tab_and_pane_count_open_alerts_alike_and_show_the_last_sighting() {
    let mut m = model(true);
    let mut snap = fixture();
    let mut decided = snap.alerts[0].clone();
    decided.id = 4;
    decided.status = AlertStatus::Dismissed;
    snap.alerts[0].last_seen = 1_795_000_000 - 1_795_000_000 % 86_400 + 45_296;
    snap.alerts.push(decided);
    update(&mut m, Msg::Snapshot(Arc::new(snap)));
    m.pane = Pane::Alerts;
    let screen = text(draw(&m, 100, 30).backend().buffer());
    assert!(screen.contains("2 Alerts (1)"), "{screen}");
    assert!(screen.contains(" Alerts: 1 open of 2 "), "{screen}");
    assert!(
        screen.contains("120 URLs of evidence, last seen 12:34:56 UTC"),
        "{screen}"
    );
}

#[test]
fn long_host_names_are_cut_in_the_middle_and_keep_their_port() {
    let mut m = model(true);
    let mut snap = fixture();
    let long = "a-very-long-subdomain-name-that-goes-on.and-on.shop.localhost:8080";
    snap.hosts[0] = host(long, 5000, BreakerPhase::Closed);
    let medium = "a-medium-name.example:81";
    snap.hosts[1] = host(medium, 4000, BreakerPhase::Closed);
    update(&mut m, Msg::Snapshot(Arc::new(snap)));
    for (width, height) in [(120, 40), (80, 24)] {
        let screen = text(draw(&m, width, height).backend().buffer());
        let row = screen
            .lines()
            .find(|l| l.contains('…'))
            .unwrap_or_else(|| panic!("no cut host at {width}:\n{screen}"));
        assert!(row.contains("a-very-lo"), "{row}");
        assert!(row.contains("host:8080 "), "the port stays: {row}");
        if width == 120 {
            // 24 cells: over the 20 a host always gets, so the column grew to it.
            assert!(screen.contains(medium), "{screen}");
        }
    }
}

#[test]
fn the_header_shows_a_gone_engine_and_a_finished_crawl_not_running() {
    let area = Rect::new(0, 0, 160, 40);
    let header = |m: &Model| {
        let mut buf = Buffer::empty(area);
        ui::render(m, area, &mut buf);
        let screen = text(&buf);
        let lines: Vec<String> = screen.lines().take(3).map(str::to_string).collect();
        (lines, buf)
    };
    // The last snapshot said RUNNING, then the connection went.
    let mut m = model(false);
    update(&mut m, Msg::EngineClosed);
    let (lines, buf) = header(&m);
    assert!(lines[0].contains(" GONE "), "{}", lines[0]);
    assert!(!lines[0].contains("RUNNING"), "{}", lines[0]);
    assert!(lines[2].starts_with(" ENGINE GONE: "), "{}", lines[2]);
    let (x, y) = find(&buf, "GONE");
    assert_eq!(buf[(x, y)].fg, Color::Red);

    let mut m = model(false);
    let done = Snapshot {
        state: CrawlState::Done,
        finish_reason: Some("page limit reached (3)".into()),
        ..fixture()
    };
    update(&mut m, Msg::Snapshot(Arc::new(done)));
    update(&mut m, Msg::EngineClosed);
    let (lines, _) = header(&m);
    assert!(lines[0].contains(" FINISHED "), "{}", lines[0]);
    assert!(
        lines[2].contains("finished: page limit reached (3)"),
        "{}",
        lines[2]
    );
}

/// A page record for the Pages view's fixtures.
fn page_row(url: &str, status: u16, title: &str) -> crawldeck::results::rows::Row {
    use crawldeck::engine::store::{PageOutcome, PageRecord};
    let mut record = PageRecord::without_fetch(
        url,
        "shop.localhost:8080",
        2,
        1_700_000_000_000,
        PageOutcome::Fetched { status },
    );
    record.title = Some(title.into());
    record.bytes = 5_120;
    record.response_ms = Some(42);
    record.set_content_type(Some("text/html; charset=utf-8"));
    let rules = crawldeck::results::rows::RuleOrigins::default();
    crawldeck::results::rows::Row::of_page(record, &rules)
}

#[test]
fn the_pages_and_audit_views() {
    use crawldeck::results::window::{Band, BandRequest, PageColumn};
    let mut m = model(true);
    m.pane = Pane::Pages;
    m.pages.filter = "status:4xx".into();
    m.pages.sort = PageColumn::Size;
    let request = BandRequest {
        data_dir: "./crawl-data".into(),
        filter: m.pages.filter.clone(),
        sort: PageColumn::Size,
        reverse: false,
        first: 0,
        rows: 40,
        count: true,
    };
    let rows = vec![
        page_row(
            "http://shop.localhost:8080/discontinued.html",
            404,
            "Gone\u{1b}[2J",
        ),
        page_row("http://shop.localhost:8080/old/cart?id=7", 410, "Old cart"),
    ];
    m.pages.band = Some(Ok(Band {
        request,
        total: 2,
        counted: true,
        first: 0,
        rows,
    }));
    m.pages.selected = 1;
    insta::assert_snapshot!("pane_pages", draw(&m, 120, 24).backend());

    m.pane = Pane::Audit;
    m.audit.read = Some(Ok(vec![crawldeck::results::audit::Finding {
        check: "broken-links",
        priority: "high",
        urls: 2,
        finding: "internal URLs answering 4xx/5xx or nothing".into(),
        command: String::new(),
    }]));
    insta::assert_snapshot!("pane_audit", draw(&m, 120, 24).backend());
}
