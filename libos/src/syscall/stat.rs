//! `fstat(2)`, `newfstatat(2)`, `stat(2)`, `lstat(2)`, `statx(2)`:
//! attributes from `Tgetattr`, or made up for the library OS's own files,
//! in the x86-64 `struct stat` layout.

use astraea_9p::Stat;

use crate::errno::Errno;
use crate::fd::{self, File, Object};
use crate::mm::user;
use crate::vfs::route::Route;

const AT_EMPTY_PATH: u64 = 0x1000;
const AT_SYMLINK_NOFOLLOW: u64 = 0x100;
const S_IFCHR: u32 = 0o020000;
const S_IFIFO: u32 = 0o010000;

fn put(buf: &mut [u8; 144], off: usize, v: u64) {
    buf[off..off + 8].copy_from_slice(&v.to_le_bytes());
}

/// The first mount's device number (`0:57`, "9"): also what a file of no
/// mount (a memory-only file, a pipe) reports.
pub(crate) const FIRST_DEV: u64 = 0x39;

/// The device number of a file at `path`: Linux gives each mount its own,
/// so one per mount point of the namespace (Java finds a file's store in
/// `/proc/mounts` by it), from 0x39 ("9") up.
pub(crate) fn dev_of(path: &str) -> u64 {
    FIRST_DEV + crate::cache::mount_index(path) as u64
}

/// The device of what descriptor `fd` has open (by the path it was opened
/// by; the root's for what has none).
fn fd_dev(fd: u64) -> u64 {
    match fd::object(fd) {
        Ok(Object::File(f)) => match &*f {
            File::P9 { path, .. } => dev_of(path),
            File::Console { .. } => FIRST_DEV,
        },
        Ok(Object::Synthetic(s)) => dev_of(&s.path),
        _ => FIRST_DEV,
    }
}

fn encode(st: &Stat, dev: u64) -> [u8; 144] {
    let mut b = [0u8; 144];
    put(&mut b, 0, dev);
    put(&mut b, 8, st.qid.path);
    put(&mut b, 16, st.nlink);
    b[24..28].copy_from_slice(&st.mode.to_le_bytes());
    b[28..32].copy_from_slice(&st.uid.to_le_bytes());
    b[32..36].copy_from_slice(&st.gid.to_le_bytes());
    put(&mut b, 40, st.rdev);
    put(&mut b, 48, st.size);
    put(&mut b, 56, st.blksize);
    put(&mut b, 64, st.blocks);
    put(&mut b, 72, st.atime_sec);
    put(&mut b, 80, st.atime_nsec);
    put(&mut b, 88, st.mtime_sec);
    put(&mut b, 96, st.mtime_nsec);
    put(&mut b, 104, st.ctime_sec);
    put(&mut b, 112, st.ctime_nsec);
    b
}

/// The console: a terminal like `/dev/pts/0`.
fn console_stat() -> Stat {
    let mut st = crate::vfs::synthetic::base_stat(S_IFCHR | 0o620, 0);
    st.rdev = 0x8800;
    st.qid.path = 1;
    st
}

/// Pipes and eventfds: a FIFO, and an anonymous inode (mode 0) like Linux's.
fn anon_stat(mode: u32, ino: u64) -> Stat {
    let mut st = crate::vfs::synthetic::base_stat(mode, 0);
    st.qid.path = ino;
    st.blksize = 4096;
    st
}

/// The attributes of an open descriptor.
fn object_stat(fd: u64) -> Result<Stat, Errno> {
    Ok(match fd::object(fd)? {
        Object::File(f) => match &*f {
            File::Console { .. } => console_stat(),
            File::P9 { fid, .. } => crate::p9::mounted().ok_or(Errno::EBADF)?.getattr(*fid)?,
        },
        Object::Synthetic(s) => s.stat(),
        Object::Device(d) => d.stat(),
        Object::Like(l) if l.regular().is_some() => {
            let size = l.regular().map_or(0, |m| m.size());
            let mut st = anon_stat(l.mode(), alloc::sync::Arc::as_ptr(&l) as *const u8 as u64);
            st.size = size;
            // No name links to it.
            st.nlink = 0;
            st.blocks = size.div_ceil(512);
            st
        }
        Object::PipeRead(p) => anon_stat(S_IFIFO | 0o600, alloc::sync::Arc::as_ptr(&p) as u64),
        Object::PipeWrite(p) => anon_stat(S_IFIFO | 0o600, alloc::sync::Arc::as_ptr(&p) as u64),
        Object::Epoll(e) => anon_stat(0o600, alloc::sync::Arc::as_ptr(&e) as u64),
        Object::Like(l) => anon_stat(l.mode(), alloc::sync::Arc::as_ptr(&l) as *const u8 as u64),
    })
}

