//! Running one crawl on several workers: the command stream every worker
//! reads, the local Redis server the tests (and a local cluster) use, the
//! status read from Redis, and the snapshots workers publish for the
//! cluster view.

pub mod attach;
pub mod commands;
pub mod ctl;
pub mod demo;
pub mod follow;
pub mod keeper;
pub mod listing;
pub mod local;
pub mod merge;
pub mod publish;
pub mod reads;
pub mod redis_server;
mod rows;
pub mod serving;
pub mod status;
pub mod steer;
pub mod view;
