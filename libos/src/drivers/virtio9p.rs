//! The virtio-9p driver: a virtio-mmio (version 2) device with one split
//! virtqueue. Each request is two descriptors — the T-message (readable by
//! the device) and room for the R-message (writable) — and the head
//! descriptor's index identifies it, so many requests can be in flight.
//!
//! Notification is one MMIO write that the VMM turns into an ioeventfd (no
//! exit to user space); completion is an MSI. A waiting thread first polls the
//! used ring briefly, then sleeps until the interrupt wakes it.

use alloc::vec::Vec;
use core::ptr::{read_volatile, write_volatile};
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering, fence};

use astraea_abi::virtio_mmio::{self as vm_abi, reg, status};

use super::doorbell;
use crate::mm;
use crate::sched::WaitQueue;
use crate::sync::IrqLock;

const QUEUE_SIZE: u16 = 16384;
/// Descriptors that requests which may wait indefinitely (the posted reads
/// and listens of sockets, `sched::Thread::posts`) leave free, so that
/// files and new connections keep working however many sockets are idle.
const RESERVED: usize = 64;
const DESC_F_NEXT: u16 = 1;
const DESC_F_WRITE: u16 = 2;
/// How long a waiter polls the used ring before it sleeps: a reply usually
/// comes back sooner than an interrupt could wake a halted vCPU.
const POLL_NS: u64 = 200_000;
/// Available-ring flag: no interrupt per completion (nobody is asleep).
const VIRTQ_AVAIL_F_NO_INTERRUPT: u16 = 1;
/// Used-ring flag: the device is polling, no notification needed.
const VIRTQ_USED_F_NO_NOTIFY: u16 = 1;

/// Why the device could not be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceError {
    /// No virtio-9p device at the address the VMM described.
    NotFound,
    /// The device refused the features we need.
    Features,
    /// No memory for the queue.
    NoMemory,
    /// The device answered with an empty or oversized reply.
    BadReply,
    /// The server behind the device has gone (the VMM said so with
    /// `USED_ID_SERVER_GONE`): no request will be answered any more.
    Gone,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct Desc {
    addr: u64,
    len: u32,
    flags: u16,
    next: u16,
}

/// A request slot, indexed by its head descriptor.
struct Slot {
    done: AtomicBool,
    len: AtomicU32,
    /// Made by a thread whose requests wait indefinitely
    /// (`sched::Thread::posts`), noted once at submission.
    posted: AtomicBool,
    /// A posted read or open (`listen`): it waits for the network, and
    /// its thread posts it again if a snapshot has it answered `EINTR`.
    waits: AtomicBool,
    /// A request the server answers at once (a walk, a `getattr`, a
    /// clunk…): how long its reply takes tells how busy the host is
    /// ([`doorbell`]); a `fsync`'s does not.
    quick: AtomicBool,
    wq: WaitQueue,
}

struct Queue {
    desc: *mut Desc,
    avail: *mut u16, // flags, idx, ring[N], used_event
    used: *mut u32,  // flags|idx as one u32, then (id, len) pairs
    free: Vec<u16>,
    last_used: u16,
    avail_idx: u16,
}

// SAFETY: the ring pointers refer to frames owned by the driver for the
// partition's life; all access goes through the IrqLock around `Queue`.
unsafe impl Send for Queue {}

/// A descriptor the device reads: kernel bytes (one guest-physical range).
fn readable(b: &[u8]) -> (u64, u32, bool) {
    (mm::virt_to_phys(b.as_ptr() as u64), b.len() as u32, false)
}

/// A descriptor the device writes: kernel bytes (one guest-physical range).
fn writable(b: &mut [u8]) -> (u64, u32, bool) {
    (
        mm::virt_to_phys(b.as_mut_ptr() as u64),
        b.len() as u32,
        true,
    )
}

