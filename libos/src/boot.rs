//! From the VMM's hand-off to the application's `main`: read the boot info and
//! device tree, bring up memory, descriptor tables, paging, time, the APIC and
//! the scheduler, then run `main` and exit with its status.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use astraea_abi::{FDT_ARGS_PROP, FDT_TSC_KHZ_PROP, Mark, layout, port};
#[doc(hidden)]
pub use hermit_entry::boot_info::RawBootInfo;
use hermit_entry::boot_info::{BootInfo, PlatformInfo};

use crate::arch::{apic, cpu, gdt, trap};
use crate::{console, mm, sched, time};

hermit_entry::define_entry_version!();

/// What the partition was started with.
#[derive(Debug, Clone)]
pub struct BootConfig {
    /// The kernel command line (`key=value` words).
    pub cmdline: String,
    /// The arguments after `astraea run … --`.
    pub args: Vec<String>,
    /// Guest RAM ranges (start, length).
    pub ram: Vec<(u64, u64)>,
    /// Number of vCPUs.
    pub cpus: u64,
    /// The TSC frequency in kHz.
    pub tsc_khz: u64,
    /// Nanoseconds from the kernel's first instruction to `main`.
    pub boot_ns: u64,
    /// The program's working directory (`/` if the VMM gave none).
    pub cwd: String,
}

impl BootConfig {
    /// Total RAM in bytes.
    pub fn mem_bytes(&self) -> u64 {
        self.ram.iter().map(|r| r.1).sum()
    }

    /// The value of `key=` on the command line.
    pub fn cmdline_value(&self, key: &str) -> Option<&str> {
        self.cmdline
            .split_ascii_whitespace()
            .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
    }
}

/// Defines the kernel entry point `_start` (hermit-entry ABI) that boots the
/// library OS and then calls `$main(&BootConfig) -> i32`.
#[macro_export]
macro_rules! entry {
    ($main:path) => {
        #[unsafe(naked)]
        #[unsafe(no_mangle)]
        /// The kernel entry point: the VMM jumps here with the boot info in rdi.
        pub unsafe extern "C" fn _start() -> ! {
            core::arch::naked_asm!(
                "and rsp, -16",
                "call {start}",
                "ud2",
                start = sym __astraea_start,
            )
        }

        extern "C" fn __astraea_start(raw: &'static $crate::boot::RawBootInfo, cpu_id: u32) -> ! {
            $crate::boot::start(raw, cpu_id, $main)
        }

        /// Where the PVH entry (`astraea_libos::boot`) ends up.
        #[unsafe(no_mangle)]
        extern "C" fn __astraea_pvh_main(start_info: u64) -> ! {
            $crate::boot::start_pvh(start_info, $main)
        }
    };
}

// The PVH entry for other VMMs (QEMU, Firecracker, Cloud Hypervisor, Xen):
// a 32-bit stub that ends in `__astraea_pvh_main` (defined by `entry!`).
core::arch::global_asm!(
    include_str!("arch/x86_64/pvh.S"),
    DIRECT_MAP = const crate::mm::DIRECT_MAP,
    options(att_syntax)
);

unsafe extern "C" {
    /// The PVH entry (`arch/x86_64/pvh.S`).
    fn astraea_pvh_start32();
}

/// Most RAM ranges the device tree may describe.
const MAX_RANGES: usize = 8;

struct FdtInfo<'a> {
    ram: [(u64, u64); MAX_RANGES],
    nram: usize,
    bootargs: &'a str,
    args: Args<'a>,
    tsc_khz: Option<u64>,
    virtio9p: Option<(u64, u64)>,
    pvm_vif: Option<u64>,
    cwd: &'a str,
    cache: &'a str,
    cache_dump: bool,
    cache_image: Option<(u64, u64)>,
    tty: u32,
    winsize: Option<(u16, u16)>,
    /// Booted by another VMM through the PVH entry: the 9P device's
    /// interrupt is an I/O APIC line, the console a 16550.
    pvh: Option<PvhDevices>,
}

