//! Thin wrappers around the Linux system calls the gateway needs.
//!
//! Every `unsafe` block of the crate lives in this module. The wrappers take
//! borrowed file descriptors and `CStr` paths, so the invariants each block
//! relies on are the same few: the descriptor is open for the duration of
//! the call (guaranteed by `BorrowedFd`'s lifetime), every path pointer is a
//! NUL-terminated string that outlives the call (guaranteed by `&CStr`), and
//! every out-pointer refers to a live, writable, correctly sized value owned
//! by the wrapper.
//!
//! Path resolution that could leave an export always goes through
//! [`openat2`] with `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS`; the other
//! `*at` calls are only ever given a directory descriptor obtained that way
//! and a single path component (no `/`) whose final symlink they do not
//! follow.

use std::ffi::CStr;
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use crate::error::Errno;

/// `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS`: the resolution rules of every
/// lookup inside an export.
const RESOLVE_CONFINED: u64 = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_MAGICLINKS;

/// `struct open_how` of `linux/openat2.h` (libc's is `non_exhaustive`).
#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

fn last_errno() -> Errno {
    Errno::from(io::Error::last_os_error())
}

/// Turns a `-1`-on-error return value into a `Result`, retrying on `EINTR`.
fn retry<T: PartialEq + From<i8>>(mut f: impl FnMut() -> T) -> Result<T, Errno> {
    loop {
        let r = f();
        if r != T::from(-1) {
            return Ok(r);
        }
        let e = last_errno();
        if e.0 != libc::EINTR {
            return Err(e);
        }
    }
}

/// `openat2(dir, path, flags | O_CLOEXEC, mode)` confined beneath `dir`:
/// `..` may not climb above `dir`, absolute symlinks and symlinks that
/// leave `dir` fail with `EXDEV`, `/proc` magic links fail with `ELOOP`.
pub(crate) fn openat2(
    dir: BorrowedFd<'_>,
    path: &CStr,
    flags: i32,
    mode: u32,
) -> Result<OwnedFd, Errno> {
    let how = OpenHow {
        flags: u64::from((flags | libc::O_CLOEXEC).cast_unsigned()),
        mode: if flags & (libc::O_CREAT | libc::O_TMPFILE) != 0 {
            u64::from(mode & 0o7777)
        } else {
            0
        },
        resolve: RESOLVE_CONFINED,
    };
    // The kernel answers EAGAIN when a concurrent rename raced with a
    // RESOLVE_BENEATH lookup; retry a few times before giving up.
    for _ in 0..8 {
        // SAFETY: `dir` is an open descriptor for the duration of the call,
        // `path` is NUL-terminated and outlives it, and `how` points to a
        // live `struct open_how` whose exact size is passed alongside.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_openat2,
                dir.as_raw_fd(),
                path.as_ptr(),
                &raw const how,
                size_of::<OpenHow>(),
            )
        };
        if fd >= 0 {
            let fd = i32::try_from(fd).map_err(|_| Errno(libc::EBADF))?;
            // SAFETY: the kernel just returned `fd` as a new descriptor that
            // nothing else owns.
            return Ok(unsafe { OwnedFd::from_raw_fd(fd) });
        }
        let e = last_errno();
        if e.0 != libc::EAGAIN && e.0 != libc::EINTR {
            return Err(e);
        }
    }
    Err(Errno(libc::EAGAIN))
}

/// `open(path, O_PATH | O_DIRECTORY | O_CLOEXEC)`: the root of an export.
pub(crate) fn open_dir_path(path: &CStr) -> Result<OwnedFd, Errno> {
    // SAFETY: `path` is NUL-terminated and outlives the call.
    let fd = retry(|| unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    })?;
    // SAFETY: `open` returned a fresh descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `fstat(fd)`; works on `O_PATH` descriptors, including symlinks opened
/// with `O_PATH | O_NOFOLLOW`.
pub(crate) fn fstat(fd: BorrowedFd<'_>) -> Result<libc::stat, Errno> {
    let mut st = MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `fd` is open for the call and `st` is a writable `struct stat`.
    retry(|| unsafe { libc::fstat(fd.as_raw_fd(), st.as_mut_ptr()) })?;
    // SAFETY: `fstat` succeeded, so it initialised the whole structure.
    Ok(unsafe { st.assume_init() })
}

