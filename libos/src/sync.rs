//! Locks for data shared with interrupt handlers.
//!
//! [`IrqLock`] disables interrupts on the local CPU for as long as it is held
//! and spins against other CPUs, so an interrupt handler can never deadlock on
//! a lock its own CPU already holds.
//!
//! Lock discipline is checked, not hoped for: with one CPU a held lock can
//! only be wanted again by its own holder (interrupts are off while it is
//! held), so contention is a re-entry — a page fault or a nested call that
//! takes the same lock — and panics naming both places instead of spinning
//! forever. Sleeping while holding an `IrqLock` (which would let another
//! thread find it taken) panics in the scheduler through [`assert_none_held`].

use core::cell::UnsafeCell;
use core::ops::{Deref, DerefMut};
use core::panic::Location;
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};

use crate::arch::cpu;

/// A spin lock that keeps interrupts off while held.
pub struct IrqLock<T> {
    locked: AtomicBool,
    /// Where the holder took it (null when free).
    holder: AtomicPtr<Location<'static>>,
    value: UnsafeCell<T>,
}

// SAFETY: the lock hands out access to `value` to one holder at a time.
unsafe impl<T: Send> Sync for IrqLock<T> {}
// SAFETY: moving the lock moves the value; T: Send makes that sound.
unsafe impl<T: Send> Send for IrqLock<T> {}

/// How many `IrqLock`s this CPU holds (one CPU today).
static HELD: AtomicUsize = AtomicUsize::new(0);
/// Where the most recently taken lock that is still held was taken.
static LAST_TAKEN: AtomicPtr<Location<'static>> = AtomicPtr::new(core::ptr::null_mut());

fn place(p: *mut Location<'static>) -> &'static Location<'static> {
    // SAFETY: only ever set from `Location::caller()`, which is 'static.
    unsafe { p.as_ref() }.unwrap_or(Location::caller())
}

impl<T> IrqLock<T> {
    /// A new unlocked lock.
    pub const fn new(value: T) -> Self {
        Self {
            locked: AtomicBool::new(false),
            holder: AtomicPtr::new(core::ptr::null_mut()),
            value: UnsafeCell::new(value),
        }
    }

    /// Disables interrupts and takes the lock.
    #[track_caller]
    pub fn lock(&self) -> IrqLockGuard<'_, T> {
        let here = Location::caller();
        let irq = cpu::irq_save();
        if self
            .locked
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            // One CPU: the holder is this CPU's own interrupted or calling
            // code, which cannot run again until we give up. A panic (whose
            // path takes no IrqLock) is the only way out; while panicking,
            // take the lock anyway so that the report gets out.
            if !crate::boot::panicking() {
                let holder = place(self.holder.load(Ordering::Relaxed));
                panic!(
                    "lock re-entered: taken at {}:{} while already held (taken at {}:{})",
                    here.file(),
                    here.line(),
                    holder.file(),
                    holder.line()
                );
            }
        }
        let loc = here as *const Location<'static> as *mut Location<'static>;
        self.holder.store(loc, Ordering::Relaxed);
        HELD.fetch_add(1, Ordering::Relaxed);
        let before = LAST_TAKEN.swap(loc, Ordering::Relaxed);
        IrqLockGuard {
            lock: self,
            irq,
            before,
        }
    }
}

/// Panics if this CPU holds any `IrqLock`: called where the current thread
/// is about to sleep (`what` says why), which would leave the lock taken
/// while other threads run.
#[track_caller]
pub fn assert_none_held(what: &str) {
    if HELD.load(Ordering::Relaxed) != 0 && !crate::boot::panicking() {
        let here = Location::caller();
        let held = place(LAST_TAKEN.load(Ordering::Relaxed));
        panic!(
            "{what} at {}:{} while holding the lock taken at {}:{}",
            here.file(),
            here.line(),
            held.file(),
            held.line()
        );
    }
}

/// Where a lock held now was taken, if any (for fault reports).
pub fn held_lock() -> Option<&'static Location<'static>> {
    (HELD.load(Ordering::Relaxed) != 0).then(|| place(LAST_TAKEN.load(Ordering::Relaxed)))
}

/// Holds an [`IrqLock`]; dropping it unlocks and restores the interrupt flag.
pub struct IrqLockGuard<'a, T> {
    lock: &'a IrqLock<T>,
    irq: bool,
    before: *mut Location<'static>,
}

impl<T> Deref for IrqLockGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard proves exclusive ownership of the lock.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> DerefMut for IrqLockGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard proves exclusive ownership of the lock.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for IrqLockGuard<'_, T> {
    fn drop(&mut self) {
        self.lock
            .holder
            .store(core::ptr::null_mut(), Ordering::Relaxed);
        LAST_TAKEN.store(self.before, Ordering::Relaxed);
        HELD.fetch_sub(1, Ordering::Relaxed);
        self.lock.locked.store(false, Ordering::Release);
        cpu::irq_restore(self.irq);
    }
}
