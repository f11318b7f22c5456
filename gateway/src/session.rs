//! One 9P connection: its fid table, the tags in flight, `Tflush` and the
//! dispatch of requests to the worker pool.
//!
//! Every request is registered under its tag until its reply has been
//! handed to the transport. A `Tflush` of a registered tag cancels the old
//! request's token and is queued behind it: the old reply (a normal answer,
//! or `Rlerror(EINTR)` if the request was cancelled before doing anything)
//! is always delivered first, then the `Rflush`. So each `submit` gets
//! exactly one reply and flush(5)'s ordering holds.
//!
//! A `/net` request that must wait for the network holds no worker: it is
//! parked on its connection with a [`Completion`], and its reply goes
//! through the same [`SessionInner::complete`] when the poll thread or its
//! cancellation resumes it. Lock order: the tag lock is never held while
//! cancelling, parking or delivering (see `net` for the connection locks).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use astraea_9p::{Header, MsgType, NOTAG, RMessage, TMessage};

use crate::Gateway;
use crate::console::{Cancel, lock};
use crate::error::Errno;
use crate::namespace::Node;
use crate::net::{ConvFile, Finish, Io, Resume, Wait};
use crate::ops::{Handled, Opened};

/// The callback that receives one complete R-message frame.
pub type Reply = Box<dyn FnOnce(Vec<u8>) + Send>;

/// How long a new request waits for a tag whose reply is being delivered.
const TAG_REUSE_WAIT: Duration = Duration::from_secs(1);
/// How long `Tversion` waits for the requests it aborted.
const VERSION_WAIT: Duration = Duration::from_secs(10);

/// One 9P connection. Dropping it cancels its outstanding requests (their
/// replies are still delivered) and releases its fids.
pub struct Session {
    pub(crate) inner: Arc<SessionInner>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("msize", &self.msize())
            .finish_non_exhaustive()
    }
}

/// A fid: what it names and, once opened, its open file.
pub(crate) struct Fid {
    pub(crate) node: Mutex<Node>,
    pub(crate) open: Mutex<Option<Arc<Opened>>>,
}

impl Fid {
    pub(crate) fn new(node: Node) -> Fid {
        Fid {
            node: Mutex::new(node),
            open: Mutex::new(None),
        }
    }

    pub(crate) fn node(&self) -> Node {
        lock(&self.node).clone()
    }

    pub(crate) fn opened(&self) -> Result<Arc<Opened>, Errno> {
        lock(&self.open).clone().ok_or(Errno(libc::EBADF))
    }
}

struct Pending {
    cancel: Arc<Cancel>,
    /// `Tflush`es waiting for this request: their tags and reply callbacks.
    waiters: Vec<(u16, Reply)>,
    is_flush: bool,
    /// The reply is being handed to the transport; the tag is not yet free.
    replying: bool,
}

#[derive(Default)]
struct Tags {
    map: HashMap<u16, Pending>,
    /// Requests (not `Tflush`es) whose reply is not yet being delivered:
    /// what `max_outstanding` limits.
    active: usize,
    /// Registered `Tflush`es.
    flushes: usize,
}

pub(crate) struct SessionInner {
    pub(crate) gw: Arc<Gateway>,
    pub(crate) msize: AtomicU32,
    pub(crate) fids: Mutex<HashMap<u32, Arc<Fid>>>,
    tags: Mutex<Tags>,
    tags_changed: Condvar,
    /// Delivering a reply never blocks (see [`Gateway::session_nonblocking`]).
    nonblocking: bool,
    /// Unique in the gateway: the owner of the `/net` connections this
    /// session made (another session, another partition on a shared
    /// gateway, cannot open them).
    pub(crate) id: u64,
    /// Bytes of `/net` writes parked until their host socket has room (a
    /// copy of each is held): bounded by [`MAX_PARKED_BYTES`].
    pub(crate) parked: Arc<std::sync::atomic::AtomicUsize>,
}

