//! A quick throughput figure for the frontier over a real store.
