//! `recvfrom(2)`, `recvmsg(2)`: bytes from a TCP socket's receive buffer
//! (no source address: the length written is 0, as Linux's), or one
//! datagram of a UDP socket with its source (`MSG_TRUNC` as Linux:
//! the datagram's whole length returned, and set in `msg_flags`).

use alloc::vec::Vec;
use core::net::SocketAddr;

use crate::errno::Errno;
use crate::mm::user;
use crate::net::addr;

const MSG_OOB: u64 = 1;
const MSG_PEEK: u64 = 2;
const MSG_TRUNC: u64 = 0x20;
const MSG_DONTWAIT: u64 = 0x40;
const MSG_WAITALL: u64 = 0x100;
/// The most one call returns.
const MAX_RECV: u64 = 1 << 20;

/// What a receive got: the bytes, the source as the socket's family
/// encodes it (datagrams), and the datagram's whole length.
struct Received {
    data: Vec<u8>,
    from: Option<Vec<u8>>,
    len: usize,
}

fn recv_bytes(fd: u64, max: u64, flags: u64) -> Result<Received, Errno> {
    if flags & MSG_OOB != 0 {
        return Err(Errno::EINVAL);
    }
    let o = super::socket::object(fd)?;
    let s = o.socket().ok_or(Errno::ENOTSOCK)?;
    let nonblock = o.nonblocking() || flags & MSG_DONTWAIT != 0;
    let (data, from, len) = s.recv_from(
        max.min(MAX_RECV) as usize,
        nonblock,
        flags & MSG_PEEK != 0,
        flags & MSG_WAITALL != 0,
    )?;
    let family = s.family();
    Ok(Received {
        data,
        from: from.map(|f: SocketAddr| addr::encode(f, family)),
        len,
    })
}

/// `EFAULT` before anything is taken when the buffer `pieces` has a hole
/// in its first `want` bytes (see `read::stream_room`); else `want`. A
/// datagram received (not peeked at) into a hole is taken, and lost with
/// `EFAULT` when it is copied out, as Linux drops it.
fn room(fd: u64, pieces: &[(u64, u64)], want: u64, flags: u64) -> Result<u64, Errno> {
    let want = want.min(MAX_RECV);
    if user::writable_prefix(pieces, want) >= want {
        return Ok(want);
    }
    // A bad descriptor is reported before a bad buffer.
    let o = super::socket::object(fd)?;
    match &o {
        crate::fd::Object::Like(l) if l.taken_before_copy() && flags & MSG_PEEK == 0 => Ok(want),
        _ => Err(Errno::EFAULT),
    }
}

/// `recvfrom(fd, buf, len, flags, src_addr, addrlen)`.
pub fn recvfrom(a: &[u64; 6]) -> Result<u64, Errno> {
    user::check_range(a[1], a[2])?;
    let max = room(a[0], &[(a[1], a[2])], a[2], a[3])?;
    let Received { data, from, len } = recv_bytes(a[0], max, a[3])?;
    user::copy_in(a[1], &data)?;
    if a[4] != 0 {
        match &from {
            Some(f) => super::socket::put_addr(a[4], a[5], f)?,
            None => user::copy_in(a[5], &0u32.to_le_bytes())?,
        }
    }
    Ok(if a[3] & MSG_TRUNC != 0 {
        len
    } else {
        data.len()
    } as u64)
}

/// `recvmsg(fd, msg, flags)`.
pub fn recvmsg(a: &[u64; 6]) -> Result<u64, Errno> {
    let super::socket::MsgHdr { name, iov, .. } = super::socket::MsgHdr::read(a[1])?;
    let total: u64 = iov.iter().map(|&(_, l)| l).fold(0, u64::saturating_add);
    for &(base, len) in &iov {
        user::check_range(base, len)?;
    }
    let max = room(a[0], &iov, total, a[2])?;
    let Received { data, from, len } = recv_bytes(a[0], max, a[2])?;
    let mut at = 0usize;
    for (base, len) in iov {
        if at == data.len() {
            break;
        }
        let n = (len as usize).min(data.len() - at);
        user::copy_in(base, &data[at..at + n])?;
        at += n;
    }
    match (&from, name) {
        (Some(f), n) if n != 0 => super::socket::put_addr(n, a[1] + 8, f)?,
        _ => user::copy_in(a[1] + 8, &0u32.to_le_bytes())?,
    }
    // No control messages; MSG_TRUNC when the datagram did not fit.
    user::copy_in(a[1] + 40, &0u64.to_le_bytes())?;
    let flags = if len > data.len() {
        MSG_TRUNC as u32
    } else {
        0
    };
    user::copy_in(a[1] + 48, &flags.to_le_bytes())?;
    Ok(if a[2] & MSG_TRUNC != 0 {
        len
    } else {
        data.len()
    } as u64)
}

/// `MSG_WAITFORONE`: `recvmmsg` waits for the first message only.
const MSG_WAITFORONE: u64 = 0x10000;
/// The most messages one `recvmmsg`/`sendmmsg` handles (`UIO_MAXIOV`).
pub(super) const MAX_MMSG: u64 = 1024;
/// `sizeof(struct mmsghdr)`: a `msghdr` and the length received or sent.
pub(super) const MMSGHDR: u64 = 64;

/// `recvmmsg(fd, msgvec, vlen, flags, timeout)`: `recvmsg` into each
/// `mmsghdr` in turn, each one's length in its `msg_len`. As Linux's, the
/// time limit is looked at only after each message (a wait for one is not
/// cut short), and the time left is written back; an error after the first
/// message ends the call with the count.
pub fn recvmmsg(a: &[u64; 6]) -> Result<u64, Errno> {
    let (fd, vec, vlen, mut flags, timeout) = (a[0], a[1], a[2].min(MAX_MMSG), a[3], a[4]);
    let deadline = super::poll::timespec_deadline(timeout)?;
    let mut got = 0;
    while got < vlen {
        let hdr = vec + got * MMSGHDR;
        match recvmsg(&[fd, hdr, flags & !MSG_WAITFORONE, 0, 0, 0]) {
            Ok(n) => user::copy_in(hdr + 56, &(n as u32).to_le_bytes())?,
            Err(e) if got == 0 => return Err(e),
            Err(_) => break,
        }
        got += 1;
        if flags & MSG_WAITFORONE != 0 {
            flags |= MSG_DONTWAIT;
        }
        if deadline.is_some_and(|d| crate::time::monotonic_ns() >= d) {
            break;
        }
    }
    if let Some(d) = deadline {
        let left = d.saturating_sub(crate::time::monotonic_ns());
        let mut ts = ((left / 1_000_000_000) as i64).to_le_bytes().to_vec();
        ts.extend_from_slice(&((left % 1_000_000_000) as i64).to_le_bytes());
        user::copy_in(timeout, &ts)?;
    }
    Ok(got)
}
