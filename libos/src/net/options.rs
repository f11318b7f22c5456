//! Socket options as Linux keeps them: which exist for a kind of socket,
//! their sizes, defaults and the values set. Pure: tested on the host.
//! What an option does to the host socket is the socket's business.

use alloc::vec::Vec;
use core::sync::atomic::{AtomicU32, Ordering};

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
const SO_PRIORITY: u32 = 12;
const SO_PASSCRED: u32 = 16;
const SO_RCVLOWAT: u32 = 18;
const SO_SNDLOWAT: u32 = 19;
const SO_BUSY_POLL: u32 = 46;
const IP_TOS: u32 = 1;
const IP_TTL: u32 = 2;
pub const IP_MULTICAST_TTL: u32 = 33;
pub const IP_MULTICAST_LOOP: u32 = 34;
const IP_FREEBIND: u32 = 15;
const IP_TRANSPARENT: u32 = 19;
const IP_BIND_ADDRESS_NO_PORT: u32 = 24;
const IPV6_TRANSPARENT: u32 = 75;
const IPV6_FREEBIND: u32 = 78;
const IPV6_UNICAST_HOPS: u32 = 16;
pub const IPV6_MULTICAST_HOPS: u32 = 18;
pub const IPV6_MULTICAST_LOOP: u32 = 19;
const IPV6_TCLASS: u32 = 67;
const TCP_CORK: u32 = 3;
const TCP_SYNCNT: u32 = 7;
const TCP_LINGER2: u32 = 8;
const TCP_DEFER_ACCEPT: u32 = 9;
const TCP_WINDOW_CLAMP: u32 = 10;
const TCP_QUICKACK: u32 = 12;
const TCP_USER_TIMEOUT: u32 = 18;
const TCP_FASTOPEN: u32 = 23;
const TCP_NOTSENT_LOWAT: u32 = 25;
/// `net.core.rmem_max` and `wmem_max`, a buffer size's cap: the host's
/// (`net.bufmax=` on the command line), or Linux's default.
static BUF_MAX: [AtomicU32; 2] = [AtomicU32::new(212_992), AtomicU32::new(212_992)];

/// `net.ipv4.tcp_rmem`'s largest size: the host's, or Linux's default.
static TCP_RMEM_MAX: AtomicU32 = AtomicU32::new(6_291_456);
/// `tcp_rmem`'s default size, a TCP socket's first receive buffer.
const TCP_RMEM_DEFAULT: i32 = 131_072;
/// The host kernel's tick rate (`CONFIG_HZ`): socket time limits are kept
/// in ticks.
static HZ: AtomicU32 = AtomicU32::new(250);

/// Sets the host's `rmem_max`, `wmem_max` and `tcp_rmem`'s largest size.
pub fn set_buffer_max(rmem: u32, wmem: u32, tcp_rmem: u32) {
    BUF_MAX[0].store(rmem, Ordering::Relaxed);
    BUF_MAX[1].store(wmem, Ordering::Relaxed);
    TCP_RMEM_MAX.store(tcp_rmem, Ordering::Relaxed);
}

/// Sets the host kernel's tick rate.
pub fn set_hz(hz: u32) {
    if hz > 0 {
        HZ.store(hz, Ordering::Relaxed);
    }
}
/// `net.ipv4.tcp_fin_timeout`'s default, `TCP_LINGER2`'s.
const FIN_TIMEOUT: i32 = 60;
/// `TCP_FIN_TIMEOUT_MAX` in seconds.
const LINGER2_MAX: i32 = 120;

/// `TCP_DEFER_ACCEPT`'s seconds as retransmissions (Linux's
/// `secs_to_retrans`, a first timeout of 1 s doubling up to 120 s).
fn secs_to_retrans(seconds: i32) -> u8 {
    let (mut res, mut timeout, mut period) = (0u8, 1, 1);
    if seconds > 0 {
        res = 1;
        while seconds > period && res < 255 {
            res += 1;
            timeout = (timeout * 2).min(120);
            period += timeout;
        }
    }
    res
}

