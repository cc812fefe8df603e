//! The engine's control API over a Unix socket, so a crawl outlives the
//! terminal that started it: any number of viewers attach, steer, detach.
//!
//! - `protocol`: the messages and their framing (the one wire format).
//! - `lock`: one engine per data directory (`engine.pid`), stale files cleaned up.
//! - `hub`: one engine fanned out to many viewers, local or remote.
//! - `server`: the listening socket and one task pair per viewer.
//! - `client` (and `pump`): a connection as an [`crate::engine::EngineHandle`].
//! - `reads` and `read_client`: one read of the crawl's results on a
//!   connection of its own (the engine's side, and the blocking reader's).
//! - `results`: a crawl's results, from its store or through `read_client`
//!   while an engine holds it.

#![warn(missing_docs)]

pub mod client;
pub mod hub;
pub mod lock;
pub mod protocol;
mod pump;
pub mod read_client;
pub mod reads;
pub mod results;
pub mod server;

#[cfg(test)]
mod reads_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod window_tests;
