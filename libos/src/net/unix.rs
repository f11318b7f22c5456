//! `AF_UNIX` stream sockets inside the partition: `socketpair`, and sockets
//! bound to a name (`bind`, `listen`, `accept`, `connect`), a path in the
//! file namespace or an abstract name. A connection is two pipes, one each
//! way. Reads, writes, `shutdown`, `poll` and close behave as Linux's Unix
//! stream sockets.
//!
//! A path name is a socket file that `bind` makes through 9P (so it is
//! there for `stat`, `ls` and `unlink`, on the host too), and is known to
//! the partition by that file's identity (its qid): `connect` finds the
//! file, then the socket bound to it here. Sockets of host processes are
//! not reachable (`ECONNREFUSED`), nor are a partition's from the host.
//! Descriptor passing (`SCM_RIGHTS`) is not there; datagram and seqpacket
//! pairs are `unixmsg`'s.

use alloc::collections::VecDeque;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU8, AtomicU32, Ordering};

use super::addr::AF_UNIX;
use super::options::Options;
use crate::errno::Errno;
use crate::fd::FileLike;
use crate::sched::WaitQueue;
use crate::sync::IrqLock;
use crate::vfs::gather::Gather;
use crate::vfs::pipe::{self, ReadEnd, WriteEnd};
use crate::vfs::poll_bits::{
    POLLERR, POLLHUP, POLLIN, POLLOUT, POLLRDHUP, POLLRDNORM, POLLWRBAND, POLLWRNORM,
};
use crate::vfs::{Wakes, readiness_changed};

/// Linux's `SOMAXCONN`: the most a backlog can be.
const SOMAXCONN: usize = 4096;
/// `SO_PEERCRED`.
const SO_PEERCRED: u32 = 17;

pub use super::addr::UnixName as Name;

/// What `connect` looks a name up by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Key {
    /// The socket file's qid path.
    File(u64),
    /// An abstract name.
    Abstract(Vec<u8>),
    /// A socket file since removed and its identity reused: reachable no
    /// more.
    Gone,
}

/// A bound socket: its name, and once listening, the connections waiting
/// to be accepted.
struct Bound {
    name: Name,
    key: IrqLock<Key>,
    queue: IrqLock<Listen>,
    /// Threads in `accept`.
    accepters: WaitQueue,
    /// Threads in `connect` waiting for room in the backlog.
    connecters: WaitQueue,
    /// Wake-ups of the accepters' queue (epoll's edges).
    wakes: Wakes,
    /// Shut for reading (`shutdown(SHUT_RD)`): connections are refused,
    /// as Linux's `unix_stream_connect` refuses them.
    shut_rd: AtomicBool,
}

struct Listen {
    /// `None` until `listen`.
    backlog: Option<usize>,
    /// Connections not accepted yet (their listening-side ends).
    pending: VecDeque<Arc<Conn>>,
    /// The socket was closed: connections are refused.
    closed: bool,
}

/// Every bound socket of the partition.
static NAMES: IrqLock<Vec<Weak<Bound>>> = IrqLock::new(Vec::new());

fn find(key: &Key) -> Option<Arc<Bound>> {
    NAMES
        .lock()
        .iter()
        .filter_map(Weak::upgrade)
        .find(|b| *b.key.lock() == *key)
}

impl Bound {
    /// Closes it: waiting connections are reset, connecters refused, the
    /// name freed.
    fn close(self: &Arc<Self>) {
        let pending = {
            let mut l = self.queue.lock();
            l.closed = true;
            core::mem::take(&mut l.pending)
        };
        for c in &pending {
            c.abort();
        }
        drop(pending);
        self.connecters.wake_all();
        self.accepters.wake_all();
        let me = Arc::as_ptr(self);
        NAMES
            .lock()
            .retain(|w| w.strong_count() > 0 && !core::ptr::eq(w.as_ptr(), me));
        readiness_changed();
    }
}

/// Where a socket is in its life.
enum State {
    /// Neither listening nor connected; maybe bound.
    Fresh(Option<Arc<Bound>>),
    Listening(Arc<Bound>),
    Connected(Arc<Conn>),
}

