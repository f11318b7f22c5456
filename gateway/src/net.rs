//! `/net/tcp` and `/net/udp`: TCP connections and UDP sockets as files,
//! after Plan 9's ip(3).
//!
//! ```text
//! /net/tcp/clone            open: reserves connection N (the fid becomes N/ctl)
//! /net/tcp/N/ctl            read: "N"; write: connect, announce, bind, listen,
//!                           reuseaddr, reuseport, v6only, hangup, nodelay,
//!                           keepalive, linger
//! /net/tcp/N/data           the byte stream
//! /net/tcp/N/listen         open: waits for a call on announced N (the fid becomes M/ctl)
//! ```
//!
//! `announce ADDR` binds and listens at once (Plan 9's meaning). The socket
//! API's steps are separate: `bind ADDR` only binds (a connection to that
//! port is refused until `listen [BACKLOG]`, as on Linux), and a `connect`
//! after `bind` dials from the bound address. `reuseaddr`, `reuseport` and
//! `v6only` before `bind` (`reuseaddr` before `connect` too) set
//! `SO_REUSEADDR`, `SO_REUSEPORT` and `IPV6_V6ONLY` on the host socket.
//!
//! ```text
//! /net/tcp/N/local          "ADDR!PORT\n"
//! /net/tcp/N/remote         "ADDR!PORT\n"
//! /net/tcp/N/status         "Established\n", "Listen\n", ...
//! /net/udp/...              the same files; ctl `headers` makes every
//!                           data read and write carry a 52-byte header
//!                           with the datagram's addresses (see [`UDP_HEADER`])
//! ```
//!
//! Host sockets are non-blocking and registered with one `mio` poll thread
//! per gateway (started on first use). A request whose socket call would
//! block (a read with no data, a write to a full buffer, a listen with no
//! caller, a connect in progress) holds no thread: it is parked on its
//! connection as a [`Wait`] step plus the session's [`Resume`], and the
//! worker returns. The poll thread retries the parked steps on readiness
//! (non-blocking calls only) and hands finished ones to the session, which
//! builds and delivers the reply on its worker pool; the request's
//! [`Cancel`] hook (`Tflush`, `Tversion`, the end of the session) unparks
//! it with `EINTR`.
//!
//! Lock order: a connection's state lock may be held while taking the
//! registrar's table lock (registering, closing); nothing else is taken
//! under it (resumes run after it is released).
//! The session's tag lock, the connection table lock and a [`Cancel`]'s
//! hook list are never held while a connection lock is taken: the poll
//! thread drops the registrar table lock first, the last [`ConvRef`]
//! releases the connection table before closing, cancellation runs hooks
//! after releasing its list, and replies are delivered with no
//! connection lock held.
//!
//! A parked request keeps its open file (so its connection) alive, and
//! the connection keeps the parked request: the cycle ends when the
//! request is resumed, which readiness, a state change (hangup, close) or
//! cancellation always does; dropping a session cancels all its requests.
//!
//! A connection lives while at least one fid has one of its files open;
//! the last clunk closes the host socket and frees the number.

use std::collections::HashMap;
use std::fmt;
use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Shutdown, SocketAddr};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::thread::JoinHandle;

use astraea_9p::{QTDIR, QTFILE, Qid};
use mio::event::Source;
use mio::net::{TcpListener, TcpStream, UdpSocket};
use mio::{Events, Interest, Poll, Registry, Token, Waker};

use crate::console::{Cancel, lock};
use crate::error::Errno;
use crate::session::SessionInner;
use crate::sys;

/// Decides which addresses the partition may reach or listen on.
///
/// The gateway asks before every `connect` and `announce`; a refusal is
/// answered `EACCES`. The default methods allow everything.
pub trait NetPolicy: Send + Sync + fmt::Debug {
    /// May the partition open a TCP connection to `addr`?
    fn allow_connect(&self, addr: SocketAddr) -> bool {
        let _ = addr;
        true
    }

    /// May the partition listen for TCP connections on `addr`?
    fn allow_announce(&self, addr: SocketAddr) -> bool {
        let _ = addr;
        true
    }

    /// The host port a TCP socket the partition binds to its port `port`
    /// takes instead (`astraea run --publish`; 0: any free one), or `None`
    /// to bind that port itself. The partition keeps seeing `port` as its
    /// local port.
    fn host_port(&self, port: u16) -> Option<u16> {
        let _ = port;
        None
    }

    /// A socket of the partition's port `port` (one [`host_port`]
    /// maps) is bound on the host at `host`.
    ///
    /// [`host_port`]: NetPolicy::host_port
    fn bound(&self, port: u16, host: SocketAddr) {
        let _ = (port, host);
    }

    /// Where on the host a TCP connection the partition makes to `addr`
    /// goes: a loopback address's published port is the partition's own
    /// listener, wherever it is on the host.
    fn dial(&self, addr: SocketAddr) -> SocketAddr {
        addr
    }
}

/// A [`NetPolicy`] with published ports: TCP port `guest` of the
/// partition is host port `host` (0: any free port, said on stderr once
/// bound), as a container's published port is.
#[derive(Debug)]
pub struct Published {
    inner: Arc<dyn NetPolicy>,
    ports: Vec<(u16, u16)>,
    /// The host port each published port was last bound at.
    at: Mutex<Vec<(u16, u16)>>,
}

impl Published {
    /// `inner` decides what is allowed; `ports` are `(guest, host)` pairs.
    pub fn new(inner: Arc<dyn NetPolicy>, ports: Vec<(u16, u16)>) -> Published {
        Published {
            inner,
            ports,
            at: Mutex::new(Vec::new()),
        }
    }
}

impl NetPolicy for Published {
    fn allow_connect(&self, addr: SocketAddr) -> bool {
        self.inner.allow_connect(addr)
    }

    fn allow_announce(&self, addr: SocketAddr) -> bool {
        self.inner.allow_announce(addr)
    }

    fn host_port(&self, port: u16) -> Option<u16> {
        self.ports
            .iter()
            .find(|(g, _)| *g == port && port != 0)
            .map(|(_, h)| *h)
    }

    fn bound(&self, port: u16, host: SocketAddr) {
        let mut at = lock(&self.at);
        at.retain(|(g, _)| *g != port);
        at.push((port, host.port()));
    }

    fn dial(&self, mut addr: SocketAddr) -> SocketAddr {
        if addr.ip().is_loopback() {
            let at = lock(&self.at)
                .iter()
                .find(|(g, _)| *g == addr.port())
                .map(|a| a.1);
            if let Some(p) = at.or(self.host_port(addr.port()).filter(|&p| p != 0)) {
                addr.set_port(p);
            }
        }
        addr
    }
}

/// The host address a TCP socket bound to the partition's `addr` binds
/// (see [`NetPolicy::host_port`]).
fn host_side(policy: &dyn NetPolicy, addr: SocketAddr) -> SocketAddr {
    let mut host = addr;
    if let Some(p) = policy.host_port(addr.port()) {
        host.set_port(p);
    }
    host
}

/// What the partition sees as the local address of a TCP socket it asked
/// to bind to `asked`, now bound on the host to `bound`: `bound` with the
/// partition's port if that port is published elsewhere (said on stderr,
/// for the user to reach it).
fn guest_side(policy: &dyn NetPolicy, asked: SocketAddr, bound: SocketAddr) -> SocketAddr {
    if policy.host_port(asked.port()).is_none() {
        return bound;
    }
    policy.bound(asked.port(), bound);
    eprintln!(
        "astraea: the partition's TCP port {} is published at {bound}",
        asked.port()
    );
    let mut shown = bound;
    shown.set_port(asked.port());
    shown
}

/// The default [`NetPolicy`]: everything is allowed.
#[derive(Debug, Default, Clone, Copy)]
pub struct AllowAll;

impl NetPolicy for AllowAll {}

/// Connections a gateway holds at once; more clone opens get `ENFILE`.
const MAX_CONVS: usize = 4096;
/// The host backlog of a socket `announce`d (listening at once), as
/// `mio` gives it.
const ANNOUNCE_BACKLOG: i32 = 1024;
/// Longest ctl message accepted; real commands are far shorter.
const MAX_CTL: usize = 256;
/// The poll thread's own token (connection tokens start at 1).
const WAKE: Token = Token(0);

/// Qid paths of `/net` files: below the namespace's synthetic range marker.
const QID_NET: u64 = (0xFFFF << 48) | (4 << 40);
const QID_CONV: u64 = astraea_9p::consts::NET_CONV_QID;
const _: () = assert!(QID_CONV == QID_NET | (1 << 32));

/// The size of the header a UDP connection in `headers` mode puts before
/// every datagram it reads and expects before every one it writes, as
/// Plan 9's: remote address (16 bytes, IPv4 as `::ffff:a.b.c.d`), local
/// address (16), interface address (16, the local one), remote port and
/// local port (2 each, big-endian).
pub const UDP_HEADER: usize = 52;
/// The largest UDP payload.
const MAX_DATAGRAM: usize = 65_507;

/// A `/net` protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Proto {
    Tcp,
    Udp,
}

impl Proto {
    fn name(self) -> &'static [u8] {
        match self {
            Proto::Tcp => b"tcp",
            Proto::Udp => b"udp",
        }
    }

    fn index(self) -> usize {
        match self {
            Proto::Tcp => 0,
            Proto::Udp => 1,
        }
    }
}

/// A file inside a connection directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ConvFile {
    Ctl,
    Data,
    Listen,
    Local,
    Remote,
    Status,
}

const CONV_FILES: [(&[u8], ConvFile); 6] = [
    (b"ctl", ConvFile::Ctl),
    (b"data", ConvFile::Data),
    (b"listen", ConvFile::Listen),
    (b"local", ConvFile::Local),
    (b"remote", ConvFile::Remote),
    (b"status", ConvFile::Status),
];

impl ConvFile {
    fn index(self) -> u64 {
        match self {
            ConvFile::Ctl => 1,
            ConvFile::Data => 2,
            ConvFile::Listen => 3,
            ConvFile::Local => 4,
            ConvFile::Remote => 5,
            ConvFile::Status => 6,
        }
    }

    /// Whether the file accepts writes.
    pub(crate) fn writable(self) -> bool {
        matches!(self, ConvFile::Ctl | ConvFile::Data | ConvFile::Listen)
    }
}

/// A node of the `/net` tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NetNode {
    /// `/net`.
    Root,
    /// `/net/tcp`, `/net/udp`.
    Dir(Proto),
    /// `/net/PROTO/clone`.
    Clone(Proto),
    /// `/net/PROTO/N`.
    Conv(Proto, usize),
    /// `/net/PROTO/N/FILE`.
    File(Proto, usize, ConvFile),
    /// `/net/ifaces`: the host's interfaces and addresses (read-only).
    Ifaces,
}

impl NetNode {
    pub(crate) fn qid(self) -> Qid {
        let p = |proto: Proto| (proto.index() as u64) << 31;
        let (ty, path) = match self {
            NetNode::Root => (QTDIR, QID_NET),
            NetNode::Dir(proto) => (QTDIR, QID_NET | 1 | (p(proto) >> 20)),
            NetNode::Clone(proto) => (QTFILE, QID_NET | 2 | (p(proto) >> 20)),
            NetNode::Ifaces => (QTFILE, QID_NET | 3),
            NetNode::Conv(proto, n) => (QTDIR, QID_CONV | p(proto) | ((n as u64) << 8)),
            NetNode::File(proto, n, f) => {
                (QTFILE, QID_CONV | p(proto) | ((n as u64) << 8) | f.index())
            }
        };
        Qid {
            ty,
            version: 0,
            path,
        }
    }

