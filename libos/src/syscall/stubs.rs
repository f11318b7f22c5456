//! System calls whose Linux meaning needs nothing from a one-process library
//! OS yet, and those the JVM and glibc expect to be missing.

use crate::errno::Errno;

/// `rseq(…)`: not offered (glibc and HotSpot fall back), as the issue asks.
pub fn rseq(_: &[u64; 6]) -> Result<u64, Errno> {
    Err(Errno::ENOSYS)
}
