//! How the kernel schedules the engine's threads.
//!
//! The threads that wake for events (the async runtime's workers, which
//! fetch, and the crawl loop, started from the runtime's blocking pool) run
//! under Linux's `SCHED_BATCH`: woken, such a thread waits for the running
//! thread's time slice to end instead of preempting it. When the page
//! threads keep the cores busy (compressing the archive, say), every answer
//! and every page report otherwise preempted a page thread, and the woken
//! thread handled one event and slept again: ~3 context switches a page
//! against ~0.6, and ~0.05 ms more CPU a page, a fifth of the work the page
//! threads did. Waiting for the turn lets events gather. A thread or
//! process inherits the policy of the thread that made it, so the page
//! threads set themselves back to the ordinary policy, and the servers the
//! engine starts ([`ordinary_child`]: the bench's web, redis-server) start
//! under it.

use std::io;
use std::process::Command;

/// Puts the calling thread under `SCHED_BATCH` (no preemption on waking).
fn batch_this_thread() -> io::Result<()> {
    set_this_thread(Policy::Batch)
}

/// Puts the calling thread back under the ordinary policy.
pub(crate) fn ordinary_this_thread() -> io::Result<()> {
    set_this_thread(Policy::Ordinary)
}

/// Makes `command`'s process start under the ordinary policy, whichever
/// thread spawns it: a server the engine starts is scheduled as it would
/// be on its own. Where the policy cannot be set, the process starts
/// anyway, under the one it inherits, as the engine's threads keep theirs.
pub(crate) fn ordinary_child(command: &mut Command) -> &mut Command {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: between fork and exec the closure makes one system call,
        // async-signal-safe, and allocates nothing (an OS error is a code).
        unsafe {
            command.pre_exec(|| {
                let _ = ordinary_this_thread();
                Ok(())
            });
        }
    }
    command
}

/// The async runtime an engine runs on: one worker a core, each under
/// `SCHED_BATCH`, as are its blocking pool's threads (the crawl loop's too).
pub fn engine_runtime() -> io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .on_thread_start(|| {
            if let Err(e) = batch_this_thread() {
                tracing::debug!(error = %e, "runtime thread keeps the ordinary scheduling policy");
            }
        })
        .build()
}

/// The two policies the engine uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Policy {
    /// `SCHED_OTHER`.
    Ordinary,
    /// `SCHED_BATCH`.
    Batch,
}

#[cfg(target_os = "linux")]
fn set_this_thread(policy: Policy) -> io::Result<()> {
    let param = libc::sched_param { sched_priority: 0 };
    let policy = match policy {
        Policy::Ordinary => libc::SCHED_OTHER,
        Policy::Batch => libc::SCHED_BATCH,
    };
    // SAFETY: pid 0 is the calling thread; `param` is a valid struct that
    // the call only reads. Either policy needs no privilege.
    if unsafe { libc::sched_setscheduler(0, policy, &param) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Elsewhere the threads keep the system's policy.
#[cfg(not(target_os = "linux"))]
fn set_this_thread(_policy: Policy) -> io::Result<()> {
    Ok(())
}

/// The calling thread's policy; `None` for any other or on error.
#[cfg(all(test, target_os = "linux"))]
pub(crate) fn this_thread() -> Option<Policy> {
    policy_of(0)
}

/// The policy of thread or process `pid` (0: the calling thread).
#[cfg(all(test, target_os = "linux"))]
fn policy_of(pid: libc::pid_t) -> Option<Policy> {
    // SAFETY: the call takes no pointers.
    let policy = unsafe { libc::sched_getscheduler(pid) };
    match policy & !libc::SCHED_RESET_ON_FORK {
        libc::SCHED_OTHER => Some(Policy::Ordinary),
        libc::SCHED_BATCH => Some(Policy::Batch),
        _ => None,
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn a_child_started_by_a_batch_thread_runs_under_the_ordinary_policy() {
        let policies = std::thread::spawn(|| {
            batch_this_thread().expect("SCHED_BATCH needs no privilege");
            let mut inheriting = Command::new("sleep").arg("10").spawn().expect("sleep runs");
            let mut sleep = Command::new("sleep");
            let mut ordinary = ordinary_child(sleep.arg("10")).spawn().expect("sleep runs");
            let policies = [&inheriting, &ordinary].map(|child| policy_of(child.id() as i32));
            for child in [&mut inheriting, &mut ordinary] {
                child.kill().expect("the test's own child");
                child.wait().expect("reaped");
            }
            policies
        })
        .join()
        .expect("the thread ran");
        assert_eq!(
            policies[0],
            Some(Policy::Batch),
            "a child inherits the policy"
        );
        assert_eq!(
            policies[1],
            Some(Policy::Ordinary),
            "unless started ordinary"
        );
    }

    #[test]
    fn a_thread_goes_to_batch_and_back() {
        std::thread::spawn(|| {
            batch_this_thread().expect("SCHED_BATCH needs no privilege");
            assert_eq!(this_thread(), Some(Policy::Batch));
            ordinary_this_thread().expect("back to SCHED_OTHER");
            assert_eq!(this_thread(), Some(Policy::Ordinary));
        })
        .join()
        .expect("the thread ran");
    }

    #[test]
    fn the_engine_runtime_batches_its_workers_and_blocking_threads() {
        let runtime = engine_runtime().expect("a runtime");
        let (worker, blocking) = runtime.block_on(async {
            let worker = tokio::spawn(async { this_thread() }).await.expect("ran");
            let blocking = tokio::task::spawn_blocking(this_thread).await.expect("ran");
            (worker, blocking)
        });
        assert_eq!(worker, Some(Policy::Batch), "a runtime worker");
        assert_eq!(blocking, Some(Policy::Batch), "a blocking thread");
    }
}
