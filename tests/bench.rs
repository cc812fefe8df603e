//! `crawldeck bench` through the real binary: the generated web runs as a
//! process of its own, the report keeps its figures apart from the
//! crawler's, and that process never outlives the bench.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{ok_stdout, Killed};

/// The pids of running `bench-web` processes serving `pages` pages.
fn web_processes(pages: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
        let serves = args.iter().any(|a| *a == b"bench-web");
        if serves
            && args
                .windows(2)
                .any(|w| w[0] == b"--pages" && w[1] == pages.as_bytes())
        {
            found.push(pid);
        }
    }
    found
}

#[test]
fn the_report_tells_the_crawlers_figures_from_the_webs_round_by_round_and_no_web_is_left() {
    if !cfg!(target_os = "linux") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    // A page count no other test uses, to find this bench's web by.
    let report = ok_stdout(&[
        "bench",
        "--pages",
        "313",
        "--hosts",
        "3",
        "--no-archive",
        "--rounds",
        "2",
        "--data",
        data.to_str().unwrap(),
    ]);
    let line = |name: &str| {
        report
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no {name:?} line in:\n{report}"))
            .to_string()
    };
    assert!(line("pages ").ends_with(" 312"), "{report}");
    assert!(line("CPU time").contains("the crawler alone"), "{report}");
    let web = line("generated web");
    assert!(web.contains("s CPU, peak RSS"), "{web}");
    assert!(web.contains("not counted above"), "{web}");
    assert!(line("errors").ends_with(" 0"), "{report}");
    // The crawl loop's thread is found by its name: its share is split out.
    let middle = line("10 % to 90 %");
    assert!(middle.contains(" on page threads, "), "{middle}");
    assert!(middle.contains(" in the crawl loop"), "{middle}");
    // Two rounds, each a fresh crawl in a directory of its own: the second
    // does not resume the first.
    for round in ["round 1 ", "round 2 "] {
        assert!(line(round).contains(" pages/s, "), "{report}");
    }
    assert!(
        line("median ").contains("each figure's own median"),
        "{report}"
    );
    for dir in ["round-1", "round-2"] {
        assert!(data.join(dir).is_dir(), "no {dir} in {}", data.display());
    }
    assert_eq!(web_processes("313"), Vec::<u32>::new(), "the web stopped");
}

#[test]
fn the_web_serves_its_seeds_and_ends_when_its_input_closes() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_crawldeck"))
        .args(["bench-web", "--pages", "40", "--hosts", "2"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the binary runs");
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut web = Killed(child);
    let mut seeds = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.expect("seed lines");
        if line.is_empty() {
            break;
        }
        seeds.push(url::Url::parse(&line).expect("a seed URL"));
    }
    assert_eq!(seeds.len(), 2, "{seeds:?}");
    for seed in &seeds {
        let host = seed.host_str().unwrap();
        assert!(host.ends_with(".localhost"), "a loopback name: {seed}");
        // Asked on 127.0.0.1 whatever the name resolves to.
        let mut conn = TcpStream::connect(("127.0.0.1", seed.port().unwrap())).unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let request = format!("GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
        conn.write_all(request.as_bytes()).unwrap();
        let mut answer = String::new();
        conn.read_to_string(&mut answer).unwrap();
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer:.200}");
    }
    drop(stdin);
    let started = Instant::now();
    while web.0.try_wait().unwrap().is_none() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the web (pid {}) still runs after its input closed",
            web.0.id()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
