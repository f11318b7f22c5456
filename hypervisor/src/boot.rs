//! Everything the guest finds in memory at its first instruction: the kernel
//! image (loaded and relocated by hermit-entry), a boot GDT, identity-mapping
//! page tables, the flattened device tree and hermit-entry's `BootInfo`.

use std::mem::MaybeUninit;
use std::num::{NonZeroU32, NonZeroU64};
use std::path::Path;

use astraea_abi::layout;
use hermit_entry::boot_info::{BootInfo, HardwareInfo, PlatformInfo, RawBootInfo, SerialPortBase};
use hermit_entry::elf::KernelObject;
use vm_memory::{Bytes, GuestAddress, GuestMemoryBackend};

use crate::error::VmmError;
use crate::memory::{GuestMemory, ram_ranges};

/// Memory the kernel needs beyond its image for its first heap and tables.
const MIN_FREE_AFTER_KERNEL: u64 = 8 << 20;

/// What the vCPU needs to start the loaded kernel.
#[derive(Debug, Clone, Copy)]
pub struct BootState {
    /// Entry point (guest virtual = physical).
    pub entry: u64,
    /// Guest-physical address of the `RawBootInfo`.
    pub boot_info: u64,
    /// Initial stack pointer.
    pub stack: u64,
    /// Root page table.
    pub pml4: u64,
    /// Guest-physical GDT base and limit.
    pub gdt: (u64, u16),
    /// The loaded kernel's image range.
    pub kernel: (u64, u64),
}

/// Boot parameters chosen by the user.
#[derive(Debug, Clone)]
pub struct BootParams<'a> {
    /// The kernel command line (`key=value` words for the library OS).
    pub cmdline: &'a str,
    /// Arguments after `--`, handed to the guest program.
    pub args: &'a [String],
    /// Number of vCPUs.
    pub cpus: u32,
    /// The guest TSC frequency in kHz, if KVM told us.
    pub tsc_khz: Option<u32>,
    /// A virtio-mmio 9P device: (register base, interrupt vector).
    pub virtio9p: Option<(u64, u8)>,
    /// On a PVM host: let the kernel switch to native supervisor mode.
    pub pvm_native: bool,
    /// The program's working directory.
    pub cwd: Option<&'a str>,
    /// The file-cache description for the library OS ([`astraea_abi::FDT_CACHE_PROP`]).
    pub cache: Option<&'a str>,
    /// Ask the library OS to dump its file cache at exit.
    pub cache_dump: bool,
    /// A cache image placed in guest RAM: (address, length).
    pub cache_image: Option<(u64, u64)>,
    /// Which of the user's standard streams are terminals
    /// ([`astraea_abi::tty`] bits) and the terminal's size.
    pub terminal: Terminal,
}

/// What the kernel is told about the user's terminal.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Terminal {
    /// [`astraea_abi::tty`] bits: which of stdin, stdout, stderr are terminals.
    pub mask: u32,
    /// (rows, columns) as the first terminal among them reports it.
    pub size: Option<(u16, u16)>,
}

impl Terminal {
    /// Looks at this process's stdin, stdout and stderr.
    pub fn of_this_process() -> Self {
        let mut t = Terminal::default();
        for (fd, bit) in [
            (libc::STDIN_FILENO, astraea_abi::tty::STDIN),
            (libc::STDOUT_FILENO, astraea_abi::tty::STDOUT),
            (libc::STDERR_FILENO, astraea_abi::tty::STDERR),
        ] {
            // SAFETY: isatty only inspects the descriptor.
            if unsafe { libc::isatty(fd) } != 1 {
                continue;
            }
            t.mask |= bit;
            if t.size.is_none() {
                let mut ws = libc::winsize {
                    ws_row: 0,
                    ws_col: 0,
                    ws_xpixel: 0,
                    ws_ypixel: 0,
                };
                // SAFETY: TIOCGWINSZ writes one struct winsize, which `ws` is.
                let ok = unsafe { libc::ioctl(fd, libc::TIOCGWINSZ, &raw mut ws) } == 0;
                if ok {
                    t.size = Some((ws.ws_row, ws.ws_col));
                }
            }
        }
        t
    }
}

/// Smallest partition that can hold `kernel_size` bytes of kernel image.
pub fn min_mem(kernel_size: u64) -> u64 {
    layout::KERNEL_START + kernel_size.next_multiple_of(2 << 20) + MIN_FREE_AFTER_KERNEL
}

