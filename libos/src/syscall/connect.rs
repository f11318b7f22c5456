//! `connect(2)`: blocking, or non-blocking with `EINPROGRESS` and the
//! outcome in `POLLOUT` and `SO_ERROR`.

use crate::errno::Errno;

/// `connect(fd, addr, addrlen)`.
pub fn connect(a: &[u64; 6]) -> Result<u64, Errno> {
    super::socket::with(a[0], |s| {
        let addr = super::socket::get_addr(s, a[1], a[2])?;
        s.connect(addr).map(|()| 0)
    })
}
