//! `readlink(2)` and `readlinkat(2)`: `/proc/self/exe` names the program,
//! `/proc/self/fd/N` what descriptor N has open;
//! other links are read through 9P without being followed.

use crate::errno::Errno;
use crate::mm::user;
use crate::vfs::route::{Route, SynDir};

fn read_link(path: &str, buf: u64, size: u64) -> Result<u64, Errno> {
    if (size as i64) <= 0 {
        return Err(Errno::EINVAL);
    }
    let target = match super::open::route_path(path) {
        Route::Exe => crate::process::EXE.lock().clone(),
        Route::Fd(n) => crate::fd::link_target(u64::from(n)).map_err(|_| Errno::ENOENT)?,
        // /proc/self is a link to /proc/<pid>.
        Route::Dir(SynDir::ProcSelf) if path.ends_with("/self") => {
            alloc::format!("{}", crate::vfs::pid())
        }
        // /proc/thread-self is a link to <pid>/task/<tid>.
        Route::Dir(SynDir::Task(tid)) if path.ends_with("/thread-self") => {
            alloc::format!("{}/task/{tid}", crate::vfs::pid())
        }
        Route::Missing => return Err(Errno::ENOENT),
        Route::NoDevice => return Err(Errno::ENXIO),
        Route::File(_) | Route::Dir(_) | Route::Dev(_) => return Err(Errno::EINVAL),
        // `name/` follows a link: a directory is not a link, the rest not
        // a directory.
        Route::Namespace if super::open::dir_slash(path) => {
            super::stat::path_stat_at(path, true)?;
            return Err(Errno::EINVAL);
        }
        Route::Namespace => {
            let c = crate::p9::mounted().ok_or(Errno::ENOENT)?;
            let fid = c.walk_path_nofollow(path)?;
            let t = c.readlink(fid);
            c.clunk(fid);
            t?
        }
    };
    let n = target.len().min(size as usize);
    user::copy_in(buf, &target.as_bytes()[..n])?;
    Ok(n as u64)
}

/// `readlink(path, buf, size)`.
pub fn readlink(a: &[u64; 6]) -> Result<u64, Errno> {
    let p = super::open::abs(&super::open::user_path(a[0])?)?;
    read_link(&p, a[1], a[2])
}

/// `readlinkat(dirfd, path, buf, size)`.
pub fn readlinkat(a: &[u64; 6]) -> Result<u64, Errno> {
    let p = super::open::resolve(a[0], &super::open::user_path(a[1])?)?;
    read_link(&p, a[2], a[3])
}
