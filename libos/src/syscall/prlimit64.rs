//! `prlimit64(2)`, `getrlimit(2)`, `setrlimit(2)`: reports the partition's limits; setting them is accepted.

use crate::errno::Errno;
use crate::mm::user;

const RLIMIT_STACK: u64 = 3;
const RLIMIT_NOFILE: u64 = 7;
const RLIM_INFINITY: u64 = u64::MAX;

/// The (soft, hard) limit of `resource`, as `prlimit64` and
/// `/proc/self/limits` report it.
pub fn rlimit(resource: u64) -> (u64, u64) {
    match resource {
        RLIMIT_STACK => (8 << 20, RLIM_INFINITY),
        RLIMIT_NOFILE => (1024, 4096),
        _ => (RLIM_INFINITY, RLIM_INFINITY),
    }
}

/// `prlimit64(pid, resource, new, old)`.
pub fn prlimit64(a: &[u64; 6]) -> Result<u64, Errno> {
    if a[0] != 0 && a[0] != 1 {
        return Err(Errno::EPERM);
    }
    if a[3] != 0 {
        let (cur, max) = rlimit(a[1]);
        let mut out = [0u8; 16];
        out[..8].copy_from_slice(&cur.to_le_bytes());
        out[8..].copy_from_slice(&max.to_le_bytes());
        user::copy_in(a[3], &out)?;
    }
    Ok(0)
}

/// `getrlimit(resource, rlim)`.
pub fn getrlimit(a: &[u64; 6]) -> Result<u64, Errno> {
    prlimit64(&[0, a[0], 0, a[1], 0, 0])
}

/// `setrlimit(resource, rlim)`: accepted.
pub fn setrlimit(a: &[u64; 6]) -> Result<u64, Errno> {
    user::check_readable(a[1], 16)?;
    Ok(0)
}