/// The program's arguments as the VMM passed them.
#[derive(Clone, Copy)]
enum Args<'a> {
    /// Our VMM: NUL-separated, in the device tree.
    Nul(&'a [u8]),
    /// A PVH loader: the words after ` -- ` on the command line (QEMU's
    /// microvm appends its `virtio_mmio.device=` words there).
    Words(&'a str),
}

impl Args<'_> {
    fn to_vec(self) -> Vec<String> {
        match self {
            Args::Nul(b) => b
                .split(|&c| c == 0)
                .filter(|s| !s.is_empty())
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .collect(),
            Args::Words(w) => w
                .split_ascii_whitespace()
                .filter(|s| !s.starts_with("virtio_mmio.device="))
                .map(String::from)
                .collect(),
        }
    }
}

impl FdtInfo<'_> {
    /// Nothing described yet: what a VMM leaves out.
    fn empty() -> Self {
        FdtInfo {
            ram: [(0, 0); MAX_RANGES],
            nram: 0,
            bootargs: "",
            args: Args::Nul(&[]),
            tsc_khz: None,
            virtio9p: None,
            pvm_vif: None,
            cwd: "/",
            cache: "",
            cache_dump: false,
            cache_image: None,
            tty: 0,
            winsize: None,
            pvh: None,
        }
    }
}

/// The kernel's log level from the command line's `log=` (default `warn`).
fn log_level(cmdline: &str) -> &str {
    cmdline
        .split_ascii_whitespace()
        .find_map(|w| w.strip_prefix("log="))
        .unwrap_or("warn")
}

/// What a PVH boot found instead of our VMM's device tree.
#[derive(Clone, Copy)]
struct PvhDevices {
    /// The I/O APIC line of the virtio-9p device.
    virtio_gsi: Option<u32>,
}

fn read_fdt(addr: u64) -> FdtInfo<'static> {
    // SAFETY: the VMM wrote a valid FDT at this guest-physical address, which
    // the direct map reaches, and it stays untouched (the low boot area is
    // reserved from the frame allocator).
    let fdt = unsafe { fdt::Fdt::from_ptr(mm::phys_to_virt(addr) as *const u8) }
        .unwrap_or_else(|e| panic!("the boot device tree is invalid: {e:?}"));
    let mut info = FdtInfo::empty();
    for r in fdt.memory().regions() {
        if info.nram < MAX_RANGES {
            info.ram[info.nram] = (r.starting_address as u64, r.size.unwrap_or(0) as u64);
            info.nram += 1;
        }
    }
    for node in fdt.find_all_nodes("/virtio_mmio") {
        let base = node
            .reg()
            .and_then(|mut r| r.next())
            .map(|r| r.starting_address as u64);
        let vector = node
            .property(astraea_abi::FDT_VECTOR_PROP)
            .and_then(|p| p.as_usize());
        if let (Some(b), Some(v)) = (base, vector) {
            info.virtio9p = Some((b, v as u64));
        }
    }
    if let Some(chosen) = fdt.find_node("/chosen") {
        if let Some(p) = chosen.property("bootargs") {
            info.bootargs = core::str::from_utf8(p.value)
                .unwrap_or("")
                .trim_end_matches('\0');
        }
        if let Some(p) = chosen.property(FDT_ARGS_PROP) {
            info.args = Args::Nul(p.value);
        }
        if let Some(p) = chosen.property(astraea_abi::FDT_CWD_PROP) {
            info.cwd = core::str::from_utf8(p.value)
                .unwrap_or("/")
                .trim_end_matches('\0');
        }
        if let Some(p) = chosen.property(astraea_abi::FDT_CACHE_PROP) {
            info.cache = core::str::from_utf8(p.value)
                .unwrap_or("")
                .trim_end_matches('\0');
        }
        if let Some(p) = chosen.property(astraea_abi::FDT_PVM_VIF_PROP) {
            info.pvm_vif = p.as_usize().map(|v| v as u64);
        }
        if let Some(p) = chosen.property(FDT_TSC_KHZ_PROP) {
            info.tsc_khz = p.as_usize().map(|v| v as u64);
        }
        if let Some(p) = chosen.property(astraea_abi::FDT_TTY_PROP) {
            info.tty = p.as_usize().map_or(0, |v| v as u32);
        }
        if let Some(p) = chosen.property(astraea_abi::FDT_CACHE_DUMP_PROP) {
            info.cache_dump = p.as_usize().is_some_and(|v| v != 0);
        }
        if let Some(p) = chosen.property(astraea_abi::FDT_CACHE_IMAGE_PROP)
            && let [a, b] = [&p.value.get(..8), &p.value.get(8..16)]
            && let (Some(a), Some(b)) = (a, b)
        {
            let be = |x: &[u8]| {
                let mut w = [0u8; 8];
                w.copy_from_slice(x);
                u64::from_be_bytes(w)
            };
            info.cache_image = Some((be(a), be(b)));
        }
        if let Some(p) = chosen.property(astraea_abi::FDT_WINSIZE_PROP) {
            // Two big-endian u32 cells: rows, columns.
            if let [r0, r1, r2, r3, c0, c1, c2, c3] = *p.value {
                let rows = u32::from_be_bytes([r0, r1, r2, r3]);
                let cols = u32::from_be_bytes([c0, c1, c2, c3]);
                info.winsize = Some((
                    u16::try_from(rows).unwrap_or(u16::MAX),
                    u16::try_from(cols).unwrap_or(u16::MAX),
                ));
            }
        }
    }
    info
}

