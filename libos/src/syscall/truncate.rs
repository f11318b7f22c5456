//! `ftruncate(2)` and `truncate(2)`: a size change through `Tsetattr`;
//! growing past `RLIMIT_FSIZE` is `EFBIG` with `SIGXFSZ`, as on Linux.

use crate::errno::Errno;
use crate::fd::{self, File, O_ACCMODE, Object};
use crate::vfs::route::Route;

/// `ftruncate(fd, length)`: the file must be open for writing.
pub fn ftruncate(a: &[u64; 6]) -> Result<u64, Errno> {
    let len = a[1] as i64;
    if len < 0 {
        return Err(Errno::EINVAL);
    }
    let o = fd::object(a[0])?;
    if let Some(m) = o.regular() {
        if o.status_flags() & O_ACCMODE == 0 {
            return Err(Errno::EINVAL);
        }
        return m.set_size(len as u64).map(|()| 0);
    }
    let Object::File(f) = &o else {
        return Err(Errno::EINVAL);
    };
    let File::P9 { fid, ino, .. } = &**f else {
        return Err(Errno::EINVAL);
    };
    if o.status_flags() & O_ACCMODE == 0 {
        return Err(Errno::EINVAL);
    }
    let c = crate::p9::mounted().ok_or(Errno::EBADF)?;
    grow_ok(c, *fid, len as u64)?;
    c.truncate(*fid, len as u64)?;
    crate::mm::vma::file_truncated(*ino, len as u64);
    if let File::P9 { path, .. } = &**f {
        crate::vfs::inotify::notify(path, crate::vfs::inotify::IN_MODIFY);
    }
    Ok(0)
}

/// `truncate(path, length)`.
pub fn truncate(a: &[u64; 6]) -> Result<u64, Errno> {
    let len = a[1] as i64;
    if len < 0 {
        return Err(Errno::EINVAL);
    }
    let path = super::open::abs(&super::open::user_path(a[0])?)?;
    match super::open::route_path(&path) {
        Route::Namespace => {}
        Route::Missing => return Err(Errno::ENOENT),
        _ => return Err(Errno::EACCES),
    }
    let c = crate::p9::mounted().ok_or(Errno::ENOENT)?;
    if super::open::dir_slash(&path) {
        // A directory, or ENOTDIR; a directory cannot be truncated.
        super::stat::path_stat_at(&path, true)?;
        return Err(Errno::EISDIR);
    }
    let fid = c.walk_path(&path)?;
    let r = grow_ok(c, fid, len as u64).and_then(|()| c.truncate(fid, len as u64));
    let ino = c.getattr(fid).map(|st| st.qid.path);
    c.clunk(fid);
    r?;
    if let Ok(ino) = ino {
        crate::mm::vma::file_truncated(ino, len as u64);
    }
    crate::vfs::inotify::notify(&path, crate::vfs::inotify::IN_MODIFY);
    Ok(0)
}

/// `RLIMIT_FSIZE` for a file growing to `len` (`SIGXFSZ` and `EFBIG` past
/// it); its size is asked for only under a limit.
fn grow_ok(c: &crate::p9::Client, fid: crate::p9::Fid, len: u64) -> Result<(), Errno> {
    let limit = crate::process::rlimit(crate::process::RLIMIT_FSIZE).0;
    if limit == crate::process::RLIM_INFINITY || len <= limit {
        return Ok(());
    }
    if len > c.getattr(fid)?.size {
        crate::signal::fsize_grow_ok(len)?;
    }
    Ok(())
}
