//! inotify: events about the partition's own file operations.
//!
//! Every change to the namespace made by the program goes through the
//! library OS, which reports it here ([`notify`]) with the path it used;
//! an instance's watches match an event's path (the watched file itself)
//! or its parent directory (then the event carries the entry's name), as
//! Linux does. Changes made on the host by other processes are not seen:
//! 9P has no notification messages.

use alloc::collections::{BTreeMap, VecDeque};
use alloc::string::String;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

use super::poll_bits::{POLLIN, POLLRDNORM};
use super::readiness_changed;
use crate::errno::Errno;
use crate::sched::WaitQueue;
use crate::sync::IrqLock;

pub const IN_ACCESS: u32 = 0x1;
pub const IN_MODIFY: u32 = 0x2;
pub const IN_ATTRIB: u32 = 0x4;
pub const IN_CLOSE_WRITE: u32 = 0x8;
pub const IN_CLOSE_NOWRITE: u32 = 0x10;
pub const IN_OPEN: u32 = 0x20;
pub const IN_MOVED_FROM: u32 = 0x40;
pub const IN_MOVED_TO: u32 = 0x80;
pub const IN_CREATE: u32 = 0x100;
pub const IN_DELETE: u32 = 0x200;
pub const IN_DELETE_SELF: u32 = 0x400;
pub const IN_MOVE_SELF: u32 = 0x800;
const IN_ALL_EVENTS: u32 = 0xfff;
const IN_Q_OVERFLOW: u32 = 0x4000;
const IN_IGNORED: u32 = 0x8000;
pub const IN_ONLYDIR: u32 = 0x0100_0000;
pub const IN_DONT_FOLLOW: u32 = 0x0200_0000;
const IN_EXCL_UNLINK: u32 = 0x0400_0000;
const IN_MASK_CREATE: u32 = 0x1000_0000;
const IN_MASK_ADD: u32 = 0x2000_0000;
/// Set in an event about a directory.
pub const IN_ISDIR: u32 = 0x4000_0000;
const IN_ONESHOT: u32 = 0x8000_0000;
/// The bits `inotify_add_watch` accepts.
pub const VALID_MASK: u32 = IN_ALL_EVENTS
    | IN_ONLYDIR
    | IN_DONT_FOLLOW
    | IN_EXCL_UNLINK
    | IN_MASK_CREATE
    | IN_MASK_ADD
    | IN_ONESHOT;

/// Linux's default `max_queued_events`.
const MAX_QUEUED: usize = 16384;
/// `sizeof(struct inotify_event)`.
const HEADER: usize = 16;

struct Watch {
    path: String,
    mask: u32,
}

struct Event {
    wd: i32,
    mask: u32,
    cookie: u32,
    name: Option<String>,
}

impl Event {
    /// Its size as `read` returns it: the name is padded with NULs to a
    /// multiple of the header's size.
    fn size(&self) -> usize {
        HEADER + self.name_len()
    }

    fn name_len(&self) -> usize {
        self.name
            .as_ref()
            .map_or(0, |n| (n.len() + 1).next_multiple_of(HEADER))
    }
}

#[derive(Default)]
struct State {
    watches: BTreeMap<i32, Watch>,
    next_wd: i32,
    queue: VecDeque<Event>,
    /// Events queued ever (each wakes the queue: epoll's edges).
    pushed: u64,
}

/// One inotify instance.
pub struct Inotify {
    state: IrqLock<State>,
    readable: WaitQueue,
    /// `O_*` status flags.
    pub flags: AtomicU32,
}

/// Every instance alive, for [`notify`].
static INSTANCES: IrqLock<Vec<Weak<Inotify>>> = IrqLock::new(Vec::new());
/// Watches in all instances: [`notify`] returns at once while none exist.
static WATCHES: AtomicUsize = AtomicUsize::new(0);

impl Inotify {
    /// A new instance with `flags` (`O_NONBLOCK`), registered for events.
    pub fn new(flags: u32) -> Arc<Self> {
        let me = Arc::new(Self {
            state: IrqLock::new(State {
                next_wd: 1,
                ..State::default()
            }),
            readable: WaitQueue::new(),
            flags: AtomicU32::new(flags),
        });
        let mut all = INSTANCES.lock();
        all.retain(|w| w.strong_count() > 0);
        all.push(Arc::downgrade(&me));
        me
    }

