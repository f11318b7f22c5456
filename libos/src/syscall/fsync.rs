//! `fsync(2)`, `fdatasync(2)`, `sync(2)`, `syncfs(2)`, `fadvise64(2)`.

use crate::errno::Errno;
use crate::fd::{self, File, Object};

/// `fsync(fd)`: `Tfsync` for files of the namespace; everything else has
/// nothing to flush.
pub fn fsync(a: &[u64; 6]) -> Result<u64, Errno> {
    match fd::object(a[0])? {
        Object::File(f) => match &*f {
            File::P9 { fid, .. } => {
                crate::p9::mounted().ok_or(Errno::EBADF)?.fsync(*fid)?;
                Ok(0)
            }
            File::Console { .. } => Err(Errno::EINVAL),
        },
        Object::Synthetic(_) | Object::Device(_) => Ok(0),
        _ => Err(Errno::EINVAL),
    }
}

/// `fdatasync(fd)`: as `fsync` (the gateway flushes data and metadata).
pub fn fdatasync(a: &[u64; 6]) -> Result<u64, Errno> {
    fsync(a)
}

/// `sync()` and `syncfs(fd)`: writes reach the gateway synchronously, and
/// the host flushes them on its own schedule.
pub fn sync(_: &[u64; 6]) -> Result<u64, Errno> {
    Ok(0)
}

/// `fadvise64(fd, offset, len, advice)`: advice is accepted and has no
/// effect (there is no page cache to steer yet); pipes refuse it as on Linux.
pub fn fadvise64(a: &[u64; 6]) -> Result<u64, Errno> {
    match fd::object(a[0])? {
        Object::PipeRead(_) | Object::PipeWrite(_) => Err(Errno::ESPIPE),
        _ if a[3] > 5 => Err(Errno::EINVAL),
        _ => Ok(0),
    }
}
