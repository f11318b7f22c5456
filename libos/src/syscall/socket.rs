//! `socket(2)` and `socketpair(2)`, and what the other socket calls share
//! (finding the socket behind a descriptor, writing a `sockaddr` back).
//!
//! TCP and UDP sockets (`AF_INET`, `AF_INET6` dual stack) go to the
//! gateway's `/net/tcp` and `/net/udp` (`net`); without them (another 9P
//! server, `--no-files`) `socket` answers `EAFNOSUPPORT`, which programs
//! take as "no network" (the JDK probes IPv6 this way at start-up).
//! `AF_UNIX` stream sockets live in the partition (`net::UnixSocket`):
//! `socketpair` gives a connected pair, `socket` one to bind (`bind.rs`)
//! or connect (`connect.rs`); other `socketpair` types a one-way pair built
//! from a pipe, other `socket` types `EAFNOSUPPORT`.

use alloc::sync::Arc;

use crate::errno::Errno;
use crate::fd::{self, O_NONBLOCK, Object};
use crate::mm::user;
use crate::net::addr::{AF_INET, AF_INET6, AF_UNIX};
use crate::net::{AnySocket, Dgram, SOCK_DGRAM, SOCK_SEQPACKET, SOCK_STREAM, Socket};

const SOCK_TYPE_MASK: u64 = 0xf;
/// `SOCK_NONBLOCK`.
pub const SOCK_NONBLOCK: u64 = 0o4000;
/// `SOCK_CLOEXEC`.
pub const SOCK_CLOEXEC: u64 = 0o2000000;
const IPPROTO_TCP: u64 = 6;
const IPPROTO_UDP: u64 = 17;

/// `socket(domain, type, protocol)`.
pub fn socket(a: &[u64; 6]) -> Result<u64, Errno> {
    let (domain, ty, protocol) = (a[0], a[1], a[2]);
    if ty & !(SOCK_TYPE_MASK | SOCK_NONBLOCK | SOCK_CLOEXEC) != 0 {
        return Err(Errno::EINVAL);
    }
    let status = if ty & SOCK_NONBLOCK != 0 {
        O_NONBLOCK
    } else {
        0
    };
    let cloexec = ty & SOCK_CLOEXEC != 0;
    if domain == u64::from(AF_UNIX) {
        return match unix_type(ty, protocol)? {
            t if t == SOCK_STREAM => fd::install_object(
                Object::Like(Arc::new(crate::net::UnixSocket::new(status))),
                cloexec,
            ),
            // Datagram and seqpacket Unix sockets to bind or connect are
            // not served (their pairs are).
            _ => Err(Errno::EAFNOSUPPORT),
        };
    }
    let family = match domain {
        d if d == u64::from(AF_INET) || d == u64::from(AF_INET6) => d as u16,
        _ => return Err(Errno::EAFNOSUPPORT),
    };
    if !crate::net::available("tcp") {
        return Err(Errno::EAFNOSUPPORT);
    }
    match (ty & SOCK_TYPE_MASK, protocol) {
        (t, 0 | IPPROTO_TCP) if t == u64::from(SOCK_STREAM) => {
            fd::install_object(Object::Like(Arc::new(Socket::new(family, status))), cloexec)
        }
        (t, 0 | IPPROTO_UDP) if t == u64::from(SOCK_DGRAM) && crate::net::available("udp") => {
            fd::install_object(Object::Like(Arc::new(Dgram::new(family, status))), cloexec)
        }
        // SOCK_RAW, SOCK_SEQPACKET, other protocols: not served.
        (1..=6, _) => Err(Errno::EPROTONOSUPPORT),
        _ => Err(Errno::EINVAL),
    }
}

/// The type of a Unix socket asked for with `ty` (flags included) and
/// `protocol`, in Linux's order of errors (`__sock_create`, `unix_create`):
/// `SOCK_RAW` is a datagram socket.
fn unix_type(ty: u64, protocol: u64) -> Result<u32, Errno> {
    const SOCK_MAX: u64 = 11;
    let t = ty & SOCK_TYPE_MASK;
    if t >= SOCK_MAX {
        return Err(Errno::EINVAL);
    }
    if protocol != 0 && protocol != 1 {
        return Err(Errno::EPROTONOSUPPORT);
    }
    match t as u32 {
        SOCK_STREAM => Ok(SOCK_STREAM),
        // SOCK_RAW.
        SOCK_DGRAM | 3 => Ok(SOCK_DGRAM),
        SOCK_SEQPACKET => Ok(SOCK_SEQPACKET),
        _ => Err(Errno::ESOCKTNOSUPPORT),
    }
}