/// A Unix stream socket (one open file description).
pub struct UnixSocket {
    flags: AtomicU32,
    opts: IrqLock<Options>,
    state: IrqLock<State>,
    /// `shutdown` of a socket that is not connected (Linux keeps the bits).
    shut: AtomicU8,
    /// State changes (connected, listening): unkeyed wake-ups.
    wakes: Wakes,
}

impl UnixSocket {
    fn with_state(flags: u32, state: State) -> UnixSocket {
        UnixSocket {
            flags: AtomicU32::new(flags | 2),
            opts: IrqLock::new(Options::new(super::SOCK_STREAM, AF_UNIX)),
            state: IrqLock::new(state),
            shut: AtomicU8::new(0),
            wakes: Wakes::new(),
        }
    }

    /// `socket(AF_UNIX, SOCK_STREAM)` with the status flags `flags`.
    pub fn new(flags: u32) -> UnixSocket {
        Self::with_state(flags, State::Fresh(None))
    }

    fn conn(&self) -> Option<Arc<Conn>> {
        match &*self.state.lock() {
            State::Connected(c) => Some(c.clone()),
            _ => None,
        }
    }

    /// `SO_SNDBUF` as Linux keeps it (doubled; Linux's default without).
    fn sndbuf(&self) -> usize {
        use super::options::{SO_SNDBUF, SOL_SOCKET};
        self.opts
            .lock()
            .int(SOL_SOCKET, SO_SNDBUF)
            .map_or(UNIX_BUF, |v| v.max(0) as usize)
    }

    /// `bind` to `name` (`None`: an automatic abstract name), looked up
    /// later by `key` (`None` with an abstract name: the name itself).
    /// The caller made the socket file of a path name.
    pub fn bind(&self, name: Option<Name>, key: Option<Key>) -> Result<(), Errno> {
        let mut st = self.state.lock();
        if !matches!(&*st, State::Fresh(None)) {
            return Err(Errno::EINVAL);
        }
        let mut names = NAMES.lock();
        let live: Vec<Arc<Bound>> = names.iter().filter_map(Weak::upgrade).collect();
        let taken = |k: &Key| live.iter().any(|b| *b.key.lock() == *k);
        let (name, key) = match (name, key) {
            (Some(Name::Abstract(a)), None) => {
                let k = Key::Abstract(a.clone());
                if taken(&k) {
                    return Err(Errno::EADDRINUSE);
                }
                (Name::Abstract(a), k)
            }
            (Some(n), Some(k @ Key::File(_))) => {
                // The file was made just now, so a socket still known by the
                // same identity is bound to a file since removed whose
                // identity the host reused: that one is reachable no more.
                for b in live.iter().filter(|b| *b.key.lock() == k) {
                    *b.key.lock() = Key::Gone;
                }
                (n, k)
            }
            (None, None) => {
                // Linux's autobind: five hex digits, the first free.
                let mut found = None;
                for i in 0..0x10_0000u32 {
                    let a = alloc::format!("{i:05x}").into_bytes();
                    if !taken(&Key::Abstract(a.clone())) {
                        found = Some(a);
                        break;
                    }
                }
                let a = found.ok_or(Errno::ENOSPC)?;
                (Name::Abstract(a.clone()), Key::Abstract(a))
            }
            _ => return Err(Errno::EINVAL),
        };
        drop(live);
        let b = Arc::new(Bound {
            name,
            key: IrqLock::new(key),
            queue: IrqLock::new(Listen {
                backlog: None,
                pending: VecDeque::new(),
                closed: false,
            }),
            accepters: WaitQueue::new(),
            connecters: WaitQueue::new(),
            wakes: Wakes::new(),
            shut_rd: AtomicBool::new(false),
        });
        names.retain(|w| w.strong_count() > 0);
        names.push(Arc::downgrade(&b));
        *st = State::Fresh(Some(b));
        Ok(())
    }

