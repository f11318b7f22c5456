//! A TCP socket over one gateway connection. The program's threads never
//! wait for the gateway while holding the socket's lock: every 9P request
//! runs with the connection's fids copied out, and a kernel thread per
//! socket (the reader of a connection, the acceptor of a listener, first
//! the dialer of a connect) does the waiting requests.

use alloc::collections::VecDeque;
use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;
use core::net::SocketAddr;
use core::sync::atomic::{AtomicBool, AtomicU8, AtomicU32, Ordering};

use super::addr::{self};
use super::options::{
    IPPROTO_IPV6, IPPROTO_TCP, IPV6_V6ONLY, Options, SO_ACCEPTCONN, SO_ERROR, SO_KEEPALIVE,
    SO_LINGER, SO_REUSEADDR, SO_REUSEPORT, SOCK_STREAM, SOL_SOCKET, TCP_NODELAY,
};
use crate::errno::Errno;
use crate::fd::FileLike;
use crate::p9::{Client, Fid};
use crate::sched::WaitQueue;
use crate::sync::IrqLock;
use crate::vfs::poll_bits::{POLLERR, POLLHUP, POLLIN, POLLOUT, POLLRDNORM, POLLWRNORM};
use crate::vfs::ring::Ring;
use crate::vfs::{Wakes, readiness_changed};

use crate::vfs::poll_bits::POLLRDHUP;
/// The receive buffer the reader fills (bytes the peer sent that the
/// program has not read yet).
const RECV_BUF: usize = 1024 * 1024;
/// The most one posted read asks for.
const READ_CHUNK: usize = 256 * 1024;
/// The reader posts again once this much room is free.
const MIN_ROOM: usize = 4096;
/// The send buffer: bytes `send` accepted that the writer has not yet
/// handed to the gateway (with streaming on).
const SEND_BUF: usize = 1024 * 1024;
/// A write of at least this much is written by the caller (see
/// [`Socket::send`]).
const LARGE_WRITE: usize = 64 * 1024;
/// Acceptor threads per listening socket.
const ACCEPTORS: usize = 2;
/// Linux's `somaxconn`.
const SOMAXCONN: usize = 4096;

const O_RDONLY: u32 = 0;
const O_RDWR: u32 = 2;

static STREAMING: AtomicBool = AtomicBool::new(true);

/// Chooses the streaming layer (`--net-stream on|off`, at boot).
pub fn set_streaming(on: bool) {
    STREAMING.store(on, Ordering::Relaxed);
}

/// Whether reads are kept posted.
pub fn streaming() -> bool {
    STREAMING.load(Ordering::Relaxed)
}

pub(super) fn client() -> Result<&'static Client, Errno> {
    crate::p9::mounted().ok_or(Errno::ENETUNREACH)
}

/// Whether the gateway serves `/net/PROTO` (`tcp`, `udp`; asked once each).
pub fn available(proto: &'static str) -> bool {
    // 0: not asked yet, 1: yes, 2: no. Two first callers may both ask.
    static KNOWN: [AtomicU8; 2] = [AtomicU8::new(0), AtomicU8::new(0)];
    let known = &KNOWN[usize::from(proto == "udp")];
    match known.load(Ordering::Relaxed) {
        1 => true,
        2 => false,
        _ => {
            let yes = client().is_ok_and(|c| match c.walk(c.root(), &["net", proto]) {
                Ok(f) => {
                    c.clunk(f);
                    true
                }
                Err(_) => false,
            });
            known.store(if yes { 1 } else { 2 }, Ordering::Relaxed);
            yes
        }
    }
}

/// One gateway connection: its number and open `ctl` (and `data`) fids,
/// clunked when the last holder lets go (the gateway then closes the host
/// socket).
pub(super) struct Conv {
    /// `tcp` or `udp`.
    proto: &'static str,
    n: u32,
    ctl: Fid,
    pub(super) data: Option<Fid>,
}

impl Conv {
    /// Reserves a new connection (`/net/tcp/clone`).
    pub(super) fn clone_new(c: &Client, proto: &'static str) -> Result<Conv, Errno> {
        let ctl = c.walk(c.root(), &["net", proto, "clone"])?;
        Self::from_ctl(c, ctl, proto)
    }

    /// Opens the walked `ctl` (or `clone`, or `listen`) fid and learns the
    /// connection's number from it.
    fn from_ctl(c: &Client, ctl: Fid, proto: &'static str) -> Result<Conv, Errno> {
        match c.open(ctl, O_RDWR) {
            Ok(qid) => Self::from_open_ctl(c, ctl, proto, qid.path),
            Err(e) => {
                c.clunk(ctl);
                Err(e)
            }
        }
    }

    /// Learns the connection's number from its open `ctl` fid: from the
    /// qid path its open returned, if it is the gateway's
    /// (`astraea_9p::consts::net_conv_number`), else by reading `ctl`.
    fn from_open_ctl(
        c: &Client,
        ctl: Fid,
        proto: &'static str,
        qid_path: u64,
    ) -> Result<Conv, Errno> {
        if let Some(n) = astraea_9p::consts::net_conv_number(qid_path) {
            return Ok(Conv {
                proto,
                n,
                ctl,
                data: None,
            });
        }
        let mut b = [0u8; 16];
        let r = c.read(ctl, 0, &mut b).and_then(|n| {
            core::str::from_utf8(&b[..n])
                .ok()
                .and_then(|s| s.trim().parse::<u32>().ok())
                .ok_or(Errno::EPROTO)
        });
        match r {
            Ok(n) => Ok(Conv {
                proto,
                n,
                ctl,
                data: None,
            }),
            Err(e) => {
                c.clunk(ctl);
                Err(e)
            }
        }
    }

    fn path<'a>(&self, num: &'a str, file: &'a str) -> [&'a str; 4] {
        ["net", self.proto, num, file]
    }

    pub(super) fn ctl(&self, c: &Client, msg: &str) -> Result<(), Errno> {
        c.write(self.ctl, 0, msg.as_bytes()).map(|_| ())
    }

    pub(super) fn open_data(&mut self, c: &Client) -> Result<(), Errno> {
        let num = format!("{}", self.n);
        let fid = c.walk(c.root(), &self.path(&num, "data"))?;
        if let Err(e) = c.open(fid, O_RDWR) {
            c.clunk(fid);
            return Err(e);
        }
        self.data = Some(fid);
        Ok(())
    }

    /// The address in the connection's `local` or `remote` file.
    pub(super) fn address(&self, c: &Client, file: &str) -> Option<SocketAddr> {
        addr::parse_text(self.text(c, file)?.as_bytes())
    }

    /// The text of one of the conversation's files (`local`, `status`).
    pub(super) fn text(&self, c: &Client, file: &str) -> Option<alloc::string::String> {
        let num = format!("{}", self.n);
        let fid = c.walk(c.root(), &self.path(&num, file)).ok()?;
        let mut b = [0u8; 80];
        let n = c
            .open(fid, O_RDONLY)
            .and_then(|_| c.read(fid, 0, &mut b))
            .ok();
        c.clunk(fid);
        Some(alloc::string::String::from_utf8_lossy(&b[..n?]).into_owned())
    }
}

impl Drop for Conv {
    fn drop(&mut self) {
        if let Ok(c) = client() {
            match self.data {
                Some(d) => c.clunk_many(&[d, self.ctl]),
                None => c.clunk(self.ctl),
            }
        }
    }
}

/// An IPv4-mapped IPv6 address (`::ffff:a.b.c.d`).
pub(super) fn is_mapped(a: SocketAddr) -> bool {
    matches!(a.ip(), core::net::IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some())
}

/// `a` with its address cleared (Linux's `inet_reset_saddr`: the
/// wildcard of the socket's `family`), its port kept.
fn without_address(family: u16, a: SocketAddr) -> SocketAddr {
    SocketAddr::new(addr::unspecified(family).ip(), a.port())
}

/// Calls the gateway accepted but the program never did, at the end of
/// their listener: reset (an abortive close), as Linux resets the
/// connections still in a listener's queue when it closes.
fn reset_unaccepted(calls: impl IntoIterator<Item = Accepted>) {
    let c = client().ok();
    for a in calls {
        if let Some(c) = c {
            let _ = a.conv.ctl(c, "linger 0");
        }
    }
}

/// The calls of a listener's queue that are set up; those still being set
/// up are reset by their setup, which finds them gone.
fn ready_calls(queue: VecDeque<Pending>) -> impl Iterator<Item = Accepted> {
    queue.into_iter().filter_map(|p| p.call)
}

impl St {
    /// Whether the first call in the queue is ready for `accept`.
    fn call_ready(&self) -> bool {
        self.accepts.front().is_some_and(|p| p.call.is_some())
    }

    /// A connection reset, or closed both ways (Linux's TCP_CLOSE: no peer
    /// name, its automatic port freed).
    fn closed(&self) -> bool {
        self.broken || (self.shut_wr && self.eof)
    }

