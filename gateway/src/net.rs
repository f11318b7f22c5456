//! `/net/tcp`: TCP connections as files, after Plan 9's ip(3).
//!
//! ```text
//! /net/tcp/clone            open: reserves connection N (the fid becomes N/ctl)
//! /net/tcp/N/ctl            read: "N"; write: connect, announce, hangup, nodelay, keepalive
//! /net/tcp/N/data           the byte stream
//! /net/tcp/N/listen         open: waits for a call on announced N (the fid becomes M/ctl)
//! /net/tcp/N/local          "ADDR!PORT\n"
//! /net/tcp/N/remote         "ADDR!PORT\n"
//! /net/tcp/N/status         "Established\n", "Listen\n", ...
//! ```
//!
//! Host sockets are non-blocking and registered with one `mio` poll thread
//! per gateway (started on first use). That thread only bumps a
//! connection's readiness generation and wakes its waiters; the request
//! threads do the socket calls themselves, so a blocked read is a worker
//! waiting on a condition variable, never a thread per connection. Every
//! wait also wakes on the request's [`Cancel`], so `Tflush` and `Tversion`
//! abort it with `EINTR`.
//!
//! A connection lives while at least one fid has one of its files open;
//! the last clunk closes the host socket and frees the number.

use std::collections::HashMap;
use std::fmt;
use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Shutdown, SocketAddr};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};
use std::thread::JoinHandle;

use astraea_9p::{QTDIR, QTFILE, Qid};
use mio::event::Source;
use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Registry, Token, Waker};

use crate::console::{Cancel, lock};
use crate::error::Errno;
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
}

/// The default [`NetPolicy`]: everything is allowed.
#[derive(Debug, Default, Clone, Copy)]
pub struct AllowAll;

impl NetPolicy for AllowAll {}

/// Connections a gateway holds at once; more clone opens get `ENFILE`.
const MAX_CONVS: usize = 4096;
/// Longest ctl message accepted; real commands are far shorter.
const MAX_CTL: usize = 256;
/// The poll thread's own token (connection tokens start at 1).
const WAKE: Token = Token(0);

/// Qid paths of `/net` files: below the namespace's synthetic range marker.
const QID_NET: u64 = (0xFFFF << 48) | (4 << 40);
const QID_CONV: u64 = QID_NET | (1 << 32);

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
    /// `/net/tcp`.
    Tcp,
    /// `/net/tcp/clone`.
    Clone,
    /// `/net/tcp/N`.
    Conv(usize),
    /// `/net/tcp/N/FILE`.
    File(usize, ConvFile),
}

impl NetNode {
    pub(crate) fn qid(self) -> Qid {
        let (ty, path) = match self {
            NetNode::Root => (QTDIR, QID_NET),
            NetNode::Tcp => (QTDIR, QID_NET | 1),
            NetNode::Clone => (QTFILE, QID_NET | 2),
            NetNode::Conv(n) => (QTDIR, QID_CONV | ((n as u64) << 8)),
            NetNode::File(n, f) => (QTFILE, QID_CONV | ((n as u64) << 8) | f.index()),
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
            NetNode::Root => (libc::S_IFDIR | 0o555, 3),
            NetNode::Tcp | NetNode::Conv(_) => (libc::S_IFDIR | 0o555, 2),
            NetNode::Clone => (libc::S_IFREG | 0o666, 1),
            NetNode::File(_, f) if f.writable() => (libc::S_IFREG | 0o666, 1),
            NetNode::File(..) => (libc::S_IFREG | 0o444, 1),
        }
    }

    pub(crate) fn is_dir(self) -> bool {
        matches!(self, NetNode::Root | NetNode::Tcp | NetNode::Conv(_))
    }

