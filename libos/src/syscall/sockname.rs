//! `getsockname(2)`, `getpeername(2)`.

use core::net::SocketAddr;

use crate::errno::Errno;
use crate::net::addr;

/// `addr` as a socket of `family` reports it; an unnamed Unix socket's
/// address is the family alone.
fn encoded(addr: Option<SocketAddr>, family: u16) -> alloc::vec::Vec<u8> {
    match addr {
        Some(a) => addr::encode(a, family),
        None => family.to_le_bytes().to_vec(),
    }
}

/// `getsockname(fd, addr, addrlen)`.
pub fn getsockname(a: &[u64; 6]) -> Result<u64, Errno> {
    super::socket::with(a[0], |s| {
        super::socket::put_addr(a[1], a[2], &encoded(s.local(), s.family()))?;
        Ok(0)
    })
}

/// `getpeername(fd, addr, addrlen)`.
pub fn getpeername(a: &[u64; 6]) -> Result<u64, Errno> {
    super::socket::with(a[0], |s| {
        let peer = s.remote()?;
        super::socket::put_addr(a[1], a[2], &encoded(peer, s.family()))?;
        Ok(0)
    })
}
