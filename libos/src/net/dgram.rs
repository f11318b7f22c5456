//! A UDP socket over one `/net/udp` connection in `headers` mode: every
//! datagram read from `data` starts with the 52-byte header naming its
//! source, every one written with one naming its destination. The socket
//! is bound at the gateway on `bind`, `connect` or the first send (Linux's
//! autobind); from then on its helper thread keeps a read posted and queues
//! what arrives, up to the receive buffer (more is dropped, as Linux drops
//! it).

use alloc::collections::VecDeque;
use alloc::format;
use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;
use core::net::{IpAddr, Ipv6Addr, SocketAddr};
use core::sync::atomic::AtomicU32;

use super::addr;
use super::multicast::{self, Multicast};
use super::options::{
    IPPROTO_IPV6, IPV6_V6ONLY, Options, SO_ACCEPTCONN, SO_ERROR, SOCK_DGRAM, SOL_SOCKET,
};
use super::socket::{Conv, client};
use crate::errno::Errno;
use crate::fd::FileLike;
use crate::sched::WaitQueue;
use crate::sync::IrqLock;
use crate::vfs::poll_bits::{POLLERR, POLLHUP, POLLIN, POLLOUT, POLLRDHUP, POLLRDNORM, POLLWRNORM};
use crate::vfs::{Wakes, readiness_changed};

/// The gateway's header before each datagram.
const HEADER: usize = 52;
/// The largest UDP payload.
const MAX_DATAGRAM: usize = 65_507;
/// Bytes queued before more datagrams are dropped (Linux's default
/// `SO_RCVBUF`, 212,992, counts its overhead too).
const RECV_BUF: usize = 212_992;

struct St {
    conv: Option<Arc<Conv>>,
    queue: VecDeque<(SocketAddr, Vec<u8>)>,
    queued: usize,
    local: Option<SocketAddr>,
    remote: Option<SocketAddr>,
    opts: Options,
    shut_rd: bool,
    shut_wr: bool,
    closing: bool,
    /// An error the host socket reported (an ICMP port unreachable for a
    /// connected socket: `ECONNREFUSED`), returned once by the next
    /// receive or `SO_ERROR`, as Linux's `sk_err`.
    so_error: Option<Errno>,
    mcast: Multicast,
}

struct Shared {
    st: IrqLock<St>,
    readable: WaitQueue,
    wakes: Wakes,
}

/// A UDP socket (one open file description).
pub struct Dgram {
    /// `AF_INET` or `AF_INET6`.
    pub family: u16,
    flags: AtomicU32,
    sh: Arc<Shared>,
}

fn header_ip(ip: IpAddr) -> [u8; 16] {
    match ip {
        IpAddr::V4(v4) => v4.to_ipv6_mapped().octets(),
        IpAddr::V6(v6) => v6.octets(),
    }
}

/// The source address and payload of a datagram read with its header; as
/// the socket's family shows it (IPv4 for an IPv4 socket).
fn parse(family: u16, bytes: &[u8]) -> Option<(SocketAddr, &[u8])> {
    let (h, payload) = bytes.split_at_checked(HEADER)?;
    let mut ip = [0u8; 16];
    ip.copy_from_slice(&h[..16]);
    let ip = Ipv6Addr::from(ip);
    let ip = match (family, ip.to_ipv4_mapped()) {
        (addr::AF_INET6, _) => IpAddr::V6(ip),
        (_, Some(v4)) => IpAddr::V4(v4),
        (_, None) => IpAddr::V6(ip),
    };
    Some((
        SocketAddr::new(ip, u16::from_be_bytes([h[48], h[49]])),
        payload,
    ))
}

impl Dgram {
    /// A new, unbound socket with `O_*` status flags `flags`.
    pub fn new(family: u16, flags: u32) -> Dgram {
        Dgram {
            family,
            flags: AtomicU32::new(flags | 2),
            sh: Arc::new(Shared {
                st: IrqLock::new(St {
                    conv: None,
                    queue: VecDeque::new(),
                    queued: 0,
                    local: None,
                    remote: None,
                    opts: Options::new(SOCK_DGRAM, family),
                    shut_rd: false,
                    shut_wr: false,
                    closing: false,
                    so_error: None,
                    mcast: Multicast::new(),
                }),
                readable: WaitQueue::new(),
                wakes: Wakes::new(),
            }),
        }
    }

