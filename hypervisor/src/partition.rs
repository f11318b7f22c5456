//! A partition: one KVM VM with its memory, vCPU and devices, run to its end.

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use std::sync::Arc;

use astraea_abi::{ConsoleWrite, Mark, port, virtio9p};
use kvm_bindings::kvm_userspace_memory_region;
use kvm_ioctls::{Cap, Kvm, VcpuExit, VcpuFd, VmFd};
use vm_memory::{Bytes, GuestAddress, GuestMemoryBackend, GuestMemoryRegion};

use crate::boot::{self, BootParams, Terminal};
use crate::devices::vhost_user::VhostUser;
use crate::devices::virtio9p::{Placement, Virtio9p};
use crate::error::{VmmError, kvm_err};
use crate::memory::{self, GuestMemory, MAX_MEM};
use crate::ninep::{NinePBackend, TcpForwarder};
use crate::serial::Com1;
use crate::vcpu;

/// Where KVM puts the TSS it needs for real-mode emulation (unused by us, but required).
const KVM_TSS_ADDRESS: usize = 0xfffb_d000;
/// Largest console write the VMM copies in one hypercall.
const MAX_CONSOLE_WRITE: u64 = 1 << 20;

/// How the program's system calls enter the library OS (the kernel decides
/// at boot; see docs/syscall-entry.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyscallEntry {
    /// Direct on PVM hosts, trap elsewhere.
    Auto,
    /// Every `syscall` traps into the host.
    Trap,
    /// Rewritten sites jump into the library OS (PVM hosts only).
    Direct,
}

impl SyscallEntry {
    /// The name on the command line and in the kernel's arguments.
    pub fn name(self) -> &'static str {
        match self {
            SyscallEntry::Auto => "auto",
            SyscallEntry::Trap => "trap",
            SyscallEntry::Direct => "direct",
        }
    }
}

/// What the user asked for.
#[derive(Debug, Clone)]
pub struct PartitionConfig {
    /// The kernel image.
    pub kernel: PathBuf,
    /// Guest RAM in bytes.
    pub mem: u64,
    /// Number of vCPUs.
    pub cpus: u32,
    /// The library OS's log level (`error`, `warn`, `info`, `debug`, `trace`).
    pub log: String,
    /// Arguments for the guest.
    pub args: Vec<String>,
    /// Where the partition's 9P requests go, if it gets a 9P device.
    pub ninep: NinePTarget,
    /// The `aname` the partition attaches with (empty: the server's default).
    pub ninep_aname: String,
    /// The program's working directory in the partition's namespace.
    pub cwd: Option<String>,
    /// Print every system call of the program with its arguments and result.
    pub strace: bool,
    /// Sample the partition's CPU and print a profile at exit.
    pub profile: bool,
    /// The file-cache policy: `none`, or `ro` with an optional budget
    /// (`ro:256M`); `None` means `ro` with the library OS's default budget.
    /// It covers the read-only exports of the built-in gateway.
    pub cache: Option<String>,
    /// Mounts (guest paths) whose cache policy was chosen with `--mount
    /// …:cache|:nocache`, overriding the default (read-only cached).
    pub cache_mounts: Vec<(String, bool)>,
    /// Write the file cache's contents to this file when the program exits.
    pub cache_dump: Option<PathBuf>,
    /// Preload the file cache from this image (made by `cache_dump`).
    pub cache_image: Option<PathBuf>,
    /// The socket streaming layer (a read kept posted per connection).
    pub net_stream: bool,
    /// How system calls enter the library OS (`--syscall-entry`).
    pub syscall_entry: SyscallEntry,
    /// The partition's name (a deployment's member), shown by `astraea ps`.
    pub name: Option<String>,
    /// Its role in a deployment (shard, frontend), shown by `astraea ps`.
    pub role: Option<String>,
    /// Listen on a control socket (see [`crate::control`]) for `astraea ps`
    /// and `astraea cache dump --partition` while the partition runs.
    pub control: bool,
    /// The process exits once [`run`] returns: at a normal exit, the VM's
    /// destruction and the unmapping of guest RAM are left to a helper
    /// process that outlives this one (`teardown.rs`), off the command's
    /// critical path. A process that runs partitions one after another
    /// must say `false` (the memory would stay mapped until it exits).
    pub exit_after: bool,
    /// Bytes of guest RAM (from its start) that a host thread allocates
    /// while the partition boots (`--prefault`); 0: none.
    pub prefault: u64,
    /// Where a snapshot the program asks for (a read of
    /// `/dev/astraea-snapshot`) is written (`--snapshot`).
    pub snapshot: Option<PathBuf>,
    /// Start from this snapshot instead of booting (`--from`); the rest of
    /// the configuration must be the one it was taken with.
    pub restore: Option<Arc<crate::snapshot::Image>>,
    /// The `astraea run` arguments that make this configuration, and the
    /// directory they were given in: a snapshot keeps them.
    pub recipe: (Vec<String>, PathBuf),
}

/// Places a cache image at the top of guest RAM (2 MiB aligned) for the
/// library OS; returns its guest-physical address and length.
fn place_cache_image(
    mem: &GuestMemory,
    mem_size: u64,
    path: &std::path::Path,
    may_map: bool,
) -> Result<(u64, u64), VmmError> {
    let cannot = |e: std::io::Error| {
        VmmError::Boot(format!(
            "cannot read the cache image {}: {e}",
            path.display()
        ))
    };
    let file = std::fs::File::open(path).map_err(cannot)?;
    let len = file.metadata().map_err(cannot)?.len();
    let (start, size) = *crate::memory::ram_ranges(mem_size)
        .last()
        .ok_or_else(|| VmmError::Boot("no guest RAM".into()))?;
    let end = start + size;
    let gpa = end.saturating_sub(len) & !((2 << 20) - 1);
    // Keep the lower half of the partition for the kernel and the program.
    if gpa < start || gpa < mem_size / 2 {
        return Err(VmmError::Boot(format!(
            "the cache image {} ({} MiB) does not fit in half of --mem; give the partition more memory",
            path.display(),
            len >> 20
        )));
    }
    if may_map {
        // Map the file over the RAM: no copy, and its pages come from the
        // host's page cache.
        crate::memory::overlay_file(mem, gpa, &file, len)?;
    } else {
        let bytes = crate::memory::MappedFile::open(path).map_err(cannot)?;
        mem.write_slice(&bytes, GuestAddress(gpa))
            .map_err(|e| VmmError::Boot(format!("writing the cache image: {e}")))?;
    }
    Ok((gpa, len))
}

