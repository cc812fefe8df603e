//! The private-address guard: links from the open web must not steer the
//! crawler into the operator's own network. Every address the fetcher would
//! connect to (resolved names and IP literals, redirect hops included) is
//! classified and admitted here. Public addresses always pass; another class
//! passes when a seed resolves to it (crawling an intranet or the demo web)
//! or when `fetch.allow_private` (`--allow-private`) is set.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use url::{Host, Url};

/// True for `localhost` and every name under `.localhost`.
pub fn is_localhost(host: &str) -> bool {
    let host = host.trim_end_matches('.');
    host.eq_ignore_ascii_case("localhost")
        || (host.len() > ".localhost".len()
            && host[host.len() - ".localhost".len()..].eq_ignore_ascii_case(".localhost"))
}

/// What kind of network an address belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AddressClass {
    /// Anything not listed below.
    Public,
    /// 127.0.0.0/8, ::1.
    Loopback,
    /// RFC 1918: 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16.
    Private,
    /// 169.254.0.0/16 (but the metadata address), fe80::/10.
    LinkLocal,
    /// The cloud metadata service: 169.254.169.254, fd00:ec2::254.
    Metadata,
    /// Shared address space (carrier-grade NAT), 100.64.0.0/10.
    Cgnat,
    /// fc00::/7, and the deprecated site-local fec0::/10.
    UniqueLocal,
    /// 0.0.0.0/8 ("this network") and ::.
    Unspecified,
    /// 224.0.0.0/4, ff00::/8.
    Multicast,
    /// 255.255.255.255.
    Broadcast,
    /// 240.0.0.0/4 but the broadcast address.
    Reserved,
}

impl AddressClass {
    /// Every class, in the order they are listed.
    pub const ALL: [AddressClass; 11] = [
        AddressClass::Public,
        AddressClass::Loopback,
        AddressClass::Private,
        AddressClass::LinkLocal,
        AddressClass::Metadata,
        AddressClass::Cgnat,
        AddressClass::UniqueLocal,
        AddressClass::Unspecified,
        AddressClass::Multicast,
        AddressClass::Broadcast,
        AddressClass::Reserved,
    ];

    /// How refusals and the settings report name the class.
    pub fn label(self) -> &'static str {
        match self {
            AddressClass::Public => "public",
            AddressClass::Loopback => "loopback",
            AddressClass::Private => "private (RFC 1918)",
            AddressClass::LinkLocal => "link-local",
            AddressClass::Metadata => "link-local (metadata)",
            AddressClass::Cgnat => "shared (CGNAT)",
            AddressClass::UniqueLocal => "unique-local",
            AddressClass::Unspecified => "unspecified",
            AddressClass::Multicast => "multicast",
            AddressClass::Broadcast => "broadcast",
            AddressClass::Reserved => "reserved",
        }
    }

    fn bit(self) -> u16 {
        1 << (self as u16)
    }
}

/// The class of an address. IPv6 forms that carry an IPv4 address
/// (IPv4-mapped, IPv4-compatible, NAT64, 6to4) take the IPv4 address's class.
pub fn classify(ip: IpAddr) -> AddressClass {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn classify_v4(ip: Ipv4Addr) -> AddressClass {
    let [a, b, ..] = ip.octets();
    if ip == Ipv4Addr::new(169, 254, 169, 254) {
        AddressClass::Metadata
    } else if a == 0 {
        AddressClass::Unspecified
    } else if ip.is_loopback() {
        AddressClass::Loopback
    } else if ip.is_private() {
        AddressClass::Private
    } else if ip.is_link_local() {
        AddressClass::LinkLocal
    } else if a == 100 && (64..128).contains(&b) {
        AddressClass::Cgnat
    } else if ip.is_multicast() {
        AddressClass::Multicast
    } else if ip.is_broadcast() {
        AddressClass::Broadcast
    } else if a >= 240 {
        AddressClass::Reserved
    } else {
        AddressClass::Public
    }
}

fn classify_v6(ip: Ipv6Addr) -> AddressClass {
    if let Some(v4) = embedded_v4(ip) {
        return classify_v4(v4);
    }
    let first = ip.segments()[0];
    if ip == Ipv6Addr::new(0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254) {
        AddressClass::Metadata
    } else if ip.is_unspecified() {
        AddressClass::Unspecified
    } else if ip.is_loopback() {
        AddressClass::Loopback
    } else if ip.is_unicast_link_local() {
        AddressClass::LinkLocal
    } else if ip.is_unique_local() || first & 0xffc0 == 0xfec0 {
        AddressClass::UniqueLocal
    } else if ip.is_multicast() {
        AddressClass::Multicast
    } else {
        AddressClass::Public
    }
}

/// The IPv4 address inside an IPv6 one that a host or gateway would reach.
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return Some(v4);
    }
    let s = ip.segments();
    let low = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    match s {
        // IPv4-compatible ::a.b.c.d (not :: and ::1, which are IPv6's own).
        [0, 0, 0, 0, 0, 0, hi, _] if hi != 0 => Some(low),
        // NAT64 well-known prefix 64:ff9b::/96.
        [0x64, 0xff9b, 0, 0, 0, 0, _, _] => Some(low),
        // 6to4 2002:a.b.c.d::/48.
        [0x2002, hi, lo, ..] => Some(Ipv4Addr::new(
            (hi >> 8) as u8,
            hi as u8,
            (lo >> 8) as u8,
            lo as u8,
        )),
        _ => None,
    }
}

