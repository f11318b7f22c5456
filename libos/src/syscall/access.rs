//! `access(2)`, `faccessat(2)`, `faccessat2(2)`: the mode bits checked
//! against the process's ids (the gateway enforces the real permissions
//! when the file is used; generated files are read-only).

use crate::errno::Errno;
use crate::vfs::route::Route;

const X_OK: u64 = 1;
const W_OK: u64 = 2;
const R_OK: u64 = 4;
const AT_EACCESS: u64 = 0x200;
const AT_SYMLINK_NOFOLLOW: u64 = 0x100;
const AT_EMPTY_PATH: u64 = 0x1000;

/// Whether the mode bits of `st` grant `mode` to the process, as Linux's
/// permission check does (the user's real ids, which are its effective
/// ones here); root may read and write anything and execute anything with
/// an execute bit (or a directory).
fn permitted(st: &astraea_9p::Stat, mode: u64) -> bool {
    let (uid, gid) = crate::vfs::identity::ids();
    let want = (mode & 7) as u32;
    if uid == 0 {
        return want & X_OK as u32 == 0 || st.mode & 0o111 != 0 || st.mode & 0o170000 == 0o040000;
    }
    let bits = if st.uid == uid {
        (st.mode >> 6) & 7
    } else if st.gid == gid {
        (st.mode >> 3) & 7
    } else {
        st.mode & 7
    };
    bits & want == want
}

fn check(path: &str, mode: u64, follow: bool) -> Result<u64, Errno> {
    if mode & !(R_OK | W_OK | X_OK) != 0 {
        return Err(Errno::EINVAL);
    }
    match super::open::route_path(path) {
        Route::File(_) | Route::Dir(_) if mode & W_OK != 0 => Err(Errno::EACCES),
        Route::Namespace => {
            let st = super::stat::path_stat_at(path, follow)?;
            if !permitted(&st, mode) {
                return Err(Errno::EACCES);
            }
            // As Linux: a regular file, directory or link on a read-only
            // mount is not writable, whatever its mode says.
            let kind = st.mode & 0o170000;
            if mode & W_OK != 0
                && matches!(kind, 0o100000 | 0o040000 | 0o120000)
                && super::dirs::path_read_only(path)
            {
                return Err(Errno::EROFS);
            }
            Ok(0)
        }
        _ => super::stat::path_stat(path).map(|_| 0),
    }
}

/// `access(path, mode)`.
pub fn access(a: &[u64; 6]) -> Result<u64, Errno> {
    check(
        &super::open::abs(&super::open::user_path(a[0])?)?,
        a[1],
        true,
    )
}

/// `faccessat(dirfd, path, mode)`: no flags (the system call has none).
pub fn faccessat(a: &[u64; 6]) -> Result<u64, Errno> {
    check(
        &super::open::resolve(a[0], &super::open::user_path(a[1])?)?,
        a[2],
        true,
    )
}

/// `faccessat2(dirfd, path, mode, flags)`.
pub fn faccessat2(a: &[u64; 6]) -> Result<u64, Errno> {
    if a[3] & !(AT_EACCESS | AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
        return Err(Errno::EINVAL);
    }
    check(
        &super::open::resolve(a[0], &super::open::user_path(a[1])?)?,
        a[2],
        a[3] & AT_SYMLINK_NOFOLLOW == 0,
    )
}
