//! A shared crawl over a Redis server reached as over a network nobody
//! trusts: TLS with a private CA, the README's least-privilege ACL user, the
//! password from the environment and never written down or printed; a wrong
//! password fails fast and clearly; an open server off this machine is
//! refused before any connection.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::cluster::{finish, worker_command};
use common::{pages, run_binary, run_bounded, start_demo, Killed};
use crawldeck::cluster::redis_server::{RedisServer, Secured};
use crawldeck::demo::SiteKind;
use crawldeck::engine::{PASSWORD_VAR, USER_VAR};

/// The crawl user's password: distinctive, so any copy of it is found.
const PASSWORD: &str = "pw-7c41e9b2d05f";
const ADMIN_PASSWORD: &str = "admin-3e8a61f0";
const CRAWL: &str = "trusted";

/// A TLS-only server with the CA that signed its certificate, and the crawl
/// user of the README's `ACL SETUSER` line.
struct SecuredRedis {
    server: RedisServer,
    ca: PathBuf,
    /// A client certificate and its key, signed by the CA.
    client: (PathBuf, PathBuf),
    _files: tempfile::TempDir,
}

impl SecuredRedis {
    /// With `check_clients`, the server refuses clients without a certificate.
    fn start(check_clients: bool) -> SecuredRedis {
        let files = tempfile::tempdir().unwrap();
        let [ca, cert, key, client_cert, client_key] = write_certificates(files.path());
        let client = (client_cert, client_key);
        let secured = Secured {
            cert,
            key,
            ca: ca.clone(),
            users: vec![format!("admin on >{ADMIN_PASSWORD} ~* &* +@all")],
            admin: ("admin".into(), ADMIN_PASSWORD.into()),
            client: check_clients.then(|| client.clone()),
        };
        let server = RedisServer::start_secured(&secured, Duration::from_secs(300))
            .unwrap_or_else(|e| panic!("a redis-server with TLS starts: {e}"));
        let redis = SecuredRedis {
            server,
            ca,
            client,
            _files: files,
        };
        let mut admin = redis.admin();
        redis::cmd("ACL")
            .arg(readme_acl_rules())
            .query::<()>(&mut admin)
            .expect("the README's ACL SETUSER line is accepted");
        redis
    }

    fn admin(&self) -> redis::Connection {
        let env = crawldeck::engine::RedisCredentials {
            user: Some("admin".into()),
            password: Some(ADMIN_PASSWORD.into()),
        };
        crawldeck::engine::RedisUrl::parse(&self.server.url(), Some(&self.ca), env)
            .and_then(|url| url.with_client_cert(&self.client.0, &self.client.1))
            .unwrap()
            .connect(Duration::from_secs(5))
            .expect("the admin connects over TLS")
    }

    /// `COMMAND --redis URL --redis-ca FILE --crawl CRAWL` and `more`.
    fn command_line(&self, command: &str, more: &[&str]) -> Vec<String> {
        let ca = self.ca.display().to_string();
        let redis = self.server.url();
        [
            command,
            "--redis",
            &redis,
            "--redis-ca",
            &ca,
            "--crawl",
            CRAWL,
        ]
        .iter()
        .chain(more)
        .map(|s| s.to_string())
        .collect()
    }
}

/// The README's `ACL SETUSER crawler …` line for this test's crawl and
/// password, as `ACL` arguments.
fn readme_acl_rules() -> Vec<String> {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let line = readme
        .lines()
        .find(|l| l.trim_start().starts_with("ACL SETUSER crawler "))
        .expect("the README gives the crawl user's ACL SETUSER line");
    line.trim()
        .strip_prefix("ACL ")
        .unwrap()
        .replace("{NAME}", &format!("{{{CRAWL}}}"))
        .replace(">PASSWORD", &format!(">{PASSWORD}"))
        .split_whitespace()
        .map(String::from)
        .collect()
}

