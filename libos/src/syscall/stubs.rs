//! System calls whose Linux meaning needs nothing from a one-process library
//! OS yet, and those the JVM and glibc expect to be missing.

use crate::errno::Errno;

/// `set_robust_list(head, len)`: remembered by Linux for thread death; with
/// no other processes to wake, accepting it is enough for now.
pub fn set_robust_list(_: &[u64; 6]) -> Result<u64, Errno> {
    Ok(0)
}

/// `rseq(…)`: not offered (glibc and HotSpot fall back), as the issue asks.
pub fn rseq(_: &[u64; 6]) -> Result<u64, Errno> {
    Err(Errno::ENOSYS)
}
