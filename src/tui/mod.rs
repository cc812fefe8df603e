//! The workstation: a live terminal UI over the running engine. It talks to
//! the engine only through `EngineHandle` (commands out, snapshots and events in).

mod action;
mod app;
mod command;
pub mod keys;
mod model;
pub(crate) mod ui;
mod update;

#[cfg(test)]
mod tests;

use std::path::PathBuf;

pub use app::run;

#[derive(Debug, Clone, Default)]
pub struct TuiOptions {
    pub no_color: bool,
    pub no_mouse: bool,
    pub readonly: bool,
    /// `--keys FILE`; otherwise `$XDG_CONFIG_HOME/crawldeck/keybindings.toml`.
    pub keys_file: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TuiExit {
    /// The operator quit; a checkpoint and shutdown were requested.
    Quit,
    /// The engine stopped on its own and the operator closed the UI.
    EngineFinished,
}