    /// The socket's connection, bound to `at` (or any address) first if it
    /// has none; `EINVAL` if `at` is asked of a bound one.
    fn bound(&self, at: Option<SocketAddr>) -> Result<Arc<Conv>, Errno> {
        let (conv, portless, kept) = {
            let st = self.sh.st.lock();
            (
                st.conv.clone(),
                st.local.is_none_or(|l| l.port() == 0),
                st.local,
            )
        };
        if let Some(conv) = conv {
            // A disconnect gave the automatic port up: bound anew, where
            // asked or (a send, a connect: Linux's autobind) at the address
            // the socket kept (one `bind` chose stays).
            if portless {
                let c = client()?;
                let at = at.unwrap_or_else(|| {
                    kept.map_or_else(
                        || addr::unspecified(self.family),
                        |l| SocketAddr::new(l.ip(), 0),
                    )
                });
                let r = conv.ctl(c, &addr::announce_ctl_in(self.family, at));
                // A refused bind clears the address too (Linux's
                // `__inet_bind`): the host socket says what it has.
                let local = conv.address(c, "local");
                self.sh.st.lock().local = local;
                r?;
                return Ok(conv);
            }
            return match at {
                Some(_) => Err(Errno::EINVAL),
                None => Ok(conv),
            };
        }
        // An IPv6-only socket has no IPv4 addresses (Linux's `inet6_bind`).
        let v6only = self.v6only();
        if v6only && at.is_some_and(super::socket::is_mapped) {
            return Err(Errno::EINVAL);
        }
        let c = client()?;
        let mut conv = Conv::clone_new(c, "udp")?;
        conv.ctl(c, "headers")?;
        // The options the host socket needs before it binds.
        if v6only {
            conv.ctl(c, "v6only")?;
        }
        for (opt, ctl) in super::socket::REUSE_CTLS {
            if self.int_opt(SOL_SOCKET, opt) != 0 {
                conv.ctl(c, ctl)?;
            }
        }
        conv.ctl(
            c,
            &addr::announce_ctl_in(
                self.family,
                at.unwrap_or_else(|| addr::unspecified(self.family)),
            ),
        )?;
        // Multicast options set while there was no host socket, in their
        // order (a membership whose interface the host refuses is left
        // out, as the program saw it succeed).
        let pending = self.sh.st.lock().mcast.take_pending();
        for (level, name, value) in pending {
            if let Err(e) = conv.ctl(c, &multicast::ctl(level, name, &value)) {
                log::debug!("udp: multicast option {level}/{name} on binding: {e}");
            }
        }
        conv.open_data(c)?;
        let local = conv.address(c, "local");
        let conv = Arc::new(conv);
        {
            let mut st = self.sh.st.lock();
            if let Some(other) = st.conv.clone() {
                // Another thread bound it meanwhile: that binding stands.
                drop(st);
                let _ = conv.ctl(c, "hangup");
                return match at {
                    Some(_) => Err(Errno::EINVAL),
                    None => Ok(other),
                };
            }
            st.conv = Some(conv.clone());
            st.local = local;
        }
        let sh = self.sh.clone();
        let family = self.family;
        let reader = conv.clone();
        crate::sched::spawn("udp-reader", move || receive(sh, reader, family))
            .ok_or(Errno::ENOMEM)?;
        Ok(conv)
    }

    /// `bind`.
    pub fn bind(&self, at: SocketAddr) -> Result<(), Errno> {
        self.bound(Some(at)).map(|_| ())
    }

    /// `connect`: datagrams then go to `to` by default and come only from
    /// it.
    pub fn connect(&self, to: SocketAddr) -> Result<(), Errno> {
        if to.port() == 0 {
            return Err(Errno::EINVAL);
        }
        let conv = self.bound(None)?;
        let c = client()?;
        let msg = addr::connect_ctl(to)?;
        conv.ctl(c, &msg)?;
        let local = conv.address(c, "local");
        let mut st = self.sh.st.lock();
        st.remote = Some(to);
        if local.is_some() {
            st.local = local;
        }
        Ok(())
    }

