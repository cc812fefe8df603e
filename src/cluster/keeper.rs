//! Child processes tied to this one: on Linux a child started with
//! [`spawn_tied`] gets SIGTERM when the thread that started it ends, so a
//! [`Keeper`] thread, which lives until it is dropped, starts them; if this
//! process is killed, its children stop with it.

use std::process::{Child, Command};
use std::sync::mpsc;
use std::thread::JoinHandle;

/// A thread that starts child processes and lives until it is dropped.
pub struct Keeper {
    jobs: Option<mpsc::Sender<Job>>,
    thread: Option<JoinHandle<()>>,
}

type Job = Box<dyn FnOnce() + Send>;

impl Keeper {
    /// Starts the thread.
    pub fn start() -> std::io::Result<Keeper> {
        let (jobs, queue) = mpsc::channel::<Job>();
        let thread = std::thread::Builder::new()
            .name("cluster-keeper".into())
            .spawn(move || {
                for job in queue {
                    job();
                }
            })?;
        Ok(Keeper {
            jobs: Some(jobs),
            thread: Some(thread),
        })
    }

    /// Runs `job` on the keeper's thread and returns what it returned.
    pub fn run<T: Send + 'static>(&self, job: impl FnOnce() -> T + Send + 'static) -> T {
        let (done, result) = mpsc::channel();
        let job: Job = Box::new(move || {
            let _ = done.send(job());
        });
        self.jobs
            .as_ref()
            .expect("a keeper runs until dropped")
            .send(job)
            .expect("the keeper thread runs until dropped");
        result.recv().expect("the keeper thread runs every job")
    }
}

impl Drop for Keeper {
    fn drop(&mut self) {
        self.jobs = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Spawns `command` so that it gets SIGTERM when the calling thread ends (Linux).
pub fn spawn_tied(mut command: Command) -> std::io::Result<Child> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: prctl is async-signal-safe and touches no memory of the parent.
        unsafe {
            command.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    command.spawn()
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    #[test]
    fn a_tied_child_stops_when_its_keeper_ends() {
        let keeper = Keeper::start().unwrap();
        let mut child = keeper
            .run(|| {
                let mut sleep = Command::new("sleep");
                sleep.arg("30");
                spawn_tied(sleep)
            })
            .unwrap();
        assert!(child.try_wait().unwrap().is_none(), "runs while kept");
        drop(keeper);
        let deadline = Instant::now() + Duration::from_secs(10);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the child outlived its keeper");
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        assert!(!status.success(), "stopped by a signal: {status}");
    }
}
