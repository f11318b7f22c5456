//! The vhost-user data path of the virtio-9p device: the queue is served by
//! a gateway process (`astraea-gateway --vhost-user SOCK`), not by the VMM.
//!
//! The VMM connects when the partition is created, so a missing gateway is
//! reported before the guest boots, and learns the device's features and
//! mount tag. When the guest driver sets DRIVER_OK, the VMM sends the
//! gateway the memory table (the memfd behind guest RAM, one entry per
//! region, with this process's addresses for them), the queue's size and
//! ring addresses (translated to this process's virtual addresses, as the
//! protocol wants), the queue-notify ioeventfd as the kick and the MSI irqfd
//! as the call. From then on the guest's requests go from KVM straight to
//! the gateway and its completions straight back: the VMM does no data-path
//! work at all.
//!
//! A watcher thread notices the gateway hang up (it died or left). The run
//! loop then fails the queue ([`super::virtio9p::Virtio9p::server_gone`]):
//! the guest's requests in flight and all later ones fail with EIO, the
//! program has [`GRACE`] to exit, and the partition ends with
//! [`VhostUserError::Lost`] (exit status 125) saying what the program did.

use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use vhost::vhost_user::message::{
    VhostUserConfigFlags, VhostUserHeaderFlag, VhostUserProtocolFeatures, VhostUserVirtioFeatures,
};
use vhost::vhost_user::{Frontend, VhostUserFrontend};
use vhost::{VhostBackend, VhostUserMemoryRegionInfo, VringConfigData};
use vm_memory::{GuestAddress, GuestMemoryBackend};
use vmm_sys_util::eventfd::EventFd;

use astraea_abi::virtio_mmio as vm_abi;

use super::virtio9p::{Activation, DataPath};
use crate::error::VmmError;

/// How long the VMM waits for the gateway to answer a setup request.
const REPLY_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest mount tag taken from the gateway's config space.
const MAX_TAG: usize = 256;
/// `VHOST_USER_F_PROTOCOL_FEATURES`.
const PROTOCOL_FEATURES: u64 = VhostUserVirtioFeatures::PROTOCOL_FEATURES.bits();

/// Why the vhost-user gateway cannot serve the partition's device.
#[derive(Debug, thiserror::Error)]
pub enum VhostUserError {
    /// Nothing listens on the socket.
    #[error(
        "cannot connect to the gateway at {socket}: {reason}, start it with \
         astraea-gateway --vhost-user {socket}"
    )]
    Connect {
        /// The socket path given.
        socket: String,
        /// Why the connection failed.
        reason: String,
    },
    /// Something listens, but it is not a virtio-9p vhost-user back end.
    #[error(
        "the vhost-user back end at {socket} cannot serve a 9P device: {reason}. \
         Start astraea-gateway --vhost-user {socket} there"
    )]
    NotNineP {
        /// The socket path given.
        socket: String,
        /// What is missing.
        reason: String,
    },
    /// A step of the device setup failed.
    #[error(
        "the gateway at {socket} failed during {step}: {reason}. It may have stopped or \
         refused this partition; see its log and restart it with astraea-gateway --vhost-user {socket}"
    )]
    Setup {
        /// The socket path given.
        socket: String,
        /// The vhost-user request that failed.
        step: &'static str,
        /// The error.
        reason: String,
    },
    /// The gateway closed the connection while the partition ran.
    #[error(
        "the gateway at {socket} closed the connection while the partition was running, \
         so the partition lost its files ({after}); see the gateway's log (it serves one \
         VMM per run unless started with --keep-listening)"
    )]
    Lost {
        socket: String,
        /// What the program did after its file operations began to fail.
        after: String,
    },
    #[error(
        "the guest's 9P queue ({what} at guest-physical {gpa:#x}, {len} bytes) is not in its RAM"
    )]
    QueueOutsideRam {
        /// Which part of the queue.
        what: &'static str,
        /// Where the guest put it.
        gpa: u64,
        /// Its size.
        len: usize,
    },
}

