//! Socket addresses between the program's `sockaddr` bytes and the
//! gateway's `/net` text (`ADDR!PORT`). Pure: decoding never panics on the
//! program's bytes, and the whole module is tested on the host.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};

use crate::errno::Errno;

/// `AF_UNIX`.
pub const AF_UNIX: u16 = 1;
/// `AF_INET`.
pub const AF_INET: u16 = 2;
/// `AF_INET6`.
pub const AF_INET6: u16 = 10;

/// `sizeof(struct sockaddr_in)`.
pub const SIN_LEN: usize = 16;
/// `sizeof(struct sockaddr_in6)`.
pub const SIN6_LEN: usize = 28;

/// Decodes the `sockaddr` a program passed to a socket of `family`
/// (`bind`, `connect`, `sendto`). An IPv6 socket takes IPv4-mapped
/// addresses (dual stack); an IPv4 socket only `sockaddr_in`.
pub fn decode(bytes: &[u8], family: u16) -> Result<SocketAddr, Errno> {
    if bytes.len() < 2 {
        return Err(Errno::EINVAL);
    }
    let fam = u16::from_le_bytes([bytes[0], bytes[1]]);
    match family {
        AF_INET => {
            if bytes.len() < SIN_LEN {
                return Err(Errno::EINVAL);
            }
            // Linux accepts AF_UNSPEC for INADDR_ANY binds; anything else
            // of another family is refused.
            if fam != AF_INET && fam != 0 {
                return Err(Errno::EAFNOSUPPORT);
            }
            let port = u16::from_be_bytes([bytes[2], bytes[3]]);
            let ip = Ipv4Addr::new(bytes[4], bytes[5], bytes[6], bytes[7]);
            Ok(SocketAddr::V4(SocketAddrV4::new(ip, port)))
        }
        AF_INET6 => {
            // Linux checks the length first (24 is the old RFC 2133 size).
            if bytes.len() < 24 {
                return Err(Errno::EINVAL);
            }
            if fam != AF_INET6 {
                return Err(Errno::EAFNOSUPPORT);
            }
            let port = u16::from_be_bytes([bytes[2], bytes[3]]);
            let flow = u32::from_be_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]);
            let mut ip = [0u8; 16];
            ip.copy_from_slice(&bytes[8..24]);
            let scope = match bytes.get(24..28) {
                Some(s) => u32::from_le_bytes([s[0], s[1], s[2], s[3]]),
                None => 0,
            };
            Ok(SocketAddr::V6(SocketAddrV6::new(
                Ipv6Addr::from(ip),
                port,
                flow,
                scope,
            )))
        }
        _ => Err(Errno::EAFNOSUPPORT),
    }
}

/// Encodes `addr` as a socket of `family` reports it (`getsockname`,
/// `accept`): an IPv6 socket shows IPv4 peers as `::ffff:a.b.c.d`.
pub fn encode(addr: SocketAddr, family: u16) -> Vec<u8> {
    match (family, addr) {
        (AF_INET6, a) => {
            let (ip, port, flow, scope) = match a {
                SocketAddr::V6(v6) => (*v6.ip(), v6.port(), v6.flowinfo(), v6.scope_id()),
                SocketAddr::V4(v4) => (v4.ip().to_ipv6_mapped(), v4.port(), 0, 0),
            };
            let mut b = Vec::with_capacity(SIN6_LEN);
            b.extend_from_slice(&AF_INET6.to_le_bytes());
            b.extend_from_slice(&port.to_be_bytes());
            b.extend_from_slice(&flow.to_be_bytes());
            b.extend_from_slice(&ip.octets());
            b.extend_from_slice(&scope.to_le_bytes());
            b
        }
        (_, a) => {
            let ip = match a.ip() {
                IpAddr::V4(v4) => v4,
                IpAddr::V6(v6) => v6.to_ipv4_mapped().unwrap_or(Ipv4Addr::UNSPECIFIED),
            };
            let mut b = Vec::with_capacity(SIN_LEN);
            b.extend_from_slice(&AF_INET.to_le_bytes());
            b.extend_from_slice(&a.port().to_be_bytes());
            b.extend_from_slice(&ip.octets());
            b.extend_from_slice(&[0; 8]);
            b
        }
    }
}

/// The unbound address of a socket of `family` (`0.0.0.0:0` or `[::]:0`).
pub fn unspecified(family: u16) -> SocketAddr {
    match family {
        AF_INET6 => SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), 0),
        _ => SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0),
    }
}

