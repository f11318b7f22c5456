//! `getsockname(2)`, `getpeername(2)`.

use crate::errno::Errno;
use crate::net::addr;

/// An unnamed Unix socket's address: the family alone.
const UNNAMED: [u8; 2] = [1, 0];

/// `getsockname(fd, addr, addrlen)`.
pub fn getsockname(a: &[u64; 6]) -> Result<u64, Errno> {
    super::socket::with(a[0], |s| {
        if let crate::net::AnySocket::Unix(_) = s {
            super::socket::put_addr(a[1], a[2], &UNNAMED)?;
            return Ok(0);
        }
        super::socket::put_addr(a[1], a[2], &addr::encode(s.local(), s.family()))?;
        Ok(0)
    })
}

/// `getpeername(fd, addr, addrlen)`.
pub fn getpeername(a: &[u64; 6]) -> Result<u64, Errno> {
    super::socket::with(a[0], |s| {
        if let crate::net::AnySocket::Unix(_) = s {
            super::socket::put_addr(a[1], a[2], &UNNAMED)?;
            return Ok(0);
        }
        let peer = s.remote()?;
        super::socket::put_addr(a[1], a[2], &addr::encode(peer, s.family()))?;
        Ok(0)
    })
}
