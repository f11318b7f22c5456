//! A sampling profiler for the program (`astraea run --profile`): a timer
//! interrupt every millisecond records where the CPU was — program code (by
//! page, grouped by mapping at exit), the kernel, or idle — and the exit
//! report lists where the time went. For finding what a partition spends
//! its time on that the host does not (start-up, system calls, faults).

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::sync::IrqLock;

static ON: AtomicBool = AtomicBool::new(false);
static KERNEL: AtomicU64 = AtomicU64::new(0);
static IDLE: AtomicU64 = AtomicU64::new(0);
static USER: IrqLock<BTreeMap<u64, u32>> = IrqLock::new(BTreeMap::new());
/// Library OS samples by instruction, to name the hot spots at exit
/// (`addr2line -e astraea-kernel` on `rip - 0xffff808000200000`).
static KERNEL_RIPS: IrqLock<BTreeMap<u64, u32>> = IrqLock::new(BTreeMap::new());

/// Trapped system calls by number: (calls, nanoseconds in them, waits
/// included), for the report's table of where trapped time went.
const CALL_SLOTS: usize = 512;
static CALL_COUNT: [AtomicU64; CALL_SLOTS] = [const { AtomicU64::new(0) }; CALL_SLOTS];
static CALL_NS: [AtomicU64; CALL_SLOTS] = [const { AtomicU64::new(0) }; CALL_SLOTS];

/// Records a trapped system call `nr` that took `ns` (waits included).
pub fn call(nr: u64, ns: u64) {
    if let Some(i) = usize::try_from(nr).ok().filter(|&i| i < CALL_SLOTS) {
        CALL_COUNT[i].fetch_add(1, Ordering::Relaxed);
        CALL_NS[i].fetch_add(ns, Ordering::Relaxed);
    }
}

/// The sampling period.
pub const PERIOD_NS: u64 = 1_000_000;

/// Starts sampling.
pub fn enable() {
    ON.store(true, Ordering::Relaxed);
}

/// Whether sampling is on.
pub fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

/// Forgets every sample and call so far: a partition restored from a
/// snapshot reports what it did since.
pub fn restart() {
    KERNEL.store(0, Ordering::Relaxed);
    IDLE.store(0, Ordering::Relaxed);
    USER.lock().clear();
    KERNEL_RIPS.lock().clear();
    for i in 0..CALL_SLOTS {
        CALL_COUNT[i].store(0, Ordering::Relaxed);
        CALL_NS[i].store(0, Ordering::Relaxed);
    }
}

/// Records one sample: the interrupted instruction, whether it was the
/// program's, and whether the CPU was idle.
pub fn sample(rip: u64, user: bool, idle: bool) {
    if !on() {
        return;
    }
    if idle {
        IDLE.fetch_add(1, Ordering::Relaxed);
    } else if user {
        *USER.lock().entry(rip >> 12).or_insert(0) += 1;
    } else {
        KERNEL.fetch_add(1, Ordering::Relaxed);
        *KERNEL_RIPS.lock().entry(rip).or_insert(0) += 1;
    }
}

/// The report: samples by mapping (program code), kernel and idle.
pub fn report() -> Option<String> {
    if !on() {
        return None;
    }
    let pages = core::mem::take(&mut *USER.lock());
    let mut hot_pages: Vec<(u64, u32)> = pages.iter().map(|(&p, &n)| (p, n)).collect();
    hot_pages.sort_by_key(|h| core::cmp::Reverse(h.1));
    let mut by_area: BTreeMap<String, u64> = BTreeMap::new();
    for (page, n) in pages {
        let name = crate::mm::vma::describe(page << 12);
        *by_area.entry(name).or_insert(0) += u64::from(n);
    }
    let kernel = KERNEL.load(Ordering::Relaxed);
    let idle = IDLE.load(Ordering::Relaxed);
    let user: u64 = by_area.values().sum();
    let total = (user + kernel + idle).max(1);
    let mut rows: Vec<(String, u64)> = by_area.into_iter().collect();
    rows.push((
        String::from("(library OS: system calls, faults, interrupts)"),
        kernel,
    ));
    rows.push((String::from("(idle)"), idle));
    rows.sort_by_key(|r| core::cmp::Reverse(r.1));
    let mut out = alloc::format!("profile: {total} samples, 1 per ms\n");
    for (name, n) in rows.iter().take(15) {
        out += &alloc::format!(
            "  {:5.1}%  {:6}  {name}\n",
            *n as f64 * 100.0 / total as f64,
            n
        );
    }
    out += "  program hot pages:\n";
    for (page, n) in hot_pages.iter().take(12) {
        out += &alloc::format!("    {n:6}  {}\n", crate::mm::vma::locate(page << 12));
    }
    let mut hot: Vec<(u64, u32)> = core::mem::take(&mut *KERNEL_RIPS.lock())
        .into_iter()
        .collect();
    hot.sort_by_key(|h| core::cmp::Reverse(h.1));
    out += "  library OS hot spots (image offset = rip - 0xffff808000200000):\n";
    for (rip, n) in hot.iter().take(10) {
        out += &alloc::format!("    {n:6}  {rip:#x}\n");
    }
    let mut calls: Vec<(usize, u64, u64)> = (0..CALL_SLOTS)
        .map(|i| {
            (
                i,
                CALL_COUNT[i].load(Ordering::Relaxed),
                CALL_NS[i].load(Ordering::Relaxed),
            )
        })
        .filter(|c| c.1 != 0)
        .collect();
    calls.sort_by_key(|c| core::cmp::Reverse(c.2));
    out += "  trapped system calls by time in them (waits included):\n";
    for (nr, n, ns) in calls.iter().take(15) {
        out += &alloc::format!(
            "    {:>10} us  {n:8} calls  {:>7} ns each  {}\n",
            ns / 1000,
            ns / n,
            crate::syscall::name(*nr as u64)
        );
    }
    Some(out)
}
