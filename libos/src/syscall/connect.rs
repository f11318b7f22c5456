//! `connect(2)`: blocking, or non-blocking with `EINPROGRESS` and the
//! outcome in `POLLOUT` and `SO_ERROR`. A Unix socket connects to the
//! partition's socket bound to the name (a path's socket file is found
//! through 9P first).

use crate::errno::Errno;
use crate::net::{AnySocket, UnixKey, UnixName};

/// `connect(fd, addr, addrlen)`.
pub fn connect(a: &[u64; 6]) -> Result<u64, Errno> {
    let o = super::socket::object(a[0])?;
    let s = o.socket().ok_or(Errno::ENOTSOCK)?;
    let bytes = super::socket::addr_bytes(a[1], a[2])?;
    match s {
        AnySocket::Unix(u) => {
            let key = unix_key(&bytes)?;
            u.connect(&key, o.nonblocking()).map(|()| 0)
        }
        s => s.connect(&bytes).map(|()| 0),
    }
}

/// What a Unix `sockaddr` names: a path's socket file (`ENOENT` if there is
/// none, `ECONNREFUSED` if it is not a socket), or an abstract name.
fn unix_key(bytes: &[u8]) -> Result<UnixKey, Errno> {
    match UnixName::parse(bytes)? {
        Some(UnixName::Abstract(a)) => Ok(UnixKey::Abstract(a)),
        Some(UnixName::Path(p)) => {
            let path = super::open::abs(super::bind::path_str(&p)?)?;
            if !matches!(
                super::open::route_path(&path),
                crate::vfs::route::Route::Namespace
            ) {
                return Err(Errno::ECONNREFUSED);
            }
            let c = crate::p9::mounted().ok_or(Errno::ENOENT)?;
            let fid = c.walk_path(&path)?;
            let st = c.getattr(fid);
            c.clunk(fid);
            let st = st?;
            if st.mode & 0o170_000 != 0o140_000 {
                return Err(Errno::ECONNREFUSED);
            }
            Ok(UnixKey::File(st.qid.path))
        }
        // The family alone names nothing.
        _ => Err(Errno::EINVAL),
    }
}
