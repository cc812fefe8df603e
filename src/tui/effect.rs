//! What `update` asks the run loop to do, as values: the vocabulary that the
//! deciding modules (`update`, `prompt`, `targets`) share without importing each other.

use super::model::{HostList, Model};
use crate::engine::control::{Command, Target};
use crate::engine::telemetry::Level;

/// Why the TUI returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TuiExit {
    /// The operator quit; a checkpoint was requested.
    Quit,
    /// The crawl finished and the operator closed the UI.
    EngineFinished,
}

/// One thing the run loop does for `update`: the only way a decision reaches
/// the engine or ends the UI.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Send this command to the engine (the loop reports back with `Msg::Sent`).
    Send(Command),
    /// Leave the UI with this exit.
    Quit(TuiExit),
    /// Read one of a host's lists from the store (answered by `Msg::HostListed`).
    ListHost {
        data_dir: std::path::PathBuf,
        host: crate::engine::control::HostKey,
        list: HostList,
    },
}

/// Sends a command unless the TUI is read-only and the command would change the crawl.
pub fn send(model: &mut Model, cmd: Command) -> Vec<Effect> {
    let what = command_label(&cmd);
    if model.readonly && cmd.is_mutating() {
        model.set_status(Level::Warn, format!("read-only: {what} not sent"));
        return Vec::new();
    }
    model.set_status(Level::Info, format!("{what}…"));
    vec![Effect::Send(cmd)]
}

/// One short phrase per command, for the status line and the log.
pub fn command_label(cmd: &Command) -> String {
    let target = |t: &Target| match t {
        Target::Global => "crawl".to_string(),
        Target::Host(h) => h.clone(),
    };
    match cmd {
        Command::Pause(t) => format!("pause {}", target(t)),
        Command::Resume(t) => format!("resume {}", target(t)),
        Command::AddRule(r) => format!("add rule {}", r.pattern),
        Command::RemoveRule { rule_id } => format!("remove rule #{rule_id}"),
        Command::SetHostDelay {
            host,
            delay: Some(d),
        } => format!("delay {host} {}", humantime::format_duration(*d)),
        Command::SetHostDelay { host, delay: None } => format!("delay {host} default"),
        Command::SetHostConcurrency { host, max: Some(n) } => format!("concurrency {host} {n}"),
        Command::SetHostConcurrency { host, max: None } => format!("concurrency {host} default"),
        Command::SetGlobalDelay(d) => format!("global delay {}", humantime::format_duration(*d)),
        Command::SetGlobalConcurrency(n) => format!("global concurrency {n}"),
        Command::SetGlobalRate(Some(r)) => format!("rate {r} pages/s"),
        Command::SetGlobalRate(None) => "rate unlimited".into(),
        Command::AddSeed(u) => format!("seed {u}"),
        Command::SetHostBreaker {
            host,
            thresholds: Some(t),
        } => format!(
            "breaker {host}: {} failures, cooldown {}",
            t.consecutive_failures,
            humantime::format_duration(t.cooldown)
        ),
        Command::SetHostBreaker {
            host,
            thresholds: None,
        } => format!("breaker {host} default"),
        Command::ResetBreaker(h) => format!("reset breaker {h}"),
        Command::ForceOpenBreaker(h) => format!("open breaker {h}"),
        Command::AcceptAlert { alert_id, .. } => format!("accept alert #{alert_id}"),
        Command::DismissAlert { alert_id } => format!("dismiss alert #{alert_id}"),
        Command::Checkpoint => "checkpoint".into(),
        Command::Shutdown => "shutdown".into(),
    }
}