/// The library OS's file-cache description for `cfg`: the policy, then
/// each export of the built-in gateway marked cached (read-only) or not.
/// Files from other 9P servers are not cached: their mounts are unknown.
pub fn cache_spec(cfg: &PartitionConfig) -> Result<String, VmmError> {
    let policy = cfg.cache.as_deref().unwrap_or("ro");
    let policy = match policy.split_once(':') {
        None if policy == "ro" || policy == "none" => policy.to_string(),
        Some(("ro", size)) => {
            let bytes =
                crate::memory::parse_mem_size(size).map_err(|_| VmmError::InvalidCache {
                    value: policy.to_string(),
                })?;
            format!("ro:{bytes}")
        }
        _ => {
            return Err(VmmError::InvalidCache {
                value: policy.to_string(),
            });
        }
    };
    let mut spec = policy;
    if let NinePTarget::Gateway(g) = &cfg.ninep {
        for e in &g.exports {
            let chosen = cfg
                .cache_mounts
                .iter()
                .find(|(m, _)| *m == e.guest)
                .map(|&(_, c)| c);
            let mark = if e.read_only && chosen != Some(false) {
                "ro"
            } else {
                "none"
            };
            spec.push_str(&format!(" {}={mark}", e.guest));
        }
    }
    // An external gateway's read-only exports are known only from the user
    // (`--cache-path GUEST=ro|none`).
    if let NinePTarget::VhostUser(_) = &cfg.ninep {
        for (m, c) in &cfg.cache_mounts {
            spec.push_str(&format!(" {m}={}", if *c { "ro" } else { "none" }));
        }
    }
    Ok(spec)
}

/// The 9P service behind a partition's virtio-9p device.
#[derive(Debug, Clone, Default)]
pub enum NinePTarget {
    /// No 9P device.
    #[default]
    None,
    /// The gateway built into this process, serving these exports.
    Gateway(astraea_gateway::GatewayConfig),
    /// Forward frames to a 9P server at `host:port` (a remote gateway, diod).
    Tcp(String),
    /// A gateway process serving the device itself over vhost-user on this
    /// unix socket (`astraea-gateway --vhost-user SOCK`).
    VhostUser(PathBuf),
}

/// The mount tag the partition's 9P device announces.
pub const MOUNT_TAG: &str = "astraea";

/// When each phase of the partition's life ended, measured from the start of `run`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Timings {
    /// KVM VM, guest memory, irqchip and vCPU created.
    pub vm_created: Duration,
    /// Kernel loaded and boot structures written.
    pub loaded: Duration,
    /// The kernel's first instruction reported in (if it reports marks).
    pub kernel_entry: Option<Duration>,
    /// The kernel finished initialising (if it reports marks).
    pub kernel_ready: Option<Duration>,
    /// The guest asked to exit.
    pub exited: Duration,
}

/// How a partition ended when it ended normally.
#[derive(Debug, Clone, Copy)]
pub struct Outcome {
    /// The guest's exit status.
    pub exit_code: u32,
    /// Phase timings.
    pub timings: Timings,
    /// Number of VM exits to the VMM.
    pub exits: u64,
}

/// Environment variable naming another KVM device node (tests use it to check
/// the error for a missing `/dev/kvm`).
pub const KVM_DEVICE_ENV: &str = "ASTRAEA_KVM_DEVICE";

fn open_kvm() -> Result<Kvm, VmmError> {
    let path = std::env::var(KVM_DEVICE_ENV).unwrap_or_else(|_| "/dev/kvm".to_string());
    let c = std::ffi::CString::new(path.clone()).map_err(|_| VmmError::KvmMissing(path.clone()))?;
    let kvm = Kvm::new_with_path(&c).map_err(|e| match e.errno() {
        libc::ENOENT => VmmError::KvmMissing(path.clone()),
        libc::EACCES | libc::EPERM => VmmError::KvmPermission(path.clone()),
        n => VmmError::KvmOpen(path.clone(), std::io::Error::from_raw_os_error(n)),
    })?;
    // Opening any device node succeeds; only KVM's answers this.
    if kvm.get_api_version() < 0 {
        return Err(VmmError::KvmNotKvm(path));
    }
    Ok(kvm)
}