/// The device.
pub struct Virtio9p {
    base: u64,
    queue: IrqLock<Queue>,
    slots: Vec<Slot>,
    room: WaitQueue,
    /// Waiters asleep until an interrupt (not those of posted requests):
    /// while there are none and the CPU is busy, the device is asked not to
    /// interrupt, and completions are polled (`sched::PolledDevice`).
    sleepers: AtomicU32,
    /// The CPU is halting: every completion must interrupt.
    idle: AtomicBool,
    /// Requests in flight (a tick bounds how long a busy CPU leaves their
    /// completions unseen).
    in_flight: AtomicU32,
    /// Of those, the posted reads and opens ([`Slot::waits`]).
    waiting: AtomicU32,
    /// The used ring's index as last reaped (read without the lock).
    seen: core::sync::atomic::AtomicU16,
    /// The address of the used ring's index word.
    used_idx: u64,
    /// The address of the used ring's flags word.
    used_flags: u64,
    /// The server has gone: requests in flight were failed, new ones fail.
    gone: AtomicBool,
    /// Requests were queued since the last notification: the device is told
    /// before the CPU leaves the library OS, halts, or spins for a reply
    /// ([`flush`]), so that requests queued together cost one notification
    /// (an exit of about 11 µs on PVM).
    notify_due: AtomicBool,
}

static DEVICE: spin::Once<Virtio9p> = spin::Once::new();

fn reg_ptr(base: u64, off: u64) -> *mut u32 {
    (base + off) as *mut u32
}

fn rd(base: u64, off: u64) -> u32 {
    // SAFETY: `base` is the device's register window, mapped uncached by
    // `probe`; register reads have no memory effects on Rust objects.
    unsafe { read_volatile(reg_ptr(base, off)) }
}

fn wr(base: u64, off: u64, v: u32) {
    // SAFETY: as for `rd`.
    unsafe { write_volatile(reg_ptr(base, off), v) }
}

