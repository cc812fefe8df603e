//! Front ends over the control socket: `crawldeck status` (one snapshot,
//! text or JSON), `crawldeck ctl` (one command in the TUI's `:` grammar,
//! the engine's answer printed) and `crawldeck attach` (the TUI).

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;

use std::process::ExitStatus;

use tokio::sync::watch;

use crate::control::client::{self, ClientError};
use crate::control::lock::recorded_engine;
use crate::control::server::FINISHED;
use crate::engine::control::Command;
use crate::engine::telemetry::{AlertStatus, Snapshot};
use crate::headless::revisits_value;
use crate::text::strip_control;
use crate::tui::command::{self, CommandLine};
use crate::tui::{self, TuiExit, TuiOptions};

/// `status --json`: what a script needs to know about a running crawl.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct StatusReport {
    /// `RUNNING`, `PAUSED`, `DRAINING`, …
    pub state: String,
    /// The engine's process id.
    pub pid: u32,
    /// Pages fetched over all runs.
    pub pages: u64,
    /// Pages per second over the last few seconds.
    pub pages_per_sec: f64,
    /// URLs recorded as failed.
    pub errors: u64,
    /// URLs queued.
    pub frontier: u64,
    /// Requests out now.
    pub in_flight: u32,
    /// Hosts by what holds them.
    pub hosts: HostCounts,
    /// Hosts the operator paused, by name.
    pub paused_hosts: Vec<String>,
    /// Operator rules, in order.
    pub rules: Vec<StatusRule>,
    /// Trap alerts waiting for a decision.
    pub open_alerts: Vec<OpenAlert>,
    /// Alerts of `--traps alert-only`: raised, nothing parked (they can still
    /// be accepted, which adds their rule).
    #[serde(default)]
    pub noted_alerts: Vec<OpenAlert>,
    /// URLs parked by open alerts.
    pub quarantined: u64,
    /// Links past a page's caps, not followed (`scope.max_links_per_page`,
    /// `scope.max_link_bytes_per_page`).
    #[serde(default)]
    pub links_cut: u64,
    /// Pages that had links cut.
    #[serde(default)]
    pub pages_cut: u64,
    /// Pages whose body was cut at `fetch.max_body`.
    #[serde(default)]
    pub bodies_cut: u64,
    /// Resources fetched and archived (`--resources fetch`), and their body bytes.
    #[serde(default)]
    pub resources_fetched: u64,
    #[serde(default)]
    pub resource_bytes: u64,
    /// WARC revisit records written, and the body bytes they did not store again.
    #[serde(default)]
    pub revisits: u64,
    #[serde(default)]
    pub revisit_bytes_saved: u64,
    /// Why the crawl is paused by itself: the shared frontier out of reach
    /// (it resumes by itself) or a storage fault (the operator resumes it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused_because: Option<String>,
}

/// Hosts by state, as the snapshot counts them.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct HostCounts {
    /// Hosts in memory.
    pub total: u32,
    /// May be fetched now.
    pub ready: u32,
    /// Waiting for politeness or at their in-flight limit.
    pub waiting: u32,
    /// Paused by the operator.
    pub paused: u32,
    /// Held by an open breaker.
    pub breaker_open: u32,
    /// Held for robots.txt.
    pub robots_pending: u32,
}

/// One operator rule: what `ctl DIR unrule ID` takes, and what it matches.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct StatusRule {
    /// The rule's number.
    pub id: u64,
    /// `regex` or `glob`.
    pub kind: String,
    /// The pattern as written.
    pub pattern: String,
    /// The one host it applies to; `null`: every host.
    pub host: Option<String>,
    /// URLs it refused.
    pub hits: u64,
    /// Who added it: `operator`, `alert #3`, `auto`.
    pub origin: String,
}

impl StatusRule {
    fn of(rule: &crate::engine::telemetry::RuleView) -> StatusRule {
        StatusRule {
            id: rule.id,
            kind: kind_word(rule.spec.kind).to_string(),
            pattern: rule.spec.pattern.clone(),
            host: rule.spec.host.clone(),
            hits: rule.hits,
            origin: rule.origin.clone(),
        }
    }

