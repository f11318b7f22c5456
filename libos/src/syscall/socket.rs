//! Sockets. The partition has no network stack yet (sockets through the
//! gateway's `/net` come with their own issue), so `socket` answers
//! `EAFNOSUPPORT`, which programs treat as "this family is not available"
//! (the JDK probes IPv6 this way at start-up). `socketpair(AF_UNIX)` gives a
//! connected pair built from a pipe: bytes written to the second descriptor
//! are read from the first, which is what the JDK's file dispatcher uses
//! it for (a descriptor to `dup2` over closed ones); a full-duplex pair
//! comes with sockets.

use crate::errno::Errno;

const AF_UNIX: u64 = 1;
const SOCK_TYPE_MASK: u64 = 0xf;
const SOCK_NONBLOCK: u64 = 0o4000;
const SOCK_CLOEXEC: u64 = 0o2000000;

/// `socket(domain, type, protocol)`.
pub fn socket(_: &[u64; 6]) -> Result<u64, Errno> {
    Err(Errno::EAFNOSUPPORT)
}

/// `socketpair(domain, type, protocol, sv)`.
pub fn socketpair(a: &[u64; 6]) -> Result<u64, Errno> {
    if a[0] != AF_UNIX {
        return Err(Errno::EAFNOSUPPORT);
    }
    if a[1] & SOCK_TYPE_MASK == 0 {
        return Err(Errno::EINVAL);
    }
    let flags = a[1] & (SOCK_NONBLOCK | SOCK_CLOEXEC);
    super::pipe::pipe2(&[a[3], flags, 0, 0, 0, 0])
}
