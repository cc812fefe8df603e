//! What the process (or its waited-for children) has used so far, from
//! `getrusage` and `/proc/self/status`.

use std::time::Duration;

/// CPU time and context switches of the whole process.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// User + system CPU time.
    pub cpu: Duration,
    /// The process gave up the CPU waiting for something (`ru_nvcsw`).
    pub voluntary_switches: u64,
    /// The scheduler took the CPU away (`ru_nivcsw`).
    pub involuntary_switches: u64,
}

/// `getrusage(who)`; `None` where it fails.
fn rusage(who: libc::c_int) -> Option<libc::rusage> {
    // SAFETY: getrusage only writes into the struct it is given.
    let mut raw: libc::rusage = unsafe { std::mem::zeroed() };
    (unsafe { libc::getrusage(who, &mut raw) } == 0).then_some(raw)
}

impl Usage {
    /// This process's usage so far; `None` where `getrusage` fails.
    pub fn now() -> Option<Usage> {
        rusage(libc::RUSAGE_SELF).map(|raw| Usage::of(&raw))
    }

    /// What the children this process has waited for used, and the peak
    /// RSS of the largest of them.
    pub fn of_waited_children() -> Option<(Usage, u64)> {
        let raw = rusage(libc::RUSAGE_CHILDREN)?;
        // Linux gives `ru_maxrss` in kilobytes.
        Some((Usage::of(&raw), raw.ru_maxrss.max(0) as u64 * 1024))
    }

    fn of(raw: &libc::rusage) -> Usage {
        let time = |t: libc::timeval| {
            Duration::from_secs(t.tv_sec.max(0) as u64)
                + Duration::from_micros(t.tv_usec.max(0) as u64)
        };
        Usage {
            cpu: time(raw.ru_utime) + time(raw.ru_stime),
            voluntary_switches: raw.ru_nvcsw.max(0) as u64,
            involuntary_switches: raw.ru_nivcsw.max(0) as u64,
        }
    }

    /// What was used between `earlier` and `self`.
    pub fn since(&self, earlier: &Usage) -> Usage {
        Usage {
            cpu: self.cpu.saturating_sub(earlier.cpu),
            voluntary_switches: self
                .voluntary_switches
                .saturating_sub(earlier.voluntary_switches),
            involuntary_switches: self
                .involuntary_switches
                .saturating_sub(earlier.involuntary_switches),
        }
    }

    /// All context switches.
    pub fn switches(&self) -> u64 {
        self.voluntary_switches + self.involuntary_switches
    }
}

/// Peak resident set size (Linux `VmHWM`).
pub fn peak_rss() -> Option<u64> {
    status_kb("VmHWM:").map(|kb| kb * 1024)
}

/// Resident set size now (Linux `VmRSS`).
pub fn current_rss() -> Option<u64> {
    status_kb("VmRSS:").map(|kb| kb * 1024)
}

fn status_kb(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readings_grow_with_work_on_linux() {
        if !cfg!(target_os = "linux") {
            return;
        }
        let before = Usage::now().expect("getrusage works");
        let mut x = 0u64;
        while Usage::now().expect("getrusage works").cpu <= before.cpu {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        let after = Usage::now().expect("getrusage works");
        assert!(after.since(&before).cpu > Duration::ZERO, "{x}");
        assert_eq!(before.since(&after).cpu, Duration::ZERO, "saturates");
        // Read in this order: other tests may grow the process in between.
        let rss = current_rss().expect("VmRSS");
        assert!(rss > 1024 * 1024);
        assert!(peak_rss().expect("VmHWM") >= rss);
    }
}
