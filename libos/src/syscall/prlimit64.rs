//! `prlimit64(2)`, `getrlimit(2)`, `setrlimit(2)`: the process's resource
//! limits (`process::rlimit`), which start as the VMM's own. Set as
//! Linux's `do_prlimit` sets them: a soft limit above the hard one is
//! `EINVAL`, raising a hard limit `EPERM` (the program has no
//! `CAP_SYS_RESOURCE`), and so is an `RLIMIT_NOFILE` past `nr_open`.
//! `RLIMIT_NOFILE` bounds descriptor numbers (`EMFILE`) and `poll`,
//! `RLIMIT_AS`, `RLIMIT_DATA` and `RLIMIT_MEMLOCK` memory (`mm::vma`),
//! `RLIMIT_FSIZE` files (`signal::fsize_clamp`), `RLIMIT_CPU` CPU time
//! (`timers`); the others are kept and reported (`/proc/self/limits`).

use crate::errno::Errno;
use crate::mm::user;
use crate::process::{RLIM_NLIMITS, RLIMIT_NOFILE};

/// The (soft, hard) limit of `resource`, as `/proc/self/limits` reports it.
pub fn rlimit(resource: u64) -> (u64, u64) {
    crate::process::rlimit(resource as usize)
}

fn read_limit(addr: u64) -> Result<(u64, u64), Errno> {
    let b = user::read_array::<16>(addr)?;
    let (cur, max) = b.split_at(8);
    let word = |w: &[u8]| u64::from_le_bytes(w.try_into().unwrap_or([0; 8]));
    Ok((word(cur), word(max)))
}

fn write_limit(addr: u64, (cur, max): (u64, u64)) -> Result<(), Errno> {
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&cur.to_le_bytes());
    out[8..].copy_from_slice(&max.to_le_bytes());
    user::copy_in(addr, &out)
}

/// Linux's `do_prlimit`: the old limit, after setting `new` if given.
fn do_prlimit(resource: u64, new: Option<(u64, u64)>) -> Result<(u64, u64), Errno> {
    if resource >= RLIM_NLIMITS as u64 {
        return Err(Errno::EINVAL);
    }
    let r = resource as usize;
    let Some((cur, max)) = new else {
        return Ok(crate::process::rlimit(r));
    };
    if cur > max {
        return Err(Errno::EINVAL);
    }
    if r == RLIMIT_NOFILE && max > crate::fd::MAX_FDS as u64 {
        return Err(Errno::EPERM);
    }
    if max > crate::process::rlimit(r).1 {
        return Err(Errno::EPERM);
    }
    let old = crate::process::set_rlimit(r, (cur, max));
    if r == crate::process::RLIMIT_CPU {
        crate::timers::cpu_limit_changed();
    }
    Ok(old)
}

/// `prlimit64(pid, resource, new, old)`: `pid` 0 or any thread of the
/// process (there is no other process: `ESRCH`).
pub fn prlimit64(a: &[u64; 6]) -> Result<u64, Errno> {
    let new = if a[2] != 0 {
        Some(read_limit(a[2])?)
    } else {
        None
    };
    let pid = a[0] as i32;
    if pid != 0 && (pid < 0 || crate::process::thread(pid as u64).is_none()) {
        return Err(Errno::ESRCH);
    }
    let old = do_prlimit(a[1] as u32 as u64, new)?;
    if a[3] != 0 {
        write_limit(a[3], old)?;
    }
    Ok(0)
}

/// `getrlimit(resource, rlim)`.
pub fn getrlimit(a: &[u64; 6]) -> Result<u64, Errno> {
    let old = do_prlimit(a[0] as u32 as u64, None)?;
    write_limit(a[1], old)?;
    Ok(0)
}

/// `setrlimit(resource, rlim)`.
pub fn setrlimit(a: &[u64; 6]) -> Result<u64, Errno> {
    let new = read_limit(a[1])?;
    do_prlimit(a[0] as u32 as u64, Some(new)).map(|_| 0)
}
