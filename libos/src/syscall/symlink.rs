//! `symlink(2)`, `symlinkat(2)`: a `Tsymlink` in the link's directory (the
//! gateway makes it beneath the export; the target is only text).

use crate::errno::Errno;

fn symlink_at(target: &str, linkpath: &str) -> Result<u64, Errno> {
    if target.is_empty() {
        return Err(Errno::ENOENT);
    }
    let c = crate::p9::mounted().ok_or(Errno::ENOENT)?;
    if super::open::dir_slash(linkpath) {
        // A link is not a directory: `name/` is EEXIST if taken, else ENOENT.
        return super::dirs::with_dir(linkpath, |d, name| match c.walk(d, &[name]) {
            Ok(fid) => {
                c.clunk(fid);
                Err(Errno::EEXIST)
            }
            Err(e) => Err(e),
        });
    }
    super::dirs::with_dir(linkpath, |d, name| c.symlink(d, name, target).map(|_| 0))?;
    crate::vfs::inotify::notify(linkpath, crate::vfs::inotify::IN_CREATE);
    Ok(0)
}

/// `symlink(target, linkpath)`.
pub fn symlink(a: &[u64; 6]) -> Result<u64, Errno> {
    let target = super::open::user_path(a[0])?;
    let link = super::open::abs(&super::open::user_path(a[1])?)?;
    symlink_at(&target, &link)
}

/// `symlinkat(target, newdirfd, linkpath)`.
pub fn symlinkat(a: &[u64; 6]) -> Result<u64, Errno> {
    let target = super::open::user_path(a[0])?;
    let link = super::open::resolve(a[1], &super::open::user_path(a[2])?)?;
    symlink_at(&target, &link)
}