/// Boots the library OS on the boot CPU and runs `main`.
pub fn start(raw: &'static RawBootInfo, _cpu_id: u32, main: fn(&BootConfig) -> i32) -> ! {
    let tsc0 = cpu::rdtsc();
    cpu::outl(port::MARK, Mark::KernelEntry as u32);
    // Keeps the PVH entry's object (and its ELF note) in every image.
    core::hint::black_box(astraea_pvh_start32 as *const ());
    let boot = BootInfo::from(*raw);
    let (num_cpus, cpu_freq, boot_unix_ns) = match boot.platform_info {
        PlatformInfo::Uhyve {
            num_cpus,
            cpu_freq,
            boot_time,
            ..
        } => (
            num_cpus.get(),
            cpu_freq.map(|f| u64::from(f.get())),
            u64::try_from(boot_time.unix_timestamp_nanos()).unwrap_or(0),
        ),
        _ => (1, None, 0),
    };
    let fdt_addr = boot
        .hardware_info
        .device_tree
        .map_or(layout::FDT, |a| a.get());
    let fdt = read_fdt(fdt_addr);
    // The image's range is in the direct map (where it was relocated to run).
    let kernel = (
        boot.load_info.kernel_image_addr_range.start,
        boot.load_info.kernel_image_addr_range.end,
    );
    run(tsc0, fdt, kernel, num_cpus, cpu_freq, boot_unix_ns, main)
}

unsafe extern "C" {
    /// The image's first byte (its ELF header), from the linker.
    static __ehdr_start: u8;
    /// The end of the image's memory (libos/kernel.ld).
    static __kernel_end: u8;
}

/// Boots the library OS from the PVH entry (`arch/x86_64/pvh.S`): another
/// VMM loaded the image and passed an `hvm_start_info` at `start_info`.
pub fn start_pvh(start_info: u64, main: fn(&BootConfig) -> i32) -> ! {
    let tsc0 = cpu::rdtsc();
    console::use_uart();
    let pvh = crate::arch::pvh::read_start_info(start_info);
    let (bootargs, args) = match pvh.cmdline.split_once(" -- ") {
        Some((k, a)) => (k, a),
        None => (pvh.cmdline.strip_suffix(" --").unwrap_or(pvh.cmdline), ""),
    };
    // The first virtio-mmio 9P device of those listed (QEMU's microvm lists
    // every device it has: a console, a random-number source…).
    let virtio = crate::arch::pvh::virtio_mmio_devices(pvh.cmdline).find(|&(base, _)| {
        crate::arch::pvh::virtio_mmio_device_id(base)
            == Some(astraea_abi::virtio_mmio::DEVICE_ID_9P)
    });
    // Early, so that what the start info lacks can be said.
    crate::console::init_log(log_level(pvh.cmdline));
    log::debug!("PVH boot: command line {:?}", pvh.cmdline);
    if virtio.is_none() {
        log::warn!(
            "no virtio-mmio 9P device on the command line, so no files: under QEMU use \
             -M microvm,acpi=off with -device virtio-9p-device (the library OS reads no ACPI)"
        );
    }
    let fdt = FdtInfo {
        ram: pvh.ram,
        nram: pvh.nram,
        bootargs,
        args: Args::Words(args),
        virtio9p: virtio.map(|(base, _)| (base, u64::from(astraea_abi::virtio9p::VECTOR))),
        pvh: Some(PvhDevices {
            virtio_gsi: virtio.map(|(_, irq)| irq),
        }),
        ..FdtInfo::empty()
    };
    // Only the addresses of the linker's symbols are taken.
    let kernel = (
        &raw const __ehdr_start as u64,
        &raw const __kernel_end as u64,
    );
    let boot_unix_ns = crate::arch::pvh::rtc_unix_ns();
    run(tsc0, fdt, kernel, 1, None, boot_unix_ns, main)
}