/// A set of address classes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ClassSet(u16);

impl ClassSet {
    /// The set holding `classes`.
    pub fn of(classes: &[AddressClass]) -> Self {
        ClassSet(classes.iter().fold(0, |bits, c| bits | c.bit()))
    }

    /// Whether `class` is in the set.
    pub fn contains(self, class: AddressClass) -> bool {
        self.0 & class.bit() != 0
    }

    /// The classes in the set, in [`AddressClass::ALL`] order.
    pub fn classes(self) -> impl Iterator<Item = AddressClass> {
        AddressClass::ALL
            .into_iter()
            .filter(move |c| self.contains(*c))
    }
}

/// The policy: whether an address of `class` may be connected to, given the
/// classes the seeds resolve to and `--allow-private`. The refused class is
/// the error.
pub fn admit(
    class: AddressClass,
    seed_classes: ClassSet,
    allow_private: bool,
) -> Result<(), AddressClass> {
    if class == AddressClass::Public || allow_private || seed_classes.contains(class) {
        Ok(())
    } else {
        Err(class)
    }
}

/// Why a connection was not made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// An IP literal (or the only address of a name) is in a refused class.
    #[error("{addr} is a {} address, refused (private addresses are crawled only when a seed is on one, or with --allow-private)", class.label())]
    Address {
        /// The address.
        addr: IpAddr,
        /// Its class.
        class: AddressClass,
    },
    /// Every address a name resolves to is in a refused class.
    #[error("{host} resolves only to refused addresses: {} (private addresses are crawled only when a seed is on one, or with --allow-private)", list(.refused))]
    Name {
        /// The name.
        host: String,
        /// Its addresses and their classes.
        refused: Vec<(IpAddr, AddressClass)>,
    },
}

impl Refused {
    /// The first refused class, for the record's reason.
    pub fn class(&self) -> AddressClass {
        match self {
            Refused::Address { class, .. } => *class,
            Refused::Name { refused, .. } => refused.first().map_or(AddressClass::Public, |r| r.1),
        }
    }
}

fn list(refused: &[(IpAddr, AddressClass)]) -> String {
    let shown: Vec<String> = refused
        .iter()
        .take(4)
        .map(|(a, c)| format!("{a} ({})", c.label()))
        .collect();
    let more = refused.len().saturating_sub(shown.len());
    match more {
        0 => shown.join(", "),
        n => format!("{} and {n} more", shown.join(", ")),
    }
}

/// How addresses are classified: [`classify`], or a table in tests.
pub type Classifier = Arc<dyn Fn(IpAddr) -> AddressClass + Send + Sync>;

/// Fixed answers for names, in the manner of `/etc/hosts`.
pub type NameTable = HashMap<String, Vec<IpAddr>>;

/// How the engine's network sees addresses: their classification and, for
/// some names, fixed answers. The default is the real classification and the
/// system resolver; tests classify loopback addresses as private ones (so
/// that a broken guard can still only reach loopback) and point names at them.
#[derive(Clone)]
pub struct AddressRules {
    classify: Classifier,
    hosts: Option<Arc<NameTable>>,
}

impl AddressRules {
    /// Addresses classified by `classify` instead of [`classify`].
    pub fn with_classifier(mut self, classify: Classifier) -> Self {
        self.classify = classify;
        self
    }

    /// Names in `hosts` answer from it (lower-case, no trailing dot); other
    /// names go to the system resolver.
    pub fn with_hosts(mut self, hosts: NameTable) -> Self {
        self.hosts = Some(Arc::new(hosts));
        self
    }

    pub(crate) fn hosts(&self) -> Option<Arc<NameTable>> {
        self.hosts.clone()
    }
}

impl Default for AddressRules {
    fn default() -> Self {
        AddressRules {
            classify: Arc::new(classify),
            hosts: None,
        }
    }
}

impl fmt::Debug for AddressRules {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AddressRules")
    }
}