    /// Mode bits and link count for `Rgetattr`.
    pub(crate) fn mode(self) -> (u32, u64) {
        match self {
            NetNode::Root => (libc::S_IFDIR | 0o555, 4),
            NetNode::Dir(_) | NetNode::Conv(..) => (libc::S_IFDIR | 0o555, 2),
            NetNode::Clone(_) => (libc::S_IFREG | 0o666, 1),
            NetNode::File(_, _, f) if f.writable() => (libc::S_IFREG | 0o666, 1),
            NetNode::File(..) | NetNode::Ifaces => (libc::S_IFREG | 0o444, 1),
        }
    }

    pub(crate) fn is_dir(self) -> bool {
        matches!(self, NetNode::Root | NetNode::Dir(_) | NetNode::Conv(..))
    }

    /// The enclosing directory; `None` for `/net` (whose parent is the root).
    pub(crate) fn parent(self) -> Result<Option<NetNode>, Errno> {
        match self {
            NetNode::Root => Ok(None),
            NetNode::Dir(_) => Ok(Some(NetNode::Root)),
            NetNode::Conv(proto, _) => Ok(Some(NetNode::Dir(proto))),
            NetNode::Clone(_) | NetNode::File(..) | NetNode::Ifaces => Err(Errno(libc::ENOTDIR)),
        }
    }
}

/// What the poll thread needs to reach connections, shared with them so a
/// socket can be registered from any request thread.
struct Registrar {
    registry: Registry,
    targets: Mutex<HashMap<Token, Weak<Conv>>>,
    next: AtomicUsize,
}

impl Registrar {
    fn add(&self, conv: &Arc<Conv>, src: &mut impl Source) -> Result<Token, Errno> {
        let token = Token(self.next.fetch_add(1, Ordering::Relaxed));
        lock(&self.targets).insert(token, Arc::downgrade(conv));
        // Both directions, edge-triggered: waiters retry their call after
        // any event, so one registration serves reads, writes and accepts.
        if let Err(e) = self
            .registry
            .register(src, token, Interest::READABLE | Interest::WRITABLE)
        {
            lock(&self.targets).remove(&token);
            return Err(e.into());
        }
        Ok(token)
    }

    fn remove(&self, token: Token, src: &mut impl Source) {
        let _ = self.registry.deregister(src);
        lock(&self.targets).remove(&token);
    }
}

