//! Time without traps: the TSC, with its frequency from the VMM (KVM's own
//! figure) or CPUID, gives a monotonic clock; the boot time from the boot info
//! anchors the wall clock.

use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::arch::cpu::rdtsc;

static TSC_AT_BOOT: AtomicU64 = AtomicU64::new(0);
static TSC_KHZ: AtomicU64 = AtomicU64::new(0);
/// ns = ticks * NS_MULT >> 32.
static NS_MULT: AtomicU64 = AtomicU64::new(0);
static BOOT_UNIX_NS: AtomicU64 = AtomicU64::new(0);

/// The coarse clocks' resolution: the host's tick (Debian's 250 Hz unless
/// the VMM says otherwise).
static COARSE_RES_NS: AtomicU64 = AtomicU64::new(4_000_000);
/// Whether the host has the alarm clocks (`CLOCK_*_ALARM` need a
/// real-time clock device; without one Linux refuses them).
static ALARM_CLOCKS: AtomicBool = AtomicBool::new(true);

/// Sets the coarse clocks' resolution (the host's, from the VMM).
pub fn set_coarse_res(ns: u64) {
    if ns != 0 {
        COARSE_RES_NS.store(ns, Ordering::Relaxed);
    }
}

/// The coarse clocks' resolution in ns.
pub fn coarse_res_ns() -> u64 {
    COARSE_RES_NS.load(Ordering::Relaxed)
}

/// Says whether the host has the alarm clocks.
pub fn set_alarm_clocks(present: bool) {
    ALARM_CLOCKS.store(present, Ordering::Relaxed);
}

/// Whether the alarm clocks work (as on the host).
pub fn alarm_clocks() -> bool {
    ALARM_CLOCKS.load(Ordering::Relaxed)
}

/// Starts the clocks. `tsc_khz` is the TSC frequency; `boot_unix_ns` the wall
/// time at boot.
pub fn init(tsc_at_boot: u64, tsc_khz: u64, boot_unix_ns: u64) {
    TSC_AT_BOOT.store(tsc_at_boot, Ordering::Relaxed);
    TSC_KHZ.store(tsc_khz, Ordering::Relaxed);
    NS_MULT.store((1_000_000u64 << 32) / tsc_khz.max(1), Ordering::Relaxed);
    BOOT_UNIX_NS.store(boot_unix_ns, Ordering::Relaxed);
}

/// The TSC frequency from CPUID leaf 0x15 (crystal ratio) or 0x16 (base MHz),
/// for when the VMM does not pass it.
pub fn tsc_khz_from_cpuid() -> Option<u64> {
    use core::arch::x86_64::__cpuid;
    let max = __cpuid(0).eax;
    if max >= 0x15 {
        let l = __cpuid(0x15);
        if l.eax != 0 && l.ebx != 0 && l.ecx != 0 {
            return Some(u64::from(l.ecx) * u64::from(l.ebx) / u64::from(l.eax) / 1000);
        }
    }
    if max >= 0x16 {
        let mhz = __cpuid(0x16).eax & 0xffff;
        if mhz != 0 {
            return Some(u64::from(mhz) * 1000);
        }
    }
    None
}

/// TSC ticks per second / 1000.
pub fn tsc_khz() -> u64 {
    TSC_KHZ.load(Ordering::Relaxed)
}

/// Converts TSC ticks to nanoseconds.
pub fn ticks_to_ns(ticks: u64) -> u64 {
    ((u128::from(ticks) * u128::from(NS_MULT.load(Ordering::Relaxed))) >> 32) as u64
}

/// Converts nanoseconds to TSC ticks (rounded up; saturating: a deadline
/// centuries ahead must not wrap round to one in the past).
pub fn ns_to_ticks(ns: u64) -> u64 {
    u64::try_from((u128::from(ns) * u128::from(tsc_khz())).div_ceil(1_000_000)).unwrap_or(u64::MAX)
}

/// Nanoseconds since the kernel started.
pub fn monotonic_ns() -> u64 {
    ticks_to_ns(rdtsc().saturating_sub(TSC_AT_BOOT.load(Ordering::Relaxed)))
}

/// The TSC value `ns` nanoseconds after boot.
pub fn deadline_tsc(ns_since_boot: u64) -> u64 {
    TSC_AT_BOOT
        .load(Ordering::Relaxed)
        .saturating_add(ns_to_ticks(ns_since_boot))
}

/// Nanoseconds since the Unix epoch.
pub fn realtime_ns() -> u64 {
    BOOT_UNIX_NS.load(Ordering::Relaxed) + monotonic_ns()
}

/// After a restore, `ticks` after the snapshot was taken: the clocks go
/// on as after a suspend (Linux's `CLOCK_MONOTONIC` leaves out the time a
/// machine was suspended): monotonic time continues from where the
/// snapshot was taken, so timers armed then keep their remaining time
/// (rather than all expiring at once), and the wall clock jumps to now.
/// Refresh the vDSO's copy ([`vdso_params`]) before the program runs.
pub fn skip(ticks: u64) {
    TSC_AT_BOOT.fetch_add(ticks, Ordering::Relaxed);
    BOOT_UNIX_NS.fetch_add(ticks_to_ns(ticks), Ordering::Relaxed);
}

/// What the vDSO needs to compute the clocks in the program: (TSC at boot,
/// ns per tick * 2^32, Unix time at boot in ns).
pub fn vdso_params() -> [u64; 3] {
    [
        TSC_AT_BOOT.load(Ordering::Relaxed),
        NS_MULT.load(Ordering::Relaxed),
        BOOT_UNIX_NS.load(Ordering::Relaxed),
    ]
}
