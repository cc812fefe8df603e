use super::*;
use crate::engine::control::{CommandResult, PatternKind, RuleSpec};
use crate::engine::telemetry::AlertStatus;
use crate::engine::telemetry::{HostView, TrapAlert, TrapKind};
use crate::tui::keys::keymap_from_str;
use crate::tui::model::{HostList, PromptKind, SortColumn};
use crate::tui::records::Records;
use ratatui::crossterm::event::KeyModifiers;
use std::time::Duration;

fn model(readonly: bool) -> Model {
    let (keymap, warnings) = keymap_from_str("");
    assert!(warnings.is_empty());
    let mut m = Model::new(keymap, readonly, false);
    let mut snap = Snapshot {
        state: CrawlState::Running,
        ..Default::default()
    };
    for (name, queued) in [("shop.localhost:8080", 40), ("blog.localhost:8080", 10)] {
        snap.hosts.push(HostView {
            host: name.into(),
            queued,
            max_in_flight: 2,
            delay: Duration::from_secs(1),
            ..Default::default()
        });
    }
    snap.alerts.push(TrapAlert {
        id: 3,
        host: "shop.localhost:8080".into(),
        kind: TrapKind::Counter,
        evidence_count: 120,
        last_seen: 0,
        samples: vec![],
        suggested_rule: RuleSpec {
            kind: PatternKind::Regex,
            pattern: "/calendar/\\d+".into(),
            host: Some("shop.localhost:8080".into()),
        },
        matching_queued: 80,
        impact: None,
        status: AlertStatus::Open,
    });
    update(&mut m, Msg::Snapshot(Arc::new(snap)));
    m
}

fn key(c: char) -> Msg {
    Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE))
}

