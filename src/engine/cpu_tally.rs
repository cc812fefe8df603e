//! CPU time spent in one stretch of code, summed over the threads that run
//! it: what `crawldeck bench --archive-floor` sets beside the compressor's
//! floor. Off unless asked for, so a crawl pays one relaxed load a call; on,
//! two reads of the thread's CPU clock.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// The CPU time of one stretch of code, counted once started.
pub struct CpuTally {
    on: AtomicBool,
    nanos: AtomicU64,
}

impl CpuTally {
    /// Not counting yet.
    pub const fn new() -> CpuTally {
        CpuTally {
            on: AtomicBool::new(false),
            nanos: AtomicU64::new(0),
        }
    }

    /// Counts from now on, from zero.
    pub fn start(&self) {
        self.nanos.store(0, Ordering::Relaxed);
        self.on.store(true, Ordering::Relaxed);
    }

    /// Runs `work`, adding the CPU time it took this thread when counting.
    pub fn time<T>(&self, work: impl FnOnce() -> T) -> T {
        if !self.on.load(Ordering::Relaxed) {
            return work();
        }
        let before = thread_cpu();
        let result = work();
        let spent = thread_cpu().saturating_sub(before);
        self.nanos
            .fetch_add(spent.as_nanos() as u64, Ordering::Relaxed);
        result
    }

    /// Counted since the last start.
    pub fn total(&self) -> Duration {
        Duration::from_nanos(self.nanos.load(Ordering::Relaxed))
    }
}

/// CPU time of the calling thread.
pub fn thread_cpu() -> Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime only writes into the struct it is given.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) } != 0 {
        return Duration::ZERO;
    }
    Duration::new(
        now.tv_sec.max(0) as u64,
        now.tv_nsec.clamp(0, 999_999_999) as u32,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn busy() -> u64 {
        let started = thread_cpu();
        let mut x = 1u64;
        while thread_cpu() - started < Duration::from_millis(2) {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
        x
    }

    #[test]
    fn nothing_is_counted_until_started_and_work_is_counted_after() {
        let tally = CpuTally::new();
        tally.time(busy);
        assert_eq!(tally.total(), Duration::ZERO, "off by default");
        tally.start();
        tally.time(busy);
        assert!(
            tally.total() >= Duration::from_millis(2),
            "{:?}",
            tally.total()
        );
        tally.start();
        assert_eq!(tally.total(), Duration::ZERO, "a start counts from zero");
    }
}
