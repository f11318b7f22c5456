//! `bind(2)`: a TCP socket announces its address at the gateway at once
//! (the host socket is bound and listening), so `getsockname` after a
//! port-0 bind shows the host's real port, as on Linux. A Unix socket's
//! path is a socket file made through 9P (`net::UnixSocket`).

use crate::errno::Errno;
use crate::net::{AnySocket, UnixKey, UnixName, UnixSocket};

/// `bind(fd, addr, addrlen)`.
pub fn bind(a: &[u64; 6]) -> Result<u64, Errno> {
    super::socket::with(a[0], |s| {
        let bytes = super::socket::addr_bytes(a[1], a[2])?;
        match s {
            AnySocket::Unix(u) => bind_unix(u, &bytes).map(|()| 0),
            s => s.bind(&bytes).map(|()| 0),
        }
    })
}

fn bind_unix(u: &UnixSocket, bytes: &[u8]) -> Result<(), Errno> {
    let name = UnixName::parse(bytes)?;
    let Some(UnixName::Path(p)) = &name else {
        // Abstract and automatic names have no file.
        return u.bind(name, None);
    };
    // As Linux's, the file comes first: a taken path is EADDRINUSE even
    // for a socket bound already (which then gets EINVAL, its file removed).
    let path = super::open::abs(path_str(p)?)?;
    let c = crate::p9::mounted().ok_or(Errno::ENOENT)?;
    // Linux's mode: every permission the umask leaves.
    let mode = 0o140_000 | (0o777 & !crate::vfs::identity::umask());
    let qid = super::dirs::with_dir(&path, |d, name| c.mknod(d, name, mode)).map_err(|e| {
        if e == Errno::EEXIST {
            Errno::EADDRINUSE
        } else {
            e
        }
    })?;
    if let Err(e) = u.bind(name, Some(UnixKey::File(qid.path))) {
        // Bound already: the file is not ours to keep.
        let _ = super::dirs::with_dir(&path, |d, name| c.unlinkat(d, name, 0));
        return Err(e);
    }
    crate::vfs::inotify::notify(&path, crate::vfs::inotify::IN_CREATE);
    Ok(())
}

/// A Unix socket path as the path functions take it.
pub(super) fn path_str(p: &[u8]) -> Result<&str, Errno> {
    core::str::from_utf8(p).map_err(|_| Errno::ENOENT)
}