    /// `connect(AF_UNSPEC)`: forgets the peer; the host gives up the
    /// automatic port and source address too (Linux's `udp_disconnect`),
    /// which the name then shows.
    pub fn disconnect(&self) -> Result<(), Errno> {
        let conv = self.sh.st.lock().conv.clone();
        let local = match conv {
            Some(conv) => {
                let c = client()?;
                conv.ctl(c, "disconnect")?;
                conv.address(c, "local")
            }
            None => None,
        };
        let mut st = self.sh.st.lock();
        st.remote = None;
        if st.conv.is_some() {
            st.local = local;
        }
        Ok(())
    }

    /// Sends one datagram to `to` (or the connected peer).
    pub fn send_to(&self, data: &[u8], to: Option<SocketAddr>) -> Result<usize, Errno> {
        // Linux's order: the socket is bound first (`inet_send_prepare`),
        // then the size and the destination are checked, then a waiting
        // error and the shutdown (`sock_alloc_send_pskb`).
        let conv = self.bound(None)?;
        if data.len() > MAX_DATAGRAM {
            return Err(Errno::EMSGSIZE);
        }
        let dest = {
            let mut st = self.sh.st.lock();
            let dest = match to {
                Some(t) => t,
                None => st.remote.ok_or(Errno::EDESTADDRREQ)?,
            };
            if dest.port() == 0 {
                return Err(Errno::EINVAL);
            }
            // A port unreachable error waiting: this send reports it.
            if let Some(e) = st.so_error.take() {
                return Err(e);
            }
            if st.shut_wr {
                return Err(Errno::EPIPE);
            }
            dest
        };
        let fid = conv.data.ok_or(Errno::EIO)?;
        let dest_ip = match dest.ip() {
            IpAddr::V4(v4) if v4.is_unspecified() => IpAddr::V4(core::net::Ipv4Addr::LOCALHOST),
            IpAddr::V6(v6) if v6.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
            ip => ip,
        };
        let mut msg = vec![0u8; HEADER];
        msg[..16].copy_from_slice(&header_ip(dest_ip));
        msg[48..50].copy_from_slice(&dest.port().to_be_bytes());
        msg.extend_from_slice(data);
        let n = client()?.write(fid, 0, &msg)?;
        Ok(n.saturating_sub(HEADER))
    }

    /// Receives one datagram: (up to `max` of its bytes, its source, its
    /// whole length).
    pub fn recv_from(
        &self,
        max: usize,
        nonblock: bool,
        peek: bool,
    ) -> Result<(Vec<u8>, Option<SocketAddr>, usize), Errno> {
        let sh = &*self.sh;
        let deadline = sh
            .st
            .lock()
            .opts
            .timeout_ns(false)
            .map(|t| crate::time::monotonic_ns().saturating_add(t));
        loop {
            {
                let mut st = sh.st.lock();
                // A waiting error comes before queued datagrams (Linux's
                // `__skb_recv_udp` looks at `sk_err` first).
                if let Some(e) = st.so_error.take() {
                    return Err(e);
                }
                if let Some((from, data)) = st.queue.front() {
                    let (from, len) = (*from, data.len());
                    let out = data[..len.min(max)].to_vec();
                    if !peek {
                        st.queue.pop_front();
                        st.queued -= len;
                    }
                    return Ok((out, Some(from), len));
                }
                // Linux: a non-blocking call finds nothing even when shut
                // down; a blocking one returns 0 instead of waiting.
                if nonblock {
                    return Err(Errno::EAGAIN);
                }
                if st.shut_rd {
                    return Ok((Vec::new(), None, 0));
                }
            }
            let timed_out = sh.readable.wait_while_interruptible_until(deadline, || {
                let st = sh.st.lock();
                st.queue.is_empty() && !st.shut_rd && !st.closing && st.so_error.is_none()
            })?;
            if timed_out {
                // `SO_RCVTIMEO` passed.
                return Err(Errno::EAGAIN);
            }
        }
    }

