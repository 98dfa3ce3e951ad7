//! Which addresses a webhook may reach: a guard against server-side request forgery.
//!
//! A tenant chooses its endpoint URL, and the service then sends requests there from
//! inside its own network. Without a guard, `https://169.254.169.254/` reads a cloud
//! metadata service, `https://10.0.0.1/` probes the private network, and the attempt
//! log becomes a port scanner. So:
//!
//! - [`is_public`] says whether an IP address is an ordinary public unicast one; every
//!   special range (loopback, private, link-local, CGNAT, multicast, unspecified,
//!   broadcast, reserved, IPv6 unique-local, and IPv6 forms that embed an IPv4 address)
//!   is refused.
//! - [`check_url`] checks a URL at registration: its scheme, and every address its host
//!   resolves to.
//! - [`VettingResolver`] is the DNS resolver of the delivery client: it resolves at
//!   connection time and hands the HTTP client only vetted addresses, so a name that
//!   resolved publicly at registration and internally later (DNS rebinding) is refused
//!   at delivery, and the connection goes to exactly the address that was checked.
//!   A URL with an IP literal does not go through a resolver: [`check_url`] runs again
//!   before each attempt for that reason.
//!
//! Tests and local development need loopback receivers: an explicit [`AllowList`] of
//! networks lets them through (the server's `webhooks_allow_networks` setting); nothing
//! is allowed by default.

use std::collections::HashMap;
use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex};

/// True for an ordinary public unicast address: the only kind a webhook may reach.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    let special = a == 0 // "this network", 0.0.0.0/8
        || a == 10 // private
        || a == 127 // loopback
        || (a == 100 && (64..=127).contains(&b)) // CGNAT 100.64.0.0/10
        || (a == 169 && b == 254) // link-local (cloud metadata)
        || (a == 172 && (16..=31).contains(&b)) // private
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 192 && b == 0 && c == 2) // TEST-NET-1
        || (a == 192 && b == 88 && c == 99) // 6to4 relay anycast
        || (a == 192 && b == 168) // private
        || (a == 198 && (18..=19).contains(&b)) // benchmarking
        || (a == 198 && b == 51 && c == 100) // TEST-NET-2
        || (a == 203 && b == 0 && c == 113) // TEST-NET-3
        || a >= 224; // multicast 224/4, reserved 240/4, broadcast
    !special
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    // Forms that carry an IPv4 address are judged by that address: ::ffff:a.b.c.d
    // (mapped), ::ffff:0:a.b.c.d (translated, RFC 2765), ::a.b.c.d (compatible,
    // deprecated), 64:ff9b::/96 (NAT64).
    if let Some(v4) = ip.to_ipv4_mapped() {
        return is_public_v4(v4);
    }
    let s = ip.segments();
    let embedded = || Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    if s[..6] == [0, 0, 0, 0, 0xffff, 0] {
        return is_public_v4(embedded());
    }
    // The local-use NAT64 prefix 64:ff9b:1::/48 (RFC 8215) translates to the operator's
    // own IPv4 networks, at a position its prefix length decides: never a public target.
    if s[..3] == [0x64, 0xff9b, 1] {
        return false;
    }
    if s[..6] == [0, 0, 0, 0, 0, 0] {
        // ::, ::1 and the deprecated IPv4-compatible addresses: never a webhook target.
        return false;
    }
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return is_public_v4(embedded());
    }
    let special = (s[0] & 0xfe00) == 0xfc00 // unique local fc00::/7
        || (s[0] & 0xffc0) == 0xfe80 // link-local fe80::/10
        || (s[0] & 0xffc0) == 0xfec0 // site-local (deprecated) fec0::/10
        || (s[0] & 0xff00) == 0xff00 // multicast
        || s[0] == 0x2002 // 6to4: embeds an IPv4 address
        || (s[0] == 0x2001 && s[1] == 0) // Teredo: embeds an IPv4 address
        || (s[0] == 0x2001 && s[1] == 0x0db8) // documentation
        || (s[0] == 0x0100 && s[1..4] == [0, 0, 0]); // discard-only 100::/64
    !special
}

