//! Wait queues: threads block until another thread or an interrupt wakes them.

use alloc::collections::VecDeque;
use alloc::sync::Arc;

use super::ThreadRef;
use crate::arch::cpu;
use crate::sync::IrqLock;

/// A FIFO of blocked threads.
pub struct WaitQueue {
    waiters: IrqLock<VecDeque<ThreadRef>>,
}

impl WaitQueue {
    /// An empty queue.
    pub const fn new() -> Self {
        Self {
            waiters: IrqLock::new(VecDeque::new()),
        }
    }

    /// Blocks while `cond()` is true. The condition is checked with
    /// interrupts off, so a wake-up between the check and the block is not lost.
    pub fn wait_while(&self, mut cond: impl FnMut() -> bool) {
        loop {
            let irq = cpu::irq_save();
            if !cond() {
                cpu::irq_restore(irq);
                return;
            }
            self.block_here();
            cpu::irq_restore(irq);
        }
    }

    /// Queues the current thread and blocks it (interrupts off); once it
    /// runs again it is off the queue, whoever woke it (a signal, another
    /// source): a stale entry would take a later `wake_one` meant for a
    /// thread that really waits, and fill the queue with duplicates.
    fn block_here(&self) {
        let me = super::current();
        self.waiters.lock().push_back(me.clone());
        super::block_current();
        self.waiters.lock().retain(|t| !Arc::ptr_eq(t, &me));
    }

    /// [`wait_while`](Self::wait_while), cut short by a signal the thread
    /// will take (`ERESTARTSYS`: restarted or `EINTR`, as the handler says).
    pub fn wait_while_interruptible(
        &self,
        mut cond: impl FnMut() -> bool,
    ) -> Result<(), crate::errno::Errno> {
        loop {
            let irq = cpu::irq_save();
            if !cond() {
                cpu::irq_restore(irq);
                return Ok(());
            }
            if crate::signal::has_interrupting() {
                cpu::irq_restore(irq);
                return Err(crate::errno::Errno::ERESTARTSYS);
            }
            self.block_here();
            cpu::irq_restore(irq);
        }
    }

    /// Blocks while `cond()` is true, but not past `deadline` (monotonic
    /// ns; `None`: no limit); returns whether the condition still held
    /// (the time ran out). As in [`WaitQueue::wait_while`] the condition is
    /// checked with interrupts off; the thread waits on the queue and on a
    /// scheduler timer at once, and leaves both before returning, so a
    /// later wake-up of either finds nothing of it.
    pub fn wait_while_until(&self, deadline: Option<u64>, mut cond: impl FnMut() -> bool) -> bool {
        loop {
            let irq = cpu::irq_save();
            if !cond() {
                cpu::irq_restore(irq);
                return false;
            }
            if deadline.is_some_and(|d| crate::time::monotonic_ns() >= d) {
                cpu::irq_restore(irq);
                return true;
            }
            let me = super::current();
            self.waiters.lock().push_back(me.clone());
            let timer = deadline.map(|d| super::add_timer(d, me.clone()));
            super::block_current();
            if let Some(t) = timer {
                super::cancel_timer(t);
            }
            self.waiters.lock().retain(|t| !Arc::ptr_eq(t, &me));
            drop(me);
            cpu::irq_restore(irq);
        }
    }

    /// [`wait_while_interruptible`](Self::wait_while_interruptible) with a
    /// time limit (`None`: none, exactly that method): `Ok(true)` if the
    /// time ran out with the condition still holding (a socket's
    /// `SO_RCVTIMEO`/`SO_SNDTIMEO`). A signal cuts a limited wait short
    /// with `EINTR`, never restarted (Linux's `sock_intr_errno`).
    pub fn wait_while_interruptible_until(
        &self,
        deadline: Option<u64>,
        mut cond: impl FnMut() -> bool,
    ) -> Result<bool, crate::errno::Errno> {
        let Some(d) = deadline else {
            return self.wait_while_interruptible(cond).map(|()| false);
        };
        loop {
            let irq = cpu::irq_save();
            if !cond() {
                cpu::irq_restore(irq);
                return Ok(false);
            }
            if crate::signal::has_interrupting() {
                cpu::irq_restore(irq);
                return Err(crate::errno::Errno::EINTR);
            }
            if crate::time::monotonic_ns() >= d {
                cpu::irq_restore(irq);
                return Ok(true);
            }
            let me = super::current();
            self.waiters.lock().push_back(me.clone());
            let timer = super::add_timer(d, me.clone());
            super::block_current();
            super::cancel_timer(timer);
            self.waiters.lock().retain(|t| !Arc::ptr_eq(t, &me));
            drop(me);
            cpu::irq_restore(irq);
        }
    }

    /// Wakes the longest waiter; returns whether there was one.
    pub fn wake_one(&self) -> bool {
        let t = self.waiters.lock().pop_front();
        t.map(super::make_ready).is_some()
    }

    /// Wakes the longest waiter and runs it at once, ahead of other ready
    /// threads, the caller right after it ([`super::hand_off`]); returns
    /// whether there was one. Only from a thread that may sleep.
    pub fn hand_off(&self) -> bool {
        let t = self.waiters.lock().pop_front();
        t.map(super::hand_off).is_some()
    }

    /// Wakes every waiter; returns how many.
    pub fn wake_all(&self) -> usize {
        let all = core::mem::take(&mut *self.waiters.lock());
        let n = all.len();
        for t in all {
            super::make_ready(t);
        }
        n
    }
}

impl Default for WaitQueue {
    fn default() -> Self {
        Self::new()
    }
}
