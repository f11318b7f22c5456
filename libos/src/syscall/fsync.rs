//! `fsync(2)`, `fdatasync(2)`, `sync(2)`, `syncfs(2)`, `fadvise64(2)`,
//! `sync_file_range(2)`, `readahead(2)`.

use crate::errno::Errno;
use crate::fd::{self, File, Object};
use crate::vfs::synthetic::{Content, Synthetic};

/// `fsync(fd)`: `Tfsync` for files and directories of the namespace, 0 for
/// memory-only files and `/sys` files (which have nothing to flush), and,
/// as Linux's `vfs_fsync_range` for files without the operation, `EINVAL`
/// for the rest (pipes, sockets, devices, `/proc`).
pub fn fsync(a: &[u64; 6]) -> Result<u64, Errno> {
    match fd::object(a[0])? {
        Object::File(f) => match &*f {
            File::P9 { fid, .. } => {
                crate::p9::mounted().ok_or(Errno::EBADF)?.fsync(*fid)?;
                Ok(0)
            }
            File::Console { .. } => Err(Errno::EINVAL),
        },
        Object::Synthetic(s) if s.path.starts_with("/sys/") && !is_dir(&s) => Ok(0),
        o if o.regular().is_some() => Ok(0),
        _ => Err(Errno::EINVAL),
    }
}

fn is_dir(s: &Synthetic) -> bool {
    matches!(s.content, Content::Dir(_))
}

/// What `sync_file_range` and `readahead` see of a descriptor, as Linux
/// tells them apart by the inode's mode.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Regular,
    Directory,
    /// A pipe, socket, terminal or other special file.
    Other,
}

fn kind(o: &Object) -> Kind {
    let file_or_dir = |dir: bool| if dir { Kind::Directory } else { Kind::Regular };
    match o {
        Object::File(f) => match &**f {
            File::P9 { dir, .. } => file_or_dir(*dir),
            File::Console { .. } => Kind::Other,
        },
        Object::Synthetic(s) => file_or_dir(is_dir(s)),
        o if o.regular().is_some() => Kind::Regular,
        _ => Kind::Other,
    }
}

/// `sync_file_range(fd, offset, nbytes, flags)`: Linux's checks (flags,
/// then the range, then `ESPIPE` for what is neither a file nor a
/// directory); writes reach the gateway synchronously, so there is no
/// write-back to start or wait for.
pub fn sync_file_range(a: &[u64; 6]) -> Result<u64, Errno> {
    let o = fd::object(a[0])?;
    let (offset, nbytes) = (a[1] as i64, a[2] as i64);
    if a[3] & !7 != 0 || offset < 0 || nbytes < 0 || offset.checked_add(nbytes).is_none() {
        return Err(Errno::EINVAL);
    }
    match kind(&o) {
        Kind::Other => Err(Errno::ESPIPE),
        Kind::Regular | Kind::Directory => Ok(0),
    }
}

/// `readahead(fd, offset, count)`: `EBADF` unless open for reading,
/// `EINVAL` for anything but a regular file; otherwise 0 (the file cache
/// reads ahead on its own).
pub fn readahead(a: &[u64; 6]) -> Result<u64, Errno> {
    let o = fd::object(a[0])?;
    if o.status_flags() & fd::O_ACCMODE == 1 {
        return Err(Errno::EBADF);
    }
    match kind(&o) {
        Kind::Regular => Ok(0),
        Kind::Directory | Kind::Other => Err(Errno::EINVAL),
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
