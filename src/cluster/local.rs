//! A cluster on this machine, as `crawldeck demo --cluster N` runs it: a
//! private redis-server and N worker processes of this executable, each
//! with its own data directory. Dropping it (on quit, on a panic's unwind)
//! stops the workers and the server by their pids; on Linux a worker also
//! gets SIGTERM when this process dies without that (SIGKILL).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rustix::process::{kill_process, Pid, Signal};

use super::keeper::{spawn_tied, Keeper};
use super::redis_server::RedisServer;
use crate::engine::config::CrawlConfig;
use crate::engine::{ClusterTarget, RedisUrl};

/// Workers a local cluster may have.
pub const MAX_WORKERS: usize = 8;
/// The shared crawl's name.
pub const CRAWL_NAME: &str = "demo";
/// How long the workers get to checkpoint after SIGTERM before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(15);
/// The local redis-server's lifetime should its owner be killed.
const REDIS_LIFETIME: Duration = Duration::from_secs(24 * 3600);

/// The local redis-server and the workers.
pub struct LocalCluster {
    /// Dropped after the workers, so they can checkpoint into it.
    redis: Option<RedisServer>,
    workers: Vec<Child>,
    target: ClusterTarget,
    /// The thread that started the server and the workers: the parent
    /// their death signal follows, so it lives until they are stopped.
    keeper: Option<Keeper>,
}

/// `1 ≤ n ≤ MAX_WORKERS`, or what to give instead.
pub fn check_size(n: usize) -> Result<(), String> {
    if (1..=MAX_WORKERS).contains(&n) {
        Ok(())
    } else {
        Err(format!(
            "--cluster {n}: give from 1 to {MAX_WORKERS} workers (they share this machine's cores)"
        ))
    }
}

impl LocalCluster {
    /// Starts redis-server and `n` workers crawling `config` (its seeds
    /// included) under `dir`: `dir/crawl.toml`, and `dir/wK` with each
    /// worker's data and `dir/wK.out` with its output.
    pub fn start(n: usize, dir: &Path, config: &CrawlConfig) -> anyhow::Result<LocalCluster> {
        check_size(n).map_err(anyhow::Error::msg)?;
        if let Some(old) = (1..=n).map(|k| worker_dir(dir, k)).find(|d| d.exists()) {
            anyhow::bail!(
                "{} is left from an earlier cluster demo; give an empty --data DIR (or none for a temporary one)",
                old.display()
            );
        }
        let keeper = Keeper::start()?;
        let redis = keeper
            .run(|| RedisServer::start_tied(REDIS_LIFETIME))
            .map_err(|e| anyhow::anyhow!("demo --cluster needs a local redis-server: {e}"))?;
        let config_file = dir.join("crawl.toml");
        config.save(&config_file)?;
        let target = ClusterTarget {
            url: RedisUrl::plain(&redis.url()).map_err(anyhow::Error::msg)?,
            crawl: CRAWL_NAME.into(),
            lease_ttl: crate::engine::DEFAULT_LEASE_TTL,
            host_affinity: crate::engine::DEFAULT_HOST_AFFINITY,
        };
        let mut cluster = LocalCluster {
            redis: Some(redis),
            workers: Vec::new(),
            target,
            keeper: Some(keeper),
        };
        for k in 1..=n {
            let command = cluster.worker_command(&config_file, dir, k)?;
            let keeper = cluster.keeper.as_ref().expect("set above");
            // Dropping the cluster stops the workers started before a failure.
            let child = keeper
                .run(move || spawn_tied(command))
                .map_err(|e| anyhow::anyhow!("cannot start a worker: {e}"))?;
            cluster.workers.push(child);
        }
        Ok(cluster)
    }

    fn worker_command(&self, config_file: &Path, dir: &Path, k: usize) -> anyhow::Result<Command> {
        let out = File::create(dir.join(format!("w{k}.out")))?;
        let mut command = Command::new(std::env::current_exe()?);
        command
            .args(["crawl", "--headless"])
            .args(["--redis", &self.target.url.without_password()])
            .args(["--crawl", &self.target.crawl])
            // The private server has no password: one meant for another would be refused.
            .env_remove(crate::engine::PASSWORD_VAR)
            .env_remove(crate::engine::USER_VAR)
            .arg("--config")
            .arg(config_file)
            .arg("--data")
            .arg(worker_dir(dir, k))
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out);
        Ok(command)
    }

    /// The shared crawl the workers run.
    pub fn target(&self) -> &ClusterTarget {
        &self.target
    }

    /// The process id of the redis-server (through its `timeout` wrapper).
    pub fn redis_pid(&self) -> Option<u32> {
        self.redis.as_ref().map(RedisServer::pid)
    }

    /// The workers' process ids.
    pub fn worker_pids(&self) -> Vec<u32> {
        self.workers.iter().map(Child::id).collect()
    }

    /// Stops the workers (SIGTERM: they checkpoint; SIGKILL after a grace
    /// period), then the redis-server.
    pub fn stop(mut self) {
        self.stop_all();
    }

    fn stop_all(&mut self) {
        for child in &mut self.workers {
            if let (Ok(None), Some(pid)) = (child.try_wait(), Pid::from_raw(child.id() as i32)) {
                let _ = kill_process(pid, Signal::TERM);
            }
        }
        let deadline = Instant::now() + STOP_GRACE;
        for child in &mut self.workers {
            while matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            if matches!(child.try_wait(), Ok(None)) {
                let _ = child.kill();
            }
            let _ = child.wait();
        }
        self.workers.clear();
        // The keeper's end sends the server SIGTERM too; dropping it waits for its exit.
        self.keeper = None;
        self.redis = None;
    }
}

impl Drop for LocalCluster {
    fn drop(&mut self) {
        self.stop_all();
    }
}

fn worker_dir(dir: &Path, k: usize) -> PathBuf {
    dir.join(format!("w{k}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cluster_has_one_to_eight_workers() {
        assert!(check_size(1).is_ok() && check_size(8).is_ok());
        for bad in [0, 9, 100] {
            let e = check_size(bad).unwrap_err();
            assert!(e.contains("from 1 to 8"), "{e}");
        }
    }
}
