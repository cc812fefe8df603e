//! The bench's generated web, served by a process of its own (`crawldeck
//! bench-web`), so that what the bench reports of CPU and memory is the
//! crawler's alone, as when it crawls nginx, and the web's is told apart.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use url::Url;

use crate::demo::DemoWeb;

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
        let mut child = Command::new(exe)
            .args(["bench-web", "--pages", &pages.to_string()])
            .args(["--hosts", &hosts.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .context("starting the generated web's process")?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().context("the web's standard output")?;
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

    /// CPU time and peak memory so far (Linux; `None` elsewhere).
    pub fn usage(&self) -> Option<WebUsage> {
        let pid = self.child.id();
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        Some(WebUsage {
            cpu: cpu_of_stat(&stat, clock_ticks_per_sec()?)?,
            peak_rss_bytes: super::usage::kb_field(&status, "VmHWM:")? * 1024,
        })
    }

    /// Asks the web to stop (its standard input closes), then kills it if
    /// it has not within [`STOP_GRACE`].
    pub fn stop(mut self) {
        self.stdin = None;
        let deadline = Instant::now() + STOP_GRACE;
        while Instant::now() < deadline {
            match self.child.try_wait() {
                Ok(Some(_)) | Err(_) => return,
                Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
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

/// User plus system time from `/proc/PID/stat`, in clock ticks after the
/// command's closing parenthesis (fields 14 and 15).
fn cpu_of_stat(stat: &str, ticks_per_sec: u64) -> Option<Duration> {
    let after_command = &stat[stat.rfind(')')? + 1..];
    let mut fields = after_command.split_whitespace().skip(11);
    let user: u64 = fields.next()?.parse().ok()?;
    let system: u64 = fields.next()?.parse().ok()?;
    Some(Duration::from_secs_f64(
        (user + system) as f64 / ticks_per_sec.max(1) as f64,
    ))
}

fn clock_ticks_per_sec() -> Option<u64> {
    // SAFETY: sysconf only reads a configuration value.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    u64::try_from(ticks).ok().filter(|&t| t > 0)
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
    use std::io::Write;
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
    fn cpu_is_read_after_the_command_whatever_it_holds() {
        // Fields after the command: state, ppid, pgrp, session, tty, tpgid,
        // flags, minflt, cminflt, majflt, cmajflt, utime, stime.
        let stat = "4242 (odd) name) S 1 2 3 4 5 6 7 8 9 10 250 50 0 0";
        assert_eq!(cpu_of_stat(stat, 100), Some(Duration::from_secs(3)));
        assert_eq!(cpu_of_stat("4242 (cut) S 1", 100), None);
    }

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