/// The poll thread and its handles.
struct Reactor {
    reg: Arc<Registrar>,
    waker: Waker,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Reactor {
    fn start() -> io::Result<Reactor> {
        let poll = Poll::new()?;
        let waker = Waker::new(poll.registry(), WAKE)?;
        let reg = Arc::new(Registrar {
            registry: poll.registry().try_clone()?,
            targets: Mutex::new(HashMap::new()),
            next: AtomicUsize::new(1),
        });
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let reg = Arc::clone(&reg);
            let stop = Arc::clone(&stop);
            std::thread::Builder::new()
                .name("gateway-net".into())
                .spawn(move || poll_loop(poll, &reg, &stop))?
        };
        Ok(Reactor {
            reg,
            waker,
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Reactor {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if self.waker.wake().is_ok()
            && let Some(t) = self.thread.take()
        {
            let _ = t.join();
        }
    }
}

fn poll_loop(mut poll: Poll, reg: &Registrar, stop: &AtomicBool) {
    let mut events = Events::with_capacity(256);
    while !stop.load(Ordering::SeqCst) {
        if let Err(e) = poll.poll(&mut events, None) {
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            tracing::error!("net: poll failed, sockets will no longer make progress: {e}");
            return;
        }
        for ev in &events {
            if ev.token() == WAKE {
                continue;
            }
            // The table lock is released before the connection's lock is
            // taken: request threads take them in the other order.
            let conv = lock(&reg.targets).get(&ev.token()).and_then(Weak::upgrade);
            if let Some(conv) = conv {
                conv.poke();
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Closed,
    Connecting,
    Established,
    Listen,
    /// Hung up by a ctl `hangup`: reads see end-of-file, writes `EPIPE`.
    Hungup,
}

enum Sock {
    None,
    /// Bound by `bind`, neither listening nor connected: no events, so
    /// not registered.
    Bound(socket2::Socket),
    Stream(TcpStream),
    Listener(TcpListener),
    Udp(UdpSocket),
}

/// The result of a request, produced once its socket call is done; it
/// runs on a worker, outside every lock, with the request's session.
pub(crate) type Finish = Box<dyn FnOnce(&SessionInner) -> Result<Vec<u8>, Errno> + Send>;
/// Takes a parked request's [`Finish`] to its session: called on the poll
/// thread or by a cancellation hook, so it must not block (the session
/// queues the rest on its worker pool).
pub(crate) type Resume = Box<dyn FnOnce(Finish) + Send>;
/// One non-blocking attempt, with the connection's state locked; `true`
/// means the request was cancelled. `None`: it would still block.
type Step = Box<dyn FnMut(&Arc<Conv>, &mut State, bool) -> Option<Finish> + Send>;

/// A `/net` request whose socket call may have to wait: hand it to
/// [`Wait::park`]. No thread waits for it.
pub(crate) struct Wait {
    conv: Arc<Conv>,
    step: Step,
}

/// A request parked on its connection until readiness or cancellation.
struct Parked {
    id: u64,
    cancel: Arc<Cancel>,
    step: Step,
    resume: Resume,
}

struct State {
    sock: Sock,
    token: Option<Token>,
    /// Bumped by every readiness event and state change; a change makes
    /// the parked requests retry.
    generation: u64,
    status: Status,
    local: Option<SocketAddr>,
    remote: Option<SocketAddr>,
    nodelay: bool,
    /// `SO_REUSEADDR`, `SO_REUSEPORT` for `bind`'s socket.
    reuseaddr: bool,
    reuseport: bool,
    /// `IPV6_V6ONLY` for `bind`'s socket (an IPv6 one).
    v6only: bool,
    keepalive: bool,
    /// `SO_LINGER` with a zero timeout: closing resets the connection.
    abort: bool,
    /// UDP: reads and writes carry [`UDP_HEADER`] bytes of addresses.
    headers: bool,
    /// The host listener's backlog (for a snapshot's restore).
    backlog: i32,
    /// Requests waiting on this connection, oldest first.
    parked: Vec<Parked>,
    next_park: u64,
    /// Data reads and writes, each in the order they arrived
    /// ([`Conv::queue_io`]): only the first of each may take or send
    /// bytes, so that requests a client keeps in flight together (the
    /// streaming layer's) meet the stream in their order, whichever worker
    /// or retry runs them first.
    order: [std::collections::VecDeque<u64>; 2],
    next_io: u64,
}

/// Which of a connection's two orders ([`State::order`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Io {
    /// `data` reads.
    Read = 0,
    /// `data` writes.
    Write = 1,
}

/// One connection ("conversation" in ip(3)).
pub(crate) struct Conv {
    n: usize,
    proto: Proto,
    /// Checked for every UDP datagram sent to an address of its header.
    policy: Arc<dyn NetPolicy>,
    reg: Arc<Registrar>,
    state: Mutex<State>,
}

/// Finished requests to hand back, once no connection lock is held. Their
/// steps are dropped then too: a step that panicked may still hold an open
/// file, whose last reference closes (locks) the connection.
type Done = Vec<(Resume, Finish, Step)>;

fn resume_all(done: Done) {
    for (resume, fin, step) in done {
        drop(step);
        resume(fin);
    }
}

/// Runs a step, turning a panic into `EIO` so the poll thread survives.
fn run_step(step: &mut Step, conv: &Arc<Conv>, st: &mut State, cancelled: bool) -> Option<Finish> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| step(conv, st, cancelled)))
        .unwrap_or_else(|_| {
            tracing::error!(n = conv.n, "net: a request step panicked");
            Some(Box::new(|_: &SessionInner| Err(Errno(libc::EIO))))
        })
}

impl Wait {
    /// Makes one attempt at once. If it is done, returns its [`Finish`]
    /// for the caller to complete; otherwise parks the request on the
    /// connection (with the [`Resume`] that `resume` builds) and returns
    /// `None`: the poll thread resumes it on readiness, `cancel`'s hook
    /// on `Tflush`, `Tversion` or the end of the session.
    pub(crate) fn park(
        self,
        cancel: &Arc<Cancel>,
        resume: impl FnOnce() -> Resume,
    ) -> Option<Finish> {
        let Wait { conv, mut step } = self;
        // The attempt and the parking share one hold of the lock, so a
        // readiness event cannot slip in between (events are edge-triggered).
        let parked =
            conv.with_state(
                |st| match run_step(&mut step, &conv, st, cancel.is_cancelled()) {
                    Some(fin) => Err((fin, step)),
                    None => {
                        st.next_park += 1;
                        let id = st.next_park;
                        st.parked.push(Parked {
                            id,
                            cancel: Arc::clone(cancel),
                            step,
                            resume: resume(),
                        });
                        Ok(id)
                    }
                },
            );
        let id = match parked {
            Ok(id) => id,
            // The step is dropped here, outside the lock (see `Done`).
            Err((fin, _step)) => return Some(fin),
        };
        // Registered without the state lock: the hook takes it, and runs at
        // once if the request is already cancelled. Weak, so the token does
        // not keep the connection alive.
        let weak = Arc::downgrade(&conv);
        cancel.on_cancel(move || {
            if let Some(conv) = weak.upgrade() {
                conv.unpark(id);
            }
        });
        None
    }
}

impl Conv {
    fn new(n: usize, proto: Proto, policy: Arc<dyn NetPolicy>, reg: Arc<Registrar>) -> Conv {
        Conv {
            n,
            proto,
            policy,
            reg,
            state: Mutex::new(State {
                sock: Sock::None,
                token: None,
                generation: 0,
                status: Status::Closed,
                local: None,
                remote: None,
                nodelay: false,
                reuseaddr: false,
                reuseport: false,
                v6only: false,
                keepalive: false,
                abort: false,
                headers: false,
                backlog: 0,
                parked: Vec::new(),
                next_park: 0,
                order: [
                    std::collections::VecDeque::new(),
                    std::collections::VecDeque::new(),
                ],
                next_io: 0,
            }),
        }
    }

    /// Gives a data read or write its place in the connection's order of
    /// those (in the order requests arrive, before any of them runs); pass
    /// the ticket to [`read`](Self::read) or [`write`](Self::write).
    pub(crate) fn queue_io(&self, io: Io) -> u64 {
        let mut st = self.lock();
        st.next_io += 1;
        let t = st.next_io;
        st.order[io as usize].push_back(t);
        t
    }

    /// Gives up `ticket`'s place (a request that never reached its
    /// socket); parked requests behind it retry.
    pub(crate) fn release_io(self: &Arc<Self>, io: Io, ticket: u64) {
        self.with_state(|st| Self::dequeue(st, io, ticket));
    }

    /// Whether `ticket` (0: none) may go now: first in its order.
    fn turn(st: &State, io: Io, ticket: u64) -> bool {
        ticket == 0 || st.order[io as usize].front() == Some(&ticket)
    }

    /// Takes `ticket` out of its order, letting the next one go (its
    /// retries are due: the generation changes).
    fn dequeue(st: &mut State, io: Io, ticket: u64) {
        if ticket == 0 {
            return;
        }
        let order = &mut st.order[io as usize];
        if let Some(i) = order.iter().position(|&t| t == ticket) {
            order.remove(i);
            st.generation += 1;
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// Runs `f` with the state locked; if it changed the state, retries the
    /// parked requests and, after unlocking, resumes those that finished.
    fn with_state<R>(self: &Arc<Self>, f: impl FnOnce(&mut State) -> R) -> R {
        let mut st = self.lock();
        let seen = st.generation;
        let r = f(&mut st);
        let done = if st.generation == seen {
            Vec::new()
        } else {
            self.settle(&mut st)
        };
        drop(st);
        resume_all(done);
        r
    }

    /// Retries every parked request, in order (non-blocking calls only),
    /// again while a retry changes the state (a failed connect closes the
    /// socket under the reads waiting for it). Returns the finished ones.
    fn settle(self: &Arc<Self>, st: &mut State) -> Done {
        let mut done = Vec::new();
        loop {
            let seen = st.generation;
            for mut p in std::mem::take(&mut st.parked) {
                let cancelled = p.cancel.is_cancelled();
                match run_step(&mut p.step, self, st, cancelled) {
                    Some(fin) => done.push((p.resume, fin, p.step)),
                    None => st.parked.push(p),
                }
            }
            if st.generation == seen {
                return done;
            }
        }
    }

    /// Called by the poll thread on any event of this connection's socket.
    /// The retries are non-blocking socket calls, cheap enough for the
    /// poll thread, and spare a pool hop for every spurious wake-up (one
    /// registration serves both directions); only finished requests go to
    /// the pool, whose reply delivery may block.
    fn poke(self: &Arc<Self>) {
        self.with_state(|st| st.generation += 1);
    }

    /// The cancellation hook of parked request `id`: answers it `EINTR`
    /// (after the step's cleanup), unless it already finished.
    fn unpark(self: &Arc<Self>, id: u64) {
        let done = self.with_state(|st| {
            let i = st.parked.iter().position(|p| p.id == id)?;
            let mut p = st.parked.remove(i);
            let fin = run_step(&mut p.step, self, st, true)?;
            Some((p.resume, fin, p.step))
        });
        resume_all(done.into_iter().collect());
    }

    /// A [`Wait`] from a typed attempt: `attempt` returns `None` while the
    /// call would block; `cleanup` runs under the lock on cancellation
    /// (answered `EINTR`); `then` builds the reply from the result.
    fn wait_for<T: Send + 'static>(
        self: &Arc<Self>,
        mut attempt: impl FnMut(&Arc<Conv>, &mut State) -> Option<Result<T, Errno>> + Send + 'static,
        mut cleanup: impl FnMut(&Conv, &mut State) + Send + 'static,
        then: impl FnOnce(&SessionInner, T) -> Result<Vec<u8>, Errno> + Send + 'static,
    ) -> Wait {
        self.wait_or_cancel(
            move |conv, st, cancelled| {
                if cancelled {
                    cleanup(conv, st);
                    return Some(Err(Errno(libc::EINTR)));
                }
                attempt(conv, st)
            },
            then,
        )
    }

    /// [`wait_for`](Self::wait_for) whose attempt also answers the
    /// cancellation (its third argument; it must return a result then):
    /// a write cut off after sending some bytes reports them.
    fn wait_or_cancel<T: Send + 'static>(
        self: &Arc<Self>,
        mut attempt: impl FnMut(&Arc<Conv>, &mut State, bool) -> Option<Result<T, Errno>>
        + Send
        + 'static,
        then: impl FnOnce(&SessionInner, T) -> Result<Vec<u8>, Errno> + Send + 'static,
    ) -> Wait {
        let mut then = Some(then);
        let step: Step = Box::new(move |conv, st, cancelled| {
            let res = match attempt(conv, st, cancelled) {
                Some(r) => r,
                None if cancelled => Err(Errno(libc::EINTR)),
                None => return None,
            };
            // A step is never run again once it returned a Finish.
            let then = then.take()?;
            Some(match res {
                Ok(t) => Box::new(move |s: &SessionInner| then(s, t)) as Finish,
                Err(e) => Box::new(move |_: &SessionInner| Err(e)),
            })
        });
        Wait {
            conv: Arc::clone(self),
            step,
        }
    }

    /// Drops the socket (if any), leaving `status`. Run it inside
    /// [`with_state`](Self::with_state) (or a step) so the parked requests
    /// see the change.
    fn drop_sock(&self, st: &mut State, status: Status) {
        let token = st.token.take();
        match std::mem::replace(&mut st.sock, Sock::None) {
            Sock::Stream(mut s) => {
                if let Some(t) = token {
                    self.reg.remove(t, &mut s);
                }
                // An abortive close sends only the reset its close makes
                // (`SO_LINGER` 0), as Linux's: no FIN before it.
                if !st.abort {
                    let _ = s.shutdown(Shutdown::Both);
                }
            }
            Sock::Listener(mut l) => {
                if let Some(t) = token {
                    self.reg.remove(t, &mut l);
                }
            }
            Sock::Udp(mut u) => {
                if let Some(t) = token {
                    self.reg.remove(t, &mut u);
                }
            }
            Sock::Bound(_) | Sock::None => {}
        }
        st.status = status;
        st.generation += 1;
    }

    fn apply_options(st: &State) {
        if let Sock::Stream(s) = &st.sock {
            if st.nodelay
                && let Err(e) = s.set_nodelay(true)
            {
                tracing::debug!("net: TCP_NODELAY: {e}");
            }
            if st.keepalive
                && let Err(e) = sys::set_keepalive(s.as_fd())
            {
                tracing::debug!("net: SO_KEEPALIVE: {e}");
            }
            if let Err(e) = sys::set_abortive_close(s.as_fd(), st.abort) {
                tracing::debug!("net: SO_LINGER: {e}");
            }
            // Set after the connection was made: it still decides whether
            // the port's TIME_WAIT stops a later bind.
            if st.reuseaddr
                && let Err(e) = socket2::SockRef::from(s).set_reuse_address(true)
            {
                tracing::debug!("net: SO_REUSEADDR: {e}");
            }
        }
    }

    /// Starts a connect; the [`Wait`] ends when it is established or failed.
    fn connect(
        self: &Arc<Self>,
        addr: SocketAddr,
        then: impl FnOnce(&SessionInner, ()) -> Result<Vec<u8>, Errno> + Send + 'static,
    ) -> Result<Wait, Errno> {
        // The host address it goes to (a published port's, maybe).
        let host = self.policy.dial(addr);
        {
            let mut st = self.lock();
            let mut s = match std::mem::replace(&mut st.sock, Sock::None) {
                Sock::None if !st.reuseaddr => TcpStream::connect(host)?,
                // Options that must be on the socket before it dials.
                Sock::None => {
                    connect_bound(Self::tcp_socket(&st, host)?, host).map_err(|(_, e)| e)?
                }
                // Dials from the bound address (its port is the one the
                // program's `getsockname` already reported).
                Sock::Bound(b) => match connect_bound(b, host) {
                    Ok(s) => s,
                    Err((b, e)) => {
                        st.sock = Sock::Bound(b);
                        return Err(e);
                    }
                },
                other => {
                    st.sock = other;
                    return Err(Errno(libc::EISCONN));
                }
            };
            st.token = Some(self.reg.add(self, &mut s)?);
            // The port the host gave the dial: still the name of a
            // socket whose connect fails (Linux's `getsockname` shows it).
            st.local = s.local_addr().ok();
            st.sock = Sock::Stream(s);
            st.status = Status::Connecting;
            st.remote = Some(addr);
            Self::apply_options(&st);
        }
        let failed = |conv: &Conv, st: &mut State| {
            conv.drop_sock(st, Status::Closed);
            st.remote = None;
        };
        Ok(self.wait_for(
            move |conv, st| {
                let Sock::Stream(s) = &st.sock else {
                    // Hung up by another request while connecting.
                    return Some(Err(Errno(libc::ECONNABORTED)));
                };
                // mio's documented way to learn the outcome of a connect.
                let outcome = match s.take_error() {
                    Ok(Some(e)) | Err(e) => Err(Errno::from(e)),
                    Ok(None) => match s.peer_addr() {
                        Ok(peer) => Ok(Some((peer, s.local_addr().ok()))),
                        Err(e)
                            if e.kind() == io::ErrorKind::NotConnected
                                || e.raw_os_error() == Some(libc::EINPROGRESS) =>
                        {
                            Ok(None)
                        }
                        Err(e) => Err(Errno::from(e)),
                    },
                };
                match outcome {
                    Ok(Some((peer, local))) => {
                        st.remote = Some(peer);
                        st.local = local;
                        st.status = Status::Established;
                        // Reads and writes parked while connecting retry.
                        st.generation += 1;
                        Some(Ok(()))
                    }
                    Ok(None) => None,
                    Err(e) => {
                        failed(conv, st);
                        Some(Err(e))
                    }
                }
            },
            failed,
            then,
        ))
    }

    fn announce(self: &Arc<Self>, addr: SocketAddr) -> Result<(), Errno> {
        let mut st = self.lock();
        if !matches!(st.sock, Sock::None) {
            return Err(Errno(libc::EISCONN));
        }
        let mut l = TcpListener::bind(host_side(&*self.policy, addr))?;
        st.local = Some(guest_side(&*self.policy, addr, l.local_addr()?));
        st.token = Some(self.reg.add(self, &mut l)?);
        st.sock = Sock::Listener(l);
        st.status = Status::Listen;
        st.backlog = ANNOUNCE_BACKLOG;
        Ok(())
    }

    /// `bind`: a host socket bound to `addr`, not listening (a connection
    /// to it is refused, as Linux refuses one to a bound socket).
    fn bind(self: &Arc<Self>, addr: SocketAddr) -> Result<(), Errno> {
        let mut st = self.lock();
        if !matches!(st.sock, Sock::None) {
            return Err(Errno(libc::EINVAL));
        }
        let s = Self::tcp_socket(&st, addr)?;
        s.bind(&host_side(&*self.policy, addr).into())?;
        st.local = s
            .local_addr()?
            .as_socket()
            .map(|bound| guest_side(&*self.policy, addr, bound));
        st.sock = Sock::Bound(s);
        Ok(())
    }

    /// A TCP socket for `addr`'s family with the options that must be set
    /// before it binds or dials (`reuseaddr`, `reuseport`, `v6only`).
    fn tcp_socket(st: &State, addr: SocketAddr) -> Result<socket2::Socket, Errno> {
        Self::host_socket(st, addr, socket2::Type::STREAM, socket2::Protocol::TCP)
    }

    /// A host socket of `ty` for `addr`'s family with the options that must
    /// be set before it binds or dials (`reuseaddr`, `reuseport`, and
    /// `v6only`, set either way on an IPv6 one: the host's `bindv6only`
    /// default is not the partition's to inherit).
    fn host_socket(
        st: &State,
        addr: SocketAddr,
        ty: socket2::Type,
        proto: socket2::Protocol,
    ) -> Result<socket2::Socket, Errno> {
        let s = socket2::Socket::new(socket2::Domain::for_address(addr), ty, Some(proto))?;
        if st.reuseaddr {
            s.set_reuse_address(true)?;
        }
        if st.reuseport {
            s.set_reuse_port(true)?;
        }
        if addr.is_ipv6() {
            s.set_only_v6(st.v6only)?;
        }
        Ok(s)
    }

    /// `listen`: a bound socket starts listening; calls wait in the host's
    /// queue of `backlog` until `N/listen` is opened.
    fn start_listening(self: &Arc<Self>, backlog: i32) -> Result<(), Errno> {
        self.with_state(|st| {
            let b = match std::mem::replace(&mut st.sock, Sock::None) {
                Sock::Bound(b) => b,
                // Listening already: Linux takes a new backlog; the host
                // keeps the first (the partition queues calls itself).
                l @ Sock::Listener(_) => {
                    st.sock = l;
                    return Ok(());
                }
                other => {
                    st.sock = other;
                    return Err(Errno(libc::EINVAL));
                }
            };
            if let Err(e) = b.listen(backlog).and_then(|()| b.set_nonblocking(true)) {
                st.sock = Sock::Bound(b);
                return Err(e.into());
            }
            let mut l = TcpListener::from_std(b.into());
            st.token = Some(self.reg.add(self, &mut l)?);
            st.sock = Sock::Listener(l);
            st.status = Status::Listen;
            st.backlog = backlog;
            st.generation += 1;
            Ok(())
        })
    }

    /// Waits for a call on an announced connection.
    fn accept(
        self: &Arc<Self>,
        then: impl FnOnce(&SessionInner, Call) -> Result<Vec<u8>, Errno> + Send + 'static,
    ) -> Wait {
        self.wait_for(
            |_, st| loop {
                let Sock::Listener(l) = &st.sock else {
                    return Some(Err(Errno(libc::EINVAL)));
                };
                match l.accept() {
                    Ok((s, peer)) => return Some(Ok(Call(s, peer, st.local.map(|a| a.port())))),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return None,
                    // A call that was reset before it was accepted: wait for the next.
                    Err(e)
                        if e.kind() == io::ErrorKind::Interrupted
                            || e.raw_os_error() == Some(libc::ECONNABORTED) => {}
                    Err(e) => return Some(Err(e.into())),
                }
            },
            |_, _| {},
            then,
        )
    }

    /// Makes a fresh connection carry an accepted call.
    fn adopt(
        self: &Arc<Self>,
        mut s: TcpStream,
        peer: SocketAddr,
        port: Option<u16>,
    ) -> Result<(), Errno> {
        let mut st = self.lock();
        st.token = Some(self.reg.add(self, &mut s)?);
        // The listener's port as the partition knows it (published
        // elsewhere on the host, maybe).
        st.local = s.local_addr().ok().map(|mut a| {
            if let Some(p) = port {
                a.set_port(p);
            }
            a
        });
        st.remote = Some(peer);
        st.sock = Sock::Stream(s);
        st.status = Status::Established;
        Ok(())
    }

    fn hangup(self: &Arc<Self>) {
        self.with_state(|st| {
            let next = match st.status {
                Status::Connecting | Status::Established => Status::Hungup,
                other if matches!(st.sock, Sock::None) => other,
                _ => Status::Closed,
            };
            self.drop_sock(st, next);
        });
    }

    /// Shuts down one or both directions of an established connection;
    /// parked reads and writes look again (a read then ends, a write fails).
    fn shutdown(self: &Arc<Self>, how: Shutdown) -> Result<(), Errno> {
        self.with_state(|st| {
            st.generation += 1;
            match &st.sock {
                Sock::Stream(s) => s.shutdown(how).map_err(Errno::from),
                _ => Err(Errno(libc::ENOTCONN)),
            }
        })
    }

    fn set_option(&self, cmd: &Ctl) {
        let mut st = self.lock();
        match cmd {
            Ctl::Nodelay => st.nodelay = true,
            Ctl::ReuseAddr(on) | Ctl::ReusePort(on) => {
                let port = matches!(cmd, Ctl::ReusePort(_));
                if port {
                    st.reuseport = *on;
                } else {
                    st.reuseaddr = *on;
                }
                let sock = match &st.sock {
                    Sock::Bound(b) => Some(socket2::SockRef::from(b)),
                    Sock::Listener(l) => Some(socket2::SockRef::from(l)),
                    Sock::Stream(s) => Some(socket2::SockRef::from(s)),
                    Sock::Udp(u) => Some(socket2::SockRef::from(u)),
                    Sock::None => None,
                };
                if let Some(sock) = sock {
                    let r = if port {
                        sock.set_reuse_port(*on)
                    } else {
                        sock.set_reuse_address(*on)
                    };
                    if let Err(e) = r {
                        tracing::debug!("net: SO_REUSEADDR/SO_REUSEPORT: {e}");
                    }
                }
                return;
            }
            Ctl::V6Only => st.v6only = true,
            Ctl::Keepalive => st.keepalive = true,
            Ctl::Linger { abort } => st.abort = *abort,
            _ => return,
        }
        Self::apply_options(&st);
    }

    /// Reads what is available, at most `max` bytes; waits for at least one.
    /// `ticket` (from [`queue_read`](Self::queue_read), 0 for none): waits
    /// too while an earlier read of the connection has not finished. The
    /// bytes reach `then` after `head` zero bytes, room for the reply's
    /// header: a stream's bytes go from the socket into the reply frame.
    pub(crate) fn read(
        self: &Arc<Self>,
        max: usize,
        head: usize,
        ticket: u64,
        then: impl FnOnce(&SessionInner, Vec<u8>) -> Result<Vec<u8>, Errno> + Send + 'static,
    ) -> Wait {
        // Allocated once, on the first attempt that finds a connected socket,
        // and kept across retries.
        let mut buf = Vec::new();
        let mut attempt = move |st: &mut State| -> Option<Result<Vec<u8>, Errno>> {
            if max == 0 {
                return Some(Ok(vec![0u8; head]));
            }
            loop {
                match (&st.sock, st.status) {
                    (Sock::Udp(u), _) => {
                        return udp_recv(u, st.headers, st.local, max).map(|r| {
                            r.map(|d| {
                                let mut v = vec![0u8; head];
                                v.extend_from_slice(&d);
                                v
                            })
                        });
                    }
                    (Sock::Stream(s), Status::Established) => {
                        if buf.len() != head + max {
                            // Zeroed by the allocator, so the pages of a
                            // large buffer cost nothing until data comes.
                            buf = vec![0u8; head + max];
                        }
                        let mut s: &TcpStream = s;
                        match s.read(&mut buf[head..]) {
                            Ok(n) => {
                                buf.truncate(head + n);
                                return Some(Ok(std::mem::take(&mut buf)));
                            }
                            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return None,
                            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                            Err(e) => return Some(Err(e.into())),
                        }
                    }
                    (Sock::Stream(_), _) => return None, // still connecting
                    (_, Status::Hungup) => return Some(Ok(vec![0u8; head])),
                    _ => return Some(Err(Errno(libc::ENOTCONN))),
                }
            }
        };
        self.wait_for(
            move |_, st| {
                if !Self::turn(st, Io::Read, ticket) {
                    return None;
                }
                let r = attempt(st)?;
                Self::dequeue(st, Io::Read, ticket);
                Some(r)
            },
            move |_, st| Self::dequeue(st, Io::Read, ticket),
            then,
        )
    }

    /// The watch after the end of file ([`astraea_9p::consts::NET_WATCH_OFFSET`]):
    /// waits until the host socket reports an error (the reset that the
    /// peer's close with our bytes unread, or a send of ours after its
    /// close, brings after its FIN: Linux's `sk_err`, `EPIPE` or
    /// `ECONNRESET`) and answers it; answers end of file (`()`) once the
    /// connection is hung up or closed without one. The socket's readiness
    /// events (edge-triggered: an error is one) retry it.
    pub(crate) fn watch(
        self: &Arc<Self>,
        then: impl FnOnce(&SessionInner, ()) -> Result<Vec<u8>, Errno> + Send + 'static,
    ) -> Wait {
        self.wait_for(
            move |_, st| match (&st.sock, st.status) {
                (Sock::Stream(s), Status::Established) => match s.take_error() {
                    Ok(Some(e)) => Some(Err(e.into())),
                    Ok(None) => None,
                    Err(e) => Some(Err(e.into())),
                },
                (Sock::Stream(_), _) => None, // still connecting
                (Sock::Udp(_) | Sock::Listener(_) | Sock::Bound(_), _) => {
                    Some(Err(Errno(libc::EINVAL)))
                }
                (Sock::None, _) => Some(Ok(())),
            },
            |_, _| {},
            then,
        )
    }

    /// Sends what fits in the socket buffer (at least one byte); waits
    /// while it is full. With a `ticket` ([`queue_io`](Self::queue_io)) it
    /// waits for the writes before it, and sends all of `data` before it
    /// answers (a short count only when an error cut it off): the next
    /// write in flight must not go out while this one's bytes remain.
    pub(crate) fn write(
        self: &Arc<Self>,
        data: Vec<u8>,
        ticket: u64,
        then: impl FnOnce(&SessionInner, usize) -> Result<Vec<u8>, Errno> + Send + 'static,
    ) -> Wait {
        let mut done = 0;
        let cut = move |done: usize, e: Errno| if done > 0 { Ok(done) } else { Err(e) };
        self.wait_or_cancel(
            move |conv, st, cancelled| {
                if cancelled {
                    // Cut off: what went out is reported, as a write a
                    // signal interrupts after sending some bytes.
                    Self::dequeue(st, Io::Write, ticket);
                    return Some(cut(done, Errno(libc::EINTR)));
                }
                if !Self::turn(st, Io::Write, ticket) {
                    return None;
                }
                let r = loop {
                    match (&st.sock, st.status) {
                        (Sock::Udp(u), _) => {
                            break udp_send(u, st.headers, &*conv.policy, &data)?;
                        }
                        (Sock::Stream(s), Status::Established) => {
                            let mut s: &TcpStream = s;
                            match s.write(&data[done..]) {
                                Ok(n) => {
                                    done += n;
                                    if ticket == 0 || done == data.len() || n == 0 {
                                        break Ok(done);
                                    }
                                }
                                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return None,
                                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                                Err(e) => break cut(done, e.into()),
                            }
                        }
                        (Sock::Stream(_), _) => return None,
                        (_, Status::Hungup) => break cut(done, Errno(libc::EPIPE)),
                        _ => break cut(done, Errno(libc::ENOTCONN)),
                    }
                };
                Self::dequeue(st, Io::Write, ticket);
                Some(r)
            },
            then,
        )
    }

    /// UDP `announce`: binds the host socket to `addr` (again, if a
    /// disconnect gave its automatic port up).
    fn udp_announce(self: &Arc<Self>, addr: SocketAddr) -> Result<(), Errno> {
        self.with_state(|st| {
            if let Sock::Udp(u) = &st.sock
                && let Ok(at) = u.local_addr()
                && at.port() == 0
            {
                // An IPv6 socket (the client's, dual-stack) binds an IPv4
                // address as its mapped IPv6 one.
                let addr = match (at, addr) {
                    (SocketAddr::V6(_), SocketAddr::V4(v4)) => {
                        SocketAddr::new(v4.ip().to_ipv6_mapped().into(), v4.port())
                    }
                    _ => addr,
                };
                socket2::SockRef::from(u).bind(&addr.into())?;
                st.local = u.local_addr().ok();
                st.generation += 1;
                return Ok(());
            }
            if !matches!(st.sock, Sock::None) {
                return Err(Errno(libc::EISCONN));
            }
            self.udp_bind(st, addr)
        })
    }

    /// UDP `disconnect`: the host socket forgets its peer; Linux also
    /// gives up an automatic port and source address then.
    fn udp_disconnect(self: &Arc<Self>) -> Result<(), Errno> {
        self.with_state(|st| {
            let Sock::Udp(u) = &st.sock else {
                return Ok(());
            };
            crate::sys::disconnect(std::os::fd::AsFd::as_fd(u))?;
            st.local = u.local_addr().ok();
            st.remote = None;
            st.generation += 1;
            Ok(())
        })
    }

    fn udp_bind(self: &Arc<Self>, st: &mut State, addr: SocketAddr) -> Result<(), Errno> {
        let s = Self::host_socket(st, addr, socket2::Type::DGRAM, socket2::Protocol::UDP)?;
        s.set_nonblocking(true)?;
        s.bind(&addr.into())?;
        let mut u = UdpSocket::from_std(s.into());
        st.local = u.local_addr().ok();
        st.token = Some(self.reg.add(self, &mut u)?);
        st.sock = Sock::Udp(u);
        st.status = Status::Established;
        st.generation += 1;
        Ok(())
    }

    /// A multicast option on the UDP host socket (which the client binds
    /// first): the host's answer is the program's.
    fn udp_sockopt(self: &Arc<Self>, level: i32, name: i32, value: &[u8]) -> Result<(), Errno> {
        let st = self.lock();
        let Sock::Udp(u) = &st.sock else {
            return Err(einval());
        };
        sys::setsockopt_bytes(u.as_fd(), level, name, value)
    }

    /// UDP `connect`: binds to any address of `addr`'s family if not bound
    /// yet, then connects the host socket (datagrams come only from
    /// `addr`; writes without headers go there).
    fn udp_connect(self: &Arc<Self>, addr: SocketAddr) -> Result<(), Errno> {
        self.with_state(|st| {
            if matches!(st.sock, Sock::None) {
                let any: IpAddr = if addr.is_ipv4() {
                    Ipv4Addr::UNSPECIFIED.into()
                } else {
                    std::net::Ipv6Addr::UNSPECIFIED.into()
                };
                self.udp_bind(st, SocketAddr::new(any, 0))?;
            }
            let Sock::Udp(u) = &st.sock else {
                return Err(Errno(libc::EINVAL));
            };
            u.connect(addr)?;
            st.local = u.local_addr().ok();
            st.remote = Some(addr);
            st.generation += 1;
            Ok(())
        })
    }

    fn set_headers(&self) {
        self.lock().headers = true;
    }

    /// The text of a read-only file, or of `ctl`.
    pub(crate) fn text(&self, file: ConvFile) -> Vec<u8> {
        let st = self.lock();
        let s = match file {
            ConvFile::Ctl | ConvFile::Listen | ConvFile::Data => self.n.to_string(),
            // A UDP socket's port may come from a send (the host binds an
            // unbound socket then): read from the socket itself.
            ConvFile::Local => match &st.sock {
                Sock::Udp(u) => addr_text(u.local_addr().ok().or(st.local)),
                _ => addr_text(st.local),
            },
            ConvFile::Remote => addr_text(st.remote),
            ConvFile::Status => format!(
                "{}\n",
                match (&st.status, &st.sock) {
                    (Status::Closed | Status::Hungup, _) => "Closed",
                    (Status::Connecting, _) => "Syn_sent",
                    // An established connection's host socket says how
                    // far its close has gone (Plan 9's state names).
                    (Status::Established, Sock::Stream(t)) => {
                        match crate::sys::tcp_state(std::os::fd::AsFd::as_fd(t)) {
                            Ok(2) => "Syn_sent",
                            Ok(4) => "Finwait1",
                            Ok(5) => "Finwait2",
                            Ok(6) => "Time_wait",
                            Ok(7) => "Closed",
                            Ok(8) => "Close_wait",
                            Ok(9) => "Last_ack",
                            Ok(11) => "Closing",
                            _ => "Established",
                        }
                    }
                    (Status::Established, _) => "Established",
                    (Status::Listen, _) => "Listen",
                }
            ),
        };
        s.into_bytes()
    }

    pub(crate) fn number(&self) -> usize {
        self.n
    }

    pub(crate) fn proto(&self) -> Proto {
        self.proto
    }
}

impl Drop for Conv {
    fn drop(&mut self) {
        let st = self.state.get_mut().unwrap_or_else(PoisonError::into_inner);
        let token = st.token.take();
        match (&mut st.sock, token) {
            (Sock::Stream(s), Some(t)) => self.reg.remove(t, s),
            (Sock::Listener(l), Some(t)) => self.reg.remove(t, l),
            (Sock::Udp(u), Some(t)) => self.reg.remove(t, u),
            _ => {}
        }
    }
}

/// An address as the 16 bytes of a UDP header (IPv4 mapped into IPv6).
fn header_ip(ip: IpAddr) -> [u8; 16] {
    match ip {
        IpAddr::V4(v4) => v4.to_ipv6_mapped().octets(),
        IpAddr::V6(v6) => v6.octets(),
    }
}

/// One datagram, at most `max` bytes with its header; `None` if none is
/// there (the request waits).
fn udp_recv(
    u: &UdpSocket,
    headers: bool,
    local: Option<SocketAddr>,
    max: usize,
) -> Option<Result<Vec<u8>, Errno>> {
    let skip = if headers { UDP_HEADER } else { 0 };
    if max < skip {
        return Some(Err(einval()));
    }
    let mut buf = vec![0u8; skip + (max - skip).min(MAX_DATAGRAM)];
    loop {
        match u.recv_from(&mut buf[skip..]) {
            Ok((n, peer)) => {
                buf.truncate(skip + n);
                if headers {
                    let local =
                        local.unwrap_or_else(|| SocketAddr::new(Ipv4Addr::UNSPECIFIED.into(), 0));
                    buf[0..16].copy_from_slice(&header_ip(peer.ip()));
                    buf[16..32].copy_from_slice(&header_ip(local.ip()));
                    buf[32..48].copy_from_slice(&header_ip(local.ip()));
                    buf[48..50].copy_from_slice(&peer.port().to_be_bytes());
                    buf[50..52].copy_from_slice(&local.port().to_be_bytes());
                }
                return Some(Ok(buf));
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return None,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Some(Err(e.into())),
        }
    }
}

/// Sends one datagram: to the header's address in `headers` mode (if the
/// policy allows it), else to the connected peer. The count includes the
/// header.
fn udp_send(
    u: &UdpSocket,
    headers: bool,
    policy: &dyn NetPolicy,
    data: &[u8],
) -> Option<Result<usize, Errno>> {
    let (dest, payload) = if headers {
        let Some((h, payload)) = data.split_at_checked(UDP_HEADER) else {
            return Some(Err(einval()));
        };
        let mut ip = [0u8; 16];
        ip.copy_from_slice(&h[0..16]);
        let ip = std::net::Ipv6Addr::from(ip);
        let ip: IpAddr = ip.to_ipv4_mapped().map_or(IpAddr::V6(ip), IpAddr::V4);
        let dest = SocketAddr::new(ip, u16::from_be_bytes([h[48], h[49]]));
        if dest.port() == 0 || ip.is_unspecified() {
            return Some(Err(einval()));
        }
        if !policy.allow_connect(dest) {
            return Some(Err(Errno(libc::EACCES)));
        }
        (Some(dest), payload)
    } else {
        (None, data)
    };
    if payload.len() > MAX_DATAGRAM {
        return Some(Err(Errno(libc::EMSGSIZE)));
    }
    loop {
        let r = match dest {
            Some(d) => u.send_to(payload, d),
            None => u.send(payload),
        };
        match r {
            Ok(n) => return Some(Ok(n + data.len() - payload.len())),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return None,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Some(Err(e.into())),
        }
    }
}

/// `ADDR!PORT\n`, as ip(3) shows addresses (`::!0` when unset).
fn addr_text(a: Option<SocketAddr>) -> String {
    match a {
        Some(a) => format!("{}!{}\n", a.ip(), a.port()),
        None => "::!0\n".into(),
    }
}

/// A ctl command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ctl {
    Connect(SocketAddr),
    Announce(SocketAddr),
    /// The socket API's `bind`: bound, not listening.
    Bind(SocketAddr),
    /// The socket API's `listen` on a bound connection, with its backlog.
    Listen(i32),
    /// `SO_REUSEADDR` and `SO_REUSEPORT` (on, or `off`): for a later
    /// `bind`, and on the host socket already there (Linux's conflict
    /// checks look at both sockets' flags as they are).
    ReuseAddr(bool),
    ReusePort(bool),
    /// `IPV6_V6ONLY` for a later `bind` of an IPv6 address.
    V6Only,
    /// UDP: `connect(AF_UNSPEC)`, forgetting the peer.
    Disconnect,
    Hangup,
    Nodelay,
    Keepalive,
    /// `linger 0`: closing resets the connection (`SO_LINGER` with a zero
    /// timeout); `linger off`: a graceful close again.
    Linger {
        abort: bool,
    },
    /// Half-close: `shutdown rd|wr|rdwr` (the socket API's `shutdown`).
    Shutdown(Shutdown),
    /// UDP: datagrams carry [`UDP_HEADER`] bytes of addresses.
    Headers,
    /// UDP: a multicast option for the host socket (`sockopt LEVEL NAME
    /// HEX`), one of [`MULTICAST_OPTS`]: group membership, the interface,
    /// TTL/hops and loopback of what it sends.
    SockOpt {
        level: i32,
        name: i32,
        len: u8,
        value: [u8; MAX_SOCKOPT],
    },
}

fn einval() -> Errno {
    Errno(libc::EINVAL)
}

/// `ADDR!PORT`: an IPv4 or IPv6 literal (brackets optional), `localhost`,
/// or for `announce` also `*` (any address) or a bare `PORT`.
fn parse_addr(s: &str, announce: bool) -> Result<SocketAddr, Errno> {
    let (host, port) = match s.rsplit_once('!') {
        Some(hp) => hp,
        None if announce => ("*", s),
        None => return Err(einval()),
    };
    if port.is_empty() || port.len() > 5 || !port.bytes().all(|b| b.is_ascii_digit()) {
        return Err(einval());
    }
    let port: u16 = port.parse().map_err(|_| einval())?;
    if port == 0 && !announce {
        return Err(einval());
    }
    let ip = match host {
        "*" if announce => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        "localhost" => IpAddr::V4(Ipv4Addr::LOCALHOST),
        h => {
            let h = h
                .strip_prefix('[')
                .and_then(|h| h.strip_suffix(']'))
                .unwrap_or(h);
            h.parse::<IpAddr>().map_err(|_| einval())?
        }
    };
    // IPv4-mapped too: `[::ffff:0.0.0.0]` must not dial 0.0.0.0, which
    // Linux takes as the loopback (and the policy as 0.0.0.0).
    if !announce && ip.to_canonical().is_unspecified() {
        return Err(einval());
    }
    Ok(SocketAddr::new(ip, port))
}

/// The longest option value a `sockopt` ctl carries (`group_req` is 136
/// bytes, but only the fixed-size requests below are taken).
const MAX_SOCKOPT: usize = 32;

/// The options `sockopt` may set on a UDP host socket, as
/// `(level, name)`: IPv4's and IPv6's multicast ones.
const MULTICAST_OPTS: [(i32, i32); 12] = [
    (libc::IPPROTO_IP, libc::IP_MULTICAST_IF),
    (libc::IPPROTO_IP, libc::IP_MULTICAST_TTL),
    (libc::IPPROTO_IP, libc::IP_MULTICAST_LOOP),
    (libc::IPPROTO_IP, libc::IP_ADD_MEMBERSHIP),
    (libc::IPPROTO_IP, libc::IP_DROP_MEMBERSHIP),
    (libc::IPPROTO_IP, libc::IP_MULTICAST_ALL),
    (libc::IPPROTO_IPV6, libc::IPV6_MULTICAST_IF),
    (libc::IPPROTO_IPV6, libc::IPV6_MULTICAST_HOPS),
    (libc::IPPROTO_IPV6, libc::IPV6_MULTICAST_LOOP),
    (libc::IPPROTO_IPV6, libc::IPV6_ADD_MEMBERSHIP),
    (libc::IPPROTO_IPV6, libc::IPV6_DROP_MEMBERSHIP),
    (libc::IPPROTO_IPV6, libc::IPV6_MULTICAST_ALL),
];

/// `sockopt LEVEL NAME HEX`: a [`Ctl::SockOpt`] of an allowed option.
fn parse_sockopt(level: &str, name: &str, hex: &str) -> Result<Ctl, Errno> {
    let level: i32 = level.parse().map_err(|_| einval())?;
    let name: i32 = name.parse().map_err(|_| einval())?;
    if !MULTICAST_OPTS.contains(&(level, name)) {
        return Err(Errno(libc::ENOPROTOOPT));
    }
    if !hex.len().is_multiple_of(2) || hex.len() / 2 > MAX_SOCKOPT {
        return Err(einval());
    }
    let mut value = [0u8; MAX_SOCKOPT];
    for (i, pair) in hex.as_bytes().chunks(2).enumerate() {
        let pair = std::str::from_utf8(pair).map_err(|_| einval())?;
        value[i] = u8::from_str_radix(pair, 16).map_err(|_| einval())?;
    }
    Ok(Ctl::SockOpt {
        level,
        name,
        len: (hex.len() / 2) as u8,
        value,
    })
}

/// The group a membership request joins, for the network policy: an
/// `ip_mreq`/`ip_mreqn` starts with an IPv4 group, an `ipv6_mreq` with an
/// IPv6 one. `None` for other options (and for requests too short to
/// carry one: the host refuses those).
fn joined_group(level: i32, name: i32, value: &[u8]) -> Option<IpAddr> {
    match (level, name) {
        (libc::IPPROTO_IP, libc::IP_ADD_MEMBERSHIP) if value.len() >= 8 => {
            let g: [u8; 4] = value[..4].try_into().ok()?;
            Some(Ipv4Addr::from(g).into())
        }
        (libc::IPPROTO_IPV6, libc::IPV6_ADD_MEMBERSHIP) if value.len() >= 20 => {
            let g: [u8; 16] = value[..16].try_into().ok()?;
            Some(std::net::Ipv6Addr::from(g).into())
        }
        _ => None,
    }
}

fn parse_ctl(data: &[u8]) -> Result<Ctl, Errno> {
    if data.len() > MAX_CTL {
        return Err(einval());
    }
    let text = std::str::from_utf8(data).map_err(|_| einval())?;
    if let Some(rest) = text.strip_prefix("sockopt ") {
        let w: Vec<&str> = rest.split_ascii_whitespace().collect();
        return match w.as_slice() {
            [level, name, hex] => parse_sockopt(level, name, hex),
            [level, name] => parse_sockopt(level, name, ""),
            _ => Err(einval()),
        };
    }
    let mut words = text.split_ascii_whitespace();
    let verb = words.next().ok_or_else(einval)?;
    let arg = words.next();
    let extra = words.next();
    if extra.is_some() {
        return Err(einval());
    }
    match (verb, arg) {
        ("connect", Some(a)) => Ok(Ctl::Connect(parse_addr(a, false)?)),
        ("announce", Some(a)) => Ok(Ctl::Announce(parse_addr(a, true)?)),
        ("bind", Some(a)) => Ok(Ctl::Bind(parse_addr(a, true)?)),
        ("listen", None) => Ok(Ctl::Listen(libc::SOMAXCONN)),
        ("listen", Some(n)) => match n.parse::<u16>() {
            Ok(n) => Ok(Ctl::Listen(i32::from(n))),
            Err(_) => Err(einval()),
        },
        ("reuseaddr", None) => Ok(Ctl::ReuseAddr(true)),
        ("reuseaddr", Some("off")) => Ok(Ctl::ReuseAddr(false)),
        ("reuseport", None) => Ok(Ctl::ReusePort(true)),
        ("reuseport", Some("off")) => Ok(Ctl::ReusePort(false)),
        ("v6only", None) => Ok(Ctl::V6Only),
        ("disconnect", None) => Ok(Ctl::Disconnect),
        ("hangup", None) => Ok(Ctl::Hangup),
        ("nodelay", None) => Ok(Ctl::Nodelay),
        ("shutdown", Some("rd")) => Ok(Ctl::Shutdown(Shutdown::Read)),
        ("shutdown", Some("wr")) => Ok(Ctl::Shutdown(Shutdown::Write)),
        ("shutdown", Some("rdwr")) => Ok(Ctl::Shutdown(Shutdown::Both)),
        ("headers", None) => Ok(Ctl::Headers),
        // ip(3) takes an optional interval in ms; the host's is used.
        ("keepalive", None) => Ok(Ctl::Keepalive),
        ("keepalive", Some(ms)) if ms.parse::<u32>().is_ok() => Ok(Ctl::Keepalive),
        ("linger", Some("0")) => Ok(Ctl::Linger { abort: true }),
        ("linger", Some("off")) => Ok(Ctl::Linger { abort: false }),
        _ => Err(einval()),
    }
}

/// Starts a non-blocking connect of the bound socket `b` to `addr`; gives
/// the socket back with the error if it could not start.
fn connect_bound(
    b: socket2::Socket,
    addr: SocketAddr,
) -> Result<TcpStream, (socket2::Socket, Errno)> {
    if let Err(e) = b.set_nonblocking(true) {
        return Err((b, e.into()));
    }
    // An IPv6 socket reaches IPv4 through mapped addresses (refused with
    // ENETUNREACH when it is bound to an IPv6-only one, as on Linux).
    let addr = match (b.domain(), addr) {
        (Ok(d), SocketAddr::V4(v4)) if d == socket2::Domain::IPV6 => {
            SocketAddr::new(v4.ip().to_ipv6_mapped().into(), v4.port())
        }
        _ => addr,
    };
    match b.connect(&addr.into()) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
        Err(e) => return Err((b, e.into())),
    }
    Ok(TcpStream::from_std(b.into()))
}

/// An accepted call, not yet a connection.
/// With the listener's port as the partition sees it.
pub(crate) struct Call(TcpStream, SocketAddr, Option<u16>);

struct Slot {
    conv: Arc<Conv>,
    /// The session that made it (`SessionInner::id`): only it may open
    /// the connection's files.
    owner: u64,
    /// Open fids (and in-flight requests on them) holding the connection.
    opens: usize,
}

type Table = Mutex<Vec<Option<Slot>>>;

/// An open reference to a connection: while one exists the number stays
/// allocated; dropping the last closes the host socket.
pub(crate) struct ConvRef {
    table: Arc<Table>,
    conv: Arc<Conv>,
}

impl ConvRef {
    pub(crate) fn conv(&self) -> &Arc<Conv> {
        &self.conv
    }
}

impl Drop for ConvRef {
    fn drop(&mut self) {
        let last = {
            let mut table = lock(&self.table);
            match table.get_mut(self.conv.n) {
                Some(entry @ Some(_)) => {
                    let last = entry.as_mut().is_some_and(|s| {
                        s.opens = s.opens.saturating_sub(1);
                        s.opens == 0
                    });
                    if last {
                        *entry = None;
                    }
                    last
                }
                _ => false,
            }
        };
        // Closed outside the table lock (the table is never held while a
        // connection's lock is taken).
        if last {
            self.conv
                .with_state(|st| self.conv.drop_sock(st, Status::Closed));
        }
    }
}

/// The `/net` state of a gateway.
pub(crate) struct Net {
    policy: Arc<dyn NetPolicy>,
    /// The connections of each protocol ([`Proto::index`]), numbered apart.
    tables: [Arc<Table>; 2],
    reactor: Mutex<Option<Reactor>>,
}

impl Net {
    pub(crate) fn new(policy: Arc<dyn NetPolicy>) -> Net {
        Net {
            policy,
            tables: [
                Arc::new(Mutex::new(Vec::new())),
                Arc::new(Mutex::new(Vec::new())),
            ],
            reactor: Mutex::new(None),
        }
    }

