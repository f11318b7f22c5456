//! `sendto(2)`, `sendmsg(2)`: a TCP socket sends the bytes (a connected
//! stream ignores the address, as Linux's does); a UDP socket sends one
//! datagram to the address given or the connected peer. A `sendmsg`'s
//! pieces go to the gateway as one write.

use alloc::vec::Vec;

use crate::errno::Errno;
use crate::mm::user;
use crate::signal::sigpipe;
use crate::vfs::gather::Gather;

const MSG_OOB: u64 = 1;
const MSG_DONTWAIT: u64 = 0x40;
const MSG_NOSIGNAL: u64 = 0x4000;
/// The most gathered into one kernel copy (Linux sends in pieces too).
const MAX_SEND: u64 = 1 << 20;

fn send_bytes(fd: u64, data: &[u8], flags: u64, to: (u64, u64)) -> Result<u64, Errno> {
    if flags & MSG_OOB != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    let o = super::socket::object(fd)?;
    let s = o.socket().ok_or(Errno::ENOTSOCK)?;
    let dest = match to {
        (0, _) => None,
        (addr, len) => super::socket::get_addr(&s, addr, len)?,
    };
    let nonblock = o.nonblocking() || flags & MSG_DONTWAIT != 0;
    s.send_to(data, dest, nonblock).map(|n| n as u64)
}

/// Sends the program's `pieces`, copied into the kernel 1 MiB at a time
/// (a hole in the program's memory ends the send with the pieces before
/// it, or `EFAULT`): a
/// stream goes on piece by piece while each is taken whole, a datagram is
/// one message.
fn send_user(fd: u64, pieces: &[(u64, u64)], flags: u64, to: (u64, u64)) -> Result<u64, Errno> {
    // A Unix socket takes the bytes as Linux's does: a stream skb by skb,
    // a message whole (see `Gather`).
    if flags & MSG_OOB == 0
        && to.0 == 0
        && let Ok(o) = super::socket::object(fd)
        && let crate::fd::Object::Like(l) = &o
    {
        let nonblock = o.nonblocking() || flags & MSG_DONTWAIT != 0;
        if let Some(r) = l.write_from(&mut Gather::user(pieces, user::read_append), nonblock) {
            let quiet = flags & MSG_NOSIGNAL != 0 || !is_stream(fd);
            return r.map(|n| n as u64).map_err(|e| sigpipe(e, quiet));
        }
    }
    let want: u64 = pieces.iter().map(|p| p.1).sum();
    let mut total = 0u64;
    let mut data = Vec::with_capacity(want.min(MAX_SEND) as usize);
    let (mut i, mut off) = (0usize, 0u64);
    loop {
        data.clear();
        let mut hole = None;
        while (data.len() as u64) < MAX_SEND && i < pieces.len() {
            let (base, len) = pieces[i];
            let take = (len - off).min(MAX_SEND - data.len() as u64);
            if take > 0
                && let Err((_, e)) = user::read_append(&mut data, base + off, take)
            {
                // Linux sends nothing of the message it was copying.
                data.clear();
                hole = Some(e);
                break;
            }
            off += take;
            if off == len {
                (i, off) = (i + 1, 0);
            }
        }
        if data.is_empty() && hole.is_some() {
            return match hole {
                Some(e) if total == 0 => Err(e),
                _ => Ok(total),
            };
        }
        let n = match send_bytes(fd, &data, flags, to) {
            Ok(n) => n,
            Err(_) if total > 0 => return Ok(total),
            // Only a stream raises SIGPIPE (Linux's datagram sockets do
            // not), and only when nothing was sent.
            Err(e) => return Err(sigpipe(e, flags & MSG_NOSIGNAL != 0 || !is_stream(fd))),
        };
        total += n;
        // A datagram is one message; a stream stops at a short send, a
        // hole or its end.
        if !is_stream(fd) || n < data.len() as u64 || hole.is_some() || i == pieces.len() {
            return Ok(total);
        }
    }
}

/// Whether `fd` is a stream socket, TCP or Unix (sent in pieces; raises
/// `SIGPIPE`).
fn is_stream(fd: u64) -> bool {
    super::socket::object(fd).is_ok_and(|o| o.socket().is_some_and(|s| s.is_stream()))
}

/// `sendto(fd, buf, len, flags, dest_addr, addrlen)`.
pub fn sendto(a: &[u64; 6]) -> Result<u64, Errno> {
    user::check_range(a[1], a[2])?;
    send_user(a[0], &[(a[1], a[2])], a[3], (a[4], a[5]))
}

/// `sendmsg(fd, msg, flags)`.
pub fn sendmsg(a: &[u64; 6]) -> Result<u64, Errno> {
    let m = super::socket::MsgHdr::read(a[1])?;
    send_user(a[0], &m.iov, a[2], (m.name, m.name_len))
}

/// `sendmmsg(fd, msgvec, vlen, flags)`: `sendmsg` of each `mmsghdr` in
/// turn, each one's count in its `msg_len`; an error after the first message
/// ends the call with the count, as Linux's.
pub fn sendmmsg(a: &[u64; 6]) -> Result<u64, Errno> {
    let (fd, vec, vlen, flags) = (a[0], a[1], a[2].min(super::recv::MAX_MMSG), a[3]);
    let mut sent = 0;
    while sent < vlen {
        let hdr = vec + sent * super::recv::MMSGHDR;
        match sendmsg(&[fd, hdr, flags, 0, 0, 0]) {
            Ok(n) => user::copy_in(hdr + 56, &(n as u32).to_le_bytes())?,
            Err(e) if sent == 0 => return Err(e),
            Err(_) => break,
        }
        sent += 1;
    }
    Ok(sent)
}
