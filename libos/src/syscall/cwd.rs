//! `getcwd(2)`, `chdir(2)`, `fchdir(2)`.

use crate::errno::Errno;
use crate::fd::{self, File, Object};
use crate::mm::user;
use crate::vfs::route::Route;

const S_IFMT: u32 = 0o170000;
const S_IFDIR: u32 = 0o040000;

/// `getcwd(buf, size)`.
pub fn getcwd(a: &[u64; 6]) -> Result<u64, Errno> {
    let cwd = fd::absolute(".");
    if cwd.len() + 1 > a[1] as usize {
        return Err(Errno::ERANGE);
    }
    let mut b = alloc::vec::Vec::from(cwd.as_bytes());
    b.push(0);
    user::copy_in(a[0], &b)?;
    Ok(b.len() as u64)
}

/// `chdir(path)`: the directory must exist. The new working directory is
/// where the path leads, links resolved, as Linux keeps it (`getcwd`
/// after a `chdir` through a link names the link's target).
pub fn chdir(a: &[u64; 6]) -> Result<u64, Errno> {
    let path = super::open::abs(&super::open::user_path(a[0])?)?;
    let path = match path.trim_end_matches('/') {
        "" => alloc::string::String::from("/"),
        p => alloc::string::String::from(p),
    };
    if !matches!(super::open::route_path(&path), Route::Namespace) {
        // Only generated directories are served outside the namespace.
        if super::stat::path_stat(&path)?.mode & S_IFMT != S_IFDIR {
            return Err(Errno::ENOTDIR);
        }
        *fd::CWD.lock() = path;
        return Ok(0);
    }
    let c = crate::p9::mounted().ok_or(Errno::ENOENT)?;
    let (fid, real) = c.walk_path_real(&path)?;
    let st = c.getattr(fid);
    c.clunk(fid);
    if st?.mode & S_IFMT != S_IFDIR {
        return Err(Errno::ENOTDIR);
    }
    *fd::CWD.lock() = real;
    Ok(0)
}

/// `fchdir(fd)`: to the directory an open descriptor names.
pub fn fchdir(a: &[u64; 6]) -> Result<u64, Errno> {
    let path = match fd::object(a[0])? {
        Object::File(f) => match &*f {
            File::P9 { fid, path, .. } => {
                let c = crate::p9::mounted().ok_or(Errno::EBADF)?;
                if c.getattr(*fid)?.mode & S_IFMT != S_IFDIR {
                    return Err(Errno::ENOTDIR);
                }
                path.clone()
            }
            File::Console { .. } => return Err(Errno::ENOTDIR),
        },
        Object::Synthetic(s) if s.stat().mode & S_IFMT == S_IFDIR => s.path.clone(),
        _ => return Err(Errno::ENOTDIR),
    };
    *fd::CWD.lock() = path;
    Ok(0)
}
