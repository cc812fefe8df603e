//! The integration tests, as one test binary: one link of the crate and its
//! dependencies instead of one per file, which keeps a clean build small.
//! Each file of `tests/` is a module here; `cargo test --test suite cluster::`
//! runs one file's tests.

mod common;

mod allocator;
mod architecture;
mod archive;
mod attach;
mod attach_pty;
mod audit;
mod bench;
mod checks;
mod cli;
mod cluster;
mod cluster_affinity;
mod cluster_alerts;
mod cluster_breakers;
mod cluster_ctl;
mod cluster_outage;
mod cluster_reads;
mod cluster_results;
mod cluster_served;
mod cluster_tui;
mod diff;
mod disk_faults;
mod engine_hostile;
mod engine_polite;
mod export;
mod extraction;
mod identity;
mod inspector;
mod inspector_pty;
mod pages_pty;
mod private_files;
mod pty;
mod quarantine_pty;
mod quarantine_results;
mod records;
mod recrawl;
mod redis_trust;
mod resource_archive;
mod results;
mod resume;
mod robots_cases;
mod sitemaps;
mod slow_servers;
mod ssrf;
mod traps;
mod triage;
mod tui_app;
mod tui_inspector;
mod tui_keys;
mod tui_render;
mod tui_window;

/// With `autotests = false`, a file of `tests/` missing above would never be
/// compiled, so its tests would silently stop running.
#[test]
fn every_file_of_tests_is_a_module_of_the_suite() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let suite = std::fs::read_to_string(dir.join("suite.rs")).unwrap();
    let declared: std::collections::HashSet<&str> = suite
        .lines()
        .filter_map(|line| line.strip_prefix("mod ")?.strip_suffix(';'))
        .collect();
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let module = if path.join("mod.rs").is_file() {
            path.file_name()
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            path.file_stem()
        } else {
            continue;
        };
        let module = module.unwrap().to_string_lossy().into_owned();
        if module != "suite" && !declared.contains(module.as_str()) {
            missing.push(module);
        }
    }
    assert!(
        missing.is_empty(),
        "tests/ holds modules tests/suite.rs does not declare, so they never run \
         (add `mod NAME;` to tests/suite.rs): {missing:?}"
    );
}