/// The guard the fetcher consults before every connection; cheap to clone.
/// It learns the seeds' classes: at once for IP literals and `*.localhost`,
/// on the first resolution for other names.
#[derive(Clone)]
pub(crate) struct AddressGuard {
    inner: Arc<GuardState>,
}

struct GuardState {
    allow_private: bool,
    classify: Classifier,
    seed_classes: AtomicU16,
    /// Seed names not resolved yet.
    pending_seeds: Mutex<HashSet<String>>,
}

impl AddressGuard {
    pub(crate) fn new(rules: &AddressRules, allow_private: bool) -> Self {
        AddressGuard {
            inner: Arc::new(GuardState {
                allow_private,
                classify: rules.classify.clone(),
                seed_classes: AtomicU16::new(0),
                pending_seeds: Mutex::new(HashSet::new()),
            }),
        }
    }

    /// Whether a connection to `addr` may be made.
    pub(crate) fn check(&self, addr: IpAddr) -> Result<(), Refused> {
        let class = (self.inner.classify)(addr);
        admit(class, self.seed_classes(), self.inner.allow_private)
            .map_err(|class| Refused::Address { addr, class })
    }

    /// The IP literal of `url`, checked; names are checked when resolved.
    pub(crate) fn check_url(&self, url: &Url) -> Result<(), Refused> {
        match url.host() {
            Some(Host::Ipv4(v4)) => self.check(IpAddr::V4(v4)),
            Some(Host::Ipv6(v6)) => self.check(IpAddr::V6(v6)),
            _ => Ok(()),
        }
    }

    /// `addrs` of `host` without the refused ones; an error when none is left.
    /// The first answer for a seed's name teaches the guard its classes.
    pub(crate) fn filter(&self, host: &str, addrs: Vec<IpAddr>) -> Result<Vec<IpAddr>, Refused> {
        if self.take_pending(host) {
            addrs.iter().for_each(|a| self.learn(*a));
        }
        let (admitted, refused): (Vec<_>, Vec<_>) = addrs
            .into_iter()
            .map(|addr| (addr, self.check(addr)))
            .partition(|(_, verdict)| verdict.is_ok());
        if admitted.is_empty() && !refused.is_empty() {
            return Err(Refused::Name {
                host: host.to_string(),
                refused: refused
                    .into_iter()
                    .map(|(addr, _)| (addr, (self.inner.classify)(addr)))
                    .collect(),
            });
        }
        Ok(admitted.into_iter().map(|(addr, _)| addr).collect())
    }

    /// A seed: its address classes are allowed from now on.
    pub(crate) fn add_seed(&self, url: &Url) {
        match url.host() {
            Some(Host::Ipv4(v4)) => self.learn(IpAddr::V4(v4)),
            Some(Host::Ipv6(v6)) => self.learn(IpAddr::V6(v6)),
            Some(Host::Domain(name)) if is_localhost(name) => {
                self.learn(IpAddr::V4(Ipv4Addr::LOCALHOST))
            }
            Some(Host::Domain(name)) => {
                let name = name.trim_end_matches('.').to_ascii_lowercase();
                self.pending().insert(name);
            }
            None => {}
        }
    }

    /// Seed names whose addresses are not known yet.
    pub(crate) fn pending_seeds(&self) -> Vec<String> {
        self.pending().iter().cloned().collect()
    }

    /// The classes allowed because a seed resolves to them.
    pub(crate) fn seed_classes(&self) -> ClassSet {
        ClassSet(self.inner.seed_classes.load(Ordering::Relaxed))
    }

    /// One line for the settings report: what is refused, what the seeds allow.
    pub(crate) fn describe(&self) -> String {
        if self.inner.allow_private {
            return "private addresses allowed (fetch.allow_private, --allow-private)".into();
        }
        let allowed: Vec<&str> = self.seed_classes().classes().map(|c| c.label()).collect();
        let pending = self.pending().len();
        let mut line = String::from("private addresses refused");
        match allowed.is_empty() {
            true => line.push_str(" (no seed is on one; --allow-private allows them)"),
            false => line.push_str(&format!(", but {} (a seed is there)", allowed.join(", "))),
        }
        if pending > 0 {
            line.push_str(&format!(
                "; {pending} seed name(s) to resolve, whose classes are allowed too"
            ));
        }
        line
    }

    fn learn(&self, addr: IpAddr) {
        let class = (self.inner.classify)(addr);
        if class != AddressClass::Public {
            self.inner
                .seed_classes
                .fetch_or(class.bit(), Ordering::Relaxed);
        }
    }

    fn take_pending(&self, host: &str) -> bool {
        let mut pending = self.pending();
        !pending.is_empty() && pending.remove(host)
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.inner
            .pending_seeds
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests;