    /// `listen`: a bound socket takes connections (a listening one changes
    /// its backlog).
    pub fn listen(&self, backlog: i32) -> Result<(), Errno> {
        let n = usize::try_from(backlog).map_or(SOMAXCONN, |b| b.min(SOMAXCONN));
        let mut st = self.state.lock();
        let b = match &*st {
            State::Fresh(Some(b)) | State::Listening(b) => b.clone(),
            _ => return Err(Errno::EINVAL),
        };
        b.queue.lock().backlog = Some(n);
        if matches!(&*st, State::Fresh(_)) {
            *st = State::Listening(b.clone());
            drop(st);
            self.wakes.all();
            // Room for connecters that waited on a smaller backlog.
        }
        b.connecters.wake_all();
        readiness_changed();
        Ok(())
    }

    /// When a blocking call started now gives up (`SO_RCVTIMEO` for
    /// `accept` and reads, `SO_SNDTIMEO` for `connect` and writes, as
    /// Linux's).
    fn deadline(&self, send: bool) -> Option<u64> {
        let t = self.opts.lock().timeout_ns(send)?;
        Some(crate::time::monotonic_ns().saturating_add(t))
    }

    /// `accept`: the next connection, with the status flags `flags`, and
    /// the peer's name.
    pub fn accept(&self, flags: u32, nonblock: bool) -> Result<(UnixSocket, Name), Errno> {
        let b = match &*self.state.lock() {
            State::Listening(b) => b.clone(),
            _ => return Err(Errno::EINVAL),
        };
        let deadline = self.deadline(false);
        loop {
            let next = b.queue.lock().pending.pop_front();
            if let Some(c) = next {
                b.connecters.wake_all();
                readiness_changed();
                let peer = c.peer.clone();
                return Ok((Self::with_state(flags, State::Connected(c)), peer));
            }
            if nonblock {
                return Err(Errno::EAGAIN);
            }
            let timed_out = b.accepters.wait_while_interruptible_until(deadline, || {
                let l = b.queue.lock();
                l.pending.is_empty() && !l.closed
            })?;
            if timed_out {
                return Err(Errno::EAGAIN);
            }
        }
    }

    /// `connect` to the socket bound to `key`.
    pub fn connect(&self, key: &Key, nonblock: bool) -> Result<(), Errno> {
        let local = match &*self.state.lock() {
            State::Fresh(b) => b.as_ref().map_or(Name::Unnamed, |b| b.name.clone()),
            State::Connected(_) => return Err(Errno::EISCONN),
            State::Listening(_) => return Err(Errno::EINVAL),
        };
        let target = find(key).ok_or(Errno::ECONNREFUSED)?;
        let deadline = self.deadline(true);
        loop {
            {
                let mut l = target.queue.lock();
                let refused = l.closed || target.shut_rd.load(Ordering::SeqCst);
                let Some(max) = l.backlog.filter(|_| !refused) else {
                    return Err(Errno::ECONNREFUSED);
                };
                // Linux refuses past `backlog` waiting (one more than it).
                if l.pending.len() <= max {
                    let (mine, theirs) = conn_pair(local, target.name.clone());
                    let mut st = self.state.lock();
                    if !matches!(&*st, State::Fresh(_)) {
                        return Err(Errno::EISCONN);
                    }
                    l.pending.push_back(Arc::new(theirs));
                    *st = State::Connected(Arc::new(mine));
                    break;
                }
            }
            if nonblock {
                return Err(Errno::EAGAIN);
            }
            let timed_out = target
                .connecters
                .wait_while_interruptible_until(deadline, || {
                    let l = target.queue.lock();
                    !l.closed && l.backlog.is_some_and(|max| l.pending.len() > max)
                })?;
            if timed_out {
                return Err(Errno::EAGAIN);
            }
        }
        target.wakes.input();
        target.accepters.wake_all();
        self.wakes.all();
        readiness_changed();
        Ok(())
    }

    /// The error of sending to an address (`sendto` with one): a stream
    /// takes none.
    pub fn addressed_send(&self) -> Errno {
        if self.conn().is_some() {
            Errno::EISCONN
        } else {
            Errno::EOPNOTSUPP
        }
    }

    /// `getsockname`.
    pub fn local(&self) -> Name {
        match &*self.state.lock() {
            State::Fresh(b) => b.as_ref().map_or(Name::Unnamed, |b| b.name.clone()),
            State::Listening(b) => b.name.clone(),
            State::Connected(c) => c.local.clone(),
        }
    }

