//! `shutdown(2)`: half-closing a connection (`shutdown wr` reaches the host
//! socket through the gateway's `ctl`).

use crate::errno::Errno;

/// `shutdown(fd, how)`.
pub fn shutdown(a: &[u64; 6]) -> Result<u64, Errno> {
    super::socket::with(a[0], |s| s.shutdown(a[1]).map(|()| 0))
}
