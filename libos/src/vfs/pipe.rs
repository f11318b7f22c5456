//! Pipes: a ring of bytes between a read end and a write end. Readers wait
//! for data or for the last writer to go; writers wait for room, and get
//! `EPIPE` once no reader is left. An anonymous pipe counts its room as
//! Linux does, in page buffers ([`Pages`]); a Unix stream socket's
//! direction in bytes, as its socket buffer.

use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;
use core::sync::atomic::AtomicU32;

use super::gather::Gather;
use super::poll_bits::{POLLERR, POLLHUP, POLLIN, POLLOUT, POLLRDNORM, POLLWRNORM};
use super::ring::{PAGE, PIPE_SIZE, Pages, Ring};
use super::{Wakes, readiness_changed};
use crate::errno::Errno;
use crate::sched::WaitQueue;
use crate::sync::IrqLock;

struct State {
    ring: Ring,
    readers: usize,
    writers: usize,
    /// Reading was shut down (a socket pair's `shutdown(SHUT_RD)`): a
    /// reader finding the ring empty gets the end, whatever writers remain.
    rd_shut: bool,
    /// Writing was shut down (a socket pair's `shutdown(SHUT_WR)`): the
    /// reader gets the end once the ring is empty, and writers, a writer
    /// already waiting for room included, get `EPIPE`.
    wr_shut: bool,
    /// The last reader went with bytes unread (a socket pair end closed
    /// with data pending): the writer's end gets `ECONNRESET` once, as
    /// Linux's `unix_release_sock` sets its peer's `sk_err`.
    reset: bool,
    /// A Unix stream socket's direction (`None` for a pipe).
    skbs: Option<Skbs>,
    /// An anonymous pipe's page buffers (`None` for a socket's direction).
    pages: Option<Pages>,
}

/// A Unix stream socket's direction as Linux keeps it: the skbs a write
/// makes (`net::charge::stream_skb`), each charged its truesize against the
/// sender's send buffer until it is read through. A write goes on while
/// the charge is below the buffer; the sender is writable (`POLLOUT`)
/// while the charge, counted from 1, is at most a quarter of it
/// (`unix_writable`), and reading an skb through then wakes it
/// (`unix_write_space`): an edge-triggered `EPOLLOUT` fires.
#[derive(Debug)]
struct Skbs {
    /// Bytes not yet read and truesize of each skb, oldest first.
    queue: alloc::collections::VecDeque<(usize, usize)>,
    /// What the queued skbs charge the sender (`sk_wmem_alloc`).
    wmem: usize,
    /// The sender's send buffer (`SO_SNDBUF`, doubled as Linux keeps it).
    sndbuf: usize,
}

impl Skbs {
    fn writable(&self) -> bool {
        (self.wmem + 1) * 4 <= self.sndbuf
    }

    /// `n` bytes were read from the front; whether an skb was read through.
    fn consume(&mut self, mut n: usize) -> bool {
        let mut freed = false;
        while n > 0 {
            let Some((left, truesize)) = self.queue.front_mut() else {
                break;
            };
            let m = n.min(*left);
            *left -= m;
            n -= m;
            if *left == 0 {
                self.wmem -= *truesize;
                self.queue.pop_front();
                freed = true;
            }
        }
        freed
    }
}

/// Where one locked step of a write stopped.
enum Step {
    /// At the end of the bytes staged (a hole, or the window's end).
    Staged,
    /// For want of room (or with everything written).
    Full,
}

/// The shared part of a pipe.
pub struct Pipe {
    state: IrqLock<State>,
    /// Readers waiting for data.
    readable: WaitQueue,
    /// Writers waiting for room.
    writable: WaitQueue,
    /// Wake-ups of the readers' queue, as Linux keys them (epoll).
    rd_wakes: Wakes,
    /// Wake-ups of the writers' queue.
    wr_wakes: Wakes,
}

/// The read end (one open file description; `dup` shares it).
pub struct ReadEnd {
    pipe: Arc<Pipe>,
    /// `O_*` status flags.
    pub flags: AtomicU32,
}

