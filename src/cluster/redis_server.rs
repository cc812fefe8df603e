//! A private `redis-server` on a free loopback port, without persistence,
//! stopped by its pid when dropped (a panicking test included) and, should
//! its owner die first, by `timeout` after a bounded lifetime.

use std::io::{BufRead, BufReader, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How to get `redis-server`, for the message when it is missing.
pub const INSTALL_HINT: &str =
    "install it with `apt-get install -y redis-server` (Debian/Ubuntu; prefix sudo if not root) or your system's package manager";

/// A running `redis-server`; stopped (and reaped) on drop.
pub struct RedisServer {
    child: Child,
    port: u16,
}

impl RedisServer {
    /// Starts a server that lives at most `lifetime`, and waits until it answers.
    pub fn start(lifetime: Duration) -> Result<RedisServer, String> {
        RedisServer::start_program("redis-server", lifetime, false)
    }

    /// As [`RedisServer::start`], and on Linux the server also stops when
    /// the calling thread ends (`keeper::spawn_tied`): for a long-lived
    /// thread such as a `keeper::Keeper`'s, so a killed owner leaves no server.
    pub fn start_tied(lifetime: Duration) -> Result<RedisServer, String> {
        RedisServer::start_program("redis-server", lifetime, true)
    }

    fn start_program(program: &str, lifetime: Duration, tied: bool) -> Result<RedisServer, String> {
        let mut last_error = String::new();
        // A free port may be taken between the probe and the server's bind: retry.
        for _ in 0..5 {
            let port = free_port().map_err(|e| format!("no free loopback port: {e}"))?;
            let mut command = Command::new("timeout");
            command
                .args(["-k", "5", &lifetime.as_secs().max(1).to_string(), program])
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args([
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                    "--protected-mode",
                    "yes",
                ])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            let child = if tied {
                super::keeper::spawn_tied(command)
            } else {
                command.spawn()
            }
            .map_err(|e| format!("cannot run timeout/redis-server: {e}; {INSTALL_HINT}"))?;
            let mut server = RedisServer { child, port };
            match server.wait_ready() {
                Ok(()) => return Ok(server),
                Err(e) => last_error = e,
            }
        }
        Err(last_error)
    }

    /// Starts a server for a test, panicking with how to install Redis if it cannot.
    pub fn for_test() -> RedisServer {
        RedisServer::start(Duration::from_secs(600))
            .unwrap_or_else(|e| panic!("this test needs a local redis-server: {e}"))
    }

    /// `redis://127.0.0.1:PORT/0`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
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
            if self.command("PING").is_ok_and(|a| a == "+PONG") {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err("redis-server did not answer PING within 10 s".into())
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
}