    /// Linux's `tcp_disconnect` after a failed connect: usable again, not
    /// shut, an address the program did not bind cleared (its port kept
    /// as the name); a socket bound again since is a bound one.
    fn disconnect(&mut self, family: u16) {
        self.phase = if self.conv.is_some() {
            Phase::Bound
        } else {
            Phase::Fresh
        };
        self.shut_rd = false;
        self.shut_wr = false;
        if !self.addr_locked {
            self.local = self.local.map(|a| without_address(family, a));
        }
    }
}

/// The port-sharing options and their `ctl` words at the gateway.
pub(super) const REUSE_CTLS: [(u32, &str); 2] =
    [(SO_REUSEADDR, "reuseaddr"), (SO_REUSEPORT, "reuseport")];

/// A call the acceptor took from the gateway, in arrival order: being set
/// up (`call` None) or ready for `accept`.
struct Pending {
    id: u64,
    call: Option<Accepted>,
}

/// A connection accepted by the acceptor, waiting for `accept`.
struct Accepted {
    conv: Conv,
    /// The listener's options when the call was taken.
    opts: Options,
    local: Option<SocketAddr>,
    remote: Option<SocketAddr>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// New: no connection at the gateway.
    Fresh,
    /// Bound: a host socket bound at the gateway, not listening (a
    /// port-0 bind's `getsockname` shows the port it got).
    Bound,
    /// Listening: the acceptor keeps a call waiting.
    Listening,
    /// A connect is under way (its dialer thread owns it).
    Connecting,
    /// Connected: the reader fills the receive buffer.
    Connected,
    /// A connect failed (`SO_ERROR` says why); another may be tried.
    Failed,
}

struct St {
    phase: Phase,
    conv: Option<Arc<Conv>>,
    ring: Ring,
    /// The peer closed (or the connection broke): reads end after the ring.
    eof: bool,
    /// An error a read reports once (`ECONNRESET`), before the end, or
    /// `SO_ERROR` reports (whichever asks first, as Linux's `sk_err`).
    read_err: Option<Errno>,
    /// The connection broke (a reset): a hang-up for `poll` for good, after
    /// `read_err` is taken too.
    broken: bool,
    /// `bind` gave it a port of the program's choosing: a failed or reset
    /// connection keeps it (Linux's `SOCK_BINDPORT_LOCK`); otherwise such
    /// a socket may be bound again, once.
    port_locked: bool,
    /// Bound again after its connection failed or was reset.
    rebound: bool,
    /// The dial under way has reached the gateway, which started the
    /// host's `connect` (and the local address is known).
    dial_started: bool,
    /// `bind` named an address, not the wildcard (Linux's
    /// `SOCK_BINDADDR_LOCK`): a disconnect keeps it.
    addr_locked: bool,
    /// `SO_ERROR`: a failed connect's error, until read.
    so_error: Option<Errno>,
    /// Calls taken from the gateway, first come first: `accept` takes the
    /// front one once it is set up.
    accepts: VecDeque<Pending>,
    /// The gateway could not take a waiting call (its host ran out of
    /// descriptors): the next `accept` with nothing ready fails with
    /// `ENFILE` (Linux's when the system's file table is full) instead of
    /// waiting while the acceptor tries again.
    accept_full: bool,
    /// Counts `accept` calls begun: an acceptor's failure counts for them
    /// only if its attempt began after the last one (an older attempt may
    /// predate descriptors the program closed since).
    accept_epoch: u64,
    /// The next call's [`Pending::id`].
    next_call: u64,
    backlog: usize,
    shut_rd: bool,
    shut_wr: bool,
    local: Option<SocketAddr>,
    remote: Option<SocketAddr>,
    opts: Options,
    /// The last descriptor went: helpers stop.
    closing: bool,
    /// A reader waits for data (the only time a read is posted with
    /// streaming off).
    demand: bool,
    /// A `connect` call has seen the connection made (Linux's
    /// `SS_CONNECTED`): the next one is `EISCONN`, not 0.
    confirmed: bool,
    /// Bytes sent by the program, not yet written to the gateway (the
    /// streaming layer's write-behind).
    out: Ring,
    /// A sender or `poll` found the send buffer without room (Linux's
    /// `SOCK_NOSPACE`): room coming back wakes `POLLOUT` waiters then, and
    /// only then (so an edge-triggered `EPOLLOUT` does not fire after
    /// every write).
    nospace: bool,
    /// A write to the gateway is under way (the writer's, or a
    /// synchronous send's): the next waits for it, so bytes stay in order.
    writing: bool,
    /// A write to the gateway failed: later sends fail with it.
    write_err: Option<Errno>,
    /// The writer thread runs.
    writer: bool,
    /// `shutdown(SHUT_WR)` waits for the writer to send `out` first.
    shut_pending: bool,
    /// The socket was closed while it had a writer: the writer hangs up
    /// once the bytes still queued are sent.
    hangup_by_writer: bool,
    /// `TCP_NODELAY` was set: the writer tells the host socket before it
    /// writes next (it only matters for what is sent).
    nodelay_pending: bool,
}

/// The part of a socket its helper thread shares.
struct Shared {
    st: IrqLock<St>,
    /// The program's readers and acceptors.
    readable: WaitQueue,
    /// Waiters for a connect to end.
    writable: WaitQueue,
    /// The helper thread, waiting for room, demand or the close.
    helper: WaitQueue,
    /// The writer, waiting for bytes to send.
    flush: WaitQueue,
    wakes: Wakes,
}

impl Shared {
    fn notify_input(&self) {
        self.wakes.input();
        self.readable.wake_all();
        readiness_changed();
    }

    /// A change of the connection's state (shut down, ended, reset, dialed
    /// or failed): every epoll registration looks again, whatever events
    /// it asked for, as Linux's `sk_state_change` wakes with no key.
    fn notify_state(&self) {
        self.wakes.all();
        self.readable.wake_all();
        self.writable.wake_all();
        readiness_changed();
    }
}

/// A TCP socket (one open file description).
pub struct Socket {
    /// `AF_INET` or `AF_INET6`.
    pub family: u16,
    flags: AtomicU32,
    sh: Arc<Shared>,
}

impl Socket {
    /// A new, unconnected socket; `flags` are its `O_*` status flags.
    pub fn new(family: u16, flags: u32) -> Socket {
        Self::with_state(family, flags, Phase::Fresh, None, None, None)
    }

    fn with_state(
        family: u16,
        flags: u32,
        phase: Phase,
        conv: Option<Arc<Conv>>,
        local: Option<SocketAddr>,
        remote: Option<SocketAddr>,
    ) -> Socket {
        Socket {
            family,
            flags: AtomicU32::new(flags | O_RDWR),
            sh: Arc::new(Shared {
                st: IrqLock::new(St {
                    phase,
                    conv,
                    ring: Ring::new(RECV_BUF),
                    eof: false,
                    read_err: None,
                    broken: false,
                    so_error: None,
                    accepts: VecDeque::new(),
                    accept_full: false,
                    accept_epoch: 0,
                    next_call: 0,
                    backlog: 0,
                    port_locked: false,
                    rebound: false,
                    dial_started: false,
                    addr_locked: false,
                    shut_rd: false,
                    shut_wr: false,
                    local,
                    remote,
                    opts: Options::new(SOCK_STREAM, family),
                    closing: false,
                    demand: false,
                    confirmed: phase == Phase::Connected,
                    out: Ring::new(SEND_BUF),
                    nospace: false,
                    writing: false,
                    write_err: None,
                    writer: false,
                    shut_pending: false,
                    hangup_by_writer: false,
                    nodelay_pending: false,
                }),
                readable: WaitQueue::new(),
                writable: WaitQueue::new(),
                helper: WaitQueue::new(),
                flush: WaitQueue::new(),
                wakes: Wakes::new(),
            }),
        }
    }

    fn int_opt(&self, level: u32, name: u32) -> Option<i32> {
        self.sh.st.lock().opts.int(level, name)
    }

    /// When a blocking receive (or, with `send`, a send) started now gives
    /// up with `EAGAIN` (`SO_RCVTIMEO`, `SO_SNDTIMEO`); `None`: never.
    fn deadline(&self, send: bool) -> Option<u64> {
        let t = self.sh.st.lock().opts.timeout_ns(send)?;
        Some(crate::time::monotonic_ns().saturating_add(t))
    }