/// The birth time of the file `fd` names (`O_PATH` will do), when its
/// file system keeps one: `statx(fd, "", AT_EMPTY_PATH, STATX_BTIME)`.
pub(crate) fn btime(fd: BorrowedFd<'_>) -> Option<(u64, u64)> {
    let mut sx = MaybeUninit::<libc::statx>::zeroed();
    // SAFETY: `fd` is open for the call, the path is an empty NUL-terminated
    // string, and `sx` is a writable `struct statx`.
    retry(|| unsafe {
        libc::statx(
            fd.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH | libc::AT_SYMLINK_NOFOLLOW,
            libc::STATX_BTIME,
            sx.as_mut_ptr(),
        )
    })
    .ok()?;
    // SAFETY: zeroed, then filled by a successful `statx`.
    let sx = unsafe { sx.assume_init() };
    (sx.stx_mask & libc::STATX_BTIME != 0).then(|| {
        (
            sx.stx_btime.tv_sec.cast_unsigned(),
            u64::from(sx.stx_btime.tv_nsec),
        )
    })
}

/// `fstatat(dir, name, AT_SYMLINK_NOFOLLOW)`.
pub(crate) fn fstatat_nofollow(dir: BorrowedFd<'_>, name: &CStr) -> Result<libc::stat, Errno> {
    let mut st = MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `dir` is open, `name` is NUL-terminated, `st` is writable.
    retry(|| unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            name.as_ptr(),
            st.as_mut_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
        )
    })?;
    // SAFETY: `fstatat` succeeded, so it initialised the whole structure.
    Ok(unsafe { st.assume_init() })
}

/// `fstatfs(fd)`; works on `O_PATH` descriptors.
pub(crate) fn fstatfs(fd: BorrowedFd<'_>) -> Result<libc::statfs, Errno> {
    let mut st = MaybeUninit::<libc::statfs>::uninit();
    // SAFETY: `fd` is open for the call and `st` is a writable `struct statfs`.
    retry(|| unsafe { libc::fstatfs(fd.as_raw_fd(), st.as_mut_ptr()) })?;
    // SAFETY: `fstatfs` succeeded, so it initialised the whole structure.
    Ok(unsafe { st.assume_init() })
}

/// Positions a directory stream at `cookie` (a `d_off` value, or 0) and
/// reads `linux_dirent64` records into `buf`; returns the bytes filled.
pub(crate) fn getdents_at(fd: BorrowedFd<'_>, cookie: i64, buf: &mut [u8]) -> Result<usize, Errno> {
    // SAFETY: `fd` is open for the call; lseek has no memory arguments.
    retry(|| unsafe { libc::lseek(fd.as_raw_fd(), cookie, libc::SEEK_SET) })?;
    // SAFETY: `fd` is open and `buf` is a writable region of exactly
    // `buf.len()` bytes that the kernel fills with whole records.
    let n = retry(|| unsafe {
        libc::syscall(
            libc::SYS_getdents64,
            fd.as_raw_fd(),
            buf.as_mut_ptr(),
            buf.len(),
        )
    })?;
    usize::try_from(n).map_err(|_| Errno(libc::EIO))
}

/// `mkdirat(dir, name, mode)`.
pub(crate) fn mkdirat(dir: BorrowedFd<'_>, name: &CStr, mode: u32) -> Result<(), Errno> {
    // SAFETY: `dir` is open and `name` is NUL-terminated for the call.
    retry(|| unsafe { libc::mkdirat(dir.as_raw_fd(), name.as_ptr(), mode & 0o7777) }).map(drop)
}

/// `mknodat(dir, name, mode, 0)` (regular files, FIFOs and sockets only; the caller checks).
pub(crate) fn mknodat(dir: BorrowedFd<'_>, name: &CStr, mode: u32) -> Result<(), Errno> {
    // SAFETY: `dir` is open and `name` is NUL-terminated for the call.
    retry(|| unsafe { libc::mknodat(dir.as_raw_fd(), name.as_ptr(), mode, 0) }).map(drop)
}

