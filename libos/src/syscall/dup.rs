//! `dup(2)`, `dup2(2)`, `dup3(2)`, `fcntl(2)`: descriptors sharing one open
//! file description (its offset and status flags), descriptor flags, and
//! POSIX record locks (taken by the gateway on the host's file).

use crate::errno::Errno;
use crate::fd::{self, File, MAX_FDS, O_CLOEXEC, Object, Slot, TABLE};
use crate::mm::user;

const F_DUPFD: u64 = 0;
const F_GETFD: u64 = 1;
const F_SETFD: u64 = 2;
const F_GETFL: u64 = 3;
const F_SETFL: u64 = 4;
const F_ADD_SEALS: u64 = 1033;
const F_GET_SEALS: u64 = 1034;
const F_GETLK: u64 = 5;
const F_SETLK: u64 = 6;
const F_SETLKW: u64 = 7;
const F_OFD_GETLK: u64 = 36;
const F_OFD_SETLK: u64 = 37;
const F_OFD_SETLKW: u64 = 38;
const F_DUPFD_CLOEXEC: u64 = 1030;
const F_GETPIPE_SZ: u64 = 1032;
const FD_CLOEXEC: u64 = 1;
const F_UNLCK: u16 = 2;

/// Makes `new` refer to `old`'s file, closing what `new` held.
fn dup_to(old: u64, new: u64, cloexec: bool) -> Result<u64, Errno> {
    let object = fd::object(old)?;
    if new as usize >= MAX_FDS {
        return Err(Errno::EBADF);
    }
    let previous = {
        let mut t = TABLE.lock();
        if t.len() <= new as usize {
            t.resize(new as usize + 1, None);
        }
        t[new as usize].replace(Slot { object, cloexec })
    };
    // Closing may talk to the gateway: not with the table locked.
    drop(previous);
    Ok(new)
}

/// `dup(fd)`.
pub fn dup(a: &[u64; 6]) -> Result<u64, Errno> {
    fd::install_object(fd::object(a[0])?, false)
}

/// `dup2(old, new)`.
pub fn dup2(a: &[u64; 6]) -> Result<u64, Errno> {
    if a[0] == a[1] {
        fd::object(a[0])?;
        return Ok(a[1]);
    }
    dup_to(a[0], a[1], false)
}

/// `dup3(old, new, flags)`.
pub fn dup3(a: &[u64; 6]) -> Result<u64, Errno> {
    if a[0] == a[1] || a[2] as u32 & !O_CLOEXEC != 0 {
        return Err(Errno::EINVAL);
    }
    dup_to(a[0], a[1], a[2] as u32 & O_CLOEXEC != 0)
}

/// `fcntl(fd, cmd, arg)`.
pub fn fcntl(a: &[u64; 6]) -> Result<u64, Errno> {
    let o = fd::object(a[0])?;
    match a[1] {
        F_DUPFD | F_DUPFD_CLOEXEC => {
            fd::install_from(o, a[1] == F_DUPFD_CLOEXEC, a[2] as u32 as usize)
        }
        F_GETFD => Ok(u64::from(fd::cloexec(a[0])?)),
        F_SETFD => fd::set_cloexec(a[0], a[2] & FD_CLOEXEC != 0).map(|_| 0),
        F_GETFL => Ok(u64::from(o.status_flags())),
        F_SETFL => {
            o.set_status_flags(a[2] as u32);
            Ok(0)
        }
        F_GETLK | F_OFD_GETLK => getlk(&o, a[2]),
        F_SETLK | F_OFD_SETLK => setlk(&o, a[2], false),
        F_SETLKW | F_OFD_SETLKW => setlk(&o, a[2], true),
        F_ADD_SEALS => o
            .regular()
            .ok_or(Errno::EINVAL)?
            .add_seals(a[2] as u32)
            .map(|()| 0),
        F_GET_SEALS => Ok(u64::from(o.regular().ok_or(Errno::EINVAL)?.seals())),
        F_GETPIPE_SZ => match o {
            Object::PipeRead(_) | Object::PipeWrite(_) => Ok(crate::vfs::ring::PIPE_SIZE as u64),
            _ => Err(Errno::EBADF),
        },
        _ => Err(Errno::EINVAL),
    }
}

