//! Simulated disk faults, for tests and fire drills: a switch that makes
//! WARC writes and crawl-database commits fail the way a full disk does, and
//! that can be turned off again ("space freed") while the crawl is paused.

use std::io;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

/// Shared by the engine's writers; clones see the same switch.
#[derive(Debug, Clone)]
pub struct DiskFaults {
    /// Writes that still succeed; negative: the disk never fills.
    writes_left: Arc<AtomicI64>,
}

impl Default for DiskFaults {
    fn default() -> Self {
        DiskFaults {
            writes_left: Arc::new(AtomicI64::new(-1)),
        }
    }
}

impl DiskFaults {
    /// The disk fills after `writes` more writes (WARC writes and database
    /// commits counted together).
    pub fn full_after(writes: u64) -> DiskFaults {
        let faults = DiskFaults::default();
        faults
            .writes_left
            .store(writes.min(i64::MAX as u64) as i64, Ordering::SeqCst);
        faults
    }

    /// Space is freed: every later write succeeds.
    pub fn heal(&self) {
        self.writes_left.store(-1, Ordering::SeqCst);
    }

    /// Whether the disk is full now (no write left).
    pub fn is_full(&self) -> bool {
        self.writes_left.load(Ordering::SeqCst) == 0
    }

    /// Takes one write; `Err` (as `ENOSPC` would) once none is left.
    pub(crate) fn take_write(&self) -> io::Result<()> {
        let taken = self
            .writes_left
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| match left {
                0 => None,
                n if n < 0 => Some(n),
                n => Some(n - 1),
            });
        match taken {
            Ok(_) => Ok(()),
            Err(_) => Err(io::Error::new(
                io::ErrorKind::StorageFull,
                "No space left on device (simulated)",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_disk_fills_after_its_writes_and_heals() {
        let faults = DiskFaults::full_after(2);
        assert!(faults.take_write().is_ok());
        assert!(
            faults.clone().take_write().is_ok(),
            "clones share the count"
        );
        let err = faults.take_write().unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::StorageFull);
        assert!(faults.is_full());
        faults.heal();
        assert!((0..100).all(|_| faults.take_write().is_ok()));
    }

    #[test]
    fn the_default_disk_never_fills() {
        let faults = DiskFaults::default();
        assert!((0..1000).all(|_| faults.take_write().is_ok()));
        assert!(!faults.is_full());
    }
}