    /// `#1 regex:sql- on HOST (7 hits)`.
    fn line(&self) -> String {
        let on = self
            .host
            .as_ref()
            .map_or(String::new(), |h| format!(" on {h}"));
        format!(
            "#{} {}:{}{on} ({} hits)",
            self.id, self.kind, self.pattern, self.hits
        )
    }
}

/// One open trap alert.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct OpenAlert {
    /// What `ctl DIR accept ID` takes.
    pub id: u64,
    /// The host it was seen on.
    pub host: String,
    /// The detector's words for it.
    pub kind: String,
    /// The suggested rule's pattern.
    pub rule: String,
    /// Parked URLs the rule matches.
    pub matching_queued: u64,
    /// What the rule would block: `would block N queued, M parked; K fetched good pages match`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub impact: Option<String>,
}

impl StatusReport {
    /// The report of `snapshot`, from the engine with `pid`.
    pub fn of(snapshot: &Snapshot, pid: u32) -> StatusReport {
        let alerts = |status| {
            snapshot
                .alerts
                .iter()
                .filter(|a| a.status == status)
                .map(|a| OpenAlert {
                    id: a.id,
                    host: a.host.clone(),
                    kind: a.kind.label().to_string(),
                    rule: a.suggested_rule.pattern.clone(),
                    matching_queued: a.matching_queued,
                    impact: a.impact.as_ref().map(|i| i.summary()),
                })
                .collect()
        };
        StatusReport {
            state: snapshot.state.label().to_string(),
            pid,
            pages: snapshot.counters.pages_fetched,
            pages_per_sec: snapshot.pages_per_sec,
            errors: snapshot.counters.errors,
            frontier: snapshot.frontier_size,
            in_flight: snapshot.in_flight,
            hosts: HostCounts {
                total: snapshot.hosts_total,
                ready: snapshot.hosts_ready,
                waiting: snapshot.hosts_waiting,
                paused: snapshot.hosts_paused,
                breaker_open: snapshot.hosts_breaker_open,
                robots_pending: snapshot.hosts_robots_pending,
            },
            paused_hosts: snapshot.paused_hosts(),
            rules: snapshot.rules.iter().map(StatusRule::of).collect(),
            open_alerts: alerts(AlertStatus::Open),
            noted_alerts: alerts(AlertStatus::Noted),
            quarantined: snapshot.quarantined,
            links_cut: snapshot.counters.links_cut,
            pages_cut: snapshot.counters.pages_cut,
            bodies_cut: snapshot.counters.bodies_cut,
            resources_fetched: snapshot.counters.resources_fetched,
            resource_bytes: snapshot.counters.resource_bytes,
            revisits: snapshot.counters.revisits,
            revisit_bytes_saved: snapshot.counters.revisit_bytes_saved,
            paused_because: snapshot
                .outage
                .as_ref()
                .map(|o| format!("shared frontier unreachable: {o}"))
                .or_else(|| {
                    snapshot
                        .fault
                        .as_ref()
                        .map(|f| format!("storage fault: {f}"))
                }),
        }
    }

    /// The report for a terminal, stripped of control characters.
    pub fn text(&self, dir: &Path) -> String {
        let h = &self.hosts;
        let mut out = format!(
            "crawl in {} (pid {}): {}\n\
             pages {} ({:.1}/s), errors {}, frontier {}, in flight {}\n\
             hosts {}: {} ready, {} waiting, {} paused, {} breaker open, {} robots pending\n",
            dir.display(),
            self.pid,
            self.state,
            self.pages,
            self.pages_per_sec,
            self.errors,
            self.frontier,
            self.in_flight,
            h.total,
            h.ready,
            h.waiting,
            h.paused,
            h.breaker_open,
            h.robots_pending,
        );
        if let Some(why) = &self.paused_because {
            out.push_str(&format!("paused: {why}\n"));
        }
        if self.revisits > 0 {
            let value = revisits_value(self.revisits, self.revisit_bytes_saved);
            out.push_str(&format!("WARC revisits: {value}\n"));
        }
        if self.links_cut > 0 {
            out.push_str(&format!(
                "links cut at the per-page cap: {} on {} pages\n",
                self.links_cut, self.pages_cut
            ));
        }
        if self.bodies_cut > 0 {
            out.push_str(&format!(
                "bodies cut at fetch.max_body: {} pages\n",
                self.bodies_cut
            ));
        }
        if self.resources_fetched > 0 {
            out.push_str(&format!(
                "resources fetched and archived: {} ({})\n",
                self.resources_fetched,
                crate::text::human_bytes(self.resource_bytes)
            ));
        }
        out.push_str(&format!("rules {}", self.rules.len()));
        for rule in &self.rules {
            out.push_str(&format!("\n  {}", rule.line()));
        }
        out.push_str(&format!(
            "\nopen alerts {} ({} URLs quarantined)",
            self.open_alerts.len(),
            self.quarantined
        ));
        for a in &self.open_alerts {
            out.push_str(&format!(
                // Parked or queued, as the policy has it: the impact line says which.
                "\n  #{} {} on {}: {} ({} matching URLs)",
                a.id, a.kind, a.host, a.rule, a.matching_queued
            ));
            if let Some(impact) = &a.impact {
                out.push_str(&format!("\n    {impact}"));
            }
        }
        if !self.noted_alerts.is_empty() {
            out.push_str(&format!(
                "\nnoted alerts {} (--traps alert-only: nothing parked)",
                self.noted_alerts.len()
            ));
        }
        for a in &self.noted_alerts {
            out.push_str(&format!(
                "\n  #{} {} on {}: {} ({} matching queued URLs)",
                a.id, a.kind, a.host, a.rule, a.matching_queued
            ));
        }
        // Host names and patterns come from the network and the operator.
        out.lines().map(|l| strip_control(l) + "\n").collect()
    }
}

