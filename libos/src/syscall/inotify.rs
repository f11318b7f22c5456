//! `inotify_init(2)`, `inotify_init1(2)`, `inotify_add_watch(2)`,
//! `inotify_rm_watch(2)`: events about the partition's own file operations
//! (see `vfs::inotify`; changes made on the host are not reported).

use crate::errno::Errno;
use crate::fd::{self, O_CLOEXEC, O_NONBLOCK, Object};
use crate::vfs::inotify::{IN_DONT_FOLLOW, IN_ONLYDIR, Inotify, VALID_MASK};

const IN_MASK_ADD: u32 = 0x2000_0000;
const IN_MASK_CREATE: u32 = 0x1000_0000;
const S_IFMT: u32 = 0o170000;
const S_IFDIR: u32 = 0o040000;

/// `inotify_init()`.
pub fn inotify_init(_: &[u64; 6]) -> Result<u64, Errno> {
    fd::install_object(Object::Like(Inotify::new(0)), false)
}

/// `inotify_init1(flags)`.
pub fn inotify_init1(a: &[u64; 6]) -> Result<u64, Errno> {
    let flags = a[0] as u32;
    if flags & !(O_CLOEXEC | O_NONBLOCK) != 0 {
        return Err(Errno::EINVAL);
    }
    fd::install_object(
        Object::Like(Inotify::new(flags & O_NONBLOCK)),
        flags & O_CLOEXEC != 0,
    )
}

/// The inotify instance open as `n` (`EINVAL` for another kind of file).
fn instance(n: u64) -> Result<Object, Errno> {
    let o = fd::object(n)?;
    if o.like::<Inotify>().is_none() {
        return Err(Errno::EINVAL);
    }
    Ok(o)
}

/// `inotify_add_watch(fd, path, mask)`.
pub fn inotify_add_watch(a: &[u64; 6]) -> Result<u64, Errno> {
    let mask = a[2] as u32;
    // In Linux's order: the mask, the descriptor, then the path.
    if mask & VALID_MASK & 0xfff == 0 || mask & !VALID_MASK != 0 {
        return Err(Errno::EINVAL);
    }
    if mask & IN_MASK_ADD != 0 && mask & IN_MASK_CREATE != 0 {
        return Err(Errno::EINVAL);
    }
    let o = instance(a[0])?;
    let i = o.like::<Inotify>().ok_or(Errno::EINVAL)?;
    let path = super::open::abs(&super::open::user_path(a[1])?)?;
    let st = super::stat::path_stat_at(&path, mask & IN_DONT_FOLLOW == 0)?;
    if mask & IN_ONLYDIR != 0 && st.mode & S_IFMT != S_IFDIR {
        return Err(Errno::ENOTDIR);
    }
    let key = crate::vfs::inotify::normalize(&path);
    i.add_watch(key, mask).map(|wd| wd as u64)
}

/// `inotify_rm_watch(fd, wd)`.
pub fn inotify_rm_watch(a: &[u64; 6]) -> Result<u64, Errno> {
    let o = instance(a[0])?;
    let i = o.like::<Inotify>().ok_or(Errno::EINVAL)?;
    i.rm_watch(a[1] as i32).map(|_| 0)
}