/// The boot common to every VMM, from the time source on.
fn run(
    tsc0: u64,
    fdt: FdtInfo<'static>,
    kernel: (u64, u64),
    num_cpus: u64,
    cpu_freq: Option<u64>,
    boot_unix_ns: u64,
    main: fn(&BootConfig) -> i32,
) -> ! {
    let tsc_khz = fdt
        .tsc_khz
        .or(cpu_freq)
        .or_else(time::tsc_khz_from_cpuid)
        .or_else(|| {
            fdt.pvh.and_then(|_| {
                crate::arch::pvh::tsc_khz_from_kvmclock()
                    .or_else(crate::arch::pvh::tsc_khz_from_pit)
            })
        })
        .unwrap_or_else(|| {
            panic!("the TSC frequency is unknown: the VMM passed none and CPUID has none")
        });
    time::init(tsc0, tsc_khz, boot_unix_ns);
    console::init_log(log_level(fdt.bootargs));
    console::set_terminal(fdt.tty, fdt.winsize);

    // Descriptor tables first: once the kernel runs natively on a PVM host,
    // exceptions and interrupts arrive through this IDT.
    gdt::init();
    trap::init();
    crate::arch::user::init();
    if let Some(vif) = fdt.pvm_vif {
        cpu::pvm_native_mode(mm::phys_to_virt(vif));
        log::info!("PVM host: running natively (virtual IF page at {vif:#x})");
        if fdt
            .bootargs
            .split_whitespace()
            .any(|w| w == "cpu.fsgsbase=1")
        {
            crate::arch::user::use_fsgsbase();
            log::info!("FS base written by wrfsbase (the host's CR4 enables it)");
        }
    }
    let entry = fdt
        .bootargs
        .split_whitespace()
        .find_map(|w| w.strip_prefix("syscall.entry="));
    match (entry, cpu::pvm_native()) {
        (Some("direct" | "auto"), true) => {
            let selftest = fdt
                .bootargs
                .split_whitespace()
                .any(|w| w == "direct.selftest=1");
            crate::arch::direct::enable(selftest);
            log::info!("system calls: direct entry (rewritten sites jump into the library OS)");
        }
        (Some("direct"), false) => log::warn!(
            "system calls: direct entry needs a PVM host (elsewhere the program could reach library-OS memory); trapping"
        ),
        _ => log::info!("system calls: trap"),
    }

    // Physical memory: everything below the kernel's end (boot data, boot
    // stack, the image) stays reserved; the bitmap goes right after the image.
    let ram = &fdt.ram[..fdt.nram];
    let top = ram.iter().map(|r| r.0 + r.1).max().unwrap_or(0);
    let kernel_end_pa = mm::virt_to_phys(kernel.1);
    let bitmap_at = kernel_end_pa.next_multiple_of(4096);
    // A cache image the VMM placed at the top of RAM stays reserved until
    // it is loaded.
    let image = fdt.cache_image.unwrap_or((0, 0));
    // SAFETY: `ram` comes from the VMM's device tree; the bitmap sits in RAM
    // after the kernel image, which nothing else uses, and is reserved.
    unsafe {
        mm::init_frames(
            ram,
            &[(0, kernel_end_pa), (image.0, image.0 + image.1)],
            top,
            bitmap_at,
        )
    };
    log::debug!("frames ready at {} us", time::monotonic_ns() / 1000);

    log::debug!("traps ready at {} us", time::monotonic_ns() / 1000);
    mm::init_paging(ram, kernel);
    log::debug!("paging ready at {} us", time::monotonic_ns() / 1000);
    if let Err(e) = apic::init() {
        panic!(
            "the local APIC cannot be used ({e:?}): Astraea needs x2APIC and the TSC-deadline timer"
        );
    }
    sched::init();
    cpu::irq_restore(true);
    if let Some((base, vector)) = fdt.virtio9p {
        if vector != u64::from(astraea_abi::virtio9p::VECTOR) {
            panic!(
                "the VMM put the 9P device on vector {vector:#x}; this kernel expects {:#x}",
                astraea_abi::virtio9p::VECTOR
            );
        }
        let aname = fdt
            .bootargs
            .split_ascii_whitespace()
            .find_map(|w| w.strip_prefix("9p.aname="))
            .unwrap_or("");
        if let Some(PvhDevices {
            virtio_gsi: Some(gsi),
        }) = fdt.pvh
        {
            crate::drivers::virtio9p::acknowledge_interrupts(true);
            if let Err(e) =
                crate::arch::pvh::route_irq(gsi, astraea_abi::virtio9p::VECTOR, apic::id())
            {
                log::error!("cannot route the 9P device's interrupt line {gsi}: {e:?}");
            }
        }
        // The file cache's default budget: a quarter of the partition.
        crate::cache::configure(fdt.cache, top / 4);
        match crate::p9::mount_device(base, aname) {
            Ok(c) => log::info!("9P namespace mounted (msize {})", c.msize()),
            Err(e) => log::error!("cannot mount the 9P namespace: {e}"),
        }
        CACHE_DUMP.store(fdt.cache_dump, Ordering::Relaxed);
        // Dumps on request (`astraea cache dump`) come as an interrupt;
        // this thread does the 9P work the interrupt handler may not.
        if sched::spawn("cache-ctl", cache_ctl).is_none() {
            log::warn!("cannot start the cache-ctl thread: the cache cannot be dumped on request");
        }
        if let Some((gpa, len)) = fdt.cache_image {
            let t0 = time::monotonic_ns();
            // SAFETY: the VMM wrote the image into these reserved frames,
            // which the direct map reaches; they are freed only below.
            let bytes = unsafe {
                core::slice::from_raw_parts(mm::phys_to_virt(gpa) as *const u8, len as usize)
            };
            let (files, skipped, blocks) = crate::cache::load(gpa, bytes);
            log::info!(
                "cache image: {files} files ({skipped} changed, skipped), {blocks} blocks loaded in {} us",
                (time::monotonic_ns() - t0) / 1000
            );
        }
    }

    crate::snapshot::init();
    let cfg = BootConfig {
        cmdline: String::from(fdt.bootargs),
        args: fdt.args.to_vec(),
        ram: ram.to_vec(),
        cpus: num_cpus,
        tsc_khz,
        boot_ns: time::monotonic_ns(),
        cwd: String::from(fdt.cwd),
    };
    crate::syscall::set_strace(cfg.cmdline_value("strace") == Some("1"));
    crate::net::set_streaming(cfg.cmdline_value("net.stream") != Some("off"));
    if let Some(name) = cfg.cmdline_value("host.name") {
        crate::syscall::uname::set_nodename(name);
    }
    if let Some(pid) = cfg.cmdline_value("pid").and_then(|p| p.parse().ok()) {
        crate::process::set_pid(pid);
    }
    if let Some(limits) = cfg.cmdline_value("rlimits") {
        crate::process::set_rlimits(limits);
    }
    if let Some(v) = cfg.cmdline_value("net.bufmax") {
        let n: alloc::vec::Vec<u32> = v.split(',').filter_map(|x| x.parse().ok()).collect();
        if let [r, w, t] = n[..] {
            crate::net::options::set_buffer_max(r, w, t);
        }
    }
    if let Some(hz) = cfg.cmdline_value("net.hz").and_then(|v| v.parse().ok()) {
        crate::net::options::set_hz(hz);
    }
    if let Some(ns) = cfg
        .cmdline_value("time.coarse")
        .and_then(|v| v.parse().ok())
    {
        time::set_coarse_res(ns);
    }
    if cfg.cmdline_value("time.alarm") == Some("0") {
        time::set_alarm_clocks(false);
    }
    if cfg.cmdline_value("profile") == Some("1") {
        crate::profile::enable();
    }
    log::info!(
        "booted in {} us: {} MiB RAM, {} vCPU, TSC {} kHz, {} free pages",
        cfg.boot_ns / 1000,
        cfg.mem_bytes() >> 20,
        cfg.cpus,
        tsc_khz,
        mm::stats().free_pages
    );
    cpu::outl(port::MARK, Mark::KernelReady as u32);
    cpu::irq_restore(true);
    let code = main(&cfg);
    exit(code)
}