/// A CA, a server certificate for 127.0.0.1 and localhost and a client
/// certificate, both signed by it, as PEM files in `dir`: `[ca, server
/// cert, server key, client cert, client key]`.
fn write_certificates(dir: &Path) -> [PathBuf; 5] {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    // Names of their own: OpenSSL takes a certificate named as its issuer for self-signed.
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "crawldeck test CA");
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    let signed = |names: Vec<String>| {
        let key = KeyPair::generate().unwrap();
        let mut cert = CertificateParams::new(names.clone()).unwrap();
        cert.distinguished_name
            .push(DnType::CommonName, names[0].as_str());
        (cert.signed_by(&key, &issuer).unwrap(), key)
    };
    let (server, server_key) = signed(vec!["127.0.0.1".into(), "localhost".into()]);
    let (client, client_key) = signed(vec!["crawler".into()]);
    let write = |name: &str, pem: String| {
        let path = dir.join(name);
        std::fs::write(&path, pem).unwrap();
        path
    };
    [
        write("ca.pem", ca_cert.pem()),
        write("server.pem", server.pem()),
        write("server.key", server_key.serialize_pem()),
        write("client.pem", client.pem()),
        write("client.key", client_key.serialize_pem()),
    ]
}

/// Every file under `dir` that holds `needle`.
fn files_holding(dir: &Path, needle: &[u8]) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(files_holding(&path, needle));
        } else if let Ok(bytes) = std::fs::read(&path) {
            if bytes.windows(needle.len()).any(|w| w == needle) {
                found.push(path);
            }
        }
    }
    found
}

