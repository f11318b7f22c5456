//! `getsockname(2)`, `getpeername(2)`.

use crate::errno::Errno;

/// `getsockname(fd, addr, addrlen)`.
pub fn getsockname(a: &[u64; 6]) -> Result<u64, Errno> {
    super::socket::with(a[0], |s| {
        super::socket::put_addr(a[1], a[2], &s.local())?;
        Ok(0)
    })
}

/// `getpeername(fd, addr, addrlen)`.
pub fn getpeername(a: &[u64; 6]) -> Result<u64, Errno> {
    super::socket::with(a[0], |s| {
        let peer = s.remote()?;
        super::socket::put_addr(a[1], a[2], &peer)?;
        Ok(0)
    })
}