/// Parses a kernel image, refusing anything hermit-entry cannot load.
pub fn parse_kernel<'a>(path: &Path, bytes: &'a [u8]) -> Result<KernelObject<'a>, VmmError> {
    let invalid = |reason: String| VmmError::KernelInvalid {
        path: path.to_path_buf(),
        reason,
    };
    if bytes.get(..4) != Some(b"\x7fELF") {
        return Err(invalid("it is not an ELF file".into()));
    }
    // hermit-entry panics on some malformed headers instead of returning an
    // error; a bad file must give a message, not a crash of the VMM.
    let parsed = std::panic::catch_unwind(|| KernelObject::parse(bytes));
    match parsed {
        Ok(Ok(obj)) => Ok(obj),
        Ok(Err(e)) => Err(invalid(format!(
            "{e} (an Astraea kernel is an x86-64 static-PIE ELF carrying the HERMIT entry-version note)"
        ))),
        Err(_) => Err(invalid("its ELF headers are malformed".into())),
    }
}

/// Loads the kernel and writes every boot structure into guest memory.
pub fn prepare(
    mem: &GuestMemory,
    mem_size: u64,
    path: &Path,
    kernel: &KernelObject<'_>,
    params: &BootParams<'_>,
) -> Result<BootState, VmmError> {
    let ksize = kernel.mem_size() as u64;
    let needed = min_mem(ksize);
    if mem_size < needed {
        return Err(VmmError::MemTooSmall {
            given: mem_size >> 20,
            needed: needed.div_ceil(1 << 20),
        });
    }
    let start = match kernel.start_addr() {
        None => layout::KERNEL_START,
        // A kernel linked at a fixed address must sit in the direct map.
        Some(v)
            if v >= layout::DIRECT_MAP + layout::KERNEL_START
                && v - layout::DIRECT_MAP + ksize + MIN_FREE_AFTER_KERNEL <= mem_size =>
        {
            v - layout::DIRECT_MAP
        }
        Some(v) => {
            return Err(VmmError::KernelInvalid {
                path: path.to_path_buf(),
                reason: format!(
                    "it must be loaded at {v:#x}, which is not in this partition's direct map at {:#x}",
                    layout::DIRECT_MAP
                ),
            });
        }
    };
    let host = host_slice(mem, start, ksize)?;
    // SAFETY: `host` points at `ksize` bytes of guest RAM inside one mapped
    // region (checked by host_slice); no vCPU runs yet and nothing else holds
    // a reference to these bytes, so a unique slice over them is sound.
    let image =
        unsafe { std::slice::from_raw_parts_mut(host.cast::<MaybeUninit<u8>>(), ksize as usize) };
    // The image is linked and relocated for its place in the direct map.
    let loaded = kernel.load_kernel(image, layout::DIRECT_MAP + start);
    let kernel_range = (
        loaded.load_info.kernel_image_addr_range.start - layout::DIRECT_MAP,
        loaded.load_info.kernel_image_addr_range.end - layout::DIRECT_MAP,
    );

    let (gdt, pml4) = write_boot_structures(mem, mem_size, params, loaded.load_info)?;
    Ok(BootState {
        entry: loaded.entry_point,
        boot_info: layout::DIRECT_MAP + layout::BOOT_INFO,
        stack: layout::DIRECT_MAP + layout::BOOT_STACK_TOP,
        pml4,
        gdt,
        kernel: kernel_range,
    })
}

/// Writes the boot structures for a partition restored from a snapshot:
/// the kernel is in the snapshot's memory already (at `kernel`, its
/// guest-physical range), and the vCPU starts at `entry` on `stack`.
pub fn prepare_resume(
    mem: &GuestMemory,
    mem_size: u64,
    kernel: (u64, u64),
    params: &BootParams<'_>,
    entry: u64,
    stack: u64,
) -> Result<BootState, VmmError> {
    let load_info = hermit_entry::boot_info::LoadInfo {
        kernel_image_addr_range: layout::DIRECT_MAP + kernel.0..layout::DIRECT_MAP + kernel.1,
        tls_info: None,
    };
    let (gdt, pml4) = write_boot_structures(mem, mem_size, params, load_info)?;
    Ok(BootState {
        entry,
        boot_info: layout::DIRECT_MAP + layout::BOOT_INFO,
        stack,
        pml4,
        gdt,
        kernel,
    })
}

