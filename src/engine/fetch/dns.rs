//! DNS for the fetcher: `localhost` and `*.localhost` answer 127.0.0.1 without
//! asking anyone (RFC 6761); other names go to the system resolver once per TTL.
//! The client only gets the addresses the private-address guard admits, so
//! the check holds at connect time whatever a name resolves to.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use tokio::time::Instant;

use crate::engine::address::{is_localhost, AddressGuard, NameTable};

/// How long a system answer is reused.
pub const DNS_TTL: Duration = Duration::from_secs(300);
/// Names kept in the cache; a crawl of many hosts evicts expired ones first.
pub const DNS_CACHE_ENTRIES: usize = 4096;
/// Addresses kept per name.
const MAX_ADDRS: usize = 16;

type LookupFuture = Pin<Box<dyn Future<Output = io::Result<Vec<SocketAddr>>> + Send>>;
/// The resolver behind the cache (the system's, or a fake in tests).
pub(crate) type Lookup = Arc<dyn Fn(String) -> LookupFuture + Send + Sync>;

/// The system resolver, at most [`MAX_ADDRS`] answers.
pub(crate) fn system_lookup() -> Lookup {
    Arc::new(|host: String| {
        Box::pin(async move {
            let addrs = tokio::net::lookup_host((host.as_str(), 0)).await?;
            Ok(addrs.take(MAX_ADDRS).collect())
        })
    })
}

/// Names in `hosts` answer from it, the rest from the system resolver.
pub(crate) fn table_lookup(hosts: Arc<NameTable>) -> Lookup {
    let system = system_lookup();
    Arc::new(move |host: String| match hosts.get(&host) {
        Some(ips) => {
            let addrs = ips.iter().map(|ip| SocketAddr::new(*ip, 0)).collect();
            Box::pin(std::future::ready(Ok(addrs)))
        }
        None => system(host),
    })
}

struct Cached {
    addrs: Vec<SocketAddr>,
    expires: Instant,
}

#[derive(Clone)]
pub(crate) struct CachingResolver {
    cache: Arc<Mutex<HashMap<String, Cached>>>,
    lookup: Lookup,
    lookups: Arc<AtomicU64>,
    guard: AddressGuard,
}

impl CachingResolver {
    pub(crate) fn with_lookup(guard: AddressGuard, lookup: Lookup) -> Self {
        CachingResolver {
            cache: Arc::new(Mutex::new(HashMap::new())),
            lookup,
            lookups: Arc::new(AtomicU64::new(0)),
            guard,
        }
    }

    /// The addresses of `host` the guard admits; an error naming the refused
    /// ones when none is left.
    pub(crate) async fn resolve_admitted(&self, host: &str) -> io::Result<Vec<SocketAddr>> {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        let addrs = self.resolve_host(&host).await?;
        let ips = addrs.iter().map(SocketAddr::ip).collect();
        match self.guard.filter(&host, ips) {
            Ok(ips) => Ok(ips.into_iter().map(|ip| SocketAddr::new(ip, 0)).collect()),
            Err(refused) => Err(io::Error::new(io::ErrorKind::PermissionDenied, refused)),
        }
    }

    /// Questions that went to the underlying resolver.
    #[cfg(test)]
    pub(crate) fn lookups(&self) -> u64 {
        self.lookups.load(Ordering::Relaxed)
    }