/// The attributes of a path, following a symbolic link in the last
/// position (`stat`).
pub fn path_stat(path: &str) -> Result<Stat, Errno> {
    path_stat_at(path, true)
}

/// The attributes of a path; with `follow` false a symbolic link in the
/// last position is described itself (`lstat`, `AT_SYMLINK_NOFOLLOW`).
pub fn path_stat_at(path: &str, follow: bool) -> Result<Stat, Errno> {
    if super::open::dir_slash(path) {
        // `name/` follows a link and must be a directory.
        let st = path_stat_at(path.trim_end_matches('/'), true)?;
        return if st.mode & 0o170000 == 0o040000 {
            Ok(st)
        } else {
            Err(Errno::ENOTDIR)
        };
    }
    let ns = match super::open::route_path(path) {
        Route::Namespace => alloc::string::String::from(path),
        Route::Exe if !follow => return Ok(crate::vfs::synthetic::stat_link()),
        Route::Fd(n) => {
            let fd = u64::from(n);
            crate::fd::object(fd).map_err(|_| Errno::ENOENT)?;
            return if follow {
                object_stat(fd)
            } else {
                Ok(crate::vfs::synthetic::stat_link())
            };
        }
        Route::Exe => crate::process::EXE.lock().clone(),
        Route::File(_) => return Ok(crate::vfs::synthetic::stat_file()),
        Route::Dir(_) => return Ok(crate::vfs::synthetic::stat_dir()),
        Route::Dev(kind) => return Ok(crate::vfs::dev::stat_of(kind)),
        Route::Missing => return Err(Errno::ENOENT),
        Route::NoDevice => return Err(Errno::ENXIO),
    };
    // The attribute cache keeps both answers apart: a NUL cannot be part of
    // a path, so the no-follow key never names another file.
    let key = if follow {
        ns.clone()
    } else {
        alloc::format!("{ns}\0nofollow")
    };
    if let Some(known) = crate::cache::lookup_attr(&key) {
        return known;
    }
    let c = crate::p9::mounted().ok_or(Errno::ENOENT)?;
    let walked = if follow {
        c.walk_path(&ns)
    } else {
        c.walk_path_nofollow(&ns)
    };
    let st = walked.and_then(|fid| {
        let st = c.getattr(fid);
        c.clunk(fid);
        st
    });
    crate::cache::remember_attr(&key, &st);
    st
}

/// `fstat(fd, statbuf)`.
pub fn fstat(a: &[u64; 6]) -> Result<u64, Errno> {
    user::copy_in(a[1], &encode(&object_stat(a[0])?, fd_dev(a[0])))?;
    Ok(0)
}

/// `stat(path, statbuf)`.
pub fn stat(a: &[u64; 6]) -> Result<u64, Errno> {
    let p = super::open::abs(&super::open::user_path(a[0])?)?;
    let st = path_stat(&p)?;
    user::copy_in(a[1], &encode(&st, dev_of(&p)))?;
    Ok(0)
}

/// `lstat(path, statbuf)`: a symbolic link is described, not followed.
pub fn lstat(a: &[u64; 6]) -> Result<u64, Errno> {
    let p = super::open::abs(&super::open::user_path(a[0])?)?;
    let st = path_stat_at(&p, false)?;
    user::copy_in(a[1], &encode(&st, dev_of(&p)))?;
    Ok(0)
}