/// Finds and starts the device at `base`; completions arrive on `vector`.
pub fn probe(base: u64) -> Result<&'static Virtio9p, DeviceError> {
    let base = mm::map_mmio(base, 0x1000).map_err(|_| DeviceError::NoMemory)?;
    if rd(base, reg::MAGIC) != vm_abi::MAGIC
        || rd(base, reg::VERSION) != vm_abi::VERSION
        || rd(base, reg::DEVICE_ID) != vm_abi::DEVICE_ID_9P
    {
        return Err(DeviceError::NotFound);
    }
    let (ack, drv) = (status::ACKNOWLEDGE, status::DRIVER);
    wr(base, reg::STATUS, 0);
    wr(base, reg::STATUS, ack);
    wr(base, reg::STATUS, ack | drv);
    wr(base, reg::DEVICE_FEATURES_SEL, 1);
    let hi = u64::from(rd(base, reg::DEVICE_FEATURES)) << 32;
    wr(base, reg::DEVICE_FEATURES_SEL, 0);
    let features = hi | u64::from(rd(base, reg::DEVICE_FEATURES));
    if features & vm_abi::F_VERSION_1 == 0 {
        return Err(DeviceError::Features);
    }
    let accept =
        features & (vm_abi::F_VERSION_1 | vm_abi::F_9P_MOUNT_TAG | vm_abi::F_9P_NOTIFY_HERE);
    wr(base, reg::DRIVER_FEATURES_SEL, 1);
    wr(base, reg::DRIVER_FEATURES, (accept >> 32) as u32);
    wr(base, reg::DRIVER_FEATURES_SEL, 0);
    wr(base, reg::DRIVER_FEATURES, accept as u32);
    wr(base, reg::STATUS, ack | drv | status::FEATURES_OK);
    if rd(base, reg::STATUS) & status::FEATURES_OK == 0 {
        return Err(DeviceError::Features);
    }
    doorbell::offered(accept & vm_abi::F_9P_NOTIFY_HERE != 0);
    // Queue 0: descriptors, available ring, used ring, each page-aligned.
    wr(base, reg::QUEUE_SEL, 0);
    let max = rd(base, reg::QUEUE_NUM_MAX) as u16;
    let n = QUEUE_SIZE.min(max);
    if n == 0 {
        return Err(DeviceError::NotFound);
    }
    let pages_of = |bytes: usize| bytes.div_ceil(4096);
    let (desc_pages, avail_pages, used_pages) = (
        pages_of(16 * usize::from(n)),
        pages_of(6 + 2 * usize::from(n)),
        pages_of(6 + 8 * usize::from(n)),
    );
    let total = desc_pages + avail_pages + used_pages;
    let pages = mm::alloc_frames(total, 1).ok_or(DeviceError::NoMemory)?;
    let va = mm::phys_to_virt(pages);
    // SAFETY: `total` fresh frames owned by the driver, in the direct map.
    unsafe { core::ptr::write_bytes(va as *mut u8, 0, total * 4096) };
    let desc = pages;
    let avail = desc + 4096 * desc_pages as u64;
    let used = avail + 4096 * avail_pages as u64;
    wr(base, reg::QUEUE_NUM, u32::from(n));
    // Each register access is an exit to the VMM (≈ 85 µs on a PVM host),
    // so the zero upper halves, which the reset above left at 0, are not
    // written again, and the mount tag is not read (nothing uses it).
    for (off, addr) in [
        (reg::QUEUE_DESC_LOW, desc),
        (reg::QUEUE_DRIVER_LOW, avail),
        (reg::QUEUE_DEVICE_LOW, used),
    ] {
        wr(base, off, addr as u32);
        if addr >> 32 != 0 {
            wr(base, off + 4, (addr >> 32) as u32);
        }
    }
    wr(base, reg::QUEUE_READY, 1);
    let dev = Virtio9p {
        base,
        queue: IrqLock::new(Queue {
            desc: mm::phys_to_virt(desc) as *mut Desc,
            avail: mm::phys_to_virt(avail) as *mut u16,
            used: mm::phys_to_virt(used) as *mut u32,
            free: (0..n).rev().collect(),
            last_used: 0,
            avail_idx: 0,
        }),
        slots: (0..n)
            .map(|_| Slot {
                done: AtomicBool::new(false),
                len: AtomicU32::new(0),
                posted: AtomicBool::new(false),
                waits: AtomicBool::new(false),
                quick: AtomicBool::new(false),
                wq: WaitQueue::new(),
            })
            .collect(),
        room: WaitQueue::new(),
        sleepers: AtomicU32::new(0),
        idle: AtomicBool::new(false),
        in_flight: AtomicU32::new(0),
        waiting: AtomicU32::new(0),
        seen: core::sync::atomic::AtomicU16::new(0),
        used_idx: mm::phys_to_virt(used) + 2,
        used_flags: mm::phys_to_virt(used),
        gone: AtomicBool::new(false),
        notify_due: AtomicBool::new(false),
    };
    dev.set_avail_flags(VIRTQ_AVAIL_F_NO_INTERRUPT);
    wr(
        base,
        reg::STATUS,
        ack | drv | status::FEATURES_OK | status::DRIVER_OK,
    );
    let dev = DEVICE.call_once(|| dev);
    crate::sched::set_polled_device(crate::sched::PolledDevice {
        idle: |on| {
            if let Some(d) = DEVICE.get() {
                d.idle.store(on, Ordering::SeqCst);
                d.update_flags();
                if on {
                    d.notify();
                    d.reap();
                }
            }
        },
        poll,
        flush,
        pending: || {
            DEVICE
                .get()
                .is_some_and(|d| d.in_flight.load(Ordering::Relaxed) > 0)
        },
    });
    Ok(dev)
}

/// Tells the device about requests queued since it was last told (the
/// library OS is about to return to the program).
pub fn flush() {
    if let Some(d) = DEVICE.get() {
        d.notify();
    }
}

/// Requests queued, notifications sent (and left out while the device
/// polled), and completion interrupts taken
/// (for the exit summary of `--log info`).
static REQUESTS: AtomicU64 = AtomicU64::new(0);
static NOTIFICATIONS: AtomicU64 = AtomicU64::new(0);
static INTERRUPTS: AtomicU64 = AtomicU64::new(0);
/// Notifications left out because the device was polling the ring.
static SUPPRESSED: AtomicU64 = AtomicU64::new(0);
/// Notifications served on the vCPU's own thread (`QUEUE_NOTIFY_HERE`).
static HERE: AtomicU64 = AtomicU64::new(0);

