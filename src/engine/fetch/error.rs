//! Fetch failures: the kinds the breaker and page records use, and how client
//! errors are sorted into them.

use std::time::Duration;

use crate::engine::address::Refused;

/// Error messages are cut here so a hostile server cannot grow the store.
const MAX_ERROR_MESSAGE: usize = 512;

#[derive(Debug, thiserror::Error)]
pub enum FetchSetupError {
    #[error("identity.user_agent {0:?} cannot be sent as an HTTP header; use printable ASCII")]
    UserAgent(String),
    #[error("identity.from {0:?} cannot be sent as an HTTP header; use a plain email address")]
    From(String),
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FetchErrorKind {
    Connect,
    /// Connect or read-idle timeout: the host stopped answering.
    Timeout,
    /// `fetch.total_timeout` ran out while the host was still sending (a body
    /// that trickles in). Shown as "timeout" like the other timeouts; the
    /// crawl loop retries it only once, since each attempt costs the full limit.
    TotalTimeout,
    Reset,
    BodyTooLarge,
    Decode,
    InvalidUrl,
    /// The address is one the private-address guard refuses; no connection was made.
    PrivateAddress,
    Other,
}

impl FetchErrorKind {
    pub fn label(self) -> &'static str {
        match self {
            FetchErrorKind::Connect => "connect",
            FetchErrorKind::Timeout | FetchErrorKind::TotalTimeout => "timeout",
            FetchErrorKind::Reset => "reset",
            FetchErrorKind::BodyTooLarge => "body-too-large",
            FetchErrorKind::Decode => "decode",
            FetchErrorKind::InvalidUrl => "invalid-url",
            FetchErrorKind::PrivateAddress => "private-address",
            FetchErrorKind::Other => "other",
        }
    }

    /// Failures that say the host (not the page) is in trouble; they feed the breaker.
    pub fn is_host_failure(self) -> bool {
        matches!(
            self,
            FetchErrorKind::Connect
                | FetchErrorKind::Timeout
                | FetchErrorKind::TotalTimeout
                | FetchErrorKind::Reset
        )
    }
}

#[derive(Debug, Clone, thiserror::Error)]
#[error("{} error: {message}", kind.label())]
pub struct FetchError {
    pub kind: FetchErrorKind,
    pub message: String,
    pub elapsed: Duration,
}

/// Sorts a client error into the kinds the breaker and the page record care about.
pub(super) fn classify(e: &reqwest::Error) -> FetchErrorKind {
    use std::io::ErrorKind as Io;
    if e.is_timeout() {
        return FetchErrorKind::Timeout;
    }
    if e.is_builder() {
        return FetchErrorKind::InvalidUrl;
    }
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = source {
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            match io.kind() {
                Io::TimedOut => return FetchErrorKind::Timeout,
                Io::ConnectionReset
                | Io::ConnectionAborted
                | Io::BrokenPipe
                | Io::UnexpectedEof => return FetchErrorKind::Reset,
                Io::ConnectionRefused if e.is_connect() => return FetchErrorKind::Connect,
                _ => {}
            }
        }
        source = err.source();
    }
    if e.is_connect() {
        return FetchErrorKind::Connect;
    }
    // hyper reports a peer that hung up mid-message without an io::Error.
    let text = error_chain(e);
    if text.contains("connection closed before message completed")
        || text.contains("end of file before message length reached")
        || text.contains("connection reset")
    {
        return FetchErrorKind::Reset;
    }
    if e.is_decode() {
        return FetchErrorKind::Decode;
    }
    FetchErrorKind::Other
}

/// The guard's refusal, if that is why the client could not connect.
pub(super) fn refusal<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a Refused> {
    let mut source = Some(e);
    while let Some(err) = source {
        if let Some(refused) = err.downcast_ref::<Refused>() {
            return Some(refused);
        }
        // io::Error's source skips the error it wraps.
        let wrapped = err
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .and_then(|inner| inner.downcast_ref::<Refused>());
        if wrapped.is_some() {
            return wrapped;
        }
        source = err.source();
    }
    None
}

/// `outer: inner: innermost`, without the URL the client repeats.
pub(super) fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = Vec::new();
    let mut source = Some(e);
    while let Some(err) = source {
        let text = match err.downcast_ref::<reqwest::Error>() {
            Some(re) => {
                let mut re_text = String::new();
                let kind = if re.is_connect() {
                    "cannot connect"
                } else if re.is_timeout() {
                    "timed out"
                } else if re.is_body() {
                    "reading the body failed"
                } else if re.is_decode() {
                    "cannot decode the body"
                } else {
                    "request failed"
                };
                re_text.push_str(kind);
                re_text
            }
            None => err.to_string(),
        };
        if parts.last() != Some(&text) {
            parts.push(text);
        }
        source = err.source();
    }
    parts.join(": ")
}

pub(super) fn cut(mut message: String) -> String {
    if message.len() > MAX_ERROR_MESSAGE {
        let mut end = MAX_ERROR_MESSAGE;
        while !message.is_char_boundary(end) {
            end -= 1;
        }
        message.truncate(end);
        message.push('…');
    }
    crate::text::strip_control(&message).into_owned()
}