    /// `getpeername`.
    pub fn peer(&self) -> Result<Name, Errno> {
        self.conn().map(|c| c.peer.clone()).ok_or(Errno::ENOTCONN)
    }

    /// `shutdown(how)`: 0 reading, 1 writing (the peer reads the end), 2 both.
    pub fn shutdown(&self, how: u64) -> Result<(), Errno> {
        if how > 2 {
            return Err(Errno::EINVAL);
        }
        match self.conn() {
            Some(c) => c.shutdown(how),
            None => {
                // Linux keeps the bits of a socket with no peer, and says 0.
                self.shut.fetch_or(how as u8 + 1, Ordering::SeqCst);
                if how != 1
                    && let State::Fresh(Some(b)) | State::Listening(b) = &*self.state.lock()
                {
                    b.shut_rd.store(true, Ordering::SeqCst);
                }
                self.wakes.all();
                readiness_changed();
                Ok(())
            }
        }
    }

    /// Receives (see [`Conn::recv`]); `EINVAL` when not connected, as
    /// Linux's.
    pub fn recv(
        &self,
        max: usize,
        nonblock: bool,
        peek: bool,
        waitall: bool,
    ) -> Result<Vec<u8>, Errno> {
        let deadline = self.deadline(false);
        self.conn()
            .ok_or(Errno::EINVAL)?
            .recv(max, nonblock, peek, waitall, deadline)
    }

    /// Sends `data`; `ENOTCONN` when not connected, `EPIPE` once shut down.
    pub fn send(&self, data: &[u8], nonblock: bool) -> Result<usize, Errno> {
        self.send_from(&mut Gather::kernel(data), nonblock)
    }

    /// Sends `src` skb by skb (see [`Gather`]).
    pub fn send_from(&self, src: &mut Gather<'_>, nonblock: bool) -> Result<usize, Errno> {
        let c = self.conn().ok_or(Errno::ENOTCONN)?;
        // The send buffer the charge of what this end sends is held to
        // (set before or after the connection was made): looked at where
        // the charge is, a send, `poll` and `SIOCOUTQ`, not on every call.
        c.to_peer.set_sndbuf(self.sndbuf());
        c.send(src, nonblock, self.deadline(true))
    }

    /// `poll` events of a socket's own shutdown when it has no peer: both
    /// ways a hang-up, reading the end of input.
    fn shut_events(&self) -> u16 {
        let shut = self.shut.load(Ordering::SeqCst);
        let mut ev = 0;
        if shut & 1 != 0 {
            ev |= POLLRDHUP | POLLIN | POLLRDNORM;
        }
        if shut == 3 {
            ev |= POLLHUP;
        }
        ev
    }

    /// `setsockopt`.
    pub fn set_option(&self, level: u32, name: u32, value: &[u8]) -> Result<(), Errno> {
        self.opts.lock().set(level, name, value).map(|_| ())
    }

    /// `getsockopt`.
    pub fn get_option(&self, level: u32, name: u32) -> Result<Vec<u8>, Errno> {
        use super::options::{SO_ACCEPTCONN, SO_ERROR, SOL_SOCKET};
        let int = |v: i32| Ok(v.to_le_bytes().to_vec());
        match (level, name) {
            (SOL_SOCKET, SO_ERROR) => int(self.conn().map_or(0, |c| c.take_error())),
            (SOL_SOCKET, SO_ACCEPTCONN) => int(i32::from(matches!(
                &*self.state.lock(),
                State::Listening(_)
            ))),
            (SOL_SOCKET, SO_PEERCRED) => {
                // Every socket of the partition is this process's: a
                // connected or listening one reports it, others no one.
                let known = !matches!(&*self.state.lock(), State::Fresh(_));
                let (pid, (uid, gid)) = if known {
                    (crate::vfs::pid() as u32, crate::vfs::identity::ids())
                } else {
                    (0, (u32::MAX, u32::MAX))
                };
                let mut v = pid.to_le_bytes().to_vec();
                v.extend_from_slice(&uid.to_le_bytes());
                v.extend_from_slice(&gid.to_le_bytes());
                Ok(v)
            }
            _ => self.opts.lock().get(level, name),
        }
    }
}