/// Retransmissions as seconds (Linux's `retrans_to_secs`).
fn retrans_to_secs(retrans: u8) -> i32 {
    if retrans == 0 {
        return 0;
    }
    let (mut timeout, mut period) = (1, 1);
    for _ in 1..retrans {
        timeout = (timeout * 2).min(120);
        period += timeout;
    }
    period
}

/// What an option is, for `setsockopt`'s checks.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Any number; reported as 0 or 1.
    Bool,
    /// `SO_REUSEPORT`: a boolean of Internet sockets only.
    ReusePort,
    /// `SO_SNDBUF`, `SO_RCVBUF`.
    Buffer,
    /// `SO_PRIORITY`: 0 to 6 without `CAP_NET_ADMIN`.
    Priority,
    /// `struct linger`.
    Linger,
    /// `struct timeval`.
    Timeval,
    /// `SO_RCVLOWAT`: at least 1, negative meaning `INT_MAX`.
    RcvLowat,
    /// Read only.
    ReadOnly,
    /// An integer within a range (else `EINVAL`).
    Int(i32, i32),
    /// A hop limit: -1 (the default) to 255.
    Hops,
    /// `TCP_MAXSEG`: 0, or 88 to 65535.
    MaxSeg,
    /// `TCP_LINGER2`: seconds, at most 120, negative for -1.
    Linger2,
    /// `TCP_WINDOW_CLAMP`: 0, or at least half the smallest buffer.
    WindowClamp,
    /// An IP option that also takes a single byte.
    IpByte(IpRule),
    /// Settable to 0 only without `CAP_NET_RAW`/`CAP_NET_ADMIN` (`EPERM`),
    /// which a partition's program never has.
    Privileged,
}

/// How an IP option's value is checked.
#[derive(Clone, Copy, PartialEq, Eq)]
enum IpRule {
    Tos,
    Ttl,
    MulticastTtl,
    /// Any value, kept as 0 or 1 (`IP_MULTICAST_LOOP`, `IP_FREEBIND`).
    Loop,
    /// As `Loop`, and nothing at all is 0 (`IP_BIND_ADDRESS_NO_PORT`).
    Flag,
    /// `IP_TRANSPARENT`: privileged.
    Transparent,
}
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
    /// The program set `SO_RCVBUF` (Linux's `SOCK_RCVBUF_LOCK`).
    rcvbuf_locked: bool,
}

impl Options {
    /// A socket's options, all at their defaults.
    pub fn new(ty: u32, family: u16) -> Options {
        Options {
            ty,
            family,
            set: Vec::new(),
            rcvbuf_locked: false,
        }
    }

    fn inet(&self) -> bool {
        self.family != AF_UNIX
    }

    fn tcp(&self) -> bool {
        self.inet() && self.ty == SOCK_STREAM
    }