    /// The poll thread's registrar, starting the thread on first use.
    fn registrar(&self) -> Result<Arc<Registrar>, Errno> {
        let mut r = lock(&self.reactor);
        if r.is_none() {
            *r = Some(Reactor::start().map_err(|e| {
                tracing::error!("net: cannot start the poll thread: {e}");
                Errno::from(e)
            })?);
        }
        r.as_ref()
            .map(|r| Arc::clone(&r.reg))
            .ok_or(Errno(libc::EIO))
    }

    /// The child `name` of directory `dir`.
    pub(crate) fn lookup(&self, dir: NetNode, name: &[u8]) -> Result<NetNode, Errno> {
        match dir {
            NetNode::Root if name == b"ifaces" => Ok(NetNode::Ifaces),
            NetNode::Root => [Proto::Tcp, Proto::Udp]
                .into_iter()
                .find(|p| p.name() == name)
                .map(NetNode::Dir)
                .ok_or(Errno(libc::ENOENT)),
            NetNode::Dir(proto) if name == b"clone" => Ok(NetNode::Clone(proto)),
            NetNode::Dir(proto) => {
                let n = std::str::from_utf8(name)
                    .ok()
                    // One spelling per number, so walks and listings agree.
                    .filter(|s| {
                        !s.is_empty()
                            && s.bytes().all(|b| b.is_ascii_digit())
                            && (*s == "0" || !s.starts_with('0'))
                    })
                    .and_then(|s| s.parse::<usize>().ok())
                    .ok_or(Errno(libc::ENOENT))?;
                if lock(&self.tables[proto.index()])
                    .get(n)
                    .is_some_and(Option::is_some)
                {
                    Ok(NetNode::Conv(proto, n))
                } else {
                    Err(Errno(libc::ENOENT))
                }
            }
            NetNode::Conv(proto, n) => CONV_FILES
                .iter()
                .find(|(f, _)| *f == name)
                .map(|(_, f)| NetNode::File(proto, n, *f))
                .ok_or(Errno(libc::ENOENT)),
            NetNode::Clone(_) | NetNode::File(..) | NetNode::Ifaces => Err(Errno(libc::ENOTDIR)),
        }
    }