/// `symlinkat(target, dir, name)`.
pub(crate) fn symlinkat(target: &CStr, dir: BorrowedFd<'_>, name: &CStr) -> Result<(), Errno> {
    // SAFETY: `dir` is open; `target` and `name` are NUL-terminated.
    retry(|| unsafe { libc::symlinkat(target.as_ptr(), dir.as_raw_fd(), name.as_ptr()) }).map(drop)
}

/// `linkat(olddir, oldname, newdir, newname, 0)`: never follows `oldname`.
pub(crate) fn linkat(
    olddir: BorrowedFd<'_>,
    oldname: &CStr,
    newdir: BorrowedFd<'_>,
    newname: &CStr,
) -> Result<(), Errno> {
    // SAFETY: both descriptors are open; both names are NUL-terminated.
    retry(|| unsafe {
        libc::linkat(
            olddir.as_raw_fd(),
            oldname.as_ptr(),
            newdir.as_raw_fd(),
            newname.as_ptr(),
            0,
        )
    })
    .map(drop)
}

/// `renameat(olddir, oldname, newdir, newname)`.
pub(crate) fn renameat(
    olddir: BorrowedFd<'_>,
    oldname: &CStr,
    newdir: BorrowedFd<'_>,
    newname: &CStr,
) -> Result<(), Errno> {
    // SAFETY: both descriptors are open; both names are NUL-terminated.
    retry(|| unsafe {
        libc::renameat(
            olddir.as_raw_fd(),
            oldname.as_ptr(),
            newdir.as_raw_fd(),
            newname.as_ptr(),
        )
    })
    .map(drop)
}

/// `unlinkat(dir, name, flags)` (`flags` is 0 or `AT_REMOVEDIR`).
pub(crate) fn unlinkat(dir: BorrowedFd<'_>, name: &CStr, flags: i32) -> Result<(), Errno> {
    // SAFETY: `dir` is open and `name` is NUL-terminated for the call.
    retry(|| unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), flags) }).map(drop)
}

