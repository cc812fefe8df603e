//! A fixed set of threads for per-page CPU work (parsing, hashing, WARC).
//!
//! `spawn_blocking` would start a thread per concurrent fetch (up to the
//! global concurrency), and that many threads thrash two cores and give every
//! thread its own allocator cache. One thread per core keeps the work hot.

use std::panic::AssertUnwindSafe;
use std::sync::{mpsc, Arc, Mutex};

type Job = Box<dyn FnOnce() + Send>;

/// Cloning shares the pool; its threads end when the last clone is dropped.
#[derive(Clone)]
pub struct CpuPool {
    jobs: mpsc::Sender<Job>,
}

impl CpuPool {
    /// One thread per available core (at least one, at most `max_threads`).
    pub fn new(max_threads: usize) -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let threads = cores.clamp(1, max_threads.max(1));
        let (jobs, queue) = mpsc::channel::<Job>();
        let queue = Arc::new(Mutex::new(queue));
        for i in 0..threads {
            let queue = queue.clone();
            std::thread::Builder::new()
                .name(format!("crawldeck-cpu-{i}"))
                .spawn(move || loop {
                    // The lock is held only while waiting for the next job.
                    let next = queue.lock().unwrap_or_else(|p| p.into_inner()).recv();
                    match next {
                        // A panicking job must not take the thread with it.
                        Ok(job) => drop(std::panic::catch_unwind(AssertUnwindSafe(job))),
                        Err(_) => return,
                    }
                })
                .expect("spawning a CPU worker thread");
        }
        CpuPool { jobs }
    }

    /// Runs `job` on a pool thread. The job reports its own result (the
    /// page tasks send theirs straight to the coordinator).
    pub fn spawn(&self, job: impl FnOnce() + Send + 'static) {
        if let Err(mpsc::SendError(job)) = self.jobs.send(Box::new(job)) {
            // Only if every pool thread is gone; the work must still happen.
            job();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_every_job_and_survives_a_panicking_one() {
        let pool = CpuPool::new(2);
        let (tx, rx) = mpsc::channel();
        pool.spawn(|| panic!("bad page"));
        for i in 0..50u64 {
            let tx = tx.clone();
            pool.spawn(move || tx.send(i * i).expect("receiver alive"));
        }
        drop(tx);
        let sum: u64 = rx.iter().sum();
        assert_eq!(sum, (0..50u64).map(|i| i * i).sum::<u64>());
    }
}
