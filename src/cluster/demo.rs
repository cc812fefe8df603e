//! `crawldeck demo --cluster N`: the demo web crawled by N worker processes
//! through a local redis-server, watched in the cluster TUI; quitting stops
//! the workers and the server.

use std::io::IsTerminal;
use std::path::Path;

use super::local::LocalCluster;
use super::reads::WorkerRecords;
use super::view::{self, ClusterReader, ViewOptions};
use crate::engine::config::CrawlConfig;
use crate::tui::{self, Records, TuiOptions};
use std::sync::Arc;

/// Runs the cluster under `dir` on `config` (the demo web's seeds and pace)
/// until the operator quits the TUI; `kept`: `dir` outlives the demo.
pub async fn run(
    workers: usize,
    dir: &Path,
    kept: bool,
    config: &CrawlConfig,
    options: TuiOptions,
) -> anyhow::Result<()> {
    if !std::io::stdout().is_terminal() {
        anyhow::bail!(
            "demo --cluster opens the terminal UI and needs a terminal; run the workers with `crawldeck crawl --headless --redis URL --crawl NAME` for scripts"
        );
    }
    let (start_dir, start_config) = (dir.to_path_buf(), config.clone());
    let cluster = tokio::task::spawn_blocking(move || {
        LocalCluster::start(workers, &start_dir, &start_config)
    })
    .await??;
    let target = cluster.target().clone();
    tracing::info!(
        redis = %target.url,
        redis_pid = ?cluster.redis_pid(),
        worker_pids = ?cluster.worker_pids(),
        "demo cluster started"
    );
    let reader = ClusterReader::new(&target.url, &target.crawl).map_err(anyhow::Error::msg)?;
    let view_options = ViewOptions {
        owns_workers: true,
        read_only: options.readonly,
    };
    let handle = view::start(reader, view_options);
    let options = TuiOptions {
        records: Some(Records::Remote(Arc::new(WorkerRecords(target.clone())))),
        ..options
    };
    let exit = tui::run(handle, options).await;
    eprintln!("crawldeck: stopping the {workers} workers (they checkpoint) and redis-server…");
    tokio::task::spawn_blocking(move || cluster.stop()).await?;
    exit?;
    if !kept {
        return Ok(());
    }
    eprintln!(
        "crawldeck: the workers' pages are in {}/w1 … w{workers} (`crawldeck pages {}/w1`)",
        dir.display(),
        dir.display()
    );
    Ok(())
}
