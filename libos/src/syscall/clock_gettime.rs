//! `clock_gettime(2)`: the TSC clock, without leaving the partition, and the
//! CPU-time clocks from the scheduler's account.

use crate::errno::Errno;
use crate::mm::user;
use crate::time;

const CLOCK_REALTIME: i32 = 0;
const CLOCK_PROCESS_CPUTIME_ID: i32 = 2;
const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
/// `CLOCK_SGI_CYCLE`, gone from Linux: the one gap below `CLOCK_TAI`.
const CLOCK_SGI_CYCLE: i32 = 10;
const CLOCK_TAI: i32 = 11;
/// A CPU-time clock id (`pthread_getcpuclockid`, `clock_getcpuclockid`):
/// `(~pid << 3) | which`, bit 2 set for a thread.
const CPUCLOCK_PERTHREAD: i32 = 4;
const CPUCLOCK_WHICH: i32 = 3;
const CPUCLOCK_MAX: i32 = 3;

/// CPU time of the thread `tid` (0: the caller), or `EINVAL` as Linux for a
/// thread that does not exist.
fn thread_cpu_ns(tid: u64) -> Result<u64, Errno> {
    if tid == 0 {
        return Ok(crate::sched::cpu_ns(&crate::sched::current()));
    }
    let t = crate::process::thread(tid).ok_or(Errno::EINVAL)?;
    Ok(crate::sched::cpu_ns(&t))
}

/// The process's CPU time: the partition's busy time.
fn process_cpu_ns() -> u64 {
    let (user, sys) = super::rusage::cpu_ns();
    user + sys
}

/// The nanoseconds `clock` reads now.
pub fn read_clock(clock: i32) -> Result<u64, Errno> {
    match clock {
        CLOCK_REALTIME => Ok(time::realtime_ns()),
        CLOCK_PROCESS_CPUTIME_ID => Ok(process_cpu_ns()),
        CLOCK_THREAD_CPUTIME_ID => thread_cpu_ns(0),
        CLOCK_SGI_CYCLE => Err(Errno::EINVAL),
        c if (0..=CLOCK_TAI).contains(&c) => Ok(time::monotonic_ns()),
        c if c < 0 => {
            if c & CPUCLOCK_WHICH == CPUCLOCK_MAX {
                return Err(Errno::EINVAL);
            }
            let pid = u64::from(!(c >> 3) as u32);
            if c & CPUCLOCK_PERTHREAD != 0 {
                thread_cpu_ns(pid)
            } else if pid == 0 || pid == crate::process::pid() {
                Ok(process_cpu_ns())
            } else {
                Err(Errno::EINVAL)
            }
        }
        _ => Err(Errno::EINVAL),
    }
}

/// `clock_gettime(clockid, tp)`: REALTIME from the boot wall time, the
/// CPU-time clocks (process, thread, and the per-thread ids of
/// `pthread_getcpuclockid`) from the scheduler's account, every other clock
/// from the monotonic TSC clock.
pub fn clock_gettime(a: &[u64; 6]) -> Result<u64, Errno> {
    let ns = read_clock(a[0] as i32)?;
    let mut ts = [0u8; 16];
    ts[..8].copy_from_slice(&(ns / 1_000_000_000).to_le_bytes());
    ts[8..].copy_from_slice(&(ns % 1_000_000_000).to_le_bytes());
    user::copy_in(a[1], &ts)?;
    Ok(0)
}