/// The write end.
pub struct WriteEnd {
    pipe: Arc<Pipe>,
    /// `O_*` status flags.
    pub flags: AtomicU32,
}

/// The bytes a socket's direction may hold with a send buffer of
/// `sndbuf`: its skbs' charge, which bounds their bytes, passes the buffer
/// by one skb at most (36,544 bytes).
fn socket_ring_cap(sndbuf: usize) -> usize {
    sndbuf + (64 << 10)
}

/// A new pipe; both ends get the status flags `flags` (`O_NONBLOCK`).
pub fn new(flags: u32) -> (ReadEnd, WriteEnd) {
    build(flags, PIPE_SIZE, false)
}

/// One direction of a Unix stream socket pair: up to `cap` bytes (as big
/// as Linux's socket buffer; the ring grows as it fills), writers woken
/// as Linux's sockets wake them.
pub fn socket_direction(cap: usize) -> (ReadEnd, WriteEnd) {
    build(0, cap, true)
}

fn build(flags: u32, cap: usize, socket: bool) -> (ReadEnd, WriteEnd) {
    let pipe = Arc::new(Pipe {
        state: IrqLock::new(State {
            ring: Ring::new(if socket { socket_ring_cap(cap) } else { cap }),
            readers: 1,
            writers: 1,
            rd_shut: false,
            wr_shut: false,
            reset: false,
            skbs: socket.then(|| Skbs {
                queue: alloc::collections::VecDeque::new(),
                wmem: 0,
                sndbuf: cap,
            }),
            pages: (!socket).then(Pages::new),
        }),
        readable: WaitQueue::new(),
        writable: WaitQueue::new(),
        rd_wakes: Wakes::new(),
        wr_wakes: Wakes::new(),
    });
    (
        ReadEnd {
            pipe: pipe.clone(),
            flags: AtomicU32::new(flags),
        },
        WriteEnd {
            pipe,
            flags: AtomicU32::new(flags | 1),
        },
    )
}

impl Pipe {
    /// `F_GETPIPE_SZ`: the capacity in bytes (a socket's direction has none).
    fn size(&self) -> Option<usize> {
        self.state.lock().pages.as_ref().map(|pg| pg.slots * PAGE)
    }

    /// `F_SETPIPE_SZ`; returns the new size.
    fn set_size(&self, arg: u32) -> Result<usize, Errno> {
        // Checked and rounded as Linux's `pipe_set_size` (see `Pages`).
        let mut guard = self.state.lock();
        let st = &mut *guard;
        let Some(pg) = st.pages.as_mut() else {
            return Err(Errno::EBADF);
        };
        let before = pg.slots;
        let size = pg.resize(arg)?;
        let grew = pg.slots > before;
        st.ring.set_cap(size);
        drop(guard);
        if grew {
            self.writable.wake_all();
            readiness_changed();
        }
        Ok(size)
    }
}

impl ReadEnd {
    /// Reads up to `max` bytes: waits for data unless `nonblock`; an empty
    /// vector means end of file (no writer left).
    pub fn read(&self, max: usize, nonblock: bool) -> Result<Vec<u8>, Errno> {
        self.receive(max, nonblock, false)
    }

    /// [`read`](Self::read), or with `peek` a copy of what is there, left
    /// in place (a socket pair's `MSG_PEEK`).
    pub fn receive(&self, max: usize, nonblock: bool, peek: bool) -> Result<Vec<u8>, Errno> {
        self.receive_until(max, nonblock, peek, None)
    }

