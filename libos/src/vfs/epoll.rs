//! epoll instances: a set of registrations, each an (open file
//! description, descriptor number) pair with the events asked for and the
//! caller's `data`.
//!
//! Readiness is looked at when someone asks (a wait, a `poll` of the
//! instance) rather than pushed by callbacks: an object reports its state
//! ([`Object::poll`]) and counts the wake-ups of its wait queue with
//! Linux's keys ([`Object::wakes`], [`Object::wake_keys`]). As on Linux, a
//! registration gets onto the "ready list" when it is added or modified,
//! or after a wake-up whose key meets its events, and leaves it when found
//! not ready; an edge-triggered one also leaves it once reported, a
//! level-triggered one goes to its back. Registrations hold their description weakly: when its last
//! descriptor closes, the registration goes.

use alloc::collections::BTreeMap;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use super::poll_bits::{POLLIN, POLLRDNORM};
use crate::errno::Errno;
use crate::fd::{Object, WeakObject};
use crate::sync::IrqLock;

/// Data to read.
pub const EPOLLIN: u32 = 0x001;
/// Room to write.
pub const EPOLLOUT: u32 = 0x004;
/// An error condition (always reported).
pub const EPOLLERR: u32 = 0x008;
/// Hang-up (always reported).
pub const EPOLLHUP: u32 = 0x010;
/// Same as `EPOLLIN` for most files.
pub const EPOLLRDNORM: u32 = 0x040;
/// Same as `EPOLLOUT` for most files.
pub const EPOLLWRNORM: u32 = 0x100;
/// One waiter of several is woken (`EPOLL_CTL_ADD` only).
pub const EPOLLEXCLUSIVE: u32 = 1 << 28;
/// Keeps the system awake (needs `CAP_BLOCK_SUSPEND`).
pub const EPOLLWAKEUP: u32 = 1 << 29;
/// Report once, then stay disabled until `EPOLL_CTL_MOD`.
pub const EPOLLONESHOT: u32 = 1 << 30;
/// Edge-triggered.
pub const EPOLLET: u32 = 1 << 31;
/// The flags that are not events (Linux's `EP_PRIVATE_BITS`).
pub const PRIVATE: u32 = EPOLLWAKEUP | EPOLLONESHOT | EPOLLET | EPOLLEXCLUSIVE;
/// The events `EPOLLEXCLUSIVE` may come with.
pub const EXCLUSIVE_OK: u32 =
    EPOLLIN | EPOLLOUT | EPOLLERR | EPOLLHUP | EPOLLWAKEUP | EPOLLET | EPOLLEXCLUSIVE;
/// Most epoll instances below one another (Linux's `EP_MAX_NESTS`).
pub const MAX_NESTS: u32 = 4;

/// `epoll_ctl` operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `EPOLL_CTL_ADD`.
    Add,
    /// `EPOLL_CTL_DEL`.
    Del,
    /// `EPOLL_CTL_MOD`.
    Mod,
}

/// One registration.
struct Entry {
    target: WeakObject,
    /// The events asked for (with `EPOLLERR | EPOLLHUP`) and flags; only
    /// the flags once a one-shot registration has fired.
    events: u32,
    data: u64,
    /// On Linux's ready list (what edge-triggered reports come from).
    ready: bool,
    /// The target's wake-ups when last looked at.
    seen: [u64; 3],
    /// Changed by `EPOLL_CTL_MOD`: a look that raced it is not applied.
    version: u64,
    /// Its place on the ready list (reports come in this order; a
    /// level-triggered registration goes to the back once reported).
    order: u64,
}

/// An epoll instance.
pub struct Epoll {
    /// By (description, descriptor number), as Linux keys them.
    entries: IrqLock<BTreeMap<(usize, i32), Entry>>,
    /// Times a registration got onto the ready list: this instance's own
    /// wake-ups, for an instance watching it.
    queued: AtomicU64,
    versions: AtomicU64,
    orders: AtomicU64,
    /// `O_*` status flags.
    pub flags: AtomicU32,
}

/// Every instance alive (to find the instances watching one, for the
/// nesting limit).
static ALL: IrqLock<Vec<Weak<Epoll>>> = IrqLock::new(Vec::new());

/// Whether a wake-up from `before` to `now` meets `events` (Linux filters
/// wake-ups by their key; `keys` are the input and output keys).
fn woken(before: [u64; 3], now: [u64; 3], keys: (u32, u32), events: u32) -> bool {
    now[2] != before[2]
        || (now[0] != before[0] && events & keys.0 != 0)
        || (now[1] != before[1] && events & keys.1 != 0)
}

/// An object's state as a look sees it: its wake-ups, their keys, its
/// `poll` events.
type State = ([u64; 3], (u32, u32), u32);