/// `readlinkat(fd, "")`: the target of a symlink opened with `O_PATH | O_NOFOLLOW`.
pub(crate) fn readlink_fd(fd: BorrowedFd<'_>) -> Result<Vec<u8>, Errno> {
    let mut buf = vec![0u8; libc::PATH_MAX as usize + 1];
    // SAFETY: `fd` is open, the empty path is a NUL-terminated literal, and
    // `buf` is writable for `buf.len()` bytes.
    let n = retry(|| unsafe {
        libc::readlinkat(
            fd.as_raw_fd(),
            c"".as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    })?;
    let n = usize::try_from(n).map_err(|_| Errno(libc::EIO))?;
    if n >= buf.len() {
        return Err(Errno(libc::ENAMETOOLONG));
    }
    buf.truncate(n);
    Ok(buf)
}

/// `fchownat(dir, name, uid, gid, AT_SYMLINK_NOFOLLOW)`; `None` leaves an id unchanged.
pub(crate) fn fchownat_nofollow(
    dir: BorrowedFd<'_>,
    name: &CStr,
    uid: Option<u32>,
    gid: Option<u32>,
) -> Result<(), Errno> {
    let uid = uid.unwrap_or(u32::MAX);
    let gid = gid.unwrap_or(u32::MAX);
    // SAFETY: `dir` is open and `name` is NUL-terminated for the call.
    retry(|| unsafe {
        libc::fchownat(
            dir.as_raw_fd(),
            name.as_ptr(),
            uid,
            gid,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    })
    .map(drop)
}

/// A timestamp for [`utimensat_nofollow`].
#[derive(Debug, Clone, Copy)]
pub(crate) enum TimeSpec {
    /// Leave unchanged.
    Omit,
    /// The current time.
    Now,
    /// An explicit time.
    At { sec: i64, nsec: i64 },
}

impl TimeSpec {
    fn raw(self) -> libc::timespec {
        let (tv_sec, tv_nsec) = match self {
            TimeSpec::Omit => (0, libc::UTIME_OMIT),
            TimeSpec::Now => (0, libc::UTIME_NOW),
            TimeSpec::At { sec, nsec } => (sec, nsec),
        };
        libc::timespec { tv_sec, tv_nsec }
    }
}

/// `utimensat(dir, name, [atime, mtime], AT_SYMLINK_NOFOLLOW)`.
pub(crate) fn utimensat_nofollow(
    dir: BorrowedFd<'_>,
    name: &CStr,
    atime: TimeSpec,
    mtime: TimeSpec,
) -> Result<(), Errno> {
    let times = [atime.raw(), mtime.raw()];
    // SAFETY: `dir` is open, `name` is NUL-terminated, `times` is an array
    // of exactly two `timespec`s that outlives the call.
    retry(|| unsafe {
        libc::utimensat(
            dir.as_raw_fd(),
            name.as_ptr(),
            times.as_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
        )
    })
    .map(drop)
}

/// `futimens`: the times of an open file.
pub(crate) fn futimens(fd: BorrowedFd<'_>, atime: TimeSpec, mtime: TimeSpec) -> Result<(), Errno> {
    let times = [atime.raw(), mtime.raw()];
    // SAFETY: `fd` is open for the call; `times` is an array of exactly two
    // `timespec`s that outlives it.
    retry(|| unsafe { libc::futimens(fd.as_raw_fd(), times.as_ptr()) }).map(drop)
}

/// Changes the mode of the inode an `O_PATH` descriptor refers to.
///
/// `fchmod` refuses `O_PATH` descriptors and `fchmodat` follows symlinks, so
/// this goes through the descriptor's `/proc/self/fd` entry, which names
/// exactly that inode. The caller must have checked that it is not a symlink.
pub(crate) fn chmod_fd(fd: BorrowedFd<'_>, mode: u32) -> Result<(), Errno> {
    let path = std::ffi::CString::new(format!("/proc/self/fd/{}", fd.as_raw_fd()))
        .map_err(|_| Errno(libc::EINVAL))?;
    // SAFETY: `path` is NUL-terminated and outlives the call; `fd` stays
    // open (borrowed) so the magic link names the intended inode.
    retry(|| unsafe { libc::chmod(path.as_ptr(), mode & 0o7777) }).map(drop)
}

/// The result of [`ofd_getlk`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LockInfo {
    /// `F_RDLCK`, `F_WRLCK` or `F_UNLCK`.
    pub ty: i16,
    pub start: i64,
    pub len: i64,
    pub pid: i32,
}

fn flock(ty: i16, start: i64, len: i64) -> libc::flock {
    libc::flock {
        l_type: ty,
        l_whence: libc::SEEK_SET as i16,
        l_start: start,
        l_len: len,
        // Must be 0 for open-file-description locks.
        l_pid: 0,
    }
}

/// Clears `O_NONBLOCK` on an open file description (`F_GETFL`/`F_SETFL`).
pub(crate) fn clear_nonblock(fd: BorrowedFd<'_>) -> Result<(), Errno> {
    // SAFETY: `fd` is open; F_GETFL takes no argument.
    let fl = retry(|| unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) })?;
    // SAFETY: `fd` is open; F_SETFL takes the new status flags.
    retry(|| unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, fl & !libc::O_NONBLOCK) })
        .map(drop)
}

/// `fcntl(fd, F_OFD_SETLK, ...)`: a non-blocking POSIX advisory lock owned
/// by the open file description (so each fid's open file is its own owner).
pub(crate) fn ofd_setlk(fd: BorrowedFd<'_>, ty: i16, start: i64, len: i64) -> Result<(), Errno> {
    let fl = flock(ty, start, len);
    // SAFETY: `fd` is open and `fl` is a live `struct flock` for the call.
    retry(|| unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_OFD_SETLK, &raw const fl) }).map(drop)
}

/// `flock(fd, op | LOCK_NB)`: a whole-file lock of the open file
/// description, apart from its `fcntl` locks (`ty`: `F_RDLCK` shared,
/// `F_WRLCK` exclusive, `F_UNLCK` release); never waits.
pub(crate) fn flock_nb(fd: BorrowedFd<'_>, ty: i32) -> Result<(), Errno> {
    let op = match ty {
        libc::F_RDLCK => libc::LOCK_SH,
        libc::F_WRLCK => libc::LOCK_EX,
        _ => libc::LOCK_UN,
    };
    // SAFETY: `fd` is open; flock only changes the lock of its description.
    retry(|| unsafe { libc::flock(fd.as_raw_fd(), op | libc::LOCK_NB) }).map(drop)
}

