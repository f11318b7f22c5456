//! `accept(2)`, `accept4(2)`: the next call the acceptor took.

use alloc::sync::Arc;

use super::socket::{SOCK_CLOEXEC, SOCK_NONBLOCK};
use crate::errno::Errno;
use crate::fd::{self, O_NONBLOCK, Object};
use crate::net::addr;

/// `accept(fd, addr, addrlen)`.
pub fn accept(a: &[u64; 6]) -> Result<u64, Errno> {
    accept4(&[a[0], a[1], a[2], 0, 0, 0])
}

/// `accept4(fd, addr, addrlen, flags)`.
pub fn accept4(a: &[u64; 6]) -> Result<u64, Errno> {
    let flags = a[3];
    if flags & !(SOCK_NONBLOCK | SOCK_CLOEXEC) != 0 {
        return Err(Errno::EINVAL);
    }
    let (s, family, peer) = super::socket::with(a[0], |s| {
        // The buffers are checked before a call is taken off the queue.
        if a[1] != 0 {
            crate::mm::user::slice(a[2], 4)?;
        }
        let status = if flags & SOCK_NONBLOCK != 0 {
            O_NONBLOCK
        } else {
            0
        };
        let (new, peer) = s.accept(status)?;
        Ok((new, s.family(), peer))
    })?;
    let bytes = addr::encode(peer.unwrap_or_else(|| addr::unspecified(family)), family);
    let fd = fd::install_object(Object::Like(Arc::new(s)), flags & SOCK_CLOEXEC != 0)?;
    if let Err(e) = super::socket::put_addr(a[1], a[2], &bytes) {
        let _ = fd::close(fd);
        return Err(e);
    }
    Ok(fd)
}