    /// The entries of directory `dir` (without `.` and `..`).
    pub(crate) fn list(&self, dir: NetNode) -> Result<Vec<(Vec<u8>, NetNode)>, Errno> {
        Ok(match dir {
            NetNode::Root => [Proto::Tcp, Proto::Udp]
                .into_iter()
                .map(|p| (p.name().to_vec(), NetNode::Dir(p)))
                .chain([(b"ifaces".to_vec(), NetNode::Ifaces)])
                .collect(),
            NetNode::Dir(proto) => {
                let mut out = vec![(b"clone".to_vec(), NetNode::Clone(proto))];
                for (n, slot) in lock(&self.tables[proto.index()]).iter().enumerate() {
                    if slot.is_some() {
                        out.push((n.to_string().into_bytes(), NetNode::Conv(proto, n)));
                    }
                }
                out
            }
            NetNode::Conv(proto, n) => CONV_FILES
                .iter()
                .map(|(name, f)| (name.to_vec(), NetNode::File(proto, n, *f)))
                .collect(),
            NetNode::Clone(_) | NetNode::File(..) | NetNode::Ifaces => {
                return Err(Errno(libc::ENOTDIR));
            }
        })
    }

    /// Opens `clone`: a new connection, lowest free number first, owned by
    /// session `owner`.
    pub(crate) fn clone_conv(&self, proto: Proto, owner: u64) -> Result<ConvRef, Errno> {
        let reg = self.registrar()?;
        let table_ref = &self.tables[proto.index()];
        let mut table = lock(table_ref);
        let n = match table.iter().position(Option::is_none) {
            Some(n) => n,
            None if table.len() < MAX_CONVS => {
                table.push(None);
                table.len() - 1
            }
            None => return Err(Errno(libc::ENFILE)),
        };
        let conv = Arc::new(Conv::new(n, proto, Arc::clone(&self.policy), reg));
        let slot = table.get_mut(n).ok_or(Errno(libc::EIO))?;
        *slot = Some(Slot {
            conv: Arc::clone(&conv),
            owner,
            opens: 1,
        });
        Ok(ConvRef {
            table: Arc::clone(table_ref),
            conv,
        })
    }

