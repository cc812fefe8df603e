//! How to reach the crawl's Redis server: its URL, the ACL user and password
//! (from the URL or the environment) and, for `rediss://`, the CA to trust.
//! Every connection of a shared crawl is made by [`RedisUrl::client`]. The
//! password is kept out of every text: `Display` and `Debug` show it as `***`
//! and [`RedisUrl::without_password`] is what may be written to a file.

use std::fmt;
use std::net::IpAddr;
use std::path::Path;
use std::time::Duration;

use redis::{ErrorKind, IntoConnectionInfo, RedisError};

/// The environment variable holding the Redis password.
pub const PASSWORD_VAR: &str = "CRAWLDECK_REDIS_PASSWORD";
/// The environment variable holding the Redis ACL user name.
pub const USER_VAR: &str = "CRAWLDECK_REDIS_USER";

/// Credentials given outside the URL (no `Debug`: it would show the password).
#[derive(Default, Clone)]
pub struct RedisCredentials {
    /// The ACL user, when the URL names none.
    pub user: Option<String>,
    /// The password, when the URL holds none.
    pub password: Option<String>,
}

impl RedisCredentials {
    /// [`USER_VAR`] and [`PASSWORD_VAR`]; empty values count as unset.
    pub fn from_env() -> RedisCredentials {
        let var = |name| std::env::var(name).ok().filter(|v| !v.is_empty());
        RedisCredentials {
            user: var(USER_VAR),
            password: var(PASSWORD_VAR),
        }
    }
}

/// A Redis server and how to authenticate to it.
#[derive(Clone, PartialEq, Eq)]
pub struct RedisUrl {
    /// The URL without its password (with the user name, if any).
    url: url::Url,
    password: Option<String>,
    /// `--redis-ca`: the PEM certificates of the CAs to trust.
    ca: Option<Vec<u8>>,
    /// `--redis-cert` and `--redis-key`: this client's PEM certificate and key.
    client_cert: Option<(Vec<u8>, Vec<u8>)>,
}

impl RedisUrl {
    /// `given` (`redis://` or `rediss://`), with the environment's user and
    /// password where the URL has none, and the CA certificates in `ca_file`.
    pub fn parse(
        given: &str,
        ca_file: Option<&Path>,
        env: RedisCredentials,
    ) -> Result<RedisUrl, String> {
        let bad = || {
            format!(
                "--redis {:?} is not a Redis URL: write redis://HOST:PORT/DB or rediss://HOST:PORT/DB (TLS), e.g. redis://127.0.0.1:6379/0",
                shown(given)
            )
        };
        let mut url = url::Url::parse(given).map_err(|_| bad())?;
        if !matches!(url.scheme(), "redis" | "rediss") || url.host_str().is_none() {
            return Err(bad());
        }
        if url.fragment().is_some() {
            return Err(format!(
                "--redis {}: a #fragment (such as #insecure) is not supported; certificates are always checked, give --redis-ca FILE for a private CA",
                shown(given)
            ));
        }
        let from_url = url.password().map(decoded);
        if from_url.is_some() && env.password.is_some() {
            return Err(format!(
                "the Redis password is given twice, in --redis and in {PASSWORD_VAR}: keep one (the variable keeps it out of the process list)"
            ));
        }
        let _ = url.set_password(None);
        if url.username().is_empty() {
            if let Some(user) = &env.user {
                url.set_username(user).map_err(|()| bad())?;
            }
        }
        let ca = match ca_file {
            Some(file) => Some(read_ca(file, &url)?),
            None => None,
        };
        Ok(RedisUrl {
            url,
            password: from_url.or(env.password),
            ca,
            client_cert: None,
        })
    }

