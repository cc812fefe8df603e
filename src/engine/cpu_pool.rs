//! A fixed set of threads for per-page CPU work (parsing, hashing, WARC).
//!
//! `spawn_blocking` would start a thread per concurrent fetch (up to the
//! global concurrency), and that many threads thrash two cores and give every
//! thread its own allocator cache. One thread per core keeps the work hot.
//!
//! Idle threads wait on one condition variable, and a new job wakes one of
//! them. (A channel's receiver behind a mutex woke two: the thread waiting
//! in `recv`, then, as it let the mutex go, the one waiting for the mutex,
//! only for it to wait again.) A job finding every thread busy wakes none:
//! a notification is a system call even when nobody waits.

use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use crate::engine::sched;

type Job = Box<dyn FnOnce() + Send>;

/// The jobs waiting and whether the pool is closing, under one lock.
#[derive(Default)]
struct Queue {
    jobs: VecDeque<Job>,
    closed: bool,
    /// Threads waiting for a job.
    idle: usize,
}

#[derive(Default)]
struct Shared {
    queue: Mutex<Queue>,
    job_ready: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        // Jobs run outside the lock: a panic in one never poisons it mid-update.
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The next job, waiting for one; `None` once the pool closes and its
    /// queue is empty.
    fn next_job(&self) -> Option<Job> {
        let mut queue = self.lock();
        loop {
            if let Some(job) = queue.jobs.pop_front() {
                return Some(job);
            }
            if queue.closed {
                return None;
            }
            queue.idle += 1;
            queue = self
                .job_ready
                .wait(queue)
                .unwrap_or_else(|p| p.into_inner());
            queue.idle -= 1;
        }
    }
}

/// Closes the pool when the last handle goes: its threads finish the jobs
/// queued, then end.
struct Owner(Arc<Shared>);

impl Drop for Owner {
    fn drop(&mut self) {
        self.0.lock().closed = true;
        self.0.job_ready.notify_all();
    }
}

/// Cloning shares the pool; its threads end when the last clone is dropped.
#[derive(Clone)]
pub struct CpuPool {
    owner: Arc<Owner>,
}

/// The pool's threads are named this and their number.
pub const THREAD_NAME_PREFIX: &str = "crawldeck-cpu-";

impl CpuPool {
    /// One thread per available core (at least one, at most `max_threads`).
    pub fn new(max_threads: usize) -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let threads = cores.clamp(1, max_threads.max(1));
        let shared = Arc::new(Shared::default());
        for i in 0..threads {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name(format!("{THREAD_NAME_PREFIX}{i}"))
                .spawn(move || {
                    // Made from a runtime thread, it would inherit `SCHED_BATCH`.
                    if let Err(e) = sched::ordinary_this_thread() {
                        tracing::debug!(error = %e, "page thread keeps its creator's policy");
                    }
                    while let Some(job) = shared.next_job() {
                        // A panicking job must not take the thread with it.
                        drop(std::panic::catch_unwind(AssertUnwindSafe(job)));
                    }
                })
                .expect("spawning a CPU worker thread");
        }
        CpuPool {
            owner: Arc::new(Owner(shared)),
        }
    }

    /// Runs `job` on a pool thread. The job reports its own result (the
    /// page tasks send theirs straight to the coordinator).
    pub fn spawn(&self, job: impl FnOnce() + Send + 'static) {
        let shared = &self.owner.0;
        let idle = {
            let mut queue = shared.lock();
            queue.jobs.push_back(Box::new(job));
            queue.idle
        };
        if idle > 0 {
            shared.job_ready.notify_one();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use super::*;

    /// Queues a job that sends `value`.
    fn send_from_pool(pool: &CpuPool, tx: &mpsc::Sender<u64>, value: u64) {
        let tx = tx.clone();
        pool.spawn(move || tx.send(value).expect("receiver alive"));
    }

    #[test]
    fn runs_every_job_and_survives_a_panicking_one() {
        let pool = CpuPool::new(2);
        let (tx, rx) = mpsc::channel();
        pool.spawn(|| panic!("bad page"));
        for i in 0..50u64 {
            send_from_pool(&pool, &tx, i * i);
        }
        drop(tx);
        let sum: u64 = rx.iter().sum();
        assert_eq!(sum, (0..50u64).map(|i| i * i).sum::<u64>());
    }

    /// Each job comes once the threads have gone idle: every one must wake a
    /// thread (a lost wake-up leaves the job queued; the bound only turns a
    /// hang into a failure).
    #[test]
    fn a_job_for_idle_threads_wakes_one() {
        let pool = CpuPool::new(2);
        let (tx, rx) = mpsc::channel();
        for i in 0..200u64 {
            send_from_pool(&pool, &tx, i);
            let ran = rx.recv_timeout(std::time::Duration::from_secs(30));
            assert_eq!(ran, Ok(i), "job {i} was not run");
        }
    }

    #[test]
    fn jobs_queued_when_the_last_handle_goes_still_run() {
        let pool = CpuPool::new(2);
        let (tx, rx) = mpsc::channel();
        for i in 0..20u64 {
            send_from_pool(&pool, &tx, i);
        }
        drop(tx);
        let clone = pool.clone();
        drop(pool);
        clone.spawn(|| {});
        drop(clone);
        // A job dropped unrun would drop its sender: the count would fall short.
        assert_eq!(rx.iter().count(), 20);
    }

    /// The engine makes its pool from a `SCHED_BATCH` runtime worker.
    #[cfg(target_os = "linux")]
    #[test]
    fn page_threads_made_from_a_batch_thread_run_as_ordinary_ones() {
        let runtime = sched::engine_runtime().expect("a runtime");
        let pool = runtime.block_on(async { tokio::spawn(async { CpuPool::new(1) }).await });
        let pool = pool.expect("made on a worker");
        let (sent, received) = mpsc::channel();
        pool.spawn(move || sent.send(sched::this_thread()).expect("the test waits"));
        let policy = received.recv().expect("a page thread ran");
        assert_eq!(policy, Some(sched::Policy::Ordinary));
    }
}
