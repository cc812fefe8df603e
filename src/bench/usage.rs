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

/// CPU time of this process's threads whose name `named` accepts, from
/// Linux's `/proc/self/task` (names cut to 15 bytes); `None` where it cannot
/// be read or no thread has such a name.
#[cfg(test)]
pub fn threads_cpu(named: impl Fn(&str) -> bool) -> Option<Duration> {
    let [cpu] = threads_cpu_by(&[named]);
    cpu
}

/// [`threads_cpu`] of several groups from one read of each thread.
pub fn threads_cpu_by<F: Fn(&str) -> bool, const N: usize>(
    groups: &[F; N],
) -> [Option<Duration>; N] {
    // SAFETY: sysconf only reads a configuration value.
    let ticks_per_sec = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let tasks = match std::fs::read_dir("/proc/self/task") {
        Ok(tasks) if ticks_per_sec > 0 => tasks,
        _ => return [None; N],
    };
    let mut ticks = [None; N];
    for task in tasks.flatten() {
        // One read a thread: its name is in its stat line (a thread may end
        // in between, and is then left out).
        let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else {
            continue;
        };
        let (Some(name), Some(used)) = (stat_name(&stat), stat_cpu_ticks(&stat)) else {
            continue;
        };
        for (group, ticks) in groups.iter().zip(&mut ticks) {
            if group(name) {
                *ticks = Some(ticks.unwrap_or(0) + used);
            }
        }
    }
    ticks.map(|t| t.map(|t| Duration::from_secs_f64(t as f64 / ticks_per_sec as f64)))
}

/// The CPU groups of threads, chosen by name, used since this was made.
/// The crawl's threads end with it, so once none is left the last reading
/// stands (the bench reads with every snapshot: one /proc read a thread,
/// four times a second).
pub struct ThreadGroupsCpu<const N: usize> {
    named: [fn(&str) -> bool; N],
    at_start: [Duration; N],
    last: std::cell::Cell<[Option<Duration>; N]>,
}

impl<const N: usize> ThreadGroupsCpu<N> {
    pub fn new(named: [fn(&str) -> bool; N]) -> Self {
        ThreadGroupsCpu {
            named,
            at_start: threads_cpu_by(&named).map(Option::unwrap_or_default),
            last: std::cell::Cell::new([None; N]),
        }
    }

    pub fn since_start(&self) -> [Option<Duration>; N] {
        let now = threads_cpu_by(&self.named);
        let mut since = self.last.get();
        for (i, now) in now.into_iter().enumerate() {
            if let Some(now) = now {
                since[i] = Some(now.saturating_sub(self.at_start[i]));
            }
        }
        self.last.set(since);
        since
    }
}

/// The thread's name in a `/proc/.../stat` line: between the first `(` and
/// the last `)` (a name may hold both).
fn stat_name(stat: &str) -> Option<&str> {
    stat.get(stat.find('(')? + 1..stat.rfind(')')?)
}

/// User + system time of a `/proc/.../stat` line, in clock ticks: fields 14
/// and 15, counted after the name's closing parenthesis (a name may hold
/// spaces and parentheses).
fn stat_cpu_ticks(stat: &str) -> Option<u64> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    // The first field after the name is the third (the state).
    let mut fields = after_name.split_whitespace().skip(14 - 3);
    let user: u64 = fields.next()?.parse().ok()?;
    let system: u64 = fields.next()?.parse().ok()?;
    Some(user + system)
}

/// Peak resident set size (Linux `VmHWM`).
pub fn peak_rss() -> Option<u64> {
    status_kb("VmHWM:").map(|kb| kb * 1024)
}

/// Starts the peak over from the resident set size now (Linux 4.0 on:
/// `/proc/self/clear_refs`), so a second crawl in one process reports its
/// own peak, not the first one's. False where that cannot be done.
pub fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// Resident set size now (Linux `VmRSS`).
pub fn current_rss() -> Option<u64> {
    status_kb("VmRSS:").map(|kb| kb * 1024)
}

fn status_kb(field: &str) -> Option<u64> {
    status_field_kb(&std::fs::read_to_string("/proc/self/status").ok()?, field)
}