    /// `shutdown`: reading then ends, sending fails with `EPIPE`. As on
    /// Linux an unconnected socket answers `ENOTCONN` but is shut down all
    /// the same.
    pub fn shutdown(&self, how: u64) -> Result<(), Errno> {
        if how > 2 {
            return Err(Errno::EINVAL);
        }
        let connected = {
            let mut st = self.sh.st.lock();
            if how != 1 {
                st.shut_rd = true;
            }
            if how != 0 {
                st.shut_wr = true;
            }
            st.remote.is_some()
        };
        // Every registration looks again (Linux's sk_state_change).
        self.sh.wakes.all();
        self.sh.readable.wake_all();
        readiness_changed();
        if connected {
            Ok(())
        } else {
            Err(Errno::ENOTCONN)
        }
    }

    /// The local address (`getsockname`).
    pub fn local(&self) -> SocketAddr {
        self.sh
            .st
            .lock()
            .local
            .unwrap_or_else(|| addr::unspecified(self.family))
    }

    /// The connected peer (`getpeername`).
    pub fn remote(&self) -> Result<SocketAddr, Errno> {
        self.sh.st.lock().remote.ok_or(Errno::ENOTCONN)
    }

    /// An option's value as an integer (0 if unset).
    fn int_opt(&self, level: u32, name: u32) -> i32 {
        self.sh.st.lock().opts.int(level, name).unwrap_or(0)
    }

    /// `IPV6_V6ONLY` is set (an IPv6 socket only).
    fn v6only(&self) -> bool {
        self.family == addr::AF_INET6 && self.int_opt(IPPROTO_IPV6, IPV6_V6ONLY) != 0
    }

    /// `setsockopt`.
    pub fn set_option(&self, level: u32, name: u32, value: &[u8]) -> Result<(), Errno> {
        let ipv6 = self.family == addr::AF_INET6;
        if multicast::own(level, name) {
            Multicast::check(level, name, value, ipv6)?;
            let conv = {
                let mut st = self.sh.st.lock();
                match st.conv.clone() {
                    Some(conv) => conv,
                    None => {
                        st.mcast.change_membership(level, name, value)?;
                        st.mcast.defer(level, name, value);
                        st.mcast.took(level, name, value);
                        return Ok(());
                    }
                }
            };
            // The host's answer: the interface exists, the group is one,
            // not joined twice, left only if joined.
            conv.ctl(client()?, &multicast::ctl(level, name, value))?;
            self.sh.st.lock().mcast.took(level, name, value);
            return Ok(());
        }
        let (int, conv) = {
            let mut st = self.sh.st.lock();
            // Fixed once the socket has a port (Linux's `do_ipv6_setsockopt`).
            if level == IPPROTO_IPV6
                && name == IPV6_V6ONLY
                && self.family == addr::AF_INET6
                && st.local.is_some_and(|l| l.port() != 0)
            {
                return Err(Errno::EINVAL);
            }
            (st.opts.set(level, name, value)?, st.conv.clone())
        };
        // The port-sharing options count in the host's conflict checks
        // whenever they are set: a bound socket's too.
        if let (Some(conv), Some(&(_, word))) = (
            conv,
            super::socket::REUSE_CTLS
                .iter()
                .find(|&&(opt, _)| level == SOL_SOCKET && name == opt),
        ) {
            let off = if int != 0 { "" } else { " off" };
            conv.ctl(client()?, &format!("{word}{off}"))?;
        }
        // TTL, hop limit and loopback of multicast sends: the host
        // socket's too (checked above as Linux checks them).
        if multicast::also_host(level, name) {
            let conv = {
                let mut st = self.sh.st.lock();
                let conv = st.conv.clone();
                if conv.is_none() {
                    st.mcast.defer(level, name, value);
                }
                conv
            };
            if let Some(conv) = conv {
                conv.ctl(client()?, &multicast::ctl(level, name, value))?;
            }
        }
        Ok(())
    }

