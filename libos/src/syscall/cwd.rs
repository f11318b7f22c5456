//! `getcwd(2)` and `chdir(2)`.

use crate::errno::Errno;
use crate::fd;
use crate::mm::user;

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

/// `chdir(path)`: the directory must exist.
pub fn chdir(a: &[u64; 6]) -> Result<u64, Errno> {
    let path = fd::absolute(&super::open::user_path(a[0])?);
    let c = crate::p9::mounted().ok_or(Errno::ENOENT)?;
    let fid = c.walk_path(&path)?;
    let st = c.getattr(fid);
    c.clunk(fid);
    if st?.mode & 0o170000 != 0o040000 {
        return Err(Errno::ENOTDIR);
    }
    *fd::CWD.lock() = path;
    Ok(0)
}
