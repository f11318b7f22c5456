//! `mkdir(2)`, `mkdirat(2)`, `unlink(2)`, `unlinkat(2)`, `rmdir(2)`,
//! `rename(2)`, `renameat(2)`: directory changes through 9P.

use crate::errno::Errno;

const AT_REMOVEDIR: u64 = 0x200;

/// Splits an absolute path into (directory, name).
/// A trailing slash is dropped here; the callers apply its rules.
fn split(path: &str) -> Result<(&str, &str), Errno> {
    let path = if path.len() > 1 {
        path.trim_end_matches('/')
    } else {
        path
    };
    let (dir, name) = path.rsplit_once('/').ok_or(Errno::EINVAL)?;
    if name.is_empty() {
        return Err(Errno::EINVAL);
    }
    Ok((if dir.is_empty() { "/" } else { dir }, name))
}

/// Runs `f` on the directory of `path` (walked, links followed) and the
/// last name; generated files answer `EPERM`.
pub(super) fn with_dir<T>(
    path: &str,
    f: impl FnOnce(crate::p9::Fid, &str) -> Result<T, Errno>,
) -> Result<T, Errno> {
    if !matches!(
        super::open::route_path(path),
        crate::vfs::route::Route::Namespace
    ) {
        // Generated files and devices cannot be created, removed or renamed.
        return Err(Errno::EPERM);
    }
    let c = crate::p9::mounted().ok_or(Errno::ENOENT)?;
    let (dir, name) = split(path)?;
    let d = c.walk_path_dir(dir)?;
    let r = f(d, name);
    c.clunk(d);
    r
}

/// Whether the directory (or file) `fid` lies on a read-only export: a
/// change of no attribute is refused with `EROFS` there (the gateway's
/// answer), and does nothing elsewhere. Asked only on error paths, where
/// Linux reports a read-only mount before what the lookups found.
pub(super) fn read_only(fid: crate::p9::Fid) -> bool {
    crate::p9::mounted()
        .is_some_and(|c| c.setattr(fid, astraea_9p::SetAttr::default()) == Err(Errno::EROFS))
}

/// [`read_only`] of the file at `path` (links followed).
pub(super) fn path_read_only(path: &str) -> bool {
    let Some(c) = crate::p9::mounted() else {
        return false;
    };
    let Ok(fid) = c.walk_path(path) else {
        return false;
    };
    let r = read_only(fid);
    c.clunk(fid);
    r
}

/// `EROFS` in place of `r`'s error when the directory `d` is on a
/// read-only export: Linux checks the mount once the parent is found,
/// before the last name (`do_unlinkat`, `do_rmdir`, `do_renameat2`).
fn read_only_first<T>(d: crate::p9::Fid, r: Result<T, Errno>) -> Result<T, Errno> {
    match r {
        Err(e) if e != Errno::EROFS && read_only(d) => Err(Errno::EROFS),
        r => r,
    }
}

fn mkdir_at(path: &str, mode: u64) -> Result<u64, Errno> {
    let c = crate::p9::mounted().ok_or(Errno::ENOENT)?;
    let r = with_dir(path, |d, name| {
        c.mkdir(
            d,
            name,
            (mode & 0o7777) as u32 & !crate::vfs::identity::umask(),
        )
        .map(|_| 0)
    })?;
    crate::vfs::inotify::notify(
        path,
        crate::vfs::inotify::IN_CREATE | crate::vfs::inotify::IN_ISDIR,
    );
    Ok(r)
}

fn unlink_at(path: &str, flags: u64) -> Result<u64, Errno> {
    let c = crate::p9::mounted().ok_or(Errno::ENOENT)?;
    with_dir(path, |d, name| {
        read_only_first(d, unlink_in(c, path, d, name, flags))
    })?;
    crate::vfs::inotify::removed(path, flags & AT_REMOVEDIR != 0);
    Ok(0)
}

fn unlink_in(
    c: &crate::p9::Client,
    path: &str,
    d: crate::p9::Fid,
    name: &str,
    flags: u64,
) -> Result<u64, Errno> {
    {
        if flags & AT_REMOVEDIR == 0 {
            // Servers may remove a directory without AT_REMOVEDIR (the
            // gateway does, for peers that rely on it); Linux's VFS refuses
            // unlink(2) of a directory before asking, and so does this.
            let fid = c.walk(d, &[name])?;
            let st = c.getattr(fid);
            c.clunk(fid);
            if st?.mode & 0o170000 == 0o040000 {
                return Err(Errno::EISDIR);
            }
            if super::open::dir_slash(path) {
                // `name/` names a directory, and this is not one.
                return Err(Errno::ENOTDIR);
            }
        }
        c.unlinkat(d, name, (flags & AT_REMOVEDIR) as u32)
            .map(|_| 0)
    }
}

fn path_arg(dirfd: u64, addr: u64) -> Result<alloc::string::String, Errno> {
    super::open::resolve(dirfd, &super::open::user_path(addr)?)
}

const AT_FDCWD: u64 = (-100i64) as u64;

/// `mkdir(path, mode)`.
pub fn mkdir(a: &[u64; 6]) -> Result<u64, Errno> {
    mkdir_at(&path_arg(AT_FDCWD, a[0])?, a[1])
}

/// `mkdirat(dirfd, path, mode)`.
pub fn mkdirat(a: &[u64; 6]) -> Result<u64, Errno> {
    mkdir_at(&path_arg(a[0], a[1])?, a[2])
}

