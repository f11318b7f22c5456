//! Extended attributes (`getxattr(2)`, `setxattr(2)`, `listxattr(2)`,
//! `removexattr(2)` and their `l`/`f` forms) through 9P's `Txattrwalk` and
//! `Txattrcreate`; the host's file system decides which names it keeps
//! (the gateway asks it as the launching user), as Linux's would.

use alloc::string::String;

use crate::errno::Errno;
use crate::fd::{self, File, Object};
use crate::mm::user;
use crate::vfs::route::Route;

/// `XATTR_NAME_MAX`.
const NAME_MAX: usize = 255;
/// `XATTR_SIZE_MAX`, and `XATTR_LIST_MAX`.
const SIZE_MAX: u64 = 65536;
const XATTR_CREATE: u64 = 1;
const XATTR_REPLACE: u64 = 2;

/// The attribute name at `addr`: as Linux, an empty or over-long one is
/// `ERANGE`.
fn name_arg(addr: u64) -> Result<String, Errno> {
    match user::read_cstr(addr, NAME_MAX + 1)? {
        (name, true) if !name.is_empty() => String::from_utf8(name).map_err(|_| Errno::EINVAL),
        _ => Err(Errno::ERANGE),
    }
}

/// What a call names: a path (following a last link or not) or an open file.
enum Target {
    Path(String, bool),
    Fd(u64),
}

/// A fresh (unopened) fid of the target, or the errno Linux gives.
fn walk(t: &Target) -> Result<crate::p9::Fid, Errno> {
    let path = match t {
        Target::Path(p, _) => p.clone(),
        Target::Fd(n) => match fd::object(*n)? {
            Object::File(f) => match &*f {
                File::P9 { path, .. } => path.clone(),
                File::Console { .. } => return Err(Errno::EOPNOTSUPP),
            },
            _ => return Err(Errno::EOPNOTSUPP),
        },
    };
    match super::open::route_path(&path) {
        Route::Namespace => {}
        Route::Missing => return Err(Errno::ENOENT),
        _ => return Err(Errno::EOPNOTSUPP),
    }
    let c = crate::p9::mounted().ok_or(Errno::ENOENT)?;
    let follow = match t {
        Target::Path(p, follow) => *follow || super::open::dir_slash(p),
        Target::Fd(_) => true,
    };
    if follow {
        c.walk_path(&path)
    } else {
        c.walk_path_nofollow(&path)
    }
}

fn path_target(addr: u64, follow: bool) -> Result<Target, Errno> {
    Ok(Target::Path(
        super::open::abs(&super::open::user_path(addr)?)?,
        follow,
    ))
}

/// Copies `value` out as Linux does: size 0 asks for the length, a
/// smaller buffer is `ERANGE`.
fn give(value: &[u8], addr: u64, size: u64) -> Result<u64, Errno> {
    if size == 0 {
        return Ok(value.len() as u64);
    }
    if (value.len() as u64) > size {
        return Err(Errno::ERANGE);
    }
    user::copy_in(addr, value)?;
    Ok(value.len() as u64)
}

fn get(t: Result<Target, Errno>, name: u64, value: u64, size: u64) -> Result<u64, Errno> {
    let name = name_arg(name)?;
    let fid = walk(&t?)?;
    let c = crate::p9::mounted().ok_or(Errno::ENOENT)?;
    let r = c.xattr_get(fid, &name, SIZE_MAX as usize);
    c.clunk(fid);
    give(&r?, value, size)
}

fn list(t: Result<Target, Errno>, addr: u64, size: u64) -> Result<u64, Errno> {
    let fid = walk(&t?)?;
    let c = crate::p9::mounted().ok_or(Errno::ENOENT)?;
    let r = c.xattr_get(fid, "", SIZE_MAX as usize);
    c.clunk(fid);
    give(&r?, addr, size)
}

fn set(
    t: Result<Target, Errno>,
    name: u64,
    value: u64,
    size: u64,
    flags: u64,
) -> Result<u64, Errno> {
    // Linux's order: flags, name and value first, then the lookup.
    if flags & !(XATTR_CREATE | XATTR_REPLACE) != 0 {
        return Err(Errno::EINVAL);
    }
    let name = name_arg(name)?;
    if size > SIZE_MAX {
        return Err(Errno::E2BIG);
    }
    let bytes = user::read_vec(value, size)?;
    let fid = walk(&t?)?;
    let c = crate::p9::mounted().ok_or(Errno::ENOENT)?;
    c.xattr_set(fid, &name, Some(&bytes), flags as u32)?;
    Ok(0)
}

fn remove(t: Result<Target, Errno>, name: u64) -> Result<u64, Errno> {
    let name = name_arg(name)?;
    let fid = walk(&t?)?;
    let c = crate::p9::mounted().ok_or(Errno::ENOENT)?;
    c.xattr_set(fid, &name, None, 0)?;
    Ok(0)
}

/// `getxattr(path, name, value, size)`.
pub fn getxattr(a: &[u64; 6]) -> Result<u64, Errno> {
    get(path_target(a[0], true), a[1], a[2], a[3])
}

/// `lgetxattr(path, name, value, size)`.
pub fn lgetxattr(a: &[u64; 6]) -> Result<u64, Errno> {
    get(path_target(a[0], false), a[1], a[2], a[3])
}

/// `fgetxattr(fd, name, value, size)`.
pub fn fgetxattr(a: &[u64; 6]) -> Result<u64, Errno> {
    get(Ok(Target::Fd(a[0])), a[1], a[2], a[3])
}

/// `listxattr(path, list, size)`.
pub fn listxattr(a: &[u64; 6]) -> Result<u64, Errno> {
    list(path_target(a[0], true), a[1], a[2])
}

/// `llistxattr(path, list, size)`.
pub fn llistxattr(a: &[u64; 6]) -> Result<u64, Errno> {
    list(path_target(a[0], false), a[1], a[2])
}

/// `flistxattr(fd, list, size)`.
pub fn flistxattr(a: &[u64; 6]) -> Result<u64, Errno> {
    list(Ok(Target::Fd(a[0])), a[1], a[2])
}

/// `setxattr(path, name, value, size, flags)`.
pub fn setxattr(a: &[u64; 6]) -> Result<u64, Errno> {
    set(path_target(a[0], true), a[1], a[2], a[3], a[4])
}

/// `lsetxattr(path, name, value, size, flags)`.
pub fn lsetxattr(a: &[u64; 6]) -> Result<u64, Errno> {
    set(path_target(a[0], false), a[1], a[2], a[3], a[4])
}

/// `fsetxattr(fd, name, value, size, flags)`.
pub fn fsetxattr(a: &[u64; 6]) -> Result<u64, Errno> {
    set(Ok(Target::Fd(a[0])), a[1], a[2], a[3], a[4])
}

/// `removexattr(path, name)`.
pub fn removexattr(a: &[u64; 6]) -> Result<u64, Errno> {
    remove(path_target(a[0], true), a[1])
}

/// `lremovexattr(path, name)`.
pub fn lremovexattr(a: &[u64; 6]) -> Result<u64, Errno> {
    remove(path_target(a[0], false), a[1])
}

/// `fremovexattr(fd, name)`.
pub fn fremovexattr(a: &[u64; 6]) -> Result<u64, Errno> {
    remove(Ok(Target::Fd(a[0])), a[1])
}