/// Whether the VMM asked for the file cache at exit (`--cache-dump`).
static CACHE_DUMP: AtomicBool = AtomicBool::new(false);

/// Dump requests the VMM made (interrupts on
/// [`astraea_abi::cache_dump::VECTOR`]) that the cache-ctl thread has not
/// served yet.
static DUMP_REQUESTS: AtomicU32 = AtomicU32::new(0);
/// Where the cache-ctl thread waits for [`DUMP_REQUESTS`].
static DUMP_REQUESTED: sched::WaitQueue = sched::WaitQueue::new();
/// A dump is being written (one at a time: their records must not mix).
static DUMPING: AtomicBool = AtomicBool::new(false);
/// Where a dump waits for the one being written.
static DUMP_DONE: sched::WaitQueue = sched::WaitQueue::new();

/// The dump-request interrupt: counts the request and wakes the cache-ctl
/// thread (the dump itself talks 9P, which an interrupt handler may not).
pub fn cache_dump_requested() {
    DUMP_REQUESTS.fetch_add(1, Ordering::SeqCst);
    DUMP_REQUESTED.wake_one();
}

/// The cache-ctl kernel thread: serves each dump request in turn.
fn cache_ctl() {
    loop {
        DUMP_REQUESTED.wait_while(|| DUMP_REQUESTS.load(Ordering::SeqCst) == 0);
        DUMP_REQUESTS.fetch_sub(1, Ordering::SeqCst);
        dump_cache(astraea_abi::cache_dump::ON_REQUEST);
    }
}

