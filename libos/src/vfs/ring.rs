//! The byte ring of a pipe and the counter of an eventfd: their state
//! machines, without locks or waiting (those are in `pipe` and `eventfd`).

use alloc::vec;
use alloc::vec::Vec;

use crate::errno::Errno;

/// A pipe's capacity (Linux's default).
pub const PIPE_SIZE: usize = 64 * 1024;
/// Writes up to this size are atomic (`PIPE_BUF`).
pub const PIPE_BUF: usize = 4096;

/// A bounded FIFO of bytes. Its storage grows with use up to the capacity
/// (many pipes and sockets carry little), and stays once grown.
#[derive(Debug)]
pub struct Ring {
    /// The storage: empty until the first write, then grown as needed.
    buf: Vec<u8>,
    cap: usize,
    head: usize,
    len: usize,
}

/// The first allocation of a ring's storage.
const FIRST_SIZE: usize = 4096;

impl Ring {
    /// An empty ring holding up to `cap` bytes.
    pub fn new(cap: usize) -> Self {
        Self {
            buf: Vec::new(),
            cap,
            head: 0,
            len: 0,
        }
    }

    /// Bytes waiting to be read.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing waits to be read.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Room left for writes.
    pub fn space(&self) -> usize {
        self.cap - self.len
    }

    /// Makes the storage hold at least `need` bytes (at most the
    /// capacity), keeping the bytes in order from its start.
    fn grow(&mut self, need: usize) {
        let size = self.buf.len();
        if need <= size {
            return;
        }
        let new_size = need.max(size * 2).max(FIRST_SIZE).min(self.cap);
        let mut nb = vec![0; new_size];
        let first = self.len.min(size - self.head.min(size));
        nb[..first].copy_from_slice(&self.buf[self.head..self.head + first]);
        nb[first..self.len].copy_from_slice(&self.buf[..self.len - first]);
        self.buf = nb;
        self.head = 0;
    }

    /// Appends as much of `data` as fits; returns how much.
    pub fn push(&mut self, data: &[u8]) -> usize {
        let n = data.len().min(self.space());
        if n == 0 {
            return 0;
        }
        self.grow(self.len + n);
        let size = self.buf.len();
        let tail = (self.head + self.len) % size;
        let first = n.min(size - tail);
        self.buf[tail..tail + first].copy_from_slice(&data[..first]);
        self.buf[..n - first].copy_from_slice(&data[first..n]);
        self.len += n;
        n
    }

    /// Copies up to `out.len()` bytes from the front without taking them
    /// (`MSG_PEEK`); returns how many.
    pub fn peek(&self, out: &mut [u8]) -> usize {
        let n = out.len().min(self.len);
        if n == 0 {
            return 0;
        }
        let first = n.min(self.buf.len() - self.head);
        out[..first].copy_from_slice(&self.buf[self.head..self.head + first]);
        out[first..n].copy_from_slice(&self.buf[..n - first]);
        n
    }

    /// Drops every byte waiting (the storage stays).
    pub fn clear(&mut self) {
        self.head = 0;
        self.len = 0;
    }

    /// Takes up to `out.len()` bytes from the front; returns how many.
    pub fn pop(&mut self, out: &mut [u8]) -> usize {
        let n = self.peek(out);
        if n == 0 {
            return 0;
        }
        self.head = (self.head + n) % self.buf.len();
        self.len -= n;
        if self.len == 0 {
            self.head = 0;
        }
        n
    }
}

/// What a write to a pipe may do now, given the room in the ring.
#[derive(Debug, PartialEq, Eq)]
pub enum WriteStep {
    /// Copy this many bytes in now.
    Copy(usize),
    /// Wait for room (or fail with `EAGAIN` when non-blocking).
    Wait,
}

/// Linux's rule for the next step of a write of `remaining` bytes (of a
/// write that was `total` long): writes of at most [`PIPE_BUF`] go in whole
/// or not at all; longer ones go in pieces.
pub fn write_step(total: usize, remaining: usize, space: usize) -> WriteStep {
    if space == 0 || (total <= PIPE_BUF && space < remaining) {
        WriteStep::Wait
    } else {
        WriteStep::Copy(remaining.min(space))
    }
}

/// The largest value an eventfd counter holds.
pub const EVENTFD_MAX: u64 = u64::MAX - 1;

/// An eventfd's counter.
#[derive(Debug)]
pub struct Counter {
    /// The current value.
    pub value: u64,
    /// `EFD_SEMAPHORE`: reads take 1 rather than everything.
    pub semaphore: bool,
}

