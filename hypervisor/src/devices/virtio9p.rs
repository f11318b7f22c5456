//! A virtio-9p device on the virtio-mmio transport (version 2).
//!
//! Register accesses trap to the VMM (they happen only while the driver sets
//! the device up). The request path does not: the guest's queue notification
//! is an ioeventfd that wakes this device's worker thread inside the host
//! kernel, and completions raise an MSI through an irqfd. Each descriptor
//! chain is one request: readable descriptors hold the T-message, writable
//! ones receive the R-message. Requests go to a [`NinePBackend`] and may be
//! answered out of order.
//!
//! The queue's data path is pluggable: [`Virtio9p::new`] serves it with the
//! in-process worker above, [`Virtio9p::with_data_path`] hands it to a
//! [`DataPath`] when the driver sets DRIVER_OK — the vhost-user path
//! ([`super::vhost_user::VhostUser`]) gives guest memory and both eventfds to
//! a gateway process, so requests never enter this process. The register
//! emulation (features, queue registers, config space) is the same for both.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use kvm_bindings::{
    KVM_IRQ_ROUTING_MSI, KvmIrqRouting, kvm_irq_routing_entry, kvm_irq_routing_entry__bindgen_ty_1,
    kvm_irq_routing_msi,
};
use kvm_ioctls::{IoEventAddress, NoDatamatch, VmFd};
use virtio_queue::{Queue, QueueT};
use vm_memory::{Address, Bytes, GuestAddress};
use vmm_sys_util::eventfd::EventFd;

use astraea_abi::virtio_mmio::{self as vm_abi, reg, status};

use crate::error::{VmmError, kvm_err};
use crate::memory::GuestMemory;
use crate::ninep::NinePBackend;

/// Size of the device's register window.
pub const MMIO_SIZE: u64 = 0x1000;
/// Descriptors in the request queue.
const QUEUE_SIZE: u16 = 16384;
/// The GSI that routes this device's irqfd to its MSI.
const GSI: u32 = 24;
/// Available-ring flag: the driver does not want an interrupt per completion.
const VIRTQ_AVAIL_F_NO_INTERRUPT: u16 = 1;
/// Device status bit: the device hit an error it cannot recover from.
const DEVICE_NEEDS_RESET: u32 = 0x40;

/// Queue 0 as the driver configured it (guest-physical addresses).
#[derive(Debug, Clone, Copy)]
pub struct QueueConfig {
    /// Descriptors in the queue.
    pub size: u16,
    /// The most the device accepts.
    pub max_size: u16,
    /// Descriptor table.
    pub desc_table: u64,
    /// Available ("driver") ring.
    pub avail_ring: u64,
    /// Used ("device") ring.
    pub used_ring: u64,
}

/// The device's registers and queue position, for a snapshot: enough to
/// set up a device that carries on serving the driver's ring where this
/// one stopped (the ring itself is in guest memory).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DeviceState {
    /// Features the driver accepted.
    pub driver_features: u64,
    /// The status register.
    pub status: u32,
    /// Queue 0's size.
    pub size: u16,
    /// Descriptor table.
    pub desc_table: u64,
    /// Available ring.
    pub avail_ring: u64,
    /// Used ring.
    pub used_ring: u64,
    /// Next available-ring entry the device takes.
    pub next_avail: u16,
    /// Next used-ring entry the device fills.
    pub next_used: u16,
    /// VIRTIO_F_EVENT_IDX negotiated.
    pub event_idx: bool,
}

/// What a [`DataPath`] gets when the driver sets DRIVER_OK.
pub struct Activation<'a> {
    /// Guest RAM.
    pub mem: &'a Arc<GuestMemory>,
    /// The features the driver accepted.
    pub driver_features: u64,
    /// Queue 0.
    pub queue: QueueConfig,
    /// The ioeventfd KVM signals when the guest writes QUEUE_NOTIFY.
    pub notify: &'a EventFd,
    /// The irqfd that raises the device's MSI in the guest.
    pub irq: &'a EventFd,
}

