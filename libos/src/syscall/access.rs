//! `access(2)` and `faccessat(2)`: existence checks (the gateway enforces
//! the real permissions when the file is used; generated files are
//! read-only).

use crate::errno::Errno;
use crate::vfs::route::Route;

const W_OK: u64 = 2;

fn check(path: &str, mode: u64) -> Result<u64, Errno> {
    match super::open::route_path(path) {
        Route::File(_) | Route::Dir(_) if mode & W_OK != 0 => Err(Errno::EACCES),
        Route::Namespace => {
            if let Some(known) = crate::cache::lookup_attr(path) {
                return known.map(|_| 0);
            }
            let c = crate::p9::mounted().ok_or(Errno::ENOENT)?;
            let fid = c.walk_path(path)?;
            c.clunk(fid);
            Ok(0)
        }
        _ => super::stat::path_stat(path).map(|_| 0),
    }
}

/// `access(path, mode)`.
pub fn access(a: &[u64; 6]) -> Result<u64, Errno> {
    check(&crate::fd::absolute(&super::open::user_path(a[0])?), a[1])
}

/// `faccessat(dirfd, path, mode)` and `faccessat2`.
pub fn faccessat(a: &[u64; 6]) -> Result<u64, Errno> {
    check(
        &super::open::resolve(a[0], &super::open::user_path(a[1])?)?,
        a[2],
    )
}