/// `fcntl` in a direct call (see `syscall::direct`): the flag commands,
/// which only read or set the descriptor's and description's flags; `None`
/// for the others (they trap).
pub fn fcntl_direct(a: &[u64; 6]) -> Option<u64> {
    if !matches!(a[1], F_GETFD | F_SETFD | F_GETFL | F_SETFL) {
        return None;
    }
    let o = fd::object(a[0]).ok()?;
    let r = match a[1] {
        F_GETFD => fd::cloexec(a[0]).map(u64::from),
        F_SETFD => fd::set_cloexec(a[0], a[2] & FD_CLOEXEC != 0).map(|_| 0),
        F_GETFL => Ok(u64::from(o.status_flags())),
        _ => {
            o.set_status_flags(a[2] as u32);
            Ok(0)
        }
    };
    super::release(o);
    Some(r.unwrap_or_else(super::errno_value))
}

/// A `struct flock` as the 9P lock wants it: (type, start, length).
struct Lock {
    ty: u16,
    start: u64,
    len: u64,
}

fn p9_file(o: &Object) -> Result<(crate::p9::Fid, &'static crate::p9::Client), Errno> {
    let c = crate::p9::mounted().ok_or(Errno::EBADF)?;
    match o {
        Object::File(f) => match &**f {
            File::P9 { fid, .. } => Ok((*fid, c)),
            File::Console { .. } => Err(Errno::EINVAL),
        },
        _ => Err(Errno::EINVAL),
    }
}

/// Reads a `struct flock` (type, whence, start, len at 0, 2, 8, 16) and
/// makes its range absolute.
fn read_flock(o: &Object, addr: u64) -> Result<Lock, Errno> {
    let b = &user::read_array::<32>(addr)?;
    let ty = u16::from_le_bytes([b[0], b[1]]);
    let whence = u16::from_le_bytes([b[2], b[3]]);
    let start = i64::from_le_bytes(b[8..16].try_into().map_err(|_| Errno::EFAULT)?);
    let len = i64::from_le_bytes(b[16..24].try_into().map_err(|_| Errno::EFAULT)?);
    if ty > F_UNLCK {
        return Err(Errno::EINVAL);
    }
    let base = match (whence, o) {
        (0, _) => 0,
        (1, Object::File(f)) => match &**f {
            File::P9 { offset, .. } => *offset.lock() as i64,
            File::Console { .. } => 0,
        },
        (2, _) => {
            let (fid, c) = p9_file(o)?;
            c.getattr(fid)?.size as i64
        }
        (1, _) => 0,
        _ => return Err(Errno::EINVAL),
    };
    let mut start = base.checked_add(start).ok_or(Errno::EINVAL)?;
    let mut len = len;
    if len < 0 {
        // A negative length covers the bytes before start.
        start = start.checked_add(len).ok_or(Errno::EINVAL)?;
        len = -len;
    }
    if start < 0 {
        return Err(Errno::EINVAL);
    }
    Ok(Lock {
        ty,
        start: start as u64,
        len: len as u64,
    })
}

fn setlk(o: &Object, addr: u64, wait: bool) -> Result<u64, Errno> {
    use astraea_9p::consts::{P9_LOCK_BLOCKED, P9_LOCK_SUCCESS};
    let l = read_flock(o, addr)?;
    let (fid, c) = p9_file(o)?;
    loop {
        match c.lock(fid, l.ty as u8, l.start, l.len, wait)? {
            P9_LOCK_SUCCESS => return Ok(0),
            // The server does not wait itself: ask again a little later,
            // as Linux's 9P client does.
            // A signal ends the wait (`EINTR`, or a restart under
            // SA_RESTART), as Linux's F_SETLKW.
            P9_LOCK_BLOCKED if wait => {
                let until = crate::time::monotonic_ns().saturating_add(10_000_000);
                if !crate::sched::sleep_until_interruptible(until) {
                    return Err(Errno::ERESTARTSYS);
                }
            }
            P9_LOCK_BLOCKED => return Err(Errno::EAGAIN),
            _ => return Err(Errno::ENOLCK),
        }
    }
}

fn getlk(o: &Object, addr: u64) -> Result<u64, Errno> {
    let l = read_flock(o, addr)?;
    if l.ty == F_UNLCK {
        return Err(Errno::EINVAL);
    }
    let (fid, c) = p9_file(o)?;
    let (ty, start, len) = c.getlock(fid, l.ty as u8, l.start, l.len)?;
    // Linux changes only l_type when nothing conflicts.
    let mut out = user::read_array::<32>(addr)?;
    out[0..2].copy_from_slice(&u16::from(ty).to_le_bytes());
    if u16::from(ty) != F_UNLCK {
        out[2..4].copy_from_slice(&0u16.to_le_bytes());
        out[8..16].copy_from_slice(&start.to_le_bytes());
        out[16..24].copy_from_slice(&len.to_le_bytes());
        // The holder is on the host; its pid is not known here.
        out[24..28].copy_from_slice(&(-1i32).to_le_bytes());
    }
    user::copy_in(addr, &out)?;
    Ok(0)
}
