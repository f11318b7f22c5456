//! `dup(2)`, `dup2(2)`, `dup3(2)`, `fcntl(2)`: descriptors sharing one open
//! file description (its offset and status flags), descriptor flags, and
//! record locks (`locks.rs`).

use crate::errno::Errno;
use crate::fd::{self, O_CLOEXEC, Object, Slot, TABLE};

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
const F_SETPIPE_SZ: u64 = 1031;
const F_GETPIPE_SZ: u64 = 1032;
const FD_CLOEXEC: u64 = 1;

/// Makes `new` refer to `old`'s file, closing what `new` held.
fn dup_to(old: u64, new: u64, cloexec: bool) -> Result<u64, Errno> {
    let object = fd::object(old)?;
    if new >= crate::process::fd_limit() as u64 {
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
    if let Some(p) = &previous {
        super::locks::closing(&p.object);
    }
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
            // A start at or past the limit is EINVAL here (Linux's
            // `f_dupfd`); a full table below it EMFILE.
            let from = a[2] as u32 as usize;
            if from >= crate::process::fd_limit() {
                return Err(Errno::EINVAL);
            }
            fd::install_from(o, a[1] == F_DUPFD_CLOEXEC, from)
        }
        F_GETFD => Ok(u64::from(fd::cloexec(a[0])?)),
        F_SETFD => fd::set_cloexec(a[0], a[2] & FD_CLOEXEC != 0).map(|_| 0),
        F_GETFL => Ok(u64::from(o.status_flags())),
        F_SETFL => {
            o.set_status_flags(a[2] as u32);
            Ok(0)
        }
        F_GETLK => super::locks::getlk(&o, a[2], false),
        F_OFD_GETLK => super::locks::getlk(&o, a[2], true),
        F_SETLK => super::locks::setlk(&o, a[2], false, false),
        F_SETLKW => super::locks::setlk(&o, a[2], true, false),
        F_OFD_SETLK => super::locks::setlk(&o, a[2], false, true),
        F_OFD_SETLKW => super::locks::setlk(&o, a[2], true, true),
        F_ADD_SEALS => o
            .regular()
            .ok_or(Errno::EINVAL)?
            .add_seals(a[2] as u32)
            .map(|()| 0),
        F_GET_SEALS => Ok(u64::from(o.regular().ok_or(Errno::EINVAL)?.seals())),
        F_GETPIPE_SZ => match o {
            Object::PipeRead(r) => r.size(),
            Object::PipeWrite(w) => w.size(),
            _ => None,
        }
        .map(|n| n as u64)
        .ok_or(Errno::EBADF),
        // The argument is an unsigned int to Linux.
        F_SETPIPE_SZ => match o {
            Object::PipeRead(r) => r.set_size(a[2] as u32),
            Object::PipeWrite(w) => w.set_size(a[2] as u32),
            _ => Err(Errno::EBADF),
        }
        .map(|n| n as u64),
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
