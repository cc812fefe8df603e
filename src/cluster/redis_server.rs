//! A private `redis-server` on a free loopback port, without persistence
//! (or with an append-only file in a given directory, to be killed and
//! restarted), stopped by its pid when dropped (a panicking test included)
//! and, should its owner die first, by `timeout` after a bounded lifetime.
//! A secured one answers only TLS, and only to its ACL users.

use std::io::{BufRead, BufReader, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::engine::sched;

/// How to get `redis-server`, for the message when it is missing.
pub const INSTALL_HINT: &str =
    "install it with `apt-get install -y redis-server` (Debian/Ubuntu; prefix sudo if not root) or your system's package manager";

/// A running `redis-server`; stopped (and reaped) on drop.
pub struct RedisServer {
    child: Child,
    port: u16,
    program: String,
    /// Arguments after the port: persistence settings.
    args: Vec<String>,
    lifetime: Duration,
    /// Started through `keeper::spawn_tied`: stops with its starting thread.
    tied: bool,
    /// A secured server: how its readiness is checked (over TLS, as an ACL user).
    admin: Option<crate::engine::RedisUrl>,
}

/// How a secured server is started: TLS only (`--port 0`), the default user off.
pub struct Secured {
    /// PEM files: the server's certificate and key, and the CA that signed it.
    pub cert: PathBuf,
    pub key: PathBuf,
    pub ca: PathBuf,
    /// One ACL rule per user, as `ACL SETUSER` takes it: `NAME on >PASSWORD ~KEYS +CMD…`.
    pub users: Vec<String>,
    /// A user of `users` and its password, to check the server answers.
    pub admin: (String, String),
    /// A client certificate and its key (PEM files) signed by `ca`: the
    /// server then refuses clients without one (`tls-auth-clients yes`).
    pub client: Option<(PathBuf, PathBuf)>,
}

impl Secured {
    /// The arguments after the port: TLS on `port`, plain TCP off, the users.
    fn args(&self, port: u16) -> Vec<String> {
        let path = |p: &PathBuf| p.display().to_string();
        let mut args: Vec<String> = ["--port", "0", "--tls-port", &port.to_string()]
            .iter()
            .map(|s| s.to_string())
            .collect();
        for (flag, file) in [
            ("--tls-cert-file", &self.cert),
            ("--tls-key-file", &self.key),
            ("--tls-ca-cert-file", &self.ca),
        ] {
            args.extend([flag.to_string(), path(file)]);
        }
        let auth_clients = if self.client.is_some() { "yes" } else { "no" };
        args.extend(
            [
                "--tls-auth-clients",
                auth_clients,
                "--user",
                "default",
                "off",
            ]
            .map(String::from),
        );
        for rule in &self.users {
            args.push("--user".into());
            args.extend(rule.split_whitespace().map(String::from));
        }
        args
    }

    /// The admin user's URL of the server on `port`.
    fn admin_url(&self, port: u16) -> Result<crate::engine::RedisUrl, String> {
        let (user, password) = &self.admin;
        let env = crate::engine::RedisCredentials {
            user: Some(user.clone()),
            password: Some(password.clone()),
        };
        let url = crate::engine::RedisUrl::parse(&tls_url(port), Some(&self.ca), env)?;
        match &self.client {
            Some((cert, key)) => url.with_client_cert(cert, key),
            None => Ok(url),
        }
    }
}

/// `rediss://127.0.0.1:PORT/0`.
fn tls_url(port: u16) -> String {
    format!("rediss://127.0.0.1:{port}/0")
}

#[cfg(test)]
impl RedisServer {
    /// Writes `beat` as a worker's heartbeat in `crawl`, as the worker would.
    pub fn write_heartbeat(&self, crawl: &str, beat: &crate::engine::Heartbeat) {
        let mut con = redis::Client::open(self.url())
            .and_then(|client| client.get_connection())
            .expect("a connection to the test server");
        redis::cmd("HSET")
            .arg(format!("{}beats", crate::engine::key_prefix(crawl)))
            .arg(&beat.worker)
            .arg(serde_json::to_string(beat).expect("a heartbeat encodes"))
            .query::<()>(&mut con)
            .expect("the heartbeat is written");
    }
}

impl RedisServer {
    /// Starts a server that lives at most `lifetime`, and waits until it answers.
    pub fn start(lifetime: Duration) -> Result<RedisServer, String> {
        RedisServer::start_program("redis-server", lifetime, no_persistence(), false)
    }

    /// Starts a server that answers only TLS and only the users of `secured`.
    pub fn start_secured(secured: &Secured, lifetime: Duration) -> Result<RedisServer, String> {
        RedisServer::start_with(
            "redis-server",
            lifetime,
            |port| {
                let args = no_persistence().into_iter().chain(secured.args(port));
                Ok((args.collect(), Some(secured.admin_url(port)?)))
            },
            false,
        )
    }

    /// As [`RedisServer::start`], and on Linux the server also stops when
    /// the calling thread ends (`keeper::spawn_tied`): for a long-lived
    /// thread such as a `keeper::Keeper`'s, so a killed owner leaves no server.
    pub fn start_tied(lifetime: Duration) -> Result<RedisServer, String> {
        RedisServer::start_program("redis-server", lifetime, no_persistence(), true)
    }

    /// Starts a server that writes every change to an append-only file in
    /// `dir` before answering (`appendfsync always`), so a restart after
    /// `kill -9` finds every acknowledged write.
    pub fn start_persistent(dir: &Path, lifetime: Duration) -> Result<RedisServer, String> {
        let args = [
            "--save",
            "",
            "--appendonly",
            "yes",
            "--appendfsync",
            "always",
            "--dir",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain([dir.display().to_string()])
        .collect();
        RedisServer::start_program("redis-server", lifetime, args, false)
    }

    fn start_program(
        program: &str,
        lifetime: Duration,
        args: Vec<String>,
        tied: bool,
    ) -> Result<RedisServer, String> {
        RedisServer::start_with(program, lifetime, |_| Ok((args.clone(), None)), tied)
    }

    /// Starts `program` with the arguments and admin URL `settings` gives for a port.
    #[allow(clippy::type_complexity)]
    fn start_with(
        program: &str,
        lifetime: Duration,
        settings: impl Fn(u16) -> Result<(Vec<String>, Option<crate::engine::RedisUrl>), String>,
        tied: bool,
    ) -> Result<RedisServer, String> {
        let mut last_error = String::new();
        // A free port may be taken between the probe and the server's bind: retry.
        for _ in 0..5 {
            let port = free_port().map_err(|e| format!("no free loopback port: {e}"))?;
            let (args, admin) = settings(port)?;
            let child = spawn(program, port, &args, lifetime, tied)?;
            let mut server = RedisServer {
                child,
                port,
                program: program.to_string(),
                args,
                lifetime,
                tied,
                admin,
            };
            match server.wait_ready() {
                Ok(()) => return Ok(server),
                Err(e) => last_error = e,
            }
        }
        Err(last_error)
    }

    /// Kills `redis-server` with SIGKILL (no shutdown, no final write) and
    /// waits until it is gone.
    pub fn kill9(&mut self) -> Result<(), String> {
        let pid = self
            .server_pid()
            .map_err(|e| format!("cannot ask redis-server for its pid: {e}"))?;
        let pid = rustix::process::Pid::from_raw(pid as i32).ok_or("redis-server pid 0")?;
        rustix::process::kill_process(pid, rustix::process::Signal::KILL)
            .map_err(|e| format!("cannot kill redis-server: {e}"))?;
        // `timeout` exits once its child is gone.
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Err("redis-server did not end within 10 s of SIGKILL".into())
    }

    /// Starts the server again on the same port with the same settings (and
    /// so the same append-only file), and waits until it answers.
    pub fn restart(&mut self) -> Result<(), String> {
        if self.child.try_wait().ok().flatten().is_none() {
            return Err("redis-server is still running; kill it first".into());
        }
        self.child = spawn(
            &self.program,
            self.port,
            &self.args,
            self.lifetime,
            self.tied,
        )?;
        self.wait_ready()
    }

    /// The pid of `redis-server` itself (the child is `timeout`).
    pub fn server_pid(&self) -> std::io::Result<u32> {
        let mut stream = TcpStream::connect((Ipv4Addr::LOCALHOST, self.port))?;
        stream.set_read_timeout(Some(Duration::from_secs(5)))?;
        stream.write_all(b"INFO server\r\n")?;
        for line in BufReader::new(stream).lines() {
            if let Some(pid) = line?.trim_end().strip_prefix("process_id:") {
                return pid
                    .parse()
                    .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e));
            }
        }
        Err(std::io::ErrorKind::UnexpectedEof.into())
    }

    /// Starts a server for a test, panicking with how to install Redis if it cannot.
    pub fn for_test() -> RedisServer {
        RedisServer::start(Duration::from_secs(600))
            .unwrap_or_else(|e| panic!("this test needs a local redis-server: {e}"))
    }

    /// `redis://127.0.0.1:PORT/0`, or `rediss://…` for a secured server.
    pub fn url(&self) -> String {
        match self.admin {
            Some(_) => tls_url(self.port),
            None => format!("redis://127.0.0.1:{}/0", self.port),
        }
    }

    /// [`RedisServer::url`], as the crawl connects to it.
    pub fn redis_url(&self) -> crate::engine::RedisUrl {
        crate::engine::RedisUrl::plain(&self.url()).expect("a loopback redis:// URL")
    }

    /// A connection of a test's own (panics if the server does not answer).
    pub fn connection(&self) -> redis::Connection {
        redis::Client::open(self.url())
            .and_then(|c| c.get_connection_with_timeout(Duration::from_secs(5)))
            .expect("the test's redis-server answers")
    }

    /// The shared crawl `crawl` on this server, with leases of 10 s.
    pub fn target(&self, crawl: &str) -> crate::engine::ClusterTarget {
        crate::engine::ClusterTarget {
            url: self.redis_url(),
            crawl: crawl.into(),
            lease_ttl: Duration::from_secs(10),
            host_affinity: crate::engine::DEFAULT_HOST_AFFINITY,
        }
    }

    /// The pid of the process that runs the server (`timeout`, whose child
    /// redis-server is and which it stops with itself).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The server's port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Sends one inline command and returns the first line of the answer.
    pub fn command(&self, line: &str) -> std::io::Result<String> {
        let mut stream = TcpStream::connect((Ipv4Addr::LOCALHOST, self.port))?;
        stream.set_read_timeout(Some(Duration::from_secs(5)))?;
        stream.write_all(format!("{line}\r\n").as_bytes())?;
        let mut answer = String::new();
        BufReader::new(stream).read_line(&mut answer)?;
        Ok(answer.trim_end().to_string())
    }

    fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(match status.code() {
                    Some(127) => {
                        format!("redis-server is not installed (not found on PATH); {INSTALL_HINT}")
                    }
                    _ => format!("redis-server exited at start ({status})"),
                });
            }
            if self.answers() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err("redis-server did not answer PING within 10 s".into())
    }

    /// The server answers PING (a secured one over TLS, as its admin user).
    fn answers(&self) -> bool {
        match &self.admin {
            None => self.command("PING").is_ok_and(|a| a == "+PONG"),
            Some(admin) => admin
                .connect(Duration::from_secs(1))
                .and_then(|mut con| redis::cmd("PING").query::<String>(&mut con))
                .is_ok_and(|a| a == "PONG"),
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        // SIGTERM to `timeout`, which passes it on to redis-server and exits.
        if let Some(pid) = rustix::process::Pid::from_raw(self.child.id() as i32) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn no_persistence() -> Vec<String> {
    ["--save", "", "--appendonly", "no"]
        .iter()
        .map(|s| s.to_string())
        .collect()
}

/// `timeout` running `program` on `127.0.0.1:port` for at most `lifetime`.
fn spawn(
    program: &str,
    port: u16,
    args: &[String],
    lifetime: Duration,
    tied: bool,
) -> Result<Child, String> {
    let mut command = Command::new("timeout");
    sched::ordinary_child(&mut command)
        .args(["-k", "5", &lifetime.as_secs().max(1).to_string(), program])
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--protected-mode", "yes"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if tied {
        super::keeper::spawn_tied(command)
    } else {
        command.spawn()
    }
    .map_err(|e| format!("cannot run timeout/redis-server: {e}; {INSTALL_HINT}"))
}

fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?
        .local_addr()?
        .port())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_server_says_how_to_install_it() {
        let Err(e) = RedisServer::start_program(
            "crawldeck-no-such-redis-server",
            Duration::from_secs(5),
            no_persistence(),
            false,
        ) else {
            panic!("a server that does not exist started");
        };
        assert!(
            e.contains("not installed") && e.contains("apt-get install -y redis-server"),
            "{e}"
        );
    }

    #[test]
    fn a_server_answers_on_loopback_and_is_gone_after_drop() {
        let server = RedisServer::for_test();
        assert_eq!(server.command("PING").unwrap(), "+PONG");
        let port = server.port();
        drop(server);
        assert!(
            TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_err(),
            "still listening on {port}"
        );
    }

    #[test]
    fn a_persistent_server_keeps_its_data_through_kill_9_and_restart() {
        let dir = tempfile::tempdir().unwrap();
        let mut server =
            RedisServer::start_persistent(dir.path(), Duration::from_secs(60)).unwrap();
        assert_eq!(server.command("SET kept 1").unwrap(), "+OK");
        let port = server.port();
        server.kill9().unwrap();
        assert!(TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_err());
        assert!(server.command("PING").is_err());
        server.restart().unwrap();
        assert_eq!(server.port(), port);
        assert_eq!(server.command("GET kept").unwrap(), "$1");
    }
}
