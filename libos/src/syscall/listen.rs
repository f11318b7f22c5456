//! `listen(2)`: the socket's acceptor keeps a call waiting at the gateway.

use crate::errno::Errno;

/// `listen(fd, backlog)`.
pub fn listen(a: &[u64; 6]) -> Result<u64, Errno> {
    super::socket::with(a[0], |s| s.listen(a[1] as i32).map(|()| 0))
}
