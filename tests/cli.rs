//! The command line: the real binary's exit codes and messages, and the
//! precedence of defaults < config file < flags. No network: nothing here
//! reaches the point where a crawl would start.

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use clap::Parser;
use crawldeck::cli::{self, Cli, Mode, ResolvedRun, UsageError};
use crawldeck::engine::config::{CrawlConfig, ResourcesMode, Scope, TrapPolicy};

fn crawldeck(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_crawldeck"))
        .args(args)
        .current_dir(dir)
        .env_remove("RUST_LOG")
        .output()
        .expect("the binary runs")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn resolve(args: &[&str]) -> Result<ResolvedRun, UsageError> {
    let cli = Cli::try_parse_from(std::iter::once("crawldeck").chain(args.iter().copied()))
        .expect("arguments parse");
    cli::resolve(cli)
}

#[test]
fn help_lists_the_commands_and_flags() {
    let dir = tempfile::tempdir().unwrap();
    let out = crawldeck(dir.path(), &["--help"]);
    assert_eq!(out.status.code(), Some(0));
    let help = String::from_utf8_lossy(&out.stdout);
    for word in [
        "crawl",
        "demo",
        "bench",
        "keys",
        "--seeds",
        "--data",
        "--max-body",
        "--traps",
        "--allow-private",
    ] {
        assert!(help.contains(word), "{word} missing from help:\n{help}");
    }
    let out = crawldeck(dir.path(), &["crawl", "--help"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("--headless"));
}

#[test]
fn bad_seed_url_exits_2_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let out = crawldeck(dir.path(), &["crawl", "--headless", "example.org"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("\"example.org\" is not an absolute URL"),
        "{err}"
    );
    assert!(err.contains("write it like https://example.org/"), "{err}");
    assert!(
        !dir.path().join(cli::DEFAULT_DATA_DIR).exists(),
        "nothing is created on a usage error"
    );
}

#[test]
fn seed_with_credentials_exits_2_without_printing_the_password() {
    let dir = tempfile::tempdir().unwrap();
    let out = crawldeck(
        dir.path(),
        &["crawl", "--headless", "https://alice:s3cret@example.org/"],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(!err.contains("s3cret"), "{err}");
    assert!(err.contains("https://alice:***@example.org/"), "{err}");
    assert!(err.contains("does not send credentials"), "{err}");
    assert!(err.contains("remove `user:pass@`"), "{err}");
    assert!(!dir.path().join(cli::DEFAULT_DATA_DIR).exists());
}

#[test]
fn bad_line_in_seeds_file_is_named_by_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("seeds.txt"),
        "# list\nhttps://a.example/\n\nftp://b.example/\n",
    )
    .unwrap();
    let out = crawldeck(dir.path(), &["crawl", "--headless", "--seeds", "seeds.txt"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("seeds.txt:4: "), "{err}");
    assert!(err.contains("only http and https"), "{err}");
}

#[test]
fn config_key_typo_exits_2_naming_the_key_and_the_choices() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("my.toml"),
        "[politeness]\nmin_dealy = \"2s\"\n",
    )
    .unwrap();
    let out = crawldeck(
        dir.path(),
        &[
            "crawl",
            "--headless",
            "--config",
            "my.toml",
            "https://a.example/",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("my.toml"), "{err}");
    assert!(err.contains("min_dealy"), "{err}");
    assert!(
        err.contains("min_delay"),
        "the expected key is suggested: {err}"
    );
}

#[test]
fn bad_delay_exits_2_with_the_format() {
    let dir = tempfile::tempdir().unwrap();
    let out = crawldeck(
        dir.path(),
        &[
            "crawl",
            "--headless",
            "--delay",
            "soon",
            "https://a.example/",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("--delay"), "{err}");
    assert!(err.contains("\"soon\" is not a duration"), "{err}");
    assert!(err.contains("500ms"), "{err}");
}

#[test]
fn resuming_an_empty_dir_explains_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("empty")).unwrap();
    let out = crawldeck(dir.path(), &["crawl", "--headless", "--data", "empty"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("no seeds: give a URL, --seeds FILE, or --data of an existing crawl"),
        "{err}"
    );
    assert!(err.contains("empty holds no crawl"), "{err}");
}

#[test]
fn flags_win_over_the_config_file_which_wins_over_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.toml");
    std::fs::write(
        &file,
        "max_pages = 50\nmax_depth = 3\n[politeness]\nmin_delay = \"2s\"\ndelay_factor = 4.0\n",
    )
    .unwrap();
    let data = dir.path().join("data");
    let run = resolve(&[
        "crawl",
        "--headless",
        "--config",
        file.to_str().unwrap(),
        "--data",
        data.to_str().unwrap(),
        "--max-pages",
        "500",
        "--delay",
        "2m",
        "--scope",
        "domain",
        "--traps",
        "alert-only",
        "--max-body",
        "512KiB",
        "--allow-domain",
        ".CDN.example",
        "https://a.example",
    ])
    .unwrap();
    assert_eq!(run.mode, Mode::Headless);
    assert_eq!(run.data_dir.as_deref(), Some(data.as_path()));
    assert!(!run.resuming);
    let c = &run.config;
    assert_eq!(c.max_pages, 500, "flag wins");
    assert_eq!(c.max_depth, 3, "file wins over default");
    assert_eq!(c.politeness.delay_factor, 4.0);
    assert_eq!(c.politeness.min_delay, Duration::from_secs(120));
    assert_eq!(
        c.politeness.max_delay,
        Duration::from_secs(120),
        "a longer --delay raises the cap"
    );
    assert_eq!(c.scope.mode, Scope::Domain);
    assert_eq!(c.scope.allow_domains, ["cdn.example"]);
    assert_eq!(c.traps.policy, TrapPolicy::AlertOnly);
    assert_eq!(c.fetch.max_body, 512 * 1024);
    assert_eq!(c.seeds, ["https://a.example/"]);
    assert_eq!(
        c.concurrency,
        CrawlConfig::default().concurrency,
        "default kept"
    );
}