    /// The same server, this client showing the certificate in `cert` and
    /// proving it with the key in `key` (PEM files), for a server that
    /// checks clients' certificates (`tls-auth-clients yes`).
    pub fn with_client_cert(mut self, cert: &Path, key: &Path) -> Result<RedisUrl, String> {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::PrivateKeyDer;
        if !self.is_tls() {
            return Err(format!(
                "--redis-cert applies to TLS: write the URL as rediss://{}",
                self.url.as_str().trim_start_matches("redis://")
            ));
        }
        let cert_pem = read_certificates(cert, "--redis-cert", "this client's certificate")?;
        let fix = "give the PEM file of the private key of --redis-cert's certificate";
        let key_pem = std::fs::read(key)
            .map_err(|e| format!("cannot read --redis-key {}: {e}; {fix}", key.display()))?;
        if PrivateKeyDer::from_pem_slice(&key_pem).is_err() {
            return Err(format!(
                "--redis-key {} holds no PEM private key; {fix}",
                key.display()
            ));
        }
        self.client_cert = Some((cert_pem, key_pem));
        Ok(self)
    }

    /// A server reached without credentials or a CA of its own (a local one).
    pub fn plain(given: &str) -> Result<RedisUrl, String> {
        RedisUrl::parse(given, None, RedisCredentials::default())
    }

    /// A client with the credentials and TLS trust; it connects on use.
    pub fn client(&self) -> redis::RedisResult<redis::Client> {
        let mut info = self.url.as_str().into_connection_info()?;
        info.redis.password = self.password.clone();
        if self.is_tls() {
            // rustls needs a process-wide provider; main installs it, a library user may not.
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
        if self.ca.is_none() && self.client_cert.is_none() {
            return redis::Client::open(info);
        }
        let client_tls = self
            .client_cert
            .as_ref()
            .map(|(cert, key)| redis::ClientTlsConfig {
                client_cert: cert.clone(),
                client_key: key.clone(),
            });
        redis::Client::build_with_tls(
            info,
            redis::TlsCertificates {
                client_tls,
                root_cert: self.ca.clone(),
            },
        )
    }

    /// A new connection, given `timeout` to connect.
    pub fn connect(&self, timeout: Duration) -> redis::RedisResult<redis::Connection> {
        self.client()?.get_connection_with_timeout(timeout)
    }

    /// The URL with the user name but without the password: what may be
    /// written to a file or passed on a command line.
    pub fn without_password(&self) -> String {
        self.url.to_string()
    }

    /// `rediss://`: the link is encrypted and the server's certificate checked.
    pub fn is_tls(&self) -> bool {
        self.url.scheme() == "rediss"
    }

    /// The host is this machine: 127.0.0.0/8, ::1 or `localhost`.
    pub fn is_loopback(&self) -> bool {
        match self.url.host() {
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => IpAddr::V6(ip).to_canonical().is_loopback(),
            // redis:// is not a special scheme: its IPv4 hosts stay text.
            Some(url::Host::Domain(name)) => {
                name.eq_ignore_ascii_case("localhost")
                    || name
                        .parse::<IpAddr>()
                        .is_ok_and(|ip| ip.to_canonical().is_loopback())
            }
            None => false,
        }
    }

    /// The ACL user the connection logs in as.
    fn user(&self) -> &str {
        match self.url.username() {
            "" => "default",
            name => name,
        }
    }

    /// `Err` naming the problem and the fix when the server is reached over a
    /// network without both a password and TLS: anyone who can reach the
    /// port could steer the crawl, and anyone on the path read it. Checked
    /// before any connection; `insecure` (`--insecure-redis`) accepts it.
    pub fn check_safe(&self, insecure: bool) -> Result<(), String> {
        if insecure || self.is_loopback() {
            return Ok(());
        }
        let how = format!(
            "give an ACL user's password in {PASSWORD_VAR} (and the user in {USER_VAR}) over rediss:// (with --redis-ca FILE for a private CA), or add --insecure-redis if every machine that can reach the server is trusted"
        );
        if self.password.is_none() {
            return Err(format!(
                "--redis {self} is not on this machine and the crawl would reach it without a password: anyone who can reach the port could read and steer the crawl; {how}"
            ));
        }
        if !self.is_tls() {
            return Err(format!(
                "--redis {self} is not on this machine and redis:// sends the password and the crawl in the clear; use rediss://, {how}"
            ));
        }
        Ok(())
    }

    /// What went wrong, with what to check when the server refused the
    /// credentials or the certificate; the error as it is otherwise.
    pub fn explain(&self, e: &RedisError) -> String {
        self.refusal(e).unwrap_or_else(|| e.to_string())
    }

    /// What to check, when the server refused the credentials, a command
    /// (the ACL) or the certificate: connecting again would not cure it.
    pub fn refusal(&self, e: &RedisError) -> Option<String> {
        let user = self.user();
        if e.kind() == ErrorKind::AuthenticationFailed {
            return Some(format!(
                "Redis at {self} refused the password for user {user}: WRONGPASS (wrong password, or the user does not exist or is off); check {PASSWORD_VAR} (or the URL's password), {USER_VAR} and the server's `ACL LIST`"
            ));
        }
        Some(match e.code() {
            Some("NOAUTH") => format!(
                "Redis at {self} needs a password ({e}); give it in {PASSWORD_VAR} (and the user in {USER_VAR})"
            ),
            Some("NOPERM") => format!(
                "Redis at {self} refused a command to user {user} ({e}); give the user the ACL the README's cluster section lists for the crawl's keys"
            ),
            _ if self.is_tls() && e.to_string().to_lowercase().contains("certificate") => format!(
                "{e}; check that the server's certificate is for the URL's host and signed by a CA the system trusts or --redis-ca FILE gives, and for a server that checks clients' certificates, --redis-cert and --redis-key"
            ),
            _ => return None,
        })
    }
}

impl fmt::Display for RedisUrl {
    /// The URL with the password as `***`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut shown = self.url.clone();
        if self.password.is_some() {
            let _ = shown.set_password(Some("***"));
        }
        write!(f, "{shown}")
    }
}