    /// [`receive`](Self::receive), waiting no later than `deadline`
    /// (monotonic ns; a socket's `SO_RCVTIMEO`): `EAGAIN` then, and `EINTR`,
    /// never restarted, when a signal ends the wait (Linux's
    /// `sock_intr_errno`).
    pub fn receive_until(
        &self,
        max: usize,
        nonblock: bool,
        peek: bool,
        deadline: Option<u64>,
    ) -> Result<Vec<u8>, Errno> {
        if max == 0 {
            return Ok(Vec::new());
        }
        let p = &*self.pipe;
        // Linux wakes the next reader only after having waited itself.
        let mut waited = false;
        loop {
            {
                let mut st = p.state.lock();
                if !st.ring.is_empty() && peek {
                    let mut out = vec![0u8; max.min(st.ring.len())];
                    let n = st.ring.peek(&mut out);
                    out.truncate(n);
                    return Ok(out);
                }
                if !st.ring.is_empty() {
                    let was_full = match &st.pages {
                        Some(pg) => pg.full(),
                        None => st.ring.space() == 0,
                    };
                    let mut out = vec![0u8; max.min(st.ring.len())];
                    let n = st.ring.pop(&mut out);
                    out.truncate(n);
                    if let Some(pg) = st.pages.as_mut() {
                        pg.consume(n);
                    }
                    let left = !st.ring.is_empty();
                    let freed = st.skbs.as_mut().is_some_and(|q| q.consume(n));
                    let writable = st.skbs.as_ref().is_some_and(Skbs::writable);
                    drop(st);
                    if was_full || (freed && writable) {
                        p.wr_wakes.output();
                    }
                    if waited && left {
                        p.rd_wakes.input();
                    }
                    p.writable.wake_all();
                    readiness_changed();
                    return Ok(out);
                }
                if st.writers == 0 || st.rd_shut || st.wr_shut {
                    return Ok(Vec::new());
                }
                if nonblock {
                    return Err(Errno::EAGAIN);
                }
            }
            let timed_out = p.readable.wait_while_interruptible_until(deadline, || {
                let st = p.state.lock();
                st.ring.is_empty() && st.writers > 0 && !st.rd_shut && !st.wr_shut
            })?;
            if timed_out {
                return Err(Errno::EAGAIN);
            }
            waited = true;
        }
    }

    /// Shuts reading down: readers waiting on an empty ring get the end
    /// now, and later ones once the ring is empty.
    pub fn shut_down(&self) {
        self.pipe.state.lock().rd_shut = true;
        // Both ends' state changed: an unkeyed wake-up (Linux's
        // `sk_state_change`), which edge-triggered registrations see.
        self.pipe.rd_wakes.all();
        self.pipe.wr_wakes.all();
        self.pipe.readable.wake_all();
        self.pipe.writable.wake_all();
        readiness_changed();
    }

    /// Reports `ECONNRESET` to the writer's end as if the last reader had
    /// gone with bytes unread (a Unix connection nobody accepted).
    pub fn mark_reset(&self) {
        self.pipe.state.lock().reset = true;
    }

    /// `F_GETPIPE_SZ`.
    pub fn size(&self) -> Option<usize> {
        self.pipe.size()
    }

    /// `F_SETPIPE_SZ`.
    pub fn set_size(&self, arg: u32) -> Result<usize, Errno> {
        self.pipe.set_size(arg)
    }

    /// Bytes ready to read (`FIONREAD`).
    pub fn available(&self) -> usize {
        self.pipe.state.lock().ring.len()
    }

    /// The readers' queue's wake-ups (epoll's edges).
    pub fn wakes(&self) -> [u64; 3] {
        self.pipe.rd_wakes.get()
    }

    /// `poll` events.
    pub fn poll(&self) -> u16 {
        let st = self.pipe.state.lock();
        let mut ev = 0;
        if !st.ring.is_empty() {
            ev |= POLLIN | POLLRDNORM;
        }
        if st.writers == 0 || st.wr_shut {
            ev |= POLLHUP;
        }
        ev
    }
}

