//! Booting under another VMM through the PVH entry (`pvh.S`): what the
//! `hvm_start_info` structure says (memory map, command line), and the
//! legacy devices such a machine has instead of our VMM's hypercalls — the
//! 8254 PIT to measure the TSC, the CMOS clock for the time of day, and the
//! I/O APIC that routes a virtio-mmio device's interrupt line.
//!
//! The command line is the VMM's (`-append` in QEMU): the library OS's
//! `key=value` words, then ` -- ` and the program with its arguments.
//! QEMU's `microvm` adds `virtio_mmio.device=SIZE@BASE:IRQ` for each
//! virtio-mmio device.

use super::cpu::{inb, outb, rdtsc};
use crate::mm;

/// `hvm_start_info.magic`.
const START_MAGIC: u32 = 0x336e_c578;
/// E820 type of usable RAM.
const E820_RAM: u32 = 1;
/// Where the I/O APIC's registers are on every PC-compatible machine.
const IOAPIC_BASE: u64 = 0xfec0_0000;

/// The longest command line kept.
const CMDLINE_MAX: usize = 4096;
/// The command line, copied at boot.
static CMDLINE: spin::Once<([u8; CMDLINE_MAX], usize)> = spin::Once::new();

/// Xen's `struct hvm_start_info` (version 1).
#[repr(C)]
#[derive(Clone, Copy)]
struct StartInfo {
    magic: u32,
    version: u32,
    flags: u32,
    nr_modules: u32,
    modlist_paddr: u64,
    cmdline_paddr: u64,
    rsdp_paddr: u64,
    memmap_paddr: u64,
    memmap_entries: u32,
    reserved: u32,
}

/// Xen's `struct hvm_memmap_table_entry`.
#[repr(C)]
#[derive(Clone, Copy)]
struct MemmapEntry {
    addr: u64,
    size: u64,
    ty: u32,
    reserved: u32,
}

/// What the PVH loader handed over.
pub struct PvhInfo {
    /// Usable RAM ranges (start, length), at most `N`.
    pub ram: [(u64, u64); 8],
    /// How many of `ram` are used.
    pub nram: usize,
    /// The whole command line.
    pub cmdline: &'static str,
}

/// Reads the start info at guest-physical `pa`. Panics (the console works
/// already) when it is not a PVH start info.
pub fn read_start_info(pa: u64) -> PvhInfo {
    // SAFETY: the PVH loader passed the address of its start info, which the
    // boot page tables map through the direct map; it is only read, and
    // `read_unaligned` makes no alignment assumption.
    let si = unsafe { core::ptr::read_unaligned(mm::phys_to_virt(pa) as *const StartInfo) };
    if si.magic != START_MAGIC {
        panic!(
            "PVH boot: no hvm_start_info at {pa:#x} (magic {:#x})",
            si.magic
        );
    }
    let mut info = PvhInfo {
        ram: [(0, 0); 8],
        nram: 0,
        cmdline: "",
    };
    if si.version >= 1 && si.memmap_paddr != 0 {
        for i in 0..u64::from(si.memmap_entries) {
            let at = si.memmap_paddr + i * core::mem::size_of::<MemmapEntry>() as u64;
            // SAFETY: as above: the loader's memory map, `memmap_entries`
            // entries long, mapped and only read.
            let e =
                unsafe { core::ptr::read_unaligned(mm::phys_to_virt(at) as *const MemmapEntry) };
            if e.ty == E820_RAM && e.size > 0 && info.nram < info.ram.len() {
                info.ram[info.nram] = (e.addr, e.size);
                info.nram += 1;
            }
        }
    }
    if info.nram == 0 {
        panic!(
            "PVH boot: the start info has no memory map (version {})",
            si.version
        );
    }
    if si.cmdline_paddr != 0 {
        let p = mm::phys_to_virt(si.cmdline_paddr) as *const u8;
        let mut len = 0;
        // SAFETY: the command line is a NUL-terminated string the loader
        // wrote, mapped by the boot tables (the first 4 GiB); 64 KiB bounds a
        // missing terminator.
        while len < 65536 && unsafe { p.add(len).read() } != 0 {
            len += 1;
        }
        // SAFETY: the `len` bytes just scanned.
        let bytes = unsafe { core::slice::from_raw_parts(p, len) };
        // Copied: the loader's copy may sit outside RAM (QEMU's qboot puts
        // it in the BIOS area), which the kernel's own tables do not map.
        let copy = CMDLINE.call_once(|| {
            let mut buf = [0u8; CMDLINE_MAX];
            let n = bytes.len().min(CMDLINE_MAX);
            buf[..n].copy_from_slice(&bytes[..n]);
            (buf, n)
        });
        info.cmdline = core::str::from_utf8(&copy.0[..copy.1]).unwrap_or("");
    }
    info
}

