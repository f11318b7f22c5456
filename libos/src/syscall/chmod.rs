//! `chmod(2)`, `fchmod(2)`, `fchmodat(2)`, `fchmodat2(2)`: a mode change
//! through `Tsetattr`; `chown(2)`, `fchown(2)`, `lchown(2)`, `fchownat(2)`:
//! an owner change the same way (the gateway changes the host file, with the
//! gateway's privileges: an unprivileged gateway gets `EPERM` as Linux gives
//! an unprivileged process).

use astraea_9p::SetAttr;
use astraea_9p::consts::{P9_SETATTR_GID, P9_SETATTR_MODE, P9_SETATTR_UID};

use crate::errno::Errno;
use crate::fd::{self, File, Object};
use crate::vfs::route::Route;

const AT_SYMLINK_NOFOLLOW: u64 = 0x100;
const AT_EMPTY_PATH: u64 = 0x1000;

fn mode_attr(mode: u64) -> SetAttr {
    SetAttr {
        valid: P9_SETATTR_MODE,
        // S_IALLUGO: the file type bits are not the caller's to change.
        mode: (mode & 0o7777) as u32,
        ..SetAttr::default()
    }
}

/// The attributes of `chown(…, uid, gid)`: -1 (as a 32-bit value) leaves
/// the one it stands for unchanged.
fn owner_attr(uid: u64, gid: u64) -> SetAttr {
    let (uid, gid) = (uid as u32, gid as u32);
    let mut valid = 0;
    if uid != u32::MAX {
        valid |= P9_SETATTR_UID;
    }
    if gid != u32::MAX {
        valid |= P9_SETATTR_GID;
    }
    SetAttr {
        valid,
        uid,
        gid,
        ..SetAttr::default()
    }
}

/// Sets the attributes `attr` of the file at `path` (following a link in
/// the last position if `follow`).
pub fn setattr_path(path: &str, follow: bool, attr: SetAttr) -> Result<u64, Errno> {
    match super::open::route_path(path) {
        Route::Namespace => {}
        Route::Missing => return Err(Errno::ENOENT),
        _ => return Err(Errno::EPERM),
    }
    let c = crate::p9::mounted().ok_or(Errno::ENOENT)?;
    let follow = follow || super::open::dir_slash(path);
    if super::open::dir_slash(path) {
        super::stat::path_stat_at(path, true)?;
    }
    let fid = if follow {
        c.walk_path(path)?
    } else {
        c.walk_path_nofollow(path)?
    };
    let what = crate::vfs::inotify::setattr_mask(attr.valid);
    let r = c.setattr(fid, attr);
    let isdir = r.is_ok()
        && crate::vfs::inotify::active()
        && c.getattr(fid)
            .is_ok_and(|st| st.mode & 0o170000 == 0o040000);
    c.clunk(fid);
    crate::cache::forget_attr(path);
    r?;
    if what != 0 {
        let isdir = if isdir {
            crate::vfs::inotify::IN_ISDIR
        } else {
            0
        };
        crate::vfs::inotify::notify(path, what | isdir);
    }
    Ok(0)
}

/// Sets the attributes `attr` of the file open as `n`.
pub fn setattr_fd(n: u64, attr: SetAttr) -> Result<u64, Errno> {
    match fd::object(n)? {
        Object::File(f) => match &*f {
            File::P9 { fid, path, dir, .. } => {
                let c = crate::p9::mounted().ok_or(Errno::EBADF)?;
                let what = crate::vfs::inotify::setattr_mask(attr.valid);
                c.setattr(*fid, attr)?;
                crate::cache::forget_attr(path);
                let isdir = if *dir {
                    crate::vfs::inotify::IN_ISDIR
                } else {
                    0
                };
                if what != 0 {
                    crate::vfs::inotify::notify(path, what | isdir);
                }
                Ok(0)
            }
            File::Console { .. } => Ok(0),
        },
        // Pipes, eventfds and sockets have an inode of their own that
        // nothing else sees; generated files belong to nobody who may
        // change them.
        Object::PipeRead(_) | Object::PipeWrite(_) => Ok(0),
        Object::Like(l) if l.own_inode() => Ok(0),
        _ => Err(Errno::EPERM),
    }
}

/// `chmod(path, mode)`.
pub fn chmod(a: &[u64; 6]) -> Result<u64, Errno> {
    let path = super::open::abs(&super::open::user_path(a[0])?)?;
    setattr_path(&path, true, mode_attr(a[1]))
}

/// `fchmod(fd, mode)`.
pub fn fchmod(a: &[u64; 6]) -> Result<u64, Errno> {
    setattr_fd(a[0], mode_attr(a[1]))
}

/// `fchmodat(dirfd, path, mode)`: no flags (the system call has none).
pub fn fchmodat(a: &[u64; 6]) -> Result<u64, Errno> {
    let path = super::open::resolve(a[0], &super::open::user_path(a[1])?)?;
    setattr_path(&path, true, mode_attr(a[2]))
}

/// `fchmodat2(dirfd, path, mode, flags)`: `AT_SYMLINK_NOFOLLOW` changes a
/// link itself, which Linux refuses (`EOPNOTSUPP`) as the gateway does.
pub fn fchmodat2(a: &[u64; 6]) -> Result<u64, Errno> {
    if a[3] & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
        return Err(Errno::EINVAL);
    }
    let p = super::open::user_path(a[1])?;
    if p.is_empty() && a[3] & AT_EMPTY_PATH != 0 {
        return setattr_fd(a[0], mode_attr(a[2]));
    }
    let path = super::open::resolve(a[0], &p)?;
    setattr_path(&path, a[3] & AT_SYMLINK_NOFOLLOW == 0, mode_attr(a[2]))
}

/// `chown(path, uid, gid)`.
pub fn chown(a: &[u64; 6]) -> Result<u64, Errno> {
    let path = super::open::abs(&super::open::user_path(a[0])?)?;
    setattr_path(&path, true, owner_attr(a[1], a[2]))
}

/// `lchown(path, uid, gid)`: a link itself.
pub fn lchown(a: &[u64; 6]) -> Result<u64, Errno> {
    let path = super::open::abs(&super::open::user_path(a[0])?)?;
    setattr_path(&path, false, owner_attr(a[1], a[2]))
}

/// `fchown(fd, uid, gid)`.
pub fn fchown(a: &[u64; 6]) -> Result<u64, Errno> {
    setattr_fd(a[0], owner_attr(a[1], a[2]))
}

/// `fchownat(dirfd, path, uid, gid, flags)`.
pub fn fchownat(a: &[u64; 6]) -> Result<u64, Errno> {
    if a[4] & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
        return Err(Errno::EINVAL);
    }
    let p = super::open::user_path(a[1])?;
    if p.is_empty() && a[4] & AT_EMPTY_PATH != 0 {
        return setattr_fd(a[0], owner_attr(a[2], a[3]));
    }
    let path = super::open::resolve(a[0], &p)?;
    setattr_path(
        &path,
        a[4] & AT_SYMLINK_NOFOLLOW == 0,
        owner_attr(a[2], a[3]),
    )
}
