//! The vhost-user transport: the gateway as the back end of a partition's
//! virtio-9p device, in its own process.
//!
//! The VMM (`astraea run --gateway vhost-user:SOCK`) keeps the device's
//! registers; once the guest driver is ready it hands this process the
//! guest's memory (the memfd behind guest RAM), the queue's addresses, the
//! queue-notify ioeventfd ("kick") and the completion irqfd ("call"). From
//! then on a request travels guest → KVM → this process → guest without the
//! VMM: a kick wakes [`VhostUserServer`]'s vring thread, which pops each
//! descriptor chain, copies its readable part (the T-message) out of guest
//! memory and submits it to a gateway [`Session`]; the reply continuation,
//! on whichever worker thread answers, writes the R-message into the chain's
//! writable descriptors, marks the chain used and raises the guest's MSI
//! through the irqfd.
//!
//! The device is one virtqueue of up to [`VHOST_QUEUE_SIZE`] descriptors,
//! with `VIRTIO_F_VERSION_1` and `VIRTIO_9P_MOUNT_TAG`; `GET_CONFIG` answers
//! the 9P config space (le16 tag length, then the tag). A chain that names
//! memory outside the table the VMM sent, or that is otherwise malformed, is
//! answered with a used length of 0 and the device keeps serving.

use std::io;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use vhost::vhost_user::message::{VhostUserProtocolFeatures, VhostUserVirtioFeatures};
use vhost::vhost_user::{Error as VhostUserError, Listener};
use vhost_user_backend::{VhostUserBackendMut, VhostUserDaemon, VringRwLock, VringT};
use virtio_queue::{DescriptorChain, QueueT};
use vm_memory::{
    Bytes, GuestAddress, GuestAddressSpace, GuestMemoryAtomic, GuestMemoryBackend, GuestMemoryMmap,
};
use vmm_sys_util::epoll::EventSet;
use vmm_sys_util::event::{
    EventConsumer, EventFlag, EventNotifier, new_event_consumer_and_notifier,
};

use crate::{Gateway, MAX_MSIZE, Session};

/// The mount tag the device announces unless told otherwise.
pub const VHOST_MOUNT_TAG: &str = "astraea";
/// Largest queue the device accepts.
pub const VHOST_QUEUE_SIZE: u16 = 16384;
/// Longest mount tag (the guest driver reads at most this many bytes).
pub const MAX_TAG_LEN: usize = 256;

/// Feature: the device follows virtio 1.x.
const VIRTIO_F_VERSION_1: u64 = 1 << 32;
/// Feature (9P): the config space holds a mount tag.
const VIRTIO_9P_MOUNT_TAG: u64 = 1;
/// Largest request accepted from the guest (the largest msize plus headers).
const MAX_REQUEST: usize = MAX_MSIZE as usize + 4096;
/// Smallest 9P message: size[4] type[1] tag[2].
const HEADER_LEN: usize = 7;

/// What can go wrong serving the vhost-user socket.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VhostError {
    /// The socket cannot be created.
    #[error(
        "cannot listen on the vhost-user socket {path}: {source}. Check that its directory \
         exists and is writable, and that no other file has that name"
    )]
    Bind {
        /// The socket path.
        path: PathBuf,
        /// Why it failed.
        source: io::Error,
    },
    /// The mount tag is empty or too long.
    #[error("invalid mount tag {0:?}: give 1 to {MAX_TAG_LEN} bytes")]
    BadTag(String),
    /// The vhost-user machinery could not be started (threads, epoll).
    #[error("cannot start the vhost-user back end: {0}")]
    Start(String),
    /// Accepting the frontend's connection failed.
    #[error("cannot accept a frontend on {path}: {reason}")]
    Accept {
        /// The socket path.
        path: PathBuf,
        /// Why it failed.
        reason: String,
    },
    /// The frontend broke the vhost-user protocol; the connection was closed.
    #[error("the vhost-user connection on {path} failed: {reason}")]
    Protocol {
        /// The socket path.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
}

/// Counters of one connection (for logs and tests).
#[derive(Debug, Default)]
pub struct VhostStats {
    /// Requests submitted to the session.
    pub requests: AtomicU64,
    /// Replies written back and signalled.
    pub replies: AtomicU64,
    /// Descriptor chains refused (answered with a used length of 0).
    pub rejected: AtomicU64,
}

type Mem = GuestMemoryAtomic<GuestMemoryMmap>;

