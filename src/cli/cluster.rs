//! `--redis`, `--crawl`, `--lease-ttl`, `--host-affinity`, `--redis-ca` and
//! `--insecure-redis`:
//! checked together, with messages that say which flag to add or fix.

use super::usage::UsageError;
use super::ClusterArgs;
use crate::engine::{
    validate_crawl_name, ClusterTarget, RedisCredentials, RedisUrl, DEFAULT_HOST_AFFINITY,
    DEFAULT_LEASE_TTL,
};

/// The shared crawl a viewer's `--redis` and `--crawl` name, if any.
pub(super) fn shared_crawl(
    redis: Option<String>,
    crawl_name: Option<String>,
    trust: super::RedisTrustArgs,
) -> Result<Option<ClusterTarget>, UsageError> {
    let args = ClusterArgs {
        redis,
        crawl_name,
        lease_ttl: None,
        host_affinity: None,
        exit_when_done: false,
        trust,
    };
    resolve_cluster(&args, true)
}

/// The shared frontier the flags ask for, if any; the Redis credentials
/// the URL lacks come from the environment.
pub(super) fn resolve_cluster(
    args: &ClusterArgs,
    headless: bool,
) -> Result<Option<ClusterTarget>, UsageError> {
    resolve_with(args, headless, RedisCredentials::from_env())
}

fn resolve_with(
    args: &ClusterArgs,
    headless: bool,
    env: RedisCredentials,
) -> Result<Option<ClusterTarget>, UsageError> {
    let (url, crawl) = match (&args.redis, &args.crawl_name) {
        (None, None) => {
            for (flag, given) in [
                ("--lease-ttl", args.lease_ttl.is_some()),
                ("--host-affinity", args.host_affinity.is_some()),
            ] {
                if given {
                    return Err(UsageError(format!(
                        "{flag} applies to a shared crawl: give --redis URL and --crawl NAME too"
                    )));
                }
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
    let mut url = RedisUrl::parse(url, args.trust.redis_ca.as_deref(), env).map_err(UsageError)?;
    if let (Some(cert), Some(key)) = (&args.trust.redis_cert, &args.trust.redis_key) {
        url = url.with_client_cert(cert, key).map_err(UsageError)?;
    }
    // Before any connection: a crawl must not go out to an open server.
    url.check_safe(args.trust.insecure_redis)
        .map_err(UsageError)?;
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
    let host_affinity = args.host_affinity.unwrap_or(DEFAULT_HOST_AFFINITY);
    if host_affinity > lease_ttl {
        return Err(UsageError(format!(
            "--host-affinity {host_affinity:?} is longer than the lease TTL ({lease_ttl:?}), which bounds how long a host may wait for a worker: give at most the TTL (0s turns affinity off)"
        )));
    }
    Ok(Some(ClusterTarget {
        url,
        crawl: crawl.clone(),
        lease_ttl,
        host_affinity,
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
            host_affinity: None,
            exit_when_done: false,
            trust: Default::default(),
        }
    }

    fn refused(a: ClusterArgs, headless: bool) -> String {
        resolve_with(&a, headless, RedisCredentials::default())
            .unwrap_err()
            .0
    }

    #[test]
    fn each_missing_or_bad_flag_is_named_with_the_fix() {
        let url = Some("redis://127.0.0.1:6379/0");
        assert!(refused(args(None, Some("news")), true).contains("give --redis"));
        assert!(refused(args(url, None), true).contains("needs --crawl NAME"));
        assert!(refused(args(url, Some("a b")), true).contains("letters, digits"));
        assert!(refused(args(Some("127.0.0.1:6379"), Some("news")), true)
            .contains("redis://HOST:PORT/DB"));
        let open = refused(args(Some("redis://192.0.2.1:6379/0"), Some("news")), true);
        assert!(open.contains("without a password") && open.contains("--insecure-redis"));
        assert!(refused(args(url, Some("news")), false).contains("add --headless"));
        let mut short = args(url, Some("news"));
        short.lease_ttl = Some(std::time::Duration::from_millis(10));
        assert!(refused(short, true).contains("at least 1s"));
        let mut stray = args(None, None);
        stray.lease_ttl = Some(std::time::Duration::from_secs(5));
        assert!(refused(stray, true).contains("--lease-ttl applies"));
        let mut stray = args(None, None);
        stray.host_affinity = Some(std::time::Duration::from_secs(2));
        assert!(refused(stray, true).contains("--host-affinity applies"));
        let mut clinging = args(url, Some("news"));
        clinging.host_affinity = Some(std::time::Duration::from_secs(11));
        assert!(refused(clinging, true).contains("at most the TTL"));
    }

    #[test]
    fn a_complete_set_of_flags_names_the_shared_crawl() {
        let resolve = |a: &ClusterArgs| resolve_with(a, true, RedisCredentials::default());
        assert_eq!(resolve(&args(None, None)).unwrap(), None);
        let mut trusted = args(Some("redis://10.0.0.5:6379/2"), Some("news"));
        trusted.trust.insecure_redis = true;
        let target = resolve(&trusted).unwrap().unwrap();
        assert_eq!(
            (
                target.url.to_string().as_str(),
                target.crawl.as_str(),
                target.lease_ttl,
                target.host_affinity
            ),
            (
                "redis://10.0.0.5:6379/2",
                "news",
                DEFAULT_LEASE_TTL,
                DEFAULT_HOST_AFFINITY
            )
        );
        trusted.host_affinity = Some(std::time::Duration::ZERO);
        let off = resolve(&trusted).unwrap().unwrap();
        assert_eq!(off.host_affinity, std::time::Duration::ZERO);
        let secured = args(Some("rediss://crawler:pw@10.0.0.5:6380/2"), Some("news"));
        let target = resolve(&secured).unwrap().unwrap();
        assert_eq!(
            target.url.to_string(),
            "rediss://crawler:***@10.0.0.5:6380/2"
        );
    }
}