#[test]
fn allow_private_comes_from_the_flag_or_the_file() {
    let seed = "https://a.example/";
    let run = resolve(&["crawl", "--headless", seed]).unwrap();
    assert!(!run.config.fetch.allow_private, "refused by default");
    let run = resolve(&["crawl", "--headless", "--allow-private", seed]).unwrap();
    assert!(run.config.fetch.allow_private);

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.toml");
    std::fs::write(&file, "[fetch]\nallow_private = true\n").unwrap();
    let run = resolve(&["crawl", "--config", file.to_str().unwrap(), seed]).unwrap();
    assert!(run.config.fetch.allow_private);
}

#[test]
fn sitemaps_are_read_unless_the_flag_or_the_file_says_no() {
    let seed = "https://a.example/";
    let run = resolve(&["crawl", "--headless", seed]).unwrap();
    assert!(run.config.sitemaps.enabled, "on by default");
    let run = resolve(&["crawl", "--headless", "--no-sitemaps", seed]).unwrap();
    assert!(!run.config.sitemaps.enabled);

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.toml");
    std::fs::write(&file, "[sitemaps]\nenabled = false\nmax_urls = 10\n").unwrap();
    let run = resolve(&["crawl", "--config", file.to_str().unwrap(), seed]).unwrap();
    assert!(!run.config.sitemaps.enabled);
    assert_eq!(run.config.sitemaps.max_urls, 10);
}

#[test]
fn resume_reads_the_stored_config_and_adds_new_seeds() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("crawl1");
    std::fs::create_dir(&data).unwrap();
    let stored = CrawlConfig {
        seeds: vec!["https://a.example/".into()],
        max_pages: 77,
        ..Default::default()
    };
    stored.save(&data.join(cli::CONFIG_FILE)).unwrap();

    let run = resolve(&["crawl", "--headless", "--data", data.to_str().unwrap()]).unwrap();
    assert!(run.resuming);
    assert_eq!(run.config, stored);

    let run = resolve(&[
        "--data",
        data.to_str().unwrap(),
        "--max-pages",
        "90",
        "https://b.example/",
        "https://a.example/",
    ])
    .unwrap();
    assert_eq!(run.mode, Mode::Tui);
    assert_eq!(run.config.max_pages, 90);
    assert_eq!(
        run.config.seeds,
        ["https://a.example/", "https://b.example/"]
    );

    // An explicit --config replaces the stored one.
    let other = dir.path().join("other.toml");
    std::fs::write(&other, "max_depth = 2\n").unwrap();
    let run = resolve(&[
        "--data",
        data.to_str().unwrap(),
        "--config",
        other.to_str().unwrap(),
    ])
    .unwrap();
    assert!(run.resuming);
    assert_eq!(run.config.max_pages, 0);
    assert_eq!(run.config.max_depth, 2);
}

#[test]
fn a_database_without_config_still_counts_as_a_crawl() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(cli::INDEX_DIR)).unwrap();
    let run = resolve(&[
        "crawl",
        "--headless",
        "--data",
        dir.path().to_str().unwrap(),
    ])
    .unwrap();
    assert!(run.resuming);
    assert_eq!(run.config, CrawlConfig::default());
}

