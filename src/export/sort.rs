//! An external sort of text lines: lines are gathered up to a memory budget,
//! each full buffer is sorted and written as a run to a temporary file, and
//! the runs are merged, so a crawl of any size is indexed in flat memory.
//! Equal lines are written once, as cdxj-indexer's sort does.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

/// Runs merged at once; more are first merged into bigger runs.
const MAX_FAN_IN: usize = 128;

pub struct ExternalSort {
    dir: PathBuf,
    budget: usize,
    lines: Vec<String>,
    bytes: usize,
    runs: Vec<PathBuf>,
    next_run: usize,
}

impl ExternalSort {
    /// Sorts in `dir` (which the caller removes afterwards), holding at
    /// most about `budget` bytes of lines in memory.
    pub fn new(dir: &Path, budget: usize) -> Self {
        ExternalSort {
            dir: dir.to_path_buf(),
            budget: budget.max(1),
            lines: Vec::new(),
            bytes: 0,
            runs: Vec::new(),
            next_run: 0,
        }
    }

    pub fn push(&mut self, line: String) -> io::Result<()> {
        self.bytes += line.len() + std::mem::size_of::<String>();
        self.lines.push(line);
        if self.bytes >= self.budget {
            self.spill()?;
        }
        Ok(())
    }

    /// Writes every line in order, once each, to `out`, ending each with
    /// `\n`; returns how many were written.
    pub fn finish(mut self, out: &mut impl FnMut(&str) -> io::Result<()>) -> io::Result<u64> {
        if self.runs.is_empty() {
            self.lines.sort_unstable();
            return write_unique(self.lines.drain(..).map(Ok), out);
        }
        self.spill()?;
        while self.runs.len() > MAX_FAN_IN {
            let group: Vec<PathBuf> = self.runs.drain(..MAX_FAN_IN).collect();
            let merged = self.run_path();
            let mut file = BufWriter::new(File::create(&merged)?);
            merge(&group, &mut |line| writeln!(file, "{line}"))?;
            file.flush()?;
            self.runs.push(merged);
        }
        merge(&self.runs, out)
    }

    fn spill(&mut self) -> io::Result<()> {
        if self.lines.is_empty() {
            return Ok(());
        }
        self.lines.sort_unstable();
        let path = self.run_path();
        let mut file = BufWriter::new(File::create(&path)?);
        write_unique(self.lines.drain(..).map(Ok), &mut |line| {
            writeln!(file, "{line}")
        })?;
        file.flush()?;
        self.runs.push(path);
        self.bytes = 0;
        Ok(())
    }

    /// A new run's file name (runs are removed as they merge, so numbered apart).
    fn run_path(&mut self) -> PathBuf {
        self.next_run += 1;
        self.dir.join(format!("run-{:06}", self.next_run))
    }
}

/// Merges sorted run files into `out`, removing them afterwards.
fn merge(runs: &[PathBuf], out: &mut impl FnMut(&str) -> io::Result<()>) -> io::Result<u64> {
    let mut readers = Vec::with_capacity(runs.len());
    for path in runs {
        readers.push(BufReader::with_capacity(64 * 1024, File::open(path)?));
    }
    let mut heap = BinaryHeap::new();
    for (at, reader) in readers.iter_mut().enumerate() {
        if let Some(line) = next_line(reader)? {
            heap.push(Reverse((line, at)));
        }
    }
    let mut merged = std::iter::from_fn(|| {
        let Reverse((line, at)) = heap.pop()?;
        match next_line(&mut readers[at]) {
            Ok(Some(next)) => heap.push(Reverse((next, at))),
            Ok(None) => {}
            Err(e) => return Some(Err(e)),
        }
        Some(Ok(line))
    });
    let written = write_unique(&mut merged, out)?;
    for path in runs {
        std::fs::remove_file(path)?;
    }
    Ok(written)
}

fn next_line(reader: &mut impl BufRead) -> io::Result<Option<String>> {
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    if line.ends_with('\n') {
        line.pop();
    }
    Ok(Some(line))
}

fn write_unique(
    lines: impl Iterator<Item = io::Result<String>>,
    out: &mut impl FnMut(&str) -> io::Result<()>,
) -> io::Result<u64> {
    let mut last: Option<String> = None;
    let mut written = 0;
    for line in lines {
        let line = line?;
        if last.as_deref() != Some(line.as_str()) {
            out(&line)?;
            written += 1;
            last = Some(line);
        }
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted(lines: &[String], budget: usize) -> (Vec<String>, usize) {
        let dir = tempfile::tempdir().unwrap();
        let mut sort = ExternalSort::new(dir.path(), budget);
        for line in lines {
            sort.push(line.clone()).unwrap();
        }
        let runs = sort.runs.len();
        let mut got = Vec::new();
        let n = sort
            .finish(&mut |line| {
                got.push(line.to_string());
                Ok(())
            })
            .unwrap();
        assert_eq!(n as usize, got.len());
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "runs removed"
        );
        (got, runs)
    }

    fn shuffled(n: u64) -> Vec<String> {
        let mut rng = fastrand::Rng::with_seed(7);
        (0..n)
            .map(|_| format!("key{:06} x", rng.u64(..n / 2)))
            .collect()
    }

    #[test]
    fn in_memory_and_spilled_sorts_agree_and_drop_repeats() {
        let lines = shuffled(5_000);
        let mut expected = lines.clone();
        expected.sort();
        expected.dedup();
        let (small, runs) = sorted(&lines, 1024);
        assert!(
            runs > MAX_FAN_IN,
            "{runs} runs: the multi-level merge is taken"
        );
        let (big, none) = sorted(&lines, 1 << 30);
        assert_eq!(none, 0);
        assert_eq!(small, expected);
        assert_eq!(big, expected);
    }
}