    /// `bind`: binds a host socket to `addr` at once (not listening yet),
    /// so its port (a port-0 bind's real one) is known and taken.
    pub fn bind(&self, addr: SocketAddr) -> Result<(), Errno> {
        if !Self::bindable(&self.sh.st.lock()) && !self.host_closed() {
            return Err(Errno::EINVAL);
        }
        // An IPv6-only socket has no IPv4 addresses (Linux's `inet6_bind`).
        let v6only = self.v6only();
        if v6only && is_mapped(addr) {
            return Err(Errno::EINVAL);
        }
        let c = client()?;
        let conv = Conv::clone_new(c, "tcp")?;
        if v6only {
            conv.ctl(c, "v6only")?;
        }
        for (opt, ctl) in REUSE_CTLS {
            if self.int_opt(SOL_SOCKET, opt).unwrap_or(0) != 0 {
                conv.ctl(c, ctl)?;
            }
        }
        if let Err(e) = conv.ctl(c, &addr::bind_ctl(addr)) {
            // Linux's `inet_bind` set the address before the port was
            // refused, and clears it after.
            if e == Errno::EADDRINUSE {
                let mut st = self.sh.st.lock();
                st.local = st.local.map(|a| without_address(self.family, a));
            }
            return Err(e);
        }
        let local = conv.address(c, "local");
        let conv = Arc::new(conv);
        let mut st = self.sh.st.lock();
        if !Self::bindable(&st) {
            drop(st);
            // Another thread bound it meanwhile; ours is hung up when dropped.
            let _ = conv.ctl(c, "hangup");
            return Err(Errno::EINVAL);
        }
        // A connection that failed or was reset keeps its state (Linux's
        // socket stays `SS_CONNECTING` or `SS_CONNECTED`: `listen` is
        // refused, the next `connect` reports the failure first).
        if st.phase == Phase::Fresh {
            st.phase = Phase::Bound;
        } else {
            st.rebound = true;
        }
        // Port 0 takes a port as a connect would: Linux frees it when a
        // connection from it fails or is reset (no `SOCK_BINDPORT_LOCK`).
        st.port_locked = addr.port() != 0;
        // Bound to one IPv6 address (not the wildcard, not IPv4-mapped):
        // IPv6-only from now on, as Linux's `inet6_bind` makes it.
        if let core::net::IpAddr::V6(v6) = addr.ip()
            && !v6.is_unspecified()
            && v6.to_ipv4_mapped().is_none()
        {
            let _ = st.opts.set(IPPROTO_IPV6, IPV6_V6ONLY, &1i32.to_le_bytes());
        }
        st.addr_locked = !addr.ip().is_unspecified();
        st.local = local.or(Some(addr));
        let old = st.conv.replace(conv);
        drop(st);
        drop(old);
        Ok(())
    }

    /// A connection shut for writing whose end the reader has not seen
    /// yet (its FIN may be on its way) that the host has closed both ways:
    /// Linux's `bind` goes by the host socket's state (`TCP_CLOSE` frees an
    /// automatic port), so the host is asked.
    fn host_closed(&self) -> bool {
        let conv = {
            let st = self.sh.st.lock();
            if st.phase != Phase::Connected || !st.shut_wr || st.port_locked || st.rebound {
                return false;
            }
            st.conv.clone()
        };
        let (Some(conv), Ok(c)) = (conv, client()) else {
            return false;
        };
        conv.text(c, "status").as_deref() == Some("Closed\n")
    }

    /// Whether `bind` may give the socket an address: a new one, or one
    /// whose connection failed or was reset and whose address was not
    /// bound by the program (Linux frees an automatic port then).
    fn bindable(st: &St) -> bool {
        match st.phase {
            Phase::Fresh => true,
            Phase::Failed => !st.port_locked && !st.rebound,
            Phase::Connected => st.closed() && !st.port_locked && !st.rebound,
            _ => false,
        }
    }

    /// `listen`: starts the acceptor (binding to any address first, as
    /// Linux does for an unbound socket).
    pub fn listen(&self, backlog: i32) -> Result<(), Errno> {
        let backlog = (backlog.max(0) as usize).clamp(1, SOMAXCONN);
        let phase = self.sh.st.lock().phase;
        match phase {
            Phase::Listening => {
                self.sh.st.lock().backlog = backlog;
                self.sh.helper.wake_all();
                return Ok(());
            }
            // An address the program bound (its connection since failed)
            // stays the socket's: the new port is taken on it.
            Phase::Fresh => {
                let at = {
                    let st = self.sh.st.lock();
                    st.local
                        .filter(|_| st.addr_locked)
                        .map(|a| SocketAddr::new(a.ip(), 0))
                };
                self.bind(at.unwrap_or(addr::unspecified(self.family)))?
            }
            Phase::Bound => {}
            _ => return Err(Errno::EINVAL),
        }
        let conv = {
            let st = self.sh.st.lock();
            if st.phase != Phase::Bound {
                return Err(Errno::EINVAL);
            }
            st.conv.clone().ok_or(Errno::EINVAL)?
        };
        conv.ctl(client()?, &format!("listen {backlog}"))?;
        {
            let mut st = self.sh.st.lock();
            match st.phase {
                Phase::Bound => {}
                // Another thread's `listen` won: Linux's second one succeeds.
                Phase::Listening => return Ok(()),
                _ => return Err(Errno::EINVAL),
            }
            st.phase = Phase::Listening;
            st.backlog = backlog;
        }
        let sh = self.sh.clone();
        // A listener on one address gives its calls that local address: no
        // need to ask the gateway for each (a wildcard one must).
        let local = self.sh.st.lock().local.filter(|a| !a.ip().is_unspecified());
        // Two acceptors: one sets a call up (several round trips) while the
        // other's `listen` waits for the next.
        for _ in 0..ACCEPTORS {
            let (sh, conv) = (sh.clone(), conv.clone());
            crate::sched::spawn("acceptor", move || acceptor(sh, conv, local))
                .ok_or(Errno::ENOMEM)?;
        }
        Ok(())
    }

    /// `accept`: the next connection the acceptor took, as a new socket
    /// with `flags`, and the peer's address.
    pub fn accept(&self, flags: u32) -> Result<(Socket, Option<SocketAddr>), Errno> {
        let nonblock = self.nonblocking();
        let deadline = self.deadline(false);
        let sh = &*self.sh;
        {
            let mut st = sh.st.lock();
            st.accept_epoch += 1;
            st.accept_full = false;
        }
        loop {
            {
                let mut st = sh.st.lock();
                if st.phase != Phase::Listening {
                    return Err(Errno::EINVAL);
                }
                if let Some(a) = st
                    .call_ready()
                    .then(|| st.accepts.pop_front().and_then(|p| p.call))
                    .flatten()
                {
                    drop(st);
                    sh.helper.wake_all();
                    let remote = a.remote;
                    let s = Socket::with_state(
                        self.family,
                        flags,
                        Phase::Connected,
                        Some(Arc::new(a.conv)),
                        a.local,
                        a.remote,
                    );
                    // Linux's accepted socket is a clone of the listener
                    // made when the call arrived: its options then.
                    s.sh.st.lock().opts = a.opts;
                    s.start_reader()?;
                    return Ok((s, remote));
                }
                if core::mem::take(&mut st.accept_full) {
                    return Err(Errno::ENFILE);
                }
                if nonblock {
                    return Err(Errno::EAGAIN);
                }
            }
            let timed_out = sh.readable.wait_while_interruptible_until(deadline, || {
                let st = sh.st.lock();
                !st.call_ready() && !st.accept_full && st.phase == Phase::Listening
            })?;
            if timed_out {
                return Err(Errno::EAGAIN);
            }
        }
    }

    fn start_reader(&self) -> Result<(), Errno> {
        let conv = self.sh.st.lock().conv.clone().ok_or(Errno::ENOTCONN)?;
        let sh = self.sh.clone();
        crate::sched::spawn("reader", move || reader(sh, conv))
            .map(|_| ())
            .ok_or(Errno::ENOMEM)
    }