/// A data path that serves the device's queue instead of the in-process worker.
pub trait DataPath: Send {
    /// The feature bits offered to the driver.
    fn features(&self) -> u64;
    /// The driver set DRIVER_OK with queue 0 ready: start serving it. An
    /// error stops the device and ends the partition.
    fn activate(&mut self, dev: &Activation<'_>) -> Result<(), VmmError>;
    /// The driver reset the device after it was activated.
    fn reset(&mut self) {}
    /// The INTERRUPT_STATUS register, given the bits the VMM latched.
    fn interrupt_status(&self, latched: u32) -> u32 {
        latched
    }
}

/// The backend of a device whose queue is served elsewhere: it never sees a
/// request unless the VMM itself pops one, and then answers EIO.
struct Elsewhere;

impl NinePBackend for Elsewhere {
    fn submit(&self, frame: Vec<u8>, reply: crate::ninep::Reply) {
        let tag = frame
            .get(5..7)
            .map_or(0xffff, |t| u16::from_le_bytes([t[0], t[1]]));
        reply(crate::ninep::rlerror(tag, libc::EIO as u32));
    }
}

/// Where the device sits and how it interrupts.
#[derive(Debug, Clone, Copy)]
pub struct Placement {
    /// Guest-physical base of the register window.
    pub base: u64,
    /// Interrupt vector delivered to the boot CPU.
    pub vector: u8,
}

/// State shared with the worker and the reply continuations.
struct Shared {
    mem: Arc<GuestMemory>,
    queue: Mutex<Queue>,
    interrupt_status: AtomicU32,
    irq: EventFd,
}

impl Shared {
    /// Writes a reply into the chain's writable buffers and signals the guest.
    fn complete(&self, head: u16, segments: &[(u64, u32)], reply: &[u8]) {
        let written = astraea_gateway::scatter_reply(&*self.mem, head, segments, reply);
        let (added, avail) = {
            let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
            (q.add_used(&*self.mem, head, written as u32), q.avail_ring())
        };
        if let Err(e) = added {
            tracing::warn!(?e, "cannot complete 9P request");
            return;
        }
        self.interrupt_status.fetch_or(1, Ordering::SeqCst);
        // A driver that polls the used ring sets VIRTQ_AVAIL_F_NO_INTERRUPT;
        // an interrupt it does not need costs it far more than the poll.
        std::sync::atomic::fence(Ordering::SeqCst);
        let flags: u16 = self.mem.read_obj(GuestAddress(avail)).unwrap_or(0);
        if flags & VIRTQ_AVAIL_F_NO_INTERRUPT != 0 {
            return;
        }
        if let Err(e) = self.irq.write(1) {
            tracing::warn!(?e, "cannot raise the 9P interrupt");
        }
    }
}

/// The device.
pub struct Virtio9p {
    place: Placement,
    tag: Vec<u8>,
    backend: Arc<dyn NinePBackend>,
    shared: Arc<Shared>,
    notify: EventFd,
    device_features_sel: u32,
    driver_features_sel: u32,
    driver_features: u64,
    status: u32,
    queue_sel: u32,
    worker: Option<std::thread::JoinHandle<()>>,
    /// Serves the queue instead of the worker, if set.
    external: Option<Box<dyn DataPath>>,
    /// `external` was activated and not reset since.
    active: bool,
    /// Why the device stopped, until the partition picks it up.
    error: Option<VmmError>,
}

impl Virtio9p {
    /// Creates the device, served by the in-process worker and `backend`, and
    /// wires its notify ioeventfd and MSI irqfd into `vm`.
    pub fn new(
        vm: &VmFd,
        mem: Arc<GuestMemory>,
        place: Placement,
        tag: &str,
        backend: Arc<dyn NinePBackend>,
    ) -> Result<Self, VmmError> {
        Self::build(vm, mem, place, tag, backend, None)
    }

    /// Creates the device with its queue served by `path` (the VMM keeps
    /// only the registers), and wires its eventfds into `vm`.
    pub fn with_data_path(
        vm: &VmFd,
        mem: Arc<GuestMemory>,
        place: Placement,
        tag: &str,
        path: Box<dyn DataPath>,
    ) -> Result<Self, VmmError> {
        Self::build(vm, mem, place, tag, Arc::new(Elsewhere), Some(path))
    }