/// A network (`10.0.0.0/8`, `::1/128`) of an [`AllowList`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Network {
    /// Any address of the network (bits past the prefix are ignored).
    pub addr: IpAddr,
    /// The prefix length: 0-32 for IPv4, 0-128 for IPv6.
    pub prefix: u8,
}

impl Network {
    /// Parses `a.b.c.d/n`, `x::y/n` or a bare address (a single host).
    pub fn parse(s: &str) -> Result<Self, String> {
        let s = s.trim();
        let (addr, prefix) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s, None),
        };
        let addr: IpAddr = addr
            .parse()
            .map_err(|_| format!("{s:?} is not an IP network"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            Some(p) => p
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= max)
                .ok_or_else(|| format!("{s:?}: the prefix must be 0 to {max}"))?,
            None => max,
        };
        Ok(Network { addr, prefix })
    }

    /// Whether `ip` is in this network (an IPv4 network never holds an IPv6 address).
    pub fn contains(&self, ip: IpAddr) -> bool {
        fn masked(bits: u128, prefix: u8, width: u8) -> u128 {
            if prefix == 0 {
                0
            } else {
                bits >> (width - prefix)
            }
        }
        match (self.addr, ip) {
            (IpAddr::V4(n), IpAddr::V4(a)) => {
                masked(u32::from(n) as u128, self.prefix, 32)
                    == masked(u32::from(a) as u128, self.prefix, 32)
            }
            (IpAddr::V6(n), IpAddr::V6(a)) => {
                masked(u128::from(n), self.prefix, 128) == masked(u128::from(a), self.prefix, 128)
            }
            _ => false,
        }
    }
}

/// Networks a webhook may reach although they are not public (tests, local receivers).
/// Empty by default: only public addresses are reached.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AllowList(pub Vec<Network>);

impl AllowList {
    /// Parses a comma-separated list of networks (`127.0.0.1/32, ::1`).
    pub fn parse(s: &str) -> Result<Self, String> {
        s.split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(Network::parse)
            .collect::<Result<Vec<_>, _>>()
            .map(AllowList)
    }

    /// `127.0.0.1/32` and `::1/128`: a receiver on this machine (tests, local
    /// development), and nothing else of the loopback range.
    pub fn loopback() -> Self {
        AllowList(vec![
            Network {
                addr: IpAddr::V4(Ipv4Addr::LOCALHOST),
                prefix: 32,
            },
            Network {
                addr: IpAddr::V6(Ipv6Addr::LOCALHOST),
                prefix: 128,
            },
        ])
    }

    /// This list and `other`'s networks.
    pub fn union(mut self, other: &AllowList) -> Self {
        for n in &other.0 {
            if !self.0.contains(n) {
                self.0.push(*n);
            }
        }
        self
    }

    /// Whether a webhook may connect to `ip`.
    pub fn permits(&self, ip: IpAddr) -> bool {
        is_public(ip) || self.0.iter().any(|n| n.contains(ip))
    }

    /// Whether plain `http://` is accepted for `ip`: only for an allowed loopback
    /// receiver (a local test server has no certificate); everything else needs https.
    fn permits_plain_http(&self, ip: IpAddr) -> bool {
        ip.is_loopback() && self.0.iter().any(|n| n.contains(ip))
    }
}

/// Why a URL or an address was refused. The text never names the address a name
/// resolved to: the error reaches the tenant, who must not learn the internal network.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SsrfError {
    /// The text does not parse as an absolute URL.
    #[error("not an absolute URL")]
    NotAUrl,
    /// Another scheme than https (or http to an allowed loopback receiver).
    #[error("https is required")]
    HttpsRequired,
    /// No host (or no port) to connect to.
    #[error("the URL has no host")]
    NoHost,
    /// The host name has no address.
    #[error("the host does not resolve")]
    Unresolvable,
    /// An address of the host is not public and not allowed.
    #[error("the host is not a public internet address")]
    NotPublic,
}

