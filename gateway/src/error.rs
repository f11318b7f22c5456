//! Error types: [`GatewayError`] for the host side (configuration, sockets)
//! and [`Errno`] for the Linux error numbers sent to clients in `Rlerror`.

use std::fmt;
use std::io;
use std::path::PathBuf;

/// What can go wrong setting up or running the gateway (never sent to a client).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GatewayError {
    /// An export's host directory cannot be opened.
    #[error("cannot export {path}: {source}")]
    ExportOpen {
        /// The host path.
        path: PathBuf,
        /// Why it failed.
        source: io::Error,
    },
    /// An export's guest path is not an absolute, normalised path.
    #[error("invalid guest path {0:?}: must be absolute, without `.`, `..` or empty components")]
    BadGuestPath(String),
    /// Two exports claim the same guest path.
    #[error("two exports are mounted at guest path {0:?}")]
    DuplicateExport(String),
    /// A limit or size in the configuration is out of range.
    #[error("invalid gateway configuration: {0}")]
    InvalidConfig(String),
    /// A byte stream carried a frame whose `size[4]` is impossible (below the
    /// 7-byte header or above the negotiated msize); the stream was closed.
    #[error("9P framing error: message size {size} outside 7..={msize}")]
    Framing {
        /// The size field received.
        size: u32,
        /// The msize in force.
        msize: u32,
    },
    /// An I/O error on a socket or stream.
    #[error("gateway I/O error: {0}")]
    Io(#[from] io::Error),
}

/// A Linux `errno` value, as carried by `Rlerror`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Errno(pub i32);

impl Errno {
    /// The value on the wire.
    pub fn code(self) -> u32 {
        self.0.unsigned_abs()
    }
}

impl From<io::Error> for Errno {
    /// The host's error for a client. `EMFILE` here is the gateway's own
    /// descriptor table, not the client program's (whose limit its kernel
    /// checks): to the client the system ran out, Linux's `ENFILE`.
    fn from(e: io::Error) -> Errno {
        match e.raw_os_error() {
            Some(libc::EMFILE) => Errno(libc::ENFILE),
            Some(n) => Errno(n),
            None => Errno(libc::EIO),
        }
    }
}

impl fmt::Debug for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Errno({} {})",
            self.0,
            io::Error::from_raw_os_error(self.0)
        )
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&io::Error::from_raw_os_error(self.0), f)
    }
}

#[cfg(test)]
mod errno_tests {
    use super::*;

    #[test]
    fn the_gateways_descriptor_limit_is_the_clients_system_limit() {
        let e = |n| Errno::from(io::Error::from_raw_os_error(n));
        assert_eq!(e(libc::EMFILE), Errno(libc::ENFILE));
        assert_eq!(e(libc::ENOENT), Errno(libc::ENOENT));
        assert_eq!(Errno::from(io::Error::other("x")), Errno(libc::EIO));
    }
}