    /// What (level, name) is on this socket, or Linux's answer for an
    /// option it does not have: `set` for `setsockopt` (IP options of
    /// another family and unknown TCP options differ between the two).
    fn kind(&self, level: u32, name: u32, set: bool) -> Result<Kind, Errno> {
        use Kind::*;
        match level {
            SOL_SOCKET => {}
            // Unix sockets have socket-level options only.
            _ if !self.inet() => return Err(Errno::EOPNOTSUPP),
            // `ip_setsockopt`/`ip_getsockopt` of an IPv4 socket.
            IPPROTO_IPV6 if self.family != AF_INET6 => {
                return Err(if set {
                    Errno::ENOPROTOOPT
                } else {
                    Errno::EOPNOTSUPP
                });
            }
            // UDP hands other levels to the IP layer, which knows none:
            // IPv4's `ip_getsockopt` says EOPNOTSUPP, the rest ENOPROTOOPT.
            IPPROTO_TCP if !self.tcp() => {
                return Err(if !set && self.family != AF_INET6 {
                    Errno::EOPNOTSUPP
                } else {
                    Errno::ENOPROTOOPT
                });
            }
            _ => {}
        }
        let tcp = self.tcp();
        Ok(match (level, name) {
            // SO_DEBUG (privileged), SO_REUSEADDR, SO_DONTROUTE,
            // SO_BROADCAST, SO_KEEPALIVE, SO_OOBINLINE, SO_TIMESTAMP.
            (SOL_SOCKET, 1 | 2 | 5 | 6 | 9 | 10 | 29) => Bool,
            (SOL_SOCKET, SO_REUSEPORT) => ReusePort,
            (SOL_SOCKET, SO_PASSCRED) if self.inet() => return Err(Errno::EOPNOTSUPP),
            (SOL_SOCKET, SO_PASSCRED) => Bool,
            (SOL_SOCKET, SO_SNDBUF | SO_RCVBUF) => Buffer,
            (SOL_SOCKET, SO_PRIORITY) => Priority,
            (SOL_SOCKET, SO_LINGER) => Linger,
            (SOL_SOCKET, SO_RCVTIMEO | SO_SNDTIMEO) => Timeval,
            (SOL_SOCKET, SO_RCVLOWAT) => RcvLowat,
            // Read-only: SO_SNDLOWAT (always 1), SO_TYPE, SO_ERROR,
            // SO_ACCEPTCONN, SO_PROTOCOL, SO_DOMAIN.
            (SOL_SOCKET, SO_SNDLOWAT | SO_TYPE | SO_ERROR | SO_ACCEPTCONN)
            | (SOL_SOCKET, SO_PROTOCOL | SO_DOMAIN) => ReadOnly,
            (SOL_SOCKET, SO_BUSY_POLL) => Int(0, i32::MAX),
            (IPPROTO_IP, IP_TOS) => IpByte(IpRule::Tos),
            (IPPROTO_IP, IP_TTL) => IpByte(IpRule::Ttl),
            (IPPROTO_IP, IP_MULTICAST_TTL) => IpByte(IpRule::MulticastTtl),
            (IPPROTO_IP, IP_MULTICAST_LOOP | IP_FREEBIND) => IpByte(IpRule::Loop),
            (IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT) => IpByte(IpRule::Flag),
            (IPPROTO_IP, IP_TRANSPARENT) => IpByte(IpRule::Transparent),
            (IPPROTO_IPV6, IPV6_FREEBIND) => Bool,
            (IPPROTO_IPV6, IPV6_TRANSPARENT) => Privileged,
            (IPPROTO_IPV6, IPV6_V6ONLY) => Bool,
            (IPPROTO_IPV6, IPV6_UNICAST_HOPS | IPV6_MULTICAST_HOPS) => Hops,
            (IPPROTO_IPV6, IPV6_TCLASS) => Int(-1, 0xff),
            (IPPROTO_IPV6, IPV6_MULTICAST_LOOP) => Bool,
            (IPPROTO_TCP, TCP_NODELAY | TCP_CORK) if tcp => Bool,
            (IPPROTO_TCP, TCP_QUICKACK) if tcp => Bool,
            (IPPROTO_TCP, TCP_MAXSEG) if tcp => MaxSeg,
            (IPPROTO_TCP, TCP_KEEPIDLE | TCP_KEEPINTVL) if tcp => Int(1, 32767),
            (IPPROTO_TCP, TCP_KEEPCNT | TCP_SYNCNT) if tcp => Int(1, 127),
            (IPPROTO_TCP, TCP_LINGER2) if tcp => Linger2,
            (IPPROTO_TCP, TCP_DEFER_ACCEPT) if tcp => Int(i32::MIN, i32::MAX),
            (IPPROTO_TCP, TCP_WINDOW_CLAMP) if tcp => WindowClamp,
            (IPPROTO_TCP, TCP_USER_TIMEOUT) if tcp => Int(0, i32::MAX),
            (IPPROTO_TCP, TCP_NOTSENT_LOWAT | TCP_FASTOPEN) if tcp => Int(i32::MIN, i32::MAX),
            // UDP_CORK, UDP_SEGMENT.
            (IPPROTO_UDP, 1 | 103) if !tcp => Int(i32::MIN, i32::MAX),
            _ => return Err(Errno::ENOPROTOOPT),
        })
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

    /// `setsockopt` with Linux's checks for each option (its
    /// `sk_setsockopt`, `ip_setsockopt`, `ipv6_setsockopt`,
    /// `do_tcp_setsockopt`); keeps the value as `getsockopt` will report
    /// it, and returns the integer given (for the options the socket passes
    /// on to the host).
    pub fn set(&mut self, level: u32, name: u32, value: &[u8]) -> Result<i32, Errno> {
        use Kind::*;
        // `sk_setsockopt` and `do_tcp_setsockopt` want an int before they
        // look at the name.
        if (level == SOL_SOCKET || (level == IPPROTO_TCP && self.tcp())) && value.len() < 4 {
            return Err(Errno::EINVAL);
        }
        let kind = self.kind(level, name, true)?;
        // `ipv6_setsockopt` leaves multicast options of a TCP socket alone,
        // answering ENOPROTOOPT, before it looks at the value.
        if level == IPPROTO_IPV6 && name == IPV6_MULTICAST_HOPS && self.ty == SOCK_STREAM {
            return Err(Errno::ENOPROTOOPT);
        }
        // An int, or for IP options as little as a byte (0 for nothing).
        let int = match value.len() {
            n if n >= 4 => i32::from_le_bytes([value[0], value[1], value[2], value[3]]),
            n if n >= 1 && matches!(kind, IpByte(_)) => i32::from(value[0]),
            0 if matches!(kind, IpByte(IpRule::Tos | IpRule::Flag)) => 0,
            _ => return Err(Errno::EINVAL),
        };
        // IPv6's free-bind and transparent flags are IPv4's (one bit each
        // in `inet_sock`): kept once.
        let (level, name) = Self::shared_bit(level, name);
        let stored: Vec<u8> = match kind {
            ReadOnly => return Err(Errno::ENOPROTOOPT),
            Bool if level == SOL_SOCKET && name == 1 && int != 0 => return Err(Errno::EACCES),
            Bool => i32::from(int != 0).to_le_bytes().to_vec(),
            ReusePort if int != 0 && !self.inet() => return Err(Errno::EOPNOTSUPP),
            ReusePort => i32::from(int != 0).to_le_bytes().to_vec(),
            Privileged if int != 0 => return Err(Errno::EPERM),
            Privileged => 0i32.to_le_bytes().to_vec(),
            Buffer => {
                // min(value, the sysctl's maximum) as unsigned numbers, then
                // doubled for Linux's bookkeeping, which reports that.
                let max = BUF_MAX[usize::from(name == SO_SNDBUF)].load(Ordering::Relaxed);
                let v = (int as u32).min(max).min(i32::MAX as u32) as i32;
                let min = if name == SO_RCVBUF { 2304 } else { 4608 };
                self.rcvbuf_locked |= name == SO_RCVBUF;
                v.saturating_mul(2).max(min).to_le_bytes().to_vec()
            }
            Priority if !(0..=6).contains(&int) => return Err(Errno::EPERM),
            Linger => {
                if value.len() < 8 {
                    return Err(Errno::EINVAL);
                }
                let secs = i32::from_le_bytes([value[4], value[5], value[6], value[7]]);
                let mut v = i32::from(int != 0).to_le_bytes().to_vec();
                // The time is kept only when lingering is turned on, in
                // ticks: a negative one, taken as unsigned, is the longest
                // timeout (`MAX_SCHEDULE_TIMEOUT`), which reads back as
                // `LONG_MAX / HZ` cut to an int.
                let kept = if int != 0 && secs < 0 {
                    (i64::MAX / i64::from(HZ.load(Ordering::Relaxed))) as i32
                } else if int != 0 {
                    secs
                } else {
                    self.get(SOL_SOCKET, SO_LINGER)
                        .ok()
                        .and_then(|o| {
                            o.get(4..8)
                                .map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                        })
                        .unwrap_or(0)
                };
                v.extend_from_slice(&kept.to_le_bytes());
                v
            }
            Timeval => {
                if value.len() < 16 {
                    return Err(Errno::EINVAL);
                }
                let mut w = [0u8; 8];
                w.copy_from_slice(&value[8..16]);
                let usec = i64::from_le_bytes(w);
                if !(0..1_000_000).contains(&usec) {
                    return Err(Errno::EDOM);
                }
                w.copy_from_slice(&value[..8]);
                let sec = i64::from_le_bytes(w);
                // Kept in jiffies (`sock_set_timeout`), the microseconds
                // rounded up to the host's tick; a negative time, nothing
                // or one too large is no limit, reported as 0.
                let hz = i64::from(HZ.load(Ordering::Relaxed).max(1));
                let mut v = [0u8; 16];
                if sec >= 0 && (sec != 0 || usec != 0) && sec < i64::MAX / hz - 1 {
                    let tick = 1_000_000 / hz;
                    let jiffies = sec * hz + (usec + tick - 1) / tick;
                    v[..8].copy_from_slice(&(jiffies / hz).to_le_bytes());
                    v[8..].copy_from_slice(&((jiffies % hz) * 1_000_000 / hz).to_le_bytes());
                }
                v.to_vec()
            }
            RcvLowat => {
                let mut v = if int < 0 { i32::MAX } else { int };
                if self.tcp() {
                    // `tcp_set_rcvlowat`: at most half the receive buffer
                    // (half its largest size while the program has not set
                    // one), which grows to hold it.
                    let rcvbuf = self.int_or(SOL_SOCKET, SO_RCVBUF, TCP_RMEM_DEFAULT);
                    let cap = if self.rcvbuf_locked {
                        rcvbuf >> 1
                    } else {
                        (TCP_RMEM_MAX.load(Ordering::Relaxed).min(i32::MAX as u32) as i32) >> 1
                    };
                    v = v.min(cap);
                    if !self.rcvbuf_locked && v.saturating_mul(2) > rcvbuf {
                        self.keep(SOL_SOCKET, SO_RCVBUF, (v * 2).to_le_bytes().to_vec());
                        // A window clamp the program set grows with it.
                        let clamp = self.int_or(IPPROTO_TCP, TCP_WINDOW_CLAMP, 0);
                        if clamp != 0 && clamp < v {
                            self.keep(IPPROTO_TCP, TCP_WINDOW_CLAMP, v.to_le_bytes().to_vec());
                        }
                    }
                }
                v.max(1).to_le_bytes().to_vec()
            }
            Int(lo, hi) if int < lo || int > hi => return Err(Errno::EINVAL),
            // -1 is the default; TCP keeps the ECN bits its own.
            Int(..) if level == IPPROTO_IPV6 && name == IPV6_TCLASS => {
                let v = int.max(0);
                (if self.tcp() { v & !3 } else { v }).to_le_bytes().to_vec()
            }
            // Kept as retransmissions, reported as the seconds they take.
            Int(..) if level == IPPROTO_TCP && name == TCP_DEFER_ACCEPT => {
                retrans_to_secs(secs_to_retrans(int)).to_le_bytes().to_vec()
            }
            Int(..) | Priority => int.to_le_bytes().to_vec(),
            Hops if !(-1..=255).contains(&int) => return Err(Errno::EINVAL),
            Hops => int.to_le_bytes().to_vec(),
            MaxSeg if int != 0 && !(88..=65535).contains(&int) => return Err(Errno::EINVAL),
            // 0: the kernel's (536 before a connection), as reported.
            MaxSeg if int == 0 => 536i32.to_le_bytes().to_vec(),
            MaxSeg => int.to_le_bytes().to_vec(),
            Linger2 => (if int < 0 { -1 } else { int.min(LINGER2_MAX) })
                .to_le_bytes()
                .to_vec(),
            WindowClamp => (if int == 0 { 0 } else { int.max(1152) })
                .to_le_bytes()
                .to_vec(),
            IpByte(rule) => {
                let v = match rule {
                    // A byte; the ECN bits stay the kernel's on a TCP
                    // socket; a new TOS sets the priority
                    // (`rt_tos2priority`).
                    // Linux compares the int given (an ECN-masked one on
                    // TCP) with the byte kept: 256 is "new" every time.
                    IpRule::Tos => {
                        let old = self
                            .get(IPPROTO_IP, IP_TOS)
                            .ok()
                            .and_then(|v| v.first().copied())
                            .unwrap_or(0);
                        let tos = if self.tcp() {
                            (int & !3) | i32::from(old & 3)
                        } else {
                            int
                        };
                        if tos != i32::from(old) {
                            const PRIO: [i32; 8] = [0, 0, 2, 2, 6, 6, 4, 4];
                            let prio = PRIO[((tos & 0x1e) >> 2) as usize];
                            self.keep(SOL_SOCKET, SO_PRIORITY, prio.to_le_bytes().to_vec());
                        }
                        tos & 0xff
                    }
                    IpRule::Flag => i32::from(int != 0),
                    // Linux refuses a privileged value before it looks at
                    // the length.
                    IpRule::Transparent if int != 0 => return Err(Errno::EPERM),
                    _ if value.is_empty() => return Err(Errno::EINVAL),
                    IpRule::Ttl if int != -1 && !(1..=255).contains(&int) => {
                        return Err(Errno::EINVAL);
                    }
                    IpRule::Ttl => int,
                    IpRule::MulticastTtl if self.ty == SOCK_STREAM => return Err(Errno::EINVAL),
                    IpRule::MulticastTtl if int == -1 => 1,
                    IpRule::MulticastTtl if !(0..=255).contains(&int) => {
                        return Err(Errno::EINVAL);
                    }
                    IpRule::MulticastTtl => int,
                    IpRule::Loop => i32::from(int != 0),
                    IpRule::Transparent => 0,
                };
                v.to_le_bytes().to_vec()
            }
        };
        self.keep(level, name, stored);
        Ok(int)
    }

    fn keep(&mut self, level: u32, name: u32, value: Vec<u8>) {
        self.set.retain(|o| !(o.level == level && o.name == name));
        self.set.push(Opt { level, name, value });
    }

    /// `getsockopt`: the value's bytes (the caller truncates; an IP option
    /// read into fewer than four bytes is one byte, [`Options::ip_byte`]).
    /// `SO_ERROR` and `SO_ACCEPTCONN` are the socket's state, not kept here.
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
        let kind = self.kind(level, name, false)?;
        let (level, name) = Self::shared_bit(level, name);
        if let Some(o) = self.set.iter().find(|o| o.level == level && o.name == name) {
            let mut v = o.value.clone();
            match (level, name) {
                // Kept in seconds, -1 for "closed at once"; 0: the default.
                (IPPROTO_TCP, TCP_LINGER2) if v == 0i32.to_le_bytes() => {
                    v = FIN_TIMEOUT.to_le_bytes().to_vec();
                }
                (IPPROTO_IP, IP_TTL) if v == (-1i32).to_le_bytes() => {
                    v = 64i32.to_le_bytes().to_vec();
                }
                (IPPROTO_IPV6, IPV6_UNICAST_HOPS) if v == (-1i32).to_le_bytes() => {
                    v = 64i32.to_le_bytes().to_vec();
                }
                (IPPROTO_IPV6, IPV6_MULTICAST_HOPS) if v == (-1i32).to_le_bytes() => {
                    v = 1i32.to_le_bytes().to_vec();
                }
                _ => {}
            }
            return Ok(v);
        }
        let default: i32 = match (level, name) {
            // tcp_rmem/tcp_wmem defaults; UDP uses rmem/wmem_default.
            (SOL_SOCKET, SO_RCVBUF) if stream && self.inet() => TCP_RMEM_DEFAULT,
            (SOL_SOCKET, SO_SNDBUF) if stream && self.inet() => 16_384,
            (SOL_SOCKET, SO_RCVBUF | SO_SNDBUF) => 212_992,
            (SOL_SOCKET, SO_RCVLOWAT | SO_SNDLOWAT) => 1,
            (IPPROTO_IP, IP_TTL) | (IPPROTO_IPV6, IPV6_UNICAST_HOPS) => 64,
            (IPPROTO_IP, IP_MULTICAST_TTL | IP_MULTICAST_LOOP) => 1,
            (IPPROTO_IPV6, IPV6_MULTICAST_HOPS | IPV6_MULTICAST_LOOP) => 1,
            (IPPROTO_TCP, TCP_KEEPIDLE) => 7200,
            (IPPROTO_TCP, TCP_KEEPINTVL) => 75,
            (IPPROTO_TCP, TCP_KEEPCNT) => 9,
            (IPPROTO_TCP, TCP_SYNCNT) => 6,
            (IPPROTO_TCP, TCP_LINGER2) => FIN_TIMEOUT,
            (IPPROTO_TCP, TCP_MAXSEG) => 536,
            (IPPROTO_TCP, TCP_QUICKACK) => 1,
            _ => 0,
        };
        let mut v = default.to_le_bytes().to_vec();
        if kind == Kind::Linger {
            v.resize(8, 0);
        } else if kind == Kind::Timeval {
            v.resize(16, 0);
        }
        Ok(v)
    }

