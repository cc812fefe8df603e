//! Running one crawl on several workers: the local Redis server the tests
//! (and a local cluster) use.

pub mod redis_server;
pub mod status;