/// What one look at the registrations does.
enum Look<'a> {
    /// Counts the registrations that would report.
    Count,
    /// Takes up to `.1` events into `.0` (edge-triggered and one-shot
    /// registrations fire).
    Take(&'a mut Vec<(u32, u64)>, usize),
}

impl Epoll {
    /// A new instance.
    pub fn new() -> Arc<Self> {
        let me = Arc::new(Self {
            entries: IrqLock::new(BTreeMap::new()),
            queued: AtomicU64::new(0),
            versions: AtomicU64::new(0),
            orders: AtomicU64::new(0),
            flags: AtomicU32::new(2),
        });
        let mut all = ALL.lock();
        all.retain(|w| w.strong_count() > 0);
        all.push(Arc::downgrade(&me));
        me
    }

    /// `epoll_ctl` on `(target, fd)`; the caller has checked the
    /// descriptors and flags.
    pub fn ctl(
        self: &Arc<Self>,
        op: Op,
        fd: i32,
        target: &Object,
        events: u32,
        data: u64,
    ) -> Result<(), Errno> {
        if op == Op::Add
            && let Object::Epoll(inner) = target
            && self.would_loop(inner)
        {
            return Err(Errno::ELOOP);
        }
        let key = (target.key(), fd);
        let seen = target.wakes();
        let events = events | EPOLLERR | EPOLLHUP;
        // Linux looks at the object once, here: a registration not ready
        // now waits for a wake-up.
        let ready_now = op != Op::Del && u32::from(target.poll(1)) & events & !PRIVATE != 0;
        let version = self.versions.fetch_add(1, Ordering::Relaxed) + 1;
        let order = self.orders.fetch_add(1, Ordering::Relaxed);
        {
            let mut e = self.entries.lock();
            e.retain(|_, v| v.target.alive());
            match (op, e.get_mut(&key)) {
                (Op::Add, Some(_)) => return Err(Errno::EEXIST),
                (Op::Add, None) => {
                    e.insert(
                        key,
                        Entry {
                            target: target.downgrade(),
                            events,
                            data,
                            ready: ready_now,
                            seen,
                            version,
                            order,
                        },
                    );
                }
                (_, None) => return Err(Errno::ENOENT),
                (Op::Del, Some(_)) => {
                    e.remove(&key);
                }
                (Op::Mod, Some(v)) if v.events & EPOLLEXCLUSIVE != 0 => {
                    return Err(Errno::EINVAL);
                }
                (Op::Mod, Some(v)) => {
                    v.events = events;
                    v.data = data;
                    v.seen = seen;
                    v.version = version;
                    if ready_now && !v.ready {
                        v.order = order;
                        v.ready = true;
                    }
                }
            }
        }
        if ready_now {
            self.queued.fetch_add(1, Ordering::Relaxed);
        }
        // Threads waiting on this instance (or on one watching it) look
        // again.
        super::readiness_changed();
        Ok(())
    }