/// IPv4-mapped IPv6 addresses as the IPv4 addresses they stand for: the
/// host socket the gateway opens is then an IPv4 one, as Linux's is.
fn unmap(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// The `connect` ctl message for `addr`. Linux connects to the loopback
/// address when given the unspecified one; port 0 refuses at once.
pub fn connect_ctl(addr: SocketAddr) -> Result<String, Errno> {
    if addr.port() == 0 {
        return Err(Errno::ECONNREFUSED);
    }
    let ip = match unmap(addr.ip()) {
        IpAddr::V4(v4) if v4.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(v6) if v6.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    Ok(format!("connect {}!{}", ip, addr.port()))
}

/// The `announce` ctl message for `addr` (a UDP bind).
pub fn announce_ctl(addr: SocketAddr) -> String {
    format!("announce {}!{}", unmap(addr.ip()), addr.port())
}

/// The `announce` ctl message for a UDP socket of `family` at `addr`: an
/// IPv6 socket's IPv4-mapped address stays one, so that the gateway's host
/// socket is an IPv6 socket too, as the program's is on Linux (it may be
/// bound again, after a disconnect gave its port up, to an IPv6 address).
pub fn announce_ctl_in(family: u16, addr: SocketAddr) -> String {
    match (family, addr) {
        (AF_INET6, SocketAddr::V6(v6)) => format!("announce {}!{}", v6.ip(), v6.port()),
        _ => announce_ctl(addr),
    }
}

/// The `bind` ctl message for `addr` (a TCP bind: bound, not listening).
pub fn bind_ctl(addr: SocketAddr) -> String {
    format!("bind {}!{}", unmap(addr.ip()), addr.port())
}

/// Parses the text of a connection's `local` or `remote` file
/// (`ADDR!PORT\n`).
pub fn parse_text(text: &[u8]) -> Option<SocketAddr> {
    let s = core::str::from_utf8(text).ok()?.trim_end();
    let (host, port) = s.rsplit_once('!')?;
    let ip: IpAddr = host.parse().ok()?;
    Some(SocketAddr::new(ip, port.parse().ok()?))
}

/// `sizeof(struct sockaddr_un)`.
const SUN_LEN: usize = 110;

/// A Unix socket's name, as `getsockname` reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UnixName {
    /// Not bound (the family alone).
    Unnamed,
    /// A path, as the program gave it (relative ones stay relative), without
    /// the terminating NUL.
    Path(Vec<u8>),
    /// An abstract name: the bytes after the leading NUL, all of them.
    Abstract(Vec<u8>),
}

impl UnixName {
    /// Parses a program's `sockaddr_un` of `bind` or `connect`: `Ok(None)`
    /// for the family alone (`bind`'s automatic name). Never panics.
    pub fn parse(bytes: &[u8]) -> Result<Option<UnixName>, Errno> {
        let fam = match bytes {
            [a, b, ..] => u16::from_le_bytes([*a, *b]),
            _ => return Err(Errno::EINVAL),
        };
        if bytes.len() == 2 && fam == AF_UNIX {
            return Ok(None);
        }
        if bytes.len() <= 2 || bytes.len() > SUN_LEN || fam != AF_UNIX {
            return Err(Errno::EINVAL);
        }
        let path = &bytes[2..];
        if path[0] == 0 {
            return Ok(Some(UnixName::Abstract(path[1..].to_vec())));
        }
        let end = path.iter().position(|&b| b == 0).unwrap_or(path.len());
        Ok(Some(UnixName::Path(path[..end].to_vec())))
    }

    /// The `sockaddr_un` Linux reports for it: a path with its NUL, an
    /// abstract name exactly as bound.
    pub fn encode(&self) -> Vec<u8> {
        let mut v = AF_UNIX.to_le_bytes().to_vec();
        match self {
            UnixName::Unnamed => {}
            UnixName::Path(p) => {
                v.extend_from_slice(p);
                v.push(0);
            }
            UnixName::Abstract(a) => {
                v.push(0);
                v.extend_from_slice(a);
            }
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn round_trips() {
        let a = v4("127.0.0.1:8080");
        let b = encode(a, AF_INET);
        assert_eq!(b.len(), SIN_LEN);
        assert_eq!(&b[..4], &[2, 0, 0x1f, 0x90]);
        assert_eq!(decode(&b, AF_INET), Ok(a));
        let m = encode(a, AF_INET6);
        assert_eq!(m.len(), SIN6_LEN);
        assert_eq!(decode(&m, AF_INET6), Ok(v4("[::ffff:127.0.0.1]:8080")));
        let v6 = v4("[::1]:443");
        assert_eq!(decode(&encode(v6, AF_INET6), AF_INET6), Ok(v6));
    }

    #[test]
    fn bad_input_is_an_error() {
        assert_eq!(decode(&[], AF_INET), Err(Errno::EINVAL));
        assert_eq!(decode(&[2, 0, 1], AF_INET), Err(Errno::EINVAL));
        assert_eq!(decode(&[10; 16], AF_INET), Err(Errno::EAFNOSUPPORT));
        assert_eq!(decode(&[2, 0, 0, 0], AF_INET6), Err(Errno::EINVAL));
        assert_eq!(decode(&[2; 28], AF_INET6), Err(Errno::EAFNOSUPPORT));
        assert_eq!(decode(&[2; 28], AF_UNIX), Err(Errno::EAFNOSUPPORT));
        // Any bytes at all: an answer, never a panic.
        for n in 0..40 {
            for fill in [0u8, 2, 10, 0xff] {
                let _ = decode(&alloc::vec![fill; n], AF_INET);
                let _ = decode(&alloc::vec![fill; n], AF_INET6);
            }
        }
    }

    #[test]
    fn ctl_text() {
        assert_eq!(
            connect_ctl(v4("[::ffff:10.0.0.1]:80")).unwrap(),
            "connect 10.0.0.1!80"
        );
        assert_eq!(
            connect_ctl(v4("0.0.0.0:80")).unwrap(),
            "connect 127.0.0.1!80"
        );
        assert_eq!(connect_ctl(v4("[::]:80")).unwrap(), "connect ::1!80");
        assert_eq!(connect_ctl(v4("1.2.3.4:0")), Err(Errno::ECONNREFUSED));
        assert_eq!(announce_ctl(v4("[::]:0")), "announce ::!0");
        assert_eq!(announce_ctl(v4("0.0.0.0:5")), "announce 0.0.0.0!5");
        assert_eq!(
            announce_ctl_in(AF_INET6, v4("[::ffff:127.0.0.1]:5")),
            "announce ::ffff:127.0.0.1!5"
        );
        assert_eq!(
            announce_ctl_in(AF_INET, v4("127.0.0.1:5")),
            "announce 127.0.0.1!5"
        );
        assert_eq!(parse_text(b"127.0.0.1!80\n"), Some(v4("127.0.0.1:80")));
        assert_eq!(
            parse_text(b"::ffff:127.0.0.1!1\n"),
            Some(v4("[::ffff:127.0.0.1]:1"))
        );
        assert_eq!(parse_text(b"::!0\n"), Some(v4("[::]:0")));
        assert_eq!(parse_text(b"junk"), None);
        assert_eq!(parse_text(b"1.2.3.4!99999"), None);
    }

    #[test]
    fn unix_names() {
        use super::UnixName;
        let sun = |p: &[u8]| {
            let mut v = AF_UNIX.to_le_bytes().to_vec();
            v.extend_from_slice(p);
            v
        };
        // A path ends at its first NUL or at the length given.
        let p = UnixName::parse(&sun(b"a.sock\0junk")).unwrap().unwrap();
        assert_eq!(p, UnixName::Path(b"a.sock".to_vec()));
        assert_eq!(p.encode(), sun(b"a.sock\0"));
        assert_eq!(
            UnixName::parse(&sun(b"x")).unwrap(),
            Some(UnixName::Path(b"x".to_vec()))
        );
        // An abstract name keeps every byte given, NULs included.
        let a = UnixName::parse(&sun(b"\0ab\0")).unwrap().unwrap();
        assert_eq!(a, UnixName::Abstract(b"ab\0".to_vec()));
        assert_eq!(a.encode(), sun(b"\0ab\0"));
        // The family alone: bind's automatic name.
        assert_eq!(UnixName::parse(&sun(b"")).unwrap(), None);
        assert_eq!(UnixName::Unnamed.encode(), sun(b""));
        // Too short, too long, another family.
        assert_eq!(UnixName::parse(&[1]), Err(Errno::EINVAL));
        assert_eq!(UnixName::parse(&sun(&[b'a'; 109])), Err(Errno::EINVAL));
        assert!(UnixName::parse(&sun(&[b'a'; 108])).is_ok());
        assert_eq!(UnixName::parse(&[2, 0, b'a']), Err(Errno::EINVAL));
        assert_eq!(UnixName::parse(&[2, 0]), Err(Errno::EINVAL));
        // No input panics.
        for len in 0..120 {
            for fill in [0u8, 1, b'a', 0xff] {
                let mut v = vec![fill; len];
                if len >= 2 {
                    v[0] = 1;
                    v[1] = 0;
                }
                let _ = UnixName::parse(&v);
            }
        }
    }
}
