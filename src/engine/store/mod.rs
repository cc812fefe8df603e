//! (in progress)
pub mod warc;