/// Checks the configuration, builds the partition and runs it until the guest
/// exits. Guest console output goes to this process's stdout and stderr.
pub fn run(cfg: &PartitionConfig) -> Result<Outcome, VmmError> {
    let t0 = Instant::now();
    if cfg.cpus != 1 {
        return Err(VmmError::Cpus(cfg.cpus));
    }
    if cfg.mem > MAX_MEM {
        return Err(VmmError::MemTooLarge {
            given: cfg.mem >> 20,
            max: MAX_MEM >> 20,
        });
    }
    // Guest RAM is allocated as the guest touches it; more than the machine
    // could ever give would end with the host killing this process mid-run.
    if let Some(have) = memory::host_memory().filter(|&h| cfg.mem > h) {
        return Err(VmmError::MemMoreThanHost {
            given: cfg.mem >> 20,
            have: have >> 20,
        });
    }
    let image = memory::MappedFile::open(&cfg.kernel).map_err(|source| VmmError::KernelRead {
        path: cfg.kernel.clone(),
        source,
    })?;
    let kernel = boot::parse_kernel(&cfg.kernel, &image)?;
    let needed = boot::min_mem(kernel.mem_size() as u64);
    if cfg.mem < needed {
        return Err(VmmError::MemTooSmall {
            given: cfg.mem >> 20,
            needed: needed.div_ceil(1 << 20),
        });
    }

    // `mem` is declared before `vm` so that it is dropped after it: KVM's
    // memory slots point into this mapping for the VM's whole life.
    let mem = Arc::new(memory::create(cfg.mem)?);
    // RAM mapped from files rather than held in the memfd (a snapshot
    // reads these ranges whole).
    let mut mapped: Vec<(u64, u64)> = Vec::new();
    let mut working_set = None;
    if let Some(img) = &cfg.restore {
        if img.meta.mem != cfg.mem {
            return Err(VmmError::Snapshot {
                path: img.path.clone(),
                reason: format!(
                    "it holds {} MiB of RAM, the partition has {} MiB",
                    img.meta.mem >> 20,
                    cfg.mem >> 20
                ),
            });
        }
        if matches!(cfg.ninep, NinePTarget::VhostUser(_) | NinePTarget::Tcp(_)) {
            return Err(VmmError::Snapshot {
                path: img.path.clone(),
                reason: "a restored partition needs the built-in gateway (no --gateway or --9p)"
                    .into(),
            });
        }
        img.map_into(&mem)?;
        working_set = Some(crate::working_set::WorkingSet::start(img, mem.clone()));
    } else if cfg.prefault > 0 {
        memory::prefault_in_background(mem.clone(), cfg.prefault.min(cfg.mem));
    }
    // The built-in gateway, and a restored session's files opened again,
    // on a thread beside KVM's set-up (each takes about a millisecond).
    let early_gateway = match &cfg.ninep {
        NinePTarget::Gateway(gcfg) => {
            let gcfg = gcfg.clone();
            let saved = cfg
                .restore
                .as_ref()
                .filter(|img| img.meta.device.is_some())
                .and_then(|img| img.meta.session.clone());
            // The partition's own hsperfdata directory is made anew.
            let scratch: Vec<usize> = gcfg
                .exports
                .iter()
                .enumerate()
                .filter(|(_, e)| crate::mounts::is_private_perf_dir(&e.host))
                .map(|(i, _)| i)
                .collect();
            Some(std::thread::spawn(move || {
                let gw = astraea_gateway::Gateway::new(gcfg).map_err(VmmError::Gateway)?;
                let s = Arc::new(gw.session_nonblocking());
                let report = saved.map(|saved| s.restore(&saved, &scratch));
                Ok::<_, VmmError>((s, report))
            }))
        }
        _ => None,
    };
    let mut restored_session = None;
    let kvm = open_kvm()?;
    let supported = crate::hostcheck::check(&kvm)?;
    let vm = Arc::new(kvm.create_vm().map_err(|e| match e.errno() {
        libc::EBUSY => VmmError::KvmBusy(std::io::Error::from_raw_os_error(libc::EBUSY)),
        _ => VmmError::Kvm {
            what: "KVM_CREATE_VM",
            source: e,
        },
    })?);
    register_memory(&vm, &mem)?;
    vm.set_tss_address(KVM_TSS_ADDRESS)
        .map_err(kvm_err("KVM_SET_TSS_ADDR"))?;
    vm.create_irq_chip()
        .map_err(kvm_err("KVM_CREATE_IRQCHIP"))?;
    let mut vcpu = vm.create_vcpu(0).map_err(kvm_err("KVM_CREATE_VCPU"))?;
    let xcr0 = vcpu::setup_cpuid(supported, &vcpu, 0)?;
    let mut external = None;
    let mut gateway_watch = None;
    // The built-in gateway's session, which a snapshot saves.
    let mut session: Option<Arc<astraea_gateway::Session>> = None;
    let backend: Option<Arc<dyn NinePBackend>> = match &cfg.ninep {
        NinePTarget::None => None,
        NinePTarget::VhostUser(socket) => {
            let gw = VhostUser::connect(socket)?;
            // SAFETY: pthread_self has no preconditions; this thread runs the vCPU.
            gateway_watch = Some(gw.watch(unsafe { libc::pthread_self() })?);
            external = Some(gw);
            None
        }
        NinePTarget::Gateway(_) => {
            let made = early_gateway
                .map(|t| {
                    t.join().unwrap_or_else(|_| {
                        Err(VmmError::Boot("the gateway's set-up failed".into()))
                    })
                })
                .ok_or_else(|| VmmError::Boot("no gateway was set up".into()))??;
            let (s, report) = made;
            restored_session = report;
            session = Some(s.clone());
            Some(s)
        }
        NinePTarget::Tcp(addr) => {
            Some(
                TcpForwarder::connect(addr).map_err(|e| VmmError::NinePConnect {
                    addr: addr.clone(),
                    source: e,
                })?,
            )
        }
    };
    let place = Placement {
        base: virtio9p::BASE,
        vector: virtio9p::VECTOR,
    };
    let mut ninep = match backend {
        None => match external {
            None => None,
            Some(gw) => {
                let tag = gw.tag().unwrap_or(MOUNT_TAG).to_owned();
                Some(Virtio9p::with_data_path(
                    &vm,
                    mem.clone(),
                    place,
                    &tag,
                    Box::new(gw),
                )?)
            }
        },
        Some(backend) => Some(Virtio9p::new(&vm, mem.clone(), place, MOUNT_TAG, backend)?),
    };
    let tsc_khz = if kvm.check_extension(Cap::GetTscKhz) {
        vcpu.get_tsc_khz().ok()
    } else {
        None
    };
    let vm_created = t0.elapsed();
    tracing::debug!(?vm_created, tsc_khz, "VM created");

    let pvm_native = pvm_native(&vcpu);
    let mut cmdline = format!("log={}", cfg.log);
    if pvm_native && host_has_fsgsbase() {
        // A PVM guest runs with the host's CR4: `wrfsbase` works at CPL 3.
        cmdline += " cpu.fsgsbase=1";
    }
    if !cfg.ninep_aname.is_empty() {
        if cfg.ninep_aname.contains(char::is_whitespace) {
            return Err(VmmError::Boot("--9p-aname must not contain spaces".into()));
        }
        cmdline += &format!(" 9p.aname={}", cfg.ninep_aname);
    }
    if cfg.strace {
        cmdline += " strace=1";
    }
    if cfg.profile {
        cmdline += " profile=1";
    }
    if !cfg.net_stream {
        cmdline += " net.stream=off";
    }
    cmdline += &format!(" syscall.entry={}", cfg.syscall_entry.name());
    // The program's pid is this process's: files named after it (GC logs,
    // crash reports, heap dumps) differ between partitions, and the pid a
    // program logs is the one `ps` and `astraea ps` show.
    cmdline += &format!(" pid={}", std::process::id());
    // The program's resource limits are this process's, as a program
    // started from the same shell on the host inherits them.
    cmdline += &format!(" rlimits={}", host_rlimits());
    // Socket buffer sizes are capped by the host's sysctls, as a host
    // program's are (`SO_RCVBUF`, `SO_SNDBUF`).
    let sysctl = |name: &str| {
        std::fs::read_to_string(format!("/proc/sys/net/{name}"))
            .ok()
            .and_then(|v| v.split_whitespace().last()?.parse::<u32>().ok())
    };
    if let (Some(r), Some(w), Some(t)) = (
        sysctl("core/rmem_max"),
        sysctl("core/wmem_max"),
        sysctl("ipv4/tcp_rmem"),
    ) {
        cmdline += &format!(" net.bufmax={r},{w},{t}");
    }
    if let Some(hz) = host_hz() {
        cmdline += &format!(" net.hz={hz}");
    }
    // The host's clocks as its programs see them: the coarse clocks'
    // resolution (its tick), and whether the alarm clocks work (they need
    // a real-time clock device).
    if let Some(ns) = host_clock_res(libc::CLOCK_REALTIME_COARSE) {
        cmdline += &format!(" time.coarse={ns}");
    }
    if host_clock_res(libc::CLOCK_REALTIME_ALARM).is_none() {
        cmdline += " time.alarm=0";
    }
    if let Some(name) = host_name() {
        // The program's `uname` is the host's: its name resolves as on the
        // host (`/etc/hosts`).
        cmdline += &format!(" host.name={name}");
    }
    if cfg.syscall_entry != SyscallEntry::Trap {
        // Tests of the direct path's rare cases (tests/tests/direct.rs).
        if std::env::var_os("ASTRAEA_DIRECT_SELFTEST").is_some() {
            cmdline += " direct.selftest=1";
        }
    }
    let cache = cache_spec(cfg)?;
    let cache_image = match &cfg.cache_image {
        // A restored partition's memory holds its image (loaded already).
        Some(_) if cfg.restore.is_some() => None,
        // Guest RAM shared with a vhost-user gateway must stay the memfd.
        Some(p) => Some(place_cache_image(
            &mem,
            cfg.mem,
            p,
            !matches!(cfg.ninep, NinePTarget::VhostUser(_)),
        )?),
        None => None,
    };
    let mut dump = match &cfg.cache_dump {
        Some(p) => Some(std::io::BufWriter::with_capacity(
            1 << 20,
            std::fs::File::create(p).map_err(|e| {
                VmmError::Boot(format!("cannot create the cache dump {}: {e}", p.display()))
            })?,
        )),
        None => None,
    };
    // Declared before the dump jobs' receiver, so dropped after it: a
    // requester whose dump the exit cut short is answered first.
    let control = if cfg.control {
        let cached_vhost = matches!(cfg.ninep, NinePTarget::VhostUser(_))
            && cfg.cache_mounts.iter().any(|(_, c)| *c);
        let no_dump = if !matches!(cfg.ninep, NinePTarget::Gateway(_)) && !cached_vhost {
            Some("the partition has no file cache: only files of the built-in gateway, or of --cache-path GUEST=ro paths of a --gateway, are cached (it was started with --9p, --no-files, or --gateway without --cache-path)".to_string())
        } else if cache.starts_with("none") {
            Some("the partition has no file cache: it was started with --cache none".to_string())
        } else {
            None
        };
        let info = crate::control::Info {
            mem: cfg.mem,
            cache: cache.split(' ').next().unwrap_or("none").to_string(),
            args: cfg.args.clone(),
            name: cfg.name.clone(),
            role: cfg.role.clone(),
            no_dump,
        };
        match crate::control::Server::start(info, vm.clone()) {
            Ok((server, jobs)) => Some((server, jobs)),
            Err(e) => {
                tracing::warn!(
                    "no control socket in {} ({e}): `astraea ps` and `astraea cache dump` will not see this partition",
                    crate::control::socket_dir().display()
                );
                None
            }
        }
    } else {
        None
    };
    let (_control, jobs, snapshot_jobs) = match control {
        Some((s, j)) => (Some(s), Some(j.dumps), Some(j.snapshots)),
        None => (None, None, None),
    };
    let mut live = LiveDumps {
        jobs,
        current: None,
    };
    let params = BootParams {
        cmdline: &cmdline,
        args: &cfg.args,
        cpus: cfg.cpus,
        tsc_khz,
        virtio9p: ninep.as_ref().map(|_| (virtio9p::BASE, virtio9p::VECTOR)),
        cwd: cfg.cwd.as_deref(),
        cache: Some(&cache),
        cache_dump: cfg.cache_dump.is_some(),
        cache_image,
        pvm_native,
        terminal: Terminal::of_this_process(),
    };
    if let Some((gpa, len)) = cache_image {
        mapped.push((gpa, gpa + len));
    }
    let state = match &cfg.restore {
        None => boot::prepare(&mem, cfg.mem, &cfg.kernel, &kernel, &params)?,
        Some(img) => {
            let bad = |reason: String| VmmError::Snapshot {
                path: img.path.clone(),
                reason,
            };
            let host = if pvm_native { "pvm" } else { "kvm" };
            if img.meta.host != host {
                return Err(bad(format!(
                    "it was taken on a {} host and this one is {host}: restore it where it was taken",
                    img.meta.host
                )));
            }
            if let (Some(d), Some(saved)) = (ninep.as_mut(), img.meta.device.as_ref()) {
                if let Some(r) = restored_session.take() {
                    tracing::info!(
                        restored = r.restored,
                        dropped = r.dropped.len(),
                        "9P fids set up again"
                    );
                    if !r.failed.is_empty() {
                        return Err(bad(r.failed.join("; ")));
                    }
                }
                d.restore(saved)?;
            }
            let (rip, rsp) = img.meta.resume().map_err(bad)?;
            boot::prepare_resume(&mem, cfg.mem, img.meta.kernel, &params, rip, rsp)?
        }
    };
    drop(image);
    vcpu::setup_long_mode(&vcpu, &state, 0, xcr0)?;
    if params.pvm_native {
        vcpu::enter_pvm_native(&vcpu)?;
    }
    if let Some(img) = cfg.restore.as_ref().filter(|_| !pvm_native) {
        // Standard KVM starts a vCPU's TSC at 0; the guest's clocks and
        // timers go on from the snapshot's TSC plus the time since. (A PVM
        // guest reads the host's TSC, which went on by itself.)
        let khz = u64::from(img.meta.tsc_khz.or(tsc_khz).unwrap_or(0));
        let since = unix_ns().saturating_sub(img.meta.taken_unix_ns);
        let ticks = (u128::from(since) * u128::from(khz) / 1_000_000) as u64;
        vcpu::set_tsc(&vcpu, img.meta.tsc.saturating_add(ticks))?;
    }
    let snap = SnapshotCtx {
        cfg,
        kernel: state.kernel,
        tsc_khz,
        pvm: pvm_native,
        mapped,
        jobs: snapshot_jobs,
        waiting: std::cell::RefCell::new(Vec::new()),
    };
    let loaded = t0.elapsed();
    tracing::debug!(
        entry = format_args!("{:#x}", state.entry),
        ?loaded,
        "kernel loaded"
    );

    // From here a SIGTERM or Ctrl-C to this process is the program's.
    let _signals = crate::host_signals::attach(vm.clone());
    let mut timings = Timings {
        vm_created,
        loaded,
        ..Timings::default()
    };
    let mut exits = 0u64;
    let mut serial = Com1::new();
    let watchdog = HangWatchdog::arm();
    // Writes its report when dropped, however the loop ends.
    let mut sampler = crate::sampler::Sampler::arm(&cfg.kernel);
    loop {
        if let Some(w) = gateway_watch.as_ref() {
            // The gateway died: the requests in flight and all later ones
            // fail with EIO, and the program has a grace period to exit.
            if w.gone()
                && let Some(d) = ninep.as_mut()
            {
                d.server_gone();
            }
            if let Some(e) = w.expired() {
                return Err(e);
            }
        }
        if watchdog.fired() {
            return Err(crash(
                &vcpu,
                "the guest made no progress before the hang watchdog fired".into(),
            ));
        }
        let exit = vcpu.run();
        exits += 1;
        match exit {
            Ok(VcpuExit::IoOut(p, data)) => {
                let value = le_u32(data);
                tracing::trace!(port = p, value, "guest out");
                match p {
                    port::EXIT => {
                        if let Some(w) = gateway_watch.as_ref().filter(|w| w.has_gone()) {
                            return Err(w.exited(value));
                        }
                        timings.exited = t0.elapsed();
                        if let Some(ws) = working_set.take() {
                            ws.exited();
                        }
                        // What is left is the host's work: not the
                        // command's (teardown.rs).
                        if cfg.exit_after {
                            use std::os::fd::AsRawFd as _;
                            crate::teardown::hand_off(&[vm.as_raw_fd(), vcpu.as_raw_fd()]);
                            // Guest RAM stays mapped until this process
                            // exits, and the helper after it.
                            std::mem::forget(mem.clone());
                        }
                        if let Some(mut w) = dump.take() {
                            use std::io::Write;
                            if let Err(e) = w.flush() {
                                tracing::error!("writing the cache dump: {e}");
                            }
                        }
                        return Ok(Outcome {
                            exit_code: value,
                            timings,
                            exits,
                        });
                    }
                    port::CONSOLE => console_write(&mem, value),
                    port::PANIC => {
                        let msg = read_console_write(&mem, value)
                            .map(|(_, b)| String::from_utf8_lossy(&b).into_owned())
                            .unwrap_or_else(|| {
                                let mut raw = [0u8; ConsoleWrite::SIZE];
                                let _ = mem.read_slice(&mut raw, GuestAddress(u64::from(value)));
                                let cw = ConsoleWrite::from_bytes(&raw);
                                format!(
                                    "(message unreadable: descriptor at {value:#x} names {:#x}+{:#x})",
                                    cw.addr, cw.len
                                )
                            });
                        return Err(VmmError::GuestPanic(msg));
                    }
                    port::SNAPSHOT => snap.serve(&mem, value, ninep.as_ref(), session.as_deref()),
                    port::SNAPSHOT_INTERRUPT => {
                        if let Some(s) = session.as_deref() {
                            s.interrupt_waiting();
                        }
                    }
                    port::CACHE_DUMP_BEGIN => live.begin(value),
                    port::CACHE_DUMP_END => live.end(value),
                    port::CACHE_DUMP if live.current.is_some() => {
                        match read_console_write(&mem, value) {
                            Some((_, bytes)) => live.write(&bytes),
                            None => tracing::warn!("a cache dump record outside guest memory"),
                        }
                    }
                    port::CACHE_DUMP => {
                        if let Some(w) = dump.as_mut() {
                            use std::io::Write;
                            match read_console_write(&mem, value) {
                                Some((_, bytes)) => {
                                    if let Err(e) = w.write_all(&bytes) {
                                        tracing::error!("writing the cache dump: {e}");
                                        dump = None;
                                    }
                                }
                                None => tracing::warn!("a cache dump record outside guest memory"),
                            }
                        }
                    }
                    port::MARK => match Mark::from_u32(value) {
                        Some(Mark::KernelEntry) => timings.kernel_entry = Some(t0.elapsed()),
                        Some(Mark::KernelReady) => timings.kernel_ready = Some(t0.elapsed()),
                        None => tracing::warn!(value, "unknown boot mark"),
                    },
                    p if Com1::covers(p) => serial.write(p, data),
                    _ => tracing::trace!(port = p, "write to unknown port ignored"),
                }
            }
            Ok(VcpuExit::IoIn(p, data)) => {
                if Com1::covers(p) {
                    serial.read(p, data);
                } else if p == port::HOST_SIGNALS && data.len() == 4 {
                    data.copy_from_slice(&crate::host_signals::take().to_le_bytes());
                } else if p == port::SNAPSHOT && data.len() == 4 {
                    data.copy_from_slice(&snap.pending().to_le_bytes());
                } else {
                    data.fill(0xff);
                }
            }
            Ok(VcpuExit::MmioRead(addr, data))
                if ninep.as_ref().is_some_and(|d| d.covers(addr)) =>
            {
                if let Some(d) = ninep.as_mut() {
                    d.read(addr, data);
                }
            }
            Ok(VcpuExit::MmioWrite(addr, data))
                if ninep.as_ref().is_some_and(|d| d.covers(addr)) =>
            {
                if let Some(d) = ninep.as_mut() {
                    d.write(addr, data);
                    if let Some(e) = d.take_error() {
                        return Err(e);
                    }
                }
            }
            Ok(VcpuExit::MmioRead(addr, _)) | Ok(VcpuExit::MmioWrite(addr, _)) => {
                return Err(crash(
                    &vcpu,
                    format!(
                        "access to guest-physical address {addr:#x}, which is neither RAM nor a device"
                    ),
                ));
            }
            Ok(VcpuExit::Hlt) => {
                return Err(crash(&vcpu, "the vCPU halted with interrupts off".into()));
            }
            Ok(VcpuExit::Shutdown) => {
                return Err(crash(
                    &vcpu,
                    "triple fault (the guest kernel could not handle an exception)".into(),
                ));
            }
            Ok(VcpuExit::FailEntry(reason, cpu)) => {
                return Err(crash(
                    &vcpu,
                    format!(
                        "KVM could not enter the guest (hardware reason {reason:#x}, cpu {cpu})"
                    ),
                ));
            }
            Ok(VcpuExit::InternalError) => {
                return Err(crash(
                    &vcpu,
                    "KVM internal error: the hypervisor could not continue the guest \
                     (on PVM hosts this is how a triple fault ends)"
                        .into(),
                ));
            }
            Ok(other) => {
                let what = format!("unexpected VM exit {other:?}");
                return Err(crash(&vcpu, what));
            }
            Err(e) if e.errno() == libc::EINTR || e.errno() == libc::EAGAIN => {
                vcpu.set_kvm_immediate_exit(0);
                if let Some(s) = sampler.as_mut() {
                    s.sample(&vcpu);
                }
            }
            Err(e) => {
                return Err(VmmError::Kvm {
                    what: "KVM_RUN",
                    source: e,
                });
            }
        }
    }
}