/// The boot GDT, page tables, device tree and boot info; returns the GDT
/// (base, limit) and the root page table.
fn write_boot_structures(
    mem: &GuestMemory,
    mem_size: u64,
    params: &BootParams<'_>,
    load_info: hermit_entry::boot_info::LoadInfo,
) -> Result<((u64, u16), u64), VmmError> {
    let gdt = write_gdt(mem)?;
    let pml4 = write_page_tables(mem, mem_size)?;
    write_fdt(mem, mem_size, params)?;

    let ram_end = ram_ranges(mem_size)
        .last()
        .map(|&(s, l)| s + l)
        .unwrap_or(mem_size);
    let boot_info = BootInfo {
        hardware_info: HardwareInfo {
            phys_addr_range: 0..ram_end,
            serial_port_base: SerialPortBase::new(astraea_abi::port::COM1),
            device_tree: NonZeroU64::new(layout::FDT),
        },
        load_info,
        platform_info: PlatformInfo::Uhyve {
            has_pci: false,
            num_cpus: NonZeroU64::new(u64::from(params.cpus.max(1))).unwrap_or(NonZeroU64::MIN),
            cpu_freq: params.tsc_khz.and_then(NonZeroU32::new),
            boot_time: std::time::SystemTime::now().into(),
        },
    };
    let raw = RawBootInfo::from(boot_info);
    let size = std::mem::size_of::<RawBootInfo>() as u64;
    let dst = host_slice(mem, layout::BOOT_INFO, size)?;
    // SAFETY: `dst` covers size_of::<RawBootInfo>() bytes of mapped guest RAM
    // (host_slice checked it); write_unaligned makes no alignment assumption.
    unsafe { dst.cast::<RawBootInfo>().write_unaligned(raw) };

    Ok((gdt, pml4))
}

/// Host pointer to `len` bytes at `gpa`, all inside one guest memory region.
fn host_slice(mem: &GuestMemory, gpa: u64, len: u64) -> Result<*mut u8, VmmError> {
    let end = gpa
        .checked_add(len)
        .ok_or_else(|| VmmError::Boot(format!("range {gpa:#x}+{len:#x} overflows")))?;
    let region = mem
        .find_region(GuestAddress(gpa))
        .ok_or_else(|| VmmError::Boot(format!("{gpa:#x} is not guest RAM")))?;
    let region_end = region.start_addr().0 + region.len();
    if end > region_end {
        return Err(VmmError::Boot(format!(
            "range {gpa:#x}..{end:#x} leaves guest RAM"
        )));
    }
    mem.get_host_address(GuestAddress(gpa))
        .map_err(|e| VmmError::Boot(e.to_string()))
}

use vm_memory::GuestMemoryRegion;

fn write_gdt(mem: &GuestMemory) -> Result<(u64, u16), VmmError> {
    // Linux's layout: null, unused, 64-bit code (0x10), data (0x18).
    let gdt: [u64; 4] = [0, 0, 0x00af_9b00_0000_ffff, 0x00cf_9300_0000_ffff];
    for (i, e) in gdt.iter().enumerate() {
        mem.write_obj(*e, GuestAddress(layout::BOOT_GDT + 8 * i as u64))
            .map_err(|e| VmmError::Boot(e.to_string()))?;
    }
    Ok((layout::BOOT_GDT, (gdt.len() * 8 - 1) as u16))
}

/// Maps `[0, max(mem_size, 4 GiB))` with 2 MiB pages twice, at 0 (where the
/// vCPU starts) and at the direct map (where the kernel runs), so that the
/// kernel reaches all RAM and the MMIO hole before it builds its own tables.
fn write_page_tables(mem: &GuestMemory, mem_size: u64) -> Result<u64, VmmError> {
    const P: u64 = 1; // present
    const W: u64 = 2; // writable
    const PS: u64 = 0x80; // 2 MiB page
    // User-accessible: on a PVM host the kernel runs natively at hardware
    // CPL 3 and reaches only user pages (the host does not separate user and
    // supervisor memory for it anyway). Harmless elsewhere: no user code runs
    // before the kernel builds its own tables.
    const U: u64 = 4;
    let w = |v: u64, a: u64| {
        mem.write_obj(v, GuestAddress(a))
            .map_err(|e| VmmError::Boot(e.to_string()))
    };
    let top = ram_ranges(mem_size)
        .last()
        .map(|&(s, l)| s + l)
        .unwrap_or(mem_size)
        .max(4 << 30);
    let gib = top.div_ceil(1 << 30);
    let pml4 = layout::BOOT_PML4;
    let pdpt = pml4 + 0x1000;
    let pd0 = pdpt + 0x1000;
    if pd0 + gib * 0x1000 > layout::BOOT_STACK_BOTTOM {
        return Err(VmmError::Boot("boot page tables do not fit".into()));
    }
    w(pdpt | P | W | U, pml4)?;
    let slot = (layout::DIRECT_MAP >> 39) & 0x1ff;
    w(pdpt | P | W | U, pml4 + 8 * slot)?;
    for g in 0..gib {
        let pd = pd0 + g * 0x1000;
        w(pd | P | W | U, pdpt + 8 * g)?;
        for i in 0..512u64 {
            w(((g << 30) + (i << 21)) | P | W | U | PS, pd + 8 * i)?;
        }
    }
    Ok(pml4)
}