    /// The server behind the queue has gone (a vhost-user gateway that
    /// died): tells the driver by adding a used element with
    /// [`vm_abi::USED_ID_SERVER_GONE`] and interrupting, so that the
    /// requests in flight (whose heads only the dead server knew) and every
    /// later one fail with EIO instead of waiting for ever. The device
    /// reports DEVICE_NEEDS_RESET from then on.
    pub fn server_gone(&mut self) {
        self.status |= DEVICE_NEEDS_RESET;
        if !self.active {
            return;
        }
        let (used, size) = {
            let q = self.shared.queue.lock().unwrap_or_else(|e| e.into_inner());
            (q.used_ring(), q.size())
        };
        let mem = &*self.shared.mem;
        let idx_at = GuestAddress(used + 2);
        let Ok(idx) = mem.read_obj::<u16>(idx_at) else {
            tracing::warn!("the 9P used ring is not in guest RAM");
            return;
        };
        let elem = GuestAddress(used + 4 + 8 * u64::from(idx % size.max(1)));
        let written = mem
            .write_obj(vm_abi::USED_ID_SERVER_GONE, elem)
            .and_then(|()| mem.write_obj(0u32, elem.unchecked_add(4)));
        std::sync::atomic::fence(Ordering::SeqCst);
        if written
            .and_then(|()| mem.write_obj(idx.wrapping_add(1), idx_at))
            .is_err()
        {
            tracing::warn!("cannot tell the driver that the 9P server has gone");
            return;
        }
        self.shared.interrupt_status.fetch_or(1, Ordering::SeqCst);
        if let Err(e) = self.shared.irq.write(1) {
            tracing::warn!(?e, "cannot raise the 9P interrupt");
        }
    }

    /// The error that stopped the device, once: the partition cannot go on.
    pub fn take_error(&mut self) -> Option<VmmError> {
        self.error.take()
    }

    fn build(
        vm: &VmFd,
        mem: Arc<GuestMemory>,
        place: Placement,
        tag: &str,
        backend: Arc<dyn NinePBackend>,
        external: Option<Box<dyn DataPath>>,
    ) -> Result<Self, VmmError> {
        let io = |e: std::io::Error| VmmError::Boot(format!("9P device eventfd: {e}"));
        let notify = EventFd::new(libc::EFD_CLOEXEC).map_err(io)?;
        let irq = EventFd::new(libc::EFD_CLOEXEC).map_err(io)?;
        vm.register_ioevent(
            &notify,
            &IoEventAddress::Mmio(place.base + reg::QUEUE_NOTIFY),
            NoDatamatch,
        )
        .map_err(kvm_err("KVM_IOEVENTFD"))?;
        let entry = kvm_irq_routing_entry {
            gsi: GSI,
            type_: KVM_IRQ_ROUTING_MSI,
            u: kvm_irq_routing_entry__bindgen_ty_1 {
                msi: kvm_irq_routing_msi {
                    address_lo: 0xfee0_0000, // boot CPU, physical destination
                    data: u32::from(place.vector),
                    ..Default::default()
                },
            },
            ..Default::default()
        };
        let routing = KvmIrqRouting::from_entries(&[entry])
            .map_err(|e| VmmError::Boot(format!("IRQ routing: {e:?}")))?;
        vm.set_gsi_routing(&routing)
            .map_err(kvm_err("KVM_SET_GSI_ROUTING"))?;
        vm.register_irqfd(&irq, GSI).map_err(kvm_err("KVM_IRQFD"))?;
        let queue =
            Queue::new(QUEUE_SIZE).map_err(|e| VmmError::Boot(format!("virtqueue: {e:?}")))?;
        Ok(Self {
            place,
            tag: tag.as_bytes().to_vec(),
            backend,
            shared: Arc::new(Shared {
                mem,
                queue: Mutex::new(queue),
                interrupt_status: AtomicU32::new(0),
                irq,
            }),
            notify,
            device_features_sel: 0,
            driver_features_sel: 0,
            driver_features: 0,
            status: 0,
            queue_sel: 0,
            worker: None,
            external,
            active: false,
            error: None,
        })
    }

