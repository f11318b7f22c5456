//! The contract between the VMM (`hypervisor/`) and the library OS (`libos/`).
//!
//! Both sides compile this one file, so the guest memory layout and the
//! hypercall numbers cannot drift apart. Hypercalls are `out` instructions to
//! the ports below: one VM exit each, used only off hot paths (console lines,
//! exit, panic, boot timestamps).
#![no_std]
#![forbid(unsafe_code)]

/// Guest-physical layout at boot. Everything below [`KERNEL_START`] belongs to
/// the boot protocol; the kernel may reuse it once it has read the boot info.
pub mod layout {
    /// The boot GDT (null, code64, data).
    pub const BOOT_GDT: u64 = 0x1000;
    /// hermit-entry's `RawBootInfo`.
    pub const BOOT_INFO: u64 = 0x2000;
    /// On PVM hosts: the page that holds the virtual interrupt flag.
    pub const PVM_VIF: u64 = 0x3000;
    /// The flattened device tree: memory map, command line, arguments.
    pub const FDT: u64 = 0x4000;
    /// Largest FDT the VMM writes.
    pub const FDT_MAX: u64 = 0xc000;
    /// Boot page tables: PML4, one PDPT, four PDs identity-mapping 4 GiB with 2 MiB pages.
    pub const BOOT_PML4: u64 = 0x10000;
    /// Top of the boot stack (grows down towards [`BOOT_STACK_BOTTOM`]).
    pub const BOOT_STACK_TOP: u64 = 0x200000;
    /// Bottom of the boot stack.
    pub const BOOT_STACK_BOTTOM: u64 = 0x100000;
    /// Where a relocatable kernel image is loaded (2 MiB aligned).
    pub const KERNEL_START: u64 = 0x200000;
    /// Guest RAM never covers the 32-bit MMIO hole `[MMIO_HOLE_START, 4 GiB)`;
    /// RAM beyond it continues at 4 GiB.
    pub const MMIO_HOLE_START: u64 = 0xc000_0000;
    /// First guest-physical address after the hole.
    pub const HIGH_RAM_START: u64 = 0x1_0000_0000;
    /// Where the kernel sees guest-physical address 0: all RAM and the MMIO
    /// hole are mapped linearly from here, and the kernel image runs at
    /// `DIRECT_MAP + KERNEL_START`. It is PML4 slot 0x101, in the upper half,
    /// so the whole lower half belongs to the program (Linux's layout; PVM
    /// hosts reserve slot 0x100 for themselves, see docs/pvm.md).
    pub const DIRECT_MAP: u64 = 0xffff_8080_0000_0000;
}

/// Hypercall I/O ports.
pub mod port {
    /// `out` a 32-bit exit status: the partition ends with it.
    pub const EXIT: u16 = 0xf4;
    /// `out` the 32-bit guest-physical address of a [`super::ConsoleWrite`].
    pub const CONSOLE: u16 = 0x600;
    /// `out` the 32-bit guest-physical address of a [`super::ConsoleWrite`]
    /// holding the panic message; the partition ends as crashed.
    pub const PANIC: u16 = 0x601;
    /// `out` a [`super::Mark`] number: the VMM timestamps boot phases.
    pub const MARK: u16 = 0x602;
    /// `out` the 32-bit guest-physical address of a [`super::ConsoleWrite`]
    /// whose bytes the VMM appends to the `--cache-dump` file.
    pub const CACHE_DUMP: u16 = 0x603;
    /// `out` a 32-bit [`super::cache_dump::AT_EXIT`] or
    /// [`super::cache_dump::ON_REQUEST`]: a dump starts; the
    /// [`CACHE_DUMP`] records up to [`CACHE_DUMP_END`] belong to it.
    pub const CACHE_DUMP_BEGIN: u16 = 0x604;
    /// `out` a 32-bit status (0, or a Linux errno): the dump that
    /// [`CACHE_DUMP_BEGIN`] started is complete.
    pub const CACHE_DUMP_END: u16 = 0x605;
    /// `in` 32 bits: the signals sent to the VMM process for the program
    /// since the last read (bit `n - 1` for signal `n`), cleared by the
    /// read. Read after an interrupt on [`super::host_signal::VECTOR`].
    pub const HOST_SIGNALS: u16 = 0x606;
    /// `out` the 32-bit guest-physical address of a
    /// [`super::snapshot::Record`]: the guest is quiescent (interrupts off,
    /// no 9P request in flight) and asks the VMM to write its snapshot; the
    /// VMM answers in the record's `status` before the guest goes on.
    /// `in` (32 bits): how many snapshots were asked for from outside
    /// (`astraea snapshot`) and not yet taken — the guest asks whenever it
    /// is ready for one, so that an interrupt sent before its APIC was up
    /// is not lost, and to tell a repeated interrupt from a request.
    pub const SNAPSHOT: u16 = 0x607;
    /// `out` (any value) while a snapshot drains: every request left in
    /// flight is a socket's posted read or `listen` open waiting for the
    /// network; the VMM has the gateway answer them all `EINTR` (the
    /// guest's socket threads post them again after the snapshot).
    pub const SNAPSHOT_INTERRUPT: u16 = 0x608;
    /// The legacy 16550 UART (COM1), for anything that expects one.
    pub const COM1: u16 = 0x3f8;
}