/// `newfstatat(dirfd, path, statbuf, flags)`.
pub fn newfstatat(a: &[u64; 6]) -> Result<u64, Errno> {
    let p = super::open::user_path(a[1])?;
    let (st, dev) = if p.is_empty() && a[3] & AT_EMPTY_PATH != 0 {
        (object_stat(a[0])?, fd_dev(a[0]))
    } else {
        let p = super::open::resolve(a[0], &p)?;
        (
            path_stat_at(&p, a[3] & AT_SYMLINK_NOFOLLOW == 0)?,
            dev_of(&p),
        )
    };
    user::copy_in(a[2], &encode(&st, dev))?;
    Ok(0)
}

/// `statx`'s `AT_STATX_SYNC_TYPE` (both bits: `EINVAL`).
const AT_STATX_SYNC_TYPE: u64 = 0x6000;
/// `AT_NO_AUTOMOUNT` (accepted; nothing is automounted).
const AT_NO_AUTOMOUNT: u64 = 0x800;
/// `STATX__RESERVED`: a mask with it is `EINVAL`.
const STATX_RESERVED: u32 = 0x8000_0000;
/// `STATX_BASIC_STATS`, `STATX_BTIME`.
const STATX_BASIC_STATS: u32 = 0x7ff;
const STATX_BTIME: u32 = 0x800;

/// `statx(dirfd, path, flags, mask, statxbuf)`: the basic fields, and the
/// birth time when asked for and the file's server keeps one.
pub fn statx(a: &[u64; 6]) -> Result<u64, Errno> {
    let (flags, mask) = (a[2] as u32 as u64, a[3] as u32);
    // Linux's order (`do_statx`, then `vfs_statx`), all before the path.
    if mask & STATX_RESERVED != 0 || flags & AT_STATX_SYNC_TYPE == AT_STATX_SYNC_TYPE {
        return Err(Errno::EINVAL);
    }
    if flags & !(AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | AT_EMPTY_PATH | AT_STATX_SYNC_TYPE) != 0 {
        return Err(Errno::EINVAL);
    }
    let p = super::open::user_path(a[1])?;
    let (st, dev) = if p.is_empty() && a[2] & AT_EMPTY_PATH != 0 {
        (object_stat(a[0])?, fd_dev(a[0]))
    } else {
        let p = super::open::resolve(a[0], &p)?;
        (
            path_stat_at(&p, a[2] & AT_SYMLINK_NOFOLLOW == 0)?,
            dev_of(&p),
        )
    };
    let mut b = [0u8; 256];
    let put32 =
        |b: &mut [u8; 256], off: usize, v: u32| b[off..off + 4].copy_from_slice(&v.to_le_bytes());
    let put64 =
        |b: &mut [u8; 256], off: usize, v: u64| b[off..off + 8].copy_from_slice(&v.to_le_bytes());
    // ext4's answer: the birth time only when asked for.
    let btime = mask & STATX_BTIME != 0 && st.valid & astraea_9p::P9_GETATTR_BTIME != 0;
    put32(
        &mut b,
        0,
        STATX_BASIC_STATS | if btime { STATX_BTIME } else { 0 },
    );
    put32(&mut b, 4, st.blksize as u32);
    put32(&mut b, 16, st.nlink as u32);
    put32(&mut b, 20, st.uid);
    put32(&mut b, 24, st.gid);
    b[28..30].copy_from_slice(&(st.mode as u16).to_le_bytes());
    put64(&mut b, 32, st.qid.path);
    put64(&mut b, 40, st.size);
    put64(&mut b, 48, st.blocks);
    for (off, sec, nsec) in [
        (64, st.atime_sec, st.atime_nsec),
        (
            80,
            if btime { st.btime_sec } else { 0 },
            if btime { st.btime_nsec } else { 0 },
        ),
        (96, st.ctime_sec, st.ctime_nsec),
        (112, st.mtime_sec, st.mtime_nsec),
    ] {
        put64(&mut b, off, sec);
        put32(&mut b, off + 8, nsec as u32);
    }
    put32(&mut b, 128, (st.rdev >> 8) as u32 & 0xfff);
    put32(&mut b, 132, st.rdev as u32 & 0xff);
    // stx_dev_major, stx_dev_minor: what `stat`'s st_dev says.
    put32(&mut b, 136, (dev >> 8) as u32 & 0xfff);
    put32(&mut b, 140, dev as u32 & 0xff);
    user::copy_in(a[4], &b)?;
    Ok(0)
}
