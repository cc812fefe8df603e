//! The error every command-line mistake becomes: a message naming the
//! problem and the fix, and exit code 2.

use crate::engine::config::ConfigError;

/// A usage or configuration error: exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

impl From<ConfigError> for UsageError {
    fn from(e: ConfigError) -> Self {
        let hint = match &e {
            ConfigError::Invalid { key, .. } => flag_for_key(key)
                .map(|flag| format!(" (set by {flag} or `{key}` in crawl.toml)"))
                .unwrap_or_default(),
            _ => String::new(),
        };
        UsageError(format!("{e}{hint}"))
    }
}

/// The command-line flag that sets a config key, for error messages.
fn flag_for_key(key: &str) -> Option<&'static str> {
    Some(match key {
        "seeds" => "a URL argument or --seeds",
        "max_pages" => "--max-pages",
        "max_depth" => "--max-depth",
        "concurrency" => "--concurrency",
        "max_rate" => "--max-rate",
        "politeness.per_host" => "--per-host",
        "politeness.min_delay" | "politeness.max_delay" => "--delay",
        "politeness.delay_factor" => "--delay-factor",
        "fetch.max_body" => "--max-body",
        "storage.warc_max_bytes" => "--warc-max-size",
        "fetch.total_timeout" => "--timeout",
        "identity.from" => "--from",
        "checks.resources" => "--resources",
        "extract" => "--extract",
        "scope.allow_domains" => "--allow-domain",
        "identity.product_token" => "--product-token",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_name_their_key_in_validation_errors() {
        let err = UsageError::from(ConfigError::Invalid {
            key: "politeness.per_host",
            message: "must be at least 1".into(),
        });
        assert!(err.0.contains("--per-host"), "{err}");
    }
}
