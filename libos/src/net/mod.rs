//! Sockets: the Linux socket API over the gateway's `/net/tcp` files
//! (`docs/net.md`), Plan 9 style. Each TCP socket is one gateway
//! connection (`clone`, `ctl`, `data`); the library OS keeps its readiness
//! locally, so `poll` and `epoll` cost no round trip.
//!
//! The streaming layer (Libra §4.2.2) is the per-connection reader: with
//! streaming on, a read of the `data` file is always posted while the
//! receive buffer has room, so arriving bytes are already in the partition
//! when the program asks; with it off, a read is posted only when the
//! program waits for data (a blocking read, `poll` or `epoll` finding none).

pub mod addr;
pub mod charge;
pub mod ifaces;
pub mod multicast;
pub mod options;

#[cfg(target_os = "none")]
mod dgram;
#[cfg(target_os = "none")]
mod socket;
#[cfg(target_os = "none")]
mod unix;
#[cfg(target_os = "none")]
mod unixmsg;

#[cfg(target_os = "none")]
pub use dgram::Dgram;
#[cfg(target_os = "none")]
pub use unix::{Key as UnixKey, Name as UnixName, UnixSocket, pair as unix_pair};
#[cfg(target_os = "none")]
pub use unixmsg::{SOCK_SEQPACKET, UnixMsg, pair as unix_msg_pair};

#[cfg(target_os = "none")]
pub use options::{SOCK_DGRAM, SOCK_STREAM};
#[cfg(target_os = "none")]
pub use socket::{Socket, available, set_streaming, streaming};

/// The `ioctl`s a socket of `family` answers: `FIONREAD` (`inq`: what a
/// read would find), `SIOCOUTQ` (`outq`: what waits to be sent), and the
/// host's interfaces (`SIOCGIF*`, [`ifaces`]).
#[cfg(target_os = "none")]
fn ioctl(
    family: u16,
    request: u64,
    arg: u64,
    inq: usize,
    outq: usize,
) -> Result<u64, crate::errno::Errno> {
    const FIONREAD: u64 = 0x541b;
    const SIOCOUTQ: u64 = 0x5411;
    if ifaces::is_ifreq(request) {
        return ifreq(family, request, arg);
    }
    let n = match request {
        FIONREAD => inq as u32,
        SIOCOUTQ => outq as u32,
        _ => return Err(crate::errno::Errno::ENOTTY),
    };
    crate::mm::user::copy_in(arg, &n.to_le_bytes())?;
    Ok(0)
}

/// The host's interfaces, from the gateway's `/net/ifaces` (none without
/// it), read afresh for each request as Linux answers from the devices of
/// the moment.
#[cfg(target_os = "none")]
fn host_ifaces() -> ifaces::Ifaces {
    let text = crate::p9::mounted().and_then(|c| {
        let fid = c.walk(c.root(), &["net", "ifaces"]).ok()?;
        let r = c.open(fid, 0).and_then(|_| c.read_all(fid));
        c.clunk(fid);
        r.ok()
    });
    text.map_or_else(ifaces::Ifaces::default, |t| {
        ifaces::parse(&alloc::string::String::from_utf8_lossy(&t))
    })
}

/// `/proc/net/if_inet6`.
#[cfg(target_os = "none")]
pub fn if_inet6() -> alloc::string::String {
    host_ifaces().if_inet6()
}

/// An interface request (`SIOCGIF*`) on a socket of `family`.
#[cfg(target_os = "none")]
fn ifreq(family: u16, request: u64, arg: u64) -> Result<u64, crate::errno::Errno> {
    use crate::mm::user;
    if request == ifaces::SIOCGIFCONF {
        // struct ifconf { int ifc_len; char *ifc_buf; }
        let conf = &user::read_array::<16>(arg)?;
        let len = i32::from_le_bytes([conf[0], conf[1], conf[2], conf[3]]);
        let buf = u64::from_le_bytes(conf[8..16].try_into().unwrap_or([0; 8]));
        let (bytes, all) = host_ifaces().ifconf(usize::try_from(len).unwrap_or(0));
        let n = if buf == 0 {
            all
        } else {
            user::copy_in(buf, &bytes)?;
            bytes.len()
        };
        user::copy_in(arg, &(n as i32).to_le_bytes())?;
        return Ok(0);
    }
    let req = user::read_vec(arg, ifaces::IFREQ_LEN as u64)?;
    let out = host_ifaces().answer(request, &req, family == addr::AF_INET)?;
    user::copy_in(arg, &out)?;
    Ok(0)
}