    /// Whether (level, name) is an IP option whose value Linux reads into
    /// a buffer of fewer than four bytes as a single byte (when 0..=255).
    pub fn ip_byte(level: u32, name: u32) -> bool {
        level == IPPROTO_IP
            && matches!(
                name,
                IP_TOS
                    | IP_TTL
                    | IP_MULTICAST_TTL
                    | IP_MULTICAST_LOOP
                    | IP_FREEBIND
                    | IP_TRANSPARENT
                    | IP_BIND_ADDRESS_NO_PORT
            )
    }

    /// Where an option is kept: IPv6's `IPV6_FREEBIND` and
    /// `IPV6_TRANSPARENT` set and show IPv4's bits.
    fn shared_bit(level: u32, name: u32) -> (u32, u32) {
        match (level, name) {
            (IPPROTO_IPV6, IPV6_FREEBIND) => (IPPROTO_IP, IP_FREEBIND),
            (IPPROTO_IPV6, IPV6_TRANSPARENT) => (IPPROTO_IP, IP_TRANSPARENT),
            other => other,
        }
    }

    /// An integer option's value as `getsockopt` reports it, or `default`.
    fn int_or(&self, level: u32, name: u32, default: i32) -> i32 {
        self.int(level, name).unwrap_or(default)
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
        // Time limits in ticks of the host's clock (250 Hz here): 1 µs
        // reads back as 4 ms.
        let mut tv = [0u8; 16];
        tv[8] = 1;
        assert_eq!(o.set(SOL_SOCKET, SO_RCVTIMEO, &tv), Ok(0));
        assert_eq!(o.timeout_ns(false), Some(4_000_000));
        // A low-water mark past half the buffer grows the buffer.
        assert_eq!(
            o.set(SOL_SOCKET, 18, &1_000_000i32.to_le_bytes()),
            Ok(1_000_000)
        );
        let u = Options::new(SOCK_DGRAM, AF_INET6);
        // UDP over IPv6 hands TCP options to `ipv6_getsockopt`; over IPv4
        // to `ip_getsockopt`, whose answer differs.
        assert_eq!(u.get(IPPROTO_TCP, TCP_NODELAY), Err(Errno::ENOPROTOOPT));
        let u4 = Options::new(SOCK_DGRAM, AF_INET);
        assert_eq!(u4.get(IPPROTO_TCP, TCP_NODELAY), Err(Errno::EOPNOTSUPP));
        assert_eq!(
            u.get(SOL_SOCKET, SO_RCVBUF),
            Ok(212_992i32.to_le_bytes().to_vec())
        );
        assert_eq!(u.get(IPPROTO_IPV6, 26), Ok(0i32.to_le_bytes().to_vec()));
    }
}