/// Nanoseconds since the Unix epoch.
fn unix_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// What writing a snapshot needs besides the devices.
struct SnapshotCtx<'a> {
    cfg: &'a PartitionConfig,
    kernel: (u64, u64),
    tsc_khz: Option<u32>,
    pvm: bool,
    mapped: Vec<(u64, u64)>,
    /// Snapshots asked for through the control socket (`astraea snapshot`).
    jobs: Option<std::sync::mpsc::Receiver<crate::control::SnapshotJob>>,
    /// Jobs taken from `jobs` to count them, not yet served.
    waiting: std::cell::RefCell<Vec<crate::control::SnapshotJob>>,
}

impl SnapshotCtx<'_> {
    /// How many snapshots were asked for from outside and not yet taken
    /// (the guest reads it: an interrupt sent before its APIC was up, at
    /// boot or while it resumed, was lost).
    fn pending(&self) -> u32 {
        let mut waiting = self.waiting.borrow_mut();
        if let Some(r) = &self.jobs {
            waiting.extend(r.try_iter());
        }
        waiting.len() as u32
    }

    /// The guest asked for a snapshot with its record at `gpa`: writes it
    /// (or says why not) and answers in the record's status.
    fn serve(
        &self,
        mem: &GuestMemory,
        gpa: u32,
        ninep: Option<&Virtio9p>,
        session: Option<&astraea_gateway::Session>,
    ) {
        use astraea_abi::snapshot::{MAGIC, Record};
        let mut raw = [0u8; Record::SIZE];
        if mem
            .read_slice(&mut raw, GuestAddress(u64::from(gpa)))
            .is_err()
        {
            tracing::warn!("a snapshot record outside guest RAM");
            return;
        }
        let rec = Record::from_bytes(&raw);
        if rec.magic != MAGIC {
            tracing::warn!("a snapshot request without its record");
            return;
        }
        // Asked for from outside (the first such request), else by the
        // program; later requests the guest served with this one fail.
        self.pending();
        let mut asked = std::mem::take(&mut *self.waiting.borrow_mut());
        let job = (!asked.is_empty()).then(|| asked.remove(0));
        for other in asked {
            other.answer(Err(
                "another snapshot was being taken at the same time; ask again".into(),
            ));
        }
        let path = job
            .as_ref()
            .map(|j| j.path.clone())
            .or(self.cfg.snapshot.clone());
        let result = if rec.resume_rip == 0 {
            // The guest could not quiesce: it says why in the status.
            tracing::warn!(errno = rec.status, "the partition refused the snapshot");
            Err((
                rec.status,
                format!(
                    "the partition could not stop for it ({}): a socket write or connect, or a terminal read, waits at the gateway",
                    std::io::Error::from_raw_os_error(rec.status as i32)
                ),
            ))
        } else {
            self.write(path.as_deref(), mem, &rec, ninep, session)
        };
        let status = match &result {
            Ok(_) => 0,
            Err((errno, why)) => {
                if rec.resume_rip != 0 {
                    tracing::error!("no snapshot: {why}");
                }
                *errno
            }
        };
        if let Some(j) = job {
            j.answer(result.map_err(|(_, why)| why));
        }
        let at = GuestAddress(u64::from(gpa) + Record::STATUS_OFFSET);
        if mem.write_obj(status, at).is_err() {
            tracing::warn!("cannot answer the snapshot request");
        }
    }

    fn write(
        &self,
        path: Option<&std::path::Path>,
        mem: &GuestMemory,
        rec: &astraea_abi::snapshot::Record,
        ninep: Option<&Virtio9p>,
        session: Option<&astraea_gateway::Session>,
    ) -> Result<u64, (u32, String)> {
        let path = path.ok_or((
            libc::EOPNOTSUPP as u32,
            "the program asked for a snapshot, but astraea run was given no --snapshot FILE"
                .to_string(),
        ))?;
        if matches!(
            self.cfg.ninep,
            NinePTarget::Tcp(_) | NinePTarget::VhostUser(_)
        ) {
            return Err((
                libc::EOPNOTSUPP as u32,
                "the partition's files come from another 9P server (--9p or --gateway), whose state a snapshot cannot hold".into(),
            ));
        }
        let busy = |why: String| (libc::EBUSY as u32, why);
        let device = match ninep {
            Some(d) => d.state().map_err(busy)?,
            None => None,
        };
        let session = match session {
            Some(s) => Some(s.save().map_err(|e| busy(e.to_string()))?),
            None => None,
        };
        let meta = crate::snapshot::Meta {
            format: crate::snapshot::FORMAT,
            mem: self.cfg.mem,
            recipe: self.cfg.recipe.0.clone(),
            cwd: self.cfg.recipe.1.clone(),
            host: if self.pvm { "pvm" } else { "kvm" }.into(),
            kernel: self.kernel,
            resume_rip: crate::snapshot::hex(rec.resume_rip),
            resume_rsp: crate::snapshot::hex(rec.resume_rsp),
            tsc: rec.tsc,
            tsc_khz: self.tsc_khz,
            taken_unix_ns: unix_ns(),
            device,
            session,
        };
        let t = Instant::now();
        let stored =
            crate::snapshot::write(path, &meta, mem, &self.mapped, self.cfg.restore.as_deref())
                .map_err(|e| (libc::EIO as u32, e))?;
        tracing::info!(
            path = %path.display(),
            stored_mib = stored >> 20,
            ms = t.elapsed().as_millis() as u64,
            "snapshot written"
        );
        Ok(stored)
    }
}