    /// The enclosing directory; `None` for `/net` (whose parent is the root).
    pub(crate) fn parent(self) -> Result<Option<NetNode>, Errno> {
        match self {
            NetNode::Root => Ok(None),
            NetNode::Tcp => Ok(Some(NetNode::Root)),
            NetNode::Conv(_) => Ok(Some(NetNode::Tcp)),
            NetNode::Clone | NetNode::File(..) => Err(Errno(libc::ENOTDIR)),
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
    Stream(TcpStream),
    Listener(TcpListener),
}

struct State {
    sock: Sock,
    token: Option<Token>,
    /// Bumped by every readiness event and state change; a waiter sleeps
    /// until it moves past the value it saw when its call would block.
    generation: u64,
    status: Status,
    local: Option<SocketAddr>,
    remote: Option<SocketAddr>,
    nodelay: bool,
    keepalive: bool,
}

/// One connection ("conversation" in ip(3)).
pub(crate) struct Conv {
    n: usize,
    reg: Arc<Registrar>,
    state: Mutex<State>,
    ready: Condvar,
}

impl Conv {
    fn new(n: usize, reg: Arc<Registrar>) -> Conv {
        Conv {
            n,
            reg,
            state: Mutex::new(State {
                sock: Sock::None,
                token: None,
                generation: 0,
                status: Status::Closed,
                local: None,
                remote: None,
                nodelay: false,
                keepalive: false,
            }),
            ready: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// Called by the poll thread on any event of this connection's socket.
    fn poke(&self) {
        self.lock().generation += 1;
        self.ready.notify_all();
    }

    /// Makes a cancellation of the current request wake this connection's
    /// waiters. Must be called without the state lock held.
    fn wake_on_cancel(self: &Arc<Self>, cancel: &Cancel) {
        let me = Arc::clone(self);
        cancel.on_cancel(move || {
            // Taking the lock orders the notify after a waiter's check.
            drop(me.lock());
            me.ready.notify_all();
        });
    }

    /// Sleeps until the readiness generation moves or the request is
    /// cancelled; `Err(EINTR)` on cancellation.
    fn wait<'a>(
        &'a self,
        mut st: MutexGuard<'a, State>,
        cancel: &Cancel,
    ) -> (MutexGuard<'a, State>, Result<(), Errno>) {
        let seen = st.generation;
        loop {
            if cancel.is_cancelled() {
                return (st, Err(Errno(libc::EINTR)));
            }
            if st.generation != seen {
                return (st, Ok(()));
            }
            st = self.ready.wait(st).unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Drops the socket (if any), leaving `status`.
    fn drop_sock(&self, st: &mut State, status: Status) {
        let token = st.token.take();
        match std::mem::replace(&mut st.sock, Sock::None) {
            Sock::Stream(mut s) => {
                if let Some(t) = token {
                    self.reg.remove(t, &mut s);
                }
                let _ = s.shutdown(Shutdown::Both);
            }
            Sock::Listener(mut l) => {
                if let Some(t) = token {
                    self.reg.remove(t, &mut l);
                }
            }
            Sock::None => {}
        }
        st.status = status;
        st.generation += 1;
        self.ready.notify_all();
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
        }
    }

    fn connect(self: &Arc<Self>, addr: SocketAddr, cancel: &Cancel) -> Result<(), Errno> {
        self.wake_on_cancel(cancel);
        let mut st = self.lock();
        if !matches!(st.sock, Sock::None) {
            return Err(Errno(libc::EISCONN));
        }
        let mut s = TcpStream::connect(addr)?;
        st.token = Some(self.reg.add(self, &mut s)?);
        st.sock = Sock::Stream(s);
        st.status = Status::Connecting;
        st.remote = Some(addr);
        Self::apply_options(&st);
        loop {
            let Sock::Stream(s) = &st.sock else {
                // Hung up by another request while connecting.
                return Err(Errno(libc::ECONNABORTED));
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
            let failed = match outcome {
                Ok(Some((peer, local))) => {
                    st.remote = Some(peer);
                    st.local = local;
                    st.status = Status::Established;
                    return Ok(());
                }
                Ok(None) => None,
                Err(e) => Some(e),
            };
            if let Some(e) = failed {
                self.drop_sock(&mut st, Status::Closed);
                st.remote = None;
                return Err(e);
            }
            let (next, res) = self.wait(st, cancel);
            st = next;
            if let Err(e) = res {
                self.drop_sock(&mut st, Status::Closed);
                st.remote = None;
                return Err(e);
            }
        }
    }

    fn announce(self: &Arc<Self>, addr: SocketAddr) -> Result<(), Errno> {
        let mut st = self.lock();
        if !matches!(st.sock, Sock::None) {
            return Err(Errno(libc::EISCONN));
        }
        let mut l = TcpListener::bind(addr)?;
        st.local = Some(l.local_addr()?);
        st.token = Some(self.reg.add(self, &mut l)?);
        st.sock = Sock::Listener(l);
        st.status = Status::Listen;
        Ok(())
    }

    /// Waits for a call on an announced connection.
    fn accept(self: &Arc<Self>, cancel: &Cancel) -> Result<(TcpStream, SocketAddr), Errno> {
        self.wake_on_cancel(cancel);
        let mut st = self.lock();
        loop {
            let Sock::Listener(l) = &st.sock else {
                return Err(Errno(libc::EINVAL));
            };
            match l.accept() {
                Ok(call) => return Ok(call),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                // A call that was reset before it was accepted: wait for the next.
                Err(e)
                    if e.kind() == io::ErrorKind::Interrupted
                        || e.raw_os_error() == Some(libc::ECONNABORTED) =>
                {
                    continue;
                }
                Err(e) => return Err(e.into()),
            }
            let (next, res) = self.wait(st, cancel);
            st = next;
            res?;
        }
    }

    /// Makes a fresh connection carry an accepted call.
    fn adopt(self: &Arc<Self>, mut s: TcpStream, peer: SocketAddr) -> Result<(), Errno> {
        let mut st = self.lock();
        st.token = Some(self.reg.add(self, &mut s)?);
        st.local = s.local_addr().ok();
        st.remote = Some(peer);
        st.sock = Sock::Stream(s);
        st.status = Status::Established;
        Ok(())
    }

    fn hangup(&self) {
        let mut st = self.lock();
        let next = match st.status {
            Status::Connecting | Status::Established => Status::Hungup,
            other if matches!(st.sock, Sock::None) => other,
            _ => Status::Closed,
        };
        self.drop_sock(&mut st, next);
    }

    fn set_option(&self, nodelay: bool) {
        let mut st = self.lock();
        if nodelay {
            st.nodelay = true;
        } else {
            st.keepalive = true;
        }
        Self::apply_options(&st);
    }

    /// Reads what is available, at most `max` bytes; waits for at least one.
    pub(crate) fn read(self: &Arc<Self>, max: usize, cancel: &Cancel) -> Result<Vec<u8>, Errno> {
        if max == 0 {
            return Ok(Vec::new());
        }
        self.wake_on_cancel(cancel);
        let mut buf = vec![0u8; max];
        let mut st = self.lock();
        loop {
            match (&st.sock, st.status) {
                (Sock::Stream(s), Status::Established) => {
                    let mut s: &TcpStream = s;
                    match s.read(&mut buf) {
                        Ok(n) => {
                            buf.truncate(n);
                            return Ok(buf);
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                        Err(e) => return Err(e.into()),
                    }
                }
                (Sock::Stream(_), _) => {} // still connecting
                (_, Status::Hungup) => return Ok(Vec::new()),
                _ => return Err(Errno(libc::ENOTCONN)),
            }
            let (next, res) = self.wait(st, cancel);
            st = next;
            res?;
        }
    }

    /// Sends what fits in the socket buffer (at least one byte); waits
    /// while it is full.
    pub(crate) fn write(self: &Arc<Self>, data: &[u8], cancel: &Cancel) -> Result<usize, Errno> {
        self.wake_on_cancel(cancel);
        let mut st = self.lock();
        loop {
            match (&st.sock, st.status) {
                (Sock::Stream(s), Status::Established) => {
                    let mut s: &TcpStream = s;
                    match s.write(data) {
                        Ok(n) => return Ok(n),
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                        Err(e) => return Err(e.into()),
                    }
                }
                (Sock::Stream(_), _) => {}
                (_, Status::Hungup) => return Err(Errno(libc::EPIPE)),
                _ => return Err(Errno(libc::ENOTCONN)),
            }
            let (next, res) = self.wait(st, cancel);
            st = next;
            res?;
        }
    }

    /// The text of a read-only file, or of `ctl`.
    pub(crate) fn text(&self, file: ConvFile) -> Vec<u8> {
        let st = self.lock();
        let s = match file {
            ConvFile::Ctl | ConvFile::Listen | ConvFile::Data => self.n.to_string(),
            ConvFile::Local => addr_text(st.local),
            ConvFile::Remote => addr_text(st.remote),
            ConvFile::Status => format!(
                "{}\n",
                match st.status {
                    Status::Closed | Status::Hungup => "Closed",
                    Status::Connecting => "Syn_sent",
                    Status::Established => "Established",
                    Status::Listen => "Listen",
                }
            ),
        };
        s.into_bytes()
    }

    pub(crate) fn number(&self) -> usize {
        self.n
    }
}

impl Drop for Conv {
    fn drop(&mut self) {
        let st = self.state.get_mut().unwrap_or_else(PoisonError::into_inner);
        let token = st.token.take();
        match (&mut st.sock, token) {
            (Sock::Stream(s), Some(t)) => self.reg.remove(t, s),
            (Sock::Listener(l), Some(t)) => self.reg.remove(t, l),
            _ => {}
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
    Hangup,
    Nodelay,
    Keepalive,
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
    if !announce && ip.is_unspecified() {
        return Err(einval());
    }
    Ok(SocketAddr::new(ip, port))
}

fn parse_ctl(data: &[u8]) -> Result<Ctl, Errno> {
    if data.len() > MAX_CTL {
        return Err(einval());
    }
    let text = std::str::from_utf8(data).map_err(|_| einval())?;
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
        ("hangup", None) => Ok(Ctl::Hangup),
        ("nodelay", None) => Ok(Ctl::Nodelay),
        // ip(3) takes an optional interval in ms; the host's is used.
        ("keepalive", None) => Ok(Ctl::Keepalive),
        ("keepalive", Some(ms)) if ms.parse::<u32>().is_ok() => Ok(Ctl::Keepalive),
        _ => Err(einval()),
    }
}

struct Slot {
    conv: Arc<Conv>,
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
        // Closed outside the table lock (lock order: connection, then table).
        if last {
            let mut st = self.conv.lock();
            self.conv.drop_sock(&mut st, Status::Closed);
        }
    }
}

/// The `/net` state of a gateway.
pub(crate) struct Net {
    policy: Arc<dyn NetPolicy>,
    table: Arc<Table>,
    reactor: Mutex<Option<Reactor>>,
}

impl Net {
    pub(crate) fn new(policy: Arc<dyn NetPolicy>) -> Net {
        Net {
            policy,
            table: Arc::new(Mutex::new(Vec::new())),
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
            NetNode::Root if name == b"tcp" => Ok(NetNode::Tcp),
            NetNode::Tcp if name == b"clone" => Ok(NetNode::Clone),
            NetNode::Tcp => {
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
                if lock(&self.table).get(n).is_some_and(Option::is_some) {
                    Ok(NetNode::Conv(n))
                } else {
                    Err(Errno(libc::ENOENT))
                }
            }
            NetNode::Conv(n) => CONV_FILES
                .iter()
                .find(|(f, _)| *f == name)
                .map(|(_, f)| NetNode::File(n, *f))
                .ok_or(Errno(libc::ENOENT)),
            NetNode::Root => Err(Errno(libc::ENOENT)),
            NetNode::Clone | NetNode::File(..) => Err(Errno(libc::ENOTDIR)),
        }
    }

    /// The entries of directory `dir` (without `.` and `..`).
    pub(crate) fn list(&self, dir: NetNode) -> Result<Vec<(Vec<u8>, NetNode)>, Errno> {
        Ok(match dir {
            NetNode::Root => vec![(b"tcp".to_vec(), NetNode::Tcp)],
            NetNode::Tcp => {
                let mut out = vec![(b"clone".to_vec(), NetNode::Clone)];
                for (n, slot) in lock(&self.table).iter().enumerate() {
                    if slot.is_some() {
                        out.push((n.to_string().into_bytes(), NetNode::Conv(n)));
                    }
                }
                out
            }
            NetNode::Conv(n) => CONV_FILES
                .iter()
                .map(|(name, f)| (name.to_vec(), NetNode::File(n, *f)))
                .collect(),
            NetNode::Clone | NetNode::File(..) => return Err(Errno(libc::ENOTDIR)),
        })
    }

    /// Opens `clone`: a new connection, lowest free number first.
    pub(crate) fn clone_conv(&self) -> Result<ConvRef, Errno> {
        let reg = self.registrar()?;
        let mut table = lock(&self.table);
        let n = match table.iter().position(Option::is_none) {
            Some(n) => n,
            None if table.len() < MAX_CONVS => {
                table.push(None);
                table.len() - 1
            }
            None => return Err(Errno(libc::ENFILE)),
        };
        let conv = Arc::new(Conv::new(n, reg));
        let slot = table.get_mut(n).ok_or(Errno(libc::EIO))?;
        *slot = Some(Slot {
            conv: Arc::clone(&conv),
            opens: 1,
        });
        Ok(ConvRef {
            table: Arc::clone(&self.table),
            conv,
        })
    }

    /// Opens a file of existing connection `n`.
    pub(crate) fn open(&self, n: usize) -> Result<ConvRef, Errno> {
        let mut table = lock(&self.table);
        let slot = table
            .get_mut(n)
            .and_then(Option::as_mut)
            .ok_or(Errno(libc::ENOENT))?;
        slot.opens += 1;
        Ok(ConvRef {
            table: Arc::clone(&self.table),
            conv: Arc::clone(&slot.conv),
        })
    }

    /// Opens `N/listen`: waits for a call and returns its new connection.
    pub(crate) fn listen(&self, announced: &ConvRef, cancel: &Cancel) -> Result<ConvRef, Errno> {
        let (stream, peer) = announced.conv.accept(cancel)?;
        let call = self.clone_conv()?;
        call.conv.adopt(stream, peer)?;
        Ok(call)
    }

    /// A write to `ctl`.
    pub(crate) fn ctl(&self, conv: &Arc<Conv>, data: &[u8], cancel: &Cancel) -> Result<(), Errno> {
        let cmd = parse_ctl(data).inspect_err(|_| {
            tracing::debug!(
                n = conv.n,
                "net: bad ctl message {:?}",
                String::from_utf8_lossy(data)
            );
        })?;
        match cmd {
            Ctl::Connect(addr) => {
                if !self.policy.allow_connect(addr) {
                    return Err(Errno(libc::EACCES));
                }
                conv.connect(addr, cancel)
            }
            Ctl::Announce(addr) => {
                if !self.policy.allow_announce(addr) {
                    return Err(Errno(libc::EACCES));
                }
                conv.announce(addr)
            }
            Ctl::Hangup => {
                conv.hangup();
                Ok(())
            }
            Ctl::Nodelay => {
                conv.set_option(true);
                Ok(())
            }
            Ctl::Keepalive => {
                conv.set_option(false);
                Ok(())
            }
        }
    }
}

impl fmt::Debug for Net {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Net")
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(parse_ctl(b"keepalive 1000"), Ok(Ctl::Keepalive));
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
            b"connect example.org!80",
            b"connect 1.2.3.4!80 extra",
            b"announce 1.2.3.4",
            b"hangup now",
            b"frobnicate",
            b"\xff\xfe connect",
            b"keepalive forever",
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
}