#[test]
fn demo_uses_a_temporary_dir_unless_given_and_takes_no_seeds() {
    let run = resolve(&["demo", "--headless", "--json"]).unwrap();
    assert_eq!(
        run.mode,
        Mode::Demo {
            headless: true,
            cluster: None
        }
    );
    assert_eq!(run.data_dir, None);
    assert!(run.ui.json);
    let err = resolve(&["demo", "https://a.example/"]).unwrap_err();
    assert!(err.0.contains("takes no seeds"), "{err}");
}

#[test]
fn invalid_values_name_the_flag() {
    let err = resolve(&["--from", "nobody", "https://a.example/"]).unwrap_err();
    assert!(
        err.0.contains("identity.from") && err.0.contains("--from"),
        "{err}"
    );
    let err = resolve(&["--log-level", "a=b=c", "https://a.example/"]).unwrap_err();
    assert!(err.0.contains("--log-level"), "{err}");
    let err =
        Cli::try_parse_from(["crawldeck", "--scope", "planet", "https://a.example/"]).unwrap_err();
    assert_eq!(err.exit_code(), 2);
    assert!(err.to_string().contains("host"), "{err}");
}

#[test]
fn a_zero_timeout_exits_2_naming_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let out = crawldeck(
        dir.path(),
        &[
            "crawl",
            "--headless",
            "--timeout",
            "0s",
            "https://a.example/",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("--timeout"), "{err}");
    assert!(err.contains("fetch.total_timeout"), "{err}");
    assert!(err.contains("longer than 0s"), "{err}");
    assert!(!dir.path().join(cli::DEFAULT_DATA_DIR).exists());

    std::fs::write(
        dir.path().join("c.toml"),
        "[fetch]\nconnect_timeout = \"0s\"\n",
    )
    .unwrap();
    let err = resolve(&[
        "--config",
        &dir.path().join("c.toml").display().to_string(),
        "https://a.example/",
    ])
    .unwrap_err();
    assert!(err.0.contains("fetch.connect_timeout"), "{err}");
}

#[test]
fn a_bad_allowed_domain_exits_2_naming_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    for bad in ["not a domain!", ""] {
        let out = crawldeck(
            dir.path(),
            &[
                "crawl",
                "--headless",
                "--allow-domain",
                bad,
                "https://a.example/",
            ],
        );
        assert_eq!(out.status.code(), Some(2));
        let err = stderr(&out);
        assert!(
            err.contains(&format!("{bad:?} is not a domain name")),
            "{err}"
        );
        assert!(err.contains("--allow-domain"), "{err}");
        assert!(err.contains("scope.allow_domains"), "{err}");
    }
    assert!(!dir.path().join(cli::DEFAULT_DATA_DIR).exists());

    let run = resolve(&["--allow-domain", ".Bücher.example", "https://a.example/"]).unwrap();
    assert_eq!(run.config.scope.allow_domains, ["xn--bcher-kva.example"]);
}

#[test]
fn subcommand_names_are_not_taken_for_seeds() {
    let cli = Cli::try_parse_from(["crawldeck", "keys", "--keys", "k.toml"]).unwrap();
    let run = cli::resolve(cli).unwrap();
    assert_eq!(
        run.mode,
        Mode::Keys {
            file: Some("k.toml".into())
        }
    );
    let run = resolve(&["bench", "--pages", "100", "--hosts", "4"]).unwrap();
    assert_eq!(
        run.mode,
        Mode::Bench {
            pages: 100,
            hosts: 4,
            delay: Duration::ZERO,
            archive: true,
            archive_floor: false,
            tui: false,
            previews: false,
            rounds: 1
        }
    );
    let run = resolve(&["bench", "--hosts", "2000", "--delay", "1s"]).unwrap();
    assert!(
        matches!(run.mode, Mode::Bench { hosts: 2000, delay, .. } if delay == Duration::from_secs(1))
    );
    let run = resolve(&["bench", "--no-archive"]).unwrap();
    assert!(matches!(run.mode, Mode::Bench { archive: false, .. }));
    let run = resolve(&["bench", "--archive-floor"]).unwrap();
    assert!(matches!(
        run.mode,
        Mode::Bench {
            archive: true,
            archive_floor: true,
            ..
        }
    ));
    assert!(
        Cli::try_parse_from(["crawldeck", "bench", "--no-archive", "--archive-floor"]).is_err()
    );
    let run = resolve(&["bench", "--archive-floor", "--rounds", "5"]).unwrap();
    assert!(matches!(run.mode, Mode::Bench { rounds: 5, .. }));
    assert!(Cli::try_parse_from(["crawldeck", "bench", "--rounds", "0"]).is_err());
    let too_many = resolve(&["bench", "--hosts", "10001"])
        .unwrap_err()
        .to_string();
    assert!(too_many.contains("at most 10000"), "{too_many}");
    let run = resolve(&["bench", "--tui"]).unwrap();
    assert!(matches!(run.mode, Mode::Bench { tui: true, .. }));
    let run = resolve(&["bench", "--previews"]).unwrap();
    assert!(matches!(run.mode, Mode::Bench { previews: true, .. }));
    assert!(Cli::try_parse_from(["crawldeck", "bench", "--previews", "--tui"]).is_err());
}