/// Dumps on request (`astraea cache dump`): the jobs the control socket
/// hands over, and the one the guest is writing.
struct LiveDumps {
    jobs: Option<std::sync::mpsc::Receiver<crate::control::DumpJob>>,
    /// `Some(None)`: the guest writes a dump on request that nobody waits for.
    current: Option<Option<crate::control::DumpJob>>,
}

impl LiveDumps {
    /// `CACHE_DUMP_BEGIN`: a dump at exit goes to the `--cache-dump` file
    /// (as records without a begin do); one on request to its job's file.
    fn begin(&mut self, kind: u32) {
        if let Some(Some(j)) = self.current.take() {
            j.fail("the partition began another dump before it finished this one".into());
        }
        if kind == astraea_abi::cache_dump::ON_REQUEST {
            let job = self.jobs.as_ref().and_then(|r| r.try_recv().ok());
            tracing::debug!(requested = job.is_some(), "cache dump on request begins");
            self.current = Some(job);
        }
    }

    fn write(&mut self, b: &[u8]) {
        if let Some(Some(j)) = self.current.as_mut() {
            j.write(b);
        }
    }

    /// `CACHE_DUMP_END`: closes the file and answers the requester.
    fn end(&mut self, status: u32) {
        if let Some(Some(j)) = self.current.take() {
            tracing::info!(
                "cache dumped on request to {} ({} KiB)",
                j.path.display(),
                j.bytes / 1024
            );
            j.finish(status);
        }
    }
}