    /// `connect`: dials `addr` on a dialer thread, which then becomes the
    /// connection's reader. A blocking socket waits for the outcome; a
    /// non-blocking one answers `EINPROGRESS` (then `POLLOUT` and
    /// `SO_ERROR` tell).
    pub fn connect(&self, addr: SocketAddr) -> Result<(), Errno> {
        // An IPv6-only socket cannot reach IPv4 (Linux's `tcp_v6_connect`,
        // once the socket's state allows a connect).
        let unreachable = self.v6only() && is_mapped(addr);
        let msg = addr::connect_ctl(addr)?;
        let old = {
            let mut st = self.sh.st.lock();
            match st.phase {
                // A non-blocking connect that has finished: reported once
                // as done, then as connected (Linux's sequence).
                Phase::Connected if !st.confirmed => {
                    st.confirmed = true;
                    return Ok(());
                }
                Phase::Connected | Phase::Listening => return Err(Errno::EISCONN),
                Phase::Connecting if self.nonblocking() => return Err(Errno::EALREADY),
                // A blocking call (a restart after a signal, or a new call)
                // waits for the dial under way, as Linux's does.
                Phase::Connecting => {
                    drop(st);
                    return self.wait_connected();
                }
                // After a failure seen by poll: the error (ECONNABORTED if
                // already taken), and the socket is disconnected, as Linux's
                // `__inet_stream_connect` does on a closed connecting one.
                Phase::Failed => {
                    let e = st.so_error.take().unwrap_or(Errno::ECONNABORTED);
                    st.disconnect(self.family);
                    return Err(e);
                }
                Phase::Fresh | Phase::Bound if unreachable => return Err(Errno::ENETUNREACH),
                // Bound to an IPv4-mapped address: no IPv6 source for an
                // IPv6 peer (Linux's `tcp_v6_connect`).
                Phase::Bound
                    if st.addr_locked
                        && st.local.is_some_and(|l| l.is_ipv4() || is_mapped(l))
                        && addr.is_ipv6()
                        && !is_mapped(addr) =>
                {
                    return Err(Errno::EAFNOSUPPORT);
                }
                Phase::Fresh | Phase::Bound => {}
            }
            st.phase = Phase::Connecting;
            st.rebound = false;
            st.dial_started = false;
            st.so_error = None;
            st.remote = Some(addr);
            st.conv.take()
        };
        // A bound socket dials from its address: the same connection,
        // unless another reference holds it (then the host picks one).
        let bound = old.and_then(|old| {
            Arc::try_unwrap(old)
                .inspect_err(|old| {
                    if let Ok(c) = client() {
                        let _ = old.ctl(c, "hangup");
                    }
                })
                .ok()
        });
        let sh = self.sh.clone();
        // The options the host socket carries out, set before it dials.
        let setup: Vec<&'static str> = [
            (self.int_opt(IPPROTO_TCP, TCP_NODELAY).unwrap_or(0) != 0).then_some("nodelay"),
            (self.int_opt(SOL_SOCKET, SO_KEEPALIVE).unwrap_or(0) != 0).then_some("keepalive"),
            // The host socket's port is freed as Linux frees the program's
            // (a TIME_WAIT it leaves behind does not stop a rebind).
            (self.int_opt(SOL_SOCKET, SO_REUSEADDR).unwrap_or(0) != 0).then_some("reuseaddr"),
            self.sh
                .st
                .lock()
                .opts
                .abortive_close()
                .then_some("linger 0"),
        ]
        .into_iter()
        .flatten()
        .collect();
        if crate::sched::spawn("dialer", move || dialer(sh, bound, msg, &setup)).is_none() {
            let mut st = self.sh.st.lock();
            st.phase = Phase::Failed;
            return Err(Errno::ENOMEM);
        }
        if self.nonblocking() {
            // When Linux's connect answers EINPROGRESS it has chosen the
            // source address and port (`getsockname` shows them; Netty reads
            // them there): wait until the dial has reached the gateway, a few
            // quick requests.
            let sh = &*self.sh;
            sh.writable.wait_while(|| {
                let st = sh.st.lock();
                st.phase == Phase::Connecting && !st.dial_started
            });
            return Err(Errno::EINPROGRESS);
        }
        self.wait_connected()
    }

    /// A blocking `connect`'s wait for the dial's outcome.
    fn wait_connected(&self) -> Result<(), Errno> {
        let sh = &*self.sh;
        sh.writable
            .wait_while_interruptible(|| sh.st.lock().phase == Phase::Connecting)?;
        let mut st = sh.st.lock();
        match st.phase {
            Phase::Connected => {
                st.confirmed = true;
                Ok(())
            }
            _ => {
                // A blocking connect's failure disconnects the socket.
                st.disconnect(self.family);
                Err(st.so_error.take().unwrap_or(Errno::ECONNREFUSED))
            }
        }
    }

    /// Receives up to `max` bytes. `peek` leaves them in the buffer;
    /// `waitall` waits until `max` have come (or the end).
    pub fn recv(
        &self,
        max: usize,
        nonblock: bool,
        peek: bool,
        waitall: bool,
    ) -> Result<Vec<u8>, Errno> {
        let sh = &*self.sh;
        let deadline = self.deadline(false);
        let mut out: Vec<u8> = Vec::new();
        if max == 0 {
            let phase = sh.st.lock().phase;
            return match phase {
                // Linux's tcp_recvmsg looks once as for a byte: 0 with data
                // or at the end, EAGAIN (or a wait) without.
                Phase::Connected => self.recv(1, nonblock, true, false).map(|_| out),
                Phase::Connecting => Ok(out),
                _ => Err(Errno::ENOTCONN),
            };
        }
        loop {
            {
                let mut st = sh.st.lock();
                match st.phase {
                    Phase::Connected => {}
                    // Linux's tcp_recvmsg: shut for reading ends a receive
                    // before it looks at the (unconnected) state.
                    Phase::Failed if st.so_error.is_some() => {
                        return Err(st.so_error.take().unwrap_or(Errno::ENOTCONN));
                    }
                    Phase::Fresh | Phase::Bound | Phase::Failed | Phase::Connecting
                        if st.shut_rd =>
                    {
                        return Ok(out);
                    }
                    Phase::Connecting if !nonblock => {}
                    Phase::Connecting => return Err(Errno::EAGAIN),
                    _ => return Err(Errno::ENOTCONN),
                }
                if !st.ring.is_empty() {
                    let want = (max - out.len()).min(st.ring.len());
                    let at = out.len();
                    out.resize(at + want, 0);
                    if peek {
                        st.ring.peek(&mut out[at..]);
                    } else {
                        st.ring.pop(&mut out[at..]);
                    }
                    let room = st.ring.space() >= MIN_ROOM;
                    drop(st);
                    if room && !peek {
                        sh.helper.wake_all();
                    }
                    if out.len() == max || !waitall || peek {
                        return Ok(out);
                    }
                    continue;
                }
                if st.eof || st.shut_rd {
                    if !out.is_empty() {
                        return Ok(out);
                    }
                    return match st.read_err.take() {
                        Some(e) => Err(e),
                        None => Ok(out),
                    };
                }
                if nonblock {
                    if !st.demand {
                        st.demand = true;
                        drop(st);
                        sh.helper.wake_all();
                    }
                    return if out.is_empty() {
                        Err(Errno::EAGAIN)
                    } else {
                        Ok(out)
                    };
                }
                st.demand = true;
            }
            sh.helper.wake_all();
            let r = sh.readable.wait_while_interruptible_until(deadline, || {
                let st = sh.st.lock();
                st.ring.is_empty()
                    && !st.eof
                    && !st.shut_rd
                    && matches!(st.phase, Phase::Connected | Phase::Connecting)
            });
            // Bytes already taken are the call's result; with none, the
            // error or, once `SO_RCVTIMEO` has passed, EAGAIN.
            match r {
                Err(e) => return if out.is_empty() { Err(e) } else { Ok(out) },
                Ok(true) => {
                    return if out.is_empty() {
                        Err(Errno::EAGAIN)
                    } else {
                        Ok(out)
                    };
                }
                Ok(false) => {}
            }
        }
    }

    /// Sends `data`, all of it unless an error comes first (a blocking
    /// socket waits for room; a non-blocking one takes what fits). `EPIPE`
    /// once the connection is shut down for writing or the peer has gone
    /// (the caller raises `SIGPIPE`).
    ///
    /// With streaming on the bytes go to the send buffer and the call
    /// returns: the connection's writer hands them to the gateway at once
    /// (it runs before the caller goes on) and, while one write is under
    /// way, gathers what comes meanwhile into the next. An error of a
    /// write shows on a later call, as with Linux's TCP. With streaming off,
    /// or once the peer has closed or reset its side (so that the error
    /// a write meets comes back from that write, as on Linux), the caller
    /// writes to the gateway itself and waits for the answer.
    pub fn send(&self, data: &[u8], nonblock: bool) -> Result<usize, Errno> {
        let sh = &*self.sh;
        let deadline = self.deadline(true);
        let conv = loop {
            let mut st = sh.st.lock();
            // A reset not yet reported (before or after the end of file):
            // the send reports it and takes it, before a shutdown's EPIPE,
            // as Linux's `sk_stream_error` takes `sk_err`.
            if matches!(st.phase, Phase::Connected | Phase::Failed)
                && (st.so_error.is_some() || st.read_err.is_some())
            {
                let e = st.so_error.take().or_else(|| st.read_err.take());
                return Err(e.unwrap_or(Errno::EPIPE));
            }
            if st.shut_wr {
                return Err(Errno::EPIPE);
            }
            match st.phase {
                Phase::Connected => break st.conv.clone().ok_or(Errno::EPIPE)?,
                Phase::Connecting if nonblock => return Err(Errno::EAGAIN),
                Phase::Connecting => {
                    drop(st);
                    sh.writable
                        .wait_while_interruptible(|| sh.st.lock().phase == Phase::Connecting)?;
                }
                Phase::Failed => {
                    let mut st = st;
                    return Err(st.so_error.take().unwrap_or(Errno::EPIPE));
                }
                _ => return Err(Errno::EPIPE),
            }
        };
        if data.is_empty() {
            // Nothing to send, but a broken connection is still `EPIPE`.
            let st = sh.st.lock();
            return match st.write_err {
                Some(e) => Err(e),
                None if st.broken => Err(Errno::EPIPE),
                None => Ok(0),
            };
        }
        let mut done = 0;
        while done < data.len() {
            let mut st = sh.st.lock();
            if let Some(e) = st.write_err {
                return so_far(done, e);
            }
            if st.shut_wr {
                return so_far(done, Errno::EPIPE);
            }
            // A large blocking write goes out from the caller's buffer,
            // after what is queued: copying it through the send buffer
            // would cost more than the wait for the gateway saves. A
            // non-blocking one must not wait for the peer (the gateway
            // holds a write until the host socket takes a byte), so it
            // queues what fits and returns that count.
            let large = data.len() - done >= LARGE_WRITE && !nonblock;
            let behind = Self::buffering(&st) && !large;
            if !behind {
                // In order after whatever is queued or being written.
                if st.writing || !st.out.is_empty() {
                    st.nospace = true;
                    if nonblock {
                        return so_far(done, Errno::EAGAIN);
                    }
                    drop(st);
                    match sh
                        .writable
                        .wait_while_interruptible_until(deadline, || Self::busy(&sh.st.lock()))
                    {
                        Err(e) => return so_far(done, e),
                        // `SO_SNDTIMEO` passed.
                        Ok(true) => return so_far(done, Errno::EAGAIN),
                        Ok(false) => {}
                    }
                    continue;
                }
                st.writing = true;
                let nodelay = core::mem::take(&mut st.nodelay_pending);
                drop(st);
                if nodelay && let Ok(c) = client() {
                    let _ = conv.ctl(c, "nodelay");
                }
                let r = write_all(&conv, &data[done..]);
                let mut st = sh.st.lock();
                st.writing = false;
                drop(st);
                sh.flush.wake_all();
                sh.writable.wake_all();
                return match r {
                    Ok(n) => Ok(done + n),
                    Err((n, _)) if done + n > 0 => Ok(done + n),
                    Err((_, e)) => Err(e),
                };
            }
            let n = st.out.push(&data[done..]);
            if n < data.len() - done {
                st.nospace = true;
            }
            if n == 0 {
                if nonblock {
                    return so_far(done, Errno::EAGAIN);
                }
                drop(st);
                let r = sh.writable.wait_while_interruptible_until(deadline, || {
                    let st = sh.st.lock();
                    st.out.space() == 0 && st.write_err.is_none() && !st.shut_wr
                });
                match r {
                    Err(e) => return so_far(done, e),
                    Ok(true) => return so_far(done, Errno::EAGAIN),
                    Ok(false) => {}
                }
                continue;
            }
            done += n;
            let start = !st.writer;
            st.writer = true;
            // An idle writer takes the bytes now; a busy one when its
            // write is answered.
            let idle = !st.writing;
            drop(st);
            if start {
                let sh2 = self.sh.clone();
                let conv2 = conv.clone();
                if crate::sched::spawn("writer", move || writer(sh2, conv2)).is_none() {
                    let mut st = sh.st.lock();
                    st.writer = false;
                    st.write_err = Some(Errno::ENOMEM);
                    st.out.clear();
                    return Err(Errno::ENOMEM);
                }
                // A new thread is ready, not waiting: it finds the bytes.
                crate::sched::yield_now();
            } else if idle {
                sh.flush.hand_off();
            }
            if nonblock {
                break;
            }
        }
        Ok(done)
    }

    /// Whether writes go through the send buffer: streaming is on and the
    /// peer has neither closed nor reset its side (then a write must meet
    /// the error itself, as on Linux).
    fn buffering(st: &St) -> bool {
        streaming() && !st.eof && st.read_err.is_none()
    }

    /// Whether bytes wait to be written or a write is under way.
    fn busy(st: &St) -> bool {
        (st.writing || !st.out.is_empty()) && st.write_err.is_none()
    }

    /// `shutdown(how)`: 0 reading, 1 writing, 2 both.
    pub fn shutdown(&self, how: u64) -> Result<(), Errno> {
        if how > 2 {
            return Err(Errno::EINVAL);
        }
        let conv = {
            let mut st = self.sh.st.lock();
            if st.phase == Phase::Listening {
                // Linux disconnects a listener shut down for reading: its
                // waiting `accept`s fail with EINVAL, as do later ones.
                if how == 1 {
                    return Ok(());
                }
                st.phase = Phase::Fresh;
                let conv = st.conv.take();
                let accepts = core::mem::take(&mut st.accepts);
                drop(st);
                reset_unaccepted(ready_calls(accepts));
                if let (Some(conv), Ok(c)) = (conv, client()) {
                    let _ = conv.ctl(c, "hangup");
                }
                self.sh.helper.wake_all();
                self.sh.notify_input();
                return Ok(());
            }
            // A connection the peer reset, or whose ends both sent their
            // FIN, is closed (Linux's TCP_CLOSE, TIME_WAIT).
            let refused = st.phase != Phase::Connected || st.closed();
            // Marked shut even when refused (Linux's `inet_shutdown`: a
            // later receive gives end of file).
            if how != 1 {
                st.shut_rd = true;
            }
            if how != 0 {
                st.shut_wr = true;
            }
            if refused {
                // Pollers are woken all the same, as Linux's `inet_shutdown`
                // calls `sk_state_change` on a closed socket (an
                // edge-triggered registration sees an event).
                drop(st);
                self.sh.notify_state();
                return Err(Errno::ENOTCONN);
            }
            // Linux's `inet_shutdown` settles a finished non-blocking
            // connect as connected: a later `connect` is EISCONN.
            st.confirmed = true;
            st.conv.clone()
        };
        if how != 0
            && let Some(conv) = conv
        {
            // After the bytes still queued: the writer sends it then.
            let deferred = {
                let mut st = self.sh.st.lock();
                st.shut_pending = st.writer && Self::busy(&st);
                st.shut_pending
            };
            if deferred {
                self.sh.flush.wake_all();
            } else {
                let _ = conv.ctl(client()?, "shutdown wr");
            }
        }
        self.sh.notify_state();
        Ok(())
    }

    /// The local address (`getsockname`).
    pub fn local(&self) -> SocketAddr {
        self.sh
            .st
            .lock()
            .local
            .unwrap_or_else(|| addr::unspecified(self.family))
    }

    /// The peer's address (`getpeername`).
    pub fn remote(&self) -> Result<SocketAddr, Errno> {
        let st = self.sh.st.lock();
        match st.phase {
            Phase::Connected if st.closed() => Err(Errno::ENOTCONN),
            Phase::Connected => st.remote.ok_or(Errno::ENOTCONN),
            _ => Err(Errno::ENOTCONN),
        }
    }

    /// `setsockopt`.
    pub fn set_option(&self, level: u32, name: u32, value: &[u8]) -> Result<(), Errno> {
        let (int, conv) = {
            let mut st = self.sh.st.lock();
            // Fixed while the socket has a port (Linux's `do_ipv6_setsockopt`;
            // a socket without one is a bindable one).
            if level == IPPROTO_IPV6
                && name == IPV6_V6ONLY
                && self.family == addr::AF_INET6
                && !Self::bindable(&st)
            {
                return Err(Errno::EINVAL);
            }
            let int = st.opts.set(level, name, value)?;
            if int != 0
                && level == IPPROTO_TCP
                && name == TCP_NODELAY
                && st.phase == Phase::Connected
                && streaming()
            {
                // Before the next write, by the writer: the caller does not
                // wait for the gateway (servers set it on every accepted
                // connection).
                st.nodelay_pending = true;
                return Ok(());
            }
            // The port-sharing options count in the host's conflict checks
            // whenever they are set (Linux looks at both sockets' flags as
            // they are then): a bound or listening socket's too.
            let reuse = level == SOL_SOCKET && matches!(name, SO_REUSEADDR | SO_REUSEPORT);
            (
                int,
                st.conv
                    .clone()
                    .filter(|_| st.phase == Phase::Connected || reuse),
            )
        };
        // The options the host socket carries out itself.
        if let Some(conv) = conv {
            let c = client()?;
            if level == IPPROTO_TCP && name == TCP_NODELAY && int != 0 {
                conv.ctl(c, "nodelay")?;
            } else if level == SOL_SOCKET && name == SO_KEEPALIVE && int != 0 {
                conv.ctl(c, "keepalive")?;
            } else if let Some(&(_, word)) = REUSE_CTLS
                .iter()
                .find(|&&(opt, _)| level == SOL_SOCKET && name == opt)
            {
                let off = if int != 0 { "" } else { " off" };
                conv.ctl(c, &format!("{word}{off}"))?;
            } else if level == SOL_SOCKET && name == SO_LINGER {
                // An abortive close resets the host connection; a lingering
                // one is not waited for (the gateway closes in the
                // background, as a non-blocking socket's close).
                let abort = self.sh.st.lock().opts.abortive_close();
                conv.ctl(c, if abort { "linger 0" } else { "linger off" })?;
            }
        }
        Ok(())
    }

    /// `getsockopt`: the value's bytes (the caller truncates).
    pub fn get_option(&self, level: u32, name: u32) -> Result<Vec<u8>, Errno> {
        let int = |v: i32| Ok(v.to_le_bytes().to_vec());
        let mut st = self.sh.st.lock();
        match (level, name) {
            (SOL_SOCKET, SO_ERROR) => {
                let e = st.so_error.take().or_else(|| st.read_err.take());
                int(e.map_or(0, |e| e.0 as i32))
            }
            (SOL_SOCKET, SO_ACCEPTCONN) => int(i32::from(st.phase == Phase::Listening)),
            _ => st.opts.get(level, name),
        }
    }

    /// Bytes ready to read (`FIONREAD`).
    pub fn available(&self) -> usize {
        self.sh.st.lock().ring.len()
    }

    /// Bytes sent but not yet handed to the gateway (`SIOCOUTQ`).
    pub fn queued(&self) -> usize {
        let st = self.sh.st.lock();
        st.out.len()
    }

    /// `IPV6_V6ONLY` is set (an IPv6 socket only).
    fn v6only(&self) -> bool {
        self.family == addr::AF_INET6 && self.int_opt(IPPROTO_IPV6, IPV6_V6ONLY).unwrap_or(0) != 0
    }

    fn nonblocking(&self) -> bool {
        self.flags.load(Ordering::Relaxed) & crate::fd::O_NONBLOCK != 0
    }
}

