//! Socket options as Linux keeps them: which exist for a kind of socket,
//! their sizes, defaults and the values set. Pure: tested on the host.
//! What an option does to the host socket is the socket's business.

use alloc::vec::Vec;

use super::addr::{AF_INET6, AF_UNIX};
use crate::errno::Errno;

/// `SOL_SOCKET`.
pub const SOL_SOCKET: u32 = 1;
/// `IPPROTO_IP`.
pub const IPPROTO_IP: u32 = 0;
/// `IPPROTO_TCP`.
pub const IPPROTO_TCP: u32 = 6;
/// `IPPROTO_UDP`.
pub const IPPROTO_UDP: u32 = 17;
/// `IPPROTO_IPV6`.
pub const IPPROTO_IPV6: u32 = 41;
/// `IPV6_V6ONLY`.
pub const IPV6_V6ONLY: u32 = 26;
/// `SO_TYPE`.
pub const SO_TYPE: u32 = 3;
/// `SO_ERROR`.
pub const SO_ERROR: u32 = 4;
/// `SO_REUSEADDR`.
pub const SO_REUSEADDR: u32 = 2;
/// `SO_REUSEPORT`.
pub const SO_REUSEPORT: u32 = 15;
/// `SO_SNDBUF`.
pub const SO_SNDBUF: u32 = 7;
/// `SO_RCVBUF`.
pub const SO_RCVBUF: u32 = 8;
/// `SO_KEEPALIVE`.
pub const SO_KEEPALIVE: u32 = 9;
/// `SO_LINGER`.
pub const SO_LINGER: u32 = 13;
const SO_RCVTIMEO: u32 = 20;
const SO_SNDTIMEO: u32 = 21;
/// `SO_ACCEPTCONN`.
pub const SO_ACCEPTCONN: u32 = 30;
const SO_PROTOCOL: u32 = 38;
const SO_DOMAIN: u32 = 39;
const IP_TTL: u32 = 2;
const IPV6_UNICAST_HOPS: u32 = 16;
/// `TCP_NODELAY`.
pub const TCP_NODELAY: u32 = 1;
const TCP_MAXSEG: u32 = 2;
const TCP_KEEPIDLE: u32 = 4;
const TCP_KEEPINTVL: u32 = 5;
const TCP_KEEPCNT: u32 = 6;

/// `SOCK_STREAM`.
pub const SOCK_STREAM: u32 = 1;
/// `SOCK_DGRAM`.
pub const SOCK_DGRAM: u32 = 2;

#[derive(Clone)]
struct Opt {
    level: u32,
    name: u32,
    value: Vec<u8>,
}

/// The options of one socket (cloned for an accepted one, as Linux
/// clones the listener's).
#[derive(Clone)]
pub struct Options {
    /// `SOCK_STREAM` or `SOCK_DGRAM`.
    ty: u32,
    family: u16,
    set: Vec<Opt>,
}

impl Options {
    /// A socket's options, all at their defaults.
    pub fn new(ty: u32, family: u16) -> Options {
        Options {
            ty,
            family,
            set: Vec::new(),
        }
    }