/// (requests, notifications, notifications left out, interrupts,
/// notifications served on the vCPU's thread) so far.
pub fn stats() -> (u64, u64, u64, u64, u64) {
    (
        REQUESTS.load(Ordering::Relaxed),
        NOTIFICATIONS.load(Ordering::Relaxed),
        SUPPRESSED.load(Ordering::Relaxed),
        INTERRUPTS.load(Ordering::Relaxed),
        HERE.load(Ordering::Relaxed),
    )
}

/// New requests wait while a snapshot is being taken ([`hold`]).
static HELD: AtomicBool = AtomicBool::new(false);
/// Where they wait.
static RELEASED: WaitQueue = WaitQueue::new();

/// Holds back (`true`) or lets go (`false`) every new request, so that
/// the requests in flight can drain before a snapshot.
pub fn hold(on: bool) {
    HELD.store(on, Ordering::SeqCst);
    if !on {
        RELEASED.wake_all();
    }
}

/// Whether the device has answered every request it was given, and has
/// been told of every one queued: nothing of the partition's is at the
/// gateway. Tells the device of queued requests as a side effect.
pub fn quiescent() -> bool {
    let Some(d) = DEVICE.get() else {
        return true;
    };
    d.notify();
    let q = d.queue.lock();
    // SAFETY: the used ring's index word, in frames the driver owns for
    // the partition's life; the device writes it, so read it volatile.
    let used = unsafe { read_volatile(d.used_idx as *const u16) };
    used == q.avail_idx && !d.notify_due.load(Ordering::SeqCst)
}

/// Whether every request in flight is a posted read or open waiting for
/// the network ([`Slot::waits`]), and there is at least one: a snapshot
/// may have them interrupted (`port::SNAPSHOT_INTERRUPT`).
pub fn only_waits() -> bool {
    DEVICE.get().is_some_and(|d| {
        let waiting = d.waiting.load(Ordering::SeqCst);
        waiting > 0 && d.in_flight.load(Ordering::SeqCst) == waiting
    })
}

/// After a restore: the device that served the ring before was polling
/// it and may have left the used ring's "no notification" flag set; the
/// new one is not polling yet.
pub fn restored() {
    if let Some(d) = DEVICE.get() {
        // SAFETY: the used ring's flags word, in frames the driver owns;
        // the device is not running (the vCPU has not left the kernel
        // since the restore), and writes it only when it polls.
        unsafe { core::ptr::write_volatile(d.used_flags as *mut u16, 0) };
        d.notify_due.store(false, Ordering::SeqCst);
    }
}

/// Collects completions that came, if any (cheap when none did).
pub fn poll() {
    if let Some(d) = DEVICE.get() {
        // SAFETY: the used ring's index word, in frames the driver owns for
        // the partition's life; the device writes it, so read it volatile.
        let idx = unsafe { read_volatile(d.used_idx as *const u16) };
        if idx != d.seen.load(Ordering::Relaxed) {
            d.reap();
        }
    }
}

/// The device, once probed.
pub fn device() -> Option<&'static Virtio9p> {
    DEVICE.get()
}

/// The completion interrupt.
pub fn interrupt() {
    INTERRUPTS.fetch_add(1, Ordering::Relaxed);
    if let Some(d) = DEVICE.get() {
        if ACK_INTERRUPTS.load(Ordering::Relaxed) {
            // A line-based interrupt stays raised until acknowledged: clear
            // it before looking at the queue, so a completion that comes
            // meanwhile raises it again.
            let pending = rd(d.base, reg::INTERRUPT_STATUS);
            wr(d.base, reg::INTERRUPT_ACK, pending);
        }
        d.reap();
    }
}

/// Whether the interrupt handler acknowledges the device (an interrupt line
/// under another VMM). Our VMM signals completions with edge-like MSIs and
/// needs no acknowledgement, which would cost an exit each.
static ACK_INTERRUPTS: AtomicBool = AtomicBool::new(false);