/// Resolves host names. The system resolver in production; a test may script answers
/// (a name that is public at registration and internal at delivery).
pub trait HostResolver: Send + Sync {
    /// Every address of `host`, with `port` set on each.
    fn lookup(
        &self,
        host: &str,
        port: u16,
    ) -> Pin<Box<dyn Future<Output = std::io::Result<Vec<SocketAddr>>> + Send + '_>>;
}

/// The operating system's resolver (`getaddrinfo`, via tokio).
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemResolver;

impl HostResolver for SystemResolver {
    fn lookup(
        &self,
        host: &str,
        port: u16,
    ) -> Pin<Box<dyn Future<Output = std::io::Result<Vec<SocketAddr>>> + Send + '_>> {
        let target = format!("{host}:{port}");
        Box::pin(async move { Ok(tokio::net::lookup_host(target).await?.collect()) })
    }
}

/// The addresses of `host` a webhook may connect to. Refused as a whole when ANY of
/// them is not allowed: a name with one public and one internal address could be
/// steered to the internal one.
pub async fn vetted_addresses(
    resolver: &dyn HostResolver,
    allow: &AllowList,
    host: &str,
    port: u16,
) -> Result<Vec<SocketAddr>, SsrfError> {
    let addrs = resolver
        .lookup(host, port)
        .await
        .map_err(|_| SsrfError::Unresolvable)?;
    if addrs.is_empty() {
        return Err(SsrfError::Unresolvable);
    }
    if addrs.iter().all(|a| allow.permits(a.ip())) {
        Ok(addrs)
    } else {
        Err(SsrfError::NotPublic)
    }
}

/// Checks an endpoint URL: absolute, `https` (or `http` to an allowed loopback
/// receiver), and every address of its host allowed. Runs at registration and before
/// each delivery attempt.
pub async fn check_url(
    resolver: &dyn HostResolver,
    allow: &AllowList,
    url: &str,
) -> Result<(), SsrfError> {
    let parsed = reqwest::Url::parse(url).map_err(|_| SsrfError::NotAUrl)?;
    let https = match parsed.scheme() {
        "https" => true,
        "http" => false,
        _ => return Err(SsrfError::HttpsRequired),
    };
    let port = parsed.port_or_known_default().ok_or(SsrfError::NoHost)?;
    let ips: Vec<IpAddr> = match parsed.host() {
        None => return Err(SsrfError::NoHost),
        Some(url::Host::Ipv4(ip)) => vec![IpAddr::V4(ip)],
        Some(url::Host::Ipv6(ip)) => vec![IpAddr::V6(ip)],
        Some(url::Host::Domain(name)) => vetted_addresses(resolver, allow, name, port)
            .await?
            .into_iter()
            .map(|a| a.ip())
            .collect(),
    };
    if !ips.iter().all(|ip| allow.permits(*ip)) {
        return Err(SsrfError::NotPublic);
    }
    if !https && !ips.iter().all(|ip| allow.permits_plain_http(*ip)) {
        return Err(SsrfError::HttpsRequired);
    }
    Ok(())
}

/// The delivery client's DNS resolver: every connection goes to an address vetted at
/// that moment ([`vetted_addresses`]), never to one a later lookup might give.
#[derive(Clone)]
pub struct VettingResolver {
    resolver: Arc<dyn HostResolver>,
    allow: AllowList,
}

impl VettingResolver {
    /// Resolves with `resolver` and hands on only addresses `allow` permits.
    pub fn new(resolver: Arc<dyn HostResolver>, allow: AllowList) -> Self {
        VettingResolver { resolver, allow }
    }
}

