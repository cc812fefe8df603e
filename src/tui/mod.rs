//! The workstation: a live terminal UI over a running engine.
//!
//! `app` owns the terminal and the event loop, `update` decides (pure), `ui`
//! draws (never mutates), `keys`/`action` map keys to what they do.
//! `update` is the only dispatcher: it hands actions to `view`, `prompt` and
//! `targets`, which change the model and return values (`effect::Effect`, or an
//! action for `update` to run); they never call back into `update`.

pub mod action;
pub mod app;
pub mod command;
pub mod effect;
mod inspector;
pub mod inspector_state;
pub mod keys;
pub mod model;
pub mod preview;
mod prompt;
mod quarantine;
pub mod quarantine_state;
mod targets;
pub mod ui;
pub mod update;
mod view;

use std::path::PathBuf;

pub use app::run;
pub use effect::TuiExit;

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
    /// The crawl's data directory: host lists in the detail view read it.
    pub data_dir: Option<PathBuf>,
}