/// Makes the interrupt handler acknowledge the device's interrupt status.
pub fn acknowledge_interrupts(on: bool) {
    ACK_INTERRUPTS.store(on, Ordering::Relaxed);
}

impl Virtio9p {
    /// Sends `request` (a complete T-message) and waits for the reply, which
    /// is written to `reply`; returns the reply's length.
    pub fn request(&self, request: &[u8], reply: &mut [u8]) -> Result<usize, DeviceError> {
        let head = self.submit(
            (
                mm::virt_to_phys(request.as_ptr() as u64),
                request.len() as u32,
            ),
            (
                mm::virt_to_phys(reply.as_mut_ptr() as u64),
                reply.len() as u32,
            ),
        )?;
        self.wait(head, reply.len())
    }

    /// Sends every request at once (the device is told once) and then waits
    /// for each reply, written to the matching buffer of `replies`; returns
    /// each reply's length.
    pub fn request_many(
        &self,
        requests: &[&[u8]],
        replies: &mut [&mut [u8]],
    ) -> Vec<Result<usize, DeviceError>> {
        let heads: Vec<Result<u16, DeviceError>> = requests
            .iter()
            .zip(replies.iter_mut())
            .map(|(q, r)| {
                self.submit(
                    (mm::virt_to_phys(q.as_ptr() as u64), q.len() as u32),
                    (mm::virt_to_phys(r.as_mut_ptr() as u64), r.len() as u32),
                )
            })
            .collect();
        heads
            .into_iter()
            .zip(replies.iter())
            .map(|(h, r)| h.and_then(|h| self.wait(h, r.len())))
            .collect()
    }

    /// Sends `request` and has the reply's first `header.len()` bytes
    /// written to `header` and the rest straight to the guest-physical
    /// range `data` (a read lands where it is wanted, without a copy);
    /// returns the reply's whole length.
    pub fn request_split(
        &self,
        request: &[u8],
        header: &mut [u8],
        data: (u64, u32),
    ) -> Result<usize, DeviceError> {
        let head =
            self.submit_chain(&[readable(request), writable(header), (data.0, data.1, true)])?;
        self.wait(head, header.len() + data.1 as usize)
    }

    /// The first half of [`request_split`](Self::request_split): queues
    /// the request and returns its chain's head for [`complete`]; `None`
    /// when the ring has no room now (nothing was queued). `request`,
    /// `header` and the range `data` must stay in place until then.
    ///
    /// [`complete`]: Self::complete
    pub fn submit_split(
        &self,
        request: &[u8],
        header: &mut [u8],
        data: (u64, u32),
    ) -> Result<Option<u16>, DeviceError> {
        self.submit_chain_if(
            &[readable(request), writable(header), (data.0, data.1, true)],
            false,
        )
    }

    /// The first half of [`request_gather`](Self::request_gather): queues
    /// the request and returns its chain's head for [`complete`]; `None`
    /// when the ring has no room now. The three ranges must stay in place
    /// until then.
    ///
    /// [`complete`]: Self::complete
    pub fn submit_gather(
        &self,
        header: &[u8],
        data: &[u8],
        reply: &mut [u8],
    ) -> Result<Option<u16>, DeviceError> {
        self.submit_chain_if(&[readable(header), readable(data), writable(reply)], false)
    }

    /// Waits for the reply to the request queued at `head` by
    /// [`submit_split`](Self::submit_split) or
    /// [`submit_gather`](Self::submit_gather); `room` is the bytes its
    /// reply may take. Returns the reply's length.
    pub fn complete(&self, head: u16, room: usize) -> Result<usize, DeviceError> {
        self.wait(head, room)
    }

    /// Sends a request made of `header` followed by `data` (two readable
    /// descriptors: a write's payload goes from where it is, without being
    /// copied behind its header) and waits for the reply in `reply`; both
    /// byte ranges must be kernel memory (one guest-physical range each).
    pub fn request_gather(
        &self,
        header: &[u8],
        data: &[u8],
        reply: &mut [u8],
    ) -> Result<usize, DeviceError> {
        let head = self.submit_chain(&[readable(header), readable(data), writable(reply)])?;
        self.wait(head, reply.len())
    }