/// What the socket calls need of a socket, whatever its type: a stream
/// ([`Socket`]) or datagrams ([`Dgram`]). Calls a type lacks answer as
/// Linux does for it.
#[cfg(target_os = "none")]
pub enum AnySocket<'a> {
    /// A TCP socket.
    Stream(&'a Socket),
    /// A UDP socket.
    Dgram(&'a Dgram),
    /// A Unix stream socket (`socketpair`, or `socket(AF_UNIX)`).
    Unix(&'a UnixSocket),
    /// One end of a Unix datagram or seqpacket pair (`socketpair`).
    UnixMsg(&'a UnixMsg),
}

#[cfg(target_os = "none")]
mod any {
    use alloc::sync::Arc;
    use alloc::vec::Vec;
    use core::net::SocketAddr;

    use super::AnySocket;
    use super::addr::{decode, encode, unspecified};
    use crate::errno::Errno;
    use crate::fd::FileLike;

    impl AnySocket<'_> {
        /// `AF_INET` or `AF_INET6`.
        pub fn family(&self) -> u16 {
            match self {
                AnySocket::Stream(s) => s.family,
                AnySocket::Dgram(d) => d.family,
                AnySocket::Unix(_) | AnySocket::UnixMsg(_) => super::addr::AF_UNIX,
            }
        }

        /// Whether it is a stream (TCP or Unix): sent in pieces, and a
        /// send to a broken one raises `SIGPIPE` (Linux's message sockets
        /// raise nothing).
        pub fn is_stream(&self) -> bool {
            matches!(self, AnySocket::Stream(_) | AnySocket::Unix(_))
        }

        /// `bind` of an Internet socket to the program's `sockaddr` (a
        /// Unix socket's name is the system call's business: it makes a
        /// file).
        pub fn bind(&self, at: &[u8]) -> Result<(), Errno> {
            match self {
                AnySocket::Stream(s) => s.bind(decode(at, s.family)?),
                AnySocket::Dgram(d) => d.bind(decode(at, d.family)?),
                AnySocket::Unix(_) | AnySocket::UnixMsg(_) => Err(Errno::EINVAL),
            }
        }

        /// `listen`.
        pub fn listen(&self, backlog: i32) -> Result<(), Errno> {
            match self {
                AnySocket::Stream(s) => s.listen(backlog),
                AnySocket::Unix(u) => u.listen(backlog),
                AnySocket::Dgram(_) => Err(Errno::EOPNOTSUPP),
                // Linux's `sock_no_listen` for datagrams; a connected
                // seqpacket end cannot listen.
                AnySocket::UnixMsg(u) if u.seqpacket() => Err(Errno::EINVAL),
                AnySocket::UnixMsg(_) => Err(Errno::EOPNOTSUPP),
            }
        }

        /// `accept`: the new socket (with the status flags `flags`) and the
        /// peer's `sockaddr` as this socket's family reports it.
        pub fn accept(
            &self,
            flags: u32,
            nonblock: bool,
        ) -> Result<(Arc<dyn FileLike>, Vec<u8>), Errno> {
            match self {
                AnySocket::Stream(s) => {
                    let (new, peer) = s.accept(flags)?;
                    let peer = encode(peer.unwrap_or_else(|| unspecified(s.family)), s.family);
                    Ok((Arc::new(new), peer))
                }
                AnySocket::Unix(u) => {
                    let (new, peer) = u.accept(flags, nonblock)?;
                    Ok((Arc::new(new), peer.encode()))
                }
                AnySocket::Dgram(_) => Err(Errno::EOPNOTSUPP),
                AnySocket::UnixMsg(u) if u.seqpacket() => Err(Errno::EINVAL),
                AnySocket::UnixMsg(_) => Err(Errno::EOPNOTSUPP),
            }
        }

        /// `connect` of an Internet socket (see [`bind`](Self::bind)).
        pub fn connect(&self, to: &[u8]) -> Result<(), Errno> {
            // AF_UNSPEC: a UDP socket forgets its peer (Linux's
            // `inet_dgram_connect`; the family alone is enough).
            if let (AnySocket::Dgram(d), [0, 0, ..]) = (self, to) {
                return d.disconnect();
            }
            match self {
                AnySocket::Stream(s) => s.connect(decode(to, s.family)?),
                AnySocket::Dgram(d) => d.connect(decode(to, d.family)?),
                AnySocket::Unix(_) => Err(Errno::EINVAL),
                AnySocket::UnixMsg(u) => u.connect(to),
            }
        }

        /// `sendto`: a stream ignores the address, as a connected TCP
        /// socket does.
        pub fn send_to(
            &self,
            data: &[u8],
            to: Option<SocketAddr>,
            nonblock: bool,
        ) -> Result<usize, Errno> {
            match self {
                AnySocket::Stream(s) => s.send(data, nonblock),
                AnySocket::Dgram(d) => d.send_to(data, to),
                AnySocket::Unix(_) if to.is_some() => Err(Errno::EISCONN),
                AnySocket::Unix(u) => u.send(data, nonblock),
                AnySocket::UnixMsg(u) => u.send(data, nonblock),
            }
        }

        /// `recvfrom`: (bytes, source, the datagram's whole length).
        pub fn recv_from(
            &self,
            max: usize,
            nonblock: bool,
            peek: bool,
            waitall: bool,
        ) -> Result<(Vec<u8>, Option<SocketAddr>, usize), Errno> {
            match self {
                AnySocket::Stream(s) => s.recv(max, nonblock, peek, waitall).map(|d| {
                    let n = d.len();
                    (d, None, n)
                }),
                AnySocket::Dgram(d) => d.recv_from(max, nonblock, peek),
                AnySocket::Unix(u) => u.recv(max, nonblock, peek, waitall).map(|d| {
                    let n = d.len();
                    (d, None, n)
                }),
                AnySocket::UnixMsg(u) => u.recv(max, nonblock, peek).map(|(d, n)| (d, None, n)),
            }
        }

        /// `shutdown`.
        pub fn shutdown(&self, how: u64) -> Result<(), Errno> {
            match self {
                AnySocket::Stream(s) => s.shutdown(how),
                AnySocket::Dgram(d) => d.shutdown(how),
                AnySocket::Unix(u) => u.shutdown(how),
                AnySocket::UnixMsg(u) => u.shutdown(how),
            }
        }

        /// `getsockname`: the `sockaddr` bytes.
        pub fn local(&self) -> Vec<u8> {
            match self {
                AnySocket::Stream(s) => encode(s.local(), s.family),
                AnySocket::Dgram(d) => encode(d.local(), d.family),
                AnySocket::Unix(u) => u.local().encode(),
                AnySocket::UnixMsg(u) => u.local(),
            }
        }

        /// `getpeername`: the `sockaddr` bytes.
        pub fn remote(&self) -> Result<Vec<u8>, Errno> {
            match self {
                AnySocket::Stream(s) => s.remote().map(|a| encode(a, s.family)),
                AnySocket::Dgram(d) => d.remote().map(|a| encode(a, d.family)),
                AnySocket::Unix(u) => u.peer().map(|n| n.encode()),
                AnySocket::UnixMsg(u) => u.remote(),
            }
        }

        /// `setsockopt`.
        pub fn set_option(&self, level: u32, name: u32, value: &[u8]) -> Result<(), Errno> {
            match self {
                AnySocket::Stream(s) => s.set_option(level, name, value),
                AnySocket::Dgram(d) => d.set_option(level, name, value),
                AnySocket::Unix(u) => u.set_option(level, name, value),
                AnySocket::UnixMsg(u) => u.set_option(level, name, value),
            }
        }

        /// `getsockopt`.
        pub fn get_option(&self, level: u32, name: u32) -> Result<Vec<u8>, Errno> {
            match self {
                AnySocket::Stream(s) => s.get_option(level, name),
                AnySocket::Dgram(d) => d.get_option(level, name),
                AnySocket::Unix(u) => u.get_option(level, name),
                AnySocket::UnixMsg(u) => u.get_option(level, name),
            }
        }
    }
}
