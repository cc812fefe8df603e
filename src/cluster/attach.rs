//! `crawldeck attach --redis URL --crawl NAME`: the terminal UI over every
//! worker of a shared crawl.

use std::io::IsTerminal;

use anyhow::Context;

use super::reads::WorkerRecords;
use super::view::{self, ClusterReader, ViewOptions};
use crate::engine::ClusterTarget;
use crate::tui::{self, Records, TuiOptions};
use std::sync::Arc;

/// Opens a reader of `target` and checks that the crawl exists.
pub async fn open_reader(target: &ClusterTarget) -> anyhow::Result<ClusterReader> {
    let (url, crawl) = (target.url.clone(), target.crawl.clone());
    tokio::task::spawn_blocking(move || {
        let mut reader = ClusterReader::new(&url, &crawl).map_err(anyhow::Error::msg)?;
        let first = reader.read(&[]).map_err(anyhow::Error::msg)?;
        if first.workers.is_empty() && first.queued == 0 && first.hosts == 0 {
            anyhow::bail!(
                "no crawl named {crawl} on {url}; start one with `crawldeck crawl --headless --redis {url} --crawl {crawl} URL`"
            );
        }
        Ok(reader)
    })
    .await
    .context("the cluster reader")?
}

/// The UI over the cluster until the operator leaves it.
pub async fn attach(target: &ClusterTarget, options: TuiOptions) -> anyhow::Result<()> {
    if !std::io::stdout().is_terminal() {
        anyhow::bail!(
            "the terminal UI needs a terminal; use `crawldeck status --redis {} --crawl {}` for scripts and pipes",
            target.url,
            target.crawl
        );
    }
    let reader = open_reader(target).await?;
    let view_options = ViewOptions {
        owns_workers: false,
        read_only: options.readonly,
    };
    let handle = view::start(reader, view_options);
    let options = TuiOptions {
        records: Some(Records::Remote(Arc::new(WorkerRecords(target.clone())))),
        ..options
    };
    tui::run(handle, options).await?;
    eprintln!(
        "crawldeck: left the cluster view; the workers of {} run on",
        target.crawl
    );
    Ok(())
}