    /// Looks at every registration at nesting `depth` (see [`Look`]);
    /// returns how many would report (or were taken).
    fn look(&self, depth: u32, mut how: Look<'_>) -> usize {
        if depth > MAX_NESTS + 1 {
            return 0;
        }
        let snapshot: Vec<((usize, i32), WeakObject, u64)> = self
            .entries
            .lock()
            .iter()
            .map(|(k, v)| (*k, v.target.clone(), v.version))
            .collect();
        // The objects' states, looked at without this instance's lock.
        let objects: Vec<Option<Object>> = snapshot.iter().map(|s| s.1.upgrade()).collect();
        let states: Vec<Option<State>> = objects
            .iter()
            .map(|o| {
                o.as_ref()
                    .map(|o| (o.wakes(), o.wake_keys(), u32::from(o.poll(depth))))
            })
            .collect();
        let mut n = 0;
        {
            let mut e = self.entries.lock();
            // Wake-ups first: what they put on the ready list goes to its
            // back.
            let mut listed: Vec<((usize, i32), u32)> = Vec::new();
            for ((key, _, version), state) in snapshot.iter().zip(&states) {
                let Some((wakes, keys, now)) = *state else {
                    continue;
                };
                let Some(v) = e.get_mut(key) else { continue };
                if v.version != *version {
                    continue;
                }
                let enabled = v.events & !PRIVATE != 0;
                if woken(v.seen, wakes, keys, v.events) && enabled {
                    if !v.ready {
                        v.order = self.orders.fetch_add(1, Ordering::Relaxed);
                    }
                    v.ready = true;
                    self.queued.fetch_add(1, Ordering::Relaxed);
                }
                v.seen = wakes;
                if !enabled || !v.ready {
                    v.ready = false;
                    continue;
                }
                let revents = now & v.events & !PRIVATE;
                if revents == 0 {
                    v.ready = false;
                    continue;
                }
                listed.push((*key, revents));
            }
            listed.sort_by_key(|(k, _)| e.get(k).map_or(0, |v| v.order));
            for (key, revents) in listed {
                let Some(v) = e.get_mut(&key) else { continue };
                match &mut how {
                    Look::Count => n += 1,
                    Look::Take(out, max) => {
                        if out.len() >= *max {
                            break;
                        }
                        out.push((revents, v.data));
                        n += 1;
                        if v.events & EPOLLONESHOT != 0 {
                            v.events &= PRIVATE;
                            v.ready = false;
                        } else if v.events & EPOLLET != 0 {
                            v.ready = false;
                        } else {
                            v.order = self.orders.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            }
        }
        // Any last reference to a description goes without the lock held.
        drop(objects);
        n
    }

    /// Takes up to `max` ready events as (events, data).
    pub fn take(&self, max: usize) -> Vec<(u32, u64)> {
        let mut out = Vec::new();
        self.look(0, Look::Take(&mut out, max));
        out
    }

    /// How many registrations would report now.
    pub fn count_ready(&self) -> usize {
        self.look(0, Look::Count)
    }

    /// `poll` events of the instance itself (at nesting `depth`):
    /// readable while a registration would report.
    pub fn poll(&self, depth: u32) -> u16 {
        if self.look(depth, Look::Count) > 0 {
            POLLIN | POLLRDNORM
        } else {
            0
        }
    }

    /// Its own wake-ups (registrations getting onto its ready list), keyed
    /// `EPOLLIN` as Linux's.
    pub fn wakes(&self) -> [u64; 3] {
        self.look(1, Look::Count);
        [self.queued.load(Ordering::Relaxed), 0, 0]
    }

    /// The earliest time a registered object becomes ready by itself.
    pub fn next_expiry(&self) -> Option<u64> {
        self.targets()
            .iter()
            .filter_map(|o| match o {
                // One level down is enough to be woken; deeper timers are
                // found when that level is looked at.
                Object::Epoll(_) => None,
                o => o.next_expiry(),
            })
            .chain(self.inner().iter().filter_map(|e| e.next_expiry_below(1)))
            .min()
    }

    fn next_expiry_below(&self, depth: u32) -> Option<u64> {
        if depth > MAX_NESTS {
            return None;
        }
        self.targets()
            .iter()
            .filter_map(|o| match o {
                Object::Epoll(e) => e.next_expiry_below(depth + 1),
                o => o.next_expiry(),
            })
            .min()
    }

    /// The registered descriptions still open.
    fn targets(&self) -> Vec<Object> {
        let weak: Vec<WeakObject> = self
            .entries
            .lock()
            .values()
            .map(|v| v.target.clone())
            .collect();
        weak.iter().filter_map(WeakObject::upgrade).collect()
    }

    /// The epoll instances registered here.
    fn inner(&self) -> Vec<Arc<Epoll>> {
        self.targets()
            .into_iter()
            .filter_map(|o| match o {
                Object::Epoll(e) => Some(e),
                _ => None,
            })
            .collect()
    }

    /// Whether registering `to` here would make a cycle or nest deeper
    /// than Linux allows (its `ep_loop_check`).
    fn would_loop(self: &Arc<Self>, to: &Arc<Epoll>) -> bool {
        let down = to.depth_down(self, 0);
        down > MAX_NESTS || down + 1 + self.depth_up(0) > MAX_NESTS
    }

    /// How deep the instances below this one go; more than [`MAX_NESTS`]
    /// if `inserting_into` is among them.
    fn depth_down(&self, inserting_into: &Arc<Epoll>, depth: u32) -> u32 {
        let mut result = 0;
        for e in self.inner() {
            if Arc::ptr_eq(&e, inserting_into) || depth > MAX_NESTS {
                result = MAX_NESTS + 1;
            } else {
                result = result.max(e.depth_down(inserting_into, depth + 1) + 1);
            }
            if result > MAX_NESTS {
                break;
            }
        }
        result
    }

    /// How many instances above this one watch it, at most.
    fn depth_up(self: &Arc<Self>, depth: u32) -> u32 {
        if depth > MAX_NESTS + 1 {
            return depth;
        }
        let all: Vec<Arc<Epoll>> = ALL.lock().iter().filter_map(Weak::upgrade).collect();
        let me = Arc::as_ptr(self) as *const u8 as usize;
        let mut result = 0;
        for p in &all {
            let watches_me = p
                .entries
                .lock()
                .values()
                .any(|v| matches!(&v.target, WeakObject::Epoll(w) if w.as_ptr() as *const u8 as usize == me && w.strong_count() > 0));
            if watches_me {
                result = result.max(p.depth_up(depth + 1) + 1);
            }
        }
        result
    }
}