impl Drop for UnixSocket {
    fn drop(&mut self) {
        let st = core::mem::replace(&mut *self.state.lock(), State::Fresh(None));
        if let State::Fresh(Some(b)) | State::Listening(b) = st {
            b.close();
        }
    }
}

/// One end of a connection: two pipes, one each way.
pub struct Conn {
    /// What the peer writes.
    rd: Arc<ReadEnd>,
    /// Where this end writes; `None` once shut down for writing (the peer
    /// then reads the end).
    wr: IrqLock<Option<Arc<WriteEnd>>>,
    /// The same pipe, kept after a shutdown: whether the peer shut reading
    /// down or went with bytes unread (this end's pending `ECONNRESET`).
    to_peer: Arc<WriteEnd>,
    shut_rd: AtomicBool,
    /// This end's name (`getsockname`) and the peer's (`getpeername`).
    local: Name,
    peer: Name,
}

/// What one direction of a connection holds: Linux's default socket
/// buffer (`net.core.wmem_default`), so a large write that fits on Linux
/// does not wait here for a reader (Python's test `sendall`s 100 KB before
/// reading).
const UNIX_BUF: usize = 212_992;

/// Two connected ends, named `a` and `b`.
fn conn_pair(a: Name, b: Name) -> (Conn, Conn) {
    let (r1, w1) = pipe::socket_direction(UNIX_BUF);
    let (r2, w2) = pipe::socket_direction(UNIX_BUF);
    let end = |rd: ReadEnd, wr: WriteEnd, local: &Name, peer: &Name| {
        let wr = Arc::new(wr);
        Conn {
            rd: Arc::new(rd),
            wr: IrqLock::new(Some(wr.clone())),
            to_peer: wr,
            shut_rd: AtomicBool::new(false),
            local: local.clone(),
            peer: peer.clone(),
        }
    };
    (end(r1, w2, &a, &b), end(r2, w1, &b, &a))
}

/// `socketpair(AF_UNIX, SOCK_STREAM)`: a connected pair; both ends get the
/// status flags `flags`.
pub fn pair(flags: u32) -> (UnixSocket, UnixSocket) {
    let (a, b) = conn_pair(Name::Unnamed, Name::Unnamed);
    (
        UnixSocket::with_state(flags, State::Connected(Arc::new(a))),
        UnixSocket::with_state(flags, State::Connected(Arc::new(b))),
    )
}