/// `fcntl(fd, F_OFD_GETLK, ...)`: the first lock that would conflict.
pub(crate) fn ofd_getlk(
    fd: BorrowedFd<'_>,
    ty: i16,
    start: i64,
    len: i64,
) -> Result<LockInfo, Errno> {
    let mut fl = flock(ty, start, len);
    // SAFETY: `fd` is open and `fl` is a live, writable `struct flock`.
    retry(|| unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_OFD_GETLK, &raw mut fl) })?;
    Ok(LockInfo {
        ty: fl.l_type,
        start: fl.l_start,
        len: fl.l_len,
        pid: fl.l_pid,
    })
}

/// The gateway's real user and group ids.
pub(crate) fn ids() -> (u32, u32) {
    // SAFETY: getuid/getgid take no arguments and cannot fail.
    unsafe { (libc::getuid(), libc::getgid()) }
}

/// The `/proc/self/fd` name of `fd`: the extended attribute calls on it act
/// on the file `fd` has open (an `O_PATH` descriptor of a symbolic link:
/// the link itself), which keeps them beneath the export.
fn fd_path(fd: BorrowedFd<'_>) -> std::ffi::CString {
    std::ffi::CString::new(format!("/proc/self/fd/{}", fd.as_raw_fd())).unwrap_or_default()
}

/// `getxattr` of the file open as `fd`: its value (the list of names,
/// NUL-separated, for `name` `None`).
pub(crate) fn get_xattr(fd: BorrowedFd<'_>, name: Option<&CStr>) -> Result<Vec<u8>, Errno> {
    let path = fd_path(fd);
    loop {
        // SAFETY: `path` and `name` are NUL-terminated; a null buffer of
        // size 0 asks only for the size.
        let size = retry(|| unsafe {
            match name {
                Some(n) => libc::getxattr(path.as_ptr(), n.as_ptr(), std::ptr::null_mut(), 0),
                None => libc::listxattr(path.as_ptr(), std::ptr::null_mut(), 0),
            }
        })? as usize;
        let mut buf = vec![0u8; size];
        // SAFETY: `buf` is writable for `size` bytes.
        let got = unsafe {
            match name {
                Some(n) => libc::getxattr(path.as_ptr(), n.as_ptr(), buf.as_mut_ptr().cast(), size),
                None => libc::listxattr(path.as_ptr(), buf.as_mut_ptr().cast(), size),
            }
        };
        if got < 0 {
            let e = last_errno();
            // It grew between the two calls: ask again.
            if e.0 == libc::ERANGE || e.0 == libc::EINTR {
                continue;
            }
            return Err(e);
        }
        buf.truncate(got as usize);
        return Ok(buf);
    }
}

/// `setxattr` (or, for `value` `None`, `removexattr`) of the file open as `fd`.
pub(crate) fn set_xattr(
    fd: BorrowedFd<'_>,
    name: &CStr,
    value: Option<&[u8]>,
    flags: i32,
) -> Result<(), Errno> {
    let path = fd_path(fd);
    // SAFETY: `path` and `name` are NUL-terminated and `value` is readable
    // for its length.
    retry(|| unsafe {
        match value {
            Some(v) => libc::setxattr(
                path.as_ptr(),
                name.as_ptr(),
                v.as_ptr().cast(),
                v.len(),
                flags,
            ),
            None => libc::removexattr(path.as_ptr(), name.as_ptr()),
        }
    })?;
    Ok(())
}

/// `connect(AF_UNSPEC)`: a UDP socket forgets its peer (and, unless a
/// `bind` chose them, its source address and port, as Linux's
/// `udp_disconnect` does).
pub(crate) fn disconnect(fd: BorrowedFd<'_>) -> Result<(), Errno> {
    // SAFETY: a zeroed sockaddr is a valid AF_UNSPEC address (family 0);
    // `connect` reads `size_of::<sockaddr>()` bytes of it, no more.
    let r = unsafe {
        let sa: libc::sockaddr = std::mem::zeroed();
        libc::connect(
            fd.as_raw_fd(),
            &sa,
            std::mem::size_of::<libc::sockaddr>() as libc::socklen_t,
        )
    };
    if r != 0 {
        return Err(Errno::from(io::Error::last_os_error()));
    }
    Ok(())
}