/// The virtio-9p device behind one frontend connection.
struct NinePDevice {
    session: Arc<Session>,
    mem: Mem,
    config: Vec<u8>,
    stats: Arc<VhostStats>,
}

impl NinePDevice {
    /// Takes every available chain off `vring` and submits it.
    fn drain(&self, vring: &VringRwLock) {
        loop {
            let mem = self.mem.memory();
            let popped = {
                let mut state = vring.get_mut();
                let queue = state.get_queue_mut();
                if !queue.ready() {
                    return;
                }
                queue
                    .pop_descriptor_chain(&*mem)
                    .map(|chain| gather_request(&mem, chain))
            };
            match popped {
                None => return,
                Some(Ok(req)) => {
                    self.stats.requests.fetch_add(1, Ordering::Relaxed);
                    let (vring, mem, stats) =
                        (vring.clone(), self.mem.clone(), Arc::clone(&self.stats));
                    let Request {
                        head,
                        frame,
                        segments,
                    } = req;
                    self.session.submit(
                        frame,
                        Box::new(move |reply| {
                            let written = write_reply(&mem, head, &segments, &reply);
                            complete(&mem, &vring, head, written);
                            stats.replies.fetch_add(1, Ordering::Relaxed);
                        }),
                    );
                }
                Some(Err((head, why))) => {
                    log_rejected_chain(head, why);
                    self.stats.rejected.fetch_add(1, Ordering::Relaxed);
                    complete(&self.mem, vring, head, 0);
                }
            }
        }
    }
}

/// One vring of a [`NinePDevice`], served by [`serve_kick`].
struct PolledVring<'a> {
    dev: &'a NinePDevice,
    vring: &'a VringRwLock,
}

impl PolledQueue for PolledVring<'_> {
    fn drain(&self) {
        self.dev.drain(self.vring);
    }

    fn pending(&self) -> bool {
        let mem = self.dev.mem.memory();
        let state = self.vring.get_ref();
        let q = state.get_queue();
        q.ready()
            && q.avail_idx(&*mem, Ordering::Acquire)
                .is_ok_and(|i| i.0 != q.next_avail())
    }

    fn set_notifications(&self, on: bool) -> bool {
        let mem = self.dev.mem.memory();
        let mut state = self.vring.get_mut();
        let q = state.get_queue_mut();
        if on {
            q.enable_notification(&*mem).unwrap_or(false)
        } else {
            let _ = q.disable_notification(&*mem);
            false
        }
    }
}

impl VhostUserBackendMut for NinePDevice {
    type Bitmap = ();
    type Vring = VringRwLock;

    fn num_queues(&self) -> usize {
        1
    }

    fn max_queue_size(&self) -> usize {
        usize::from(VHOST_QUEUE_SIZE)
    }

    fn features(&self) -> u64 {
        VIRTIO_F_VERSION_1 | VIRTIO_9P_MOUNT_TAG | VhostUserVirtioFeatures::PROTOCOL_FEATURES.bits()
    }

    fn acked_features(&mut self, features: u64) {
        tracing::debug!(features = format_args!("{features:#x}"), "features acked");
    }

    fn protocol_features(&self) -> VhostUserProtocolFeatures {
        // REPLY_ACK is added by the vhost crate itself.
        VhostUserProtocolFeatures::CONFIG
    }

    fn set_event_idx(&mut self, enabled: bool) {
        // VIRTIO_RING_F_EVENT_IDX is never offered, so this stays false.
        if enabled {
            tracing::warn!("the frontend enabled EVENT_IDX, which this device does not offer");
        }
    }

    fn get_config(&self, offset: u32, size: u32) -> Vec<u8> {
        // Reads past the tag see zeros; the vhost crate refuses a reply of
        // the wrong length, so always answer exactly `size` bytes.
        let (off, n) = (offset as usize, size as usize);
        (off..off.saturating_add(n))
            .map(|i| self.config.get(i).copied().unwrap_or(0))
            .collect()
    }

    fn update_memory(&mut self, mem: Mem) -> io::Result<()> {
        let m = mem.memory();
        for r in m.iter() {
            use vm_memory::GuestMemoryRegion;
            tracing::debug!(
                gpa = format_args!("{:#x}", r.start_addr().0),
                len = r.len(),
                "guest memory region mapped"
            );
        }
        self.mem = mem;
        Ok(())
    }