fn status_field_kb(status: &str, field: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reset_peak_forgets_memory_given_back() {
        if !std::path::Path::new("/proc/self/clear_refs").exists() {
            return;
        }
        const LEN: usize = 128 << 20;
        // SAFETY: a fresh private anonymous mapping, written within its
        // length, then unmapped; nothing else refers to it.
        unsafe {
            let map = libc::mmap(
                std::ptr::null_mut(),
                LEN,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            assert_ne!(map, libc::MAP_FAILED);
            std::ptr::write_bytes(map.cast::<u8>(), 1, LEN);
            assert_eq!(libc::munmap(map, LEN), 0);
        }
        let before = peak_rss().expect("VmHWM");
        assert!(reset_peak_rss(), "clear_refs");
        let after = peak_rss().expect("VmHWM");
        // Other tests may grow the process meanwhile, not by half of it.
        assert!(after + LEN as u64 / 2 < before, "{after} against {before}");
    }

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
        let rss = current_rss().expect("VmRSS");
        assert!(rss > 1024 * 1024);
        assert!(peak_rss().expect("VmHWM") > 1024 * 1024);
        // Both from one read: between two reads another test's crawl may
        // give memory back and start the peak over (`reset_peak_rss`).
        let status = std::fs::read_to_string("/proc/self/status").expect("status");
        let kb = |field| status_field_kb(&status, field).expect(field);
        assert!(kb("VmHWM:") >= kb("VmRSS:"), "{status}");
    }

    #[test]
    fn a_stat_line_gives_user_and_system_ticks_whatever_the_name() {
        let stat = "4242 (fjall:worker) S 1 4242 4242 0 -1 4194368 120 0 0 0 \
                    731 52 0 0 20 0 9 0 1234 0 0";
        assert_eq!(stat_cpu_ticks(stat), Some(783));
        let odd = "7 (a) b (c) R 1 7 7 0 -1 0 0 0 0 0 5 6 0 0";
        assert_eq!(
            stat_cpu_ticks(odd),
            Some(11),
            "counted after the last parenthesis"
        );
        assert_eq!(stat_cpu_ticks("7 (cut) R 1 7"), None);
        assert_eq!(stat_name(stat), Some("fjall:worker"));
        assert_eq!(stat_name(odd), Some("a) b (c"));
        assert_eq!(stat_name("7 no name"), None);
    }

    #[test]
    fn the_cpu_of_named_threads_is_summed_on_linux() {
        if !cfg!(target_os = "linux") {
            return;
        }
        let name = "usage-test-spin";
        assert_eq!(
            threads_cpu(|n| n == name),
            None,
            "no thread has the name yet"
        );
        let (done, stop) = std::sync::mpsc::channel::<()>();
        let spinner = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                let mut x = 0u64;
                while stop.try_recv().is_err() {
                    x = x.wrapping_add(std::hint::black_box(1));
                }
                x
            })
            .expect("spawning a thread");
        // The kernel counts CPU time in ticks: wait for the first one.
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        // By a prefix, as the bench finds the page threads.
        let by_prefix = |n: &str| n.starts_with("usage-test-");
        let mut seen = threads_cpu(by_prefix);
        while seen.is_none_or(|cpu| cpu.is_zero()) && std::time::Instant::now() < deadline {
            std::thread::yield_now();
            seen = threads_cpu(by_prefix);
        }
        // Several groups from one read: each its own threads.
        let in_groups = threads_cpu_by(&[
            (|n: &str| n.starts_with("usage-test-")) as fn(&str) -> bool,
            |n: &str| n == "no-such-thread",
        ]);
        done.send(()).expect("the spinner is alive");
        spinner.join().expect("the spinner ends");
        assert!(seen.is_some_and(|cpu| cpu > Duration::ZERO), "{seen:?}");
        assert!(in_groups[0].is_some_and(|cpu| cpu >= seen.unwrap_or_default()));
        assert_eq!(in_groups[1], None);
        assert_eq!(threads_cpu(|n| n == "no-such-thread"), None);
    }
}
