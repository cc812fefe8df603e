//! What `update` asks the run loop to do, as values: the vocabulary that the
//! deciding modules (`update`, `prompt`, `targets`) share without importing each other.

use super::model::{EngineLife, HostList, Model};
use super::records::Records;
use crate::engine::control::{Command, RuleSpec};
use crate::engine::host_window::HostWindow;
use crate::engine::telemetry::Level;

/// Why the TUI returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TuiExit {
    /// The operator quit; a checkpoint was requested.
    Quit,
    /// The crawl finished and the operator closed the UI.
    EngineFinished,
    /// The operator left a crawl that runs on in its own process.
    Detach,
}

/// One thing the run loop does for `update`: the only way a decision reaches
/// the engine or ends the UI.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Send this command to the engine (the loop reports back with `Msg::Sent`).
    Send(Command),
    /// Tell the engine which part of the hosts list is on screen (over the
    /// control socket, snapshots then carry only those rows).
    Window(HostWindow),
    /// Leave the UI with this exit.
    Quit(TuiExit),
    /// Report `Msg::PreviewDue(generation)` after `delay` (the rule preview's wait for
    /// typing to pause).
    PreviewAfter {
        generation: u64,
        delay: std::time::Duration,
    },
    /// Ask the engine what the rule would match (the loop reports back with
    /// `Msg::PreviewSent`).
    SendPreview { generation: u64, spec: RuleSpec },
    /// Read a page for the inspector through the crawl's read path (answered by
    /// `Msg::Inspected`).
    Inspect { records: Records, url: String },
    /// Run `:select` on an inspected page (answered by `Msg::Selected`).
    Select {
        page: std::sync::Arc<crate::engine::inspect::PageInspection>,
        css: String,
    },
    /// Read the parked URLs by alert (answered by `Msg::QuarantineRead`).
    ReadQuarantine { records: Records },
    /// Read a band of the Pages view (answered by `Msg::PagesRead`).
    ReadPages {
        records: Records,
        request: crate::results::window::BandRequest,
    },
    /// Report `Msg::PagesFilterDue(generation)` after `delay` (the Pages
    /// filter's wait for typing to pause).
    PagesFilterAfter {
        generation: u64,
        delay: std::time::Duration,
    },
    /// Run the audit for the Audit view (answered by `Msg::AuditRead`).
    ReadAudit { records: Records },
    /// Read one of a host's lists (answered by `Msg::HostListed`).
    ListHost {
        records: Records,
        host: crate::engine::control::HostKey,
        list: HostList,
    },
}

/// Sends a command unless the engine has finished or gone (it would never be
/// answered) or the TUI is read-only and the command would change the crawl.
pub fn send(model: &mut Model, cmd: Command) -> Vec<Effect> {
    let what = command_label(&cmd);
    if let Some(why) = model.engine.refusal() {
        let level = match model.engine {
            EngineLife::Gone(_) => Level::Error,
            _ => Level::Warn,
        };
        model.set_status(level, why);
        return Vec::new();
    }
    if model.readonly && cmd.is_mutating() {
        model.set_status(Level::Warn, format!("read-only: {what} not sent"));
        return Vec::new();
    }
    model.set_status(Level::Info, format!("{what}…"));
    vec![Effect::Send(cmd)]
}

/// One short phrase per command, for the status line and the log.
pub fn command_label(cmd: &Command) -> String {
    cmd.label()
}
