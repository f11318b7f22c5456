//! Where `/net` may connect and listen: a list of `ADDR/PREFIX[:PORTS]`
//! rules (`--net-allow`), checked by the gateway on every `connect` and
//! `announce`, so nothing a client writes to a `ctl` file gets around it.

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::str::FromStr;

use crate::net::NetPolicy;

/// One rule: an address prefix and an inclusive port range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NetRule {
    addr: IpAddr,
    prefix: u8,
    ports: (u16, u16),
}

/// Why a rule did not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetRuleError(String);

impl fmt::Display for NetRuleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NetRuleError {}

/// IPv4-mapped IPv6 addresses (`::ffff:a.b.c.d`, what a dual-stack socket
/// shows) are their IPv4 address for the rules.
fn canonical(a: IpAddr) -> IpAddr {
    match a {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(a, IpAddr::V4),
        v4 => v4,
    }
}

impl FromStr for NetRule {
    type Err = NetRuleError;

    /// `ADDR/PREFIX[:PORT|:LOW-HIGH]`, e.g. `127.0.0.1/32:8080`,
    /// `10.0.0.0/8`, `::1/128:1024-65535`, `0.0.0.0/0:443`.
    fn from_str(s: &str) -> Result<NetRule, NetRuleError> {
        let bad = |why: &str| NetRuleError(format!("{s:?}: {why} (expected ADDR/PREFIX[:PORTS])"));
        let (addr, rest) = s.split_once('/').ok_or_else(|| bad("no /PREFIX"))?;
        let addr = canonical(IpAddr::from_str(addr).map_err(|_| bad("not an IP address"))?);
        let (prefix, ports) = match rest.split_once(':') {
            Some((p, ports)) => (p, Some(ports)),
            None => (rest, None),
        };
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix: u8 = prefix
            .parse()
            .ok()
            .filter(|&p| p <= max)
            .ok_or_else(|| bad(&format!("the prefix must be 0 to {max}")))?;
        let port = |p: &str| p.parse::<u16>().map_err(|_| bad("a port is 0 to 65535"));
        let ports = match ports {
            None => (0, u16::MAX),
            Some(p) => match p.split_once('-') {
                Some((lo, hi)) => (port(lo)?, port(hi)?),
                None => (port(p)?, port(p)?),
            },
        };
        if ports.0 > ports.1 {
            return Err(bad("the port range is empty"));
        }
        Ok(NetRule {
            addr,
            prefix,
            ports,
        })
    }
}

impl NetRule {
    /// Whether `a` falls within this rule.
    pub fn matches(&self, a: SocketAddr) -> bool {
        if !(self.ports.0..=self.ports.1).contains(&a.port()) {
            return false;
        }
        match (self.addr, canonical(a.ip())) {
            (IpAddr::V4(r), IpAddr::V4(x)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(r) & mask == u32::from(x) & mask
            }
            (IpAddr::V6(r), IpAddr::V6(x)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(r) & mask == u128::from(x) & mask
            }
            _ => false,
        }
    }
}

/// Allows exactly what one of its rules covers (for `announce` the address
/// bound, so listening on every interface, `0.0.0.0` or `::`, needs a rule
/// that covers that address, such as `0.0.0.0/0:8080`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowList {
    rules: Vec<NetRule>,
}

impl AllowList {
    /// A list of `rules`; empty refuses everything.
    pub fn new(rules: Vec<NetRule>) -> AllowList {
        AllowList { rules }
    }

    fn allows(&self, what: &str, a: SocketAddr) -> bool {
        let ok = self.rules.iter().any(|r| r.matches(a));
        if !ok {
            tracing::warn!("net: {what} {a} refused by the network policy (--net, --net-allow)");
        }
        ok
    }
}

impl NetPolicy for AllowList {
    fn allow_connect(&self, addr: SocketAddr) -> bool {
        self.allows("connect to", addr)
    }

    fn allow_announce(&self, addr: SocketAddr) -> bool {
        self.allows("listen on", addr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sa(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn rules_parse_and_match() {
        let r: NetRule = "127.0.0.1/32:8080".parse().unwrap();
        assert!(r.matches(sa("127.0.0.1:8080")));
        assert!(!r.matches(sa("127.0.0.1:8081")));
        assert!(!r.matches(sa("127.0.0.2:8080")));
        // A dual-stack socket's view of the same address.
        assert!(r.matches(sa("[::ffff:127.0.0.1]:8080")));
        let r: NetRule = "10.0.0.0/8".parse().unwrap();
        assert!(r.matches(sa("10.200.3.4:1")));
        assert!(!r.matches(sa("11.0.0.1:1")));
        let r: NetRule = "::1/128:1024-2048".parse().unwrap();
        assert!(r.matches(sa("[::1]:1024")) && r.matches(sa("[::1]:2048")));
        assert!(!r.matches(sa("[::1]:2049")) && !r.matches(sa("127.0.0.1:1024")));
        let all: NetRule = "0.0.0.0/0".parse().unwrap();
        assert!(all.matches(sa("0.0.0.0:0")) && all.matches(sa("8.8.8.8:53")));
    }

    #[test]
    fn bad_rules_say_why() {
        for bad in [
            "",
            "127.0.0.1",
            "127.0.0.1/33",
            "::1/129",
            "host/32",
            "127.0.0.1/32:",
            "127.0.0.1/32:70000",
            "127.0.0.1/32:9-8",
            "127.0.0.1/x",
            "127.0.0.1/32:1-2-3",
        ] {
            let e = bad.parse::<NetRule>().unwrap_err();
            assert!(e.to_string().contains("ADDR/PREFIX"), "{bad}: {e}");
        }
    }

    #[test]
    fn an_empty_list_refuses_everything() {
        let p = AllowList::default();
        assert!(!p.allow_connect(sa("127.0.0.1:80")));
        assert!(!p.allow_announce(sa("0.0.0.0:0")));
        let p = AllowList::new(vec!["127.0.0.0/8".parse().unwrap()]);
        assert!(p.allow_connect(sa("127.1.2.3:80")));
        assert!(!p.allow_announce(sa("0.0.0.0:8080")));
    }
}
