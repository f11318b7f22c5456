//! `sendto(2)`, `sendmsg(2)`: a TCP socket sends the bytes (a connected
//! stream ignores the address, as Linux's does); a UDP socket sends one
//! datagram to the address given or the connected peer. A `sendmsg`'s
//! pieces go to the gateway as one write.

use alloc::vec::Vec;

use crate::errno::Errno;
use crate::mm::user;
use crate::signal::sigpipe;

const MSG_OOB: u64 = 1;
const MSG_DONTWAIT: u64 = 0x40;
const MSG_NOSIGNAL: u64 = 0x4000;
/// The most one call gathers (Linux sends in pieces too).
const MAX_SEND: u64 = 1 << 20;

fn send_bytes(fd: u64, data: &[u8], flags: u64, to: (u64, u64)) -> Result<u64, Errno> {
    if flags & MSG_OOB != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    let o = super::socket::object(fd)?;
    let s = o.socket().ok_or(Errno::ENOTSOCK)?;
    let dest = match to {
        (0, _) => None,
        (addr, len) => Some(super::socket::get_addr(&s, addr, len)?),
    };
    let nonblock = o.nonblocking() || flags & MSG_DONTWAIT != 0;
    // Only a stream raises SIGPIPE (Linux's datagram sockets do not).
    let stream = matches!(s, crate::net::AnySocket::Stream(_));
    s.send_to(data, dest, nonblock)
        .map(|n| n as u64)
        .map_err(|e| sigpipe(e, flags & MSG_NOSIGNAL != 0 || !stream))
}

/// `sendto(fd, buf, len, flags, dest_addr, addrlen)`.
pub fn sendto(a: &[u64; 6]) -> Result<u64, Errno> {
    send_bytes(a[0], user::slice(a[1], a[2])?, a[3], (a[4], a[5]))
}

/// `sendmsg(fd, msg, flags)`.
pub fn sendmsg(a: &[u64; 6]) -> Result<u64, Errno> {
    let m = super::socket::MsgHdr::read(a[1])?;
    let mut data = Vec::new();
    for (base, len) in m.iov {
        let take = len.min(MAX_SEND - data.len() as u64);
        data.extend_from_slice(user::slice(base, take)?);
        if data.len() as u64 >= MAX_SEND {
            break;
        }
    }
    send_bytes(a[0], &data, a[2], (m.name, m.name_len))
}