#[test]
fn recrawl_needs_an_existing_crawl() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("empty")).unwrap();
    let out = crawldeck(
        dir.path(),
        &["crawl", "--headless", "--recrawl", "--data", "empty"],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("--recrawl fetches an existing crawl again, and empty holds none"),
        "{err}"
    );
    let err = resolve(&["demo", "--headless", "--recrawl"]).unwrap_err();
    assert!(err.0.contains("--recrawl needs --data DIR"), "{err}");

    std::fs::create_dir_all(dir.path().join("old").join(cli::INDEX_DIR)).unwrap();
    let old = dir.path().join("old");
    let run = resolve(&["crawl", "--recrawl", "--data", old.to_str().unwrap()]).unwrap();
    assert!(run.recrawl && run.resuming);
}

#[test]
fn flags_for_this_run_become_overrides_of_the_stored_settings() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_str().unwrap();
    let run = resolve(&[
        "crawl",
        "--headless",
        "https://a.example/",
        "--data",
        data,
        "--delay",
        "2s",
        "--max-rate",
        "0",
        "--paused",
    ])
    .expect("resolves");
    assert_eq!(run.overrides.delay, Some(std::time::Duration::from_secs(2)));
    assert_eq!(run.overrides.max_rate, Some(0.0));
    assert_eq!(
        run.overrides.concurrency, None,
        "not given: the stored value stays"
    );
    assert_eq!(run.overrides.paused, Some(true));
    let run =
        resolve(&["crawl", "--headless", "https://a.example/", "--data", data]).expect("resolves");
    assert_eq!(run.overrides.paused, None);
}

#[test]
fn the_product_token_follows_the_user_agent_unless_given() {
    let ua = "AcmeBot/2.0 (+https://acme.example/bot)";
    let run = resolve(&["--user-agent", ua, "https://a.example/"]).unwrap();
    assert_eq!(run.config.identity.user_agent, ua);
    assert_eq!(run.config.identity.token(), "acmebot");

    let run = resolve(&[
        "--user-agent",
        ua,
        "--product-token",
        "acme-crawler",
        "https://a.example/",
    ])
    .unwrap();
    assert_eq!(run.config.identity.token(), "acme-crawler");

    let run = resolve(&["https://a.example/"]).unwrap();
    assert_eq!(run.config.identity.token(), "crawldeck", "the default");

    // A file's token stands for the file's User-Agent, not for one given by flag.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.toml");
    std::fs::write(
        &file,
        "[identity]\nproduct_token = \"crawldeck\"\nuser_agent = \"crawldeck/0.1\"\n",
    )
    .unwrap();
    let cfg = file.to_str().unwrap();
    let run = resolve(&["--config", cfg, "--user-agent", ua, "https://a.example/"]).unwrap();
    assert_eq!(run.config.identity.token(), "acmebot");
    std::fs::write(&file, format!("[identity]\nuser_agent = \"{ua}\"\n")).unwrap();
    let run = resolve(&["--config", cfg, "https://a.example/"]).unwrap();
    assert_eq!(
        run.config.identity.token(),
        "acmebot",
        "derived in a file too"
    );
}

#[test]
fn a_bad_product_token_exits_2_naming_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let out = crawldeck(
        dir.path(),
        &[
            "crawl",
            "--headless",
            "--product-token",
            "acme bot",
            "https://a.example/",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("\"acme bot\" is not a robots.txt product token"),
        "{err}"
    );
    assert!(err.contains("--product-token"), "{err}");

    let out = crawldeck(
        dir.path(),
        &[
            "crawl",
            "--headless",
            "--user-agent",
            "Bot9000/1.0",
            "https://a.example/",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("\"bot9000\""), "{err}");
    assert!(err.contains("--product-token"), "{err}");
    assert!(
        !dir.path().join(cli::DEFAULT_DATA_DIR).exists(),
        "nothing is created on a usage error"
    );
}

#[test]
fn a_bad_css_selector_exits_2_before_the_crawl_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let out = crawldeck(
        dir.path(),
        &["page", "c1", "http://a.example/", "--select", "a["],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("--select: bad CSS selector `a[`"), "{err}");
}

