//! `AF_UNIX` datagram and seqpacket socket pairs (`socketpair`): two
//! connected ends, each with a queue of whole messages. A read takes one
//! message (a short buffer truncates it and the rest is gone, `MSG_TRUNC`);
//! empty messages are messages. As Linux's `af_unix`, a sender is charged
//! each message it has queued at its peer at the kernel's size for it
//! (`truesize`) against its send buffer: it waits (or gets `EAGAIN`) once
//! the charge reaches `SO_SNDBUF`, and is writable again once the charge
//! is at most a quarter of it. The peer's close: a seqpacket end sees the
//! end of file, `EPIPE` on sends and `ECONNRESET` once if the peer went
//! with messages unread; a datagram end's next send gets `ECONNREFUSED`
//! (its queue is dropped, as Linux's `unix_dgram_disconnected`), later
//! ones `ENOTCONN`. Sockets bound to names are not served here
//! (`socket(AF_UNIX, SOCK_DGRAM)` is refused).

use alloc::collections::VecDeque;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::AtomicU32;

use super::addr::{AF_UNIX, UnixName};
use super::charge::truesize;
use super::options::Options;
use crate::errno::Errno;
use crate::fd::FileLike;
use crate::sched::WaitQueue;
use crate::sync::IrqLock;
use crate::vfs::gather::Gather;
use crate::vfs::poll_bits::{
    POLLERR, POLLHUP, POLLIN, POLLOUT, POLLRDHUP, POLLRDNORM, POLLWRBAND, POLLWRNORM,
};
use crate::vfs::{Wakes, readiness_changed};

/// `SOCK_SEQPACKET`.
pub const SOCK_SEQPACKET: u32 = 5;
/// Linux's `RCV_SHUTDOWN` and `SEND_SHUTDOWN` bits.
const RCV: u8 = 1;
const SEND: u8 = 2;
/// `net.core.wmem_default`: a Unix socket's send buffer.
const SNDBUF: usize = 212_992;
/// `SO_SNDBUF`, `SO_ERROR`, `SO_PEERCRED`.
const SO_SNDBUF: u32 = 7;
const SO_PEERCRED: u32 = 17;

/// One end's state.
#[derive(Default)]
struct End {
    /// Messages for this end, each with what its sender was charged.
    queue: VecDeque<(Vec<u8>, usize)>,
    /// What this end's messages still queued at the peer were charged.
    wmem: usize,
    /// `RCV` and `SEND` shutdown bits.
    shut: u8,
    /// The end was closed.
    closed: bool,
    /// A datagram end that found its peer gone: no peer any more.
    disconnected: bool,
    /// A pending error (`SO_ERROR`; taken by the next call that reports it).
    err: Option<Errno>,
    /// The send buffer (`SO_SNDBUF`, doubled as Linux keeps it).
    sndbuf: usize,
}

/// The two ends of a pair.
struct Pair {
    ty: u32,
    ends: IrqLock<[End; 2]>,
    /// Readers of end `i` waiting for a message.
    readable: [WaitQueue; 2],
    /// Writers of end `i` waiting for room.
    writable: [WaitQueue; 2],
    /// End `i`'s wake-ups (epoll's edges).
    wakes: [Wakes; 2],
}

impl Pair {
    /// Wakes everyone of end `i` (a state change: shutdown, close).
    fn wake_all(&self, i: usize) {
        self.wakes[i].all();
        self.readable[i].wake_all();
        self.writable[i].wake_all();
    }
}

/// One end of a datagram or seqpacket pair (an open file description).
pub struct UnixMsg {
    pair: Arc<Pair>,
    side: usize,
    flags: AtomicU32,
    opts: IrqLock<Options>,
}

/// A connected pair of type `ty` (`SOCK_DGRAM` or `SOCK_SEQPACKET`), both
/// ends with the status flags `flags`.
pub fn pair(ty: u32, flags: u32) -> (UnixMsg, UnixMsg) {
    let end = || End {
        sndbuf: SNDBUF,
        ..End::default()
    };
    let pair = Arc::new(Pair {
        ty,
        ends: IrqLock::new([end(), end()]),
        readable: [WaitQueue::new(), WaitQueue::new()],
        writable: [WaitQueue::new(), WaitQueue::new()],
        wakes: [Wakes::new(), Wakes::new()],
    });
    let side = |side| UnixMsg {
        pair: pair.clone(),
        side,
        // O_RDWR.
        flags: AtomicU32::new(flags | 2),
        opts: IrqLock::new(Options::new(ty, AF_UNIX)),
    };
    (side(0), side(1))
}