impl Drop for ReadEnd {
    fn drop(&mut self) {
        let hangup = {
            let mut st = self.pipe.state.lock();
            st.readers -= 1;
            if st.readers == 0 && !st.ring.is_empty() {
                st.reset = true;
            }
            // A socket's receive queue goes with its last reader (Linux's
            // `unix_release_sock` purges it): the sender's charge is freed.
            if st.readers == 0
                && let Some(q) = st.skbs.as_mut()
            {
                q.queue.clear();
                q.wmem = 0;
                st.ring.clear();
            }
            (st.readers == 0) != (st.writers == 0)
        };
        if hangup {
            self.pipe.rd_wakes.all();
            self.pipe.wr_wakes.all();
        }
        self.pipe.writable.wake_all();
        readiness_changed();
    }
}

/// How a write waits for room: not at all (`O_NONBLOCK`), or until a
/// deadline (monotonic ns; `None`: for as long as it takes).
#[derive(Clone, Copy)]
enum Wait {
    Never,
    Until(Option<u64>),
}

impl Wait {
    fn new(nonblock: bool, deadline: Option<u64>) -> Wait {
        if nonblock {
            Wait::Never
        } else {
            Wait::Until(deadline)
        }
    }
}

impl WriteEnd {
    /// Writes `data` (kernel bytes): waits for room unless `nonblock`.
    /// Returns how much went in; `EPIPE` if no reader is left, `EAGAIN` if
    /// nothing could go in without waiting.
    pub fn write(&self, data: &[u8], nonblock: bool) -> Result<usize, Errno> {
        self.write_from(&mut Gather::kernel(data), nonblock)
    }

    /// Writes `src` a buffer at a time, as Linux does (see [`Gather`]): a
    /// hole in the program's memory ends the write with the buffers before
    /// it, `EFAULT` if none.
    pub fn write_from(&self, src: &mut Gather<'_>, nonblock: bool) -> Result<usize, Errno> {
        self.write_from_until(src, nonblock, None)
    }

    /// [`write_from`](Self::write_from), waiting for room no later than
    /// `deadline` (monotonic ns; a socket's `SO_SNDTIMEO`): then what went
    /// in, or `EAGAIN`.
    pub fn write_from_until(
        &self,
        src: &mut Gather<'_>,
        nonblock: bool,
        deadline: Option<u64>,
    ) -> Result<usize, Errno> {
        if self.pipe.state.lock().pages.is_some() {
            self.write_pages(src, nonblock)
        } else {
            self.write_skbs(src, nonblock, deadline)
        }
    }

    /// An anonymous pipe's write, as Linux's `pipe_write`: nothing for an
    /// empty write (readers or not); the odd part merged into the last
    /// buffer if it fits; then a buffer per page while any is free, each
    /// copied whole before it is added (a page that meets a hole is not).
    fn write_pages(&self, src: &mut Gather<'_>, nonblock: bool) -> Result<usize, Errno> {
        let p = &*self.pipe;
        let total = src.len();
        if total == 0 {
            return Ok(0);
        }
        let avail = src.stage(0);
        let merged = {
            let mut guard = p.state.lock();
            let st = &mut *guard;
            if st.readers == 0 {
                return Err(Errno::EPIPE);
            }
            let Some(pg) = st.pages.as_mut() else {
                return Err(Errno::EINVAL);
            };
            if pg.mergeable(total) > avail {
                return src.stopped(0);
            }
            let merged = pg.merge(total);
            st.ring.push(src.bytes(0, merged));
            merged
        };
        if merged > 0 {
            p.rd_wakes.input();
            p.readable.wake_all();
            readiness_changed();
            if merged == total {
                return Ok(merged);
            }
        }
        self.write_steps(
            src,
            Wait::new(nonblock, None),
            merged,
            |st, src, done, avail| {
                if st.readers == 0 {
                    return Err(Errno::EPIPE);
                }
                let total = src.len();
                let mut step = Step::Full;
                if let Some(pg) = st.pages.as_mut() {
                    while *done < total && !pg.full() {
                        let n = (total - *done).min(PAGE);
                        if *done + n > avail {
                            step = Step::Staged;
                            break;
                        }
                        pg.take_buffer(n);
                        st.ring.push(src.bytes(*done, n));
                        *done += n;
                    }
                }
                Ok(step)
            },
            |st| st.readers > 0 && st.pages.as_ref().is_some_and(Pages::full),
            |st| !st.pages.as_ref().is_some_and(Pages::full),
        )
    }