    /// The device's state for a snapshot: `None` when it cannot be carried
    /// over — its queue is served by another process (vhost-user), or the
    /// driver never set it up — or requests are still in the ring.
    pub fn state(&self) -> Result<Option<DeviceState>, String> {
        if self.external.is_some() {
            return Err(
                "the 9P device is served by a gateway process (vhost-user), whose state a snapshot cannot hold".into(),
            );
        }
        let q = self.shared.queue.lock().unwrap_or_else(|e| e.into_inner());
        if !q.ready() || self.worker.is_none() {
            return Ok(None);
        }
        let avail = q
            .avail_idx(&*self.shared.mem, Ordering::Acquire)
            .map_err(|e| format!("reading the 9P available ring: {e:?}"))?;
        if avail.0 != q.next_avail() || q.next_avail() != q.next_used() {
            return Err(format!(
                "9P requests are in the ring (available {}, taken {}, answered {})",
                avail.0,
                q.next_avail(),
                q.next_used()
            ));
        }
        Ok(Some(DeviceState {
            driver_features: self.driver_features,
            status: self.status,
            size: q.size(),
            desc_table: q.desc_table(),
            avail_ring: q.avail_ring(),
            used_ring: q.used_ring(),
            next_avail: q.next_avail(),
            next_used: q.next_used(),
            event_idx: q.event_idx_enabled(),
        }))
    }

    /// Sets a fresh device up as `s` describes and starts serving the
    /// ring (a partition restored from a snapshot: its driver set the
    /// device up before the snapshot and will not again).
    pub fn restore(&mut self, s: &DeviceState) -> Result<(), VmmError> {
        {
            let mut q = self.shared.queue.lock().unwrap_or_else(|e| e.into_inner());
            q.set_size(s.size);
            let lo_hi = |a: u64| (Some(a as u32), Some((a >> 32) as u32));
            let (lo, hi) = lo_hi(s.desc_table);
            q.set_desc_table_address(lo, hi);
            let (lo, hi) = lo_hi(s.avail_ring);
            q.set_avail_ring_address(lo, hi);
            let (lo, hi) = lo_hi(s.used_ring);
            q.set_used_ring_address(lo, hi);
            q.set_event_idx(s.event_idx);
            q.set_next_avail(s.next_avail);
            q.set_next_used(s.next_used);
            q.set_ready(true);
            if !q.is_valid(&*self.shared.mem) {
                return Err(VmmError::Boot(
                    "the snapshot's 9P queue does not lie in guest RAM".into(),
                ));
            }
        }
        self.driver_features = s.driver_features;
        self.status = s.status;
        let h = self
            .start_worker()
            .map_err(|e| VmmError::Boot(format!("cannot start the 9P worker: {e}")))?;
        self.worker = Some(h);
        Ok(())
    }

    /// Whether `addr` is in this device's register window.
    pub fn covers(&self, addr: u64) -> bool {
        (self.place.base..self.place.base + MMIO_SIZE).contains(&addr)
    }

    fn features(&self) -> u64 {
        match &self.external {
            Some(p) => p.features(),
            None => vm_abi::F_VERSION_1 | vm_abi::F_9P_MOUNT_TAG | vm_abi::F_9P_NOTIFY_HERE,
        }
    }

    /// A guest read of the register window.
    pub fn read(&mut self, addr: u64, data: &mut [u8]) {
        let off = addr - self.place.base;
        if off >= reg::CONFIG {
            // Config space: le16 tag length, then the tag.
            let mut cfg = (self.tag.len() as u16).to_le_bytes().to_vec();
            cfg.extend_from_slice(&self.tag);
            for (i, b) in data.iter_mut().enumerate() {
                *b = cfg
                    .get((off - reg::CONFIG) as usize + i)
                    .copied()
                    .unwrap_or(0);
            }
            return;
        }
        let q = self.shared.queue.lock().unwrap_or_else(|e| e.into_inner());
        let v: u32 = match off {
            reg::MAGIC => vm_abi::MAGIC,
            reg::VERSION => vm_abi::VERSION,
            reg::DEVICE_ID => vm_abi::DEVICE_ID_9P,
            reg::VENDOR_ID => 0x5254_5341, // "ASTR"
            reg::DEVICE_FEATURES => {
                (self.features() >> (32 * self.device_features_sel.min(1))) as u32
            }
            reg::QUEUE_NUM_MAX if self.queue_sel == 0 => u32::from(q.max_size()),
            reg::QUEUE_READY => u32::from(self.queue_sel == 0 && q.ready()),
            reg::INTERRUPT_STATUS => {
                let latched = self.shared.interrupt_status.load(Ordering::SeqCst);
                self.external
                    .as_ref()
                    .map_or(latched, |p| p.interrupt_status(latched))
            }
            reg::STATUS => self.status,
            reg::CONFIG_GENERATION => 0,
            _ => 0,
        };
        let b = v.to_le_bytes();
        let n = data.len().min(4);
        data[..n].copy_from_slice(&b[..n]);
    }