fn code(code: KeyCode) -> Msg {
    Msg::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

fn typed(m: &mut Model, text: &str) -> Vec<Effect> {
    text.chars().flat_map(|c| update(m, key(c))).collect()
}

#[test]
fn b_then_regex_then_enter_sends_add_rule() {
    let mut m = model(false);
    let sends = |effects: &[Effect]| effects.iter().any(|e| matches!(e, Effect::Send(_)));
    assert!(!sends(&update(&mut m, key('b'))));
    assert_eq!(m.mode(), Mode::Prompt);
    assert!(
        !sends(&typed(&mut m, "/cal.*")),
        "only a preview is asked for"
    );
    let effects = update(&mut m, code(KeyCode::Enter));
    assert_eq!(
        effects,
        [Effect::Send(Command::AddRule(RuleSpec {
            kind: PatternKind::Regex,
            pattern: "/cal.*".into(),
            host: None
        }))]
    );
    assert!(m.prompt.is_none());
}

#[test]
fn bad_regex_shows_inline_error_and_sends_nothing() {
    let mut m = model(false);
    update(&mut m, key('b'));
    typed(&mut m, "/cal(");
    assert!(update(&mut m, code(KeyCode::Enter)).is_empty());
    let prompt = m.prompt.as_ref().expect("prompt stays open");
    assert!(prompt
        .error
        .as_deref()
        .unwrap()
        .starts_with("invalid regex"));
    // Editing clears the error; fixing it sends.
    update(&mut m, key(')'));
    assert!(m.prompt.as_ref().unwrap().error.is_none());
    assert_eq!(update(&mut m, code(KeyCode::Enter)).len(), 1);
}

#[test]
fn readonly_refuses_mutating_commands() {
    let mut m = model(true);
    assert!(update(&mut m, key('p')).is_empty());
    assert_eq!(
        m.status.as_ref().unwrap().text,
        "read-only: pause crawl not sent"
    );
    update(&mut m, key(':'));
    typed(&mut m, "rate 5");
    assert!(update(&mut m, code(KeyCode::Enter)).is_empty());
    assert_eq!(
        m.status.as_ref().unwrap().text,
        "read-only: rate 5 pages/s not sent"
    );
}

#[test]
fn command_line_sends_and_reports_errors() {
    let mut m = model(false);
    update(&mut m, key(':'));
    assert_eq!(m.mode(), Mode::Command);
    typed(&mut m, "throttle * 500ms");
    assert_eq!(
        update(&mut m, code(KeyCode::Enter)),
        [Effect::Send(Command::SetGlobalDelay(
            Duration::from_millis(500)
        ))]
    );
    update(&mut m, key(':'));
    typed(&mut m, "pause nowhere extra");
    assert!(update(&mut m, code(KeyCode::Enter)).is_empty());
    assert_eq!(
        m.prompt.as_ref().unwrap().error.as_deref(),
        Some("usage: :pause [HOST]")
    );
    update(&mut m, code(KeyCode::Esc));
    assert!(m.prompt.is_none());
}

#[test]
fn tab_completes_host_names_on_the_command_line() {
    let mut m = model(false);
    update(&mut m, key(':'));
    typed(&mut m, "reset bl");
    update(&mut m, code(KeyCode::Tab));
    assert_eq!(
        m.prompt.as_ref().unwrap().input.value(),
        "reset blog.localhost:8080 "
    );
}

#[test]
fn host_actions_target_the_selected_row() {
    let mut m = model(false);
    // Sorted by queue depth: shop first; j moves to blog.
    update(&mut m, key('j'));
    assert_eq!(
        update(&mut m, key('+')),
        [Effect::Send(Command::SetHostDelay {
            host: "blog.localhost:8080".into(),
            delay: Some(Duration::from_millis(1250))
        })]
    );
    assert_eq!(
        update(&mut m, key('<')),
        [Effect::Send(Command::SetHostConcurrency {
            host: "blog.localhost:8080".into(),
            max: Some(1)
        })]
    );
    assert_eq!(
        update(&mut m, key('r')),
        [Effect::Send(Command::ResetBreaker(
            "blog.localhost:8080".into()
        ))]
    );
    assert_eq!(
        update(&mut m, key('P')),
        [Effect::Send(Command::Pause(Target::Host(
            "blog.localhost:8080".into()
        )))]
    );
}

#[test]
fn rule_from_host_prefills_an_escaped_url() {
    let mut m = model(false);
    update(&mut m, key('u'));
    let p = m.prompt.as_ref().unwrap();
    assert_eq!(p.input.value(), "^https?://shop\\.localhost:8080/");
    assert_eq!(
        p.kind,
        PromptKind::Rule {
            kind: PatternKind::Regex,
            host: Some("shop.localhost:8080".into())
        }
    );
}

#[test]
fn alerts_accept_edit_and_dismiss() {
    let mut m = model(false);
    assert!(
        update(&mut m, key('a')).is_empty(),
        "only from the alerts pane"
    );
    update(&mut m, key('2'));
    assert_eq!(
        update(&mut m, key('a')),
        [Effect::Send(Command::AcceptAlert {
            alert_id: 3,
            rule: None
        })]
    );
    assert_eq!(
        update(&mut m, key('d')),
        [Effect::Send(Command::DismissAlert { alert_id: 3 })]
    );
    update(&mut m, key('e'));
    assert_eq!(m.prompt.as_ref().unwrap().input.value(), "/calendar/\\d+");
    update(&mut m, code(KeyCode::End));
    typed(&mut m, "/");
    let effects = update(&mut m, code(KeyCode::Enter));
    assert_eq!(
        effects,
        [Effect::Send(Command::AcceptAlert {
            alert_id: 3,
            rule: Some(RuleSpec {
                kind: PatternKind::Regex,
                pattern: "/calendar/\\d+/".into(),
                host: Some("shop.localhost:8080".into())
            })
        })]
    );
}

#[test]
fn quit_asks_then_checkpoints_then_exits_when_done() {
    let mut m = model(false);
    assert!(update(&mut m, key('q')).is_empty());
    assert_eq!(m.overlay, Overlay::ConfirmQuit);
    assert!(update(&mut m, key('n')).is_empty());
    assert_eq!(m.overlay, Overlay::None);
    update(&mut m, key('q'));
    assert_eq!(
        update(&mut m, key('y')),
        [
            Effect::Send(Command::Checkpoint),
            Effect::Send(Command::Shutdown)
        ]
    );
    assert_eq!(m.status.as_ref().unwrap().text, "checkpointing…");
    let draining = Snapshot {
        state: CrawlState::Draining,
        ..(*m.latest).clone()
    };
    assert!(update(&mut m, Msg::Snapshot(Arc::new(draining))).is_empty());
    assert_eq!(
        update(&mut m, Msg::EngineClosed),
        [Effect::Quit(TuiExit::Quit)]
    );
}

#[test]
fn an_attached_viewer_says_a_finished_crawl_finished_and_a_lost_engine_is_an_error() {
    let mut m = model(false);
    m.attached = true;
    let done = Snapshot {
        state: CrawlState::Done,
        ..(*m.latest).clone()
    };
    update(&mut m, Msg::Snapshot(Arc::new(done)));
    update(&mut m, Msg::EngineClosed);
    let status = m.status.as_ref().unwrap();
    assert_eq!(
        (status.level, status.text.as_str()),
        (Level::Info, "the crawl finished; q leaves")
    );
    assert_eq!(m.engine, EngineLife::Finished(String::new()));

    let mut m = model(false);
    m.attached = true;
    update(&mut m, Msg::EngineClosed);
    let status = m.status.as_ref().unwrap();
    assert_eq!(status.level, Level::Error);
    assert!(status.text.starts_with("engine gone"), "{}", status.text);
}

#[test]
fn ctrl_c_checkpoints_without_asking_and_twice_exits() {
    let mut m = model(true);
    let ctrl_c = Msg::Key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL));
    assert_eq!(
        update(&mut m, ctrl_c.clone()),
        [
            Effect::Send(Command::Checkpoint),
            Effect::Send(Command::Shutdown)
        ]
    );
    assert_eq!(update(&mut m, ctrl_c), [Effect::Quit(TuiExit::Quit)]);
}

