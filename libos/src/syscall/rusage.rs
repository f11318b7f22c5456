//! `getrusage(2)` and `times(2)`: the CPU time the process has used.
//!
//! The partition runs one process, so its CPU time is the time the vCPU
//! was not idle. Of that, the time spent serving page faults is system
//! time and the rest user time (time in system calls cannot be told apart
//! from time waiting in them yet, so it counts as user time). There is no
//! `RUSAGE_THREAD` reports the calling thread's own time (the scheduler
//! charges each thread for its runs), all of it as user time.

use core::sync::atomic::Ordering;

use crate::errno::Errno;
use crate::mm::user;

/// (user, system) CPU nanoseconds used so far.
pub fn cpu_ns() -> (u64, u64) {
    // The clock and the idle time read together: an idle period counted
    // between the two reads would make the result go backwards.
    let irq = crate::arch::cpu::irq_save();
    let busy = crate::time::monotonic_ns().saturating_sub(crate::sched::stats().idle_ns);
    crate::arch::cpu::irq_restore(irq);
    let sys = crate::mm::vma::STATS.ns.load(Ordering::Relaxed).min(busy);
    // Fault time is added in one lump when a fault ends, so the split moves
    // time from user to system after the fact: each part is kept from going
    // backwards (as Linux's cputime_adjust does), the user part at the
    // expense of the split's precision.
    let mut prev = PREV.lock();
    let sys = sys.max(prev.1);
    let user = busy.saturating_sub(sys).max(prev.0);
    *prev = (user, sys);
    (user, sys)
}

/// The (user, system) nanoseconds last reported.
static PREV: crate::sync::IrqLock<(u64, u64)> = crate::sync::IrqLock::new((0, 0));

fn timeval(ns: u64) -> [u8; 16] {
    let mut tv = [0u8; 16];
    tv[..8].copy_from_slice(&(ns / 1_000_000_000).to_le_bytes());
    tv[8..].copy_from_slice(&((ns % 1_000_000_000) / 1000).to_le_bytes());
    tv
}

/// `getrusage(who, usage)`: `RUSAGE_SELF` and `RUSAGE_THREAD` report the
/// CPU time, the memory in use, page faults and context switches; there
/// never were children.
pub fn getrusage(a: &[u64; 6]) -> Result<u64, Errno> {
    const RUSAGE_SELF: i32 = 0;
    const RUSAGE_CHILDREN: i32 = -1;
    const RUSAGE_THREAD: i32 = 1;
    let mut r = [0u8; 144];
    match a[0] as i32 {
        RUSAGE_SELF | RUSAGE_THREAD => {
            let (utime, stime) = if a[0] as i32 == RUSAGE_THREAD {
                (crate::sched::cpu_ns(&crate::sched::current()), 0)
            } else {
                cpu_ns()
            };
            r[0..16].copy_from_slice(&timeval(utime));
            r[16..32].copy_from_slice(&timeval(stime));
            let m = crate::mm::stats();
            let used_kb = (m.total_pages - m.free_pages) as u64 * 4;
            r[32..40].copy_from_slice(&used_kb.to_le_bytes()); // ru_maxrss
            let f = &crate::mm::vma::STATS;
            let faults = f.anon.load(Ordering::Relaxed) + f.file.load(Ordering::Relaxed);
            r[64..72].copy_from_slice(&faults.to_le_bytes()); // ru_minflt
            let s = crate::sched::stats();
            r[128..136].copy_from_slice(&(s.switches - s.preemptions).to_le_bytes()); // ru_nvcsw
            r[136..144].copy_from_slice(&s.preemptions.to_le_bytes()); // ru_nivcsw
        }
        RUSAGE_CHILDREN => {}
        _ => return Err(Errno::EINVAL),
    }
    user::copy_in(a[1], &r)?;
    Ok(0)
}

/// `times(buf)`: user and system time in clock ticks (no children);
/// returns the ticks since boot.
pub fn times(a: &[u64; 6]) -> Result<u64, Errno> {
    let tick = 1_000_000_000 / crate::vfs::proc::USER_HZ;
    if a[0] != 0 {
        let (utime, stime) = cpu_ns();
        let mut t = [0u8; 32];
        t[..8].copy_from_slice(&(utime / tick).to_le_bytes());
        t[8..16].copy_from_slice(&(stime / tick).to_le_bytes());
        user::copy_in(a[0], &t)?;
    }
    Ok(crate::time::monotonic_ns() / tick)
}