/// Environment variable that, set to `0`, keeps the kernel in emulated
/// supervisor mode on a PVM host (for comparisons).
pub const PVM_NATIVE_ENV: &str = "ASTRAEA_PVM_NATIVE";

fn pvm_native(vcpu: &VcpuFd) -> bool {
    let pvm = vcpu::is_pvm_host(vcpu);
    let allowed = std::env::var(PVM_NATIVE_ENV).map_or(true, |v| v != "0");
    tracing::debug!(pvm, allowed, "PVM host check");
    let kind = vcpu::host_kind(pvm);
    if pvm && allowed {
        tracing::info!(
            host = kind,
            "KVM host: the library OS runs natively at CPL 3 with the virtual interrupt flag page; returns to the program by sysretq through the resume stub"
        );
    } else if pvm {
        tracing::info!(
            host = kind,
            "KVM host: the library OS runs emulated ({PVM_NATIVE_ENV}=0)"
        );
    } else {
        tracing::info!(
            host = kind,
            "KVM host: the library OS runs in ring 0 with its pages supervisor-only; real cli/sti"
        );
    }
    pvm && allowed
}

/// The host's name, if it is one a command line can carry (letters,
/// digits, `.`, `-`, `_`; at most 64 bytes).
fn host_name() -> Option<String> {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").ok()?;
    let name = name.trim();
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'));
    ok.then(|| name.to_string())
}