impl Counter {
    /// A read: the value it returns, or `None` if it must wait (zero).
    pub fn try_read(&mut self) -> Option<u64> {
        if self.value == 0 {
            return None;
        }
        let v = if self.semaphore { 1 } else { self.value };
        self.value -= v;
        Some(v)
    }

    /// A write of `add`: `Ok(true)` done, `Ok(false)` must wait (it would
    /// overflow), `EINVAL` for the one value never allowed.
    pub fn try_write(&mut self, add: u64) -> Result<bool, Errno> {
        if add == u64::MAX {
            return Err(Errno::EINVAL);
        }
        if EVENTFD_MAX - self.value < add {
            return Ok(false);
        }
        self.value += add;
        Ok(true)
    }

    /// Whether a read would not wait.
    pub fn readable(&self) -> bool {
        self.value > 0
    }

    /// Whether a write of 1 would not wait.
    pub fn writable(&self) -> bool {
        self.value < EVENTFD_MAX
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_wraps_and_keeps_order() {
        let mut r = Ring::new(8);
        assert!(r.is_empty());
        assert_eq!(r.push(b"abcdef"), 6);
        let mut out = [0u8; 4];
        assert_eq!(r.pop(&mut out), 4);
        assert_eq!(&out, b"abcd");
        assert_eq!(r.push(b"ghijklmn"), 6);
        assert_eq!(r.space(), 0);
        assert_eq!(r.push(b"x"), 0);
        let mut all = [0u8; 16];
        assert_eq!(r.pop(&mut all), 8);
        assert_eq!(&all[..8], b"efghijkl");
        assert_eq!(r.pop(&mut all), 0);
        assert_eq!(r.len(), 0);
    }

    #[test]
    fn ring_survives_many_laps() {
        let mut r = Ring::new(7);
        let mut next = 0u8;
        let mut expect = 0u8;
        for round in 0..200 {
            let chunk: Vec<u8> = (0..(round % 5 + 1))
                .map(|_| {
                    next = next.wrapping_add(1);
                    next
                })
                .collect();
            let n = r.push(&chunk);
            // Bytes that did not fit are not written; rewind the generator.
            next = next.wrapping_sub((chunk.len() - n) as u8);
            let mut out = [0u8; 3];
            let m = r.pop(&mut out);
            for b in &out[..m] {
                expect = expect.wrapping_add(1);
                assert_eq!(*b, expect);
            }
        }
    }

    #[test]
    fn ring_grows_in_order_up_to_its_capacity() {
        let mut r = Ring::new(100_000);
        let mut next = 0u32;
        let mut expect = 0u32;
        // Push more than is popped so the storage grows while wrapped.
        for round in 0..400 {
            let chunk: Vec<u8> = (0..(round * 7 % 900 + 1))
                .map(|_| {
                    next += 1;
                    next as u8
                })
                .collect();
            let n = r.push(&chunk);
            next -= (chunk.len() - n) as u32;
            let mut out = vec![0u8; round * 3 % 500];
            let mut peeked = vec![0u8; out.len()];
            let p = r.peek(&mut peeked);
            let m = r.pop(&mut out);
            assert_eq!(p, m);
            assert_eq!(peeked[..p], out[..m]);
            for b in &out[..m] {
                expect += 1;
                assert_eq!(*b, expect as u8);
            }
            assert!(r.buf.len() <= 100_000);
        }
        assert!(!r.is_empty() && r.buf.len() > FIRST_SIZE);
    }

    #[test]
    fn small_writes_are_atomic_and_large_ones_split() {
        assert_eq!(write_step(100, 100, 50), WriteStep::Wait);
        assert_eq!(write_step(100, 100, 100), WriteStep::Copy(100));
        assert_eq!(write_step(10_000, 10_000, 50), WriteStep::Copy(50));
        assert_eq!(write_step(10_000, 10, 0), WriteStep::Wait);
    }

    #[test]
    fn eventfd_counter_and_semaphore() {
        let mut c = Counter {
            value: 0,
            semaphore: false,
        };
        assert_eq!(c.try_read(), None);
        assert_eq!(c.try_write(3), Ok(true));
        assert_eq!(c.try_write(4), Ok(true));
        assert_eq!(c.try_read(), Some(7));
        assert!(!c.readable());
        assert_eq!(c.try_write(u64::MAX), Err(Errno::EINVAL));
        assert_eq!(c.try_write(EVENTFD_MAX), Ok(true));
        assert_eq!(c.try_write(1), Ok(false));
        assert!(!c.writable());
        let mut s = Counter {
            value: 2,
            semaphore: true,
        };
        assert_eq!(s.try_read(), Some(1));
        assert_eq!(s.try_read(), Some(1));
        assert_eq!(s.try_read(), None);
    }
}