fn kind_word(kind: crate::engine::control::PatternKind) -> &'static str {
    match kind {
        crate::engine::control::PatternKind::Regex => "regex",
        crate::engine::control::PatternKind::Glob => "glob",
    }
}

/// `crawldeck status DIR [--json]`.
pub async fn status(dir: &Path, json: bool, out: &mut dyn Write) -> anyhow::Result<()> {
    let mut connection = client::connect(dir, true).await?;
    let snapshot = connection.snapshot().await?;
    let report = StatusReport::of(&snapshot, connection.pid);
    if json {
        writeln!(out, "{}", serde_json::to_string(&report)?)?;
    } else {
        write!(out, "{}", report.text(dir))?;
    }
    Ok(())
}

/// Why `ctl` did not do what it was asked.
#[derive(Debug, thiserror::Error)]
pub enum CtlError {
    /// The words are not a command (exit 2).
    #[error("{0}")]
    Usage(String),
    /// The engine refused the command (exit 1).
    #[error("refused: {0}")]
    Refused(String),
    /// The engine could not be reached.
    #[error(transparent)]
    Client(#[from] ClientError),
}

/// `crawldeck ctl DIR WORDS…`: parses `words` as a `:` line, sends it, and
/// prints the engine's answer.
pub async fn ctl(dir: &Path, words: &[String], out: &mut dyn Write) -> Result<(), CtlError> {
    let Some(command) = ctl_command(words, out)? else {
        return Ok(());
    };
    let mut connection = client::connect(dir, false).await?;
    match connection.command(command).await? {
        Ok(summary) => {
            // Line by line: a preview's answer is several lines.
            for line in summary.lines() {
                let _ = writeln!(out, "{}", strip_control(line));
            }
            Ok(())
        }
        Err(why) => Err(CtlError::Refused(strip_control(&why).into_owned())),
    }
}

/// The engine command `ctl`'s words spell; `None` when they asked for help
/// (printed to `out`).
pub fn ctl_command(words: &[String], out: &mut dyn Write) -> Result<Option<Command>, CtlError> {
    let line = words.join(" ");
    let command = match command::parse(&line) {
        Ok(CommandLine::Engine(command)) => command,
        Ok(CommandLine::Help) => {
            for l in command::help_lines() {
                let _ = writeln!(out, "{}", l.trim_start_matches(':'));
            }
            return Ok(None);
        }
        Ok(CommandLine::Select(_)) => {
            return Err(CtlError::Usage(format!(
                "`{line}` works in the UI's page inspector; `crawldeck page DIR URL --select CSS` selects from the command line"
            )))
        }
        Ok(CommandLine::Quit | CommandLine::Freeze) => {
            return Err(CtlError::Usage(format!(
                "`{line}` only means something in the terminal UI; `crawldeck ctl DIR stop` stops the crawl"
            )))
        }
        Err(e) => {
            return Err(CtlError::Usage(format!(
                "{e} (`crawldeck ctl DIR help` lists the commands)"
            )))
        }
    };
    Ok(Some(command))
}

/// How often `attach --wait` looks for the engine again.
const WAIT_POLL: std::time::Duration = std::time::Duration::from_millis(500);

/// `crawldeck attach DIR`: the terminal UI on the crawl running in `dir`,
/// until the operator detaches or stops it, or the engine goes (with
/// `wait`: then it waits for the engine to come back). `exited` is the
/// engine's exit status as its parent sees it (`crawldeck URL`). Returns
/// whether the engine is gone (`false`: the operator detached).
pub async fn attach(
    dir: &Path,
    options: TuiOptions,
    wait: bool,
    exited: Option<watch::Receiver<Option<ExitStatus>>>,
) -> anyhow::Result<bool> {
    if !std::io::stdout().is_terminal() {
        anyhow::bail!(
            "the terminal UI needs a terminal; use `crawldeck status {}` for scripts and pipes",
            dir.display()
        );
    }
    loop {
        let connection = connect_or_wait(dir, options.readonly, wait).await?;
        let pid = connection.pid;
        let (handle, mut gone) = connection.into_handle();
        let ui = tui::run(handle, options.clone());
        let exit = if wait {
            // Waiting for the engine to come back: leave the screen at once
            // (dropping the UI restores the terminal).
            tokio::select! {
                exit = ui => exit?,
                Ok(reason) = &mut gone => {
                    eprintln!("crawldeck: engine gone ({reason}); waiting for it to come back (Ctrl-C gives up)");
                    continue;
                }
            }
        } else {
            ui.await?
        };
        let fate = EngineFate {
            gone: gone.try_recv().ok(),
            // A parent knows; anyone else asks whether the engine still holds the directory.
            exited: match &exited {
                Some(status) => status.borrow().is_some(),
                None => !recorded_engine(dir).is_some_and(|(p, alive)| p == pid && alive),
            },
        };
        match (leaving(exit, &fate, pid, dir), fate.gone) {
            (_, Some(reason)) if wait && exit != TuiExit::Detach => {
                let reason = strip_control(&reason);
                eprintln!("crawldeck: engine gone ({reason}); waiting for it to come back");
            }
            (Leaving::Detached(line), _) => {
                eprintln!("crawldeck: {line}");
                return Ok(false);
            }
            (Leaving::Ended(line), _) => {
                eprintln!("crawldeck: {line}");
                return Ok(true);
            }
            (Leaving::Stopped, _) => return Ok(true),
        }
    }
}

/// What a viewer knows of its engine when its UI returns.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EngineFate {
    /// Why the connection ended, as the engine or the socket said.
    pub gone: Option<String>,
    /// The engine process has exited.
    pub exited: bool,
}