    /// A guest write to the register window.
    pub fn write(&mut self, addr: u64, data: &[u8]) {
        let off = addr - self.place.base;
        let mut b = [0u8; 4];
        let n = data.len().min(4);
        b[..n].copy_from_slice(&data[..n]);
        let v = u32::from_le_bytes(b);
        if off == reg::QUEUE_NOTIFY_HERE {
            if self.external.is_some() {
                // The external server has no thread here: a plain kick.
                let _ = self.notify.write(1);
            } else {
                astraea_gateway::serve_here(|| drain(&self.shared, &self.backend));
            }
            return;
        }
        if off == reg::QUEUE_NOTIFY && self.external.is_some() {
            // Normally the ioeventfd catches this write; if it trapped, pass
            // the kick on to whoever serves the queue.
            let _ = self.notify.write(1);
            return;
        }
        let sel0 = self.queue_sel == 0;
        {
            let mut q = self.shared.queue.lock().unwrap_or_else(|e| e.into_inner());
            match off {
                reg::DEVICE_FEATURES_SEL => self.device_features_sel = v,
                reg::DRIVER_FEATURES => {
                    let shift = 32 * self.driver_features_sel.min(1);
                    self.driver_features = (self.driver_features & !(0xffff_ffffu64 << shift))
                        | (u64::from(v) << shift);
                }
                reg::DRIVER_FEATURES_SEL => self.driver_features_sel = v,
                reg::QUEUE_SEL => self.queue_sel = v,
                reg::QUEUE_NUM if sel0 => q.set_size(v as u16),
                reg::QUEUE_READY if sel0 => q.set_ready(v == 1),
                reg::QUEUE_NOTIFY => {
                    // Normally the ioeventfd takes this write in the host
                    // kernel; if it ever traps, serve the queue right here.
                    drop(q);
                    drain(&self.shared, &self.backend);
                    return;
                }
                reg::INTERRUPT_ACK => {
                    self.shared.interrupt_status.fetch_and(!v, Ordering::SeqCst);
                }
                reg::QUEUE_DESC_LOW if sel0 => q.set_desc_table_address(Some(v), None),
                reg::QUEUE_DESC_HIGH if sel0 => q.set_desc_table_address(None, Some(v)),
                reg::QUEUE_DRIVER_LOW if sel0 => q.set_avail_ring_address(Some(v), None),
                reg::QUEUE_DRIVER_HIGH if sel0 => q.set_avail_ring_address(None, Some(v)),
                reg::QUEUE_DEVICE_LOW if sel0 => q.set_used_ring_address(Some(v), None),
                reg::QUEUE_DEVICE_HIGH if sel0 => q.set_used_ring_address(None, Some(v)),
                reg::STATUS => {}
                _ => tracing::debug!(off, v, "9P device: write to an unused register"),
            }
        }
        if off == reg::STATUS {
            self.set_status(v);
        }
    }

