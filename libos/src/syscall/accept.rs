//! `accept(2)`, `accept4(2)`: the next call the acceptor took (TCP), or
//! the next connection waiting (Unix).

use super::socket::{SOCK_CLOEXEC, SOCK_NONBLOCK};
use crate::errno::Errno;
use crate::fd::{self, O_NONBLOCK, Object};

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
    let o = super::socket::object(a[0])?;
    let s = o.socket().ok_or(Errno::ENOTSOCK)?;
    // The buffers are checked before a call is taken off the queue.
    if a[1] != 0 {
        crate::mm::user::check_readable(a[2], 4)?;
    }
    let status = if flags & SOCK_NONBLOCK != 0 {
        O_NONBLOCK
    } else {
        0
    };
    let (new, bytes) = s.accept(status, o.nonblocking())?;
    let fd = fd::install_object(Object::Like(new), flags & SOCK_CLOEXEC != 0)?;
    if let Err(e) = super::socket::put_addr(a[1], a[2], &bytes) {
        let _ = fd::close(fd);
        return Err(e);
    }
    Ok(fd)
}