/// What `attach` says on the way out.
#[derive(Debug, Clone, PartialEq)]
pub enum Leaving {
    /// The crawl runs on without this viewer.
    Detached(String),
    /// The engine had ended: how.
    Ended(String),
    /// The operator stopped the crawl (the caller says how that went).
    Stopped,
}

/// The words for leaving the UI with `exit`: a detach only while the engine
/// with `pid` is still there; a crawl that ended is said to have ended.
pub fn leaving(exit: TuiExit, fate: &EngineFate, pid: u32, dir: &Path) -> Leaving {
    let ended = match &fate.gone {
        Some(reason) if reason.starts_with(FINISHED) => Some(strip_control(reason).into_owned()),
        Some(reason) => Some(format!("engine gone ({})", strip_control(reason))),
        None if fate.exited => Some(format!("the engine (pid {pid}) has exited")),
        None => None,
    };
    match (exit, ended) {
        (_, Some(line)) => Leaving::Ended(line),
        (TuiExit::Detach, None) => Leaving::Detached(format!(
            "detached; the crawl runs on (pid {pid}); attach again with `crawldeck attach {}`",
            dir.display()
        )),
        (TuiExit::Quit | TuiExit::EngineFinished, None) => Leaving::Stopped,
    }
}

/// Connects, or with `wait` polls until an engine answers. While waiting, an
/// engine that is still dying or not yet listening (a reset, a lost
/// handshake) is no answer yet; only a refusal ends the wait.
async fn connect_or_wait(
    dir: &Path,
    read_only: bool,
    wait: bool,
) -> Result<client::Connection, ClientError> {
    let mut told = false;
    loop {
        let detail =
            match client::connect(dir, read_only).await {
                Err(ClientError::NotRunning { detail, .. }) if wait => detail,
                Err(
                    e @ (ClientError::Gone(_) | ClientError::Wire(_) | ClientError::Timeout(_)),
                ) if wait => e.to_string(),
                other => return other,
            };
        if !told {
            eprintln!(
                "crawldeck: waiting for a crawl in {} ({detail})",
                dir.display()
            );
            told = true;
        }
        tokio::time::sleep(WAIT_POLL).await;
    }
}