    /// Opens a file of existing connection `n`, for session `owner`: one
    /// session (one partition, on a shared gateway) cannot read, write,
    /// hang up or take the calls of another's connection.
    pub(crate) fn open(&self, proto: Proto, n: usize, owner: u64) -> Result<ConvRef, Errno> {
        let table_ref = &self.tables[proto.index()];
        let mut table = lock(table_ref);
        let slot = table
            .get_mut(n)
            .and_then(Option::as_mut)
            .filter(|s| s.owner == owner)
            .ok_or(Errno(libc::ENOENT))?;
        slot.opens += 1;
        Ok(ConvRef {
            table: Arc::clone(table_ref),
            conv: Arc::clone(&slot.conv),
        })
    }

    /// Opens `N/listen`: the [`Wait`] ends with a call, which `then`
    /// turns into a connection with [`Net::answer`].
    pub(crate) fn listen(
        &self,
        announced: ConvRef,
        then: impl FnOnce(&SessionInner, Call) -> Result<Vec<u8>, Errno> + Send + 'static,
    ) -> Wait {
        let conv = Arc::clone(&announced.conv);
        conv.accept(move |s, call| {
            let r = then(s, call);
            // Announced until the wait is over.
            drop(announced);
            r
        })
    }

    /// A new connection carrying an accepted call.
    pub(crate) fn answer(&self, call: Call, owner: u64) -> Result<ConvRef, Errno> {
        let conv = self.clone_conv(Proto::Tcp, owner)?;
        conv.conv.adopt(call.0, call.1, call.2)?;
        Ok(conv)
    }

