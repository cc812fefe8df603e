//! The TUI's state: the latest snapshot, what the operator is looking at, and
//! what it keeps of the event stream (log, recent fetches, pages/s history).

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use tui_input::Input;

use super::keys::{KeyMap, Mode};
use crate::engine::control::{CommandId, HostKey, PatternKind};
use crate::engine::host_order::ordered;
use crate::engine::host_window::HostWindow;
pub use crate::engine::host_window::SortColumn;
use crate::engine::telemetry::{HostView, Level, Snapshot};

/// Log lines kept; the oldest go first.
pub const LOG_CAPACITY: usize = 500;
/// Seconds of pages/s history kept for the sparkline.
pub const HISTORY_CAPACITY: usize = 240;
/// Recent fetches kept per host for the detail view.
pub const RECENT_FETCHES: usize = 20;
/// Hosts whose recent fetches are kept at once.
pub const RECENT_HOSTS: usize = 256;

/// The main panes, one shown at a time (two in the wide layout).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pane {
    Hosts,
    Alerts,
    Rules,
    Log,
    Queues,
    /// The workers of a shared crawl: shown only over a cluster.
    Workers,
    /// URLs parked by open alerts, read from the store on demand.
    Quarantine,
    /// The crawl's pages as a live table, read a band at a time.
    Pages,
    /// The audit's findings, re-read while in front.
    Audit,
}

impl Pane {
    /// Every pane, in tab order.
    pub const ALL: [Pane; 9] = [
        Pane::Hosts,
        Pane::Alerts,
        Pane::Rules,
        Pane::Log,
        Pane::Queues,
        Pane::Workers,
        Pane::Quarantine,
        Pane::Pages,
        Pane::Audit,
    ];

    /// The tab title.
    pub fn title(self) -> &'static str {
        match self {
            Pane::Hosts => "Hosts",
            Pane::Alerts => "Alerts",
            Pane::Rules => "Rules",
            Pane::Log => "Log",
            Pane::Queues => "Queues",
            Pane::Workers => "Workers",
            Pane::Quarantine => "Quarantine",
            Pane::Pages => "Pages",
            Pane::Audit => "Audit",
        }
    }
}

/// What a one-line prompt will do with its text.
#[derive(Debug, Clone, PartialEq)]
pub enum PromptKind {
    Filter,
    /// The Pages view's filter.
    PagesFilter,
    Rule {
        kind: PatternKind,
        host: Option<HostKey>,
    },
    AcceptAlert {
        alert_id: u64,
        kind: PatternKind,
        host: Option<HostKey>,
    },
    HostDelay(HostKey),
    HostConcurrency(HostKey),
    GlobalRate,
    Seed,
    Command,
    /// A name for a custom extraction of the inspector's last `:select`.
    Extraction {
        selector: String,
    },
}

impl PromptKind {
    /// What the prompt shows before its text (empty for the command line).
    pub fn label(&self) -> String {
        match self {
            PromptKind::Filter => "filter hosts".into(),
            PromptKind::PagesFilter => {
                "filter pages (status: fate: indexable: host: type: audit: words)".into()
            }
            PromptKind::Rule {
                kind: PatternKind::Regex,
                host,
            } => scoped("blacklist regex", host),
            PromptKind::Rule {
                kind: PatternKind::Glob,
                host,
            } => scoped("blacklist glob", host),
            PromptKind::AcceptAlert { alert_id, .. } => {
                format!("accept alert #{alert_id} with rule")
            }
            PromptKind::HostDelay(h) => format!("delay for {h} (e.g. 500ms, off)"),
            PromptKind::HostConcurrency(h) => format!("concurrency for {h} (number, off)"),
            PromptKind::GlobalRate => "global pages/s (number, off)".into(),
            PromptKind::Seed => "seed URL".into(),
            PromptKind::Command => String::new(),
            PromptKind::Extraction { selector } => {
                format!("extract `{selector}` as NAME (or NAME@attr)")
            }
        }
    }
}

/// `what`, limited to `host` when there is one.
fn scoped(what: &str, host: &Option<HostKey>) -> String {
    match host {
        Some(h) => format!("{what} for {h}"),
        None => what.to_string(),
    }
}

/// An open one-line prompt.
#[derive(Debug, Clone)]
pub struct Prompt {
    pub kind: PromptKind,
    pub input: Input,
    pub error: Option<String>,
    /// Completion candidates after an ambiguous Tab.
    pub hint: Option<String>,
}