/// The most bytes of parked `/net` writes one session may hold: a guest
/// whose peers never read must not pin the host's memory (a write is up to
/// msize, and thousands can be parked). The library OS parks one write per
/// connection at a time, of at most its iounit.
pub(crate) const MAX_PARKED_BYTES: usize = 256 << 20;

/// Session ids, from 1.
static SESSION_IDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// An `Rlerror` frame.
pub(crate) fn lerror(tag: u16, e: Errno) -> Vec<u8> {
    let mut out = Vec::with_capacity(11);
    // Encoding a fixed-size message into a Vec cannot fail.
    let _ = RMessage::Lerror { ecode: e.code() }.encode(tag, &mut out);
    out
}

fn rflush(tag: u16) -> Vec<u8> {
    let mut out = Vec::with_capacity(7);
    let _ = RMessage::Flush.encode(tag, &mut out);
    out
}

/// Calls a transport callback, containing a panic in it.
fn deliver(reply: Reply, frame: Vec<u8>) {
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || reply(frame))).is_err() {
        tracing::error!("a reply callback panicked");
    }
}

/// The reply still owed for a request that waits for the network. Sent
/// through [`SessionInner::complete`] like any reply; dropped unsent (a
/// panic, or a connection dropped with requests parked on it, which the
/// reference cycle between them prevents) it answers `EIO`, so the tag is
/// never left registered.
struct Completion {
    inner: Arc<SessionInner>,
    tag: u16,
    reply: Option<Reply>,
}

impl Completion {
    /// Parks `wait` (no thread waits for it): the reply is sent when the
    /// socket call finishes, from a pool job queued by the poll thread or
    /// the cancellation hook, or at once if it finishes now.
    fn park(inner: Arc<SessionInner>, tag: u16, wait: Wait, cancel: &Arc<Cancel>, reply: Reply) {
        let mut owed = Some(Completion {
            inner,
            tag,
            reply: Some(reply),
        });
        let now = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            wait.park(cancel, || {
                let owed = owed.take();
                Box::new(move |fin: Finish| {
                    if let Some(c) = owed {
                        if c.inner.nonblocking {
                            // Into shared memory: answered right here.
                            c.finish(fin);
                            return;
                        }
                        // Delivery may block on the transport: not on the
                        // poll thread, nor in the canceller (a transport
                        // thread submitting a Tflush).
                        let pool = Arc::clone(&c.inner);
                        pool.gw.pool.execute(move || c.finish(fin));
                    }
                }) as Resume
            })
        }));
        // Otherwise parked, or a panic (a dropped Completion answers EIO).
        if let (Ok(Some(fin)), Some(c)) = (now, owed) {
            c.finish(fin);
        }
    }

    fn finish(mut self, fin: Finish) {
        let res = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| fin(&self.inner)))
            .unwrap_or_else(|_| {
                tracing::error!(tag = self.tag, "request handler panicked");
                Err(Errno(libc::EIO))
            });
        let frame = self.inner.answer(self.tag, res);
        if let Some(reply) = self.reply.take() {
            self.inner.complete(self.tag, frame, reply);
        }
    }
}

impl Drop for Completion {
    fn drop(&mut self) {
        if let Some(reply) = self.reply.take() {
            tracing::error!(tag = self.tag, "a waiting request was dropped");
            self.inner
                .complete(self.tag, lerror(self.tag, Errno(libc::EIO)), reply);
        }
    }
}

