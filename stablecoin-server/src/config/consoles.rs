//! `[consoles]`: the web consoles (the tenant dashboard and the staff console) and the
//! sign-ins they share with the staff API: how the server knows it is served over TLS,
//! which proxies it believes about the client, how failed sign-ins are throttled, and
//! the highest fee a tenant sets for itself.

use serde::Deserialize;
use stablecoin_core::domain::money::Micros;
use stablecoin_core::engine::FeeCeiling;
use std::net::IpAddr;

/// `[consoles]`.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct ConsoleSettings {
    /// The URL browsers reach this server at (`https://pay.example.com`). With
    /// `https`, session cookies are `Secure` and named `__Host-...`. Absent (the
    /// default): plain HTTP in development (no `Secure`, no prefix); production mode
    /// always sets `Secure` and the prefix. Env: `STABLECOIN_PUBLIC_URL`.
    pub public_url: Option<String>,
    /// Proxies (IP addresses or CIDR networks) whose `X-Forwarded-For` and
    /// `X-Forwarded-Proto` are believed. Everyone else's are ignored: a client cannot
    /// pick its throttling address or make cookies `Secure` with a header. Env:
    /// `STABLECOIN_TRUSTED_PROXIES` (comma-separated).
    pub trusted_proxies: Vec<String>,
    /// Failed sign-ins (dashboard, staff console, `/admin/v1`) allowed per source
    /// address and per credential before a lockout (1 to 1000, default 5).
    pub sign_in_max_failures: u32,
    /// How long a lockout lasts, and the window failures are counted in, in seconds
    /// (1 to 86400, default 900).
    pub sign_in_lockout_s: u64,
    /// The highest PERCENTAGE fee (basis points) a tenant sets in its dashboard
    /// (default 300 = 3%); above it, staff set it (`stablecoin-server pricing set`).
    pub max_tenant_fee_bps: u32,
    /// The highest FLAT fee a tenant sets in its dashboard, in token units (default
    /// `"5.00"`).
    pub max_tenant_fee_flat: String,
}

impl Default for ConsoleSettings {
    fn default() -> Self {
        ConsoleSettings {
            public_url: None,
            trusted_proxies: Vec::new(),
            sign_in_max_failures: 5,
            sign_in_lockout_s: 900,
            max_tenant_fee_bps: 300,
            max_tenant_fee_flat: "5.00".into(),
        }
    }
}

/// One trusted proxy: an address and a prefix length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Network {
    addr: IpAddr,
    prefix: u8,
}

impl Network {
    /// `a.b.c.d`, `a.b.c.d/n`, an IPv6 address or network.
    pub fn parse(s: &str) -> Option<Network> {
        let (a, p) = match s.trim().split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s.trim(), None),
        };
        let addr: IpAddr = a.parse().ok()?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match p {
            Some(p) => p.parse::<u8>().ok().filter(|p| *p <= max)?,
            None => max,
        };
        Some(Network { addr, prefix })
    }

    /// True when `ip` is inside.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
            v4 => v4,
        };
        match (self.addr, ip) {
            (IpAddr::V4(n), IpAddr::V4(a)) => {
                let mask = u32::MAX.checked_shl(32 - self.prefix as u32).unwrap_or(0);
                u32::from(n) & mask == u32::from(a) & mask
            }
            (IpAddr::V6(n), IpAddr::V6(a)) => {
                let mask = u128::MAX.checked_shl(128 - self.prefix as u32).unwrap_or(0);
                u128::from(n) & mask == u128::from(a) & mask
            }
            _ => false,
        }
    }
}

impl ConsoleSettings {
    /// True when `public_url` is an `https` URL.
    pub fn public_https(&self) -> bool {
        self.public_url
            .as_deref()
            .is_some_and(|u| u.trim().to_ascii_lowercase().starts_with("https://"))
    }

    /// The trusted proxies (invalid entries are refused at start by [`Self::problem`]).
    pub fn proxies(&self) -> Vec<Network> {
        self.trusted_proxies
            .iter()
            .filter_map(|s| Network::parse(s))
            .collect()
    }

    /// The self-service fee ceiling.
    pub fn fee_ceiling(&self) -> FeeCeiling {
        FeeCeiling {
            max_bps: self.max_tenant_fee_bps,
            max_flat_micros: Micros::parse_decimal(self.max_tenant_fee_flat.trim())
                .map(|m| m.0)
                .unwrap_or(0),
        }
    }

    /// Why the section is refused, if it is.
    pub fn problem(&self) -> Option<String> {
        if let Some(u) = &self.public_url {
            let l = u.trim().to_ascii_lowercase();
            if !(l.starts_with("https://") || l.starts_with("http://")) {
                return Some("consoles.public_url must be an http:// or https:// URL".into());
            }
        }
        if let Some(bad) = self
            .trusted_proxies
            .iter()
            .find(|s| Network::parse(s).is_none())
        {
            return Some(format!(
                "consoles.trusted_proxies: {bad:?} is not an IP address or CIDR network"
            ));
        }
        if !(1..=1000).contains(&self.sign_in_max_failures) {
            return Some("consoles.sign_in_max_failures must be from 1 to 1000".into());
        }
        if !(1..=86_400).contains(&self.sign_in_lockout_s) {
            return Some("consoles.sign_in_lockout_s must be from 1 to 86400".into());
        }
        if self.max_tenant_fee_bps > 1000 {
            return Some("consoles.max_tenant_fee_bps must be at most 1000 (10%)".into());
        }
        if Micros::parse_decimal(self.max_tenant_fee_flat.trim()).is_err() {
            return Some(
                "consoles.max_tenant_fee_flat must be a decimal amount of token units, like \"5.00\""
                    .into(),
            );
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn networks_match_their_addresses_only() {
        let n = Network::parse("10.0.0.0/8").unwrap();
        assert!(n.contains("10.1.2.3".parse().unwrap()));
        assert!(n.contains("::ffff:10.1.2.3".parse().unwrap()));
        assert!(!n.contains("11.0.0.1".parse().unwrap()));
        let one = Network::parse("127.0.0.1").unwrap();
        assert!(one.contains("127.0.0.1".parse().unwrap()));
        assert!(!one.contains("127.0.0.2".parse().unwrap()));
        assert!(
            Network::parse("::1/128")
                .unwrap()
                .contains("::1".parse().unwrap())
        );
        for bad in ["", "x", "10.0.0.0/33", "1.2.3.4/"] {
            assert!(Network::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn the_section_is_checked() {
        let mut c = ConsoleSettings::default();
        assert_eq!(c.problem(), None);
        assert!(!c.public_https());
        c.public_url = Some("https://pay.example.com".into());
        assert!(c.public_https());
        c.trusted_proxies = vec!["nope".into()];
        assert!(c.problem().unwrap().contains("trusted_proxies"));
        c.trusted_proxies = vec![];
        c.max_tenant_fee_flat = "abc".into();
        assert!(c.problem().is_some());
        c.max_tenant_fee_flat = "2.5".into();
        assert_eq!(c.fee_ceiling().max_flat_micros, 2_500_000);
    }
}
