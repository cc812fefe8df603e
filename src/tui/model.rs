//! The workstation's state: the latest engine snapshot plus what only the UI
//! keeps (rate history, log lines, recent fetches, selection, prompts).

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use ratatui::crossterm::event::KeyEvent;
use tui_input::Input;

use super::keys::{KeyMap, Mode};
use crate::engine::control::{Command, HostKey};
use crate::engine::telemetry::{EngineEvent, HostView, Level, Snapshot};
use crate::text::strip_control;

/// Seconds of pages/s history kept for the sparkline.
pub const HISTORY_SECS: usize = 600;
pub const LOG_LINES: usize = 500;
pub const RECENT_FETCHES: usize = 20;
/// Hosts whose recent fetches are remembered.
const RECENT_HOSTS: usize = 1000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pane {
    Hosts,
    Alerts,
    Rules,
    Log,
}

impl Pane {
    pub const ALL: [Pane; 4] = [Pane::Hosts, Pane::Alerts, Pane::Rules, Pane::Log];

    pub fn index(self) -> usize {
        Pane::ALL.iter().position(|p| *p == self).unwrap_or(0)
    }

    pub fn title(self) -> &'static str {
        match self {
            Pane::Hosts => "Hosts",
            Pane::Alerts => "Alerts",
            Pane::Rules => "Rules",
            Pane::Log => "Log",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortColumn {
    Host,
    Queue,
    InFlight,
    Rate,
    Latency,
    Delay,
    Errors,
    Breaker,
}

impl SortColumn {
    pub const ALL: [SortColumn; 8] = [
        SortColumn::Host,
        SortColumn::Queue,
        SortColumn::InFlight,
        SortColumn::Rate,
        SortColumn::Latency,
        SortColumn::Delay,
        SortColumn::Errors,
        SortColumn::Breaker,
    ];

    pub fn title(self) -> &'static str {
        match self {
            SortColumn::Host => "host",
            SortColumn::Queue => "queue",
            SortColumn::InFlight => "in flight",
            SortColumn::Rate => "req/s",
            SortColumn::Latency => "latency",
            SortColumn::Delay => "delay",
            SortColumn::Errors => "errors",
            SortColumn::Breaker => "breaker",
        }
    }
}

/// What a one-line prompt is asking for.
#[derive(Debug, Clone, PartialEq)]
pub enum PromptKind {
    Filter,
    Command,
    Blacklist {
        host: Option<HostKey>,
    },
    EditAlert {
        alert_id: u64,
        host: Option<HostKey>,
    },
    Delay(HostKey),
    Concurrency(HostKey),
    Rate,
    Seed,
}

impl PromptKind {
    pub fn label(&self) -> String {
        match self {
            PromptKind::Filter => "filter hosts: ".into(),
            PromptKind::Command => ":".into(),
            PromptKind::Blacklist { host: None } => "blacklist (regex, or glob:PATTERN): ".into(),
            PromptKind::Blacklist { host: Some(h) } => {
                format!("blacklist on {h} (regex, or glob:PATTERN): ")
            }
            PromptKind::EditAlert { alert_id, .. } => format!("rule for alert #{alert_id}: "),
            PromptKind::Delay(h) => format!("delay for {h} (e.g. 500ms, 2s; empty = default): "),
            PromptKind::Concurrency(h) => format!("requests in flight for {h} (empty = default): "),
            PromptKind::Rate => "global pages/s cap (empty or 0 = none): ".into(),
            PromptKind::Seed => "seed URL: ".into(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Prompt {
    pub kind: PromptKind,
    pub input: Input,
    /// Why the last submit was refused (bad regex, bad duration…).
    pub error: Option<String>,
}

#[derive(Debug, Clone)]
pub enum Overlay {
    None,
    Help { scroll: u16 },
    Detail(HostKey),
    Prompt(Prompt),
    ConfirmQuit,
}

#[derive(Debug, Clone, PartialEq)]
pub struct LogLine {
    pub level: Level,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct FetchLine {
    pub url: String,
    pub status: Option<u16>,
    pub latency: Duration,
    pub bytes: u64,
    pub error: Option<String>,
}

#[derive(Debug)]
pub enum Msg {
    Key(KeyEvent),
    Snapshot(Arc<Snapshot>),
    Event(EngineEvent),
    /// One second passed (history sampling).
    Second,
    /// The engine stopped (its channels closed).
    EngineClosed,
    Terminate,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    Send(Command),
    Quit,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct ViewOptions {
    pub color: bool,
    pub readonly: bool,
}

pub struct Model {
    pub snapshot: Arc<Snapshot>,
    /// While frozen the display keeps this snapshot; the crawl continues.
    pub frozen: Option<Arc<Snapshot>>,
    pub history: VecDeque<u64>,
    pub log: VecDeque<LogLine>,
    pub recent: HashMap<HostKey, VecDeque<FetchLine>>,
    pub pane: Pane,
    pub selected: [usize; 4],
    pub sort: SortColumn,
    pub sort_desc: bool,
    pub filter: String,
    pub overlay: Overlay,
    pub status: Option<(Level, String)>,
    pub keymap: KeyMap,
    pub options: ViewOptions,
    /// Quit was confirmed: waiting for the engine to checkpoint and stop.
    pub quitting: bool,
    pub engine_closed: bool,
}

impl Model {
    pub fn new(keymap: KeyMap, warnings: Vec<String>, options: ViewOptions) -> Model {
        let mut model = Model {
            snapshot: Arc::new(Snapshot::default()),
            frozen: None,
            history: VecDeque::new(),
            log: VecDeque::new(),
            recent: HashMap::new(),
            pane: Pane::Hosts,
            selected: [0; 4],
            sort: SortColumn::Queue,
            sort_desc: true,
            filter: String::new(),
            overlay: Overlay::None,
            status: None,
            keymap,
            options,
            quitting: false,
            engine_closed: false,
        };
        for w in warnings {
            model.push_log(Level::Warn, format!("keys: {w}"));
            model.status = Some((Level::Warn, format!("key map: {w}")));
        }
        model
    }

    /// The snapshot on display (frozen or live).
    pub fn shown(&self) -> &Snapshot {
        self.frozen.as_deref().unwrap_or(&self.snapshot)
    }

    pub fn push_log(&mut self, level: Level, text: String) {
        if self.log.len() == LOG_LINES {
            self.log.pop_front();
        }
        self.log.push_back(LogLine {
            level,
            text: strip_control(&text).into_owned(),
        });
    }

    pub fn record_fetch(&mut self, host: HostKey, line: FetchLine) {
        if !self.recent.contains_key(&host) && self.recent.len() >= RECENT_HOSTS {
            return;
        }
        let lines = self.recent.entry(host).or_default();
        if lines.len() == RECENT_FETCHES {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    /// Hosts as the table shows them: filtered, then sorted.
    pub fn host_rows(&self) -> Vec<&HostView> {
        let filter = self.filter.to_lowercase();
        let mut rows: Vec<&HostView> = self
            .shown()
            .hosts
            .iter()
            .filter(|h| filter.is_empty() || h.host.to_lowercase().contains(&filter))
            .collect();
        rows.sort_by(|a, b| {
            let order = match self.sort {
                SortColumn::Host => a.host.cmp(&b.host),
                SortColumn::Queue => a.queued.cmp(&b.queued),
                SortColumn::InFlight => a.in_flight.cmp(&b.in_flight),
                SortColumn::Rate => a.req_per_sec.total_cmp(&b.req_per_sec),
                SortColumn::Latency => a.mean_latency.cmp(&b.mean_latency),
                SortColumn::Delay => a.delay.cmp(&b.delay),
                SortColumn::Errors => {
                    (a.status.errors + a.status.s5xx).cmp(&(b.status.errors + b.status.s5xx))
                }
                SortColumn::Breaker => (a.breaker.phase as u8).cmp(&(b.breaker.phase as u8)),
            };
            let order = if self.sort_desc {
                order.reverse()
            } else {
                order
            };
            order.then_with(|| a.host.cmp(&b.host))
        });
        rows
    }

    pub fn selected_host(&self) -> Option<HostKey> {
        let rows = self.host_rows();
        rows.get(self.selected[Pane::Hosts.index()])
            .or(rows.last())
            .map(|h| h.host.clone())
    }

    pub fn rows_in(&self, pane: Pane) -> usize {
        match pane {
            Pane::Hosts => self.host_rows().len(),
            Pane::Alerts => self.shown().alerts.len(),
            Pane::Rules => self.shown().rules.len(),
            Pane::Log => self.log.len(),
        }
    }

    pub fn mode(&self) -> Mode {
        match &self.overlay {
            Overlay::None | Overlay::ConfirmQuit => Mode::Normal,
            Overlay::Help { .. } => Mode::Help,
            Overlay::Detail(_) => Mode::Detail,
            Overlay::Prompt(p) if p.kind == PromptKind::Command => Mode::Command,
            Overlay::Prompt(_) => Mode::Prompt,
        }
    }
}