impl SessionInner {
    /// Whether `frame` (of type `msg_type`) reads or writes a `/net` file
    /// (a socket call that never blocks: it parks instead) and moves little
    /// (a large write copies and runs the loopback peer's receive path,
    /// which would hold up the transport's other requests).
    /// A read or write of a connection's byte stream gets its place in
    /// the connection's order of those here, in the order requests arrive,
    /// before any worker runs it: requests a client keeps in flight
    /// together then meet the stream in their order (see `net::Conv::read`
    /// and `net::Conv::write`).
    fn order_io(&self, frame: &[u8], msg_type: u8, cancel: &Cancel) {
        // fid[4] offset[8] after the 7-byte header.
        let (Some(fid), Some(offset)) = (frame.get(7..11), frame.get(11..19)) else {
            return;
        };
        let offset = u64::from_le_bytes(offset.try_into().unwrap_or([0; 8]));
        let io = if msg_type == MsgType::Twrite.as_u8() {
            Io::Write
        } else if offset == astraea_9p::consts::NET_WATCH_OFFSET {
            return;
        } else {
            Io::Read
        };
        let fid = u32::from_le_bytes(fid.try_into().unwrap_or([0; 4]));
        let f = lock(&self.fids).get(&fid).cloned();
        let Some(opened) = f.and_then(|f| f.opened().ok()) else {
            return;
        };
        if let Opened::Net {
            conv,
            file: ConvFile::Data,
        } = &*opened
        {
            let conv = Arc::clone(conv.conv());
            let ticket = conv.queue_io(io);
            cancel.set_order(ticket, move || conv.release_io(io, ticket));
        }
    }

    /// Whether a request is answered without waiting for anyone (so it
    /// may run on the thread of the vCPU that sent it): metadata, locks
    /// (which never wait here) and reads and writes of regular files;
    /// never `Tfsync` (the disk may take long), the reads and writes of
    /// the console, pipes and devices, nor a `/net` file's requests
    /// besides the socket reads and writes `is_net_io` takes.
    fn answers_at_once(&self, frame: &[u8], msg_type: u8) -> bool {
        use MsgType as M;
        let quick = [
            M::Twalk,
            M::Tgetattr,
            M::Tclunk,
            M::Tstatfs,
            M::Tlock,
            M::Tgetlock,
            M::Treaddir,
            M::Treadlink,
            M::Tsetattr,
            M::Tlopen,
            M::Tlcreate,
            M::Tmkdir,
            M::Tsymlink,
            M::Tmknod,
            M::Trename,
            M::Trenameat,
            M::Tunlinkat,
            M::Tlink,
            M::Txattrwalk,
        ];
        if quick.iter().any(|m| m.as_u8() == msg_type) {
            // Not a `/net` file: closing a host socket that lingers waits.
            return !self
                .frame_fid(frame)
                .is_some_and(|f| matches!(f.node(), Node::Net(_)));
        }
        if msg_type != M::Tread.as_u8() && msg_type != M::Twrite.as_u8() {
            return false;
        }
        self.frame_fid(frame)
            .and_then(|f| f.opened().ok())
            .is_some_and(|o| matches!(&*o, Opened::Host { regular: true, .. }))
    }

    /// The fid a request names first (`Tread`, `Twrite`, `Tclunk`, `Twalk`'s
    /// source…): the field after the header.
    fn frame_fid(&self, frame: &[u8]) -> Option<Arc<Fid>> {
        let &[a, b, c, d] = frame.get(7..11)? else {
            return None;
        };
        lock(&self.fids)
            .get(&u32::from_le_bytes([a, b, c, d]))
            .cloned()
    }

    fn is_net_io(&self, frame: &[u8], msg_type: u8) -> bool {
        const SMALL: usize = 16 * 1024;
        let small = if msg_type == MsgType::Twrite.as_u8() {
            frame.len() <= SMALL + 23
        } else if msg_type == MsgType::Tread.as_u8() {
            // fid[4] offset[8] count[4] after the 7-byte header.
            frame
                .get(19..23)
                .is_some_and(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as usize <= SMALL)
        } else {
            false
        };
        if !small {
            return false;
        }
        self.frame_fid(frame)
            .is_some_and(|f| matches!(f.node(), Node::Net(_)))
    }
}