    /// `inotify_add_watch` of the resolved `path` (checked to exist by the
    /// caller): the path's watch descriptor, the same one for the same path.
    pub fn add_watch(&self, path: &str, mask: u32) -> Result<i32, Errno> {
        let mut st = self.state.lock();
        let events = mask & IN_ALL_EVENTS | mask & (IN_ONESHOT | IN_EXCL_UNLINK);
        if let Some((&wd, w)) = st.watches.iter_mut().find(|(_, w)| w.path == path) {
            if mask & IN_MASK_CREATE != 0 {
                return Err(Errno::EEXIST);
            }
            w.mask = if mask & IN_MASK_ADD != 0 {
                w.mask | events
            } else {
                events
            };
            return Ok(wd);
        }
        let wd = st.next_wd;
        st.next_wd += 1;
        st.watches.insert(
            wd,
            Watch {
                path: String::from(path),
                mask: events,
            },
        );
        WATCHES.fetch_add(1, Ordering::SeqCst);
        Ok(wd)
    }

    /// `inotify_rm_watch`: the watch goes, with an `IN_IGNORED` event.
    pub fn rm_watch(&self, wd: i32) -> Result<(), Errno> {
        let mut st = self.state.lock();
        if st.watches.remove(&wd).is_none() {
            return Err(Errno::EINVAL);
        }
        WATCHES.fetch_sub(1, Ordering::SeqCst);
        push(&mut st, wd, IN_IGNORED, 0, None);
        drop(st);
        self.readable.wake_all();
        readiness_changed();
        Ok(())
    }

    /// Reads whole events into a buffer of `len` bytes: `EINVAL` if the
    /// first does not fit, `EAGAIN` without events if `nonblock`, else waits.
    pub fn read(&self, len: usize, nonblock: bool) -> Result<Vec<u8>, Errno> {
        loop {
            {
                let mut st = self.state.lock();
                if let Some(first) = st.queue.front() {
                    if first.size() > len {
                        return Err(Errno::EINVAL);
                    }
                    let mut out = Vec::new();
                    while let Some(e) = st.queue.front() {
                        if out.len() + e.size() > len {
                            break;
                        }
                        let e = st.queue.pop_front().unwrap_or_else(|| unreachable!());
                        out.extend_from_slice(&e.wd.to_ne_bytes());
                        out.extend_from_slice(&e.mask.to_ne_bytes());
                        out.extend_from_slice(&e.cookie.to_ne_bytes());
                        out.extend_from_slice(&(e.name_len() as u32).to_ne_bytes());
                        if let Some(n) = &e.name {
                            let start = out.len();
                            out.extend_from_slice(n.as_bytes());
                            out.resize(start + e.name_len(), 0);
                        }
                    }
                    return Ok(out);
                }
            }
            if nonblock {
                return Err(Errno::EAGAIN);
            }
            self.readable
                .wait_while_interruptible(|| self.state.lock().queue.is_empty())?;
        }
    }

    /// Bytes a `read` would return now (`FIONREAD`).
    pub fn pending_bytes(&self) -> usize {
        self.state.lock().queue.iter().map(Event::size).sum()
    }

    /// Its queue's wake-ups (epoll's edges): each event queued wakes
    /// without a key.
    pub fn wakes(&self) -> [u64; 3] {
        [0, 0, self.state.lock().pushed]
    }

    /// `poll` events.
    pub fn poll(&self) -> u16 {
        if self.state.lock().queue.is_empty() {
            0
        } else {
            POLLIN | POLLRDNORM
        }
    }

    /// Queues the events `path` matches (its parent's watches first, with
    /// the entry's name, then its own unless `parent_only`); true if any.
    fn deliver(&self, path: &str, mask: u32, cookie: u32) -> bool {
        self.deliver_to(path, mask, cookie, Targets::Both)
    }

    fn deliver_to(&self, path: &str, mask: u32, cookie: u32, to: Targets) -> bool {
        let parent = parent_of(path);
        let name = path.rsplit('/').next().unwrap_or("");
        let mut st = self.state.lock();
        let mut hits: Vec<(i32, Option<String>)> = Vec::new();
        let mut dropped = Vec::new();
        let entry_event = mask & (IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE) != 0;
        for pass in [false, true] {
            for (&wd, w) in st.watches.iter() {
                if w.mask & mask & IN_ALL_EVENTS == 0 {
                    continue;
                }
                let hit = if pass {
                    w.path == path && !entry_event && to != Targets::Parent
                } else {
                    Some(w.path.as_str()) == parent && !name.is_empty() && to != Targets::Own
                };
                if !hit {
                    continue;
                }
                hits.push((wd, (!pass).then(|| String::from(name))));
                if w.mask & IN_ONESHOT != 0 {
                    dropped.push(wd);
                }
            }
        }
        if hits.is_empty() {
            return false;
        }
        for (wd, n) in hits {
            let bits = mask & (IN_ALL_EVENTS | IN_ISDIR);
            let bits = bits & (st.watches.get(&wd).map_or(0, |w| w.mask) | IN_ISDIR);
            push(&mut st, wd, bits, cookie, n);
        }
        for wd in dropped {
            if st.watches.remove(&wd).is_some() {
                WATCHES.fetch_sub(1, Ordering::SeqCst);
                push(&mut st, wd, IN_IGNORED, 0, None);
            }
        }
        true
    }

