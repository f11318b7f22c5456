//! `dup(2)`, `dup2(2)`, `dup3(2)`, `fcntl(2)`: descriptors sharing one open
//! file (and its offset), and descriptor flags.

use alloc::sync::Arc;

use crate::errno::Errno;
use crate::fd::{self, File, MAX_FDS, TABLE};

const F_DUPFD: u64 = 0;
const F_GETFD: u64 = 1;
const F_SETFD: u64 = 2;
const F_GETFL: u64 = 3;
const F_SETFL: u64 = 4;
const F_DUPFD_CLOEXEC: u64 = 1030;
const O_RDWR_FLAGS: u32 = 0o2000 | 3;

/// Puts `f` at the lowest free descriptor at or above `min`.
fn install_from(f: Arc<File>, min: usize) -> Result<u64, Errno> {
    let mut t = TABLE.lock();
    if min >= MAX_FDS {
        return Err(Errno::EINVAL);
    }
    if t.len() < min {
        t.resize(min, None);
    }
    if let Some(i) = (min..t.len()).find(|&i| t[i].is_none()) {
        t[i] = Some(f);
        return Ok(i as u64);
    }
    if t.len() >= MAX_FDS {
        return Err(Errno::EMFILE);
    }
    t.push(Some(f));
    Ok(t.len() as u64 - 1)
}

/// Makes `new` refer to `old`'s file, closing what `new` held.
fn dup_to(old: u64, new: u64) -> Result<u64, Errno> {
    let f = fd::get(old)?;
    if new as usize >= MAX_FDS {
        return Err(Errno::EBADF);
    }
    let previous = {
        let mut t = TABLE.lock();
        if t.len() <= new as usize {
            t.resize(new as usize + 1, None);
        }
        t[new as usize].replace(f)
    };
    drop(previous);
    Ok(new)
}

/// `dup(fd)`.
pub fn dup(a: &[u64; 6]) -> Result<u64, Errno> {
    install_from(fd::get(a[0])?, 0)
}

/// `dup2(old, new)`.
pub fn dup2(a: &[u64; 6]) -> Result<u64, Errno> {
    if a[0] == a[1] {
        fd::get(a[0])?;
        return Ok(a[1]);
    }
    dup_to(a[0], a[1])
}

/// `dup3(old, new, flags)`.
pub fn dup3(a: &[u64; 6]) -> Result<u64, Errno> {
    if a[0] == a[1] {
        return Err(Errno::EINVAL);
    }
    dup_to(a[0], a[1])
}

/// `fcntl(fd, cmd, arg)`: duplication and flags (close-on-exec is accepted
/// and has nothing to act on: there is no exec).
pub fn fcntl(a: &[u64; 6]) -> Result<u64, Errno> {
    let f = fd::get(a[0])?;
    match a[1] {
        F_DUPFD | F_DUPFD_CLOEXEC => install_from(f, a[2] as usize),
        F_GETFD | F_SETFD => Ok(0),
        F_GETFL => Ok(match &*f {
            File::Console { fd: 0 } => 0,
            File::Console { .. } => 1,
            File::P9 { flags, .. } => u64::from(*flags & O_RDWR_FLAGS),
        }),
        F_SETFL => Ok(0),
        _ => Err(Errno::EINVAL),
    }
}
