//! `socketpair(AF_UNIX, SOCK_STREAM)`: two connected, full-duplex
//! endpoints inside the partition, built from two pipes (one each way).
//! Reads, writes, `shutdown`, `poll` and close behave as Linux's Unix stream
//! sockets; Unix sockets bound to names (`bind`, `listen`, `connect`) are
//! not there yet.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use super::options::Options;
use crate::errno::Errno;
use crate::fd::FileLike;
use crate::sync::IrqLock;
use crate::vfs::pipe::{self, ReadEnd, WriteEnd};
use crate::vfs::poll_bits::{POLLERR, POLLHUP, POLLIN, POLLOUT, POLLRDNORM, POLLWRNORM};
use crate::vfs::readiness_changed;

const POLLWRBAND: u16 = 0x200;
const POLLRDHUP: u16 = 0x2000;

/// One end of a connected pair.
pub struct UnixStream {
    flags: AtomicU32,
    /// What the peer writes.
    rd: Arc<ReadEnd>,
    /// Where this end writes; `None` once shut down for writing (the peer
    /// then reads the end).
    wr: IrqLock<Option<Arc<WriteEnd>>>,
    /// The same pipe, kept after a shutdown: whether the peer shut reading
    /// down or went with bytes unread (this end's pending `ECONNRESET`).
    to_peer: Arc<WriteEnd>,
    shut_rd: AtomicBool,
    opts: IrqLock<Options>,
}

/// A connected pair; both ends get the status flags `flags`.
pub fn pair(flags: u32) -> (UnixStream, UnixStream) {
    let (r1, w1) = pipe::new(0);
    let (r2, w2) = pipe::new(0);
    let end = |rd: ReadEnd, wr: WriteEnd| {
        let wr = Arc::new(wr);
        UnixStream {
            flags: AtomicU32::new(flags | 2),
            rd: Arc::new(rd),
            wr: IrqLock::new(Some(wr.clone())),
            to_peer: wr,
            shut_rd: AtomicBool::new(false),
            opts: IrqLock::new(Options::new(super::SOCK_STREAM, super::addr::AF_UNIX)),
        }
    };
    (end(r1, w2), end(r2, w1))
}

impl UnixStream {
    /// `shutdown(how)`: 0 reading, 1 writing (the peer reads the end), 2 both.
    pub fn shutdown(&self, how: u64) -> Result<(), Errno> {
        if how > 2 {
            return Err(Errno::EINVAL);
        }
        if how != 1 {
            self.shut_rd.store(true, Ordering::SeqCst);
            // A reader blocked now gets the end, as Linux's unix_shutdown
            // wakes it.
            self.rd.shut_down();
        }
        if how != 0 {
            let wr = self.wr.lock().take();
            // Another thread blocked in `send` holds the write side too: it
            // wakes to EPIPE, and the peer reads the end now, not when that
            // send gives up (as Linux's unix_shutdown).
            if let Some(w) = &wr {
                w.shut_down();
            }
            drop(wr);
        }
        readiness_changed();
        Ok(())
    }

    /// Receives up to `max` bytes; with `peek` leaves them there; with
    /// `waitall` (blocking, no `peek`) waits for all `max` unless the end, a
    /// signal or a shutdown comes first (then what came), as Linux's
    /// `unix_stream_read_generic`.
    pub fn recv(
        &self,
        max: usize,
        nonblock: bool,
        peek: bool,
        waitall: bool,
    ) -> Result<Vec<u8>, Errno> {
        if max == 0 {
            // Linux looks at the queue as for one byte: 0 with data or at
            // the end, EAGAIN (or a wait) without.
            return self.recv(1, nonblock, true, false).map(|_| Vec::new());
        }
        let r = self.recv_bytes(max, nonblock, peek, waitall);
        // Nothing to read: a reset the peer's close left is reported first
        // (once), as Linux's `sock_error` before the end.
        match r {
            // MSG_WAITALL that ran dry took the pending error with it (and
            // returns what it got).
            Ok(ref v) if waitall && !peek && !v.is_empty() && v.len() < max => {
                self.to_peer.take_reset();
                r
            }
            Ok(ref v) if v.is_empty() && max > 0 && self.to_peer.take_reset() => {
                Err(Errno::ECONNRESET)
            }
            Err(Errno::EAGAIN) if self.to_peer.take_reset() => Err(Errno::ECONNRESET),
            r => r,
        }
    }