/// The little-endian u32 at `b[i..i + 4]`.
fn le_u32(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

/// The little-endian u64 at `b[i..i + 8]`.
fn le_u64(b: &[u8], i: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[i..i + 8]);
    u64::from_le_bytes(a)
}

/// A buffer handed to the VMM by guest-physical address.
///
/// `#[repr(C)]`, 24 bytes: `fd u32, pad u32, addr u64, len u64`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConsoleWrite {
    /// 1 = the user's stdout, 2 = the user's stderr.
    pub fd: u32,
    /// Always 0.
    pub pad: u32,
    /// Guest-physical address of the bytes.
    pub addr: u64,
    /// Number of bytes.
    pub len: u64,
}

impl ConsoleWrite {
    /// Size of the structure in guest memory.
    pub const SIZE: usize = 24;

    /// Decodes the structure from guest memory bytes.
    pub fn from_bytes(b: &[u8; Self::SIZE]) -> Self {
        Self {
            fd: le_u32(b, 0),
            pad: le_u32(b, 4),
            addr: le_u64(b, 8),
            len: le_u64(b, 16),
        }
    }
}

/// Boot phases the guest reports through [`port::MARK`].
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mark {
    /// The first instruction of the kernel ran.
    KernelEntry = 1,
    /// Memory, interrupts, time and the scheduler are up.
    KernelReady = 2,
}

impl Mark {
    /// Decodes a mark number.
    pub fn from_u32(v: u32) -> Option<Self> {
        match v {
            1 => Some(Self::KernelEntry),
            2 => Some(Self::KernelReady),
            _ => None,
        }
    }
}

/// Dumps of the file cache (`astraea run --cache-dump`, `astraea cache dump`).
pub mod cache_dump {
    /// [`super::port::CACHE_DUMP_BEGIN`]: the dump at exit (`--cache-dump`).
    pub const AT_EXIT: u32 = 0;
    /// [`super::port::CACHE_DUMP_BEGIN`]: a dump the VMM asked for with an
    /// interrupt on [`VECTOR`] while the program runs.
    pub const ON_REQUEST: u32 = 1;
    /// The interrupt vector (an MSI to the boot CPU) by which the VMM asks a
    /// running partition to dump its file cache.
    pub const VECTOR: u8 = 0x41;
}

/// Signals sent to `astraea run` (a supervisor's SIGTERM, a terminal's
/// Ctrl-C) that the VMM forwards to the partition's program.
pub mod host_signal {
    /// The interrupt vector (an MSI to the boot CPU) by which the VMM says
    /// that [`super::port::HOST_SIGNALS`] has signals to read.
    pub const VECTOR: u8 = 0x42;
}

/// Snapshots of a whole partition (`astraea run --snapshot`, `astraea
/// snapshot`, `astraea run --from`): the guest saves its own CPU context in
/// its memory and hands the VMM a [`Record`] naming where to resume it.
pub mod snapshot {
    /// The interrupt vector (an MSI to the boot CPU) by which the VMM asks a
    /// running partition to snapshot itself.
    pub const VECTOR: u8 = 0x43;
    /// [`Record::magic`].
    pub const MAGIC: u64 = 0x5053_4e53_5241_5453; // "STARSNSP"
    /// [`Record::status`] while the VMM has not answered.
    pub const PENDING: u32 = u32::MAX;

    /// What the guest hands the VMM with [`super::port::SNAPSHOT`].
    ///
    /// `#[repr(C)]`, 40 bytes: `magic u64, resume_rip u64, resume_rsp u64,
    /// tsc u64, status u32, pad u32`.
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Record {
        /// [`MAGIC`].
        pub magic: u64,
        /// Where a restored partition's vCPU starts (a kernel virtual
        /// address, in supervisor mode with the boot tables, interrupts off,
        /// rdi = the boot info as at boot).
        pub resume_rip: u64,
        /// Its stack pointer then (a stack that is free while resuming).
        pub resume_rsp: u64,
        /// The guest's TSC when it asked: a restore continues from here.
        pub tsc: u64,
        /// Written by the VMM: 0 when the snapshot was written, else a
        /// Linux errno ([`PENDING`] until then).
        pub status: u32,
        /// Always 0.
        pub pad: u32,
    }