/// Streams the file cache to the VMM between a begin and an end hypercall,
/// one dump at a time; the program keeps running meanwhile (the blocks
/// being copied are pinned, not locked).
fn dump_cache(kind: u32) {
    DUMP_DONE.wait_while(|| {
        DUMPING
            .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
    });
    cpu::outl(port::CACHE_DUMP_BEGIN, kind);
    let status = if crate::cache::current().is_some() {
        crate::cache::dump();
        0
    } else {
        crate::errno::Errno::ENODEV.0
    };
    cpu::outl(port::CACHE_DUMP_END, status);
    DUMPING.store(false, Ordering::SeqCst);
    DUMP_DONE.wake_one();
}

/// Ends the partition with `code` as its exit status.
pub fn exit(code: i32) -> ! {
    // The dump talks 9P: only from a context that may wait (a system call).
    if cpu::interrupts_enabled() {
        // Shared file mappings reach their files, as the page cache would.
        mm::vma::write_back_all();
    }
    if CACHE_DUMP.swap(false, Ordering::Relaxed) && cpu::interrupts_enabled() {
        dump_cache(astraea_abi::cache_dump::AT_EXIT);
    }
    report();
    if console::uart() {
        // Another VMM: say it on the console too (QEMU's isa-debug-exit at
        // the exit port turns the write below into its own exit status
        // `code * 2 + 1`; without one the partition halts here).
        crate::eprintln!("astraea: exit status {code}");
    }
    cpu::outl(port::EXIT, code as u32);
    loop {
        cpu::enable_and_halt();
    }
}

/// Where the partition's time went: the profile (`--profile`) and, at
/// `--log info`, the counts.
fn report() {
    if let Some(p) = crate::profile::report() {
        console::write(console::Stream::Stderr, p.as_bytes());
    }
    report_counts();
}

