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

#[cfg(target_os = "none")]
mod socket;

#[cfg(target_os = "none")]
pub use socket::{SOCK_STREAM, Socket, available, set_streaming, sigpipe, streaming};