    fn set_status(&mut self, v: u32) {
        if v == 0 {
            // Reset: forget the queue; a running worker stops at its next wake-up.
            self.shared
                .queue
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .reset();
            self.status = 0;
            self.driver_features = 0;
            if let Some(p) = self.external.as_mut().filter(|_| self.active) {
                p.reset();
                self.active = false;
            }
            return;
        }
        self.status = v;
        if v & status::DRIVER_OK != 0
            && v & status::FAILED == 0
            && self.worker.is_none()
            && !self.active
        {
            let ready = self
                .shared
                .queue
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .ready();
            if !ready {
                tracing::warn!("9P driver set DRIVER_OK without a ready queue");
                return;
            }
            if self.external.is_some() {
                self.activate_external();
                return;
            }
            match self.start_worker() {
                Ok(h) => self.worker = Some(h),
                Err(e) => tracing::error!(?e, "cannot start the 9P worker"),
            }
        }
    }

    /// Hands the configured queue to the external data path.
    fn activate_external(&mut self) {
        let queue = {
            let q = self.shared.queue.lock().unwrap_or_else(|e| e.into_inner());
            QueueConfig {
                size: q.size(),
                max_size: q.max_size(),
                desc_table: q.desc_table(),
                avail_ring: q.avail_ring(),
                used_ring: q.used_ring(),
            }
        };
        let Some(path) = self.external.as_mut() else {
            return;
        };
        let activation = Activation {
            mem: &self.shared.mem,
            driver_features: self.driver_features,
            queue,
            notify: &self.notify,
            irq: &self.shared.irq,
        };
        match path.activate(&activation) {
            Ok(()) => self.active = true,
            Err(e) => {
                tracing::error!("cannot start the 9P device: {e}");
                self.status |= DEVICE_NEEDS_RESET;
                self.error = Some(e);
            }
        }
    }

    fn start_worker(&self) -> std::io::Result<std::thread::JoinHandle<()>> {
        let shared = self.shared.clone();
        let backend = self.backend.clone();
        let notify = self.notify.try_clone()?;
        std::thread::Builder::new()
            .name("virtio-9p".into())
            .spawn(move || {
                let q = Worker { shared, backend };
                while notify.read().is_ok() {
                    astraea_gateway::serve_kick(&q, astraea_gateway::KICK_POLL);
                }
            })
    }
}

/// The in-process worker's view of the queue, served by
/// [`astraea_gateway::serve_kick`].
struct Worker {
    shared: Arc<Shared>,
    backend: Arc<dyn NinePBackend>,
}

impl astraea_gateway::PolledQueue for Worker {
    fn drain(&self) {
        drain(&self.shared, &self.backend);
    }

    fn pending(&self) -> bool {
        let q = self.shared.queue.lock().unwrap_or_else(|e| e.into_inner());
        q.ready()
            && q.avail_idx(&*self.shared.mem, Ordering::Acquire)
                .is_ok_and(|i| i.0 != q.next_avail())
    }

    fn set_notifications(&self, on: bool) -> bool {
        let mut q = self.shared.queue.lock().unwrap_or_else(|e| e.into_inner());
        if !q.ready() {
            return false;
        }
        if on {
            q.enable_notification(&*self.shared.mem).unwrap_or(false)
        } else {
            let _ = q.disable_notification(&*self.shared.mem);
            false
        }
    }
}

/// Takes every available chain off the queue and submits it; returns
/// whether there was any.
fn drain(shared: &Arc<Shared>, backend: &Arc<dyn NinePBackend>) -> bool {
    let mut any = false;
    loop {
        let req = {
            let mut q = shared.queue.lock().unwrap_or_else(|e| e.into_inner());
            if !q.ready() {
                return any;
            }
            let Some(chain) = q.pop_descriptor_chain(shared.mem.clone()) else {
                return any;
            };
            any = true;
            astraea_gateway::gather_request(&shared.mem, chain)
        };
        match req {
            Ok(r) => {
                let s = shared.clone();
                let (head, segments) = (r.head, r.segments);
                backend.submit(
                    r.frame,
                    Box::new(move |reply| s.complete(head, &segments, &reply)),
                );
            }
            Err((head, why)) => {
                astraea_gateway::log_rejected_chain(head, why);
                // Answer with nothing: the driver sees a zero-length reply.
                let s = shared.clone();
                let _ = s
                    .queue
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .add_used(&*s.mem, head, 0);
                s.interrupt_status.fetch_or(1, Ordering::SeqCst);
                let _ = s.irq.write(1);
            }
        }
    }
}