    /// A write to `ctl`: `None` if done, a [`Wait`] for a `connect` (its
    /// reply is built by `then`).
    pub(crate) fn ctl(
        &self,
        conv: &Arc<Conv>,
        data: &[u8],
        then: impl FnOnce(&SessionInner, ()) -> Result<Vec<u8>, Errno> + Send + 'static,
    ) -> Result<Option<Wait>, Errno> {
        let cmd = parse_ctl(data).inspect_err(|_| {
            tracing::debug!(
                n = conv.n,
                "net: bad ctl message {:?}",
                String::from_utf8_lossy(data)
            );
        })?;
        if conv.proto == Proto::Udp {
            return match cmd {
                Ctl::Connect(addr) => {
                    if !self.policy.allow_connect(addr) {
                        return Err(Errno(libc::EACCES));
                    }
                    conv.udp_connect(addr).map(|()| None)
                }
                Ctl::Announce(addr) => {
                    if !self.policy.allow_announce(addr) {
                        return Err(Errno(libc::EACCES));
                    }
                    conv.udp_announce(addr).map(|()| None)
                }
                Ctl::Headers => {
                    conv.set_headers();
                    Ok(None)
                }
                Ctl::SockOpt {
                    level,
                    name,
                    len,
                    value,
                } => {
                    let value = &value[..usize::from(len)];
                    // Joining a group is listening on it, at the socket's port.
                    if let Some(group) = joined_group(level, name, value) {
                        let port = conv.lock().local.map_or(0, |l| l.port());
                        if !self.policy.allow_announce(SocketAddr::new(group, port)) {
                            return Err(Errno(libc::EACCES));
                        }
                    }
                    conv.udp_sockopt(level, name, value).map(|()| None)
                }
                Ctl::Disconnect => conv.udp_disconnect().map(|()| None),
                Ctl::Hangup => {
                    conv.hangup();
                    Ok(None)
                }
                // Before the socket is bound (a bound one takes the
                // reuse options as they come).
                Ctl::ReuseAddr(_) | Ctl::ReusePort(_) | Ctl::V6Only => {
                    conv.set_option(&cmd);
                    Ok(None)
                }
                Ctl::Nodelay
                | Ctl::Keepalive
                | Ctl::Linger { .. }
                | Ctl::Shutdown(_)
                | Ctl::Bind(_)
                | Ctl::Listen(_) => Err(einval()),
            };
        }
        match cmd {
            Ctl::Headers | Ctl::Disconnect | Ctl::SockOpt { .. } => Err(einval()),
            Ctl::Connect(addr) => {
                if !self.policy.allow_connect(addr) {
                    return Err(Errno(libc::EACCES));
                }
                conv.connect(addr, then).map(Some)
            }
            Ctl::Announce(addr) => {
                if !self.policy.allow_announce(addr) {
                    return Err(Errno(libc::EACCES));
                }
                conv.announce(addr).map(|()| None)
            }
            Ctl::Bind(addr) => {
                if !self.policy.allow_announce(addr) {
                    return Err(Errno(libc::EACCES));
                }
                conv.bind(addr).map(|()| None)
            }
            Ctl::Listen(backlog) => conv.start_listening(backlog).map(|()| None),
            Ctl::Hangup => {
                conv.hangup();
                Ok(None)
            }
            Ctl::Shutdown(how) => conv.shutdown(how).map(|()| None),
            Ctl::Nodelay
            | Ctl::Keepalive
            | Ctl::Linger { .. }
            | Ctl::ReuseAddr(_)
            | Ctl::ReusePort(_)
            | Ctl::V6Only => {
                conv.set_option(&cmd);
                Ok(None)
            }
        }
    }
}

/// A connection as a partition's snapshot keeps it (`saved`): only what
/// can be made again on the host of a restored partition.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum SavedConv {
    /// A TCP listener: listens again, at the same address (or where
    /// `--publish` puts it), with the same options.
    Listen {
        /// Its address as the partition sees it.
        local: SocketAddr,
        /// The host listener's backlog.
        backlog: i32,
        /// `SO_REUSEADDR`, `SO_REUSEPORT`, `IPV6_V6ONLY`, `TCP_NODELAY`,
        /// `SO_KEEPALIVE` as set through `ctl`.
        options: [bool; 5],
    },
    /// A UDP socket: bound again at `local` (if that address is free) and
    /// connected to `remote`.
    Udp {
        /// Where it was bound.
        local: Option<SocketAddr>,
        /// Where it was connected.
        remote: Option<SocketAddr>,
        /// Its reads and writes carry address headers.
        headers: bool,
        /// `SO_REUSEADDR`, `SO_REUSEPORT`, `IPV6_V6ONLY`.
        #[serde(default)]
        options: [bool; 3],
    },
    /// Anything else (a TCP connection, one being made, a socket only
    /// bound): its host socket belongs to the partition that made it, so
    /// the restored one finds it hung up (reads see end of file, writes
    /// `EPIPE`).
    Gone,
}

impl NetNode {
    /// The node's path beneath `/net` (`""`, `tcp`, `tcp/clone`, `tcp/3/ctl`),
    /// for a snapshot.
    pub(crate) fn path(self) -> String {
        let name = |p: Proto| String::from_utf8_lossy(p.name()).into_owned();
        let file = |f: ConvFile| {
            CONV_FILES
                .iter()
                .find(|(_, g)| *g == f)
                .map_or_else(String::new, |(n, _)| {
                    String::from_utf8_lossy(n).into_owned()
                })
        };
        match self {
            NetNode::Root => String::new(),
            NetNode::Dir(p) => name(p),
            NetNode::Clone(p) => format!("{}/clone", name(p)),
            NetNode::Ifaces => "ifaces".into(),
            NetNode::Conv(p, n) => format!("{}/{n}", name(p)),
            NetNode::File(p, n, f) => format!("{}/{n}/{}", name(p), file(f)),
        }
    }
}

impl Conv {
    /// What a snapshot keeps of it.
    pub(crate) fn save(&self) -> SavedConv {
        let st = self.lock();
        match (&st.sock, st.status, st.local) {
            (Sock::Listener(_), Status::Listen, Some(local)) => SavedConv::Listen {
                local,
                backlog: st.backlog,
                options: [
                    st.reuseaddr,
                    st.reuseport,
                    st.v6only,
                    st.nodelay,
                    st.keepalive,
                ],
            },
            (Sock::Udp(u), _, _) => SavedConv::Udp {
                local: st.local.or(u.local_addr().ok()),
                remote: st.remote,
                headers: st.headers,
                options: [st.reuseaddr, st.reuseport, st.v6only],
            },
            _ => SavedConv::Gone,
        }
    }