/// Whether the host kernel enabled FSGSBASE for programs: it says so in
/// the auxiliary vector (`HWCAP2_FSGSBASE`) only when it did (`nofsgsbase`
/// or an old kernel does not). Reading `/proc/cpuinfo` instead took about
/// a millisecond of every partition's start.
fn host_has_fsgsbase() -> bool {
    const HWCAP2_FSGSBASE: libc::c_ulong = 1 << 1;
    // SAFETY: getauxval only reads this process's auxiliary vector.
    unsafe { libc::getauxval(libc::AT_HWCAP2) & HWCAP2_FSGSBASE != 0 }
}

/// Environment variable: seconds after which a running partition is stopped
/// and its registers dumped (for debugging a guest that hangs).
pub const HANG_DUMP_ENV: &str = "ASTRAEA_HANG_DUMP_SECS";

/// Kicks the vCPU out of `KVM_RUN` with a signal after a delay, when asked
/// to by [`HANG_DUMP_ENV`].
struct HangWatchdog(Option<Arc<std::sync::atomic::AtomicBool>>);

extern "C" fn ignore_signal(_: libc::c_int) {}

impl HangWatchdog {
    fn arm() -> Self {
        let Some(secs) = std::env::var(HANG_DUMP_ENV)
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
        else {
            return Self(None);
        };
        let fired = Arc::new(std::sync::atomic::AtomicBool::new(false));
        // SAFETY: installs a handler that does nothing, without SA_RESTART,
        // so that KVM_RUN returns EINTR when the signal arrives.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = ignore_signal as *const () as usize;
            libc::sigaction(libc::SIGUSR1, &sa, std::ptr::null_mut());
        }
        // SAFETY: pthread_self has no preconditions.
        let me = unsafe { libc::pthread_self() };
        let f = fired.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs(secs));
            f.store(true, std::sync::atomic::Ordering::SeqCst);
            // SAFETY: `me` is the vCPU thread, alive for the process's life.
            unsafe { libc::pthread_kill(me, libc::SIGUSR1) };
        });
        Self(Some(fired))
    }

    fn fired(&self) -> bool {
        self.0
            .as_ref()
            .is_some_and(|f| f.load(std::sync::atomic::Ordering::SeqCst))
    }
}

