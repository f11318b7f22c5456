//! `clock_gettime(2)`: the TSC clock, without leaving the partition.

use crate::errno::Errno;
use crate::mm::user;
use crate::time;

const CLOCK_REALTIME: u64 = 0;

/// `clock_gettime(clockid, tp)`: REALTIME from the boot wall time, every
/// other clock from the monotonic TSC clock.
pub fn clock_gettime(a: &[u64; 6]) -> Result<u64, Errno> {
    let ns = if a[0] == CLOCK_REALTIME {
        time::realtime_ns()
    } else {
        time::monotonic_ns()
    };
    let mut ts = [0u8; 16];
    ts[..8].copy_from_slice(&(ns / 1_000_000_000).to_le_bytes());
    ts[8..].copy_from_slice(&(ns % 1_000_000_000).to_le_bytes());
    user::copy_in(a[1], &ts)?;
    Ok(0)
}
