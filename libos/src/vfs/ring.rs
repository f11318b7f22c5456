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
        self.cap.saturating_sub(self.len)
    }

    /// Holds up to `cap` bytes from now on (a pipe's `F_SETPIPE_SZ`; never
    /// below what it holds). The storage grows to it as needed.
    pub fn set_cap(&mut self, cap: usize) {
        self.cap = cap.max(self.len);
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

/// The largest size an unprivileged program may give a pipe (Linux's
/// default `/proc/sys/fs/pipe-max-size`).
pub const PIPE_MAX_SIZE: usize = 1 << 20;

/// A page, the size of one of Linux's pipe buffers.
pub const PAGE: usize = 4096;

/// Linux's anonymous pipe is a ring of page buffers (`pipe_buffer`), and its
/// room is counted in buffers: the part of a write that is not a whole
/// number of pages merges into the last buffer if it fits there, every
/// other part takes a buffer of its own, and the pipe is full when every
/// buffer is taken, however few bytes they hold (`pipe_write`,
/// `pipe_read`, `pipe_set_size` in fs/pipe.c). The bytes themselves are in
/// a [`Ring`] beside it.
#[derive(Debug)]
pub struct Pages {
    /// Bytes not yet read in each buffer, oldest first (none is empty: a
    /// buffer read through is released).
    unread: alloc::collections::VecDeque<usize>,
    /// Bytes already read from the oldest buffer.
    front_read: usize,
    /// How many buffers the pipe may hold (`F_GETPIPE_SZ` / 4096).
    pub slots: usize,
}

impl Default for Pages {
    fn default() -> Self {
        Self::new()
    }
}

impl Pages {
    /// An empty pipe of Linux's default size.
    pub fn new() -> Pages {
        Pages {
            unread: alloc::collections::VecDeque::new(),
            front_read: 0,
            slots: PIPE_SIZE / PAGE,
        }
    }

    /// Whether every buffer is taken (no `POLLOUT`; a write waits).
    pub fn full(&self) -> bool {
        self.unread.len() >= self.slots
    }

    /// The first step of a write of `total` bytes: its odd part (`total`
    /// mod a page) goes into the last buffer if that has room for all of
    /// it; returns how many bytes did (0 or the odd part).
    pub fn merge(&mut self, total: usize) -> usize {
        let chars = self.mergeable(total);
        if let Some(l) = self.unread.back_mut() {
            *l += chars;
        }
        chars
    }

    /// How many bytes [`merge`](Self::merge) would merge (without doing it).
    pub fn mergeable(&self, total: usize) -> usize {
        let chars = total % PAGE;
        let Some(&last) = self.unread.back() else {
            return 0;
        };
        let offset = if self.unread.len() == 1 {
            self.front_read
        } else {
            0
        };
        if chars == 0 || offset + last + chars > PAGE {
            return 0;
        }
        chars
    }

    /// The next step: a buffer of its own for up to a page of the
    /// `remaining` bytes, if one is free; returns how many it takes.
    pub fn take_buffer(&mut self, remaining: usize) -> Option<usize> {
        if remaining == 0 || self.full() {
            return None;
        }
        let n = remaining.min(PAGE);
        self.unread.push_back(n);
        Some(n)
    }

    /// `n` bytes were read from the front: buffers read through are
    /// released.
    pub fn consume(&mut self, mut n: usize) {
        while n > 0 {
            let Some(front) = self.unread.front_mut() else {
                break;
            };
            let m = n.min(*front);
            *front -= m;
            self.front_read += m;
            n -= m;
            if *front == 0 {
                self.unread.pop_front();
                self.front_read = 0;
            }
        }
    }

    /// `F_SETPIPE_SZ`: `arg` rounded up to a power of two of pages (a
    /// page at least); `EINVAL` beyond 2 GiB, `EBUSY` if more buffers are
    /// taken than it holds; `EPERM` to grow past Linux's default
    /// `/proc/sys/fs/pipe-max-size`, as for any program without
    /// `CAP_SYS_RESOURCE` (a partition's holds no capabilities). Returns the
    /// new size in bytes.
    pub fn resize(&mut self, arg: u32) -> Result<usize, Errno> {
        let size = if arg > 1 << 31 {
            return Err(Errno::EINVAL);
        } else if (arg as usize) < PAGE {
            PAGE
        } else {
            (arg as usize).next_power_of_two()
        };
        if size / PAGE > self.slots && size > PIPE_MAX_SIZE {
            return Err(Errno::EPERM);
        }
        if self.unread.len() > size / PAGE {
            return Err(Errno::EBUSY);
        }
        self.slots = size / PAGE;
        Ok(size)
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

    /// Writes `total` bytes without waiting, as a non-blocking pipe write.
    fn write(p: &mut Pages, total: usize) -> usize {
        let mut done = p.merge(total);
        while let Some(n) = p.take_buffer(total - done) {
            done += n;
        }
        done
    }

    #[test]
    fn pipe_room_is_counted_in_page_buffers() {
        let mut p = Pages::new();
        // 16 one-byte writes merge into one buffer...
        for _ in 0..16 {
            assert_eq!(write(&mut p, 1), 1);
        }
        // ...a whole page never merges: 15 more take the other buffers.
        for _ in 0..15 {
            assert_eq!(write(&mut p, PAGE), PAGE);
        }
        assert!(p.full());
        assert_eq!(write(&mut p, 1), 0);
        // Reading part of the first buffer frees none; through it, one.
        p.consume(10);
        assert!(p.full());
        p.consume(6);
        assert!(!p.full());
        // 5000 = 904 + 4096: with one buffer free and the last one full,
        // nothing merges and the first page goes in.
        assert_eq!(write(&mut p, 5000), PAGE);
    }

    #[test]
    fn a_pipe_writes_odd_part_merges_where_it_fits() {
        let mut p = Pages::new();
        assert_eq!(write(&mut p, 1), 1);
        assert_eq!(write(&mut p, 5000), 5000);
        // 1 + 904 in the first buffer, 4096 in the second.
        assert_eq!(p.unread, [905, 4096]);
        // The first buffer, partly read: its room ends at the page.
        p.consume(900);
        assert_eq!(p.merge(4000), 0);
        p.consume(4101);
        assert!(p.unread.is_empty());
        assert_eq!(p.merge(1), 0);
        assert_eq!(write(&mut p, 20 * PAGE), 16 * PAGE);
    }

    #[test]
    fn pipe_size_rounds_to_pages_and_keeps_what_is_buffered() {
        let mut p = Pages::new();
        assert_eq!(p.resize(0), Ok(PAGE));
        assert_eq!(p.resize(5000), Ok(2 * PAGE));
        assert_eq!(write(&mut p, 3 * PAGE), 2 * PAGE);
        assert_eq!(p.resize(PAGE as u32), Err(Errno::EBUSY));
        assert_eq!(p.resize((1u32 << 31) + 1), Err(Errno::EINVAL));
        assert_eq!(p.resize(1 << 31), Err(Errno::EPERM));
        assert_eq!(p.resize((1 << 20) + 1), Err(Errno::EPERM));
        assert_eq!(p.resize(1 << 20), Ok(1 << 20));
        assert_eq!(write(&mut p, 300 * PAGE), 254 * PAGE);
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