    /// Posts a request whose descriptors name arbitrary guest-physical
    /// ranges, as a hostile or buggy driver might; for tests of the VMM's
    /// checks. The device must refuse ranges outside guest RAM.
    pub fn request_raw(
        &self,
        request: (u64, u32),
        reply: (u64, u32),
    ) -> Result<usize, DeviceError> {
        // Not looked into: the request need not be in guest RAM.
        let parts = [(request.0, request.1, false), (reply.0, reply.1, true)];
        let head = loop {
            if let Some(h) = self.submit_parts(&parts, true, false)? {
                break h;
            }
        };
        self.wait(head, reply.1 as usize)
    }

    fn wait(&self, head: u16, room: usize) -> Result<usize, DeviceError> {
        // A reply may take long enough to sleep for: never with a lock held
        // (another thread would find it taken), even when this one is quick.
        crate::sync::assert_none_held("a 9P request, which may sleep,");
        let slot = &self.slots[usize::from(head)];
        // A request that waits for the network (a socket's posted read)
        // has no reply coming soon: it sleeps at once, leaving the CPU.
        let poll = if slot.posted.load(Ordering::Relaxed) {
            0
        } else {
            POLL_NS
        };
        let here = doorbell::here();
        let t0 = crate::time::monotonic_ns();
        if poll > 0 {
            // Spinning for a reply the device has not been told about would
            // wait forever.
            self.notify();
        }
        let deadline = crate::time::monotonic_ns() + poll;
        // Spinning only pays while nobody else could use the CPU.
        while !slot.done.load(Ordering::Acquire)
            && crate::time::monotonic_ns() < deadline
            && !crate::sched::others_ready()
        {
            self.reap();
            core::hint::spin_loop();
        }
        if !slot.done.load(Ordering::Acquire) {
            // Ask for interrupts again, then look once more: a completion
            // that raced with the flag change was added without one.
            // A posted request's waiter does not need the interrupt: its
            // completion is polled while the CPU is busy, and interrupts
            // when it goes idle.
            let counted = poll > 0;
            if counted && self.sleepers.fetch_add(1, Ordering::SeqCst) == 0 {
                self.update_flags();
            }
            self.reap();
            slot.wq.wait_while(|| !slot.done.load(Ordering::Acquire));
            if counted && self.sleepers.fetch_sub(1, Ordering::SeqCst) == 1 {
                self.update_flags();
            }
        }
        if poll > 0 && slot.quick.load(Ordering::Relaxed) {
            doorbell::waited(crate::time::monotonic_ns().saturating_sub(t0), here);
        }
        let len = slot.len.load(Ordering::Acquire) as usize;
        slot.done.store(false, Ordering::Relaxed);
        self.in_flight.fetch_sub(1, Ordering::Relaxed);
        if slot.waits.swap(false, Ordering::Relaxed) {
            self.waiting.fetch_sub(1, Ordering::Relaxed);
        }
        {
            let mut q = self.queue.lock();
            let mut id = head;
            loop {
                // SAFETY: `id` < queue size (ours, from the free list); the
                // device is done with this chain.
                let d = unsafe { core::ptr::read_volatile(q.desc.add(usize::from(id))) };
                q.free.push(id);
                if d.flags & DESC_F_NEXT == 0 {
                    break;
                }
                id = d.next;
            }
        }
        // All: a waiter of the other class may be the one that fits now.
        self.room.wake_all();
        if len == 0 && self.gone.load(Ordering::Acquire) {
            return Err(DeviceError::Gone);
        }
        if len == 0 || len > room {
            return Err(DeviceError::BadReply);
        }
        Ok(len)
    }

    fn set_avail_flags(&self, flags: u16) {
        let q = self.queue.lock();
        // SAFETY: the available ring's first field is the driver's flags word.
        unsafe { write_volatile(q.avail, flags) };
        fence(Ordering::SeqCst);
    }

