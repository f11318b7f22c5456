//! `sched_getaffinity(2)` and `sched_setaffinity(2)`: the CPUs a thread may
//! run on. A partition has one vCPU (CPU 0), so every thread's mask is {0}.

use crate::errno::Errno;
use crate::mm::user;

/// Bytes of Linux's `cpumask` for one possible CPU (one `long`).
const MASK_BYTES: u64 = 8;

/// `pid` names this process or one of its threads (0: the caller).
fn check_target(pid: u64) -> Result<(), Errno> {
    if pid as i32 == 0 || pid == crate::process::pid() || crate::process::thread(pid).is_some() {
        Ok(())
    } else {
        Err(Errno::ESRCH)
    }
}

/// `sched_getaffinity(pid, size, mask)`: returns the bytes written. As
/// Linux: `EINVAL` when `size` is not a multiple of `long` or too small
/// for the possible CPUs (glibc's `pthread_getattr_np` relies on it).
pub fn sched_getaffinity(a: &[u64; 6]) -> Result<u64, Errno> {
    let size = a[1] as u32 as u64;
    if size < MASK_BYTES || !size.is_multiple_of(8) {
        return Err(Errno::EINVAL);
    }
    check_target(a[0])?;
    user::copy_in(a[2], &1u64.to_le_bytes())?;
    Ok(MASK_BYTES)
}

/// `sched_setaffinity(pid, size, mask)`: accepted when the mask holds
/// CPU 0 (the only one); `EINVAL` when it holds no CPU that exists.
pub fn sched_setaffinity(a: &[u64; 6]) -> Result<u64, Errno> {
    let size = a[1] as u32 as u64;
    check_target(a[0])?;
    if size == 0 {
        return Err(Errno::EINVAL);
    }
    let first = user::read_byte(a[2])?;
    if first & 1 == 0 {
        return Err(Errno::EINVAL);
    }
    Ok(0)
}