/// The data directory of the one crawl running in `root` or a directory
/// right under it (or in the default data directory).
pub fn find_running_crawl(root: &Path) -> anyhow::Result<PathBuf> {
    let mut candidates = vec![root.to_path_buf()];
    if let Ok(entries) = std::fs::read_dir(root) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                candidates.push(entry.path());
            }
        }
    }
    let running: Vec<PathBuf> = candidates
        .into_iter()
        .filter(|dir| recorded_engine(dir).is_some_and(|(_, alive)| alive))
        .collect();
    match running.as_slice() {
        [one] => Ok(one.clone()),
        [] => anyhow::bail!(
            "no crawl is running in {} or a directory right under it; give its data directory: `crawldeck attach DIR`",
            root.display()
        ),
        many => {
            let list: Vec<String> = many.iter().map(|d| d.display().to_string()).collect();
            anyhow::bail!(
                "several crawls are running here ({}); name one: `crawldeck attach DIR`",
                list.join(", ")
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::lock::DataDirLock;

    #[test]
    fn attach_without_a_directory_finds_the_one_running_crawl() {
        let root = tempfile::tempdir().unwrap();
        let none = find_running_crawl(root.path()).unwrap_err().to_string();
        assert!(none.contains("no crawl is running in"), "{none}");
        let first = root.path().join("c1");
        std::fs::create_dir(&first).unwrap();
        let _one = DataDirLock::acquire(&first).unwrap();
        assert_eq!(find_running_crawl(root.path()).unwrap(), first);
        let second = root.path().join("c2");
        std::fs::create_dir(&second).unwrap();
        let _two = DataDirLock::acquire(&second).unwrap();
        let many = find_running_crawl(root.path()).unwrap_err().to_string();
        assert!(many.contains("several crawls are running here"), "{many}");
    }

    #[test]
    fn leaving_detaches_only_from_an_engine_still_there() {
        let dir = Path::new("./c1");
        let there = EngineFate::default();
        let runs_on =
            "detached; the crawl runs on (pid 42); attach again with `crawldeck attach ./c1`";
        assert_eq!(
            leaving(TuiExit::Detach, &there, 42, dir),
            Leaving::Detached(runs_on.into())
        );
        assert_eq!(leaving(TuiExit::Quit, &there, 42, dir), Leaving::Stopped);
        let finished = EngineFate {
            gone: Some("the crawl finished: page limit reached (3)".into()),
            exited: true,
        };
        for exit in [TuiExit::Detach, TuiExit::EngineFinished] {
            assert_eq!(
                leaving(exit, &finished, 42, dir),
                Leaving::Ended("the crawl finished: page limit reached (3)".into())
            );
        }
        let killed = EngineFate {
            gone: Some("the engine (pid 42) exited without a goodbye\u{1b}[2J".into()),
            exited: false,
        };
        assert_eq!(
            leaving(TuiExit::Detach, &killed, 42, dir),
            Leaving::Ended("engine gone (the engine (pid 42) exited without a goodbye[2J)".into())
        );
        // Exited before the viewer heard of it: still no detach.
        let silent = EngineFate {
            gone: None,
            exited: true,
        };
        assert_eq!(
            leaving(TuiExit::Detach, &silent, 42, dir),
            Leaving::Ended("the engine (pid 42) has exited".into())
        );
    }

    #[test]
    fn status_text_is_one_line_per_fact_without_control_characters() {
        let snapshot = Snapshot {
            rules: vec![crate::engine::telemetry::RuleView {
                id: 1,
                spec: crate::engine::control::RuleSpec {
                    kind: crate::engine::control::PatternKind::Regex,
                    pattern: "a\u{1b}[31mb".into(),
                    host: None,
                },
                hits: 0,
                origin: "operator".into(),
            }],
            ..Snapshot::default()
        };
        let text = StatusReport::of(&snapshot, 42).text(Path::new("./c1"));
        assert!(
            text.starts_with("crawl in ./c1 (pid 42): STARTING\n"),
            "{text}"
        );
        assert!(text.contains("\n  #1 regex:a[31mb (0 hits)\n"), "{text}");
        assert!(!text.contains('\u{1b}'));
        assert!(!text.contains("links cut"), "said only when some were");
    }

    #[test]
    fn status_names_each_rule_with_its_number_and_host() {
        use crate::engine::control::{PatternKind, RuleSpec};
        use crate::engine::telemetry::RuleView;
        let rule = |id, kind, pattern: &str, host: Option<&str>| RuleView {
            id,
            spec: RuleSpec {
                kind,
                pattern: pattern.into(),
                host: host.map(str::to_string),
            },
            hits: 7,
            origin: "operator".into(),
        };
        let snapshot = Snapshot {
            rules: vec![
                rule(1, PatternKind::Regex, "sql-", Some("127.0.0.1:4000")),
                rule(3, PatternKind::Glob, "*/cal/*", None),
            ],
            ..Snapshot::default()
        };
        let report = StatusReport::of(&snapshot, 42);
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(
            json["rules"][0],
            serde_json::json!({"id": 1, "kind": "regex", "pattern": "sql-",
                "host": "127.0.0.1:4000", "hits": 7, "origin": "operator"})
        );
        assert_eq!(json["rules"][1]["host"], serde_json::Value::Null);
        let text = report.text(Path::new("./c1"));
        assert!(
            text.contains(
                "\n  #1 regex:sql- on 127.0.0.1:4000 (7 hits)\n  #3 glob:*/cal/* (7 hits)\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn status_counts_links_cut_resources_fetched_and_warc_revisits() {
        let mut snapshot = Snapshot::default();
        snapshot.counters.links_cut = 1500;
        snapshot.counters.pages_cut = 2;
        snapshot.counters.resources_fetched = 7;
        snapshot.counters.resource_bytes = 2048;
        snapshot.counters.revisits = 3;
        snapshot.counters.revisit_bytes_saved = 4096;
        let report = StatusReport::of(&snapshot, 42);
        let text = report.text(Path::new("./c1"));
        assert!(
            text.contains("\nlinks cut at the per-page cap: 1500 on 2 pages\n"),
            "{text}"
        );
        assert!(
            text.contains("\nresources fetched and archived: 7 (2.0 KiB)\n"),
            "{text}"
        );
        assert!(
            text.contains("\nWARC revisits: 3 records (4.0 KiB of bodies not stored again)\n"),
            "{text}"
        );
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["links_cut"], 1500);
        assert_eq!(json["pages_cut"], 2);
        assert_eq!(json["resources_fetched"], 7);
        assert_eq!(json["resource_bytes"], 2048);
        assert_eq!(json["revisits"], 3);
        assert_eq!(json["revisit_bytes_saved"], 4096);
    }

    #[test]
    fn status_lists_alert_only_alerts_as_noted() {
        use crate::engine::telemetry::{TrapAlert, TrapKind};
        let alert = |id, status| TrapAlert {
            id,
            host: "cal.localhost:4000".into(),
            kind: TrapKind::Counter,
            evidence_count: 25,
            last_seen: 0,
            samples: Vec::new(),
            suggested_rule: crate::engine::control::RuleSpec {
                kind: crate::engine::control::PatternKind::Regex,
                pattern: "^http://cal/day/".into(),
                host: None,
            },
            matching_queued: 12,
            impact: None,
            status,
        };
        let snapshot = Snapshot {
            alerts: vec![alert(1, AlertStatus::Noted), alert(2, AlertStatus::Open)],
            ..Snapshot::default()
        };
        let report = StatusReport::of(&snapshot, 42);
        assert_eq!(report.open_alerts.len(), 1);
        assert_eq!(report.noted_alerts[0].id, 1);
        let text = report.text(Path::new("./c1"));
        assert!(
            text.contains("noted alerts 1 (--traps alert-only: nothing parked)\n  #1 calendar on cal.localhost:4000: ^http://cal/day/ (12 matching queued URLs)\n"),
            "{text}"
        );
    }
}