    /// The size of an option's value (`Err`: Linux's answer for an option
    /// the socket does not have).
    fn size(&self, level: u32, name: u32) -> Result<usize, Errno> {
        if level == IPPROTO_IPV6 && self.family != AF_INET6 {
            return Err(Errno::EOPNOTSUPP);
        }
        // A Unix socket has socket-level options only (Linux's
        // `sock_no_setsockopt` for the rest).
        if level != SOL_SOCKET && self.family == AF_UNIX {
            return Err(Errno::EOPNOTSUPP);
        }
        let stream = self.ty == SOCK_STREAM;
        match (level, name) {
            // SO_DEBUG, SO_REUSEADDR, SO_DONTROUTE, SO_BROADCAST, SO_SNDBUF,
            // SO_RCVBUF, SO_KEEPALIVE, SO_OOBINLINE, SO_REUSEPORT,
            // SO_RCVLOWAT, SO_SNDLOWAT, SO_TIMESTAMP, SO_BUSY_POLL.
            (SOL_SOCKET, 1 | 2 | 5 | 6 | 7 | 8 | 9 | 10 | 15 | 18 | 19 | 29 | 46) => Ok(4),
            (SOL_SOCKET, SO_LINGER) => Ok(8),
            (SOL_SOCKET, SO_RCVTIMEO | SO_SNDTIMEO) => Ok(16),
            // IP_TOS, IP_TTL, IP_MULTICAST_IF/TTL/LOOP: integers.
            (IPPROTO_IP, 1 | 2 | 32 | 33 | 34) => Ok(4),
            // IPV6_UNICAST_HOPS, IPV6_MULTICAST_HOPS/LOOP, IPV6_V6ONLY,
            // IPV6_TCLASS.
            (IPPROTO_IPV6, 16 | 18 | 19 | 26 | 67) => Ok(4),
            // TCP_NODELAY, TCP_MAXSEG, TCP_KEEPIDLE/INTVL/CNT, TCP_QUICKACK,
            // TCP_USER_TIMEOUT, TCP_FASTOPEN.
            (IPPROTO_TCP, 1 | 2 | 4 | 5 | 6 | 12 | 18 | 23) if stream => Ok(4),
            // UDP_CORK, UDP_SEGMENT.
            (IPPROTO_UDP, 1 | 103) if !stream => Ok(4),
            // Linux's UDP answers TCP options so.
            (IPPROTO_TCP, _) if !stream => Err(Errno::EOPNOTSUPP),
            _ => Err(Errno::ENOPROTOOPT),
        }
    }

    /// The receive (`SO_RCVTIMEO`) or send (`SO_SNDTIMEO`) time limit of
    /// Whether `SO_LINGER` asks for an abortive close (on, zero seconds):
    /// closing resets the connection.
    pub fn abortive_close(&self) -> bool {
        match self.get(SOL_SOCKET, SO_LINGER) {
            Ok(v) if v.len() >= 8 => v[..4] != [0; 4] && v[4..8] == [0; 4],
            _ => false,
        }
    }

