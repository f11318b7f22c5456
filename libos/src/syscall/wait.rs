//! `wait4(2)` and `waitid(2)`: a partition's process never has children
//! (no `fork`), so after Linux's argument checks every wait is `ECHILD`,
//! as it is for a Linux process that has none.

use crate::errno::Errno;
use crate::fd;

const WNOHANG: u64 = 1;
const WSTOPPED: u64 = 2;
const WEXITED: u64 = 4;
const WCONTINUED: u64 = 8;
const WNOWAIT: u64 = 0x0100_0000;
/// `__WNOTHREAD`, `__WALL`, `__WCLONE`.
const WTHREAD_FLAGS: u64 = 0x2000_0000 | 0x4000_0000 | 0x8000_0000;

/// `wait4(pid, wstatus, options, rusage)`: `EINVAL` for unknown options,
/// `ESRCH` for `INT_MIN` (which has no negation), then `ECHILD`.
pub fn wait4(a: &[u64; 6]) -> Result<u64, Errno> {
    // WUNTRACED is WSTOPPED.
    if a[2] & !(WNOHANG | WSTOPPED | WCONTINUED | WTHREAD_FLAGS) != 0 {
        return Err(Errno::EINVAL);
    }
    if a[0] as i32 == i32::MIN {
        return Err(Errno::ESRCH);
    }
    Err(Errno::ECHILD)
}

/// `waitid(idtype, id, infop, options, rusage)`: Linux's `kernel_waitid`
/// checks (options, at least one of `WEXITED`/`WSTOPPED`/`WCONTINUED`,
/// the id for its type, a pidfd), then `ECHILD`. No descriptor here is a
/// pidfd (`pidfd_open` does not exist): `EBADF`.
pub fn waitid(a: &[u64; 6]) -> Result<u64, Errno> {
    let options = a[3];
    if options & !(WNOHANG | WNOWAIT | WEXITED | WSTOPPED | WCONTINUED | WTHREAD_FLAGS) != 0 {
        return Err(Errno::EINVAL);
    }
    if options & (WEXITED | WSTOPPED | WCONTINUED) == 0 {
        return Err(Errno::EINVAL);
    }
    let id = a[1] as i32;
    match a[0] {
        // P_ALL
        0 => {}
        // P_PID
        1 if id <= 0 => return Err(Errno::EINVAL),
        1 => {}
        // P_PGID, P_PIDFD
        2 | 3 if id < 0 => return Err(Errno::EINVAL),
        2 => {}
        3 => {
            fd::object(id as u64)?;
            return Err(Errno::EBADF);
        }
        _ => return Err(Errno::EINVAL),
    }
    Err(Errno::ECHILD)
}