    /// Asks for interrupts exactly while someone sleeps on a reply or the
    /// CPU is idle. Decided under the queue lock, so concurrent updates
    /// leave the flag matching the last state.
    fn update_flags(&self) {
        let q = self.queue.lock();
        let want = self.sleepers.load(Ordering::SeqCst) > 0 || self.idle.load(Ordering::SeqCst);
        let flags = if want { 0 } else { VIRTQ_AVAIL_F_NO_INTERRUPT };
        // SAFETY: the available ring's first field is the driver's flags word.
        unsafe { write_volatile(q.avail, flags) };
        fence(Ordering::SeqCst);
    }

    /// Queues one request; blocks while the ring is full.
    fn submit(&self, request: (u64, u32), reply: (u64, u32)) -> Result<u16, DeviceError> {
        self.submit_chain(&[(request.0, request.1, false), (reply.0, reply.1, true)])
    }

    /// Queues one chain of `(guest-physical address, length, device writes)`
    /// descriptors; blocks while the ring has no room for it. Fails once
    /// the server has gone.
    fn submit_chain(&self, parts: &[(u64, u32, bool)]) -> Result<u16, DeviceError> {
        loop {
            if let Some(h) = self.submit_chain_if(parts, true)? {
                return Ok(h);
            }
        }
    }

    /// [`submit_chain`](Self::submit_chain); with `block` false, `None`
    /// at once when the ring has no room now.
    fn submit_chain_if(
        &self,
        parts: &[(u64, u32, bool)],
        block: bool,
    ) -> Result<Option<u16>, DeviceError> {
        self.submit_parts(parts, block, true)
    }

    /// [`submit_chain_if`](Self::submit_chain_if); `ours`: the first part
    /// is the library OS's own request bytes, whose message type it may
    /// read (not a raw test request, which may lie outside guest RAM).
    fn submit_parts(
        &self,
        parts: &[(u64, u32, bool)],
        block: bool,
        ours: bool,
    ) -> Result<Option<u16>, DeviceError> {
        let me = crate::sched::current();
        let (posted, file_io) = (me.posts(), me.file_io());
        drop(me);
        let need = parts.len()
            + if posted {
                RESERVED.min(self.slots.len() / 2)
            } else {
                0
            };
        loop {
            if HELD.load(Ordering::SeqCst) {
                RELEASED.wait_while(|| HELD.load(Ordering::SeqCst));
            }
            let mut q = self.queue.lock();
            if self.gone.load(Ordering::Acquire) {
                return Err(DeviceError::Gone);
            }
            if q.free.len() >= need {
                let keep = q.free.len() - parts.len();
                let ids: alloc::vec::Vec<u16> = q.free.drain(keep..).rev().collect();
                for (i, &(addr, len, write)) in parts.iter().enumerate() {
                    let last = i + 1 == parts.len();
                    let d = Desc {
                        addr,
                        len,
                        flags: if write { DESC_F_WRITE } else { 0 }
                            | if last { 0 } else { DESC_F_NEXT },
                        next: if last { 0 } else { ids[i + 1] },
                    };
                    // SAFETY: ids < queue size; the descriptor table is ours
                    // and the device reads it only after the index update.
                    unsafe { write_volatile(q.desc.add(usize::from(ids[i])), d) };
                }
                let h = ids[0];
                let slot = &self.slots[usize::from(h)];
                slot.posted.store(posted, Ordering::Relaxed);
                let ty = (ours && parts[0].1 > 4).then(|| {
                    // SAFETY: the first part is the request's readable
                    // kernel bytes (`readable`), at least 5 long: size[4]
                    // then the message type.
                    unsafe { read_volatile((mm::phys_to_virt(parts[0].0) + 4) as *const u8) }
                });
                let waits = posted
                    && ty.is_some_and(|t| {
                        t == astraea_9p::MsgType::Tread as u8
                            || t == astraea_9p::MsgType::Tlopen as u8
                    });
                slot.quick.store(
                    ty.is_some_and(|t| doorbell::quick_here(t, file_io)),
                    Ordering::Relaxed,
                );
                slot.waits.store(waits, Ordering::Relaxed);
                if waits {
                    self.waiting.fetch_add(1, Ordering::Relaxed);
                }
                let n = self.slots.len();
                // SAFETY: the available ring is ours; the device reads it
                // only after the index update below.
                unsafe {
                    let idx = q.avail_idx;
                    write_volatile(q.avail.add(2 + usize::from(idx) % n), h);
                    fence(Ordering::SeqCst);
                    q.avail_idx = idx.wrapping_add(1);
                    write_volatile(q.avail.add(1), q.avail_idx);
                }
                fence(Ordering::SeqCst);
                drop(q);
                self.in_flight.fetch_add(1, Ordering::Relaxed);
                self.notify_due.store(true, Ordering::SeqCst);
                REQUESTS.fetch_add(1, Ordering::Relaxed);
                return Ok(Some(h));
            }
            drop(q);
            if !block {
                return Ok(None);
            }
            // Room comes only from replies to requests the device knows of.
            self.notify();
            let q = &self.queue;
            let gone = &self.gone;
            self.room
                .wait_while(|| q.lock().free.len() < need && !gone.load(Ordering::Acquire));
        }
    }

