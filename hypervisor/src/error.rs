//! Errors of the VMM. Every variant's message says what went wrong and, where
//! the user can do something about it, what to do.

use std::path::PathBuf;

/// Why a partition could not be created or did not end normally.
#[derive(Debug, thiserror::Error)]
pub enum VmmError {
    /// The KVM device node is missing.
    #[error(
        "{0} does not exist: this machine offers no KVM. Enable virtualisation in the \
         firmware or the host's hypervisor, then load the module (modprobe kvm_intel or kvm_amd)"
    )]
    KvmMissing(String),
    /// The KVM device node exists but cannot be opened.
    #[error(
        "cannot open {0}: permission denied. Add your user to the group that owns it \
         (usually `kvm`: sudo usermod -aG kvm $USER, then log in again) or run as root"
    )]
    KvmPermission(String),
    /// The device node is not KVM's (it answers no KVM ioctl).
    #[error(
        "{0} is not a KVM device (it does not answer KVM_GET_API_VERSION): unset \
         ASTRAEA_KVM_DEVICE or point it at /dev/kvm"
    )]
    KvmNotKvm(String),
    /// The host's KVM lacks what a partition needs.
    #[error(
        "this host's KVM lacks what a partition needs: {0}. Use a host (or a nested \
         hypervisor configuration) whose CPU and KVM offer these"
    )]
    HostLacks(String),
    /// KVM refused to create a VM because the CPU's virtualisation is taken.
    #[error(
        "KVM cannot create a VM: {0}. Another hypervisor (VirtualBox, VMware, another \
         kernel module) may hold the CPU's virtualisation extensions; stop it and try again"
    )]
    KvmBusy(std::io::Error),
    /// Any other failure opening the KVM device node.
    #[error("cannot open {0}: {1}")]
    KvmOpen(String, std::io::Error),
    /// A KVM ioctl failed.
    #[error("KVM {what} failed: {source}")]
    Kvm {
        /// The operation that failed.
        what: &'static str,
        /// The error KVM returned.
        source: kvm_ioctls::Error,
    },
    /// The kernel image file cannot be read.
    #[error("cannot read kernel image {path}: {source}")]
    KernelRead {
        /// The path given.
        path: PathBuf,
        /// The reason.
        source: std::io::Error,
    },
    /// No kernel image was found in the default places.
    #[error(
        "no kernel image found (looked in: {looked}). Build it with `./x build` or pass --kernel ELF"
    )]
    KernelNotFound {
        /// The places searched.
        looked: String,
    },
    /// The kernel image is not a bootable Astraea/Hermit ELF.
    #[error("{path} is not a bootable kernel image: {reason}")]
    KernelInvalid {
        /// The path given.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// `--mem` could not be parsed.
    #[error(
        "invalid memory size {0:?}: write a number with an optional K, M, G or T suffix, e.g. 512M"
    )]
    MemParse(String),
    /// `--cache` names no policy.
    #[error("--cache {value:?} is not a file-cache policy: use none, ro or ro:SIZE (e.g. ro:256M)")]
    InvalidCache {
        /// What was given.
        value: String,
    },
    /// `--prefault` names no size.
    #[error("--prefault {value:?} is not understood: write a size such as 64M, 0, or auto")]
    InvalidPrefault {
        /// What was given.
        value: String,
    },
    /// `--mem` is too small to hold the kernel and its initial structures.
    #[error("--mem {given} MiB is too small: this kernel needs at least {needed} MiB")]
    MemTooSmall {
        /// What was asked for, in MiB.
        given: u64,
        /// The minimum, in MiB.
        needed: u64,
    },
    /// `--mem` is larger than this VMM supports.
    #[error("--mem {given} MiB is too large: at most {max} MiB")]
    MemTooLarge {
        /// What was asked for, in MiB.
        given: u64,
        /// The maximum, in MiB.
        max: u64,
    },
    /// `--mem` is more than the machine's RAM and swap together.
    #[error(
        "--mem {given} MiB is more than this machine has ({have} MiB of RAM and swap): \
         use a smaller --mem"
    )]
    MemMoreThanHost {
        /// What was asked for, in MiB.
        given: u64,
        /// RAM plus swap, in MiB.
        have: u64,
    },
    /// The guest's RAM could not be mapped into this process.
    #[error(
        "cannot map {mib} MiB of guest memory ({reason}): this process may not have that \
         much address space (ulimit -v) or the host is short of memory; use a smaller --mem"
    )]
    MemoryMap {
        /// The size, in MiB.
        mib: u64,
        /// The system's reason.
        reason: String,
    },
    /// `--cpus` out of range.
    #[error("--cpus {0} is not supported: this version runs partitions with exactly 1 vCPU")]
    Cpus(u32),
    /// The built-in gateway refused its configuration (e.g. a `--mount`).
    #[error("cannot set up the partition's files: {0}")]
    Gateway(astraea_gateway::GatewayError),
    /// The 9P server given with `--9p tcp:` cannot be reached.
    #[error(
        "cannot connect to the 9P server at {addr}: {source}. Is it running and listening there?"
    )]
    NinePConnect {
        /// The address given.
        addr: String,
        /// The reason.
        source: std::io::Error,
    },
    /// The vhost-user gateway (`--gateway vhost-user:SOCK`) cannot serve the
    /// partition's 9P device.
    #[error(transparent)]
    VhostUser(Box<crate::devices::vhost_user::VhostUserError>),
    /// Guest memory could not be created.
    #[error("cannot create guest memory: {0}")]
    Memory(String),
    /// The boot structures could not be written.
    #[error("cannot prepare the boot structures: {0}")]
    Boot(String),
    /// A snapshot file cannot be restored from (`astraea run --from`).
    #[error("cannot restore from the snapshot {path}: {reason}")]
    Snapshot {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        reason: String,
    },
    /// The guest's CPU stopped in a way the partition cannot continue from.
    #[error("partition crashed: {reason}\n{dump}")]
    GuestCrash {
        /// What happened (triple fault, unexpected exit, …).
        reason: String,
        /// Register dump of the vCPU.
        dump: String,
    },
    /// The library OS panicked.
    #[error("partition kernel panic: {0}")]
    GuestPanic(String),
}

impl VmmError {
    /// The `astraea` exit status for this error: 134 (as for SIGABRT) for a
    /// guest kernel panic, 139 (as for SIGSEGV) for a crashed guest CPU, 125
    /// when the partition could not be started at all.
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::GuestPanic(_) => 134,
            Self::GuestCrash { .. } => 139,
            _ => 125,
        }
    }
}

/// Shorthand for a failed KVM ioctl.
pub(crate) fn kvm_err(what: &'static str) -> impl FnOnce(kvm_ioctls::Error) -> VmmError {
    move |source| VmmError::Kvm { what, source }
}