    impl Record {
        /// Size of the structure in guest memory.
        pub const SIZE: usize = 40;
        /// Offset of [`Record::status`].
        pub const STATUS_OFFSET: u64 = 32;

        /// Decodes the structure from guest memory bytes.
        pub fn from_bytes(b: &[u8; Self::SIZE]) -> Self {
            Self {
                magic: super::le_u64(b, 0),
                resume_rip: super::le_u64(b, 8),
                resume_rsp: super::le_u64(b, 16),
                tsc: super::le_u64(b, 24),
                status: super::le_u32(b, 32),
                pad: super::le_u32(b, 36),
            }
        }
    }
}

/// The virtio-mmio 9P device: its register window and interrupt vector.
pub mod virtio9p {
    /// Guest-physical base of the register window (in the 32-bit MMIO hole).
    pub const BASE: u64 = 0xd000_0000;
    /// Interrupt vector its completions arrive on (an MSI to the boot CPU).
    pub const VECTOR: u8 = 0x40;
}

/// The virtio-mmio (version 2) register map and the bits both sides use,
/// from the virtio 1.x specification, section 4.2.2.
pub mod virtio_mmio {
    /// "virt", little-endian.
    pub const MAGIC: u32 = 0x7472_6976;
    /// The modern (non-legacy) register layout.
    pub const VERSION: u32 = 2;
    /// Device ID of a 9P transport.
    pub const DEVICE_ID_9P: u32 = 9;
    /// The id of the used-ring element the VMM adds when the device's
    /// server has gone (a vhost-user gateway that died): no descriptor
    /// has this id, and every request in flight or made later fails (EIO).
    /// Not in the virtio spec; the server is gone, so nothing else writes
    /// the used ring any more.
    pub const USED_ID_SERVER_GONE: u32 = u32::MAX;
    #[allow(missing_docs)]
    pub mod reg {
        pub const MAGIC: u64 = 0x000;
        pub const VERSION: u64 = 0x004;
        pub const DEVICE_ID: u64 = 0x008;
        pub const VENDOR_ID: u64 = 0x00c;
        pub const DEVICE_FEATURES: u64 = 0x010;
        pub const DEVICE_FEATURES_SEL: u64 = 0x014;
        pub const DRIVER_FEATURES: u64 = 0x020;
        pub const DRIVER_FEATURES_SEL: u64 = 0x024;
        pub const QUEUE_SEL: u64 = 0x030;
        pub const QUEUE_NUM_MAX: u64 = 0x034;
        pub const QUEUE_NUM: u64 = 0x038;
        pub const QUEUE_READY: u64 = 0x044;
        pub const QUEUE_NOTIFY: u64 = 0x050;
        /// Astraea's (reserved in virtio-mmio): a notification the VMM
        /// serves on the thread of the vCPU that wrote it, no ioeventfd:
        /// the requests that never wait are answered before the guest runs
        /// again. Costs an exit to the VMM; saves two thread wake-ups,
        /// which a loaded host makes slow.
        pub const QUEUE_NOTIFY_HERE: u64 = 0x058;
        pub const INTERRUPT_STATUS: u64 = 0x060;
        pub const INTERRUPT_ACK: u64 = 0x064;
        pub const STATUS: u64 = 0x070;
        pub const QUEUE_DESC_LOW: u64 = 0x080;
        pub const QUEUE_DESC_HIGH: u64 = 0x084;
        pub const QUEUE_DRIVER_LOW: u64 = 0x090;
        pub const QUEUE_DRIVER_HIGH: u64 = 0x094;
        pub const QUEUE_DEVICE_LOW: u64 = 0x0a0;
        pub const QUEUE_DEVICE_HIGH: u64 = 0x0a4;
        pub const CONFIG_GENERATION: u64 = 0x0fc;
        pub const CONFIG: u64 = 0x100;
    }
    /// Feature: the device follows virtio 1.x.
    pub const F_VERSION_1: u64 = 1 << 32;
    /// Feature (9P): the config space holds a mount tag.
    pub const F_9P_MOUNT_TAG: u64 = 1;
    /// Feature (Astraea's, a device-specific bit the 9P spec leaves
    /// unused): the device serves [`reg::QUEUE_NOTIFY_HERE`]. Other VMMs
    /// (QEMU) do not offer it, and the driver then never writes there.
    pub const F_9P_NOTIFY_HERE: u64 = 1 << 23;
    #[allow(missing_docs)]
    pub mod status {
        pub const ACKNOWLEDGE: u32 = 1;
        pub const DRIVER: u32 = 2;
        pub const DRIVER_OK: u32 = 4;
        pub const FEATURES_OK: u32 = 8;
        pub const FAILED: u32 = 0x80;
    }
}

