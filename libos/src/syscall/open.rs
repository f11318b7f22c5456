//! `open(2)`, `openat(2)`, `close(2)`, `close_range(2)`: files of the 9P
//! namespace, and the ones the library OS serves itself (`/proc`, `/sys`,
//! `/dev` nodes; see `vfs::route`).

use alloc::string::String;
use alloc::sync::Arc;
use core::sync::atomic::AtomicU32;

use crate::errno::Errno;
use crate::fd::{self, File, O_ACCMODE, O_APPEND, O_CLOEXEC, O_NONBLOCK, Object};
use crate::mm::user;
use crate::vfs::route::{Route, route};
use crate::vfs::synthetic::Synthetic;

const AT_FDCWD: i64 = -100;
const O_CREAT: u32 = 0o100;
const O_EXCL: u32 = 0o200;
const O_TRUNC: u32 = 0o1000;
const O_DIRECTORY: u32 = 0o200000;
const O_NOFOLLOW: u32 = 0o400000;
/// `__O_TMPFILE | O_DIRECTORY`.
const O_TMPFILE: u32 = 0o20200000;
const S_IFMT: u32 = 0o170000;
const S_IFLNK: u32 = 0o120000;

/// Reads a NUL-terminated path from user memory (at most 4096 bytes).
pub fn user_path(addr: u64) -> Result<String, Errno> {
    match user::read_cstr(addr, 4096)? {
        (path, true) => String::from_utf8(path).map_err(|_| Errno::EINVAL),
        (_, false) => Err(Errno::ENAMETOOLONG),
    }
}

/// Resolves a path relative to a directory descriptor into an absolute
/// one without `.` and `..`. A trailing slash is kept: it says the path
/// must name a directory (see [`dir_slash`]). Each `..` is checked as Linux
/// walks it: what precedes it must be a directory.
pub fn resolve(dirfd: u64, path: &str) -> Result<String, Errno> {
    let (mut abs, raw) = resolve_unchecked(dirfd, path)?;
    fold_dotdot(&mut abs, &raw)?;
    Ok(abs)
}

/// [`resolve`] without the `..` walk, which the caller makes later with
/// [`fold_dotdot`] (the second path of `link` and `rename` is looked up
/// after the first). Returns the absolute path and the raw one.
pub fn resolve_unchecked(dirfd: u64, path: &str) -> Result<(String, String), Errno> {
    if path.is_empty() {
        return Err(Errno::ENOENT);
    }
    // dirfd is a C int: only its low 32 bits count.
    let raw = if path.starts_with('/') {
        String::from(path)
    } else if i64::from(dirfd as i32) != AT_FDCWD {
        let base = match fd::object(dirfd)? {
            Object::File(f) => match &*f {
                File::P9 { path: base, .. } => base.clone(),
                File::Console { .. } => return Err(Errno::ENOTDIR),
            },
            Object::Synthetic(s) => s.path.clone(),
            _ => return Err(Errno::ENOTDIR),
        };
        alloc::format!("{base}/{path}")
    } else {
        alloc::format!("{}/{path}", fd::absolute("."))
    };
    let mut abs = fd::absolute(&raw);
    if path.ends_with('/') && abs != "/" {
        abs.push('/');
    }
    Ok((abs, raw))
}

/// The `..` walk of [`resolve`] (see `p9::Client::fold_dotdot`), for
/// paths of the 9P namespace: `abs` was folded as text, which is right
/// only where no link precedes a `..`; it becomes what Linux's walk
/// reaches.
pub fn fold_dotdot(abs: &mut String, raw: &str) -> Result<(), Errno> {
    if !raw.split('/').any(|c| c == "..") || !matches!(route_path(abs), Route::Namespace) {
        return Ok(());
    }
    let slash = dir_slash(abs);
    let mut folded = crate::p9::mounted()
        .ok_or(Errno::ENOENT)?
        .fold_dotdot(raw)?;
    if slash && folded != "/" {
        folded.push('/');
    }
    *abs = folded;
    Ok(())
}

/// [`resolve`] against the working directory.
pub fn abs(path: &str) -> Result<String, Errno> {
    resolve(AT_FDCWD as u64, path)
}

/// Whether a resolved path ends in a slash: it must name a directory
/// (a link in the last position is then followed, even by `lstat`).
pub fn dir_slash(path: &str) -> bool {
    path.len() > 1 && path.ends_with('/')
}