    /// `getsockopt`.
    pub fn get_option(&self, level: u32, name: u32) -> Result<Vec<u8>, Errno> {
        match (level, name) {
            (SOL_SOCKET, SO_ERROR) => {
                let e = self.sh.st.lock().so_error.take().map_or(0, |e| e.0);
                Ok(e.to_le_bytes().to_vec())
            }
            (SOL_SOCKET, SO_ACCEPTCONN) => Ok(0i32.to_le_bytes().to_vec()),
            _ => {
                let st = self.sh.st.lock();
                let ipv6 = self.family == addr::AF_INET6;
                st.mcast
                    .get(level, name, ipv6)
                    .unwrap_or_else(|| st.opts.get(level, name))
            }
        }
    }
}

impl Drop for Dgram {
    fn drop(&mut self) {
        let conv = {
            let mut st = self.sh.st.lock();
            st.closing = true;
            st.conv.clone()
        };
        // Ends the reader's posted read; the fids go with its last holder.
        if let (Some(conv), Ok(c)) = (conv, client()) {
            let _ = conv.ctl(c, "hangup");
        }
        self.sh.readable.wake_all();
        readiness_changed();
    }
}

impl FileLike for Dgram {
    fn taken_before_copy(&self) -> bool {
        true
    }

    fn read(&self, max: usize, nonblock: bool) -> Result<Vec<u8>, Errno> {
        self.recv_from(max, nonblock, false).map(|(d, _, _)| d)
    }

    fn write(&self, data: &[u8], _nonblock: bool) -> Result<usize, Errno> {
        self.send_to(data, None)
    }

    fn wake_keys(&self) -> (u16, u16) {
        crate::vfs::poll_bits::SOCKET_WAKE_KEYS
    }

    fn poll(&self) -> u16 {
        let st = self.sh.st.lock();
        let mut ev = POLLOUT | POLLWRNORM;
        if !st.queue.is_empty() || st.shut_rd {
            ev |= POLLIN | POLLRDNORM;
        }
        // Linux's datagram_poll: shut for reading is a read hang-up, both
        // ways a hang-up.
        if st.shut_rd {
            ev |= POLLRDHUP;
        }
        if st.shut_rd && st.shut_wr {
            ev |= POLLHUP;
        }
        if st.so_error.is_some() {
            ev |= POLLERR;
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
        // FIONREAD: the size of the next datagram, as Linux answers for UDP.
        let next = self.sh.st.lock().queue.front().map_or(0, |(_, d)| d.len());
        super::ioctl(self.family, request, arg, next, 0)
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

/// The reader: a read of `data` always posted; each datagram queued.
fn receive(sh: Arc<Shared>, conv: Arc<Conv>, family: u16) {
    crate::sched::current().set_posts();
    let (Ok(c), Some(fid)) = (client(), conv.data) else {
        return;
    };
    let mut buf = vec![0u8; HEADER + MAX_DATAGRAM];
    loop {
        if sh.st.lock().closing {
            break;
        }
        let n = match c.read(fid, 0, &mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            // What the network reports (an unreachable port or host) is
            // the socket's pending error and receiving goes on, as on
            // Linux; anything else ends the conversation.
            Err(e @ (Errno::ECONNREFUSED | Errno::EHOSTUNREACH | Errno::ENETUNREACH)) => {
                if sh.st.lock().closing {
                    break;
                }
                sh.st.lock().so_error = Some(e);
                sh.wakes.all();
                sh.readable.wake_all();
                readiness_changed();
                continue;
            }
            Err(_) => break,
        };
        let Some((from, payload)) = parse(family, &buf[..n]) else {
            continue;
        };
        let datagram = payload.to_vec();
        {
            let mut st = sh.st.lock();
            if st.queued + datagram.len() > RECV_BUF {
                // A full receive buffer drops the datagram, as Linux does.
                continue;
            }
            st.queued += datagram.len();
            st.queue.push_back((from, datagram));
        }
        sh.wakes.input();
        sh.readable.wake_all();
        readiness_changed();
    }
}
