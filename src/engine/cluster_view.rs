//! What a snapshot says of a crawl shared by several workers. The engine
//! never fills it; `cluster::view` does, when it merges the workers'
//! snapshots into one for the TUI.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::control::HostKey;

/// The workers of a shared crawl and who holds what.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClusterView {
    /// The shared crawl's name.
    pub crawl: String,
    /// Every worker with a heartbeat, by name.
    pub workers: Vec<WorkerView>,
    /// The worker holding the lease of each listed host.
    pub held_by: BTreeMap<HostKey, String>,
    /// The worker that raised each listed alert, by the snapshot's alert id.
    pub alert_workers: BTreeMap<u64, String>,
}

/// One worker as its heartbeat describes it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkerView {
    /// The worker's name.
    pub worker: String,
    /// Its crawldeck version.
    pub version: String,
    /// A heartbeat came within its staleness limit.
    pub alive: bool,
    /// The crawl is over on it: it only serves its records.
    #[serde(default)]
    pub serving: bool,
    /// Pages it completed since it started.
    pub pages: u64,
    /// Its pages per second at its last heartbeat.
    pub pages_per_s: f64,
    /// Hosts whose lease it holds.
    pub hosts_held: u64,
    /// URLs it has in flight.
    pub in_flight: u64,
    /// Milliseconds since its last heartbeat.
    pub last_beat_ms_ago: u64,
}