impl Conn {
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
    /// `unix_stream_read_generic`; a wait ends at `deadline`
    /// (`SO_RCVTIMEO`) with `EAGAIN`, or what came.
    pub fn recv(
        &self,
        max: usize,
        nonblock: bool,
        peek: bool,
        waitall: bool,
        deadline: Option<u64>,
    ) -> Result<Vec<u8>, Errno> {
        if max == 0 {
            // Linux looks at the queue as for one byte: 0 with data or at
            // the end, EAGAIN (or a wait) without.
            return self
                .recv(1, nonblock, true, false, deadline)
                .map(|_| Vec::new());
        }
        let r = self.recv_bytes(max, nonblock, peek, waitall, deadline);
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
        deadline: Option<u64>,
    ) -> Result<Vec<u8>, Errno> {
        if self.shut_rd.load(Ordering::SeqCst) && self.rd.available() == 0 {
            return Ok(Vec::new());
        }
        // Linux's Unix streams do not wait for all with MSG_PEEK.
        if !waitall || nonblock || peek {
            return self.rd.receive_until(max, nonblock, peek, deadline);
        }
        let mut out = Vec::new();
        while out.len() < max {
            match self
                .rd
                .receive_until(max - out.len(), false, false, deadline)
            {
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

    /// Sends `src`, waiting for room until `deadline` (`SO_SNDTIMEO`);
    /// `EPIPE` once this end or the peer is shut down.
    pub fn send(
        &self,
        src: &mut Gather<'_>,
        nonblock: bool,
        deadline: Option<u64>,
    ) -> Result<usize, Errno> {
        let wr = self.wr.lock().clone().ok_or(Errno::EPIPE)?;
        wr.write_from_until(src, nonblock, deadline)
    }

    /// `SO_ERROR`: the pending reset, taken.
    fn take_error(&self) -> i32 {
        if self.to_peer.take_reset() {
            Errno::ECONNRESET.0 as i32
        } else {
            0
        }
    }

    /// Drops a connection nobody accepted: the connecting end reads
    /// `ECONNRESET`, as Linux's release of a listener's embryos does.
    fn abort(&self) {
        self.rd.mark_reset();
    }
}

impl Conn {
    /// `poll` events of a connected end.
    fn poll(&self) -> u16 {
        // Linux's unix_poll: the receive side shut (by us, or by the peer's
        // write shutdown or close) reads the end; both sides shut is a
        // hang-up; writable while there is room.
        let r = self.rd.poll();
        let wr = self.wr.lock().clone();
        // Writable by what this end's queued skbs charge it, shut down for
        // sending or not (`unix_writable`).
        let w = self.to_peer.poll();
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
        if w & POLLOUT != 0 {
            ev |= POLLOUT | POLLWRNORM | POLLWRBAND;
        }
        if self.to_peer.reset_pending() {
            ev |= POLLERR;
        }
        ev
    }

    /// Wake-ups of both pipes' queues.
    fn wakes(&self) -> [u64; 3] {
        let r = self.rd.wakes();
        let w = self.to_peer.wakes();
        [r[0] + w[0], r[1] + w[1], r[2] + w[2]]
    }
}

impl FileLike for UnixSocket {
    fn read(&self, max: usize, nonblock: bool) -> Result<Vec<u8>, Errno> {
        // A `read` of nothing is 0 whatever is queued (Linux's
        // `sock_read_iter`); `recv` of nothing looks at the queue.
        if max == 0 {
            return Ok(Vec::new());
        }
        self.recv(max, nonblock, false, false)
    }

    /// No `SIGPIPE` here: the system call raises it (see `Socket`'s).
    fn write(&self, data: &[u8], nonblock: bool) -> Result<usize, Errno> {
        self.send(data, nonblock)
    }

    fn write_from(&self, src: &mut Gather<'_>, nonblock: bool) -> Option<Result<usize, Errno>> {
        Some(self.send_from(src, nonblock))
    }

    fn wake_keys(&self) -> (u16, u16) {
        crate::vfs::poll_bits::SOCKET_WAKE_KEYS
    }

    fn poll(&self) -> u16 {
        let st = self.state.lock();
        match &*st {
            State::Connected(c) => {
                let c = c.clone();
                drop(st);
                c.to_peer.set_sndbuf(self.sndbuf());
                c.poll()
            }
            // Linux's unix_poll: a listener is readable with connections
            // waiting, never writable; a socket not connected is a hang-up,
            // and writable. Either shows its own shutdown.
            State::Listening(b) => {
                let mut ev = self.shut_events();
                if !b.queue.lock().pending.is_empty() {
                    ev |= POLLIN | POLLRDNORM;
                }
                ev
            }
            State::Fresh(_) => self.shut_events() | POLLHUP | POLLOUT | POLLWRNORM | POLLWRBAND,
        }
    }

    fn wakes(&self) -> [u64; 3] {
        let own = self.wakes.get();
        let more = match &*self.state.lock() {
            State::Connected(c) => c.wakes(),
            State::Listening(b) | State::Fresh(Some(b)) => b.wakes.get(),
            State::Fresh(None) => [0; 3],
        };
        [own[0] + more[0], own[1] + more[1], own[2] + more[2]]
    }

    fn flags(&self) -> &AtomicU32 {
        &self.flags
    }

    fn ioctl(&self, request: u64, arg: u64) -> Result<u64, Errno> {
        // SIOCOUTQ: what this end's queued skbs charge it (Linux's
        // `unix_outq_len`), not bytes.
        if matches!(&*self.state.lock(), State::Listening(_)) && request == 0x541b {
            // Linux's unix_ioctl refuses SIOCINQ on a listener.
            return Err(Errno::EINVAL);
        }
        let (inq, outq) = match self.conn() {
            Some(c) => {
                c.to_peer.set_sndbuf(self.sndbuf());
                (c.rd.available(), c.to_peer.charged())
            }
            None => (0, 0),
        };
        super::ioctl(AF_UNIX, request, arg, inq, outq)
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