    /// a blocking call, in nanoseconds; `None`: none (never set, or 0).
    pub fn timeout_ns(&self, send: bool) -> Option<u64> {
        let name = if send { SO_SNDTIMEO } else { SO_RCVTIMEO };
        let o = self
            .set
            .iter()
            .find(|o| o.level == SOL_SOCKET && o.name == name)?;
        let word = |i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(o.value.get(i..i + 8)?);
            Some(i64::from_le_bytes(w))
        };
        let (sec, usec) = (word(0)?, word(8)?);
        let ns = u64::try_from(sec)
            .ok()?
            .saturating_mul(1_000_000_000)
            .saturating_add(u64::try_from(usec).ok()?.saturating_mul(1000));
        (ns > 0).then_some(ns)
    }

    /// `setsockopt`: keeps the value; returns it as an integer (for the
    /// options the socket passes on).
    pub fn set(&mut self, level: u32, name: u32, value: &[u8]) -> Result<i32, Errno> {
        // Linux's `ip_setsockopt` refuses another level with ENOPROTOOPT
        // (its `ip_getsockopt` with EOPNOTSUPP, as `size` says).
        if level == IPPROTO_IPV6 && self.family != AF_INET6 && self.family != AF_UNIX {
            return Err(Errno::ENOPROTOOPT);
        }
        let size = self.size(level, name)?;
        if value.len() < size.min(4) {
            return Err(Errno::EINVAL);
        }
        if level == SOL_SOCKET && (name == SO_RCVTIMEO || name == SO_SNDTIMEO) {
            if value.len() < 16 {
                return Err(Errno::EINVAL);
            }
            let mut w = [0u8; 8];
            w.copy_from_slice(&value[8..16]);
            let usec = i64::from_le_bytes(w);
            if !(0..1_000_000).contains(&usec) {
                return Err(Errno::EDOM);
            }
        }
        let mut v = value[..value.len().min(size)].to_vec();
        v.resize(size, 0);
        let int = i32::from_le_bytes([v[0], v[1], v[2], v[3]]);
        if level == SOL_SOCKET && (name == SO_RCVBUF || name == SO_SNDBUF) {
            // Linux doubles the value for its bookkeeping and reports that.
            let min = if name == SO_RCVBUF { 2304 } else { 4608 };
            v = (int.max(0).saturating_mul(2).max(min))
                .to_le_bytes()
                .to_vec();
        }
        self.set.retain(|o| !(o.level == level && o.name == name));
        self.set.push(Opt {
            level,
            name,
            value: v,
        });
        Ok(int)
    }

    /// `getsockopt`: the value's bytes (the caller truncates). `SO_ERROR`
    /// and `SO_ACCEPTCONN` are the socket's state, not kept here.
    pub fn get(&self, level: u32, name: u32) -> Result<Vec<u8>, Errno> {
        let int = |v: i32| Ok(v.to_le_bytes().to_vec());
        let stream = self.ty == SOCK_STREAM;
        match (level, name) {
            (SOL_SOCKET, SO_TYPE) => return int(self.ty as i32),
            (SOL_SOCKET, SO_DOMAIN) => return int(i32::from(self.family)),
            (SOL_SOCKET, SO_PROTOCOL) if self.family == AF_UNIX => return int(0),
            (SOL_SOCKET, SO_PROTOCOL) => return int(if stream { 6 } else { 17 }),
            _ => {}
        }
        let size = self.size(level, name)?;
        if let Some(o) = self.set.iter().find(|o| o.level == level && o.name == name) {
            return Ok(o.value.clone());
        }
        let default: i32 = match (level, name) {
            // tcp_rmem/tcp_wmem defaults; UDP uses rmem/wmem_default.
            (SOL_SOCKET, SO_RCVBUF) if stream && self.family != AF_UNIX => 131_072,
            (SOL_SOCKET, SO_SNDBUF) if stream && self.family != AF_UNIX => 16_384,
            (SOL_SOCKET, SO_RCVBUF | SO_SNDBUF) => 212_992,
            (IPPROTO_IP, IP_TTL) | (IPPROTO_IPV6, IPV6_UNICAST_HOPS) => 64,
            // IP_MULTICAST_TTL, IP_MULTICAST_LOOP, IPV6_MULTICAST_HOPS/LOOP.
            (IPPROTO_IP, 33) | (IPPROTO_IPV6, 18 | 19) => 1,
            (IPPROTO_IP, 34) => 1,
            (IPPROTO_TCP, TCP_KEEPIDLE) => 7200,
            (IPPROTO_TCP, TCP_KEEPINTVL) => 75,
            (IPPROTO_TCP, TCP_KEEPCNT) => 9,
            (IPPROTO_TCP, TCP_MAXSEG) => 536,
            _ => 0,
        };
        let mut v = default.to_le_bytes().to_vec();
        v.resize(size, 0);
        Ok(v)
    }

    /// An integer option's value, if it was set.
    pub fn int(&self, level: u32, name: u32) -> Option<i32> {
        self.set
            .iter()
            .find(|o| o.level == level && o.name == name)
            .and_then(|o| o.value.get(..4))
            .map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::addr::AF_INET;

    #[test]
    fn linux_sizes_defaults_and_errors() {
        let mut o = Options::new(SOCK_STREAM, AF_INET);
        assert_eq!(o.get(SOL_SOCKET, SO_TYPE), Ok(1i32.to_le_bytes().to_vec()));
        assert_eq!(
            o.set(SOL_SOCKET, SO_RCVBUF, &65536i32.to_le_bytes()),
            Ok(65536)
        );
        assert_eq!(
            o.get(SOL_SOCKET, SO_RCVBUF),
            Ok(131_072i32.to_le_bytes().to_vec())
        );
        assert_eq!(o.get(SOL_SOCKET, 9999), Err(Errno::ENOPROTOOPT));
        assert_eq!(o.get(IPPROTO_IPV6, 26), Err(Errno::EOPNOTSUPP));
        assert_eq!(o.set(SOL_SOCKET, SO_KEEPALIVE, &[1]), Err(Errno::EINVAL));
        assert_eq!(o.get(SOL_SOCKET, SO_LINGER).map(|v| v.len()), Ok(8));
        let u = Options::new(SOCK_DGRAM, AF_INET6);
        assert_eq!(u.get(IPPROTO_TCP, TCP_NODELAY), Err(Errno::EOPNOTSUPP));
        assert_eq!(
            u.get(SOL_SOCKET, SO_RCVBUF),
            Ok(212_992i32.to_le_bytes().to_vec())
        );
        assert_eq!(u.get(IPPROTO_IPV6, 26), Ok(0i32.to_le_bytes().to_vec()));
    }
}