/// Where `path` is served: the library OS's own files, or 9P (with
/// `/proc/self/exe` turned into the program's path).
pub fn route_path(path: &str) -> Route {
    if let Some(p) = crate::vfs::route::thread_self(path, crate::sched::current().id()) {
        return route_path(&p);
    }
    let r = route(path, crate::vfs::pid(), crate::vfs::cpus());
    match r.thread() {
        Some(tid) if crate::process::thread(tid).is_none() => Route::Missing,
        _ => r,
    }
}

/// Flag combinations refused before the path is read (Linux's
/// `build_open_flags`).
fn check_flags(flags: u32) -> Result<(), Errno> {
    if flags & O_TMPFILE & !O_DIRECTORY != 0 {
        // O_TMPFILE whole, without O_CREAT, and open for writing.
        if flags & (O_TMPFILE | O_CREAT) != O_TMPFILE || flags & O_ACCMODE == 0 {
            return Err(Errno::EINVAL);
        }
    } else if flags & (O_CREAT | O_DIRECTORY) == O_CREAT | O_DIRECTORY {
        // Linux (since 6.4) refuses the combination outright.
        return Err(Errno::EINVAL);
    }
    Ok(())
}

fn open_path(path: String, flags: u32, mode: u32) -> Result<u64, Errno> {
    let cloexec = flags & O_CLOEXEC != 0;
    let status = flags & (O_ACCMODE | O_APPEND | O_NONBLOCK);
    let object = match route_path(&path) {
        Route::Namespace => return open_namespace(path, flags, mode),
        Route::Exe => {
            let exe = crate::process::EXE.lock().clone();
            return open_namespace(exe, flags, mode);
        }
        // What descriptor N has open: a file is opened again by its path (a
        // new open file description, as Linux's), a memory-only file as a
        // new description of the same file, a socket cannot be (`ENXIO`),
        // anything else shares N's description.
        Route::Fd(n) => {
            let o = fd::object(u64::from(n)).map_err(|_| Errno::ENOENT)?;
            match &o {
                Object::File(f) => {
                    if let fd::File::P9 { path, .. } = &**f {
                        return open_namespace(path.clone(), flags, mode);
                    }
                }
                Object::Synthetic(s) => return open_path(s.path.clone(), flags, mode),
                Object::Like(l) if l.mode() & 0o170_000 == 0o140_000 => {
                    return Err(Errno::ENXIO);
                }
                Object::Like(l) => {
                    if let Some(m) = l.as_any().downcast_ref::<crate::vfs::memfd::MemFd>() {
                        if flags & O_CREAT != 0 && flags & O_EXCL != 0 {
                            return Err(Errno::EEXIST);
                        }
                        if flags & O_DIRECTORY != 0 {
                            return Err(Errno::ENOTDIR);
                        }
                        let again = m.reopen(status);
                        if flags & O_TRUNC != 0 {
                            use crate::fd::RegularLike as _;
                            again.set_size(0)?;
                        }
                        return fd::install_object(Object::Like(Arc::new(again)), cloexec);
                    }
                }
                _ => {}
            }
            o
        }
        Route::Missing => {
            return Err(if flags & O_CREAT != 0 {
                Errno::EACCES
            } else {
                Errno::ENOENT
            });
        }
        Route::NoDevice => return Err(Errno::ENXIO),
        Route::File(f) => {
            if flags & O_DIRECTORY != 0 {
                return Err(Errno::ENOTDIR);
            }
            if flags & O_ACCMODE != 0 {
                return Err(Errno::EACCES);
            }
            Object::Synthetic(Arc::new(Synthetic::file(path, f, status)))
        }
        Route::Dir(d) => {
            if flags & O_ACCMODE != 0 {
                return Err(Errno::EISDIR);
            }
            Object::Synthetic(Arc::new(Synthetic::dir(path, d, status)))
        }
        Route::Dev(kind) => {
            if flags & O_DIRECTORY != 0 {
                return Err(Errno::ENOTDIR);
            }
            Object::Device(Arc::new(crate::vfs::dev::Device::new(kind, status)))
        }
    };
    fd::install_object(object, cloexec)
}