/// `unlink(path)`.
pub fn unlink(a: &[u64; 6]) -> Result<u64, Errno> {
    unlink_at(&path_arg(AT_FDCWD, a[0])?, 0)
}

/// `rmdir(path)`.
pub fn rmdir(a: &[u64; 6]) -> Result<u64, Errno> {
    unlink_at(&path_arg(AT_FDCWD, a[0])?, AT_REMOVEDIR)
}

/// `unlinkat(dirfd, path, flags)`.
pub fn unlinkat(a: &[u64; 6]) -> Result<u64, Errno> {
    unlink_at(&path_arg(a[0], a[1])?, a[2])
}

/// A trailing slash on either name of a rename needs the source to be a
/// directory (checked after both parents, as Linux does).
fn rename_slashes(from: &str, to: &str) -> Result<(), Errno> {
    if !super::open::dir_slash(from) && !super::open::dir_slash(to) {
        return Ok(());
    }
    with_dir(from, |_, _| with_dir(to, |_, _| Ok(())))?;
    let st = super::stat::path_stat_at(from.trim_end_matches('/'), false)?;
    if st.mode & 0o170000 != 0o040000 {
        return Err(Errno::ENOTDIR);
    }
    Ok(())
}

/// The target path of a rename: (absolute, raw), its `..` checked after
/// the source's directory is found (Linux's order).
type Target = (alloc::string::String, alloc::string::String);

fn target_arg(dirfd: u64, addr: u64) -> Result<Target, Errno> {
    super::open::resolve_unchecked(dirfd, &super::open::user_path(addr)?)
}

fn rename_paths(from: &str, target: &Target) -> Result<u64, Errno> {
    let c = crate::p9::mounted().ok_or(Errno::ENOENT)?;
    with_dir(from, |_, _| Ok(()))?;
    let mut to = target.0.clone();
    super::open::fold_dotdot(&mut to, &target.1)?;
    let to = to.as_str();
    let r = rename_slashes(from, to).and_then(|_| {
        with_dir(from, |fd, fname| {
            with_dir(to, |td, tname| c.renameat(fd, fname, td, tname).map(|_| 0))
        })
    });
    renamed_read_only_first(from, to, r)?;
    if crate::vfs::inotify::active() {
        let dir =
            super::stat::path_stat_at(to, false).is_ok_and(|st| st.mode & 0o170000 == 0o040000);
        crate::vfs::inotify::renamed(from, to, dir);
    }
    Ok(0)
}

/// `EROFS` in place of a rename's error when both parents exist and the
/// source's is on a read-only export (Linux's order).
fn renamed_read_only_first<T>(from: &str, to: &str, r: Result<T, Errno>) -> Result<T, Errno> {
    match r {
        Err(e) if e != Errno::EROFS => {
            let ro = with_dir(from, |fd, _| with_dir(to, |_, _| Ok(read_only(fd))));
            if ro == Ok(true) {
                Err(Errno::EROFS)
            } else {
                Err(e)
            }
        }
        r => r,
    }
}

/// `rename(old, new)`.
pub fn rename(a: &[u64; 6]) -> Result<u64, Errno> {
    let from = path_arg(AT_FDCWD, a[0])?;
    rename_paths(&from, &target_arg(AT_FDCWD, a[1])?)
}

/// `renameat(olddirfd, old, newdirfd, new)`.
pub fn renameat(a: &[u64; 6]) -> Result<u64, Errno> {
    let from = path_arg(a[0], a[1])?;
    rename_paths(&from, &target_arg(a[2], a[3])?)
}

/// `renameat2(olddirfd, old, newdirfd, new, flags)`. `RENAME_NOREPLACE`
/// is checked here before the rename (9P has no such flag; a file that
/// appears in between is replaced). `RENAME_EXCHANGE` and
/// `RENAME_WHITEOUT` have no 9P message: `EINVAL`, as Linux answers on a
/// file system without them.
pub fn renameat2(a: &[u64; 6]) -> Result<u64, Errno> {
    const RENAME_NOREPLACE: u64 = 1;
    let from = path_arg(a[0], a[1])?;
    let target = target_arg(a[2], a[3])?;
    match a[4] {
        0 => rename_paths(&from, &target),
        RENAME_NOREPLACE => {
            let c = crate::p9::mounted().ok_or(Errno::ENOENT)?;
            // In Linux's order: both parents, a read-only mount, then the
            // source, then the target's existence.
            with_dir(&from, |_, _| Ok(()))?;
            let mut to = target.0.clone();
            super::open::fold_dotdot(&mut to, &target.1)?;
            let to = to.as_str();
            with_dir(&from, |_, _| with_dir(to, |_, _| Ok(())))?;
            let r = c
                .walk_path_nofollow(from.trim_end_matches('/'))
                .and_then(|old| {
                    c.clunk(old);
                    match c.walk_path_nofollow(to.trim_end_matches('/')) {
                        Ok(fid) => {
                            c.clunk(fid);
                            Err(Errno::EEXIST)
                        }
                        Err(Errno::ENOENT) => Ok(()),
                        Err(e) => Err(e),
                    }
                });
            renamed_read_only_first(&from, to, r)?;
            rename_paths(&from, &target)
        }
        _ => Err(Errno::EINVAL),
    }
}