/// The first `virtio_mmio.device=SIZE@BASE:IRQ` word of `cmdline`: the
/// device's registers and its interrupt line.
pub fn virtio_mmio_devices(cmdline: &str) -> impl Iterator<Item = (u64, u32)> + '_ {
    cmdline.split_ascii_whitespace().filter_map(|w| {
        let spec = w.strip_prefix("virtio_mmio.device=")?;
        let (_, rest) = spec.split_once('@')?;
        let (base, irq) = rest.split_once(':')?;
        let base = u64::from_str_radix(base.strip_prefix("0x")?, 16).ok()?;
        Some((base, irq.parse().ok()?))
    })
}

/// The virtio device ID at the virtio-mmio registers at `base` (0 for a
/// slot without a device), or `None` if no virtio-mmio transport is there.
/// Read through the boot tables' direct map, before the kernel has its own.
pub fn virtio_mmio_device_id(base: u64) -> Option<u32> {
    let reg = |off: u64| {
        // SAFETY: `base` is a virtio-mmio register window the VMM named on
        // the command line, inside the 4 GiB the boot tables map; reading
        // its magic and device ID registers has no side effect.
        unsafe { core::ptr::read_volatile(mm::phys_to_virt(base + off) as *const u32) }
    };
    (base < 1 << 32 && reg(0) == astraea_abi::virtio_mmio::MAGIC).then(|| reg(8))
}

/// Routes interrupt line `gsi` of the I/O APIC to `vector` on the boot CPU
/// (edge-triggered, active high, as ISA lines are; the driver acknowledges
/// the device before looking at its queue, so no completion is missed).
pub fn route_irq(gsi: u32, vector: u8, apic_id: u32) -> Result<(), mm::paging::MapError> {
    let base = mm::map_mmio(IOAPIC_BASE, 0x1000)?;
    let write = |reg: u32, value: u32| {
        // SAFETY: `base` maps the I/O APIC's register window: IOREGSEL at 0,
        // IOWIN at 0x10. Nothing else in the kernel touches them.
        unsafe {
            core::ptr::write_volatile(base as *mut u32, reg);
            core::ptr::write_volatile((base + 0x10) as *mut u32, value);
        }
    };
    write(0x11 + 2 * gsi, apic_id << 24);
    write(0x10 + 2 * gsi, u32::from(vector));
    Ok(())
}

/// KVM's paravirtual clock page (`struct pvclock_vcpu_time_info`).
#[repr(C, align(64))]
struct PvClock {
    version: u32,
    pad0: u32,
    tsc_timestamp: u64,
    system_time: u64,
    tsc_to_system_mul: u32,
    tsc_shift: i8,
    flags: u8,
    pad: [u8; 2],
}

/// The page KVM fills in once, for [`tsc_khz_from_kvmclock`].
static PVCLOCK: crate::sync::IrqLock<PvClock> = crate::sync::IrqLock::new(PvClock {
    version: 0,
    pad0: 0,
    tsc_timestamp: 0,
    system_time: 0,
    tsc_to_system_mul: 0,
    tsc_shift: 0,
    flags: 0,
    pad: [0; 2],
});

