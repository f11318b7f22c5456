//! `recvfrom(2)`, `recvmsg(2)`: bytes from the socket's receive buffer. A
//! TCP socket reports no source address (the length written is 0) and no
//! control messages, as Linux's does.

use alloc::vec::Vec;

use crate::errno::Errno;
use crate::mm::user;

const MSG_OOB: u64 = 1;
const MSG_PEEK: u64 = 2;
const MSG_DONTWAIT: u64 = 0x40;
const MSG_WAITALL: u64 = 0x100;
/// The most one call returns.
const MAX_RECV: u64 = 1 << 20;

fn recv_bytes(fd: u64, max: u64, flags: u64) -> Result<Vec<u8>, Errno> {
    if flags & MSG_OOB != 0 {
        return Err(Errno::EINVAL);
    }
    let o = super::socket::object(fd)?;
    let s = o.socket().ok_or(Errno::ENOTSOCK)?;
    let nonblock = o.nonblocking() || flags & MSG_DONTWAIT != 0;
    s.recv(
        max.min(MAX_RECV) as usize,
        nonblock,
        flags & MSG_PEEK != 0,
        flags & MSG_WAITALL != 0,
    )
}

/// `recvfrom(fd, buf, len, flags, src_addr, addrlen)`.
pub fn recvfrom(a: &[u64; 6]) -> Result<u64, Errno> {
    user::check_range(a[1], a[2])?;
    let data = recv_bytes(a[0], a[2], a[3])?;
    user::copy_in(a[1], &data)?;
    if a[4] != 0 {
        user::copy_in(a[5], &0u32.to_le_bytes())?;
    }
    Ok(data.len() as u64)
}

/// `recvmsg(fd, msg, flags)`.
pub fn recvmsg(a: &[u64; 6]) -> Result<u64, Errno> {
    let hdr = user::slice(a[1], 56)?;
    let word = |at: usize| u64::from_le_bytes(hdr[at..at + 8].try_into().unwrap_or([0; 8]));
    let iov = super::read::iovecs(word(16), word(24))?;
    let total: u64 = iov.iter().map(|&(_, l)| l).fold(0, u64::saturating_add);
    for &(base, len) in &iov {
        user::check_range(base, len)?;
    }
    let data = recv_bytes(a[0], total, a[2])?;
    let mut at = 0usize;
    for (base, len) in iov {
        if at == data.len() {
            break;
        }
        let n = (len as usize).min(data.len() - at);
        user::copy_in(base, &data[at..at + n])?;
        at += n;
    }
    // No address, no control messages, no flags.
    user::copy_in(a[1] + 8, &0u32.to_le_bytes())?;
    user::copy_in(a[1] + 40, &0u64.to_le_bytes())?;
    user::copy_in(a[1] + 48, &0u32.to_le_bytes())?;
    Ok(data.len() as u64)
}