impl From<VhostUserError> for VmmError {
    fn from(e: VhostUserError) -> Self {
        VmmError::VhostUser(Box::new(e))
    }
}

/// A connection to a vhost-user 9P back end.
pub struct VhostUser {
    socket: String,
    frontend: Frontend,
    /// The back end's virtio features.
    features: u64,
    /// `VHOST_USER_F_PROTOCOL_FEATURES` was offered (and is acked with the rest).
    protocol: bool,
    /// The mount tag from the back end's config space, if it has one.
    tag: Option<String>,
    /// The ring is running (between DRIVER_OK and a reset).
    running: bool,
}

impl VhostUser {
    /// Connects to the back end at `socket` and negotiates what can be known
    /// before the guest runs: owner, features, protocol features, mount tag.
    pub fn connect(socket: &Path) -> Result<Self, VhostUserError> {
        let name = socket.display().to_string();
        let connect_err = |e: std::io::Error| VhostUserError::Connect {
            socket: name.clone(),
            reason: e.to_string(),
        };
        let stream = UnixStream::connect(socket).map_err(connect_err)?;
        // A gateway that accepted but never answers (one busy with another
        // VMM, or stuck) must not hang the partition. A read timeout alone
        // does not do it (the vhost crate retries a timed-out read forever),
        // so a watchdog shuts the socket down if setup takes too long.
        stream
            .set_read_timeout(Some(REPLY_TIMEOUT))
            .map_err(connect_err)?;
        let watchdog = SetupWatchdog::arm(&stream).map_err(connect_err)?;
        let mut frontend = Frontend::from_stream(stream, 1);
        let setup = |step: &'static str| {
            let socket = name.clone();
            let fired = watchdog.fired.clone();
            move |e: vhost::Error| VhostUserError::Setup {
                socket,
                step,
                reason: if fired.load(std::sync::atomic::Ordering::SeqCst) {
                    format!(
                        "no answer within {} s (is it busy serving another VMM? start it with --keep-listening to serve many)",
                        REPLY_TIMEOUT.as_secs()
                    )
                } else {
                    describe(&e)
                },
            }
        };
        frontend.set_owner().map_err(setup("SET_OWNER"))?;
        let features = frontend.get_features().map_err(setup("GET_FEATURES"))?;
        if features & vm_abi::F_VERSION_1 == 0 {
            return Err(VhostUserError::NotNineP {
                socket: name,
                reason: "it does not offer VIRTIO_F_VERSION_1".into(),
            });
        }
        let protocol = features & PROTOCOL_FEATURES != 0;
        let mut tag = None;
        if protocol {
            let offered = frontend
                .get_protocol_features()
                .map_err(setup("GET_PROTOCOL_FEATURES"))?;
            let wanted = offered
                & (VhostUserProtocolFeatures::CONFIG | VhostUserProtocolFeatures::REPLY_ACK);
            frontend
                .set_protocol_features(wanted)
                .map_err(setup("SET_PROTOCOL_FEATURES"))?;
            if wanted.contains(VhostUserProtocolFeatures::REPLY_ACK) {
                // Every setup request is acknowledged, so a refusal shows up
                // as an error here rather than as a silent stall later.
                frontend.set_hdr_flags(VhostUserHeaderFlag::NEED_REPLY);
            }
            if wanted.contains(VhostUserProtocolFeatures::CONFIG)
                && features & vm_abi::F_9P_MOUNT_TAG != 0
            {
                tag = read_tag(&mut frontend);
            }
        }
        drop(watchdog);
        tracing::debug!(
            socket = %name,
            features = format_args!("{features:#x}"),
            ?tag,
            "vhost-user gateway connected"
        );
        Ok(Self {
            socket: name,
            frontend,
            features,
            protocol,
            tag,
            running: false,
        })
    }

    /// The mount tag the back end announces, if it told.
    pub fn tag(&self) -> Option<&str> {
        self.tag.as_deref()
    }

    /// Starts watching the connection: if the gateway hangs up, `vcpu_thread`
    /// is interrupted (SIGUSR1, repeated until seen) and
    /// [`GatewayWatch::gone`] reports it, since the guest would otherwise wait
    /// for its replies forever; [`GRACE`] later it is interrupted again for
    /// [`GatewayWatch::expired`].
    pub fn watch(&self, vcpu_thread: libc::pthread_t) -> Result<GatewayWatch, VmmError> {
        let io = |e: std::io::Error| VmmError::Boot(format!("cannot watch the gateway: {e}"));
        // SAFETY: the descriptor is the frontend's open socket, which lives
        // as long as `self`; it is only borrowed here to be duplicated.
        let sock = unsafe { BorrowedFd::borrow_raw(self.frontend.as_raw_fd()) }
            .try_clone_to_owned()
            .map_err(io)?;
        let stop = EventFd::new(libc::EFD_CLOEXEC).map_err(io)?;
        let stop2 = stop.try_clone().map_err(io)?;
        let lost = Arc::new(AtomicU8::new(WATCHING));
        let flag = Arc::clone(&lost);
        install_wakeup_handler();
        std::thread::Builder::new()
            .name("vhost-user-watch".into())
            .spawn(move || watch_socket(&sock, &stop2, &flag, vcpu_thread))
            .map_err(io)?;
        Ok(GatewayWatch {
            socket: self.socket.clone(),
            lost,
            stop,
        })
    }

    fn setup_err(&self, step: &'static str) -> impl FnOnce(vhost::Error) -> VhostUserError + '_ {
        move |e| VhostUserError::Setup {
            socket: self.socket.clone(),
            step,
            reason: describe(&e),
        }
    }

    fn start(&mut self, dev: &Activation<'_>) -> Result<(), VhostUserError> {
        let q = dev.queue;
        let mut acked = dev.driver_features & self.features();
        if self.protocol {
            acked |= PROTOCOL_FEATURES;
        }
        self.frontend
            .set_features(acked)
            .map_err(self.setup_err("SET_FEATURES"))?;
        let regions = dev
            .mem
            .iter()
            .map(VhostUserMemoryRegionInfo::from_guest_region)
            .collect::<Result<Vec<_>, _>>()
            .map_err(self.setup_err("SET_MEM_TABLE"))?;
        self.frontend
            .set_mem_table(&regions)
            .map_err(self.setup_err("SET_MEM_TABLE"))?;
        self.frontend
            .set_vring_num(0, q.size)
            .map_err(self.setup_err("SET_VRING_NUM"))?;
        let n = usize::from(q.size);
        let config = VringConfigData {
            queue_max_size: q.max_size,
            queue_size: q.size,
            flags: 0,
            desc_table_addr: host_address(dev, "descriptor table", q.desc_table, 16 * n)?,
            used_ring_addr: host_address(dev, "used ring", q.used_ring, 6 + 8 * n)?,
            avail_ring_addr: host_address(dev, "available ring", q.avail_ring, 6 + 2 * n)?,
            log_addr: None,
        };
        self.frontend
            .set_vring_addr(0, &config)
            .map_err(self.setup_err("SET_VRING_ADDR"))?;
        self.frontend
            .set_vring_base(0, 0)
            .map_err(self.setup_err("SET_VRING_BASE"))?;
        self.frontend
            .set_vring_call(0, dev.irq)
            .map_err(self.setup_err("SET_VRING_CALL"))?;
        self.frontend
            .set_vring_kick(0, dev.notify)
            .map_err(self.setup_err("SET_VRING_KICK"))?;
        if self.protocol {
            self.frontend
                .set_vring_enable(0, true)
                .map_err(self.setup_err("SET_VRING_ENABLE"))?;
        }
        tracing::debug!(
            size = q.size,
            features = format_args!("{acked:#x}"),
            "9P queue handed to the vhost-user gateway"
        );
        Ok(())
    }
}

