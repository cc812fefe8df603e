//! crawldeck: a crawler workstation — an embedded, polite, persistent crawl
//! engine with a live terminal UI on top of it.

pub mod allocator;
pub mod background;
pub mod bench;
pub mod cli;
pub mod cluster;
pub mod control;
pub mod demo;
pub mod engine;
pub mod export;
pub mod headless;
pub mod remote;
pub mod results;
pub mod text;
pub mod tui;
