//! `sysinfo(2)`, `clock_getres(2)`, `getcpu(2)`: the partition's own
//! memory, CPU and clocks.

use crate::errno::Errno;
use crate::mm::user;

/// `sysinfo(info)`: uptime and the partition's memory.
pub fn sysinfo(a: &[u64; 6]) -> Result<u64, Errno> {
    let m = crate::mm::stats();
    let mut b = [0u8; 112];
    let uptime = crate::time::monotonic_ns() / 1_000_000_000;
    b[0..8].copy_from_slice(&uptime.to_le_bytes());
    b[32..40].copy_from_slice(&(m.total_pages as u64 * 4096).to_le_bytes());
    b[40..48].copy_from_slice(&(m.free_pages as u64 * 4096).to_le_bytes());
    b[80..82].copy_from_slice(&1u16.to_le_bytes()); // procs
    b[104..108].copy_from_slice(&1u32.to_le_bytes()); // mem_unit
    user::copy_in(a[0], &b)?;
    Ok(0)
}

/// `clock_getres(clockid, res)`: one nanosecond (the TSC is finer), the
/// host's tick for the coarse clocks, or `EINVAL` for a clock Linux does
/// not know or (alarm clocks) the host does not have
/// (tests/progs/timediff.c).
pub fn clock_getres(a: &[u64; 6]) -> Result<u64, Errno> {
    let ns = crate::clock::Clock::of(a[0])?.resolution()?;
    if a[1] != 0 {
        let mut ts = [0u8; 16];
        ts[..8].copy_from_slice(&(ns / 1_000_000_000).to_le_bytes());
        ts[8..].copy_from_slice(&(ns % 1_000_000_000).to_le_bytes());
        user::copy_in(a[1], &ts)?;
    }
    Ok(0)
}

/// `getcpu(cpu, node, cache)`: vCPU 0, node 0.
pub fn getcpu(a: &[u64; 6]) -> Result<u64, Errno> {
    for p in [a[0], a[1]] {
        if p != 0 {
            user::copy_in(p, &0u32.to_le_bytes())?;
        }
    }
    Ok(0)
}

/// `gettimeofday(tv, tz)`.
pub fn gettimeofday(a: &[u64; 6]) -> Result<u64, Errno> {
    if a[0] != 0 {
        let ns = crate::time::realtime_ns();
        let mut tv = [0u8; 16];
        tv[..8].copy_from_slice(&(ns / 1_000_000_000).to_le_bytes());
        tv[8..].copy_from_slice(&((ns % 1_000_000_000) / 1000).to_le_bytes());
        user::copy_in(a[0], &tv)?;
    }
    Ok(0)
}