#[test]
fn finished_crawl_quits_without_asking() {
    let mut m = model(false);
    update(
        &mut m,
        Msg::Snapshot(Arc::new(Snapshot {
            state: CrawlState::Done,
            ..Default::default()
        })),
    );
    assert_eq!(
        update(&mut m, key('q')),
        [Effect::Quit(TuiExit::EngineFinished)]
    );
}

#[test]
fn command_results_show_in_the_status_line() {
    let mut m = model(false);
    update(
        &mut m,
        Msg::Sent {
            id: CommandId(9),
            what: "pause crawl".into(),
        },
    );
    let done = CommandResult {
        id: CommandId(9),
        outcome: Err("already paused".into()),
    };
    update(&mut m, Msg::Event(EngineEvent::CommandDone(done)));
    let status = m.status.as_ref().unwrap();
    assert_eq!(
        (status.level, status.text.as_str()),
        (Level::Error, "pause crawl failed: already paused")
    );
    assert!(m.pending.is_empty());
    assert_eq!(
        m.log.back().unwrap().text,
        "pause crawl failed: already paused"
    );
}

#[test]
fn filter_narrows_hosts_live_and_esc_clears() {
    let mut m = model(false);
    update(&mut m, key('/'));
    typed(&mut m, "blog");
    assert_eq!(m.visible_hosts().len(), 1);
    update(&mut m, code(KeyCode::Esc));
    assert_eq!(m.visible_hosts().len(), 2);
}

#[test]
fn freeze_holds_the_display_while_snapshots_arrive() {
    let mut m = model(false);
    update(&mut m, key('f'));
    let newer = Snapshot {
        state: CrawlState::Paused,
        ..(*m.latest).clone()
    };
    update(&mut m, Msg::Snapshot(Arc::new(newer)));
    assert_eq!(m.shown.state, CrawlState::Running);
    assert_eq!(m.latest.state, CrawlState::Paused);
    update(&mut m, key('f'));
    assert_eq!(m.shown.state, CrawlState::Paused);
    // Pausing acts on the live state, not the frozen one.
    assert_eq!(
        update(&mut m, key('p')),
        [Effect::Send(Command::Resume(Target::Global))]
    );
}

#[test]
fn a_frozen_table_takes_the_rows_of_a_new_window_and_nothing_else() {
    let mut m = model(false);
    let whole = (*m.latest).clone();
    // As the control socket cuts the engine's snapshot to the window asked.
    let cut = |m: &Model, state| {
        let mut snap = whole.windowed(&m.window_sent);
        snap.state = state;
        Msg::Snapshot(Arc::new(snap))
    };
    update(&mut m, Msg::HostRows(1));
    let msg = cut(&m, CrawlState::Running);
    update(&mut m, msg);
    update(&mut m, key('f'));
    let msg = cut(&m, CrawlState::Paused);
    update(&mut m, msg);
    assert_eq!(m.shown.state, CrawlState::Running, "frozen");
    // Scrolling asks for another window; the snapshot cut to it is shown.
    let effects = update(&mut m, code(KeyCode::Down));
    assert!(matches!(&effects[..], [Effect::Window(w)] if w.first == 1));
    let msg = cut(&m, CrawlState::Paused);
    update(&mut m, msg);
    assert_eq!(m.shown.state, CrawlState::Paused);
    assert_eq!(m.selected_host().unwrap().host, "blog.localhost:8080");
    let msg = cut(&m, CrawlState::Draining);
    update(&mut m, msg);
    assert_eq!(m.shown.state, CrawlState::Paused, "frozen again");
}

