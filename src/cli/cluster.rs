//! `--redis`, `--crawl` and `--lease-ttl`: checked together, with messages
//! that say which flag to add or fix.

use super::usage::UsageError;
use super::ClusterArgs;
use crate::engine::{validate_crawl_name, ClusterTarget, DEFAULT_LEASE_TTL};

/// The shared crawl a viewer's `--redis` and `--crawl` name, if any.
pub(super) fn shared_crawl(
    redis: Option<String>,
    crawl_name: Option<String>,
) -> Result<Option<ClusterTarget>, UsageError> {
    let args = ClusterArgs {
        redis,
        crawl_name,
        lease_ttl: None,
    };
    resolve_cluster(&args, true)
}

/// The shared frontier the flags ask for, if any.
pub(super) fn resolve_cluster(
    args: &ClusterArgs,
    headless: bool,
) -> Result<Option<ClusterTarget>, UsageError> {
    let (url, crawl) = match (&args.redis, &args.crawl_name) {
        (None, None) => {
            if args.lease_ttl.is_some() {
                return Err(UsageError(
                    "--lease-ttl applies to a shared crawl: give --redis URL and --crawl NAME too".into(),
                ));
            }
            return Ok(None);
        }
        (None, Some(_)) => {
            return Err(UsageError(
                "--crawl NAME names a crawl shared through Redis: give --redis redis://HOST:PORT/DB too, or drop --crawl to crawl on this machine only".into(),
            ))
        }
        (Some(_), None) => {
            return Err(UsageError(
                "--redis needs --crawl NAME: the name every worker of the shared crawl gives".into(),
            ))
        }
        (Some(url), Some(crawl)) => (url, crawl),
    };
    validate_crawl_name(crawl).map_err(|e| UsageError(format!("--crawl: {e}")))?;
    match url::Url::parse(url) {
        Ok(u) if u.scheme() == "redis" && u.host_str().is_some() => {}
        _ => {
            return Err(UsageError(format!(
                "--redis {url:?} is not a Redis URL: write redis://HOST:PORT/DB, e.g. redis://127.0.0.1:6379/0"
            )))
        }
    }
    if !headless {
        return Err(UsageError(
            "a shared crawl runs headless workers for now: add --headless (watch one with `crawldeck attach --data DIR`)".into(),
        ));
    }
    let lease_ttl = args.lease_ttl.unwrap_or(DEFAULT_LEASE_TTL);
    if lease_ttl < std::time::Duration::from_secs(1) {
        return Err(UsageError(format!(
            "--lease-ttl {lease_ttl:?} is too short: give at least 1s"
        )));
    }
    Ok(Some(ClusterTarget {
        url: url.clone(),
        crawl: crawl.clone(),
        lease_ttl,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(redis: Option<&str>, crawl: Option<&str>) -> ClusterArgs {
        ClusterArgs {
            redis: redis.map(String::from),
            crawl_name: crawl.map(String::from),
            lease_ttl: None,
        }
    }

    fn refused(a: ClusterArgs, headless: bool) -> String {
        resolve_cluster(&a, headless).unwrap_err().0
    }

    #[test]
    fn each_missing_or_bad_flag_is_named_with_the_fix() {
        let url = Some("redis://127.0.0.1:6379/0");
        assert!(refused(args(None, Some("news")), true).contains("give --redis"));
        assert!(refused(args(url, None), true).contains("needs --crawl NAME"));
        assert!(refused(args(url, Some("a b")), true).contains("letters, digits"));
        assert!(refused(args(Some("127.0.0.1:6379"), Some("news")), true)
            .contains("redis://HOST:PORT/DB"));
        assert!(refused(args(url, Some("news")), false).contains("add --headless"));
        let mut short = args(url, Some("news"));
        short.lease_ttl = Some(std::time::Duration::from_millis(10));
        assert!(refused(short, true).contains("at least 1s"));
        let mut stray = args(None, None);
        stray.lease_ttl = Some(std::time::Duration::from_secs(5));
        assert!(refused(stray, true).contains("--lease-ttl applies"));
    }

    #[test]
    fn a_complete_set_of_flags_names_the_shared_crawl() {
        assert_eq!(resolve_cluster(&args(None, None), true).unwrap(), None);
        let target = resolve_cluster(&args(Some("redis://10.0.0.5:6379/2"), Some("news")), true)
            .unwrap()
            .unwrap();
        assert_eq!(
            (target.url.as_str(), target.crawl.as_str(), target.lease_ttl),
            ("redis://10.0.0.5:6379/2", "news", DEFAULT_LEASE_TTL)
        );
    }
}