fn crash(vcpu: &VcpuFd, reason: String) -> VmmError {
    VmmError::GuestCrash {
        reason,
        dump: vcpu::dump(vcpu),
    }
}

fn le_u32(data: &[u8]) -> u32 {
    let mut b = [0u8; 4];
    let n = data.len().min(4);
    b[..n].copy_from_slice(&data[..n]);
    u32::from_le_bytes(b)
}

fn register_memory(vm: &VmFd, mem: &GuestMemory) -> Result<(), VmmError> {
    for (slot, region) in mem.iter().enumerate() {
        let host = mem
            .get_host_address(region.start_addr())
            .map_err(|e| VmmError::Memory(e.to_string()))?;
        let r = kvm_userspace_memory_region {
            slot: slot as u32,
            flags: 0,
            guest_phys_addr: region.start_addr().0,
            memory_size: region.len(),
            userspace_addr: host as u64,
        };
        // SAFETY: `host..host+len` is a live mapping owned by `mem`, which the
        // caller keeps alive longer than `vm`; slots are distinct and the
        // regions of a GuestMemoryMmap never overlap.
        unsafe { vm.set_user_memory_region(r) }.map_err(kvm_err("KVM_SET_USER_MEMORY_REGION"))?;
    }
    Ok(())
}

/// Reads a [`ConsoleWrite`] and its bytes from guest memory; `None` if the
/// guest passed addresses outside its RAM or an oversized length.
fn read_console_write(mem: &GuestMemory, gpa: u32) -> Option<(u32, Vec<u8>)> {
    let mut raw = [0u8; ConsoleWrite::SIZE];
    mem.read_slice(&mut raw, GuestAddress(u64::from(gpa)))
        .ok()?;
    let cw = ConsoleWrite::from_bytes(&raw);
    if cw.len > MAX_CONSOLE_WRITE {
        tracing::warn!(len = cw.len, "console write too long, dropped");
        return None;
    }
    let mut buf = vec![0u8; cw.len as usize];
    mem.read_slice(&mut buf, GuestAddress(cw.addr)).ok()?;
    Some((cw.fd, buf))
}

fn console_write(mem: &GuestMemory, gpa: u32) {
    let Some((fd, buf)) = read_console_write(mem, gpa) else {
        tracing::warn!(gpa, "console write outside guest memory, dropped");
        return;
    };
    // A closed pipe (`astraea run … | head`) must not end the partition.
    let _ = if fd == 2 {
        std::io::stderr().lock().write_all(&buf)
    } else {
        let mut out = std::io::stdout().lock();
        out.write_all(&buf).and_then(|()| out.flush())
    };
}

/// The resolution the host reports for `clock` in ns (`None`: the host
/// does not have that clock).
fn host_clock_res(clock: libc::clockid_t) -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a local `timespec` the call writes.
    if unsafe { libc::clock_getres(clock, &mut ts) } != 0 {
        return None;
    }
    u64::try_from(ts.tv_sec)
        .ok()?
        .checked_mul(1_000_000_000)?
        .checked_add(u64::try_from(ts.tv_nsec).ok()?)
}

/// The host kernel's tick rate (`CONFIG_HZ`), which rounds socket time
/// limits: a limit of 1 µs reads back as one tick.
fn host_hz() -> Option<u32> {
    // SAFETY: a socket this function owns and closes; the option buffers
    // are local `timeval`s of the size passed.
    unsafe {
        let s = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if s < 0 {
            return None;
        }
        let tv = libc::timeval {
            tv_sec: 0,
            tv_usec: 1,
        };
        let size = std::mem::size_of::<libc::timeval>() as libc::socklen_t;
        let mut got = libc::timeval {
            tv_sec: 0,
            tv_usec: 0,
        };
        let mut len = size;
        let ok = libc::setsockopt(
            s,
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&raw const tv).cast(),
            size,
        ) == 0
            && libc::getsockopt(
                s,
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                (&raw mut got).cast(),
                &mut len,
            ) == 0;
        libc::close(s);
        (ok && got.tv_usec > 0).then(|| (1_000_000 / got.tv_usec) as u32)
    }
}

/// This process's resource limits as the guest's `rlimits=` wants them:
/// `SOFT:HARD` in hexadecimal (`-`: none) for each of Linux's 16, as they
/// were the first time this was called ([`raise_descriptor_limit`] calls
/// it before it raises anything).
pub fn host_rlimits() -> String {
    static ORIGINAL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    ORIGINAL
        .get_or_init(|| {
            let v = |x: u64| {
                if x == libc::RLIM_INFINITY {
                    "-".to_string()
                } else {
                    format!("{x:x}")
                }
            };
            (0..16)
                .map(|r| {
                    let l = rlimit(r);
                    format!("{}:{}", v(l.rlim_cur), v(l.rlim_max))
                })
                .collect::<Vec<_>>()
                .join(",")
        })
        .clone()
}

fn rlimit(r: u32) -> libc::rlimit {
    let mut l = libc::rlimit {
        rlim_cur: libc::RLIM_INFINITY,
        rlim_max: libc::RLIM_INFINITY,
    };
    // SAFETY: `l` is a valid `struct rlimit` for the call to fill.
    let _ = unsafe { libc::getrlimit(r as _, &mut l) };
    l
}

/// Raises this process's soft descriptor limit to its hard one, as the JVM
/// does: the gateway holds a host socket for each of the program's, beside
/// its own files. The program's limits stay the ones this process was
/// started with ([`host_rlimits`] keeps them first).
pub fn raise_descriptor_limit() {
    let _ = host_rlimits();
    if let Some((from, to)) = astraea_gateway::raise_descriptor_limit() {
        tracing::info!(
            from,
            to,
            "raised astraea's own descriptor limit for the gateway's host sockets (the program keeps the one it was started with)"
        );
    }
    // `ulimit -f`: the library OS enforces the program's file size limit;
    // this process's writes for it and its own must not end it by SIGXFSZ.
    if let Some(from) = astraea_gateway::tolerate_file_size_limit() {
        tracing::info!(
            from,
            "raised astraea's own file size limit (the program keeps the one it was started with)"
        );
    }
}