/// The TSC frequency KVM uses for its paravirtual clock (as Linux's
/// `kvm_get_tsc_khz`): exact, where measuring against an emulated timer in a
/// nested or loaded host is not. `None` without KVM's clock.
pub fn tsc_khz_from_kvmclock() -> Option<u64> {
    use core::arch::x86_64::__cpuid;
    const MSR_KVM_SYSTEM_TIME_NEW: u32 = 0x4b56_4d01;
    const KVM_FEATURE_CLOCKSOURCE2: u32 = 1 << 3;
    if __cpuid(1).ecx & (1 << 31) == 0 {
        return None;
    }
    let sig = __cpuid(0x4000_0000);
    if [sig.ebx, sig.ecx, sig.edx] != [0x4b4d_564b, 0x564b_4d56, 0x4d] {
        return None;
    }
    if __cpuid(0x4000_0001).eax & KVM_FEATURE_CLOCKSOURCE2 == 0 {
        return None;
    }
    let page = PVCLOCK.lock();
    let pa = mm::virt_to_phys(&raw const *page as u64);
    // SAFETY: the MSR takes the guest-physical address of a pvclock
    // structure (64-byte aligned, in the kernel image, reached through the
    // direct map); KVM writes it now and at each later update, so it is
    // switched off again before the lock is released.
    unsafe { super::cpu::wrmsr(MSR_KVM_SYSTEM_TIME_NEW, pa | 1) };
    // SAFETY: KVM has written the structure; volatile reads see its values.
    let (mul, shift) = unsafe {
        (
            core::ptr::read_volatile(&raw const page.tsc_to_system_mul),
            core::ptr::read_volatile(&raw const page.tsc_shift),
        )
    };
    // SAFETY: disabling the clock stops KVM's writes to the structure.
    unsafe { super::cpu::wrmsr(MSR_KVM_SYSTEM_TIME_NEW, 0) };
    if mul == 0 {
        return None;
    }
    let khz = (1_000_000u64 << 32) / u64::from(mul);
    Some(if shift < 0 {
        khz << -shift
    } else {
        khz >> shift
    })
}

/// The TSC frequency measured against the 8254 PIT's channel 2 over 50 ms
/// (the PIT counts at 1.193182 MHz on every PC).
pub fn tsc_khz_from_pit() -> Option<u64> {
    const PIT_HZ: u64 = 1_193_182;
    const COUNT: u16 = 59_659; // 50 ms
    let gate = inb(0x61);
    if gate == 0xff {
        return None; // no PIT
    }
    // Channel 2's gate on, the speaker off.
    outb(0x61, (gate & !0x02) | 0x01);
    // Channel 2, low then high byte, mode 0 (interrupt on terminal count).
    outb(0x43, 0b1011_0000);
    outb(0x42, COUNT as u8);
    outb(0x42, (COUNT >> 8) as u8);
    let t0 = rdtsc();
    // OUT2 (bit 5 of port 0x61) rises at the terminal count.
    let mut spins = 0u64;
    while inb(0x61) & 0x20 == 0 {
        spins += 1;
        if spins > 10_000_000 {
            return None;
        }
    }
    let ticks = rdtsc() - t0;
    outb(0x61, gate);
    (ticks > 0).then(|| ticks * PIT_HZ / u64::from(COUNT) / 1000)
}

/// The time of day from the CMOS real-time clock, in nanoseconds since the
/// Unix epoch (0 if the clock reads nonsense).
pub fn rtc_unix_ns() -> u64 {
    let read = |reg: u8| {
        outb(0x70, reg);
        inb(0x71)
    };
    // No clock there: the bus reads all ones (and every read is an exit,
    // which under nested virtualization costs a lot: never spin on it).
    if read(0x0a) == 0xff {
        return 0;
    }
    // Wait out an update in progress (< 2 ms), then read until two reads
    // agree.
    let snapshot = || {
        let mut spins = 0;
        while read(0x0a) & 0x80 != 0 && spins < 10_000 {
            spins += 1;
        }
        [
            read(0x00),
            read(0x02),
            read(0x04),
            read(0x07),
            read(0x08),
            read(0x09),
            read(0x32),
        ]
    };
    let mut t = snapshot();
    for _ in 0..10 {
        let u = snapshot();
        if u == t {
            break;
        }
        t = u;
    }
    let binary = read(0x0b) & 0x04 != 0;
    let h24 = read(0x0b) & 0x02 != 0;
    let bcd = |v: u8| {
        if binary {
            u64::from(v)
        } else {
            u64::from(v & 0x0f) + u64::from(v >> 4) * 10
        }
    };
    let [sec, min, hour_raw, day, month, year, century] = t;
    let pm = hour_raw & 0x80 != 0;
    let mut hour = bcd(hour_raw & 0x7f);
    if !h24 {
        hour %= 12;
        if pm {
            hour += 12;
        }
    }
    let century = match bcd(century) {
        c @ 19..=21 => c,
        _ => 20,
    };
    let (year, month, day) = (century * 100 + bcd(year), bcd(month), bcd(day));
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || year < 1970 {
        return 0;
    }
    // Days since 1970-01-01 (Howard Hinnant's days_from_civil).
    let (y, m) = if month <= 2 {
        (year - 1, month + 9)
    } else {
        (year, month - 3)
    };
    let era = y / 400;
    let yoe = y - era * 400;
    let doy = (153 * m + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    ((days * 24 + hour) * 60 + bcd(min)) * 60_000_000_000 + bcd(sec) * 1_000_000_000
}
