//! `fsync(2)`, `fdatasync(2)`, `sync(2)`, `syncfs(2)`, `flock(2)`,
//! `fadvise64(2)`.

use crate::errno::Errno;
use crate::fd::{self, File, Object};

const LOCK_SH: u64 = 1;
const LOCK_EX: u64 = 2;
const LOCK_NB: u64 = 4;
const LOCK_UN: u64 = 8;

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

/// `flock(fd, operation)`: whole-file locks conflict only between open
/// files, and one process holds every open file of the partition, so each
/// valid request succeeds at once (locks are not shared with the host).
pub fn flock(a: &[u64; 6]) -> Result<u64, Errno> {
    fd::object(a[0])?;
    match a[1] & !LOCK_NB {
        LOCK_SH | LOCK_EX | LOCK_UN => Ok(0),
        _ => Err(Errno::EINVAL),
    }
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