/// Device-tree property of a virtio-mmio node: its interrupt vector.
pub const FDT_VECTOR_PROP: &str = "astraea,vector";

/// Device-tree property (under `/chosen`): present on PVM hosts, holding the
/// guest-physical address of the virtual-interrupt-flag page the kernel
/// registers to run natively (see `docs/pvm.md`).
pub const FDT_PVM_VIF_PROP: &str = "astraea,pvm-vif";

/// The PVM host's paravirtual interface, as found on this project's build
/// machines (a fork of PVM; not the upstream ABI).
pub mod pvm {
    /// Registers the virtual-interrupt-flag page: `gpa | VIF_EXPLICIT_MODE`.
    /// Once registered, guest supervisor code runs natively.
    pub const MSR_VIF: u32 = 0x4b56_4d10;
    /// Reads [`SIGNATURE`] on a PVM host.
    pub const MSR_SIGNATURE: u32 = 0x4b56_4d11;
    /// "PVM".
    pub const SIGNATURE: u64 = 0x4d_5650;
    /// Flag of [`MSR_VIF`]: the mode is given explicitly (supervisor).
    pub const VIF_EXPLICIT_MODE: u64 = 1 << 10;
    /// Offset of the virtual IF byte in the page (1 = interrupts enabled).
    pub const VIF_IF: u64 = 0;
    /// Offset of the byte the host sets when an interrupt waits for IF.
    pub const VIF_PENDING: u64 = 1;
    /// Software interrupt for hypercalls (number in rax).
    pub const HYPERCALL_VECTOR: u8 = 0x1b;
    /// Hypercall: flush one TLB entry (rbx = address); harmless, so it is
    /// also how the guest lets the host deliver a pending interrupt.
    pub const HC_FLUSH_TLB_ONE: u64 = 0x1008;
}

/// Device-tree property (under `/chosen`): the program's working directory.
pub const FDT_CWD_PROP: &str = "astraea,cwd";
/// `/chosen` string: the file-cache policy and which mounts it covers,
/// `POLICY[:BYTES] MOUNT=ro|none…` (e.g. `ro:268435456 /=ro /home/me=none`).
pub const FDT_CACHE_PROP: &str = "astraea,cache";
/// `/chosen` u32: 1 when the VMM wants the file cache dumped at exit.
pub const FDT_CACHE_DUMP_PROP: &str = "astraea,cache-dump";
/// `/chosen` two u64s: guest-physical address and length of a cache image
/// the VMM placed in RAM (at its top) for the library OS to load.
pub const FDT_CACHE_IMAGE_PROP: &str = "astraea,cache-image";

/// Device-tree property (under `/chosen`) holding the program arguments, NUL-separated.
pub const FDT_ARGS_PROP: &str = "astraea,args";
/// Device-tree property (under `/chosen`) holding the TSC frequency in kHz.
pub const FDT_TSC_KHZ_PROP: &str = "astraea,tsc-khz";
/// Device-tree property (under `/chosen`): which of the user's standard
/// streams are terminals on the host, as a `u32` bit mask (bit 0 stdin,
/// bit 1 stdout, bit 2 stderr). Absent means none. The console answers the
/// terminal `ioctl`s (`TCGETS`, `TIOCGWINSZ`) only for these, so that
/// programs whose output goes to a pipe or file see `isatty` false as they
/// would on the host.
pub const FDT_TTY_PROP: &str = "astraea,tty";
/// Device-tree property (under `/chosen`): the host terminal's size as two
/// `u32` cells, rows then columns; present only if one of the streams is a
/// terminal that reports a size.
pub const FDT_WINSIZE_PROP: &str = "astraea,winsize";

/// Bits of [`FDT_TTY_PROP`].
pub mod tty {
    /// The user's stdin is a terminal.
    pub const STDIN: u32 = 1 << 0;
    /// The user's stdout is a terminal.
    pub const STDOUT: u32 = 1 << 1;
    /// The user's stderr is a terminal.
    pub const STDERR: u32 = 1 << 2;
}