impl Drop for Socket {
    fn drop(&mut self) {
        let (conv, accepts, abort) = {
            let mut st = self.sh.st.lock();
            st.closing = true;
            // Closed with bytes the program never read: Linux resets the
            // connection at once (`tcp_close`), dropping what was queued
            // to send. The bytes are here, not in the host socket, so the
            // gateway is told to (an abortive close).
            let abort = st.phase == Phase::Connected && !st.ring.is_empty() && !st.broken;
            if abort {
                st.out.clear();
            }
            // A connection with a writer is hung up by it, after the bytes
            // still queued (Linux sends them after a close too), and
            // without the closing thread waiting for the gateway.
            st.hangup_by_writer = st.writer && st.write_err.is_none() && !abort;
            let conv = st.conv.clone().filter(|_| !st.hangup_by_writer);
            (conv, core::mem::take(&mut st.accepts), abort)
        };
        // Calls accepted by the gateway but never by the program: reset.
        reset_unaccepted(ready_calls(accepts));
        // Hanging up ends the helper's posted read or listen; the fids
        // go when the helper lets go of the connection.
        if let (Some(conv), Ok(c)) = (conv, client()) {
            if abort {
                let _ = conv.ctl(c, "linger 0");
            }
            let _ = conv.ctl(c, "hangup");
        }
        if !self.sh.flush.hand_off() {
            self.sh.flush.wake_all();
        }
        self.sh.helper.wake_all();
        self.sh.readable.wake_all();
        self.sh.writable.wake_all();
        readiness_changed();
    }
}

