//! `access(2)` and `faccessat(2)`: existence checks through a walk (the
//! gateway enforces the real permissions when the file is used).

use crate::errno::Errno;

fn exists(path: &str) -> Result<u64, Errno> {
    let c = crate::p9::mounted().ok_or(Errno::ENOENT)?;
    let fid = c.walk_path(path)?;
    c.clunk(fid);
    Ok(0)
}

/// `access(path, mode)`.
pub fn access(a: &[u64; 6]) -> Result<u64, Errno> {
    exists(&crate::fd::absolute(&super::open::user_path(a[0])?))
}

/// `faccessat(dirfd, path, mode)` and `faccessat2`.
pub fn faccessat(a: &[u64; 6]) -> Result<u64, Errno> {
    exists(&super::open::resolve(a[0], &super::open::user_path(a[1])?)?)
}
