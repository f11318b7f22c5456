//! `link(2)`, `linkat(2)`: a `Tlink` of the old file into the new name's
//! directory. Like Linux, a symbolic link is linked itself unless
//! `AT_SYMLINK_FOLLOW` asks for its target.

use alloc::string::String;

use crate::errno::Errno;

const AT_SYMLINK_FOLLOW: u64 = 0x400;
const AT_EMPTY_PATH: u64 = 0x1000;
const AT_FDCWD: u64 = (-100i64) as u64;

/// `new` is (absolute, raw): its `..` are checked after `old` is found.
fn link_at(old: &str, new: &(String, String), follow: bool) -> Result<u64, Errno> {
    if !matches!(
        super::open::route_path(old),
        crate::vfs::route::Route::Namespace
    ) {
        return Err(Errno::EPERM);
    }
    let c = crate::p9::mounted().ok_or(Errno::ENOENT)?;
    let follow = follow || super::open::dir_slash(old);
    if super::open::dir_slash(old) {
        // `old/` follows a link and must be a directory (which the
        // gateway's link then refuses, after the new name's checks).
        super::stat::path_stat_at(old, true)?;
    }
    let fid = if follow {
        c.walk_path(old)?
    } else {
        c.walk_path_nofollow(old)?
    };
    let mut new_abs = new.0.clone();
    if let Err(e) = super::open::fold_dotdot(&mut new_abs, &new.1) {
        c.clunk(fid);
        return Err(e);
    }
    let new = new_abs.as_str();
    let r = super::dirs::with_dir(new, |d, name| {
        if super::open::dir_slash(new) {
            // The new name would be a file, not a directory.
            return match c.walk(d, &[name]) {
                Ok(f) => {
                    c.clunk(f);
                    Err(Errno::EEXIST)
                }
                Err(e) => Err(e),
            };
        }
        c.link(d, fid, name).map(|_| 0)
    });
    c.clunk(fid);
    if r.is_ok() {
        crate::vfs::inotify::notify_own(old, crate::vfs::inotify::IN_ATTRIB);
        crate::vfs::inotify::notify(new, crate::vfs::inotify::IN_CREATE);
    }
    r
}

/// `link(old, new)`.
pub fn link(a: &[u64; 6]) -> Result<u64, Errno> {
    let old = super::open::abs(&super::open::user_path(a[0])?)?;
    let new = super::open::resolve_unchecked(AT_FDCWD, &super::open::user_path(a[1])?)?;
    link_at(&old, &new, false)
}

/// `linkat(olddirfd, old, newdirfd, new, flags)`.
pub fn linkat(a: &[u64; 6]) -> Result<u64, Errno> {
    if a[4] & !(AT_SYMLINK_FOLLOW | AT_EMPTY_PATH) != 0 {
        return Err(Errno::EINVAL);
    }
    let old = super::open::user_path(a[1])?;
    if old.is_empty() {
        // AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH, which a program here
        // does not have; without the flag an empty path is ENOENT.
        return Err(Errno::ENOENT);
    }
    let old = super::open::resolve(a[0], &old)?;
    let new = super::open::resolve_unchecked(a[2], &super::open::user_path(a[3])?)?;
    link_at(&old, &new, a[4] & AT_SYMLINK_FOLLOW != 0)
}