/// `setsockopt(SO_LINGER)` on a socket: `abort` makes its close reset the
/// connection (`l_onoff` 1, `l_linger` 0), otherwise the default graceful
/// close. A lingering close (`l_linger` > 0) would block the event loop,
/// so it is never set here.
pub(crate) fn set_abortive_close(fd: BorrowedFd<'_>, abort: bool) -> Result<(), Errno> {
    let l = libc::linger {
        l_onoff: libc::c_int::from(abort),
        l_linger: 0,
    };
    // SAFETY: `fd` is open for the call (borrowed); the option value points
    // to a live `linger` whose size is passed alongside it.
    retry(|| unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&raw const l).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    })
    .map(drop)
}

/// `setsockopt(level, name, value)` with the caller's bytes as they are
/// (the callers pass only options they checked: the multicast ones of a
/// UDP socket, [`crate::net`]'s `sockopt` ctl).
pub(crate) fn setsockopt_bytes(
    fd: BorrowedFd<'_>,
    level: i32,
    name: i32,
    value: &[u8],
) -> Result<(), Errno> {
    // SAFETY: `fd` is open for the call (borrowed); the option value points
    // to `value.len()` live bytes, and that length is what is passed.
    retry(|| unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            value.as_ptr().cast(),
            value.len() as libc::socklen_t,
        )
    })
    .map(drop)
}

/// A TCP socket's state (`TCP_INFO`'s `tcpi_state`: `TCP_ESTABLISHED` 1
/// … `TCP_CLOSE` 7 …), as the host's kernel has it now.
pub(crate) fn tcp_state(fd: BorrowedFd<'_>) -> Result<u8, Errno> {
    let mut info = std::mem::MaybeUninit::<libc::tcp_info>::zeroed();
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: `fd` is open for the call; the buffer is a `tcp_info` whose
    // size is passed in `len`, which the kernel updates.
    retry(|| unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            info.as_mut_ptr().cast(),
            &mut len,
        )
    })?;
    // SAFETY: zero-initialised, then (partly) filled by the kernel.
    Ok(unsafe { info.assume_init() }.tcpi_state)
}

/// `setsockopt(SO_KEEPALIVE, 1)` on a socket.
pub(crate) fn set_keepalive(fd: BorrowedFd<'_>) -> Result<(), Errno> {
    let on: libc::c_int = 1;
    // SAFETY: `fd` is open for the call (borrowed); the option value points
    // to a live `c_int` whose size is passed alongside it.
    retry(|| unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_KEEPALIVE,
            (&raw const on).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    })
    .map(drop)
}

/// One entry of `getifaddrs`: an interface's name and flags, and one of
/// its addresses.
pub(crate) struct IfAddr {
    pub(crate) name: String,
    pub(crate) flags: u32,
    pub(crate) addr: IfAddrKind,
}

/// What an [`IfAddr`] holds.
pub(crate) enum IfAddrKind {
    /// An IPv4 address with its netmask and broadcast address.
    Inet {
        addr: std::net::Ipv4Addr,
        mask: std::net::Ipv4Addr,
        brd: Option<std::net::Ipv4Addr>,
    },
    /// The link layer: the interface's index, hardware type (`ARPHRD_*`)
    /// and address.
    Packet {
        index: i32,
        hatype: u16,
        hw: Vec<u8>,
    },
    /// IPv6 (the caller reads `/proc/net/if_inet6`) or none.
    Other,
}