impl DataPath for VhostUser {
    fn features(&self) -> u64 {
        self.features & (vm_abi::F_VERSION_1 | vm_abi::F_9P_MOUNT_TAG)
    }

    fn activate(&mut self, dev: &Activation<'_>) -> Result<(), VmmError> {
        self.start(dev)?;
        self.running = true;
        Ok(())
    }

    fn reset(&mut self) {
        if !self.running {
            return;
        }
        self.running = false;
        // GET_VRING_BASE stops the ring in the back end.
        if let Err(e) = self.frontend.get_vring_base(0) {
            tracing::warn!("cannot stop the gateway's 9P queue: {e}");
        }
    }

    fn interrupt_status(&self, latched: u32) -> u32 {
        // The gateway raises the MSI itself, so the VMM never sees a
        // completion: while the ring runs, report "used buffer" (a driver
        // that polls this register then checks its used ring).
        latched | u32::from(self.running)
    }
}

const WATCHING: u8 = 0;
const LOST: u8 = 1;
const REPORTED: u8 = 2;
const EXPIRED: u8 = 3;
const DONE: u8 = 4;

/// How long a program may run on after its gateway has gone (its file
/// operations failing with EIO) before the partition is ended anyway.
pub const GRACE: Duration = Duration::from_secs(2);