impl FileLike for Socket {
    fn read(&self, max: usize, nonblock: bool) -> Result<Vec<u8>, Errno> {
        self.recv(max, nonblock, false, false)
    }

    /// `EPIPE` raises no `SIGPIPE` here: the system call does, when it
    /// fails as a whole (a write that sent some bytes returns their count).
    fn write(&self, data: &[u8], nonblock: bool) -> Result<usize, Errno> {
        self.send(data, nonblock)
    }

    fn read_now(&self, max: usize) -> Option<Result<Vec<u8>, Errno>> {
        // A non-blocking receive never waits: what the buffer holds, or
        // EAGAIN (a blocking read then traps and waits).
        Some(self.recv(max, true, false, false))
    }

    fn write_now(&self, data: &[u8]) -> Option<Result<usize, Errno>> {
        // Only into the send buffer while the writer is busy (it takes the
        // bytes when its write is answered); an idle writer is handed the
        // bytes by the trapped call, which may switch to it.
        let mut st = self.sh.st.lock();
        let ok = st.phase == Phase::Connected
            && Self::buffering(&st)
            && st.writer
            && st.writing
            && !st.shut_wr
            && st.write_err.is_none()
            && !data.is_empty()
            && st.out.space() >= data.len();
        ok.then(|| Ok(st.out.push(data)))
    }

    fn wake_keys(&self) -> (u16, u16) {
        crate::vfs::poll_bits::SOCKET_WAKE_KEYS
    }

    fn poll(&self) -> u16 {
        let mut st = self.sh.st.lock();
        let mut ev = 0;
        match st.phase {
            // Linux's tcp_poll on a closed socket: hung up, writable
            // unless shut for writing (then "writable" too: a send fails
            // at once), readable once shut for reading.
            Phase::Fresh | Phase::Bound | Phase::Failed => {
                ev |= POLLOUT | POLLWRNORM | POLLHUP;
                if st.shut_rd {
                    ev |= POLLIN | POLLRDNORM | POLLRDHUP;
                }
                if st.so_error.is_some() {
                    ev |= POLLERR;
                }
            }
            Phase::Listening => {
                if st.call_ready() {
                    ev |= POLLIN | POLLRDNORM;
                }
            }
            Phase::Connecting => {}
            Phase::Connected => {
                if !st.ring.is_empty() || st.eof || st.shut_rd {
                    ev |= POLLIN | POLLRDNORM;
                }
                if st.eof || st.shut_rd {
                    ev |= POLLRDHUP;
                }
                // As Linux's tcp_poll: writable once shut down for writing
                // too (a write then fails at once with EPIPE).
                if st.shut_wr || st.out.space() >= MIN_ROOM || st.write_err.is_some() {
                    ev |= POLLOUT | POLLWRNORM;
                } else {
                    st.nospace = true;
                }
                if st.write_err.is_some() {
                    ev |= POLLERR;
                }
                // A reset after the end of file is `SO_ERROR`'s until read.
                if st.read_err.is_some() || st.so_error.is_some() {
                    ev |= POLLERR;
                }
                // Both directions shut (by us or by the peer's FIN), or reset.
                if ((st.eof || st.shut_rd) && st.shut_wr) || st.broken {
                    ev |= POLLHUP;
                }
                // Whoever polls wants data: with streaming off, that is
                // when a read is posted.
                if st.ring.is_empty() && !st.eof && !st.demand {
                    st.demand = true;
                    drop(st);
                    self.sh.helper.wake_all();
                }
            }
        }
        ev
    }

    fn wakes(&self) -> [u64; 3] {
        self.sh.wakes.get()
    }

    fn flags(&self) -> &AtomicU32 {
        &self.flags
    }

