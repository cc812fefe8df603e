//! The workstation: a live terminal UI over a running engine.
//!
//! `app` owns the terminal and the event loop, `update` decides (pure), `ui`
//! draws (never mutates), `keys`/`action` map keys to what they do.
//! `update` is the only dispatcher: it hands actions to `view`, `prompt` and
//! `targets`, which change the model and return values (`effect::Effect`, or an
//! action for `update` to run); they never call back into `update`.

pub mod action;
pub mod app;
mod audit;
pub mod audit_state;
pub mod command;
pub mod effect;
mod inspector;
pub mod inspector_state;
pub mod keys;
pub mod model;
mod pages;
pub mod pages_state;
pub mod preview;
mod prompt;
mod quarantine;
pub mod quarantine_state;
pub mod records;
mod targets;
pub mod ui;
pub mod update;
mod view;

use std::path::PathBuf;

pub use app::run;
pub use effect::TuiExit;
pub use model::HostList;
pub use records::{Records, RemoteRecords};

/// How the workstation was asked to run (from the command line).
#[derive(Debug, Clone, Default)]
pub struct TuiOptions {
    pub no_color: bool,
    pub no_mouse: bool,
    pub readonly: bool,
    /// The engine runs in another process: quitting offers to detach.
    pub attached: bool,
    /// `--keys`; else `$XDG_CONFIG_HOME/crawldeck/keybindings.toml`.
    pub keys_file: Option<PathBuf>,
    /// The crawl's records: host lists, the inspector and the quarantine read them.
    pub records: Option<Records>,
}
