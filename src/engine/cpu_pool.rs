//! A fixed set of threads for per-page CPU work (parsing, hashing, WARC).
//!
//! `spawn_blocking` would start a thread per concurrent fetch (up to the
//! global concurrency), and that many threads thrash two cores and give every
//! thread its own allocator cache. One thread per core keeps the work hot.

use std::sync::{mpsc, Arc, Mutex};

type Job = Box<dyn FnOnce() + Send>;

/// Cloning shares the pool; its threads end when the last clone is dropped.
#[derive(Clone)]
pub struct CpuPool {
    jobs: mpsc::Sender<Job>,
}

/// The job's thread panicked; the panic was contained there.
#[derive(Debug)]
pub struct JobPanicked;

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
                        Ok(job) => job(),
                        Err(_) => return,
                    }
                })
                .expect("spawning a CPU worker thread");
        }
        CpuPool { jobs }
    }

    /// Runs `work` on a pool thread and waits for its result without blocking
    /// the async runtime. A panic in `work` is reported, not propagated.
    pub async fn run<T, F>(&self, work: F) -> Result<T, JobPanicked>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move || {
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work));
            let _ = reply.send(outcome.map_err(|_| JobPanicked));
        });
        if self.jobs.send(job).is_err() {
            return Err(JobPanicked);
        }
        answer.await.unwrap_or(Err(JobPanicked))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn runs_jobs_and_contains_panics() {
        let pool = CpuPool::new(2);
        let results =
            futures_util::future::join_all((0..50u64).map(|i| pool.run(move || i * i))).await;
        let sum: u64 = results.into_iter().map(|r| r.expect("no panic")).sum();
        assert_eq!(sum, (0..50u64).map(|i| i * i).sum::<u64>());
        let panicked = pool.run(|| -> u8 { panic!("bad page") }).await;
        assert!(panicked.is_err());
        // The pool survives a panicking job.
        assert_eq!(pool.run(|| 7).await.expect("pool still works"), 7);
    }
}