    fn ioctl(&self, request: u64, arg: u64) -> Result<u64, Errno> {
        super::ioctl(self.family, request, arg, self.available(), self.queued())
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

/// The dialer: connects, then reads for the connection.
fn dialer(sh: Arc<Shared>, bound: Option<Conv>, msg: String, setup: &[&str]) {
    crate::sched::current().set_posts();
    let outcome = (|| {
        let c = client().map_err(|e| (e, None))?;
        let mut conv = match bound {
            Some(conv) => conv,
            None => Conv::clone_new(c, "tcp").map_err(|e| (e, None))?,
        };
        for ctl in setup {
            conv.ctl(c, ctl).map_err(|e| (e, None))?;
        }
        // The dial goes in, then a read of the local address behind it:
        // the gateway starts the host's connect as it takes the ctl write
        // off the ring, and answers `/net` requests in ring order, so the
        // read gives the address and port the host chose.
        let mut early = None;
        let dialed = match c.write_post(conv.ctl, 0, msg.as_bytes()) {
            Some(posted) => {
                early = conv.address(c, "local").filter(|l| l.port() != 0);
                dial_started(&sh, early);
                posted.wait().map(|_| ())
            }
            None => {
                dial_started(&sh, None);
                conv.ctl(c, &msg)
            }
        };
        // A failed dial's port is still the socket's name (Linux keeps
        // it for `getsockname`, the address cleared).
        dialed.map_err(|e| (e, conv.address(c, "local")))?;
        conv.open_data(c).map_err(|e| (e, None))?;
        // The host fixed the source address and port when its connect
        // began: what the read behind the dial gave stays true.
        let local = early.or_else(|| conv.address(c, "local"));
        Ok::<_, (Errno, Option<SocketAddr>)>((Arc::new(conv), local))
    })();
    let conv = {
        let mut st = sh.st.lock();
        match outcome {
            Ok((conv, local)) if !st.closing => {
                st.phase = Phase::Connected;
                st.conv = Some(conv.clone());
                st.local = local;
                Some(conv)
            }
            Ok(_) => None,
            Err((e, local)) => {
                // The dial's address stays the socket's name until the
                // next `connect` disconnects it (Linux's `tcp_done` keeps
                // it, `tcp_disconnect` clears an address not bound).
                if local.is_some() {
                    st.local = local;
                }
                // Linux's `tcp_done`: closed both ways (a receive gives end
                // of file once the error is taken, a send `EPIPE`).
                st.phase = Phase::Failed;
                st.so_error = Some(e);
                st.shut_rd = true;
                st.shut_wr = true;
                None
            }
        }
    };
    sh.notify_state();
    if let Some(conv) = conv {
        reader(sh, conv);
    }
}

/// The dial of a connecting socket reached the gateway: its local address
/// (when the gateway had one) is the socket's name from now on, and a
/// non-blocking `connect` waiting for this may answer `EINPROGRESS`.
fn dial_started(sh: &Shared, local: Option<SocketAddr>) {
    let mut st = sh.st.lock();
    if st.phase == Phase::Connecting {
        if let Some(l) = local.filter(|l| l.port() != 0) {
            st.local = Some(l);
        }
        st.dial_started = true;
    }
    drop(st);
    sh.writable.wake_all();
}

/// What a send that stops early returns: the bytes it took, else the error.
fn so_far(done: usize, e: Errno) -> Result<usize, Errno> {
    if done > 0 { Ok(done) } else { Err(e) }
}

/// Writes all of `data` to the connection's `data` file: the gateway may
/// take less than asked at a time. On an error, how much went before it.
fn write_all(conv: &Conv, data: &[u8]) -> Result<usize, (usize, Errno)> {
    let c = client().map_err(|e| (0, e))?;
    let fid = conv.data.ok_or((0, Errno::EPIPE))?;
    let chunk = c.iounit() as usize;
    // More than one message: two in flight, so the gateway sends the next
    // while the last one's answer comes back (it keeps them in order,
    // each whole before the next).
    let mut flight: alloc::collections::VecDeque<(crate::p9::PostedWrite<'_>, usize)> =
        alloc::collections::VecDeque::new();
    let mut done = 0;
    let mut sent = 0;
    let mut err = None;
    while done < data.len() && err.is_none() {
        while data.len() > chunk && flight.len() < 2 && sent < data.len() {
            let end = data.len().min(sent + chunk);
            match c.write_post(fid, 0, &data[sent..end]) {
                Some(p) => {
                    flight.push_back((p, end - sent));
                    sent = end;
                }
                None => break,
            }
        }
        let (r, len) = match flight.pop_front() {
            Some((p, len)) => (p.wait(), len),
            None => {
                let end = data.len().min(done + chunk);
                sent = end;
                (c.write(fid, 0, &data[done..end]), end - done)
            }
        };
        match r {
            Ok(n) => {
                done += n;
                // Short: an error cut it off (the gateway sends each
                // whole otherwise); what follows must not go out.
                if n < len {
                    err = Some(Errno::EPIPE);
                }
            }
            Err(e) => err = Some(e),
        }
    }
    // Whatever is still in flight went out only if all before it did.
    for (p, _) in flight.drain(..) {
        match p.wait() {
            Ok(n) if err.is_none() => done += n,
            Err(e) if err.is_none() => err = Some(e),
            _ => {}
        }
    }
    match err {
        None => Ok(done),
        Some(e) => Err((done, e)),
    }
}

/// The writer of a connection (streaming on): writes what `send` queued,
/// one write at a time, all that has gathered in each; sends a deferred
/// `shutdown wr` and hang-up after the bytes before them.
fn writer(sh: Arc<Shared>, conv: Arc<Conv>) {
    crate::sched::current().set_posts();
    let chunk = client().map_or(4096, |c| c.iounit() as usize);
    let mut buf: Vec<u8> = Vec::new();
    loop {
        sh.flush.wait_while(|| {
            let st = sh.st.lock();
            st.writing || (st.out.is_empty() && !st.shut_pending && !st.closing)
        });
        // What to do next, decided under the lock: a `ctl` message that
        // must go before (nodelay) or after (shutdown, hangup) the bytes
        // queued, or a write of what has gathered.
        let mut room_wake = false;
        let (ctl, n) = {
            let mut st = sh.st.lock();
            if st.writing {
                continue;
            }
            if st.out.is_empty() && st.shut_pending {
                st.shut_pending = false;
                (Some("shutdown wr"), 0)
            } else if st.out.is_empty() && st.closing {
                let hangup = st.hangup_by_writer;
                drop(st);
                if hangup && let Ok(c) = client() {
                    let _ = conv.ctl(c, "hangup");
                }
                break;
            } else if st.out.is_empty() {
                continue;
            } else if st.nodelay_pending {
                st.nodelay_pending = false;
                (Some("nodelay"), 0)
            } else {
                let n = st.out.len().min(chunk);
                if buf.len() < n {
                    buf.resize(n, 0);
                }
                st.out.pop(&mut buf[..n]);
                st.writing = true;
                room_wake = core::mem::take(&mut st.nospace);
                (None, n)
            }
        };
        if let Some(msg) = ctl {
            if let Ok(c) = client() {
                let _ = conv.ctl(c, msg);
            }
            continue;
        }
        // Room came in the send buffer: a wake-up for those who found none.
        if room_wake {
            sh.wakes.output();
        }
        sh.writable.wake_all();
        readiness_changed();
        let r = write_all(&conv, &buf[..n]);
        {
            let mut st = sh.st.lock();
            st.writing = false;
            if let Err((_, e)) = r {
                st.write_err.get_or_insert(e);
                st.out.clear();
                // Nothing more will be written; a deferred shutdown is moot.
                st.shut_pending = false;
            }
        }
        if r.is_err() {
            sh.wakes.all();
        }
        sh.writable.wake_all();
        readiness_changed();
    }
}

/// The reader of a connection: keeps a read of `data` posted while the
/// receive buffer has room (streaming) or while a reader waits. A stream
/// in bulk (a read filled the largest buffer) gets a second read in
/// flight behind the first, so the gateway receives the next bytes while
/// this one's are being taken: the gateway serves a connection's reads in
/// the order they were sent.
fn reader(sh: Arc<Shared>, conv: Arc<Conv>) {
    crate::sched::current().set_posts();
    let (Ok(c), Some(fid)) = (client(), conv.data) else {
        return;
    };
    let stream = streaming();
    // Small until a read fills it: an idle connection costs little memory.
    let mut size = 4096;
    let mut spare: Vec<Vec<u8>> = Vec::new();
    let mut flight: alloc::collections::VecDeque<(crate::p9::PostedRead<'_>, usize)> =
        alloc::collections::VecDeque::new();
    // Bytes the reads in flight may bring: room they hold in the ring.
    let mut promised = 0;
    let mut clean_end = false;
    loop {
        let depth = if stream && size == READ_CHUNK { 2 } else { 1 };
        let mut closing = false;
        while flight.len() < depth {
            let want = {
                let st = sh.st.lock();
                closing = st.closing;
                let room = st.ring.space().saturating_sub(promised);
                if closing || room < MIN_ROOM || !(stream || st.demand) {
                    break;
                }
                room.min(size)
            };
            let mut buf = spare.pop().unwrap_or_default();
            if buf.len() != size {
                buf = vec![0u8; size];
            }
            match c.read_post(fid, 0, buf, want) {
                Ok(p) => {
                    flight.push_back((p, want));
                    promised += want;
                }
                Err(buf) => {
                    spare.push(buf);
                    if flight.is_empty() {
                        // No room in the ring at all: the blocking read
                        // waits for it (as every request does).
                        let mut buf = spare.pop().unwrap_or_default();
                        let r = c.read(fid, 0, &mut buf[..want]);
                        let end = take_read(&sh, &buf, r, &mut clean_end);
                        spare.push(buf);
                        if end {
                            return finish_reader(&sh, c, fid, &mut spare, stream && clean_end);
                        }
                    }
                    break;
                }
            }
        }
        let Some((p, want)) = flight.pop_front() else {
            if closing {
                break;
            }
            sh.helper.wait_while(|| {
                let st = sh.st.lock();
                !st.closing && (st.ring.space() < MIN_ROOM || !(stream || st.demand))
            });
            if sh.st.lock().closing {
                break;
            }
            continue;
        };
        promised -= want;
        let (buf, r) = p.wait();
        let filled = r == Ok(buf.len());
        let end = take_read(&sh, &buf, r, &mut clean_end);
        spare.push(buf);
        if end {
            // Whatever is still in flight ends too (end of file, the
            // error again, or cancelled by our hang-up): nothing more
            // comes after it.
            for (p, _) in flight.drain(..) {
                let (buf, _) = p.wait();
                spare.push(buf);
            }
            return finish_reader(&sh, c, fid, &mut spare, stream && clean_end);
        }
        if filled && size < READ_CHUNK {
            size *= 4;
        }
    }
    for (p, _) in flight.drain(..) {
        let _ = p.wait();
    }
}

/// Takes what a read brought (`r`, into `buf`): into the receive buffer,
/// or the end of the stream. Whether the stream ended; `clean_end` when
/// by the peer's FIN.
fn take_read(sh: &Shared, buf: &[u8], r: Result<usize, Errno>, clean_end: &mut bool) -> bool {
    let end = {
        let mut st = sh.st.lock();
        st.demand = false;
        match r {
            Ok(0) => {
                st.eof = true;
                *clean_end = true;
            }
            Ok(n) => {
                st.ring.push(&buf[..n]);
            }
            // A posted read interrupted by a snapshot (`snapshot::take`):
            // nothing came; the reader posts it again.
            Err(Errno::EINTR) if !st.closing => {}
            Err(e) => {
                st.eof = true;
                // A hang-up of ours is no error of the connection's.
                if !st.closing {
                    st.read_err = Some(e);
                    st.broken = true;
                }
            }
        }
        st.eof
    };
    if !end {
        sh.notify_input();
    }
    end
}

/// The stream ended: the peer's FIN or a reset (EPOLLRDHUP, EPOLLHUP,
/// EPOLLERR), then the watch for a reset after a clean end.
fn finish_reader(
    sh: &Shared,
    c: &Client,
    fid: crate::p9::Fid,
    spare: &mut Vec<Vec<u8>>,
    watch: bool,
) {
    sh.notify_state();
    if watch {
        let mut buf = spare
            .pop()
            .filter(|b| b.len() >= 4096)
            .unwrap_or_else(|| vec![0u8; 4096]);
        watch_after_eof(sh, c, fid, &mut buf);
    }
}

/// After the peer's FIN, waits for the reset that may still come (the
/// peer closed with our bytes unread, or a send of ours reached it closed):
/// Linux then reports `POLLERR | POLLHUP` and `SO_ERROR` (`EPIPE`), while
/// reads go on seeing the end of file. The gateway answers the watch read
/// with that error, or with end of file when we close first. `buf` (4 KiB
/// or more, which the reply never fills) makes the read one straight into
/// it: a pooled reply buffer (msize bytes) held by every half-closed
/// connection would add up.
fn watch_after_eof(sh: &Shared, c: &Client, fid: crate::p9::Fid, buf: &mut [u8]) {
    match c.read(fid, astraea_9p::consts::NET_WATCH_OFFSET, buf) {
        // Closed (or hung up) by us without an error; EINTR: cancelled by
        // our close.
        Ok(_) | Err(Errno::EINTR) => {}
        Err(e) => {
            let mut st = sh.st.lock();
            if st.closing {
                return;
            }
            st.so_error = Some(e);
            st.broken = true;
            drop(st);
            sh.notify_state();
        }
    }
}

/// The acceptor of a listening socket: keeps a `listen` open posted while
/// fewer than the backlog's calls wait for `accept`. Each call it takes is
/// set up (its data file opened, its addresses read: five round trips to
/// the gateway) by a thread of its own while the acceptor takes the next,
/// so calls arriving together do not queue behind each other's setup; they
/// are still accepted in the order they came.
fn acceptor(sh: Arc<Shared>, conv: Arc<Conv>, local: Option<SocketAddr>) {
    crate::sched::current().set_posts();
    let Ok(c) = client() else {
        return;
    };
    let num = format!("{}", conv.n);
    loop {
        sh.helper.wait_while(|| {
            let st = sh.st.lock();
            !st.closing && st.accepts.len() >= st.backlog
        });
        if sh.st.lock().closing {
            break;
        }
        let epoch = sh.st.lock().accept_epoch;
        // The open of `listen` waits for a call and makes the fid its ctl.
        let taken = c
            .walk(c.root(), &["net", "tcp", &num, "listen"])
            .and_then(|fid| match c.open(fid, O_RDWR) {
                Ok(qid) => Ok((fid, qid.path)),
                Err(e) => {
                    c.clunk(fid);
                    Err(e)
                }
            });
        let (fid, qid_path) = match taken {
            Ok(taken) => taken,
            Err(_) if sh.st.lock().closing => break,
            // The listener was hung up under us.
            Err(Errno::EINVAL) => break,
            // Interrupted by a snapshot (`snapshot::take`): posted again
            // at once (held until the snapshot is done), so that a
            // restored listener takes its first call without waiting.
            Err(Errno::EINTR) => continue,
            Err(e) => {
                // Out of connections at the gateway (ENFILE), of the host's
                // descriptors (EMFILE), or a call reset before it was
                // taken: try again shortly. The first two are the
                // program's to see: a waiting `accept` fails with ENFILE.
                log::debug!("net: accept on connection {}: {e}", conv.n);
                let mut st = sh.st.lock();
                if (e == Errno::EMFILE || e == Errno::ENFILE) && st.accept_epoch == epoch {
                    st.accept_full = true;
                    drop(st);
                    sh.readable.wake_all();
                    readiness_changed();
                } else {
                    drop(st);
                }
                crate::sched::sleep_ns(10_000_000);
                continue;
            }
        };
        // Its place in the queue, kept while it is set up.
        let id = {
            let mut st = sh.st.lock();
            let id = st.next_call;
            st.next_call += 1;
            st.accepts.push_back(Pending { id, call: None });
            id
        };
        let (sh2, conv2) = (sh.clone(), conv.clone());
        let spawned = crate::sched::spawn("accept", move || {
            crate::sched::current().set_posts();
            let call = set_up_call(c, fid, qid_path, local, &sh2);
            queue_call(&sh2, &conv2, id, call);
        });
        if spawned.is_none() {
            // No thread to spare: set it up here.
            let call = set_up_call(c, fid, qid_path, local, &sh);
            queue_call(&sh, &conv, id, call);
        }
    }
}

/// Sets up a call whose `listen` open made `fid` its ctl: its data file
/// and addresses, and the listener's options as they are now.
fn set_up_call(
    c: &'static Client,
    fid: Fid,
    qid_path: u64,
    local: Option<SocketAddr>,
    sh: &Shared,
) -> Result<Accepted, Errno> {
    let mut new = Conv::from_open_ctl(c, fid, "tcp", qid_path)?;
    // A call set up only in part is reset, not closed gracefully: the
    // program never accepted it (see `reset_unaccepted`).
    let reset = |new: &Conv, e: Errno| {
        let _ = new.ctl(c, "linger 0");
        e
    };
    // The call's data file and addresses, opened and read together.
    let n = format!("{}", new.n);
    let mut paths: Vec<(&[&str], u32)> = Vec::with_capacity(3);
    let data = ["net", "tcp", &n, "data"];
    let remote_file = ["net", "tcp", &n, "remote"];
    let local_file = ["net", "tcp", &n, "local"];
    paths.push((&data, O_RDWR));
    paths.push((&remote_file, O_RDONLY));
    if local.is_none() {
        paths.push((&local_file, O_RDONLY));
    }
    let opened = c.open_many(&paths);
    let addr_fids: Vec<Fid> = opened[1..].iter().filter_map(|r| (*r).ok()).collect();
    new.data = Some(match opened[0] {
        Ok(fid) => fid,
        Err(e) => {
            c.clunk_many(&addr_fids);
            return Err(reset(&new, e));
        }
    });
    // The listener's options as they are now: the call inherits them
    // (Linux clones the listening socket when a call comes).
    let opts = sh.st.lock().opts.clone();
    let nodelay = opts.int(IPPROTO_TCP, TCP_NODELAY).unwrap_or(0) != 0;
    let keepalive = opts.int(SOL_SOCKET, SO_KEEPALIVE).unwrap_or(0) != 0;
    if nodelay {
        let _ = new.ctl(c, "nodelay");
    }
    if keepalive {
        let _ = new.ctl(c, "keepalive");
    }
    // One address per path after `data`, None where it did not open.
    let mut texts = c.read_many(&addr_fids, 80).into_iter();
    let addrs: Vec<Option<SocketAddr>> = opened[1..]
        .iter()
        .map(|r| {
            let text = r.is_ok().then(|| texts.next()).flatten()?;
            addr::parse_text(&text.ok()?)
        })
        .collect();
    c.clunk_many(&addr_fids);
    let remote = addrs[0];
    let local = local.or(addrs.get(1).copied().flatten());
    Ok(Accepted {
        conv: new,
        local,
        remote,
        opts,
    })
}

/// Puts a call that was set up in its place in the queue, or resets it:
/// the listener was closed, shut down or listens anew (another
/// connection) meanwhile.
fn queue_call(sh: &Shared, conv: &Arc<Conv>, id: u64, call: Result<Accepted, Errno>) {
    let refused = {
        let mut st = sh.st.lock();
        let at = st.accepts.iter().position(|p| p.id == id);
        let ours = !st.closing
            && st.phase == Phase::Listening
            && st.conv.as_ref().is_some_and(|l| Arc::ptr_eq(l, conv));
        match (call, at) {
            (Ok(a), Some(i)) if ours => {
                st.accepts[i].call = Some(a);
                None
            }
            (call, at) => {
                if let Some(i) = at {
                    st.accepts.remove(i);
                }
                if let Err(e) = &call {
                    log::debug!("net: setting up a call on connection {}: {e}", conv.n);
                }
                call.ok()
            }
        }
    };
    reset_unaccepted(refused);
    // A call ready (readers), or room in the backlog (the acceptor).
    sh.notify_input();
    sh.helper.wake_all();
}