#[test]
fn demo_on_a_directory_holding_a_crawl_exits_2_and_leaves_it_alone() {
    let dir = tempfile::tempdir().unwrap();
    let crawl = dir.path().join("c1");
    std::fs::create_dir(&crawl).unwrap();
    std::fs::write(crawl.join("crawl.toml"), "max_pages = 7\n").unwrap();
    let out = crawldeck(dir.path(), &["demo", "--headless", "--data", "c1"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("c1 already holds a crawl"), "{err}");
    assert!(err.contains("give an empty --data DIR"), "{err}");
    let kept = std::fs::read_to_string(crawl.join("crawl.toml")).unwrap();
    assert_eq!(kept, "max_pages = 7\n");
}

#[test]
fn alert_decisions_need_an_existing_crawl_and_headless() {
    let err = resolve(&[
        "crawl",
        "--headless",
        "--dismiss",
        "1",
        "https://a.example/",
    ])
    .unwrap_err()
    .to_string();
    assert!(err.contains("give its --data DIR"), "{err}");
    let no_headless = Cli::try_parse_from(["crawldeck", "crawl", "--accept", "1", "--data", "x"]);
    assert!(no_headless.is_err(), "--accept needs --headless");
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("c1");
    std::fs::create_dir_all(data.join(cli::INDEX_DIR)).unwrap();
    let data = data.to_str().unwrap();
    let run = resolve(&[
        "crawl",
        "--headless",
        "--data",
        data,
        "--accept",
        "2",
        "--dismiss",
        "3",
    ])
    .expect("a crawl to decide on");
    assert_eq!(
        run.decisions,
        [
            crawldeck::engine::control::Command::AcceptAlert {
                alert_id: 2,
                rule: None
            },
            crawldeck::engine::control::Command::DismissAlert { alert_id: 3 },
        ]
    );
}

#[test]
fn resources_and_external_checks_from_flags_with_their_defaults() {
    let run = resolve(&["crawl", "https://a.example/"]).unwrap();
    assert_eq!(run.config.checks.resources, ResourcesMode::Check);
    assert!(!run.config.checks.external, "off for a plain crawl");
    let run = resolve(&[
        "crawl",
        "--resources",
        "off",
        "--check-external",
        "https://a.example/",
    ])
    .unwrap();
    assert_eq!(run.config.checks.resources, ResourcesMode::Off);
    assert!(run.config.checks.external);
    assert!(
        resolve(&["demo", "--headless"])
            .unwrap()
            .config
            .checks
            .external
    );
    let off = resolve(&["demo", "--headless", "--check-external=false"]).unwrap();
    assert!(!off.config.checks.external);
    let fetch = resolve(&["crawl", "--resources", "fetch", "https://a.example/"]).unwrap();
    assert_eq!(fetch.config.checks.resources, ResourcesMode::Fetch);
}

#[test]
fn warc_max_size_sets_the_rotation_size_and_a_bad_one_exits_2() {
    let seed = "https://a.example/";
    let run = resolve(&["crawl", "--headless", seed]).unwrap();
    assert_eq!(
        run.config.storage.warc_max_bytes,
        1 << 30,
        "1 GiB by default"
    );
    let run = resolve(&["crawl", "--headless", "--warc-max-size", "100MB", seed]).unwrap();
    assert_eq!(run.config.storage.warc_max_bytes, 100_000_000);
    let run = resolve(&["crawl", "--headless", "--warc-max-size", "1GiB", seed]).unwrap();
    assert_eq!(run.config.storage.warc_max_bytes, 1 << 30);

    let dir = tempfile::tempdir().unwrap();
    for (size, says) in [
        ("big", "\"big\" is not a size"),
        ("0", "storage.warc_max_bytes"),
    ] {
        let args = ["crawl", "--headless", "--warc-max-size", size, seed];
        let out = crawldeck(dir.path(), &args);
        assert_eq!(out.status.code(), Some(2), "{size}");
        let err = stderr(&out);
        assert!(
            err.contains("--warc-max-size") && err.contains(says),
            "{err}"
        );
    }
}