impl Session {
    pub(crate) fn new(gw: Arc<Gateway>, nonblocking: bool) -> Session {
        let msize = gw.max_msize;
        Session {
            inner: Arc::new(SessionInner {
                gw,
                msize: AtomicU32::new(msize),
                fids: Mutex::new(HashMap::new()),
                tags: Mutex::new(Tags::default()),
                tags_changed: Condvar::new(),
                nonblocking,
                id: SESSION_IDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
                parked: Arc::new(std::sync::atomic::AtomicUsize::new(0)),
            }),
        }
    }

    /// Takes one complete T-message frame (`size[4]` included). `reply` is
    /// called exactly once with one complete R-message frame, possibly on
    /// another thread and possibly after later requests were answered.
    /// Never panics on any input.
    pub fn submit(&self, frame: Vec<u8>, reply: Box<dyn FnOnce(Vec<u8>) + Send>) {
        let inner = &self.inner;
        let header = match Header::parse(&frame) {
            Ok(h) => h,
            Err(_) => {
                let tag = match frame.get(5..7) {
                    Some(&[a, b]) => u16::from_le_bytes([a, b]),
                    _ => NOTAG,
                };
                tracing::debug!(len = frame.len(), "malformed frame header");
                deliver(reply, lerror(tag, Errno(libc::EINVAL)));
                return;
            }
        };
        let tag = header.tag;
        let msize = inner.msize.load(Ordering::Acquire);
        if usize::try_from(header.size).ok() != Some(frame.len())
            || u32::try_from(frame.len()).map_or(true, |n| n > msize)
        {
            tracing::debug!(size = header.size, len = frame.len(), "frame size mismatch");
            deliver(reply, lerror(tag, Errno(libc::EINVAL)));
            return;
        }
        if header.msg_type == MsgType::Tflush.as_u8() {
            inner.flush(tag, &frame, reply);
            return;
        }
        if header.msg_type == MsgType::Tversion.as_u8() {
            // Tversion aborts the requests sent before it and must not touch
            // those sent after it, so it is handled here, in order.
            let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                inner.handle(&frame, tag, &Cancel::new())
            }));
            let out = match out {
                Ok(Handled::Frame(out)) => out,
                // Tversion never waits.
                Ok(Handled::Wait(_)) | Err(_) => lerror(tag, Errno(libc::EIO)),
            };
            deliver(reply, out);
            return;
        }
        let cancel = match inner.register(tag) {
            Ok(c) => c,
            Err(e) => {
                deliver(reply, lerror(tag, e));
                return;
            }
        };
        if header.msg_type == MsgType::Tread.as_u8() || header.msg_type == MsgType::Twrite.as_u8() {
            inner.order_io(&frame, header.msg_type, &cancel);
        }
        let me = Arc::clone(inner);
        let inline = inner.nonblocking
            && (inner.is_net_io(&frame, header.msg_type)
                || (SERVING_HERE.get() && inner.answers_at_once(&frame, header.msg_type)));
        let run = move || {
            let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                me.handle(&frame, tag, &cancel)
            }))
            .unwrap_or_else(|_| {
                tracing::error!(tag, "request handler panicked");
                Handled::Frame(lerror(tag, Errno(libc::EIO)))
            });
            match out {
                Handled::Frame(out) => me.complete(tag, out, reply),
                Handled::Wait(wait) => Completion::park(me, tag, wait, &cancel, reply),
            }
        };
        if inline {
            // A socket's read or write is one non-blocking call (or parks),
            // and on a vCPU's thread (`serve_here`) so is every request
            // that never waits: done on the transport's thread, without
            // waking a worker.
            run();
        } else {
            inner.gw.pool.execute(run);
        }
    }

    /// The negotiated msize (the gateway's maximum before `Tversion`).
    pub fn msize(&self) -> u32 {
        self.inner.msize.load(Ordering::Acquire)
    }

    /// Number of fids in use.
    pub fn fid_count(&self) -> usize {
        lock(&self.inner.fids).len()
    }

    /// Lets the outstanding requests finish for up to `grace`, then cancels
    /// the rest (blocked console reads are answered `EINTR`) and waits a
    /// little more for their replies. Returns `true` if nothing is left in
    /// flight.
    pub fn shutdown(&self, grace: Duration) -> bool {
        if self.wait_idle(grace) {
            return true;
        }
        self.inner.cancel_all();
        self.wait_idle(Duration::from_secs(1))
    }

    fn wait_idle(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut tags = lock(&self.inner.tags);
        while !tags.map.is_empty() {
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            tags = self
                .inner
                .tags_changed
                .wait_timeout(tags, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        true
    }

    /// Answers every request in flight `EINTR` (one that has done nothing
    /// yet, or waits for the network; one that already did its work
    /// answers as usual): a snapshotting partition asks for it once all it
    /// has in flight are reads and opens waiting for the network, which
    /// its threads send again afterwards.
    pub fn interrupt_waiting(&self) {
        self.inner.cancel_all();
    }

    /// Number of requests (including `Tflush`es) whose reply has not been
    /// handed to the transport yet.
    pub fn outstanding(&self) -> usize {
        lock(&self.inner.tags)
            .map
            .values()
            .filter(|p| !p.replying)
            .count()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.inner.cancel_all();
        lock(&self.inner.fids).clear();
    }
}

impl SessionInner {
    /// Locks the tag table once `tag` is free or plainly in use (`false`).
    /// A tag whose reply is being delivered is waited for: the client may
    /// already have seen the reply and reused the tag.
    fn lock_tag_free(&self, tag: u16) -> (MutexGuard<'_, Tags>, bool) {
        let deadline = Instant::now() + TAG_REUSE_WAIT;
        let mut tags = lock(&self.tags);
        loop {
            match tags.map.get(&tag) {
                None => return (tags, true),
                Some(p) if p.replying => {
                    let now = Instant::now();
                    if now >= deadline {
                        return (tags, false);
                    }
                    tags = self
                        .tags_changed
                        .wait_timeout(tags, deadline - now)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0;
                }
                Some(_) => return (tags, false),
            }
        }
    }

    /// Registers a new request under `tag`; returns its cancellation token.
    fn register(&self, tag: u16) -> Result<Arc<Cancel>, Errno> {
        let (mut tags, free) = self.lock_tag_free(tag);
        if !free {
            tracing::debug!(tag, "duplicate tag in flight");
            return Err(Errno(libc::EINVAL));
        }
        if tags.active >= self.gw.max_outstanding {
            tracing::debug!(tag, "too many outstanding requests");
            return Err(Errno(libc::EAGAIN));
        }
        let cancel = Arc::new(Cancel::new());
        tags.map.insert(
            tag,
            Pending {
                cancel: Arc::clone(&cancel),
                waiters: Vec::new(),
                is_flush: false,
                replying: false,
            },
        );
        tags.active += 1;
        Ok(cancel)
    }

    /// Removes a finished entry; returns the flushes waiting for it.
    fn release(&self, tag: u16) -> Vec<(u16, Reply)> {
        let mut tags = lock(&self.tags);
        let waiters = match tags.map.remove(&tag) {
            Some(p) => {
                if p.is_flush {
                    tags.flushes = tags.flushes.saturating_sub(1);
                } else if !p.replying {
                    tags.active = tags.active.saturating_sub(1);
                }
                p.waiters
            }
            None => Vec::new(),
        };
        drop(tags);
        self.tags_changed.notify_all();
        waiters
    }

    fn mark_replying(&self, tag: u16) {
        let mut tags = lock(&self.tags);
        let Some(p) = tags.map.get_mut(&tag) else {
            return;
        };
        if p.replying {
            return;
        }
        p.replying = true;
        if !p.is_flush {
            tags.active = tags.active.saturating_sub(1);
        }
        drop(tags);
        self.tags_changed.notify_all();
    }

    /// Delivers a request's reply, then the `Rflush`es queued behind it.
    fn complete(&self, tag: u16, frame: Vec<u8>, reply: Reply) {
        self.mark_replying(tag);
        deliver(reply, frame);
        let mut queue: VecDeque<(u16, Reply)> = self.release(tag).into();
        while let Some((ftag, freply)) = queue.pop_front() {
            self.mark_replying(ftag);
            deliver(freply, rflush(ftag));
            queue.extend(self.release(ftag));
        }
    }

    /// `Tflush`: answered at once if `oldtag` is not in flight, otherwise
    /// after the old request's reply.
    fn flush(&self, tag: u16, frame: &[u8], reply: Reply) {
        let oldtag = match TMessage::from_bytes(frame) {
            Ok((_, TMessage::Flush { oldtag })) => oldtag,
            _ => {
                deliver(reply, lerror(tag, Errno(libc::EINVAL)));
                return;
            }
        };
        let (mut tags, free) = self.lock_tag_free(tag);
        if !free {
            drop(tags);
            tracing::debug!(tag, "duplicate tag in flight (Tflush)");
            deliver(reply, lerror(tag, Errno(libc::EINVAL)));
            return;
        }
        let flooded = tags.flushes >= self.gw.max_outstanding;
        let old = match tags.map.get_mut(&oldtag) {
            Some(old) if oldtag != tag && !flooded => old,
            Some(_) if oldtag != tag => {
                // Only a client that floods flushes gets here.
                drop(tags);
                deliver(reply, lerror(tag, Errno(libc::EAGAIN)));
                return;
            }
            _ => {
                drop(tags);
                deliver(reply, rflush(tag));
                return;
            }
        };
        old.waiters.push((tag, reply));
        let cancel = Arc::clone(&old.cancel);
        tags.map.insert(
            tag,
            Pending {
                cancel: Arc::new(Cancel::new()),
                waiters: Vec::new(),
                is_flush: true,
                replying: false,
            },
        );
        tags.flushes += 1;
        drop(tags);
        tracing::debug!(tag, oldtag, "flush");
        cancel.cancel();
    }

    /// Cancels every outstanding request.
    pub(crate) fn cancel_all(&self) {
        let cancels: Vec<Arc<Cancel>> = lock(&self.tags)
            .map
            .values()
            .map(|p| Arc::clone(&p.cancel))
            .collect();
        for c in cancels {
            c.cancel();
        }
    }

    /// `Tversion`: aborts all outstanding requests, waits until their
    /// replies (and the `Rflush`es queued behind them) have been handed to
    /// the transport, so the `Rversion` comes after every one of them, and
    /// forgets every fid.
    pub(crate) fn reset(&self) {
        self.cancel_all();
        let deadline = Instant::now() + VERSION_WAIT;
        let mut tags = lock(&self.tags);
        // Not `active`: that drops when a reply starts being delivered, and
        // the Rversion must not overtake a reply still being written.
        while !tags.map.is_empty() {
            let now = Instant::now();
            if now >= deadline {
                tracing::warn!("Tversion: requests still running after {VERSION_WAIT:?}");
                break;
            }
            tags = self
                .tags_changed
                .wait_timeout(tags, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        drop(tags);
        lock(&self.fids).clear();
    }
}

thread_local! {
    /// The current thread is a vCPU's, serving its own notification.
    static SERVING_HERE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` (which submits requests to sessions) as a vCPU's thread
/// serving the notification it took itself: requests that never wait are
/// answered right here, before the guest runs again, rather than by a
/// worker — no thread to wake, which under load costs far more than the
/// request (a busy host took milliseconds to schedule one).
pub fn serve_here<R>(f: impl FnOnce() -> R) -> R {
    SERVING_HERE.set(true);
    let r = f();
    SERVING_HERE.set(false);
    r
}