    /// Watches of `from` and beneath it now watch the same under `to`.
    fn moved(&self, from: &str, to: &str) {
        let mut st = self.state.lock();
        for w in st.watches.values_mut() {
            if w.path == from {
                w.path = String::from(to);
            } else if let Some(rest) = w.path.strip_prefix(from)
                && rest.starts_with('/')
            {
                w.path = alloc::format!("{to}{rest}");
            }
        }
    }

    /// The watch on `path` itself goes away (the file or directory was
    /// deleted): `IN_DELETE_SELF` if asked for, then `IN_IGNORED`.
    fn deleted(&self, path: &str) -> bool {
        let mut st = self.state.lock();
        let Some((&wd, w)) = st.watches.iter().find(|(_, w)| w.path == path) else {
            return false;
        };
        let wants = w.mask & IN_DELETE_SELF != 0;
        st.watches.remove(&wd);
        WATCHES.fetch_sub(1, Ordering::SeqCst);
        if wants {
            push(&mut st, wd, IN_DELETE_SELF, 0, None);
        }
        push(&mut st, wd, IN_IGNORED, 0, None);
        true
    }
}

impl Drop for Inotify {
    fn drop(&mut self) {
        let n = self.state.lock().watches.len();
        WATCHES.fetch_sub(n, Ordering::SeqCst);
    }
}

/// Which watches an event reaches.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Targets {
    /// The parent directory's (with the name) and the file's own.
    Both,
    /// Only the parent directory's.
    Parent,
    /// Only the file's own (a change of the inode, not of the entry).
    Own,
}

/// Queues an event unless it repeats the last one (Linux merges those), or
/// an overflow event once the queue is full.
fn push(st: &mut State, wd: i32, mask: u32, cookie: u32, name: Option<String>) {
    if let Some(last) = st.queue.back()
        && last.wd == wd
        && last.mask == mask
        && last.cookie == cookie
        && last.name == name
    {
        return;
    }
    if st.queue.len() >= MAX_QUEUED {
        if st.queue.back().is_some_and(|l| l.mask != IN_Q_OVERFLOW) {
            st.queue.push_back(Event {
                wd: -1,
                mask: IN_Q_OVERFLOW,
                cookie: 0,
                name: None,
            });
            st.pushed = st.pushed.wrapping_add(1);
        }
        return;
    }
    st.pushed = st.pushed.wrapping_add(1);
    st.queue.push_back(Event {
        wd,
        mask,
        cookie,
        name,
    });
}

/// `path` without trailing slashes (the root stays `/`).
pub fn normalize(path: &str) -> &str {
    let t = path.trim_end_matches('/');
    if t.is_empty() { "/" } else { t }
}

/// The events a change of attributes (`P9_SETATTR_*` bits) makes, as
/// Linux's `fsnotify_change` picks them.
pub fn setattr_mask(valid: u32) -> u32 {
    use astraea_9p::consts::{
        P9_SETATTR_ATIME, P9_SETATTR_GID, P9_SETATTR_MODE, P9_SETATTR_MTIME, P9_SETATTR_SIZE,
        P9_SETATTR_UID,
    };
    let mut m = 0;
    if valid & (P9_SETATTR_UID | P9_SETATTR_GID | P9_SETATTR_MODE) != 0 {
        m |= IN_ATTRIB;
    }
    if valid & P9_SETATTR_SIZE != 0 {
        m |= IN_MODIFY;
    }
    let times = valid & (P9_SETATTR_ATIME | P9_SETATTR_MTIME);
    if times == P9_SETATTR_ATIME | P9_SETATTR_MTIME {
        m |= IN_ATTRIB;
    } else if times == P9_SETATTR_ATIME {
        m |= IN_ACCESS;
    } else if times == P9_SETATTR_MTIME {
        m |= IN_MODIFY;
    }
    m
}