/// The live preview under a rule prompt: what the typed rule would match.
#[derive(Debug, Clone, Default)]
pub struct RulePreview {
    /// The prompt kind and text last seen; a change starts a new wait.
    pub watched: Option<(PromptKind, String)>,
    /// Bumped on every change: a timer or an answer for an older text is dropped.
    pub generation: u64,
    /// The preview command asked for the current text.
    pub asked: Option<CommandId>,
    /// Preview commands not yet answered; their answers never reach the log.
    pub in_flight: HashSet<CommandId>,
    /// What is shown: the engine's answer as lines, or why the pattern is refused.
    pub shown: Option<Result<Vec<String>, String>>,
}

/// What is drawn over the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overlay {
    None,
    Help,
    ConfirmQuit,
}

/// One line of the log pane.
#[derive(Debug, Clone, PartialEq)]
pub struct LogLine {
    pub at: Duration,
    pub level: Level,
    pub text: String,
}

/// One fetch in a host's detail view.
#[derive(Debug, Clone, PartialEq)]
pub struct FetchLine {
    pub url: String,
    pub status: Option<u16>,
    pub latency: Duration,
    pub bytes: u64,
    pub error: Option<String>,
}

/// The message on the bottom line.
#[derive(Debug, Clone, PartialEq)]
pub struct StatusLine {
    pub level: Level,
    pub text: String,
}

/// The engine as this UI last heard of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EngineLife {
    /// Answering commands.
    Running,
    /// The crawl ended as it should; why, as the engine said.
    Finished(String),
    /// The engine went away without finishing; why, as far as known.
    Gone(String),
}

impl EngineLife {
    /// Why nothing can be sent to the engine any more; `None` while it runs.
    pub fn refusal(&self) -> Option<String> {
        match self {
            EngineLife::Running => None,
            EngineLife::Finished(_) => Some("the crawl has finished; nothing to steer".into()),
            EngineLife::Gone(why) => Some(format!("engine gone: {why}")),
        }
    }
}

/// Where quitting stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quitting {
    No,
    /// Checkpoint and shutdown sent; waiting for the engine to finish.
    Checkpointing,
}

pub use crate::results::host_lists::HostList;

/// A host list as read (or still being read) from the store.
#[derive(Debug, Clone, PartialEq)]
pub struct HostListing {
    pub host: HostKey,
    pub list: HostList,
    /// `None` while it is being read; the lines, or why it could not be read.
    pub lines: Option<Result<Vec<String>, String>>,
}

/// Everything the TUI knows; `update` changes it, `ui` draws it.
pub struct Model {
    /// What is drawn (held still while frozen).
    pub shown: Arc<Snapshot>,
    /// The newest snapshot, even while frozen.
    pub latest: Arc<Snapshot>,
    pub frozen: bool,
    pub pane: Pane,
    pub overlay: Overlay,
    pub prompt: Option<Prompt>,
    /// Host whose detail view is open.
    pub detail: Option<HostKey>,
    /// The page inspector, drawn over everything but prompts while open.
    pub inspector: Option<super::inspector_state::Inspector>,
    /// A list of the detail view's host read from the store, shown instead of
    /// its recent fetches.
    pub host_listing: Option<HostListing>,
    /// The quarantine pane's read of parked URLs and its selection.
    pub quarantine: super::quarantine_state::QuarantineView,
    /// The Pages view: filter, order, selection and the band read.
    pub pages: super::pages_state::PagesView,
    /// The Audit view: the findings read and the selection.
    pub audit: super::audit_state::AuditView,
    /// Where host lists, the inspector and the quarantine read the crawl's records.
    pub records: Option<super::records::Records>,
    pub detail_scroll: usize,
    pub help_scroll: usize,
    /// The selected host's row in the sorted, filtered list.
    pub host_selected: usize,
    /// The first row the hosts table shows.
    pub host_top: usize,
    /// Rows the hosts table shows (0 until first drawn).
    pub host_rows: usize,
    /// The hosts window last told to the engine.
    pub window_sent: HostWindow,
    pub alert_selected: usize,
    pub rule_selected: usize,
    /// Lines scrolled back from the newest log line.
    pub log_scroll: usize,
    pub sort: SortColumn,
    pub sort_reverse: bool,
    pub filter: String,
    pub log: VecDeque<LogLine>,
    pub recent: HashMap<HostKey, VecDeque<FetchLine>>,
    /// Pages per second, one sample per second of crawl time (×10 for the sparkline).
    pub history: VecDeque<u64>,
    history_second: Option<u64>,
    pub status: Option<StatusLine>,
    pub pending: HashMap<CommandId, String>,
    pub rule_preview: RulePreview,
    pub quitting: Quitting,
    /// Running until the engine's stream ends (finished or gone).
    pub engine: EngineLife,
    pub readonly: bool,
    /// A viewer of an engine in another process: quitting offers to detach.
    pub attached: bool,
    pub no_color: bool,
    pub keymap: KeyMap,
    /// Rows a page-up/down moves (set from the last drawn height).
    pub page_rows: usize,
}