/// Watches a gateway connection for the partition's run loop.
pub struct GatewayWatch {
    socket: String,
    lost: Arc<AtomicU8>,
    stop: EventFd,
}

impl GatewayWatch {
    /// Whether the gateway has just gone: true once, after which the
    /// device's requests are to be failed ([`super::virtio9p::Virtio9p::server_gone`])
    /// and the program has [`GRACE`] to exit.
    pub fn gone(&self) -> bool {
        self.lost
            .compare_exchange(LOST, REPORTED, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    }

    /// Whether the gateway went earlier in this run.
    pub fn has_gone(&self) -> bool {
        self.lost.load(Ordering::SeqCst) >= REPORTED
    }

    /// The error to end the partition with once the program has had its
    /// [`GRACE`] and is still running.
    pub fn expired(&self) -> Option<VmmError> {
        self.lost
            .compare_exchange(EXPIRED, DONE, Ordering::SeqCst, Ordering::SeqCst)
            .ok()
            .map(|_| {
                self.error(format!(
                    "its file operations failed with EIO, and the program was stopped \
                     {} s later",
                    GRACE.as_secs()
                ))
            })
    }

    /// The error to end the partition with when the program exited with
    /// `status` after the gateway had gone.
    pub fn exited(&self, status: u32) -> VmmError {
        self.lost.store(DONE, Ordering::SeqCst);
        self.error(format!(
            "its file operations failed with EIO, and the program exited with status {status}"
        ))
    }

    fn error(&self, after: String) -> VmmError {
        VhostUserError::Lost {
            socket: self.socket.clone(),
            after,
        }
        .into()
    }
}

impl Drop for GatewayWatch {
    fn drop(&mut self) {
        // The watcher closes its copy of the socket, so the gateway sees the
        // VMM leave when the device goes.
        let _ = self.stop.write(1);
    }
}

extern "C" fn wake_only(_: libc::c_int) {}

/// SIGUSR1 only interrupts `KVM_RUN` (no SA_RESTART), like the hang watchdog's.
fn install_wakeup_handler() {
    // SAFETY: installs a handler that does nothing; a zeroed sigaction with
    // only the handler set is valid.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = wake_only as *const () as usize;
        libc::sigaction(libc::SIGUSR1, &sa, std::ptr::null_mut());
    }
}