impl reqwest::dns::Resolve for VettingResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let this = self.clone();
        let host = name.as_str().to_string();
        Box::pin(async move {
            // Port 0: reqwest puts the URL's port in.
            let addrs = vetted_addresses(&*this.resolver, &this.allow, &host, 0)
                .await
                .map_err(|e| Box::new(e) as Box<dyn std::error::Error + Send + Sync>)?;
            Ok(Box::new(addrs.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// A resolver answering from a table it holds: names pinned to addresses (tests, or a
/// deployment that maps receiver names itself). An answer may change at any time
/// ([`StaticResolver::set`]), as a DNS record can; a name not in the table does not
/// resolve.
#[derive(Debug, Default)]
pub struct StaticResolver(Mutex<HashMap<String, Vec<IpAddr>>>);

impl StaticResolver {
    /// An empty table: no name resolves.
    pub fn new() -> Self {
        Self::default()
    }

    /// From now on, `host` resolves to `ips` (none: it stops resolving).
    pub fn set(&self, host: &str, ips: &[IpAddr]) {
        let mut table = self.0.lock().unwrap_or_else(|e| e.into_inner());
        table.insert(host.to_ascii_lowercase(), ips.to_vec());
    }
}

impl HostResolver for StaticResolver {
    fn lookup(
        &self,
        host: &str,
        port: u16,
    ) -> Pin<Box<dyn Future<Output = std::io::Result<Vec<SocketAddr>>> + Send + '_>> {
        let table = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let out = match table.get(&host.to_ascii_lowercase()) {
            Some(ips) if !ips.is_empty() => {
                Ok(ips.iter().map(|ip| SocketAddr::new(*ip, port)).collect())
            }
            _ => Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "no such host",
            )),
        };
        Box::pin(async move { out })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn internal_and_special_addresses_are_not_public() {
        for s in [
            "127.0.0.1",
            "127.255.255.254",
            "0.0.0.0",
            "0.1.2.3",
            "10.0.0.1",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.127.255.255",
            "192.0.0.8",
            "192.0.2.1",
            "198.18.0.1",
            "198.51.100.7",
            "203.0.113.9",
            "224.0.0.1",
            "239.255.255.250",
            "240.0.0.1",
            "255.255.255.255",
            "::",
            "::1",
            "::127.0.0.1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a9fe:a9fe",
            "::ffff:0:127.0.0.1",
            "::ffff:0:10.0.0.1",
            "::ffff:0:a9fe:a9fe",
            "64:ff9b:1::a00:1",
            "64:ff9b:1:ffff::808:808",
            "2002:a00:1::1",
            "2002:a9fe:a9fe::",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "2002:7f00:1::",
            "2001:0:4136:e378::1",
            "2001:db8::1",
            "100::1",
        ] {
            assert!(!is_public(ip(s)), "{s} must be refused");
        }
    }

    #[test]
    fn ordinary_addresses_are_public() {
        for s in [
            "1.1.1.1",
            "8.8.8.8",
            "100.63.255.255",
            "100.128.0.1",
            "172.15.255.255",
            "172.32.0.1",
            "192.169.0.1",
            "198.20.0.1",
            "223.255.255.255",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "::ffff:0:8.8.8.8",
            "2606:4700:4700::1111",
            "2a00:1450:4001::200e",
        ] {
            assert!(is_public(ip(s)), "{s} must be allowed");
        }
    }

    #[test]
    fn networks_parse_and_match_by_prefix() {
        let n = Network::parse("10.1.0.0/16").unwrap();
        assert!(n.contains(ip("10.1.200.3")));
        assert!(!n.contains(ip("10.2.0.1")));
        assert!(!n.contains(ip("::ffff:10.1.0.1")), "families do not mix");
        assert!(Network::parse("0.0.0.0/0").unwrap().contains(ip("9.9.9.9")));
        assert!(Network::parse("::1").unwrap().contains(ip("::1")));
        assert!(Network::parse("10.0.0.0/33").is_err());
        assert!(Network::parse("localhost").is_err());
        let allow = AllowList::parse("127.0.0.1/32, ::1").unwrap();
        assert_eq!(allow.0.len(), 2);
        assert!(allow.permits(ip("127.0.0.1")));
        assert!(!allow.permits(ip("127.0.0.2")));
        assert!(allow.permits(ip("8.8.8.8")));
    }

    /// Scripted answers: each lookup of a name takes the next answer, the last repeats.
    #[derive(Default)]
    struct Scripted(Mutex<HashMap<String, Vec<Vec<IpAddr>>>>);

    impl Scripted {
        fn answer(&self, host: &str, answers: &[&[&str]]) {
            let a = answers
                .iter()
                .map(|ips| ips.iter().map(|s| ip(s)).collect())
                .collect();
            self.0.lock().unwrap().insert(host.into(), a);
        }
    }

    impl HostResolver for Scripted {
        fn lookup(
            &self,
            host: &str,
            port: u16,
        ) -> Pin<Box<dyn Future<Output = std::io::Result<Vec<SocketAddr>>> + Send + '_>> {
            let mut m = self.0.lock().unwrap();
            let out = match m.get_mut(host) {
                Some(list) if list.len() > 1 => Ok(list.remove(0)),
                Some(list) => Ok(list[0].clone()),
                None => Err(std::io::Error::other("NXDOMAIN")),
            };
            let out = out.map(|ips| ips.into_iter().map(|i| SocketAddr::new(i, port)).collect());
            Box::pin(async move { out })
        }
    }

    #[tokio::test]
    async fn urls_are_refused_for_internal_hosts_literal_or_resolved() {
        let dns = Scripted::default();
        dns.answer("hooks.example.com", &[&["93.184.216.34"]]);
        dns.answer("internal.example.com", &[&["10.0.0.7"]]);
        dns.answer("mixed.example.com", &[&["93.184.216.34", "127.0.0.1"]]);
        let none = AllowList::default();
        let cases: &[(&str, Result<(), SsrfError>)] = &[
            ("https://hooks.example.com/wh", Ok(())),
            ("https://127.0.0.1/", Err(SsrfError::NotPublic)),
            (
                "https://169.254.169.254/latest/meta-data",
                Err(SsrfError::NotPublic),
            ),
            ("https://10.0.0.1/", Err(SsrfError::NotPublic)),
            ("https://[::1]:8443/", Err(SsrfError::NotPublic)),
            ("https://[::ffff:7f00:1]/", Err(SsrfError::NotPublic)),
            ("https://0x7f000001/", Err(SsrfError::NotPublic)),
            ("https://2130706433/", Err(SsrfError::NotPublic)),
            ("https://internal.example.com/", Err(SsrfError::NotPublic)),
            ("https://mixed.example.com/", Err(SsrfError::NotPublic)),
            ("https://nowhere.example.com/", Err(SsrfError::Unresolvable)),
            ("http://hooks.example.com/", Err(SsrfError::HttpsRequired)),
            ("ftp://hooks.example.com/", Err(SsrfError::HttpsRequired)),
            ("not a url", Err(SsrfError::NotAUrl)),
        ];
        for (url, want) in cases {
            assert_eq!(&check_url(&dns, &none, url).await, want, "{url}");
        }
        let local = AllowList::parse("127.0.0.1/32").unwrap();
        assert_eq!(
            check_url(&dns, &local, "http://127.0.0.1:9000/").await,
            Ok(())
        );
        assert_eq!(
            check_url(&dns, &local, "http://hooks.example.com/").await,
            Err(SsrfError::HttpsRequired),
            "the allow-list opens plain http only to loopback receivers"
        );
    }

    #[tokio::test]
    async fn the_resolver_vets_at_connection_time() {
        use reqwest::dns::Resolve;
        let dns = Arc::new(Scripted::default());
        // Public when registered, internal when delivered (DNS rebinding).
        dns.answer("rebind.example.com", &[&["93.184.216.34"], &["127.0.0.1"]]);
        let none = AllowList::default();
        assert_eq!(
            check_url(&*dns, &none, "https://rebind.example.com/").await,
            Ok(())
        );
        let r = VettingResolver::new(dns.clone(), none);
        let err = match r.resolve("rebind.example.com".parse().unwrap()).await {
            Ok(_) => panic!("an internal address was handed to the client"),
            Err(e) => e.to_string(),
        };
        assert_eq!(err, SsrfError::NotPublic.to_string());
        assert!(!err.contains("127.0.0.1"), "no internal detail: {err}");
    }
}