    fn recv_bytes(
        &self,
        max: usize,
        nonblock: bool,
        peek: bool,
        waitall: bool,
    ) -> Result<Vec<u8>, Errno> {
        if self.shut_rd.load(Ordering::SeqCst) && self.rd.available() == 0 {
            return Ok(Vec::new());
        }
        // Linux's Unix streams do not wait for all with MSG_PEEK.
        if !waitall || nonblock || peek {
            return self.rd.receive(max, nonblock, peek);
        }
        let mut out = Vec::new();
        while out.len() < max {
            match self.rd.receive(max - out.len(), false, false) {
                Ok(v) if v.is_empty() => break,
                Ok(v) => out.extend_from_slice(&v),
                Err(_) if !out.is_empty() => break,
                Err(e) => return Err(e),
            }
            if self.shut_rd.load(Ordering::SeqCst) && self.rd.available() == 0 {
                break;
            }
        }
        Ok(out)
    }

    /// Sends `data`; `EPIPE` once this end or the peer is shut down.
    pub fn send(&self, data: &[u8], nonblock: bool) -> Result<usize, Errno> {
        let wr = self.wr.lock().clone().ok_or(Errno::EPIPE)?;
        wr.write(data, nonblock)
    }

    /// `setsockopt`.
    pub fn set_option(&self, level: u32, name: u32, value: &[u8]) -> Result<(), Errno> {
        self.opts.lock().set(level, name, value).map(|_| ())
    }

    /// `getsockopt`.
    pub fn get_option(&self, level: u32, name: u32) -> Result<Vec<u8>, Errno> {
        use super::options::{SO_ACCEPTCONN, SO_ERROR, SOL_SOCKET};
        match (level, name) {
            (SOL_SOCKET, SO_ERROR) => {
                let e = if self.to_peer.take_reset() {
                    Errno::ECONNRESET.0 as i32
                } else {
                    0
                };
                Ok(e.to_le_bytes().to_vec())
            }
            (SOL_SOCKET, SO_ACCEPTCONN) => Ok(0i32.to_le_bytes().to_vec()),
            _ => self.opts.lock().get(level, name),
        }
    }
}

impl FileLike for UnixStream {
    fn read(&self, max: usize, nonblock: bool) -> Result<Vec<u8>, Errno> {
        self.recv(max, nonblock, false, false)
    }

    /// No `SIGPIPE` here: the system call raises it (see `Socket`'s).
    fn write(&self, data: &[u8], nonblock: bool) -> Result<usize, Errno> {
        self.send(data, nonblock)
    }

    fn wake_keys(&self) -> (u16, u16) {
        crate::vfs::poll_bits::SOCKET_WAKE_KEYS
    }

    fn poll(&self) -> u16 {
        // Linux's unix_poll: the receive side shut (by us, or by the peer's
        // write shutdown or close) reads the end; both sides shut is a
        // hang-up; writable while there is room.
        let r = self.rd.poll();
        let wr = self.wr.lock().clone();
        let w = wr.as_ref().map_or(0, |w| w.poll());
        let rcv_shut = self.shut_rd.load(Ordering::SeqCst) || r & POLLHUP != 0;
        // Shut for sending by us, by the peer's close or its SHUT_RD.
        let snd_shut = wr.is_none() || w & POLLERR != 0 || self.to_peer.reader_shut();
        let mut ev = 0;
        if r & POLLIN != 0 {
            ev |= POLLIN | POLLRDNORM;
        }
        if rcv_shut {
            ev |= POLLRDHUP | POLLIN | POLLRDNORM;
        }
        if rcv_shut && snd_shut {
            ev |= POLLHUP;
        }
        if wr.is_none() || w & POLLOUT != 0 {
            ev |= POLLOUT | POLLWRNORM | POLLWRBAND;
        }
        if self.to_peer.reset_pending() {
            ev |= POLLERR;
        }
        ev
    }

    fn wakes(&self) -> [u64; 3] {
        let r = self.rd.wakes();
        let w = self.to_peer.wakes();
        [r[0] + w[0], r[1] + w[1], r[2] + w[2]]
    }

    fn flags(&self) -> &AtomicU32 {
        &self.flags
    }

    fn ioctl(&self, request: u64, arg: u64) -> Result<u64, Errno> {
        super::ioctl(request, arg, self.rd.available(), 0)
    }

    fn mode(&self) -> u32 {
        0o140_777
    }

    fn own_inode(&self) -> bool {
        true
    }

    fn as_any(&self) -> &dyn core::any::Any {
        self
    }
}
