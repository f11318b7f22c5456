//! eventfd: a 64-bit counter that reads take and writes add to.

use core::sync::atomic::AtomicU32;

use super::poll_bits::{POLLIN, POLLOUT};
use super::ring::Counter;
use super::{Wakes, readiness_changed};
use crate::errno::Errno;
use crate::sched::WaitQueue;
use crate::sync::IrqLock;

/// An eventfd.
pub struct EventFd {
    counter: IrqLock<Counter>,
    readable: WaitQueue,
    writable: WaitQueue,
    /// Wake-ups of its queue as Linux keys them (epoll's edges): writes
    /// wake with `EPOLLIN`, reads with `EPOLLOUT`.
    wakes: Wakes,
    /// `O_*` status flags.
    pub flags: AtomicU32,
}

impl EventFd {
    /// A counter starting at `initval`; `semaphore` for `EFD_SEMAPHORE`.
    pub fn new(initval: u64, semaphore: bool, flags: u32) -> Self {
        Self {
            counter: IrqLock::new(Counter {
                value: initval,
                semaphore,
            }),
            readable: WaitQueue::new(),
            writable: WaitQueue::new(),
            wakes: Wakes::new(),
            flags: AtomicU32::new(flags | 2),
        }
    }

    /// Takes the value (or 1 in semaphore mode), waiting for a non-zero
    /// counter unless `nonblock`.
    pub fn read(&self, nonblock: bool) -> Result<u64, Errno> {
        loop {
            if let Some(v) = self.counter.lock().try_read() {
                self.wakes.output();
                self.writable.wake_all();
                readiness_changed();
                return Ok(v);
            }
            if nonblock {
                return Err(Errno::EAGAIN);
            }
            self.readable
                .wait_while_interruptible(|| !self.counter.lock().readable())?;
        }
    }

    /// Adds `v`, waiting for room unless `nonblock`.
    pub fn write(&self, v: u64, nonblock: bool) -> Result<(), Errno> {
        loop {
            if self.counter.lock().try_write(v)? {
                self.wakes.input();
                self.readable.wake_all();
                readiness_changed();
                return Ok(());
            }
            if nonblock {
                return Err(Errno::EAGAIN);
            }
            // A signal interrupts the wait (restarted under SA_RESTART).
            self.writable.wait_while_interruptible(|| {
                let c = self.counter.lock();
                super::ring::EVENTFD_MAX - c.value < v
            })?;
        }
    }

    /// Its queue's wake-ups (epoll's edges).
    pub fn wakes(&self) -> [u64; 3] {
        self.wakes.get()
    }

    /// `poll` events.
    pub fn poll(&self) -> u16 {
        let c = self.counter.lock();
        let mut ev = 0;
        // Linux reports neither POLLRDNORM nor POLLWRNORM for eventfds.
        if c.readable() {
            ev |= POLLIN;
        }
        if c.writable() {
            ev |= POLLOUT;
        }
        ev
    }
}

impl crate::fd::FileLike for EventFd {
    fn taken_before_copy(&self) -> bool {
        true
    }

    fn read(&self, max: usize, nonblock: bool) -> Result<alloc::vec::Vec<u8>, Errno> {
        if max < 8 {
            return Err(Errno::EINVAL);
        }
        Ok(EventFd::read(self, nonblock)?.to_le_bytes().to_vec())
    }

    fn write(&self, data: &[u8], nonblock: bool) -> Result<usize, Errno> {
        // Exactly the counter's eight bytes (Linux's `eventfd_write`; a
        // read takes eight from a larger buffer).
        let v: [u8; 8] = data.try_into().map_err(|_| Errno::EINVAL)?;
        EventFd::write(self, u64::from_le_bytes(v), nonblock)?;
        Ok(8)
    }

    fn poll(&self) -> u16 {
        EventFd::poll(self)
    }

    fn read_now(&self, max: usize) -> Option<Result<alloc::vec::Vec<u8>, Errno>> {
        Some(crate::fd::FileLike::read(self, max, true))
    }

    fn write_now(&self, data: &[u8]) -> Option<Result<usize, Errno>> {
        Some(crate::fd::FileLike::write(self, data, true))
    }

    fn wakes(&self) -> [u64; 3] {
        EventFd::wakes(self)
    }

    fn flags(&self) -> &AtomicU32 {
        &self.flags
    }

    fn mode(&self) -> u32 {
        0o600
    }

    fn own_inode(&self) -> bool {
        true
    }

    fn proc_link(&self) -> alloc::string::String {
        alloc::string::String::from("anon_inode:[eventfd]")
    }

    fn as_any(&self) -> &dyn core::any::Any {
        self
    }
}