/// The host's interfaces and addresses (`getifaddrs`).
pub(crate) fn ifaddrs() -> Result<Vec<IfAddr>, Errno> {
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: `head` is a valid place for the list's address.
    if unsafe { libc::getifaddrs(&raw mut head) } != 0 {
        return Err(last_errno());
    }
    let v4 = |sa: *const libc::sockaddr| -> Option<std::net::Ipv4Addr> {
        // SAFETY: a non-null address of getifaddrs' list is a live
        // sockaddr whose family says its type; only AF_INET is read as
        // sockaddr_in.
        unsafe {
            let sa = sa.as_ref()?;
            if i32::from(sa.sa_family) != libc::AF_INET {
                return None;
            }
            let sin = &*(std::ptr::from_ref(sa).cast::<libc::sockaddr_in>());
            Some(std::net::Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)))
        }
    };
    let mut out = Vec::new();
    let mut p = head;
    while !p.is_null() {
        // SAFETY: `p` is an entry of the list getifaddrs made, alive until
        // freeifaddrs below; its name is a NUL-terminated string.
        let ifa = unsafe { &*p };
        // SAFETY: as above.
        let name = unsafe { CStr::from_ptr(ifa.ifa_name) }
            .to_string_lossy()
            .into_owned();
        // SAFETY: a non-null ifa_addr is a live sockaddr.
        let family = unsafe { ifa.ifa_addr.as_ref() }.map(|a| i32::from(a.sa_family));
        let addr = match family {
            Some(libc::AF_INET) => IfAddrKind::Inet {
                addr: v4(ifa.ifa_addr).unwrap_or(std::net::Ipv4Addr::UNSPECIFIED),
                mask: v4(ifa.ifa_netmask).unwrap_or(std::net::Ipv4Addr::UNSPECIFIED),
                brd: if ifa.ifa_flags & libc::IFF_BROADCAST as u32 != 0 {
                    v4(ifa.ifa_ifu)
                } else {
                    None
                },
            },
            Some(libc::AF_PACKET) => {
                // SAFETY: an AF_PACKET address of getifaddrs is a sockaddr_ll.
                let ll = unsafe { &*(ifa.ifa_addr.cast::<libc::sockaddr_ll>()) };
                let n = usize::from(ll.sll_halen).min(ll.sll_addr.len());
                IfAddrKind::Packet {
                    index: ll.sll_ifindex,
                    hatype: ll.sll_hatype,
                    hw: ll.sll_addr[..n].to_vec(),
                }
            }
            _ => IfAddrKind::Other,
        };
        out.push(IfAddr {
            name,
            flags: ifa.ifa_flags,
            addr,
        });
        p = ifa.ifa_next;
    }
    // SAFETY: `head` came from getifaddrs and is freed once; nothing of the
    // list is used after this.
    unsafe { libc::freeifaddrs(head) };
    Ok(out)
}

/// Raises this process's soft `RLIMIT_NOFILE` to its hard limit, as the
/// JVM does: a gateway holds a host descriptor for each file and socket its
/// clients have open. Returns the (old, new) soft limit if it was raised.
pub fn raise_descriptor_limit() -> Option<(u64, u64)> {
    raise_soft_limit(libc::RLIMIT_NOFILE)
}

/// Lets this process's own writes past `RLIMIT_FSIZE` fail with `EFBIG`
/// instead of ending it by `SIGXFSZ`, and raises its soft limit to the hard
/// one: the files it writes are its partitions' (whose programs' limit
/// the library OS enforces itself, as it has it from the `rlimits=` the
/// VMM recorded first) and its own (snapshots, logs). Returns the soft
/// limit it raised, if it did.
pub fn tolerate_file_size_limit() -> Option<u64> {
    // SAFETY: ignoring SIGXFSZ changes no memory; a write past the limit
    // then fails with EFBIG, which every writer here reports.
    unsafe { libc::signal(libc::SIGXFSZ, libc::SIG_IGN) };
    raise_soft_limit(libc::RLIMIT_FSIZE).map(|(old, _)| old)
}

/// Raises the soft limit of `resource` to its hard one (no privilege
/// needed): the (old, new) soft limit if it was below.
fn raise_soft_limit(resource: libc::__rlimit_resource_t) -> Option<(u64, u64)> {
    let mut l = MaybeUninit::<libc::rlimit>::uninit();
    // SAFETY: `l` is a writable `struct rlimit` for the call to fill.
    if unsafe { libc::getrlimit(resource, l.as_mut_ptr()) } != 0 {
        return None;
    }
    // SAFETY: getrlimit succeeded, so it filled `l`.
    let l = unsafe { l.assume_init() };
    if l.rlim_cur >= l.rlim_max {
        return None;
    }
    let raised = libc::rlimit {
        rlim_cur: l.rlim_max,
        rlim_max: l.rlim_max,
    };
    // SAFETY: `raised` is a valid `struct rlimit`; raising a soft limit to
    // its hard one needs no privilege.
    if unsafe { libc::setrlimit(resource, &raised) } != 0 {
        return None;
    }
    Some((l.rlim_cur, l.rlim_max))
}