    pub(crate) async fn resolve_host(&self, host: &str) -> io::Result<Vec<SocketAddr>> {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        if is_localhost(&host) {
            return Ok(vec![SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0)]);
        }
        let now = Instant::now();
        if let Some(hit) = self.lock().get(&host).filter(|c| c.expires > now) {
            return Ok(hit.addrs.clone());
        }
        self.lookups.fetch_add(1, Ordering::Relaxed);
        let mut addrs = (self.lookup)(host.clone()).await?;
        addrs.truncate(MAX_ADDRS);
        if addrs.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("no addresses for {host}"),
            ));
        }
        let mut cache = self.lock();
        if cache.len() >= DNS_CACHE_ENTRIES {
            let now = Instant::now();
            cache.retain(|_, c| c.expires > now);
            if cache.len() >= DNS_CACHE_ENTRIES {
                // All fresh: drop an arbitrary one rather than grow.
                if let Some(key) = cache.keys().next().cloned() {
                    cache.remove(&key);
                }
            }
        }
        cache.insert(
            host,
            Cached {
                addrs: addrs.clone(),
                expires: Instant::now() + DNS_TTL,
            },
        );
        Ok(addrs)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Cached>> {
        // A panic elsewhere while holding the lock leaves a usable map.
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Resolve for CachingResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let this = self.clone();
        let host = name.as_str().to_string();
        Box::pin(async move {
            let addrs = this.resolve_admitted(&host).await?;
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::address::AddressRules;

    fn counting_fake() -> CachingResolver {
        let guard = AddressGuard::new(&AddressRules::default(), false);
        CachingResolver::with_lookup(
            guard,
            Arc::new(|host: String| {
                Box::pin(async move {
                    match host.as_str() {
                        "nowhere.test" => Ok(Vec::new()),
                        "inside.test" => Ok(vec!["10.1.2.3:0".parse().unwrap()]),
                        "mixed.test" => Ok(vec![
                            "169.254.169.254:0".parse().unwrap(),
                            "192.0.2.8:0".parse().unwrap(),
                        ]),
                        _ => Ok(vec!["192.0.2.7:0".parse().unwrap()]),
                    }
                })
            }),
        )
    }

    #[tokio::test(start_paused = true)]
    async fn the_client_gets_only_admitted_addresses() {
        let r = counting_fake();
        let mixed = r.resolve_admitted("mixed.test").await.unwrap();
        assert_eq!(mixed, vec!["192.0.2.8:0".parse().unwrap()]);
        let err = r.resolve_admitted("inside.test").await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::PermissionDenied);
        assert!(
            err.to_string().contains("10.1.2.3 (private (RFC 1918))"),
            "{err}"
        );
        // *.localhost is loopback, refused unless a seed is there.
        assert!(r.resolve_admitted("shop.localhost").await.is_err());
        r.guard
            .add_seed(&url::Url::parse("http://blog.localhost/").unwrap());
        assert!(r.resolve_admitted("shop.localhost").await.is_ok());
    }

    #[test]
    fn localhost_names() {
        assert!(is_localhost("localhost"));
        assert!(is_localhost("shop.localhost"));
        assert!(is_localhost("A.B.LOCALHOST."));
        assert!(!is_localhost("notlocalhost"));
        assert!(!is_localhost("localhost.example.org"));
        assert!(!is_localhost(".localhost"));
    }

    #[tokio::test(start_paused = true)]
    async fn localhost_never_reaches_the_resolver() {
        let r = counting_fake();
        let addrs = r.resolve_host("shop.localhost").await.unwrap();
        assert_eq!(addrs, vec!["127.0.0.1:0".parse().unwrap()]);
        assert_eq!(r.lookups(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn answers_are_cached_for_the_ttl() {
        let r = counting_fake();
        r.resolve_host("example.org").await.unwrap();
        r.resolve_host("EXAMPLE.org.").await.unwrap();
        assert_eq!(r.lookups(), 1);
        tokio::time::advance(DNS_TTL + Duration::from_secs(1)).await;
        r.resolve_host("example.org").await.unwrap();
        assert_eq!(r.lookups(), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn empty_answer_is_an_error_and_not_cached() {
        let r = counting_fake();
        assert!(r.resolve_host("nowhere.test").await.is_err());
        assert!(r.resolve_host("nowhere.test").await.is_err());
        assert_eq!(r.lookups(), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn cache_is_bounded() {
        let r = counting_fake();
        for i in 0..DNS_CACHE_ENTRIES + 10 {
            r.resolve_host(&format!("h{i}.example")).await.unwrap();
        }
        assert!(r.lock().len() <= DNS_CACHE_ENTRIES);
    }
}