impl Model {
    /// A model with an empty snapshot, on the hosts pane.
    pub fn new(keymap: KeyMap, readonly: bool, no_color: bool) -> Self {
        let empty = Arc::new(Snapshot::default());
        Model {
            shown: empty.clone(),
            latest: empty,
            frozen: false,
            pane: Pane::Hosts,
            overlay: Overlay::None,
            prompt: None,
            detail: None,
            inspector: None,
            host_listing: None,
            quarantine: Default::default(),
            pages: Default::default(),
            audit: Default::default(),
            records: None,
            detail_scroll: 0,
            help_scroll: 0,
            host_selected: 0,
            host_top: 0,
            host_rows: 0,
            window_sent: HostWindow::default(),
            alert_selected: 0,
            rule_selected: 0,
            log_scroll: 0,
            sort: SortColumn::Queued,
            sort_reverse: false,
            filter: String::new(),
            log: VecDeque::new(),
            recent: HashMap::new(),
            history: VecDeque::new(),
            history_second: None,
            status: None,
            pending: HashMap::new(),
            rule_preview: RulePreview::default(),
            quitting: Quitting::No,
            engine: EngineLife::Running,
            readonly,
            attached: false,
            no_color,
            keymap,
            page_rows: 10,
        }
    }

    /// Whether the engine has finished or gone: nothing more will come from it.
    pub fn engine_closed(&self) -> bool {
        self.engine != EngineLife::Running
    }

    /// The key mode the operator is in.
    pub fn mode(&self) -> Mode {
        match (&self.prompt, self.overlay, &self.detail) {
            (Some(p), _, _) if p.kind == PromptKind::Command => Mode::Command,
            (Some(_), _, _) => Mode::Prompt,
            (None, Overlay::Help, _) => Mode::Help,
            (None, _, _) if self.inspector.is_some() => Mode::Inspector,
            (None, _, Some(_)) => Mode::Detail,
            _ => Mode::Normal,
        }
    }

    /// Takes a new snapshot (drawn unless frozen) and samples pages/s once per crawl second.
    pub fn set_snapshot(&mut self, snap: Arc<Snapshot>) {
        let second = snap.elapsed.as_secs();
        if self.history_second != Some(second) {
            self.history_second = Some(second);
            if self.history.len() == HISTORY_CAPACITY {
                self.history.pop_front();
            }
            self.history
                .push_back((snap.pages_per_sec.max(0.0) * 10.0).round() as u64);
        }
        self.latest = snap.clone();
        if !self.frozen || self.answers_new_window(&snap) {
            self.shown = snap;
        }
        self.clamp_selection();
    }

    /// Whether `snap` is cut to the window now on screen while the shown
    /// one is cut to an older window: a frozen table scrolled over the socket
    /// needs the rows it scrolls to.
    fn answers_new_window(&self, snap: &Snapshot) -> bool {
        let asked = |s: &Snapshot| s.window.as_ref().map(|w| w.asked.clone());
        let now = Some(self.window_sent.clone());
        asked(snap) == now && asked(&self.shown) != now
    }

    /// Appends to the log, stamped with the crawl's elapsed time.
    pub fn push_log(&mut self, level: Level, text: String) {
        if self.log.len() == LOG_CAPACITY {
            self.log.pop_front();
        }
        self.log.push_back(LogLine {
            at: self.latest.elapsed,
            level,
            text,
        });
    }