/// Waits for the gateway to hang up (or for `stop`), then interrupts the
/// vCPU until the run loop has seen it.
fn watch_socket(sock: &OwnedFd, stop: &EventFd, lost: &AtomicU8, vcpu: libc::pthread_t) {
    let mut fds = [
        libc::pollfd {
            fd: sock.as_raw_fd(),
            events: libc::POLLRDHUP,
            revents: 0,
        },
        libc::pollfd {
            fd: stop.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    loop {
        // SAFETY: `fds` is a valid array of two pollfds for the call's duration.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
        if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        if n < 0 || fds[1].revents != 0 {
            return;
        }
        if fds[0].revents != 0 {
            break;
        }
    }
    tracing::debug!("the vhost-user gateway hung up");
    lost.store(LOST, Ordering::SeqCst);
    if !interrupt_while(lost, LOST, stop, vcpu) {
        return;
    }
    // The run loop failed the device's requests; give the program its
    // grace, then make the run loop end the partition.
    let mut poll_stop = [libc::pollfd {
        fd: stop.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    }];
    let deadline = std::time::Instant::now() + GRACE;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            break;
        }
        // SAFETY: one valid pollfd for the call's duration.
        if unsafe { libc::poll(poll_stop.as_mut_ptr(), 1, left.as_millis() as i32 + 1) } > 0 {
            return;
        }
    }
    if lost
        .compare_exchange(REPORTED, EXPIRED, Ordering::SeqCst, Ordering::SeqCst)
        .is_ok()
    {
        interrupt_while(lost, EXPIRED, stop, vcpu);
    }
}

/// Interrupts the vCPU every 10 ms while `lost` is `state` (a signal that
/// lands just before the vCPU enters `KVM_RUN` is missed); false if the
/// partition ended meanwhile.
fn interrupt_while(lost: &AtomicU8, state: u8, stop: &EventFd, vcpu: libc::pthread_t) -> bool {
    while lost.load(Ordering::SeqCst) == state {
        // SAFETY: `vcpu` names the thread running the partition; a thread
        // that has ended makes this fail with ESRCH, nothing worse.
        if unsafe { libc::pthread_kill(vcpu, libc::SIGUSR1) } != 0 {
            return false;
        }
        let mut poll_stop = [libc::pollfd {
            fd: stop.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        }];
        // SAFETY: one pollfd; waits up to 10 ms for `stop`.
        if unsafe { libc::poll(poll_stop.as_mut_ptr(), 1, 10) } > 0 {
            return false;
        }
    }
    true
}

/// This process's address of `len` bytes of guest RAM at `gpa`, all in one region.
fn host_address(
    dev: &Activation<'_>,
    what: &'static str,
    gpa: u64,
    len: usize,
) -> Result<u64, VhostUserError> {
    let outside = || VhostUserError::QueueOutsideRam { what, gpa, len };
    dev.mem
        .get_slice(GuestAddress(gpa), len)
        .map_err(|_| outside())?;
    dev.mem
        .get_host_address(GuestAddress(gpa))
        .map(|p| p as u64)
        .map_err(|_| outside())
}

/// Reads the mount tag from the 9P config space: le16 length, then the tag.
fn read_tag(frontend: &mut Frontend) -> Option<String> {
    let flags = VhostUserConfigFlags::empty();
    let (_, len) = frontend
        .get_config(0, 2, flags, &[0; 2])
        .map_err(|e| tracing::warn!("cannot read the gateway's config space: {e}"))
        .ok()?;
    let n = usize::from(u16::from_le_bytes([*len.first()?, *len.get(1)?]));
    if n == 0 || n > MAX_TAG {
        tracing::warn!(n, "the gateway announced an unusable mount tag length");
        return None;
    }
    let (_, cfg) = frontend
        .get_config(0, 2 + n as u32, flags, &vec![0; 2 + n])
        .map_err(|e| tracing::warn!("cannot read the gateway's mount tag: {e}"))
        .ok()?;
    String::from_utf8(cfg.get(2..)?.to_vec()).ok()
}