#[test]
fn enter_opens_host_detail_and_esc_returns() {
    let mut m = model(false);
    update(&mut m, code(KeyCode::Enter));
    assert_eq!(m.detail.as_deref(), Some("shop.localhost:8080"));
    assert_eq!(m.mode(), Mode::Detail);
    update(&mut m, code(KeyCode::Esc));
    assert_eq!(m.mode(), Mode::Normal);
}

#[test]
fn detail_view_jumps_to_a_host_list_and_esc_returns_to_recent_fetches() {
    let mut m = model(false);
    m.records = Some(Records::Dir("/tmp/crawl1".into()));
    update(&mut m, code(KeyCode::Enter));
    let host = m.detail.clone().expect("detail open");
    assert_eq!(
        update(&mut m, key('e')),
        [Effect::ListHost {
            records: Records::Dir("/tmp/crawl1".into()),
            host: host.clone(),
            list: HostList::Errors,
        }]
    );
    assert_eq!(m.host_listing.as_ref().map(|l| l.lines.clone()), Some(None));
    // An answer for another list (an earlier key press) is not shown.
    let lines = Ok(vec!["status url".to_string(), "404 http://x/".to_string()]);
    update(
        &mut m,
        Msg::HostListed {
            host: host.clone(),
            list: HostList::Redirects,
            lines: lines.clone(),
        },
    );
    assert_eq!(m.host_listing.as_ref().unwrap().lines, None);
    update(
        &mut m,
        Msg::HostListed {
            host,
            list: HostList::Errors,
            lines: lines.clone(),
        },
    );
    assert_eq!(m.host_listing.as_ref().unwrap().lines, Some(lines));
    update(&mut m, code(KeyCode::Esc));
    assert!(m.host_listing.is_none());
    assert_eq!(m.mode(), Mode::Detail, "esc closes the list first");
    update(&mut m, code(KeyCode::Esc));
    assert_eq!(m.mode(), Mode::Normal);
}

#[test]
fn history_keeps_one_sample_per_crawl_second() {
    let mut m = model(false);
    for (ms, pps) in [(1000, 2.0), (1400, 3.0), (2100, 4.5)] {
        let s = Snapshot {
            elapsed: Duration::from_millis(ms),
            pages_per_sec: pps,
            ..Default::default()
        };
        update(&mut m, Msg::Snapshot(Arc::new(s)));
    }
    assert_eq!(m.history.iter().copied().collect::<Vec<_>>(), [0, 20, 45]);
}

#[test]
fn keys_in_a_prompt_are_text_not_actions() {
    let mut m = model(false);
    update(&mut m, key('n'));
    assert_eq!(m.prompt.as_ref().unwrap().kind, PromptKind::Seed);
    assert!(typed(&mut m, "qpb").is_empty());
    assert_eq!(m.prompt.as_ref().unwrap().input.value(), "http://qpb");
    assert_eq!(m.overlay, Overlay::None);
    update(&mut m, code(KeyCode::Backspace));
    update(&mut m, code(KeyCode::Backspace));
    update(&mut m, code(KeyCode::Backspace));
    typed(&mut m, "blog.localhost:8080/new");
    assert_eq!(
        update(&mut m, code(KeyCode::Enter)),
        [Effect::Send(Command::AddSeed(
            "http://blog.localhost:8080/new".into()
        ))]
    );
}