/// `socketpair(domain, type, protocol, sv)`: Unix stream, datagram and
/// seqpacket pairs.
pub fn socketpair(a: &[u64; 6]) -> Result<u64, Errno> {
    if a[0] != u64::from(AF_UNIX) {
        return Err(Errno::EAFNOSUPPORT);
    }
    if a[1] & !(SOCK_TYPE_MASK | SOCK_NONBLOCK | SOCK_CLOEXEC) != 0 {
        return Err(Errno::EINVAL);
    }
    let ty = unix_type(a[1], a[2])?;
    let flags = a[1] & (SOCK_NONBLOCK | SOCK_CLOEXEC);
    let status = if flags & SOCK_NONBLOCK != 0 {
        O_NONBLOCK
    } else {
        0
    };
    let (x, y): (Arc<dyn crate::fd::FileLike>, Arc<dyn crate::fd::FileLike>) = if ty == SOCK_STREAM
    {
        let (x, y) = crate::net::unix_pair(status);
        (Arc::new(x), Arc::new(y))
    } else {
        let (x, y) = crate::net::unix_msg_pair(ty, status);
        (Arc::new(x), Arc::new(y))
    };
    fd::install_pair(
        Object::Like(x),
        Object::Like(y),
        flags & SOCK_CLOEXEC != 0,
        a[3],
    )
}

/// The open file description behind `fd`, which must be a socket
/// (`ENOTSOCK` otherwise).
pub fn object(fd: u64) -> Result<Object, Errno> {
    let o = fd::object(fd)?;
    if o.socket().is_none() {
        return Err(Errno::ENOTSOCK);
    }
    Ok(o)
}

/// Runs `f` on the socket behind `fd`.
pub fn with<R>(fd: u64, f: impl FnOnce(&AnySocket<'_>) -> Result<R, Errno>) -> Result<R, Errno> {
    let o = object(fd)?;
    f(&o.socket().ok_or(Errno::ENOTSOCK)?)
}

/// Writes the `sockaddr` `bytes` to the program's `addr` with room given
/// by `*len`, as Linux does: truncated to the room, `*len` set to the
/// whole length. Nothing is written when `addr` is null.
pub fn put_addr(addr: u64, len: u64, bytes: &[u8]) -> Result<(), Errno> {
    if addr == 0 {
        return Ok(());
    }
    let room = &user::read_array::<4>(len)?;
    let room = i32::from_le_bytes([room[0], room[1], room[2], room[3]]);
    if room < 0 {
        return Err(Errno::EINVAL);
    }
    let n = bytes.len().min(room as usize);
    user::copy_in(addr, &bytes[..n])?;
    user::copy_in(len, &(bytes.len() as u32).to_le_bytes())
}

/// The program's `sockaddr` bytes at `addr` (`len` bytes).
pub fn addr_bytes(addr: u64, len: u64) -> Result<alloc::vec::Vec<u8>, Errno> {
    if len > 128 {
        return Err(Errno::EINVAL);
    }
    user::read_vec(addr, len)
}

/// The program's `sockaddr` at `addr` (`len` bytes) for a send on socket
/// `s`: `None` where the socket ignores it (a seqpacket pair's end); a
/// Unix stream takes none, a Unix datagram end finds no one bound to it in
/// the partition (their errors).
pub fn get_addr(
    s: &AnySocket<'_>,
    addr: u64,
    len: u64,
) -> Result<Option<core::net::SocketAddr>, Errno> {
    match s {
        AnySocket::Unix(u) => Err(u.addressed_send()),
        AnySocket::UnixMsg(u) => {
            crate::net::UnixName::parse(&addr_bytes(addr, len)?)?;
            u.addressed_send().map_or(Ok(None), Err)
        }
        _ => crate::net::addr::decode(&addr_bytes(addr, len)?, s.family()).map(Some),
    }
}

/// The fields of a program's `struct msghdr` that `sendmsg`/`recvmsg` use.
pub struct MsgHdr {
    /// `msg_name` (0: none).
    pub name: u64,
    /// `msg_namelen`.
    pub name_len: u64,
    /// `msg_iov` as (base, length) pairs.
    pub iov: alloc::vec::Vec<(u64, u64)>,
}

impl MsgHdr {
    /// Reads the `msghdr` at `addr`.
    pub fn read(addr: u64) -> Result<MsgHdr, Errno> {
        let hdr = &user::read_array::<56>(addr)?;
        let word = |at: usize| u64::from_le_bytes(hdr[at..at + 8].try_into().unwrap_or([0; 8]));
        Ok(MsgHdr {
            name: word(0),
            name_len: word(8) & 0xffff_ffff,
            iov: super::read::iovecs(word(16), word(24))?,
        })
    }
}