/// Shuts a gateway connection down if its setup has not finished within
/// [`REPLY_TIMEOUT`], so that a read blocked on a silent gateway returns.
struct SetupWatchdog {
    done: Option<std::sync::mpsc::Sender<()>>,
    fired: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl SetupWatchdog {
    fn arm(stream: &UnixStream) -> std::io::Result<Self> {
        let peer = stream.try_clone()?;
        let (done, wait) = std::sync::mpsc::channel::<()>();
        let fired = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let f = fired.clone();
        std::thread::Builder::new()
            .name("vhost-user-setup".into())
            .spawn(move || {
                if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                    wait.recv_timeout(REPLY_TIMEOUT)
                {
                    f.store(true, std::sync::atomic::Ordering::SeqCst);
                    let _ = peer.shutdown(std::net::Shutdown::Both);
                }
            })?;
        Ok(Self {
            done: Some(done),
            fired,
        })
    }
}

impl Drop for SetupWatchdog {
    fn drop(&mut self) {
        // Setup is over (or failed): the watchdog thread ends.
        if let Some(d) = self.done.take() {
            let _ = d.send(());
        }
    }
}

/// A vhost-user error in words, with the timeout spelled out.
fn describe(e: &vhost::Error) -> String {
    use vhost::vhost_user::Error as E;
    match e {
        vhost::Error::VhostUserProtocol(E::SocketRetry(io))
            if io.kind() == std::io::ErrorKind::WouldBlock =>
        {
            format!(
                "no answer within {} s (is it busy serving another VMM?)",
                REPLY_TIMEOUT.as_secs()
            )
        }
        other => other.to_string(),
    }
}

/// The socket path of a `vhost-user:SOCK` gateway address.
pub fn parse_gateway(spec: &str) -> Option<PathBuf> {
    spec.strip_prefix("vhost-user:")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gateway_addresses() {
        assert_eq!(
            parse_gateway("vhost-user:/tmp/gw.sock"),
            Some(PathBuf::from("/tmp/gw.sock"))
        );
        assert_eq!(parse_gateway("vhost-user:"), None);
        assert_eq!(parse_gateway("tcp:127.0.0.1:564"), None);
    }

    #[test]
    fn a_peer_that_hangs_up_is_a_setup_error() {
        let sock =
            std::env::temp_dir().join(format!("astraea-mute-gw-{}.sock", std::process::id()));
        let _ = std::fs::remove_file(&sock);
        let listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        let peer = std::thread::spawn(move || drop(listener.accept()));
        let e = VhostUser::connect(&sock).err().expect("nothing answers");
        peer.join().unwrap();
        let msg = e.to_string();
        assert!(
            msg.starts_with(&format!("the gateway at {} failed during ", sock.display())),
            "{msg}"
        );
        std::fs::remove_file(&sock).unwrap();
    }

    /// A gateway that accepts and then says nothing (one serving another
    /// VMM without --keep-listening) fails the setup after the timeout
    /// instead of hanging the partition.
    #[test]
    fn a_silent_peer_times_out() {
        let sock =
            std::env::temp_dir().join(format!("astraea-silent-gw-{}.sock", std::process::id()));
        let _ = std::fs::remove_file(&sock);
        let listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        let peer = std::thread::spawn(move || {
            let c = listener.accept();
            std::thread::sleep(REPLY_TIMEOUT + Duration::from_secs(3));
            drop(c);
        });
        let t0 = std::time::Instant::now();
        let e = VhostUser::connect(&sock).err().expect("nothing answers");
        assert!(t0.elapsed() < REPLY_TIMEOUT + Duration::from_secs(2));
        let msg = e.to_string();
        assert!(msg.contains("no answer within 10 s"), "{msg}");
        peer.join().unwrap();
        std::fs::remove_file(&sock).unwrap();
    }

    #[test]
    fn missing_socket_is_a_clear_error() {
        let sock = std::env::temp_dir().join(format!("astraea-no-gw-{}.sock", std::process::id()));
        let e = VhostUser::connect(&sock).err().expect("no gateway there");
        let msg = e.to_string();
        assert!(
            msg.starts_with(&format!(
                "cannot connect to the gateway at {}:",
                sock.display()
            )),
            "{msg}"
        );
        assert!(
            msg.ends_with(&format!(
                "start it with astraea-gateway --vhost-user {}",
                sock.display()
            )),
            "{msg}"
        );
    }
}