    /// Makes `saved` again on this fresh connection.
    fn restore(self: &Arc<Self>, saved: &SavedConv) -> Result<(), String> {
        match saved {
            SavedConv::Gone => {
                self.lock().status = Status::Hungup;
                Ok(())
            }
            SavedConv::Listen {
                local,
                backlog,
                options,
            } => {
                {
                    let mut st = self.lock();
                    [
                        st.reuseaddr,
                        st.reuseport,
                        st.v6only,
                        st.nodelay,
                        st.keepalive,
                    ] = *options;
                }
                let host = host_side(&*self.policy, *local);
                let made = (|| {
                    let s = Self::tcp_socket(&self.lock(), host)?;
                    s.bind(&host.into())?;
                    let bound = s.local_addr()?.as_socket().ok_or(Errno(libc::EINVAL))?;
                    self.lock().sock = Sock::Bound(s);
                    self.start_listening(*backlog)?;
                    Ok::<_, Errno>(bound)
                })();
                match made {
                    Ok(bound) => {
                        self.lock().local = Some(guest_side(&*self.policy, *local, bound));
                        Ok(())
                    }
                    Err(e) if e.0 == libc::EADDRINUSE && host == *local => Err(format!(
                        "the snapshot's TCP listener on {local} cannot listen again: {} \
                         (the partition snapshotted probably still listens there); give this \
                         one a port of its own with --publish {}=PORT (0: any free port)",
                        io::Error::from_raw_os_error(e.0),
                        local.port()
                    )),
                    Err(e) => Err(format!(
                        "the snapshot's TCP listener on {local} cannot listen again at {host}: {}",
                        io::Error::from_raw_os_error(e.0)
                    )),
                }
            }
            SavedConv::Udp {
                local,
                remote,
                headers,
                options,
            } => {
                if *headers {
                    self.set_headers();
                }
                {
                    let mut st = self.lock();
                    [st.reuseaddr, st.reuseport, st.v6only] = *options;
                }
                let made = local
                    .map_or(Ok(()), |a| self.udp_announce(a))
                    .and_then(|()| remote.map_or(Ok(()), |a| self.udp_connect(a)));
                if let Err(e) = made {
                    tracing::warn!(
                        "a UDP socket of the snapshot (at {}) cannot be made again: {}; the program finds it closed",
                        addr_text(*local).trim_end(),
                        io::Error::from_raw_os_error(e.0)
                    );
                    self.with_state(|st| self.drop_sock(st, Status::Hungup));
                }
                Ok(())
            }
        }
    }
}

impl Net {
    /// The connections session `owner` holds, as a snapshot keeps them.
    pub(crate) fn save(&self, owner: u64) -> Vec<(String, usize, SavedConv)> {
        let mut out = Vec::new();
        for proto in [Proto::Tcp, Proto::Udp] {
            let convs: Vec<Arc<Conv>> = lock(&self.tables[proto.index()])
                .iter()
                .flatten()
                .filter(|s| s.owner == owner)
                .map(|s| Arc::clone(&s.conv))
                .collect();
            for c in convs {
                let name = String::from_utf8_lossy(proto.name()).into_owned();
                out.push((name, c.n, c.save()));
            }
        }
        out
    }

    /// Makes connection `n` of `proto` (`tcp`, `udp`) again for session
    /// `owner`, as `saved`; the reference returned holds it until the fids
    /// that name it have been restored.
    pub(crate) fn restore(
        &self,
        proto: &str,
        n: usize,
        owner: u64,
        saved: &SavedConv,
    ) -> Result<ConvRef, String> {
        let proto = [Proto::Tcp, Proto::Udp]
            .into_iter()
            .find(|p| p.name() == proto.as_bytes())
            .ok_or_else(|| format!("no /net/{proto}"))?;
        if n >= MAX_CONVS {
            return Err(format!("connection number {n} is out of range"));
        }
        let reg = self.registrar().map_err(|e| e.to_string())?;
        let table_ref = &self.tables[proto.index()];
        let conv = Arc::new(Conv::new(n, proto, Arc::clone(&self.policy), reg));
        {
            let mut table = lock(table_ref);
            if table.len() <= n {
                table.resize_with(n + 1, || None);
            }
            if table[n].is_some() {
                return Err(format!("connection {n} is there twice"));
            }
            table[n] = Some(Slot {
                conv: Arc::clone(&conv),
                owner,
                opens: 1,
            });
        }
        let held = ConvRef {
            table: Arc::clone(table_ref),
            conv,
        };
        held.conv.restore(saved)?;
        Ok(held)
    }

    /// The node at `path` beneath `/net` ([`NetNode::path`]).
    pub(crate) fn resolve(&self, path: &str) -> Result<NetNode, Errno> {
        path.split('/')
            .filter(|c| !c.is_empty())
            .try_fold(NetNode::Root, |at, name| self.lookup(at, name.as_bytes()))
    }
}

impl fmt::Debug for Net {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Net")
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

/// The text of `/net/ifaces`: the host's interfaces, as a partition's
/// `SIOCGIF*` ioctls and `/proc/net/if_inet6` report them (a partition's
/// sockets are the host's, so are its interfaces). One line each:
///
/// ```text
/// iface NAME INDEX FLAGS MTU HWTYPE HWADDR   (flags in hex, HWADDR hex or -)
/// inet NAME ADDR NETMASK BROADCAST|-
/// inet6 ADDR32HEX INDEX PREFIX SCOPE FLAGS NAME   (the host's /proc/net/if_inet6)
/// ```
pub(crate) fn ifaces_text() -> Vec<u8> {
    let all = crate::sys::ifaddrs().unwrap_or_default();
    let mut names: Vec<(i32, String, u32, u16, Vec<u8>)> = Vec::new();
    for a in &all {
        if let crate::sys::IfAddrKind::Packet { index, hatype, hw } = &a.addr {
            names.push((*index, a.name.clone(), a.flags, *hatype, hw.clone()));
        }
    }
    names.sort_by_key(|n| n.0);
    let index_of = |name: &str| {
        // An alias label (`eth0:1`) is its device's.
        let dev = name.split(':').next().unwrap_or(name);
        names.iter().find(|n| n.1 == dev).map_or(i32::MAX, |n| n.0)
    };
    let mut out = String::new();
    for (index, name, flags, hatype, hw) in &names {
        let mtu = std::fs::read_to_string(format!("/sys/class/net/{name}/mtu"))
            .ok()
            .and_then(|m| m.trim().parse::<u32>().ok())
            .unwrap_or(1500);
        let hw = if hw.is_empty() {
            "-".to_string()
        } else {
            hw.iter().map(|b| format!("{b:02x}")).collect()
        };
        out.push_str(&format!(
            "iface {name} {index} {flags:x} {mtu} {hatype} {hw}\n"
        ));
    }
    // Addresses in device order, as Linux's SIOCGIFCONF gives them.
    let mut inet: Vec<&crate::sys::IfAddr> = all
        .iter()
        .filter(|a| matches!(a.addr, crate::sys::IfAddrKind::Inet { .. }))
        .collect();
    inet.sort_by_key(|a| index_of(&a.name));
    for a in inet {
        if let crate::sys::IfAddrKind::Inet { addr, mask, brd } = &a.addr {
            let brd = brd.map_or("-".to_string(), |b| b.to_string());
            out.push_str(&format!("inet {} {addr} {mask} {brd}\n", a.name));
        }
    }
    if let Ok(v6) = std::fs::read_to_string("/proc/net/if_inet6") {
        for l in v6.lines() {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() == 6 {
                out.push_str(&format!("inet6 {}\n", f.join(" ")));
            }
        }
    }
    out.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_numbers_read_from_qids() {
        use astraea_9p::consts::net_conv_number;
        for (proto, n) in [
            (Proto::Tcp, 0),
            (Proto::Udp, 5),
            (Proto::Tcp, MAX_CONVS - 1),
        ] {
            for file in [ConvFile::Ctl, ConvFile::Data, ConvFile::Listen] {
                let qid = NetNode::File(proto, n, file).qid();
                assert_eq!(net_conv_number(qid.path), Some(n as u32));
            }
        }
        assert_eq!(net_conv_number(NetNode::Clone(Proto::Tcp).qid().path), None);
        assert_eq!(net_conv_number(NetNode::Root.qid().path), None);
        assert_eq!(net_conv_number(0x1234), None);
    }

    #[test]
    fn ctl_parsing() {
        let a = |s: &str| s.parse::<SocketAddr>().unwrap();
        assert_eq!(
            parse_ctl(b"connect 127.0.0.1!80\n"),
            Ok(Ctl::Connect(a("127.0.0.1:80")))
        );
        assert_eq!(
            parse_ctl(b"connect ::1!8080"),
            Ok(Ctl::Connect(a("[::1]:8080")))
        );
        assert_eq!(
            parse_ctl(b"connect localhost!1"),
            Ok(Ctl::Connect(a("127.0.0.1:1")))
        );
        assert_eq!(
            parse_ctl(b"announce *!0"),
            Ok(Ctl::Announce(a("0.0.0.0:0")))
        );
        assert_eq!(
            parse_ctl(b"announce 564"),
            Ok(Ctl::Announce(a("0.0.0.0:564")))
        );
        assert_eq!(parse_ctl(b"hangup"), Ok(Ctl::Hangup));
        assert_eq!(
            parse_ctl(b"shutdown wr"),
            Ok(Ctl::Shutdown(Shutdown::Write))
        );
        assert_eq!(parse_ctl(b"keepalive 1000"), Ok(Ctl::Keepalive));
        assert_eq!(parse_ctl(b"linger 0"), Ok(Ctl::Linger { abort: true }));
        assert_eq!(parse_ctl(b"linger off"), Ok(Ctl::Linger { abort: false }));
        for bad in [
            &b""[..],
            b"connect",
            b"connect 127.0.0.1",
            b"connect 127.0.0.1!",
            b"connect 127.0.0.1!99999",
            b"connect 127.0.0.1!+80",
            b"connect 127.0.0.1!0",
            b"connect *!80",
            b"connect 0.0.0.0!80",
            b"connect [::]!80",
            b"connect [::ffff:0.0.0.0]!80",
            b"connect ::ffff:0.0.0.0!80",
            b"connect example.org!80",
            b"connect 1.2.3.4!80 extra",
            b"shutdown",
            b"shutdown both",
            b"announce 1.2.3.4",
            b"hangup now",
            b"frobnicate",
            b"\xff\xfe connect",
            b"keepalive forever",
            b"linger 5",
        ] {
            assert_eq!(
                parse_ctl(bad),
                Err(einval()),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
        assert_eq!(parse_ctl(&[b'a'; 10_000]), Err(einval()));
    }

    #[test]
    fn sockopt_ctl_takes_only_multicast_options() {
        let mut value = [0u8; MAX_SOCKOPT];
        value[..8].copy_from_slice(&[239, 1, 2, 3, 0, 0, 0, 0]);
        assert_eq!(
            parse_ctl(b"sockopt 0 35 ef010203 00000000".as_slice()),
            Err(einval()),
            "the value is one word"
        );
        assert_eq!(
            parse_ctl(b"sockopt 0 35 ef01020300000000"),
            Ok(Ctl::SockOpt {
                level: 0,
                name: 35,
                len: 8,
                value
            })
        );
        assert_eq!(
            joined_group(0, libc::IP_ADD_MEMBERSHIP, &value[..8]),
            Some("239.1.2.3".parse().unwrap())
        );
        assert_eq!(joined_group(0, libc::IP_ADD_MEMBERSHIP, &value[..4]), None);
        // Any other option, however well formed, is not the host's to set.
        for refused in [
            &b"sockopt 1 2 01000000"[..],
            b"sockopt 6 1 01000000",
            b"sockopt 0 1 01",
        ] {
            assert_eq!(parse_ctl(refused), Err(Errno(libc::ENOPROTOOPT)));
        }
        let long = format!("sockopt 0 35 {}", "00".repeat(MAX_SOCKOPT + 1));
        for bad in [
            &b"sockopt 0 35 0"[..],
            b"sockopt 0 35 zz",
            b"sockopt x 35 00",
            b"sockopt 0",
            b"sockopt 0 35 00 00 00",
            b"sockopt 0 35 \xc3\xa9",
            long.as_bytes(),
        ] {
            assert_eq!(
                parse_ctl(bad),
                Err(einval()),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