    fn exit_event(&self, _thread_index: usize) -> Option<(EventConsumer, EventNotifier)> {
        match new_event_consumer_and_notifier(EventFlag::NONBLOCK | EventFlag::CLOEXEC) {
            Ok(pair) => Some(pair),
            Err(e) => {
                tracing::error!("cannot create the vring thread's exit event: {e}");
                None
            }
        }
    }

    fn handle_event(
        &mut self,
        device_event: u16,
        evset: EventSet,
        vrings: &[VringRwLock],
        _thread_id: usize,
    ) -> io::Result<()> {
        if evset != EventSet::IN {
            tracing::warn!(?evset, "unexpected vring event");
            return Ok(());
        }
        match vrings.get(usize::from(device_event)) {
            Some(vring) => serve_kick(&PolledVring { dev: self, vring }, KICK_POLL),
            None => tracing::warn!(device_event, "event for an unknown queue"),
        }
        Ok(())
    }
}

/// One popped request: its head, its T-message, where its reply goes.
#[derive(Debug)]
pub struct Request {
    /// The chain's head descriptor, to mark used.
    pub head: u16,
    /// The T-message.
    pub frame: Vec<u8>,
    /// The writable `(guest address, length)` ranges for the R-message.
    pub segments: Vec<(u64, u32)>,
}

/// Logs a descriptor chain refused by [`gather_request`]: the first ten,
/// then one in 10,000 with the running count, so that a guest looping bad
/// chains cannot fill the host's disk with the log.
pub fn log_rejected_chain(head: u16, why: &str) {
    static REJECTED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = REJECTED.fetch_add(1, Ordering::Relaxed) + 1;
    if n <= 10 || n.is_multiple_of(10_000) {
        tracing::warn!(head, why, rejected = n, "rejected a 9P descriptor chain");
    }
}

/// How long a queue's server keeps looking for new requests after it has
/// served some, with the driver told not to notify: requests that come
/// meanwhile cost the guest no notification, which is an exit to the host
/// (≈ 11 µs of the vCPU's time on a PVM host).
pub const KICK_POLL: Duration = Duration::from_micros(50);

/// A virtqueue as [`serve_kick`] sees it.
pub trait PolledQueue {
    /// Takes every available chain off the queue and submits it.
    fn drain(&self);
    /// Whether the driver has made chains available that are not taken yet.
    fn pending(&self) -> bool;
    /// Turns the driver's notifications off (`VRING_USED_F_NO_NOTIFY`) or
    /// back on; turning them on returns whether chains came meanwhile (a
    /// request that raced with the change, which would otherwise wait for
    /// the next kick).
    fn set_notifications(&self, on: bool) -> bool;
}

/// Serves `q` after a kick: drains it, then polls it for up to `window`
/// (yielding the host CPU between looks) with notifications off, and drains
/// again whatever comes; returns with notifications on and nothing pending.
/// The driver checks the flag after publishing its available index, the
/// device re-checks the index after clearing the flag (both behind full
/// fences), so a request is never left without either a kick or a look.
pub fn serve_kick(q: &impl PolledQueue, window: Duration) {
    loop {
        q.set_notifications(false);
        q.drain();
        let until = std::time::Instant::now() + window;
        while !q.pending() && std::time::Instant::now() < until {
            std::thread::yield_now();
        }
        if q.pending() {
            continue;
        }
        if !q.set_notifications(true) {
            return;
        }
    }
}

