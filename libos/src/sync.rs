//! Locks for data shared with interrupt handlers.
//!
//! [`IrqLock`] disables interrupts on the local CPU for as long as it is held
//! and spins against other CPUs, so an interrupt handler can never deadlock on
//! a lock its own CPU already holds.

use core::cell::UnsafeCell;
use core::ops::{Deref, DerefMut};
use core::sync::atomic::{AtomicBool, Ordering};

use crate::arch::cpu;

/// A spin lock that keeps interrupts off while held.
pub struct IrqLock<T> {
    locked: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: the lock hands out access to `value` to one holder at a time.
unsafe impl<T: Send> Sync for IrqLock<T> {}
// SAFETY: moving the lock moves the value; T: Send makes that sound.
unsafe impl<T: Send> Send for IrqLock<T> {}

impl<T> IrqLock<T> {
    /// A new unlocked lock.
    pub const fn new(value: T) -> Self {
        Self {
            locked: AtomicBool::new(false),
            value: UnsafeCell::new(value),
        }
    }

    /// Disables interrupts and takes the lock.
    pub fn lock(&self) -> IrqLockGuard<'_, T> {
        let irq = cpu::irq_save();
        while self
            .locked
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            while self.locked.load(Ordering::Relaxed) {
                cpu::pause();
            }
        }
        IrqLockGuard { lock: self, irq }
    }
}

/// Holds an [`IrqLock`]; dropping it unlocks and restores the interrupt flag.
pub struct IrqLockGuard<'a, T> {
    lock: &'a IrqLock<T>,
    irq: bool,
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
        self.lock.locked.store(false, Ordering::Release);
        cpu::irq_restore(self.irq);
    }
}