    /// A Unix stream socket's write, as Linux's `unix_stream_sendmsg`:
    /// `EPIPE` once shut down for sending, then skb by skb while the
    /// sender's charge is below its send buffer (`EAGAIN` or a wait
    /// otherwise); an skb that meets a hole in the program's memory is
    /// dropped and ends the write.
    fn write_skbs(
        &self,
        src: &mut Gather<'_>,
        nonblock: bool,
        deadline: Option<u64>,
    ) -> Result<usize, Errno> {
        self.write_steps(
            src,
            Wait::new(nonblock, deadline),
            0,
            |st, src, done, avail| {
                // Shut down for sending: by this end, or by the peer's close
                // or `SHUT_RD` — before the buffer is looked at, and for a
                // write of nothing too.
                if st.wr_shut || st.readers == 0 || st.rd_shut {
                    return Err(Errno::EPIPE);
                }
                let total = src.len();
                if let Some(q) = st.skbs.as_mut() {
                    while *done < total && q.wmem < q.sndbuf {
                        let (n, truesize) = crate::net::charge::stream_skb(total - *done, q.sndbuf);
                        // Never drop bytes: the ring holds what the charge
                        // admits (`socket_ring_cap`), so this only guards.
                        if st.ring.space() < n {
                            break;
                        }
                        if *done + n > avail {
                            return Ok(Step::Staged);
                        }
                        st.ring.push(src.bytes(*done, n));
                        q.queue.push_back((n, truesize));
                        q.wmem += truesize;
                        *done += n;
                    }
                }
                Ok(Step::Full)
            },
            |st| {
                st.readers > 0
                    && !st.rd_shut
                    && !st.wr_shut
                    && st.skbs.as_ref().is_some_and(|q| q.wmem >= q.sndbuf)
            },
            |st| st.skbs.as_ref().is_some_and(Skbs::writable),
        )
    }