/// Reads a descriptor chain into a [`Request`]: readable descriptors first
/// (the request), then writable ones (room for the reply). Every range is
/// checked against guest memory and the request is bounded by the largest
/// msize; a bad chain gives its head and why. Shared by every virtio
/// transport (the VMM's in-process device and this vhost-user backend).
pub fn gather_request<M>(
    mem: &GuestMemoryMmap,
    chain: DescriptorChain<M>,
) -> Result<Request, (u16, &'static str)>
where
    M: std::ops::Deref,
    M::Target: vm_memory::GuestMemory,
{
    let head = chain.head_index();
    let mut frame = Vec::new();
    let mut segments = Vec::new();
    let mut room = 0usize;
    for d in chain {
        let (addr, len) = (d.addr(), d.len());
        if mem.get_slice(addr, len as usize).is_err() {
            return Err((head, "descriptor outside guest memory"));
        }
        if d.is_write_only() {
            room += len as usize;
            segments.push((addr.0, len));
        } else {
            if !segments.is_empty() {
                return Err((head, "readable descriptor after a writable one"));
            }
            if frame.len() + len as usize > MAX_REQUEST {
                return Err((head, "request larger than the largest msize"));
            }
            let start = frame.len();
            frame.resize(start + len as usize, 0);
            if mem.read_slice(&mut frame[start..], addr).is_err() {
                return Err((head, "readable descriptor outside guest memory"));
            }
        }
    }
    // Trust the 9P size field only as far as the bytes the guest gave us.
    if let Some(sz) = frame
        .get(..4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
        && sz <= frame.len()
    {
        frame.truncate(sz);
    }
    if frame.len() < HEADER_LEN {
        return Err((head, "request shorter than a 9P header"));
    }
    if room == 0 {
        return Err((head, "no room for the reply"));
    }
    Ok(Request {
        head,
        frame,
        segments,
    })
}

/// Writes `reply` into the chain's writable ranges of the current memory
/// table; returns how many bytes were written.
fn write_reply(mem: &Mem, head: u16, segments: &[(u64, u32)], reply: &[u8]) -> u32 {
    scatter_reply(&*mem.memory(), head, segments, reply) as u32
}

/// Copies a 9P reply into a descriptor chain's writable `(address, length)`
/// ranges, in order; returns how many bytes fitted. Shared by every virtio
/// transport (the in-process device in the VMM and this vhost-user backend).
pub fn scatter_reply<M: Bytes<GuestAddress> + ?Sized>(
    mem: &M,
    head: u16,
    segments: &[(u64, u32)],
    reply: &[u8],
) -> usize {
    let mut written = 0usize;
    for &(addr, len) in segments {
        if written == reply.len() {
            break;
        }
        let n = (len as usize).min(reply.len() - written);
        if mem
            .write_slice(&reply[written..written + n], GuestAddress(addr))
            .is_err()
        {
            break;
        }
        written += n;
    }
    if written < reply.len() {
        tracing::warn!(
            head,
            need = reply.len(),
            written,
            "9P reply larger than the guest's buffers"
        );
    }
    written
}

/// Marks `head` used with `len` bytes and interrupts the guest if it wants to be.
fn complete(mem: &Mem, vring: &VringRwLock, head: u16, len: u32) {
    if let Err(e) = vring.add_used(head, len) {
        tracing::warn!(?e, head, "cannot complete a 9P request");
        return;
    }
    if vring.needs_notification().unwrap_or(true)
        && !driver_polls(mem, vring)
        && let Err(e) = vring.signal_used_queue()
    {
        tracing::warn!("cannot interrupt the guest: {e}");
    }
}

/// Whether the driver set `VIRTQ_AVAIL_F_NO_INTERRUPT`: it is polling the
/// used ring, and an interrupt (an exit into its vCPU) would only cost it.
/// `virtio-queue` leaves that flag to the device, as the VMM's own device
/// reads it. Read after the used index was published (`add_used` fences);
/// the driver clears the flag before it sleeps and then looks at the ring
/// again, so a completion is never left unseen.
fn driver_polls(mem: &Mem, vring: &VringRwLock) -> bool {
    const VIRTQ_AVAIL_F_NO_INTERRUPT: u16 = 1;
    let avail = vring.get_ref().get_queue().avail_ring();
    std::sync::atomic::fence(Ordering::SeqCst);
    mem.memory()
        .read_obj::<u16>(GuestAddress(avail))
        .is_ok_and(|flags| flags & VIRTQ_AVAIL_F_NO_INTERRUPT != 0)
}

/// A gateway serving one virtio-9p device on a vhost-user socket.
///
/// ```no_run
/// use astraea_gateway::{Gateway, GatewayConfig, VhostUserServer};
/// let gw = Gateway::new(GatewayConfig::default())?;
/// let mut server = VhostUserServer::bind(&gw, "/tmp/astraea-9p.sock")?;
/// server.serve_one()?; // until the VMM disconnects
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct VhostUserServer {
    gw: Arc<Gateway>,
    listener: Listener,
    path: PathBuf,
    tag: Vec<u8>,
    stats: Arc<VhostStats>,
}

impl std::fmt::Debug for VhostUserServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VhostUserServer")
            .field("path", &self.path)
            .field("tag", &String::from_utf8_lossy(&self.tag))
            .finish_non_exhaustive()
    }
}