    /// Remembers a fetch for the host's detail view, within bounded memory.
    pub fn push_fetch(&mut self, host: HostKey, line: FetchLine) {
        if !self.recent.contains_key(&host) && self.recent.len() >= RECENT_HOSTS {
            // Forget a host that is not on screen; bounded memory beats completeness.
            let keep = self.detail.clone();
            if let Some(victim) = self
                .recent
                .keys()
                .find(|h| Some(*h) != keep.as_ref())
                .cloned()
            {
                self.recent.remove(&victim);
            }
        }
        let lines = self.recent.entry(host).or_default();
        if lines.len() == RECENT_FETCHES {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    /// Opens a one-line prompt of `kind` with `text` already typed.
    pub fn open_prompt(&mut self, kind: PromptKind, text: String) {
        self.prompt = Some(Prompt {
            kind,
            input: Input::new(text),
            error: None,
            hint: None,
        });
    }

    /// Shows a message on the bottom line.
    pub fn set_status(&mut self, level: Level, text: impl Into<String>) {
        self.status = Some(StatusLine {
            level,
            text: text.into(),
        });
    }

    /// The hosts the snapshot holds, after filter and sort: the whole table,
    /// or over the control socket the rows from [`Model::hosts_first`] on.
    pub fn visible_hosts(&self) -> Vec<&HostView> {
        ordered(
            &self.shown.hosts,
            self.sort,
            self.sort_reverse,
            &self.filter,
        )
    }

    /// The panes in tab order: the workers pane only over a shared crawl.
    pub fn panes(&self) -> Vec<Pane> {
        let cluster = self.latest.cluster.is_some();
        Pane::ALL
            .into_iter()
            .filter(|p| cluster || *p != Pane::Workers)
            .collect()
    }

    /// The table row of `visible_hosts()[0]`.
    pub fn hosts_first(&self) -> usize {
        self.shown.window.as_ref().map_or(0, |w| w.first)
    }

    /// Rows of the whole table (hosts that pass the filter).
    pub fn host_count(&self) -> usize {
        self.table_rows(|| self.visible_hosts().len())
    }

    /// Rows of the whole table, given how many of the snapshot's hosts pass
    /// the filter (asked only when the snapshot holds them all), so a caller
    /// that has sorted them already does not sort again.
    pub fn table_rows(&self, visible: impl FnOnce() -> usize) -> usize {
        self.shown
            .window
            .as_ref()
            .map_or_else(visible, |w| w.matching)
    }

    /// Hosts in the engine's list, before the filter.
    pub fn hosts_listed(&self) -> usize {
        self.shown
            .window
            .as_ref()
            .map_or(self.shown.hosts.len(), |w| w.listed)
    }

    /// The host the operator means: the detail view's, or the selected row's.
    pub fn selected_host(&self) -> Option<&HostView> {
        if let Some(detail) = &self.detail {
            return self.shown.host_detail(detail);
        }
        let row = self.host_selected.checked_sub(self.hosts_first())?;
        self.visible_hosts().get(row).copied()
    }

    /// The part of the hosts list on screen, as the engine is told it.
    pub fn host_window(&self) -> HostWindow {
        HostWindow {
            sort: self.sort,
            reverse: self.sort_reverse,
            filter: self.filter.clone(),
            first: self.host_top,
            rows: self.host_rows,
            detail: self.detail.clone(),
        }
    }

    /// Keeps every selection and scroll within what there is to select, and
    /// the selected host on screen.
    pub fn clamp_selection(&mut self) {
        let hosts = self.host_count();
        self.host_selected = self.host_selected.min(hosts.saturating_sub(1));
        self.follow_host_selection(hosts);
        self.alert_selected = self
            .alert_selected
            .min(self.shown.alerts.len().saturating_sub(1));
        self.rule_selected = self
            .rule_selected
            .min(self.shown.rules.len().saturating_sub(1));
        self.log_scroll = self.log_scroll.min(self.log.len().saturating_sub(1));
    }

    /// Scrolls the hosts table as little as shows the selected row, and no
    /// further than fills the screen.
    fn follow_host_selection(&mut self, hosts: usize) {
        if self.host_rows == 0 {
            return;
        }
        if self.host_selected < self.host_top {
            self.host_top = self.host_selected;
        } else if self.host_selected >= self.host_top + self.host_rows {
            self.host_top = self.host_selected + 1 - self.host_rows;
        }
        self.host_top = self.host_top.min(hosts.saturating_sub(self.host_rows));
    }
}