    /// The loop both kinds of write share: stage the program's bytes
    /// (outside the lock), let `step` move what fits under the lock, wake
    /// readers, and wait for room (`no_room`) unless non-blocking; a hole
    /// ends the write with what went before it. `room` says whether the
    /// next writer may go on once this one is done.
    fn write_steps(
        &self,
        src: &mut Gather<'_>,
        wait: Wait,
        mut done: usize,
        step: impl Fn(&mut State, &Gather<'_>, &mut usize, usize) -> Result<Step, Errno>,
        no_room: impl Fn(&State) -> bool,
        room: impl Fn(&State) -> bool,
    ) -> Result<usize, Errno> {
        let p = &*self.pipe;
        let total = src.len();
        let mut waited = false;
        loop {
            let avail = src.stage(done);
            let before = done;
            let r = step(&mut p.state.lock(), src, &mut done, avail);
            if done > before {
                p.rd_wakes.input();
                p.readable.wake_all();
                readiness_changed();
            }
            match r {
                Err(e) => return if done > 0 { Ok(done) } else { Err(e) },
                // The end of what is staged: a hole, or stage more.
                Ok(Step::Staged) if src.fault().is_some() => return src.stopped(done),
                Ok(Step::Staged) if done < total => continue,
                _ => {}
            }
            if done == total {
                if waited && room(&p.state.lock()) {
                    p.wr_wakes.output();
                }
                return Ok(done);
            }
            let Wait::Until(deadline) = wait else {
                return if done > 0 {
                    Ok(done)
                } else {
                    Err(Errno::EAGAIN)
                };
            };
            // A signal or the deadline ends the wait: the bytes written so
            // far are the result, or, with none, the call is interrupted
            // (`EAGAIN` at the deadline).
            let r = p
                .writable
                .wait_while_interruptible_until(deadline, || no_room(&p.state.lock()));
            let r = match r {
                Ok(true) => Err(Errno::EAGAIN),
                Ok(false) => Ok(()),
                Err(e) => Err(e),
            };
            if let Err(e) = r {
                return if done > 0 { Ok(done) } else { Err(e) };
            }
            waited = true;
        }
    }

    /// A socket's send buffer (`SO_SNDBUF` as Linux keeps it, doubled):
    /// a larger one wakes writers waiting for room.
    pub fn set_sndbuf(&self, sndbuf: usize) {
        let grew = {
            let mut st = self.pipe.state.lock();
            match st.skbs.as_mut() {
                Some(q) if q.sndbuf != sndbuf => {
                    let grew = sndbuf > q.sndbuf;
                    q.sndbuf = sndbuf;
                    // Room for every byte the charge admits (see `build`).
                    let cap = socket_ring_cap(sndbuf);
                    if cap > st.ring.len() + st.ring.space() {
                        st.ring.set_cap(cap);
                    }
                    grew
                }
                _ => false,
            }
        };
        if grew {
            self.pipe.writable.wake_all();
            readiness_changed();
        }
    }

    /// What a socket's queued skbs charge its sender (`SIOCOUTQ`).
    pub fn charged(&self) -> usize {
        self.pipe.state.lock().skbs.as_ref().map_or(0, |q| q.wmem)
    }

    /// The writers' queue's wake-ups (epoll's edges).
    pub fn wakes(&self) -> [u64; 3] {
        self.pipe.wr_wakes.get()
    }

    /// Shuts writing down for every holder of this pipe's write side: the
    /// reader sees the end after what is buffered, and a writer waiting
    /// for room wakes to `EPIPE` (or its partial count).
    pub fn shut_down(&self) {
        self.pipe.state.lock().wr_shut = true;
        self.pipe.rd_wakes.all();
        self.pipe.wr_wakes.all();
        self.pipe.readable.wake_all();
        self.pipe.writable.wake_all();
        readiness_changed();
    }

    /// Whether the reading side was shut down (a socket pair's peer's
    /// `shutdown(SHUT_RD)`): writes fail with `EPIPE`.
    pub fn reader_shut(&self) -> bool {
        self.pipe.state.lock().rd_shut
    }

    /// Whether the last reader went with bytes unread, not yet reported.
    pub fn reset_pending(&self) -> bool {
        self.pipe.state.lock().reset
    }

    /// Takes the report of [`reset_pending`](Self::reset_pending).
    pub fn take_reset(&self) -> bool {
        core::mem::take(&mut self.pipe.state.lock().reset)
    }

    /// `F_GETPIPE_SZ`.
    pub fn size(&self) -> Option<usize> {
        self.pipe.size()
    }

    /// `F_SETPIPE_SZ`.
    pub fn set_size(&self, arg: u32) -> Result<usize, Errno> {
        self.pipe.set_size(arg)
    }

    /// Bytes in the pipe (`FIONREAD` on the write end, as Linux's).
    pub fn buffered(&self) -> usize {
        self.pipe.state.lock().ring.len()
    }

    /// `poll` events: room to write, and an error once no reader is left.
    pub fn poll(&self) -> u16 {
        let st = self.pipe.state.lock();
        let mut ev = 0;
        let room = match (&st.pages, &st.skbs) {
            (Some(pg), _) => !pg.full(),
            (None, Some(q)) => q.writable(),
            (None, None) => st.ring.space() > 0,
        };
        if room {
            ev |= POLLOUT | POLLWRNORM;
        }
        if st.readers == 0 {
            ev |= POLLERR;
        }
        ev
    }
}

impl Drop for WriteEnd {
    fn drop(&mut self) {
        let hangup = {
            let mut st = self.pipe.state.lock();
            st.writers -= 1;
            (st.readers == 0) != (st.writers == 0)
        };
        if hangup {
            self.pipe.rd_wakes.all();
            self.pipe.wr_wakes.all();
        }
        self.pipe.readable.wake_all();
        readiness_changed();
    }
}
