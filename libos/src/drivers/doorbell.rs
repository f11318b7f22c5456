//! Which doorbell to ring. The usual one wakes the device's thread in the
//! host (an ioeventfd: no exit to the VMM) and then a worker, and their
//! answer wakes the vCPU: three thread wake-ups per request, each a few
//! microseconds on an idle host but up to milliseconds on a loaded one,
//! where a `stat` then took 1–4 ms. `QUEUE_NOTIFY_HERE` exits to the VMM,
//! whose vCPU thread answers at once what never waits (an exit per
//! notification: ≈ 30 µs more per request than the usual way when idle,
//! 6–30× less when loaded). So: the usual way
//! while replies come quickly; after [`SLOW_STREAK`] replies in a row
//! slower than [`SLOW_NS`], the vCPU's own thread for the next
//! notifications (256, doubled at each switch up to 8,192 while the host
//! stays slow, back to 256 at the first quick reply), then the usual way
//! again, to look. The window counts notifications, not quick requests: a
//! server in its steady state sends none of those (only socket reads and
//! writes), and a window counted in them never ended — every request went
//! the slow way for good (1–4k HTTP requests/s instead of 12k).

use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

/// A reply this slow says the host is slow to schedule the device.
pub const SLOW_NS: u64 = 250_000;
/// Slow replies in a row before switching.
pub const SLOW_STREAK: u32 = 4;
/// Notifications rung the vCPU's way before looking again: the first
/// time, and at most.
const FIRST_WINDOW: u64 = 256;
const MAX_WINDOW: u64 = 8192;

static STREAK: AtomicU32 = AtomicU32::new(0);
/// Notifications so far, either way.
static RUNG: AtomicU64 = AtomicU64::new(0);
/// `RUNG` at which the vCPU's way ends.
static HERE_UNTIL: AtomicU64 = AtomicU64::new(0);
static WINDOW: AtomicU64 = AtomicU64::new(FIRST_WINDOW);
/// The device serves the second doorbell (Astraea's VMM; not QEMU).
static OFFERED: AtomicBool = AtomicBool::new(false);

/// Whether the device offered the second doorbell.
pub fn offered(yes: bool) {
    OFFERED.store(yes, Ordering::Relaxed);
}

/// Whether a request of type `ty` is answered at once by any server
/// (walks, attributes, clunks, locks, `statfs`, `readlink`).
pub fn quick(ty: u8) -> bool {
    use astraea_9p::MsgType as M;
    [
        M::Twalk,
        M::Tgetattr,
        M::Tclunk,
        M::Tstatfs,
        M::Treadlink,
        M::Tlock,
        M::Tgetlock,
        M::Txattrwalk,
    ]
    .iter()
    .any(|m| *m as u8 == ty)
}

/// Whether a request of type `ty` is answered at once: a [`quick`] one, or
/// a read or write of a file of the namespace (`file_io`: made inside
/// [`file_io`]; a socket's are not: they wait for the network). A program
/// that only reads and writes files (a database's log, small reads of a
/// file it wrote) must find the host slow too: its requests took ≈ 1 ms
/// each on a loaded host and never switched.
pub fn quick_here(ty: u8, file_io: bool) -> bool {
    use astraea_9p::MsgType as M;
    quick(ty) || (file_io && (ty == M::Tread as u8 || ty == M::Twrite as u8))
}

/// Runs `f`, the current thread's read or write of a file of the
/// namespace (never a socket's), with its requests counted by
/// [`quick_here`].
#[cfg(target_os = "none")]
pub fn file_io<R>(f: impl FnOnce() -> R) -> R {
    let me = crate::sched::current();
    me.set_file_io(true);
    let r = f();
    me.set_file_io(false);
    r
}

/// Whether notifications go the vCPU's way now.
pub fn here() -> bool {
    OFFERED.load(Ordering::Relaxed)
        && RUNG.load(Ordering::Relaxed) < HERE_UNTIL.load(Ordering::Relaxed)
}

/// A notification is being rung (either way).
pub fn ringing() {
    RUNG.fetch_add(1, Ordering::Relaxed);
}

/// A waiter of a quick request got its reply `ns` after notifying (the
/// usual way or not).
pub fn waited(ns: u64, was_here: bool) {
    if was_here {
        return;
    }
    let n = RUNG.load(Ordering::Relaxed);
    if ns < SLOW_NS {
        STREAK.store(0, Ordering::Relaxed);
        WINDOW.store(FIRST_WINDOW, Ordering::Relaxed);
    } else if STREAK.fetch_add(1, Ordering::Relaxed) + 1 >= SLOW_STREAK {
        STREAK.store(0, Ordering::Relaxed);
        let w = WINDOW.load(Ordering::Relaxed);
        WINDOW.store((w * 2).min(MAX_WINDOW), Ordering::Relaxed);
        HERE_UNTIL.store(n + w, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super as doorbell;

    /// The vCPU's way is taken after four slow quick replies and given up
    /// after its window of notifications, even when no quick request comes
    /// after the switch (a server whose requests are all socket I/O).
    #[test]
    fn the_vcpus_way_ends_after_its_window_of_notifications() {
        doorbell::offered(true);
        assert!(!doorbell::here());
        for _ in 0..doorbell::SLOW_STREAK {
            doorbell::ringing();
            doorbell::waited(doorbell::SLOW_NS, false);
        }
        assert!(doorbell::here(), "four slow replies switch");
        let mut rung = 0;
        while doorbell::here() {
            doorbell::ringing();
            rung += 1;
            assert!(rung <= 256, "the first window is 256 notifications");
        }
        assert_eq!(rung, 256);
        // A quick reply the usual way keeps it the usual way.
        doorbell::ringing();
        doorbell::waited(1_000, false);
        assert!(!doorbell::here());
    }
}