/// Opens (or creates) a file of the namespace. With `O_CREAT` a name that
/// another process (the host, another partition) makes or removes between
/// the lookup and the open or create (`EEXIST` without `O_EXCL`, or
/// `ENOENT`: the gateway opens by name) starts the open over, so it opens
/// or creates what is there then, as Linux's `open` does under its locks.
fn open_namespace(path: String, flags: u32, mode: u32) -> Result<u64, Errno> {
    const TRIES: u32 = 16;
    let mut tries = 0;
    loop {
        match open_namespace_once(path.clone(), flags, mode) {
            Err(Errno::EEXIST | Errno::ENOENT)
                if flags & O_CREAT != 0 && flags & O_EXCL == 0 && tries < TRIES =>
            {
                tries += 1;
            }
            r => return r,
        }
    }
}

fn open_namespace_once(path: String, flags: u32, mode: u32) -> Result<u64, Errno> {
    let c = crate::p9::mounted().ok_or(Errno::ENOENT)?;
    let lflags = flags & !(O_CLOEXEC);
    let mut cache = None;
    let mut dir = false;
    let ino;
    let mut created = false;
    let mut truncated = false;
    // O_CREAT | O_EXCL never follows a link in the last position: an
    // existing name (even a dangling link) is EEXIST. O_NOFOLLOW opens the
    // link itself, which the open then refuses with ELOOP.
    if flags & O_TMPFILE == O_TMPFILE {
        // The directory is looked up as Linux's do_tmpfile does; then no
        // 9P message makes an unnamed file, and this is what Linux answers
        // on a file system without them (libcs then make a named one).
        let fid = c.walk_path(&path)?;
        let r = match c.getattr(fid).map(|st| st.mode & S_IFMT) {
            Ok(0o040000) if super::dirs::read_only(fid) => Err(Errno::EROFS),
            Ok(0o040000) => Err(Errno::EOPNOTSUPP),
            Ok(_) => Err(Errno::ENOTDIR),
            Err(e) => Err(e),
        };
        c.clunk(fid);
        return r;
    }
    let slash = dir_slash(&path);
    if slash && flags & O_CREAT != 0 {
        // Only a directory can be named with a slash, and open makes none.
        return Err(Errno::EISDIR);
    }
    let excl = flags & (O_CREAT | O_EXCL) == O_CREAT | O_EXCL;
    let nofollow = !slash && (excl || flags & O_NOFOLLOW != 0);
    if flags & O_CREAT == 0
        && !nofollow
        && let Some(Err(e)) = crate::cache::lookup_attr(&path)
    {
        return Err(e);
    }
    let walked = if nofollow {
        c.walk_path_nofollow(&path)
    } else {
        c.walk_path(&path)
    };
    let fid = match walked {
        Ok(fid) => {
            let refused = if excl {
                Some(Errno::EEXIST)
            } else if flags & O_NOFOLLOW != 0 {
                match c.getattr(fid) {
                    Ok(st) if st.mode & S_IFMT == S_IFLNK => Some(Errno::ELOOP),
                    Ok(_) => None,
                    Err(e) => Some(e),
                }
            } else {
                None
            };
            if let Some(e) = refused {
                c.clunk(fid);
                return Err(e);
            }
            if slash {
                match c.getattr(fid) {
                    Ok(st) if st.mode & S_IFMT == 0o040000 => {}
                    Ok(_) => {
                        c.clunk(fid);
                        return Err(Errno::ENOTDIR);
                    }
                    Err(e) => {
                        c.clunk(fid);
                        return Err(e);
                    }
                }
            }
            match c.open(fid, lflags & !O_CREAT & !O_NOFOLLOW) {
                // O_CREAT of an existing directory: Linux refuses it even
                // for reading.
                Ok(qid) if flags & O_CREAT != 0 && qid.ty & astraea_9p::QTDIR != 0 => {
                    c.clunk(fid);
                    return Err(Errno::EISDIR);
                }
                // A regular file opened for reading under a cacheable mount
                // goes through the file cache, keyed by its inode.
                Ok(qid) if flags & O_ACCMODE == 0 && qid.ty == 0 => {
                    ino = qid.path;
                    if flags & O_TRUNC != 0 {
                        // Read-only and O_TRUNC: Linux cuts the file all
                        // the same, and so go its pages.
                        crate::mm::vma::file_truncated(ino, 0);
                        truncated = true;
                    }
                    cache = crate::cache::for_path(&path).map(|_| qid.path);
                    if let Some(key) = cache {
                        crate::cache::note_path(key, &path);
                    }
                }
                Ok(qid) => {
                    ino = qid.path;
                    dir = qid.ty & astraea_9p::QTDIR != 0;
                    if flags & O_TRUNC != 0 && !dir {
                        // The open cut the file: so do its pages.
                        crate::mm::vma::file_truncated(ino, 0);
                        truncated = true;
                    }
                }
                Err(e) => {
                    c.clunk(fid);
                    return Err(e);
                }
            }
            fid
        }
        Err(Errno::ENOENT) if flags & O_CREAT != 0 => {
            let (dir, name) = path.rsplit_once('/').ok_or(Errno::EINVAL)?;
            let dfid = c.walk_path_dir(if dir.is_empty() { "/" } else { dir })?;
            let mode = mode & 0o7777 & !crate::vfs::identity::umask();
            match c.create(dfid, name, lflags & !O_CREAT & !O_DIRECTORY, mode) {
                Ok(qid) => {
                    ino = qid.path;
                    created = true;
                }
                Err(e) => {
                    c.clunk(dfid);
                    return Err(e);
                }
            }
            dfid
        }
        Err(e) => {
            if !nofollow {
                crate::cache::remember_attr(&path, &Err(e));
            }
            return Err(e);
        }
    };
    if created {
        crate::vfs::inotify::notify(&path, crate::vfs::inotify::IN_CREATE);
    }
    crate::vfs::inotify::notify(
        &path,
        crate::vfs::inotify::IN_OPEN
            | if dir {
                crate::vfs::inotify::IN_ISDIR
            } else {
                0
            },
    );
    if truncated {
        // Linux reports the open, then the truncation it made.
        crate::vfs::inotify::notify(&path, crate::vfs::inotify::IN_MODIFY);
    }
    fd::install_object(
        Object::File(Arc::new(File::P9 {
            fid,
            offset: crate::sync::IrqLock::new(0),
            path,
            flags: AtomicU32::new(flags & (O_ACCMODE | O_APPEND | O_NONBLOCK)),
            cache,
            ino,
            dir,
        })),
        flags & O_CLOEXEC != 0,
    )
}

