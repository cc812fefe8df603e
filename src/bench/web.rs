//! The bench's generated web, served by a process of its own (`crawldeck
//! bench-web`), so that what the bench reports of CPU and memory is the
//! crawler's alone, as when it crawls nginx, and the web's is told apart.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use url::Url;

use crate::demo::DemoWeb;
use crate::engine::sched;

/// How long the web has to stop once asked before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// The web's own figures over the whole run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WebUsage {
    pub cpu: Duration,
    pub peak_rss_bytes: u64,
}

/// A `crawldeck bench-web` child: killed when dropped, and it ends by
/// itself when this process goes away (its standard input closes).
pub struct ChildWeb {
    child: Child,
    stdin: Option<ChildStdin>,
    seeds: Vec<Url>,
}

impl ChildWeb {
    /// Starts this executable as `bench-web` and reads the seeds it serves.
    pub fn start(pages: usize, hosts: usize) -> anyhow::Result<ChildWeb> {
        let exe = std::env::current_exe().context("finding this executable to serve the web")?;
        // Served, like nginx, as an ordinary process, not as the bench's batch threads.
        let mut child = sched::ordinary_child(&mut Command::new(exe))
            .args(["bench-web", "--pages", &pages.to_string()])
            .args(["--hosts", &hosts.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .context("starting the generated web's process")?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().context("the web's standard output")?;
        // Owned before its seeds are read: a failure kills it on drop.
        let mut web = ChildWeb {
            child,
            stdin,
            seeds: Vec::new(),
        };
        web.seeds = read_seeds(stdout)?;
        Ok(web)
    }

    pub fn seeds(&self) -> &[Url] {
        &self.seeds
    }

    /// Asks the web to stop (its standard input closes), kills it if it
    /// has not within [`STOP_GRACE`], waits for it, and returns what it used
    /// (the bench starts no other child).
    pub fn stop(mut self) -> Option<WebUsage> {
        self.stdin = None;
        let deadline = Instant::now() + STOP_GRACE;
        while Instant::now() < deadline {
            match self.child.try_wait() {
                Ok(None) => std::thread::sleep(Duration::from_millis(20)),
                Ok(Some(_)) | Err(_) => break,
            }
        }
        drop(self);
        let (usage, peak_rss_bytes) = super::usage::Usage::of_waited_children()?;
        Some(WebUsage {
            cpu: usage.cpu,
            peak_rss_bytes,
        })
    }
}

impl Drop for ChildWeb {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// One seed URL a line, then an empty line.
fn read_seeds(stdout: impl Read) -> anyhow::Result<Vec<Url>> {
    let mut seeds = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.context("reading the web's seeds")?;
        if line.is_empty() {
            return Ok(seeds);
        }
        seeds.push(Url::parse(&line).with_context(|| format!("a seed of the web: {line:?}"))?);
    }
    anyhow::bail!("the generated web's process ended before it served (see its error above)")
}

/// `crawldeck bench-web`: serves the bench's web, writes its seeds, and
/// stops when standard input ends (the bench closed it, or is gone).
pub async fn serve(pages: usize, hosts: usize) -> anyhow::Result<()> {
    let web = DemoWeb::start_bench(pages, hosts)
        .await
        .context("starting the synthetic site on 127.0.0.1")?;
    let mut listed = String::new();
    for seed in web.seeds() {
        listed.push_str(seed.as_str());
        listed.push('\n');
    }
    listed.push('\n');
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(listed.as_bytes())?;
    stdout.flush()?;
    drop(stdout);
    tokio::task::spawn_blocking(|| std::io::copy(&mut std::io::stdin(), &mut std::io::sink()))
        .await??;
    web.shutdown().await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_end_at_the_empty_line_and_a_silent_end_is_an_error() {
        let seeds = read_seeds(&b"http://127.0.0.1:1/\nhttp://127.0.0.1:2/\n\nmore"[..]).unwrap();
        assert_eq!(seeds.len(), 2);
        assert_eq!(seeds[1].as_str(), "http://127.0.0.1:2/");
        let err = read_seeds(&b"http://127.0.0.1:1/\n"[..]).unwrap_err();
        assert!(err.to_string().contains("ended before it served"), "{err}");
        assert!(read_seeds(&b"not a url\n\n"[..]).is_err());
    }
}