#[test]
fn sort_cycles_columns_and_reverses() {
    let mut m = model(false);
    let order = |m: &Model| {
        m.visible_hosts()
            .iter()
            .map(|h| h.host.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(order(&m), ["shop.localhost:8080", "blog.localhost:8080"]);
    update(&mut m, key('S'));
    assert_eq!(order(&m), ["blog.localhost:8080", "shop.localhost:8080"]);
    update(&mut m, key('S'));
    // queue -> in-flight -> ... -> breaker -> host
    for _ in 0..7 {
        update(&mut m, key('s'));
    }
    assert_eq!(m.sort, SortColumn::Host);
    assert_eq!(order(&m), ["blog.localhost:8080", "shop.localhost:8080"]);
}

#[test]
fn rate_steps_and_exact_values() {
    let mut m = model(false);
    assert_eq!(
        update(&mut m, key(']')),
        [Effect::Send(Command::SetGlobalRate(Some(1.0)))]
    );
    assert!(update(&mut m, key('[')).is_empty(), "no cap to lower");
    update(&mut m, key('R'));
    let prompt = m.prompt.as_mut().unwrap();
    prompt.input = tui_input::Input::new("2.5".into());
    assert_eq!(
        update(&mut m, code(KeyCode::Enter)),
        [Effect::Send(Command::SetGlobalRate(Some(2.5)))]
    );
    update(&mut m, key('D'));
    assert_eq!(m.prompt.as_ref().unwrap().input.value(), "1s");
    m.prompt.as_mut().unwrap().input = tui_input::Input::new("fast".into());
    assert!(update(&mut m, code(KeyCode::Enter)).is_empty());
    assert!(m
        .prompt
        .as_ref()
        .unwrap()
        .error
        .as_deref()
        .unwrap()
        .starts_with("bad duration \"fast\""));
}

/// An attached model whose engine said the crawl finished, then closed.
fn finished_attached() -> Model {
    let mut m = model(false);
    m.attached = true;
    let done = Snapshot {
        state: CrawlState::Done,
        finish_reason: Some("page limit reached (3)".into()),
        ..(*m.latest).clone()
    };
    update(&mut m, Msg::Snapshot(Arc::new(done)));
    update(&mut m, Msg::EngineClosed);
    m
}

/// Sends `line` on the `:` line: the effects of Enter.
fn command_line(m: &mut Model, line: &str) -> Vec<Effect> {
    update(m, key(':'));
    typed(m, line);
    update(m, code(KeyCode::Enter))
}

#[test]
fn a_finished_crawl_refuses_steering_at_once_and_says_why() {
    let mut m = finished_attached();
    for line in ["pause shop.localhost:8080", "throttle * 1s", "rate 3"] {
        let effects = command_line(&mut m, line);
        assert!(
            !effects.iter().any(|e| matches!(e, Effect::Send(_))),
            "{line}: {effects:?}"
        );
        let status = m.status.as_ref().unwrap();
        assert_eq!(
            status.text, "the crawl has finished; nothing to steer",
            "{line}"
        );
    }
    assert!(update(&mut m, key('p')).is_empty(), "p sends nothing");
    assert!(m.pending.is_empty());
    assert!(!m.status.as_ref().unwrap().text.ends_with('…'));
    // Looking around still works.
    update(&mut m, key('2'));
    assert_eq!(m.pane, Pane::Alerts);
    assert!(update(&mut m, key('d')).is_empty(), "dismiss is not sent");
    assert_eq!(
        m.status.as_ref().unwrap().text,
        "the crawl has finished; nothing to steer"
    );
}

#[test]
fn a_gone_engine_refuses_commands_with_the_reason() {
    let mut m = model(false);
    m.attached = true;
    update(&mut m, Msg::EngineClosed);
    assert!(update(&mut m, key('p')).is_empty());
    let status = m.status.as_ref().unwrap();
    assert_eq!(status.level, Level::Error);
    assert!(status.text.starts_with("engine gone: "), "{}", status.text);
    assert!(!status.text.ends_with('…'), "{}", status.text);
}

#[test]
fn ctrl_c_after_the_engine_ended_leaves_without_claiming_a_detach() {
    let ctrl_c = Msg::Key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL));
    let mut m = finished_attached();
    assert_eq!(
        update(&mut m, ctrl_c.clone()),
        [Effect::Quit(TuiExit::EngineFinished)]
    );
    let mut m = model(false);
    m.attached = true;
    update(&mut m, Msg::EngineClosed);
    assert_eq!(
        update(&mut m, ctrl_c),
        [Effect::Quit(TuiExit::EngineFinished)]
    );
}

#[test]
fn the_engine_gone_over_the_socket_names_its_reason_and_the_commands_left_unanswered() {
    let mut m = model(false);
    m.attached = true;
    let effects = update(&mut m, key('p'));
    assert_eq!(effects, [Effect::Send(Command::Pause(Target::Global))]);
    update(
        &mut m,
        Msg::Sent {
            id: CommandId(1),
            what: "pause crawl".into(),
        },
    );
    let why = "the engine (pid 7) exited without a goodbye (killed or crashed)";
    let ended = EngineEvent::Ended {
        finished: false,
        reason: why.into(),
    };
    update(&mut m, Msg::Event(ended));
    assert_eq!(m.engine, EngineLife::Gone(why.into()));
    assert_eq!(
        m.status.as_ref().unwrap().text,
        format!("engine gone: {why}; q leaves")
    );
    assert!(m.pending.is_empty());
    let log: Vec<&str> = m.log.iter().map(|l| l.text.as_str()).collect();
    assert!(log.contains(&"pause crawl: no answer came"), "{log:?}");
    // The stream's close after it changes nothing.
    update(&mut m, Msg::EngineClosed);
    assert_eq!(m.engine, EngineLife::Gone(why.into()));
    assert!(update(&mut m, key('p')).is_empty());
    assert_eq!(
        m.status.as_ref().unwrap().text,
        format!("engine gone: {why}")
    );
}
