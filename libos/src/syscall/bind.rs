//! `bind(2)`: a TCP socket announces its address at the gateway at once
//! (the host socket is bound and listening), so `getsockname` after a
//! port-0 bind shows the host's real port, as on Linux.

use crate::errno::Errno;

/// `bind(fd, addr, addrlen)`.
pub fn bind(a: &[u64; 6]) -> Result<u64, Errno> {
    super::socket::with(a[0], |s| {
        let addr = super::socket::get_addr(s, a[1], a[2])?;
        s.bind(addr).map(|()| 0)
    })
}