/// Whether any watch exists (callers skip work for [`notify`] otherwise).
pub fn active() -> bool {
    WATCHES.load(Ordering::Relaxed) != 0
}

fn parent_of(path: &str) -> Option<&str> {
    match path.rfind('/') {
        Some(0) if path.len() > 1 => Some("/"),
        Some(0) | None => None,
        Some(i) => Some(&path[..i]),
    }
}

/// Runs `f` on every live instance; wakes readers of those it returns true for.
fn each(f: impl Fn(&Inotify) -> bool) {
    let live: Vec<Arc<Inotify>> = INSTANCES.lock().iter().filter_map(Weak::upgrade).collect();
    let mut woke = false;
    for i in &live {
        if f(i) {
            i.readable.wake_all();
            woke = true;
        }
    }
    if woke {
        readiness_changed();
    }
    // `live` may hold the last reference: dropped here, no lock held.
}

/// Reports `mask` (`IN_*`, with `IN_ISDIR` for a directory) about the
/// absolute `path`.
/// Whether any watch exists (events would have to be delivered).
pub fn watching() -> bool {
    WATCHES.load(Ordering::Relaxed) != 0
}

/// Reports `mask` about `path` to every watch that covers it.
pub fn notify(path: &str, mask: u32) {
    if WATCHES.load(Ordering::Relaxed) == 0 {
        return;
    }
    let path = normalize(path);
    each(|i| i.deliver(path, mask, 0));
}

/// Reports `mask` about the file at `path` itself, not its directory entry
/// (a link count change).
pub fn notify_own(path: &str, mask: u32) {
    if WATCHES.load(Ordering::Relaxed) == 0 {
        return;
    }
    let path = normalize(path);
    each(|i| i.deliver_to(path, mask, 0, Targets::Own));
}

/// Reports a rename from `from` to `to` (`dir`: of a directory): a pair of
/// events sharing a cookie, and `IN_MOVE_SELF` to a watch of the moved file.
pub fn renamed(from: &str, to: &str, dir: bool) {
    if WATCHES.load(Ordering::Relaxed) == 0 {
        return;
    }
    let (from, to) = (normalize(from), normalize(to));
    static COOKIE: AtomicU32 = AtomicU32::new(1);
    let cookie = COOKIE.fetch_add(1, Ordering::Relaxed);
    let isdir = if dir { IN_ISDIR } else { 0 };
    each(|i| {
        let a = i.deliver(from, IN_MOVED_FROM | isdir, cookie);
        let b = i.deliver(to, IN_MOVED_TO | isdir, cookie);
        let c = i.deliver_to(from, IN_MOVE_SELF, 0, Targets::Own);
        // Watches follow what they watch, as Linux's follow the inode.
        i.moved(from, to);
        a | b | c
    });
}

/// Reports that `path` was removed (`dir`: a directory): `IN_DELETE` to its
/// parent's watches, and the end of any watch on it.
pub fn removed(path: &str, dir: bool) {
    if WATCHES.load(Ordering::Relaxed) == 0 {
        return;
    }
    let path = normalize(path);
    let isdir = if dir { IN_ISDIR } else { 0 };
    each(|i| {
        // As Linux orders them: a file's watch hears its link count drop,
        // then its own end, and then the directory hears the entry go.
        let a = !dir && i.deliver_to(path, IN_ATTRIB, 0, Targets::Own);
        let b = i.deleted(path);
        let c = i.deliver_to(path, IN_DELETE | isdir, 0, Targets::Parent);
        a | b | c
    });
}

impl crate::fd::FileLike for Inotify {
    fn read(&self, max: usize, nonblock: bool) -> Result<Vec<u8>, Errno> {
        Inotify::read(self, max, nonblock)
    }

    fn poll(&self) -> u16 {
        Inotify::poll(self)
    }

    fn wakes(&self) -> [u64; 3] {
        Inotify::wakes(self)
    }

    fn flags(&self) -> &AtomicU32 {
        &self.flags
    }

    fn ioctl(&self, request: u64, arg: u64) -> Result<u64, Errno> {
        const FIONREAD: u64 = 0x541b;
        if request != FIONREAD {
            return Err(Errno::ENOTTY);
        }
        crate::mm::user::copy_in(arg, &(self.pending_bytes() as u32).to_le_bytes())?;
        Ok(0)
    }

    fn mode(&self) -> u32 {
        0o600
    }

    fn proc_link(&self) -> alloc::string::String {
        alloc::string::String::from("anon_inode:inotify")
    }

    fn as_any(&self) -> &dyn core::any::Any {
        self
    }
}