/// Whether end `e` is writable (Linux's `unix_writable`, whose count of
/// the charge starts at 1: `sk_wmem_alloc`'s own reference).
fn writable(e: &End) -> bool {
    (e.wmem + 1) * 4 <= e.sndbuf
}

impl UnixMsg {
    /// Whether it is a seqpacket end (else a datagram one).
    pub fn seqpacket(&self) -> bool {
        self.pair.ty == SOCK_SEQPACKET
    }

    /// `connect`: a seqpacket end is connected already; a datagram end
    /// would connect to a bound name, and none is bound in the partition
    /// (Linux: `ECONNREFUSED` for a name nobody has).
    pub fn connect(&self, to: &[u8]) -> Result<(), Errno> {
        if self.seqpacket() {
            return Err(Errno::EISCONN);
        }
        UnixName::parse(to)?;
        Err(Errno::ECONNREFUSED)
    }

    fn peer(&self) -> usize {
        1 - self.side
    }

    /// A blocking call's time limit (`SO_SNDTIMEO`/`SO_RCVTIMEO`).
    fn deadline(&self, send: bool) -> Option<u64> {
        self.opts
            .lock()
            .timeout_ns(send)
            .map(|ns| crate::time::monotonic_ns().saturating_add(ns))
    }

    /// Sends `data` as one message, in Linux's order of checks
    /// (`unix_seqpacket_sendmsg`, `unix_dgram_sendmsg`,
    /// `sock_alloc_send_pskb`, Linux 6.18: the size, then the buffer, then
    /// the peer).
    pub fn send(&self, data: &[u8], nonblock: bool) -> Result<usize, Errno> {
        self.send_from(&mut Gather::kernel(data), nonblock)
    }

    /// [`send`](Self::send) of a write's bytes: a message that meets a hole
    /// in the program's memory fails with `EFAULT` where Linux copies it,
    /// after the checks of size and buffer, before those of the peer.
    pub fn send_from(&self, src: &mut Gather<'_>, nonblock: bool) -> Result<usize, Errno> {
        let (me, peer) = (self.side, self.peer());
        let p = &*self.pair;
        let deadline = self.deadline(true);
        let len = src.len();
        let data = src.whole();
        let charge = truesize(len);
        loop {
            let mut ends = p.ends.lock();
            if self.seqpacket()
                && let Some(e) = ends[me].err.take()
            {
                return Err(e);
            }
            if len > ends[me].sndbuf.saturating_sub(32) {
                return Err(Errno::EMSGSIZE);
            }
            if let Some(e) = ends[me].err.take() {
                return Err(e);
            }
            if ends[me].shut & SEND != 0 {
                return Err(Errno::EPIPE);
            }
            if ends[me].wmem >= ends[me].sndbuf {
                drop(ends);
                if nonblock {
                    return Err(Errno::EAGAIN);
                }
                let r = p.writable[me].wait_while_interruptible_until(deadline, || {
                    let e = &p.ends.lock()[me];
                    e.wmem >= e.sndbuf && e.shut & SEND == 0 && e.err.is_none()
                });
                match r {
                    Err(e) => return Err(e),
                    Ok(true) => return Err(Errno::EAGAIN),
                    Ok(false) => continue,
                }
            }
            let data = data?;
            if ends[me].disconnected {
                return Err(Errno::ENOTCONN);
            }
            if ends[peer].closed {
                if self.seqpacket() {
                    return Err(Errno::EPIPE);
                }
                // The peer went: this end forgets it and drops what it sent.
                let [a, b] = &mut *ends;
                let (mine, theirs) = if me == 0 { (a, b) } else { (b, a) };
                mine.disconnected = true;
                for (_, c) in mine.queue.drain(..) {
                    theirs.wmem = theirs.wmem.saturating_sub(c);
                }
                drop(ends);
                readiness_changed();
                return Err(Errno::ECONNREFUSED);
            }
            if ends[peer].shut & RCV != 0 {
                return Err(Errno::EPIPE);
            }
            ends[peer].queue.push_back((data.to_vec(), charge));
            ends[me].wmem += charge;
            break;
        }
        p.wakes[peer].input();
        p.readable[peer].wake_all();
        readiness_changed();
        Ok(len)
    }