/// `open(path, flags, mode)`.
pub fn open(a: &[u64; 6]) -> Result<u64, Errno> {
    check_flags(a[1] as u32)?;
    let p = user_path(a[0])?;
    open_path(abs(&p)?, a[1] as u32, a[2] as u32)
}

/// `openat(dirfd, path, flags, mode)`.
pub fn openat(a: &[u64; 6]) -> Result<u64, Errno> {
    check_flags(a[2] as u32)?;
    let p = user_path(a[1])?;
    open_path(resolve(a[0], &p)?, a[2] as u32, a[3] as u32)
}

/// `creat(path, mode)`.
pub fn creat(a: &[u64; 6]) -> Result<u64, Errno> {
    let p = user_path(a[0])?;
    // O_CREAT | O_WRONLY | O_TRUNC
    open_path(abs(&p)?, 0o1101, a[1] as u32)
}

/// `close(fd)`.
pub fn close(a: &[u64; 6]) -> Result<u64, Errno> {
    fd::close(a[0])?;
    Ok(0)
}

/// `close_range(first, last, flags)`: closes (or, with
/// `CLOSE_RANGE_CLOEXEC`, marks close-on-exec) every open descriptor in
/// the range.
pub fn close_range(a: &[u64; 6]) -> Result<u64, Errno> {
    const CLOSE_RANGE_UNSHARE: u64 = 2;
    const CLOSE_RANGE_CLOEXEC: u64 = 4;
    let (first, last) = (a[0] as u32 as u64, a[1] as u32 as u64);
    if first > last || a[2] & !(CLOSE_RANGE_UNSHARE | CLOSE_RANGE_CLOEXEC) != 0 {
        return Err(Errno::EINVAL);
    }
    // Nothing is open past the table's end.
    let top = last.min(fd::TABLE.lock().len() as u64);
    for n in first..=top {
        let _ = if a[2] & CLOSE_RANGE_CLOEXEC != 0 {
            fd::set_cloexec(n, true)
        } else {
            fd::close(n)
        };
    }
    Ok(0)
}