/// The binary with `args`, as the crawl user with `password` (from the environment).
fn run_as(password: Option<&str>, args: &[String]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_crawldeck"));
    command
        .args(args)
        .env(USER_VAR, "crawler")
        .env_remove(PASSWORD_VAR);
    if let Some(password) = password {
        command.env(PASSWORD_VAR, password);
    }
    run_bounded(command)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crawl_over_tls_with_an_acl_user_completes_and_never_writes_the_password() {
    let redis = SecuredRedis::start(false);
    let demo = start_demo(vec![SiteKind::Shop, SiteKind::DeepFinite]).await;
    let seeds: Vec<String> = demo.seeds().iter().map(|u| u.to_string()).collect();
    let dirs: Vec<_> = (0..2).map(|_| tempfile::tempdir().unwrap()).collect();
    let outputs = tempfile::tempdir().unwrap();
    let mut workers = Vec::new();
    for (k, dir) in dirs.iter().enumerate() {
        let out = std::fs::File::create(outputs.path().join(format!("w{k}.out"))).unwrap();
        let mut command = worker_command(&redis.server, CRAWL, dir.path(), &seeds, "20ms");
        command
            .args(["--redis-ca", &redis.ca.display().to_string()])
            .args(["--log-level", "debug"])
            .env(USER_VAR, "crawler")
            .env(PASSWORD_VAR, PASSWORD)
            .stdout(out.try_clone().unwrap())
            .stderr(out);
        workers.push(Killed(command.spawn().expect("a worker starts")));
    }
    for worker in workers {
        finish(worker).await;
    }
    let requests = demo.log().records().len();
    demo.shutdown().await;

    let out = run_as(Some(PASSWORD), &redis.command_line("status", &["--json"]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (status["queued"].as_u64(), status["in_flight"].as_u64()),
        (Some(0), Some(0)),
        "{status}"
    );
    let recorded: usize = dirs.iter().map(|d| pages(d.path()).len()).sum();
    let beaten: u64 = status["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["pages"].as_u64().unwrap())
        .sum();
    assert!(
        recorded > 20 && requests > 20,
        "{recorded} pages, {requests} requests"
    );
    assert_eq!(beaten, recorded as u64, "{status}");

    // A command onto the stream, as the crawl user: published, and no
    // worker is left to answer it.
    let ctl = run_as(Some(PASSWORD), &redis.command_line("ctl", &["resume"]));
    let err = String::from_utf8_lossy(&ctl.stderr);
    assert!(
        err.contains("no live worker answered resume crawl (stream entry"),
        "{err}"
    );

    // The crawl user needed no command the README's line leaves out.
    let denied: Vec<redis::Value> = redis::cmd("ACL")
        .arg("LOG")
        .query(&mut redis.admin())
        .unwrap();
    assert!(denied.is_empty(), "commands the ACL refused: {denied:?}");

    let secret = PASSWORD.as_bytes();
    for dir in dirs.iter().map(|d| d.path()).chain([outputs.path()]) {
        assert_eq!(files_holding(dir, secret), Vec::<PathBuf>::new());
    }
    for out in [&out, &ctl] {
        let text = [&out.stdout[..], &out.stderr[..]].concat();
        assert!(!text.windows(secret.len()).any(|w| w == secret));
    }
    // The data directory names the server without the password.
    let recorded_url = std::fs::read_to_string(dirs[0].path().join("cluster-crawl")).unwrap();
    let expected = format!("rediss://crawler@127.0.0.1:{}/0", redis.server.port());
    assert!(recorded_url.starts_with(&expected), "{recorded_url}");
}

#[test]
fn a_wrong_password_a_missing_one_or_an_unknown_ca_is_a_clear_error_at_once() {
    let redis = SecuredRedis::start(false);
    let data = tempfile::tempdir().unwrap();
    let data_flag = data.path().display().to_string();
    let crawl_args = redis.command_line(
        "crawl",
        &["--headless", "--data", &data_flag, "http://127.0.0.1:9/"],
    );
    let wrong = "not-the-password-91d2";
    let started = Instant::now();
    let out = run_as(Some(wrong), &crawl_args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    println!(
        "a wrong password failed the worker in {:?}",
        started.elapsed()
    );
    assert!(started.elapsed() < Duration::from_secs(10), "{err}");
    assert!(
        err.contains("refused the password for user crawler") && err.contains(PASSWORD_VAR),
        "{err}"
    );
    assert!(!err.contains(wrong), "{err}");
    assert_eq!(
        files_holding(data.path(), wrong.as_bytes()),
        Vec::<PathBuf>::new()
    );

    let status = redis.command_line("status", &[]);
    let err = failure(run_as(Some(wrong), &status));
    assert!(err.contains("refused the password"), "{err}");
    let err = failure(run_as(None, &status));
    assert!(err.contains("needs a password"), "{err}");
    // Without --redis-ca the private CA is unknown: the certificate is refused.
    let no_ca = ["status", "--redis", &redis.server.url(), "--crawl", CRAWL].map(String::from);
    let err = failure(run_as(Some(PASSWORD), &no_ca));
    assert!(
        err.contains("UnknownIssuer") && err.contains("--redis-ca"),
        "{err}"
    );
}

/// The stderr of a run that must fail.
fn failure(out: Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{err}");
    err
}

#[test]
fn a_server_that_checks_client_certificates_lets_in_only_a_client_with_one() {
    let redis = SecuredRedis::start(true);
    let refused = failure(run_as(Some(PASSWORD), &redis.command_line("status", &[])));
    assert!(
        !refused.contains("no crawl named") && refused.contains("--redis-cert"),
        "{refused}"
    );
    let (cert, key) = (redis.client.0.display(), redis.client.1.display());
    let (cert, key) = (cert.to_string(), key.to_string());
    let args = redis.command_line("status", &["--redis-cert", &cert, "--redis-key", &key]);
    // Let in, the user reads the crawl's keys and finds no crawl yet.
    let admitted = failure(run_as(Some(PASSWORD), &args));
    assert!(admitted.contains("no crawl named trusted"), "{admitted}");
}

/// A test never connects to a non-loopback address: 192.0.2.1 (TEST-NET-1)
/// is only named where the refusal comes before any connection, which the
/// exit status 2 (a usage error, from the flags alone) and the missing data
/// directory show.
#[test]
fn an_open_server_off_this_machine_is_refused_before_connecting() {
    let parent = tempfile::tempdir().unwrap();
    let data = parent.path().join("never-made");
    let data_flag = data.display().to_string();
    let open = "redis://192.0.2.1:6379/0";
    let runs: [Vec<&str>; 4] = [
        vec![
            "crawl",
            "--headless",
            "--redis",
            open,
            "--crawl",
            "x",
            "--data",
            &data_flag,
            "http://127.0.0.1:9/",
        ],
        vec!["status", "--redis", open, "--crawl", "x"],
        vec!["ctl", "--redis", open, "--crawl", "x", "pause"],
        vec!["attach", "--redis", open, "--crawl", "x"],
    ];
    for args in runs {
        let started = Instant::now();
        let out = run_binary(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("without a password") && err.contains("--insecure-redis"),
            "{args:?}: {err}"
        );
        assert!(started.elapsed() < Duration::from_secs(2), "{args:?}");
    }
    assert!(!data.exists());
    // A password over plain redis:// would cross the network in the clear.
    let clear = "redis://crawler:hunter2-x@192.0.2.1:6379/0";
    let out = run_binary(&["status", "--redis", clear, "--crawl", "x"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("in the clear") && !err.contains("hunter2-x"),
        "{err}"
    );
}