/// The counts of system calls, faults, switches, 9P requests and the file
/// cache since boot, at `--log info`.
pub(crate) fn report_counts() {
    use core::sync::atomic::Ordering::Relaxed;
    if !log::log_enabled!(log::Level::Info) {
        return;
    }
    let f = &mm::vma::STATS;
    let (calls, sys_ns) = crate::syscall::stats();
    let s = sched::stats();
    log::info!(
        "exit after {} us: {} system calls ({} us), faults {} anonymous + {} file ({} KiB read, {} us, {} us of it reading), {} context switches, {} preemptions, {} timer interrupts, {} us idle",
        time::monotonic_ns() / 1000,
        calls,
        sys_ns / 1000,
        f.anon.load(Relaxed),
        f.file.load(Relaxed),
        f.file_bytes.load(Relaxed) / 1024,
        f.ns.load(Relaxed) / 1000,
        f.io_ns.load(Relaxed) / 1000,
        s.switches,
        s.preemptions,
        s.timer_interrupts,
        s.idle_ns / 1000
    );
    let (requests, notes, quiet, irqs, here) = crate::drivers::virtio9p::stats();
    log::info!(
        "9P: {requests} requests, {notes} notifications ({quiet} left out: the device was polling; {here} more served on the vCPU's thread: the host was slow), {irqs} completion interrupts"
    );
    if crate::arch::direct::enabled() {
        let (served, declined, warmed) = crate::arch::direct::stats();
        let (patched, refused) = crate::syscall::patch::stats();
        log::info!(
            "direct system calls: {served} served ({} went on in supervisor mode), {declined} declined (trapped from their stub); sites: {patched} rewritten, {refused} left trapping; {warmed} library-OS pages mapped for user mode",
            crate::arch::direct::upgrades()
        );
    }
    if let Some(c) = crate::cache::current() {
        let st = c.stats();
        log::info!(
            "file cache {}: {} hits, {} misses ({} KiB fetched), {} evictions, {} KiB resident of {} KiB",
            c.name(),
            st.hits,
            st.misses,
            st.fetched_bytes / 1024,
            st.evictions,
            st.resident_bytes / 1024,
            st.budget_bytes / 1024
        );
    }
}

/// What a partition restored from a snapshot takes from the device tree
/// the restoring VMM wrote: the program's arguments (NUL-separated), which
/// of the user's streams are terminals, and the log level and `--strace`
/// of its command line.
pub fn restored_from_fdt() -> Vec<u8> {
    let fdt = read_fdt(layout::FDT);
    console::init_log(log_level(fdt.bootargs));
    console::set_terminal(fdt.tty, fdt.winsize);
    crate::syscall::set_strace(
        fdt.bootargs
            .split_ascii_whitespace()
            .any(|w| w == "strace=1"),
    );
    match fdt.args {
        Args::Nul(b) => b.to_vec(),
        Args::Words(w) => w.as_bytes().to_vec(),
    }
}

static PANICKING: AtomicBool = AtomicBool::new(false);

/// Whether the kernel is panicking (locks stop checking their discipline
/// so that the report gets out).
pub fn panicking() -> bool {
    PANICKING.load(Ordering::Relaxed)
}

#[cfg(not(test))]
#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    cpu::irq_save();
    if PANICKING.swap(true, Ordering::SeqCst) {
        console::panic_message(b"panic while panicking");
        exit(134);
    }
    let mut w = console::BufWriter::<2048>::new(console::Stream::Stderr);
    let mut t = Truncating(&mut w);
    let _ = write!(t, "{}", info.message());
    if let Some(loc) = info.location() {
        let _ = write!(t, " (at {}:{}:{})", loc.file(), loc.line(), loc.column());
    }
    console::panic_message(w.as_bytes());
    exit(134)
}

/// Writes into a [`console::BufWriter`] without ever flushing: what does not
/// fit is dropped, so a panic message is sent in one piece.
struct Truncating<'a, const N: usize>(&'a mut console::BufWriter<N>);

impl<const N: usize> Write for Truncating<'_, N> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        self.0.push_truncating(s);
        Ok(())
    }
}