    /// Receives one message: (up to `max` of its bytes, its length).
    pub fn recv(&self, max: usize, nonblock: bool, peek: bool) -> Result<(Vec<u8>, usize), Errno> {
        let (me, peer) = (self.side, self.peer());
        let p = &*self.pair;
        let deadline = self.deadline(false);
        loop {
            let mut ends = p.ends.lock();
            if let Some(e) = ends[me].err.take() {
                return Err(e);
            }
            if peek && let Some((m, _)) = ends[me].queue.front() {
                return Ok((m[..m.len().min(max)].to_vec(), m.len()));
            }
            if let Some((mut m, charge)) = ends[me].queue.pop_front() {
                let len = m.len();
                m.truncate(max);
                // The sender's charge goes; it may send again (Linux's
                // `sock_wfree` and `unix_write_space`).
                let sender = &mut ends[peer];
                sender.wmem = sender.wmem.saturating_sub(charge);
                let room = writable(sender);
                drop(ends);
                // Every message read while the sender is writable is a
                // wake-up keyed EPOLLOUT (an edge), as `unix_write_space`.
                if room {
                    p.writable[peer].wake_all();
                    p.wakes[peer].output();
                }
                readiness_changed();
                return Ok((m, len));
            }
            let shut = ends[me].shut & RCV != 0;
            drop(ends);
            if nonblock {
                // A seqpacket end shut for reading reads the end at once.
                return if shut && self.seqpacket() {
                    Ok((Vec::new(), 0))
                } else {
                    Err(Errno::EAGAIN)
                };
            }
            if shut {
                return Ok((Vec::new(), 0));
            }
            let r = p.readable[me].wait_while_interruptible_until(deadline, || {
                let e = &p.ends.lock()[me];
                e.queue.is_empty() && e.shut & RCV == 0 && e.err.is_none()
            });
            match r {
                Err(e) => return Err(e),
                Ok(true) => return Err(Errno::EAGAIN),
                Ok(false) => {}
            }
        }
    }

    /// `shutdown(how)`: a seqpacket end shuts its peer's other direction
    /// too; a datagram end only its own.
    pub fn shutdown(&self, how: u64) -> Result<(), Errno> {
        let mode = match how {
            0 => RCV,
            1 => SEND,
            2 => RCV | SEND,
            _ => return Err(Errno::EINVAL),
        };
        let (me, peer) = (self.side, self.peer());
        {
            let mut ends = self.pair.ends.lock();
            ends[me].shut |= mode;
            if self.seqpacket() && !ends[peer].closed {
                let back = (if mode & RCV != 0 { SEND } else { 0 })
                    | (if mode & SEND != 0 { RCV } else { 0 });
                ends[peer].shut |= back;
            }
        }
        self.pair.wake_all(me);
        if self.seqpacket() {
            self.pair.wake_all(peer);
        }
        readiness_changed();
        Ok(())
    }

    /// `getsockname`: an unnamed end.
    pub fn local(&self) -> Vec<u8> {
        UnixName::Unnamed.encode()
    }

    /// `getpeername`: the unnamed peer, `ENOTCONN` once a datagram end
    /// has forgotten it.
    pub fn remote(&self) -> Result<Vec<u8>, Errno> {
        if self.pair.ends.lock()[self.side].disconnected {
            return Err(Errno::ENOTCONN);
        }
        Ok(UnixName::Unnamed.encode())
    }

    /// `sendto` with an address: a seqpacket end ignores it; a datagram
    /// end would look the name up, and no bound datagram socket exists in
    /// the partition (Linux: `ECONNREFUSED` for a name nobody has).
    pub fn addressed_send(&self) -> Option<Errno> {
        (!self.seqpacket()).then_some(Errno::ECONNREFUSED)
    }

    /// `setsockopt`: `SO_SNDBUF` sets the send buffer.
    pub fn set_option(&self, level: u32, name: u32, value: &[u8]) -> Result<(), Errno> {
        let mut o = self.opts.lock();
        o.set(level, name, value)?;
        if level == super::options::SOL_SOCKET && name == SO_SNDBUF {
            let v = o.int(level, name).unwrap_or(SNDBUF as i32);
            let mut ends = self.pair.ends.lock();
            ends[self.side].sndbuf = v.max(0) as usize;
        }
        drop(o);
        // Room may have come.
        self.pair.writable[self.side].wake_all();
        readiness_changed();
        Ok(())
    }

