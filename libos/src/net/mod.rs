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
pub mod options;

#[cfg(target_os = "none")]
mod dgram;
#[cfg(target_os = "none")]
mod socket;
#[cfg(target_os = "none")]
mod unix;

#[cfg(target_os = "none")]
pub use dgram::Dgram;
#[cfg(target_os = "none")]
pub use unix::{UnixStream, pair as unix_pair};

#[cfg(target_os = "none")]
pub use options::{SOCK_DGRAM, SOCK_STREAM};
#[cfg(target_os = "none")]
pub use socket::{Socket, available, set_streaming, streaming};

/// The `ioctl`s a socket answers: `FIONREAD` (`inq`: what a read would
/// find) and `SIOCOUTQ` (`outq`: what waits to be sent).
#[cfg(target_os = "none")]
fn ioctl(request: u64, arg: u64, inq: usize, outq: usize) -> Result<u64, crate::errno::Errno> {
    const FIONREAD: u64 = 0x541b;
    const SIOCOUTQ: u64 = 0x5411;
    let n = match request {
        FIONREAD => inq as u32,
        SIOCOUTQ => outq as u32,
        _ => return Err(crate::errno::Errno::ENOTTY),
    };
    crate::mm::user::copy_in(arg, &n.to_le_bytes())?;
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
    /// One end of a `socketpair(AF_UNIX, SOCK_STREAM)`.
    Unix(&'a UnixStream),
}

#[cfg(target_os = "none")]
mod any {
    use alloc::vec::Vec;
    use core::net::SocketAddr;

    use super::{AnySocket, Socket};
    use crate::errno::Errno;

    impl AnySocket<'_> {
        /// `AF_INET` or `AF_INET6`.
        pub fn family(&self) -> u16 {
            match self {
                AnySocket::Stream(s) => s.family,
                AnySocket::Dgram(d) => d.family,
                AnySocket::Unix(_) => super::addr::AF_UNIX,
            }
        }

        /// `bind`.
        pub fn bind(&self, at: SocketAddr) -> Result<(), Errno> {
            match self {
                AnySocket::Stream(s) => s.bind(at),
                AnySocket::Dgram(d) => d.bind(at),
                AnySocket::Unix(_) => Err(Errno::EOPNOTSUPP),
            }
        }

        /// `listen`.
        pub fn listen(&self, backlog: i32) -> Result<(), Errno> {
            match self {
                AnySocket::Stream(s) => s.listen(backlog),
                AnySocket::Dgram(_) | AnySocket::Unix(_) => Err(Errno::EOPNOTSUPP),
            }
        }

        /// `accept`.
        pub fn accept(&self, flags: u32) -> Result<(Socket, Option<SocketAddr>), Errno> {
            match self {
                AnySocket::Stream(s) => s.accept(flags),
                AnySocket::Dgram(_) | AnySocket::Unix(_) => Err(Errno::EOPNOTSUPP),
            }
        }

        /// `connect`.
        pub fn connect(&self, to: SocketAddr) -> Result<(), Errno> {
            match self {
                AnySocket::Stream(s) => s.connect(to),
                AnySocket::Dgram(d) => d.connect(to),
                // A pair is connected from the start.
                AnySocket::Unix(_) => Err(Errno::EISCONN),
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
            }
        }

        /// `shutdown`.
        pub fn shutdown(&self, how: u64) -> Result<(), Errno> {
            match self {
                AnySocket::Stream(s) => s.shutdown(how),
                AnySocket::Dgram(d) => d.shutdown(how),
                AnySocket::Unix(u) => u.shutdown(how),
            }
        }

        /// `getsockname`: `None` for an unnamed Unix socket.
        pub fn local(&self) -> Option<SocketAddr> {
            match self {
                AnySocket::Stream(s) => Some(s.local()),
                AnySocket::Dgram(d) => Some(d.local()),
                AnySocket::Unix(_) => None,
            }
        }

        /// `getpeername`: `None` for an unnamed Unix peer.
        pub fn remote(&self) -> Result<Option<SocketAddr>, Errno> {
            match self {
                AnySocket::Stream(s) => s.remote().map(Some),
                AnySocket::Dgram(d) => d.remote().map(Some),
                AnySocket::Unix(_) => Ok(None),
            }
        }

        /// `setsockopt`.
        pub fn set_option(&self, level: u32, name: u32, value: &[u8]) -> Result<(), Errno> {
            match self {
                AnySocket::Stream(s) => s.set_option(level, name, value),
                AnySocket::Dgram(d) => d.set_option(level, name, value),
                AnySocket::Unix(u) => u.set_option(level, name, value),
            }
        }

        /// `getsockopt`.
        pub fn get_option(&self, level: u32, name: u32) -> Result<Vec<u8>, Errno> {
            match self {
                AnySocket::Stream(s) => s.get_option(level, name),
                AnySocket::Dgram(d) => d.get_option(level, name),
                AnySocket::Unix(u) => u.get_option(level, name),
            }
        }
    }
}