impl VhostUserServer {
    /// Listens on `path`. A stale socket left there by an earlier run is
    /// replaced; any other file is an error. The socket is removed when the
    /// server is dropped.
    pub fn bind(gw: &Arc<Gateway>, path: impl AsRef<Path>) -> Result<Self, VhostError> {
        let path = path.as_ref().to_path_buf();
        if let Ok(meta) = std::fs::symlink_metadata(&path)
            && meta.file_type().is_socket()
        {
            let _ = std::fs::remove_file(&path);
        }
        let listener = Listener::new(&path, false).map_err(|e| VhostError::Bind {
            path: path.clone(),
            source: match e {
                VhostUserError::SocketError(io) => io,
                other => io::Error::other(other.to_string()),
            },
        })?;
        Ok(Self {
            gw: Arc::clone(gw),
            listener,
            path,
            tag: VHOST_MOUNT_TAG.as_bytes().to_vec(),
            stats: Arc::default(),
        })
    }

    /// Announces `tag` instead of [`VHOST_MOUNT_TAG`].
    pub fn set_tag(&mut self, tag: &str) -> Result<(), VhostError> {
        if tag.is_empty() || tag.len() > MAX_TAG_LEN {
            return Err(VhostError::BadTag(tag.to_owned()));
        }
        self.tag = tag.as_bytes().to_vec();
        Ok(())
    }

    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Counters over every connection served so far.
    pub fn stats(&self) -> Arc<VhostStats> {
        Arc::clone(&self.stats)
    }

    /// Waits for one frontend (a VMM) and serves its device until it
    /// disconnects. Each connection is a new 9P session; when it ends, the
    /// requests still waiting are cancelled.
    pub fn serve_one(&mut self) -> Result<(), VhostError> {
        self.accept()?.serve()
    }

    /// Waits for one frontend (a VMM) and returns its connection, which
    /// [`VhostConnection::serve`] serves (on another thread, if this one is
    /// to accept the next VMM meanwhile).
    pub fn accept(&mut self) -> Result<VhostConnection, VhostError> {
        let session = Arc::new(self.gw.session_nonblocking());
        let mem: Mem = GuestMemoryAtomic::new(GuestMemoryMmap::new());
        let mut config = (self.tag.len() as u16).to_le_bytes().to_vec();
        config.extend_from_slice(&self.tag);
        let device = Arc::new(RwLock::new(NinePDevice {
            session: Arc::clone(&session),
            mem: mem.clone(),
            config,
            stats: Arc::clone(&self.stats),
        }));
        let mut daemon = VhostUserDaemon::new("vhost-9p".into(), device, mem)
            .map_err(|e| VhostError::Start(e.to_string()))?;
        tracing::info!(path = %self.path.display(), "waiting for a VMM");
        daemon
            .start(&mut self.listener)
            .map_err(|e| VhostError::Accept {
                path: self.path.clone(),
                reason: e.to_string(),
            })?;
        tracing::info!("VMM connected");
        Ok(VhostConnection {
            daemon,
            session,
            path: self.path.clone(),
            stats: Arc::clone(&self.stats),
        })
    }
}

/// One VMM connected to a [`VhostUserServer`].
pub struct VhostConnection {
    daemon: VhostUserDaemon<Arc<RwLock<NinePDevice>>>,
    session: Arc<Session>,
    path: PathBuf,
    stats: Arc<VhostStats>,
}

impl std::fmt::Debug for VhostConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VhostConnection")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl VhostConnection {
    /// Serves the VMM's device until it disconnects; the requests still
    /// waiting are then cancelled.
    pub fn serve(mut self) -> Result<(), VhostError> {
        let result = self.daemon.wait();
        // Stop the vring thread (the daemon's Drop joins it).
        for handler in self.daemon.get_epoll_handlers() {
            handler.send_exit_event();
        }
        // The VMM is gone: nobody reads a reply any more, and a request
        // waiting on the network (a posted read, a listen) would keep its
        // host socket — a restarted partition's port — for a grace period.
        // Waits are cancelled at once; running file operations finish.
        if !self.session.shutdown(Duration::ZERO) {
            tracing::warn!("some 9P requests were still running when the VMM left");
        }
        drop(self.daemon);
        let s = &self.stats;
        tracing::info!(
            requests = s.requests.load(Ordering::Relaxed),
            replies = s.replies.load(Ordering::Relaxed),
            rejected = s.rejected.load(Ordering::Relaxed),
            "VMM disconnected"
        );
        match result {
            Ok(()) => Ok(()),
            Err(vhost_user_backend::Error::HandleRequest(
                VhostUserError::Disconnected | VhostUserError::PartialMessage,
            )) => Ok(()),
            Err(e) => Err(VhostError::Protocol {
                path: self.path,
                reason: e.to_string(),
            }),
        }
    }
}