    /// `getsockopt`.
    pub fn get_option(&self, level: u32, name: u32) -> Result<Vec<u8>, Errno> {
        use super::options::{SO_ACCEPTCONN, SO_ERROR, SOL_SOCKET};
        let int = |v: i32| Ok(v.to_le_bytes().to_vec());
        match (level, name) {
            (SOL_SOCKET, SO_ERROR) => {
                let e = self.pair.ends.lock()[self.side].err.take();
                int(e.map_or(0, |e| e.0 as i32))
            }
            (SOL_SOCKET, SO_ACCEPTCONN) => int(0),
            (SOL_SOCKET, SO_PEERCRED) => {
                let (pid, (uid, gid)) = (crate::vfs::pid() as u32, crate::vfs::identity::ids());
                let mut v = pid.to_le_bytes().to_vec();
                v.extend_from_slice(&uid.to_le_bytes());
                v.extend_from_slice(&gid.to_le_bytes());
                Ok(v)
            }
            _ => self.opts.lock().get(level, name),
        }
    }
}

impl Drop for UnixMsg {
    /// The end closes: its queue goes (uncharging the peer), and a
    /// seqpacket peer sees both directions shut, with `ECONNRESET` if
    /// bytes were left unread (Linux's `unix_release_sock`).
    fn drop(&mut self) {
        let (me, peer) = (self.side, self.peer());
        {
            let mut ends = self.pair.ends.lock();
            // Left unread: as measured on Linux 6.18, a single empty
            // message does not count; bytes or two messages do.
            let q = &ends[me].queue;
            let unread = q.len() > 1 || q.iter().any(|(m, _)| !m.is_empty());
            let charged: usize = ends[me].queue.drain(..).map(|(_, c)| c).sum();
            ends[me].closed = true;
            let other = &mut ends[peer];
            other.wmem = other.wmem.saturating_sub(charged);
            if self.pair.ty == SOCK_SEQPACKET && !other.closed {
                other.shut = RCV | SEND;
                if unread {
                    other.err = Some(Errno::ECONNRESET);
                }
            }
        }
        self.pair.wake_all(peer);
        readiness_changed();
    }
}

impl FileLike for UnixMsg {
    /// A read of nothing returns at once (Linux's `sock_read_iter`).
    fn read(&self, max: usize, nonblock: bool) -> Result<Vec<u8>, Errno> {
        if max == 0 {
            return Ok(Vec::new());
        }
        self.recv(max, nonblock, false).map(|(d, _)| d)
    }

    /// No `SIGPIPE` for a message socket (Linux raises it for streams only).
    fn write(&self, data: &[u8], nonblock: bool) -> Result<usize, Errno> {
        self.send(data, nonblock)
    }

    fn write_from(&self, src: &mut Gather<'_>, nonblock: bool) -> Option<Result<usize, Errno>> {
        Some(self.send_from(src, nonblock))
    }

    fn wake_keys(&self) -> (u16, u16) {
        crate::vfs::poll_bits::SOCKET_WAKE_KEYS
    }

    /// Linux's `unix_dgram_poll`.
    fn poll(&self) -> u16 {
        let ends = self.pair.ends.lock();
        let e = &ends[self.side];
        let mut ev = 0;
        if e.err.is_some() {
            ev |= POLLERR;
        }
        if e.shut & RCV != 0 {
            ev |= POLLRDHUP | POLLIN | POLLRDNORM;
        }
        if e.shut == RCV | SEND {
            ev |= POLLHUP;
        }
        if !e.queue.is_empty() {
            ev |= POLLIN | POLLRDNORM;
        }
        if writable(e) {
            ev |= POLLOUT | POLLWRNORM | POLLWRBAND;
        }
        ev
    }

    fn wakes(&self) -> [u64; 3] {
        self.pair.wakes[self.side].get()
    }

    fn flags(&self) -> &AtomicU32 {
        &self.flags
    }

    /// `FIONREAD`: a datagram end's next message, a seqpacket end's all
    /// (`unix_inq_len`); `SIOCOUTQ`: what this end has queued at its peer.
    fn ioctl(&self, request: u64, arg: u64) -> Result<u64, Errno> {
        let (inq, outq) = {
            let ends = self.pair.ends.lock();
            let e = &ends[self.side];
            let inq = if self.seqpacket() {
                e.queue.iter().map(|(m, _)| m.len()).sum()
            } else {
                e.queue.front().map_or(0, |(m, _)| m.len())
            };
            (inq, e.wmem)
        };
        super::ioctl(AF_UNIX, request, arg, inq, outq)
    }

    fn mode(&self) -> u32 {
        0o140_777
    }

    fn own_inode(&self) -> bool {
        true
    }

    fn taken_before_copy(&self) -> bool {
        true
    }

    fn as_any(&self) -> &dyn core::any::Any {
        self
    }
}
