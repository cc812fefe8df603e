//! The integration tests, as one test binary: one link of the crate and its
//! dependencies instead of one per file, which keeps a clean build small.
//! Each file of `tests/` is a module here; `cargo test --test suite cluster::`
//! runs one file's tests.

mod common;

mod architecture;
mod attach;
mod attach_pty;
mod cli;
mod cluster;
mod cluster_ctl;
mod cluster_outage;
mod cluster_tui;
mod disk_faults;
mod engine_hostile;
mod engine_polite;
mod identity;
mod inspector;
mod inspector_pty;
mod private_files;
mod pty;
mod quarantine_pty;
mod records;
mod recrawl;
mod results;
mod resume;
mod robots_cases;
mod slow_servers;
mod ssrf;
mod traps;
mod triage;
mod tui_app;
mod tui_inspector;
mod tui_keys;
mod tui_render;
mod tui_window;
