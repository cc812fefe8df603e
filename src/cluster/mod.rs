//! Running one crawl on several workers: the command stream every worker
//! reads, the local Redis server the tests (and a local cluster) use, and
//! the status read from Redis.

pub mod commands;
pub mod ctl;
pub mod follow;
pub mod redis_server;
pub mod status;