fn write_fdt(mem: &GuestMemory, mem_size: u64, p: &BootParams<'_>) -> Result<(), VmmError> {
    let fdt_err = |e: vm_fdt::Error| VmmError::Boot(format!("device tree: {e}"));
    let mut w = vm_fdt::FdtWriter::new().map_err(fdt_err)?;
    let root = w.begin_node("").map_err(fdt_err)?;
    w.property_u32("#address-cells", 2).map_err(fdt_err)?;
    w.property_u32("#size-cells", 2).map_err(fdt_err)?;
    w.property_string("compatible", "astraea,partition")
        .map_err(fdt_err)?;
    for (start, len) in ram_ranges(mem_size) {
        let node = w
            .begin_node(&format!("memory@{start:x}"))
            .map_err(fdt_err)?;
        w.property_string("device_type", "memory")
            .map_err(fdt_err)?;
        w.property_array_u64("reg", &[start, len])
            .map_err(fdt_err)?;
        w.end_node(node).map_err(fdt_err)?;
    }
    if let Some((base, vector)) = p.virtio9p {
        let node = w
            .begin_node(&format!("virtio_mmio@{base:x}"))
            .map_err(fdt_err)?;
        w.property_string("compatible", "virtio,mmio")
            .map_err(fdt_err)?;
        w.property_array_u64("reg", &[base, crate::devices::virtio9p::MMIO_SIZE])
            .map_err(fdt_err)?;
        w.property_u32(astraea_abi::FDT_VECTOR_PROP, u32::from(vector))
            .map_err(fdt_err)?;
        w.end_node(node).map_err(fdt_err)?;
    }
    let chosen = w.begin_node("chosen").map_err(fdt_err)?;
    w.property_string("bootargs", p.cmdline).map_err(fdt_err)?;
    let mut args = Vec::new();
    for a in p.args {
        args.extend_from_slice(a.as_bytes());
        args.push(0);
    }
    w.property(astraea_abi::FDT_ARGS_PROP, &args)
        .map_err(fdt_err)?;
    if let Some(cwd) = p.cwd {
        w.property_string(astraea_abi::FDT_CWD_PROP, cwd)
            .map_err(fdt_err)?;
    }
    if let Some(cache) = p.cache {
        w.property_string(astraea_abi::FDT_CACHE_PROP, cache)
            .map_err(fdt_err)?;
    }
    if p.cache_dump {
        w.property_u32(astraea_abi::FDT_CACHE_DUMP_PROP, 1)
            .map_err(fdt_err)?;
    }
    if let Some((gpa, len)) = p.cache_image {
        w.property_array_u64(astraea_abi::FDT_CACHE_IMAGE_PROP, &[gpa, len])
            .map_err(fdt_err)?;
    }
    if p.pvm_native {
        w.property_u64(astraea_abi::FDT_PVM_VIF_PROP, layout::PVM_VIF)
            .map_err(fdt_err)?;
    }
    if let Some(khz) = p.tsc_khz {
        w.property_u32(astraea_abi::FDT_TSC_KHZ_PROP, khz)
            .map_err(fdt_err)?;
    }
    if p.terminal.mask != 0 {
        w.property_u32(astraea_abi::FDT_TTY_PROP, p.terminal.mask)
            .map_err(fdt_err)?;
        if let Some((rows, cols)) = p.terminal.size {
            w.property_array_u32(
                astraea_abi::FDT_WINSIZE_PROP,
                &[u32::from(rows), u32::from(cols)],
            )
            .map_err(fdt_err)?;
        }
    }
    w.end_node(chosen).map_err(fdt_err)?;
    w.end_node(root).map_err(fdt_err)?;
    let blob = w.finish().map_err(fdt_err)?;
    if blob.len() as u64 > layout::FDT_MAX {
        return Err(VmmError::Boot(format!(
            "the arguments are too long: {} bytes of boot data, at most {}",
            blob.len(),
            layout::FDT_MAX
        )));
    }
    mem.write_slice(&blob, GuestAddress(layout::FDT))
        .map_err(|e| VmmError::Boot(e.to_string()))
}