impl fmt::Debug for RedisUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RedisUrl({self})")
    }
}

/// `given` for a message: its password, if it parses as a URL with one, as `***`.
fn shown(given: &str) -> String {
    match url::Url::parse(given) {
        Ok(mut url) if url.password().is_some() => {
            let _ = url.set_password(Some("***"));
            url.to_string()
        }
        Ok(_) => given.to_string(),
        Err(_) if given.contains('@') => "(a URL with credentials, not shown)".to_string(),
        Err(_) => given.to_string(),
    }
}

fn decoded(text: &str) -> String {
    percent_encoding::percent_decode_str(text)
        .decode_utf8_lossy()
        .into_owned()
}

/// The PEM certificates of `--redis-ca`, checked to parse.
fn read_ca(file: &Path, url: &url::Url) -> Result<Vec<u8>, String> {
    if url.scheme() != "rediss" {
        return Err(format!(
            "--redis-ca applies to TLS: write the URL as rediss://{}",
            url.as_str().trim_start_matches("redis://")
        ));
    }
    read_certificates(
        file,
        "--redis-ca",
        "the CA that signed the Redis server's certificate",
    )
}

/// The PEM certificates in `file` (given as `flag`), checked to parse.
fn read_certificates(file: &Path, flag: &str, what: &str) -> Result<Vec<u8>, String> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::CertificateDer;
    let fix = format!("give the PEM file of {what}");
    let pem = std::fs::read(file)
        .map_err(|e| format!("cannot read {flag} {}: {e}; {fix}", file.display()))?;
    let certs: Result<Vec<_>, _> = CertificateDer::pem_slice_iter(&pem).collect();
    match certs {
        Ok(certs) if !certs.is_empty() => Ok(pem),
        _ => Err(format!(
            "{flag} {} holds no PEM certificate; {fix}",
            file.display()
        )),
    }
}

#[cfg(test)]
#[path = "redis_url_tests.rs"]
mod tests;