    /// Notifies the device if requests were queued since the last time.
    fn notify(&self) {
        // A plain load first: every return to the program asks, and most
        // find nothing due (a swap is a locked instruction).
        if self.notify_due.load(Ordering::Relaxed) && self.notify_due.swap(false, Ordering::SeqCst)
        {
            // The device is polling the ring (it set the used ring's
            // NO_NOTIFY flag): it will find the requests without the exit.
            // The flag is read after the available index was published
            // (the fence), and the device looks at the index again after
            // clearing the flag, so one of the two always sees the other.
            fence(Ordering::SeqCst);
            doorbell::ringing();
            if doorbell::here() {
                HERE.fetch_add(1, Ordering::Relaxed);
                wr(self.base, reg::QUEUE_NOTIFY_HERE, 0);
                return;
            }
            // SAFETY: the used ring's first field is the device's flags
            // word, in frames the driver owns; the device writes it.
            let flags = unsafe { read_volatile(self.used_flags as *const u16) };
            if flags & VIRTQ_USED_F_NO_NOTIFY != 0 {
                SUPPRESSED.fetch_add(1, Ordering::Relaxed);
                return;
            }
            NOTIFICATIONS.fetch_add(1, Ordering::Relaxed);
            wr(self.base, reg::QUEUE_NOTIFY, 0);
        }
    }

    /// Takes completed requests off the used ring and wakes their waiters.
    fn reap(&self) {
        let n = self.slots.len() as u16;
        let mut q = self.queue.lock();
        loop {
            // SAFETY: the used ring is ours; the device writes it, so read volatile.
            let idx = unsafe { read_volatile(q.used.cast::<u16>().add(1)) };
            if idx == q.last_used {
                break;
            }
            fence(Ordering::SeqCst);
            let e = usize::from(q.last_used % n);
            // SAFETY: element `e` of the used ring (after the 4-byte header).
            let (id, len) = unsafe {
                (
                    read_volatile(q.used.add(1 + 2 * e)),
                    read_volatile(q.used.add(2 + 2 * e)),
                )
            };
            q.last_used = q.last_used.wrapping_add(1);
            self.seen.store(q.last_used, Ordering::Relaxed);
            if id == vm_abi::USED_ID_SERVER_GONE {
                // Only the dead server knew which requests it had taken:
                // fail them all (an empty reply), and every later one.
                self.gone.store(true, Ordering::Release);
                for s in &self.slots {
                    s.len.store(0, Ordering::Relaxed);
                    s.done.store(true, Ordering::Release);
                    s.wq.wake_all();
                }
                self.room.wake_all();
                continue;
            }
            if let Some(s) = self.slots.get(id as usize) {
                s.len.store(len, Ordering::Relaxed);
                s.done.store(true, Ordering::Release);
                s.wq.wake_all();
            }
        }
    }
}
