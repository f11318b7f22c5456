//! `clock_gettime(2)`: the TSC clock, without leaving the partition, and the
//! CPU-time clocks from the scheduler's account (see `clock`).

use crate::clock::Clock;
use crate::errno::Errno;
use crate::mm::user;

/// `clock_gettime(clockid, tp)`: REALTIME from the boot wall time, the
/// CPU-time clocks (process, thread, and the per-thread ids of
/// `pthread_getcpuclockid`) from the scheduler's account, every other clock
/// from the monotonic TSC clock.
pub fn clock_gettime(a: &[u64; 6]) -> Result<u64, Errno> {
    let ns = Clock::of(a[0])?.read()?;
    let mut ts = [0u8; 16];
    ts[..8].copy_from_slice(&(ns / 1_000_000_000).to_le_bytes());
    ts[8..].copy_from_slice(&(ns % 1_000_000_000).to_le_bytes());
    user::copy_in(a[1], &ts)?;
    Ok(0)
}
