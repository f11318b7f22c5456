//! One vCPU: CPUID, long-mode registers, and the register dump used when a
//! guest crashes.

use astraea_abi::layout;
use kvm_bindings::{CpuId, Msrs, kvm_fpu, kvm_msr_entry, kvm_segment};
use kvm_ioctls::VcpuFd;

use crate::boot::BootState;
use crate::error::{VmmError, kvm_err};

const CR0_PE: u64 = 1;
const CR0_ET: u64 = 1 << 4;
const CR0_NE: u64 = 1 << 5;
const CR0_WP: u64 = 1 << 16;
const CR0_PG: u64 = 1 << 31;
const CR0_MP: u64 = 1 << 1;
const CR0_AM: u64 = 1 << 18;
const CR4_PAE: u64 = 1 << 5;
/// FXSAVE/FXRSTOR and SSE instructions allowed (without it every SSE
/// instruction of the program is #UD).
const CR4_OSFXSR: u64 = 1 << 9;
/// Unmasked SIMD floating-point exceptions raise #XM instead of #UD.
const CR4_OSXMMEXCPT: u64 = 1 << 10;
/// XSAVE/XRSTOR/XGETBV allowed, and AVX once XCR0 enables it.
const CR4_OSXSAVE: u64 = 1 << 18;
/// XCR0's x87 and SSE bits, which XCR0 must always have.
const XCR0_X87_SSE: u64 = 0b11;
const EFER_LME: u64 = 1 << 8;
const EFER_LMA: u64 = 1 << 10;
const EFER_NXE: u64 = 1 << 11;
const EFER_SCE: u64 = 1;
const MSR_IA32_MISC_ENABLE: u32 = 0x1a0;
const MSR_MTRR_DEF_TYPE: u32 = 0x2ff;
/// MTRRs enabled, default memory type write-back. With MTRRs off the guest's
/// memory would be uncacheable, and every access ~100x slower.
const MTRR_ENABLE_WB: u64 = (1 << 11) | 6;

/// The host's XCR0: the state components its kernel enabled.
fn host_xcr0() -> u64 {
    let leaf1 = core::arch::x86_64::__cpuid(1);
    // XGETBV needs the OS to have set CR4.OSXSAVE (CPUID.1:ECX bit 27).
    if leaf1.ecx & (1 << 27) == 0 {
        return XCR0_X87_SSE;
    }
    let (lo, hi): (u32, u32);
    // SAFETY: XGETBV with ECX=0 only reads XCR0; OSXSAVE is set (checked).
    unsafe {
        core::arch::asm!("xgetbv", in("ecx") 0, out("eax") lo, out("edx") hi, options(nomem, nostack))
    };
    (u64::from(hi) << 32) | u64::from(lo)
}

/// Gives the guest the host's CPU features as KVM supports them (SSE, AVX,
/// XSAVE, x2APIC), plus the hypervisor bit and the TSC-deadline timer, and
/// hides the PMU (a guest would trap on every counter access). Returns the
/// XCR0 the guest gets (0 without XSAVE): the host's enabled components
/// that KVM supports, and CPUID advertises no component outside it.
pub fn setup_cpuid(supported: CpuId, vcpu: &VcpuFd, id: u32) -> Result<u64, VmmError> {
    // KVM's supported CPUID, as `hostcheck::check` fetched it (once: the
    // ioctl takes ≈ 0.5 ms on a PVM host).
    let mut cpuid = supported;
    // Some PVM hosts leave XSAVE out of KVM's supported list, yet run the
    // guest with the host's own CR4 and XCR0: its programs can use every
    // enabled component (AVX, AVX-512), so say so, as the host's CPUID
    // does — without XSAVE and OSXSAVE, glibc and HotSpot take AVX for
    // unusable (a partition's JVM ran without it, and a program's feature
    // checks differed from the host's).
    let host_leaf1 = core::arch::x86_64::__cpuid(1);
    let host_xsave = host_leaf1.ecx & (1 << 26) != 0 && host_leaf1.ecx & (1 << 27) != 0;
    let pvm = is_pvm_host(vcpu);
    let xsave = cpuid
        .as_slice()
        .iter()
        .any(|e| e.function == 1 && e.ecx & (1 << 26) != 0)
        || (pvm && host_xsave);
    let supported = cpuid
        .as_slice()
        .iter()
        .find(|e| e.function == 0xd && e.index == 0)
        .map_or(0, |e| u64::from(e.eax) | (u64::from(e.edx) << 32));
    let xcr0 = if xsave {
        (supported & host_xcr0()) | XCR0_X87_SSE
    } else {
        0
    };
    for e in cpuid.as_mut_slice() {
        if e.function == 0xd && e.index == 0 {
            // Only the components XCR0 will have.
            e.eax = xcr0 as u32;
            e.edx = (xcr0 >> 32) as u32;
        }
        if e.function == 0xd && (2..64).contains(&e.index) && xcr0 & (1 << e.index) == 0 {
            (e.eax, e.ebx, e.ecx, e.edx) = (0, 0, 0, 0);
        }
    }
    for e in cpuid.as_mut_slice() {
        match e.function {
            1 => {
                e.ecx |= (1 << 31) | (1 << 24) | (1 << 21); // hypervisor, TSC-deadline, x2APIC
                if xsave {
                    // KVM sets OSXSAVE (bit 27) from the guest's CR4.
                    e.ecx |= 1 << 26;
                }
                e.ebx = (e.ebx & 0x00ff_ffff) | (id << 24); // initial APIC ID
            }
            0xa => {
                e.eax = 0;
                e.ebx = 0;
                e.ecx = 0;
                e.edx = 0;
            }
            0xb | 0x1f => e.edx = id, // x2APIC ID
            _ => {}
        }
    }
    vcpu.set_cpuid2(&cpuid).map_err(kvm_err("KVM_SET_CPUID2"))?;
    Ok(xcr0)
}

/// Puts the vCPU straight into 64-bit mode at the kernel's entry point, with
/// hermit-entry's ABI: `rdi` = boot info, `rsi` = CPU id. SSE is enabled,
/// and XSAVE with `xcr0` (from [`setup_cpuid`]) when it is not 0: a PVM
/// host runs the guest with its own CR4, but on VT-x/SVM the guest's CR4
/// and XCR0 are what the program's SSE/AVX instructions meet.
pub fn setup_long_mode(
    vcpu: &VcpuFd,
    boot: &BootState,
    id: u32,
    xcr0: u64,
) -> Result<(), VmmError> {
    let mut sregs = vcpu.get_sregs().map_err(kvm_err("KVM_GET_SREGS"))?;
    let code = kvm_segment {
        base: 0,
        limit: 0xffff_ffff,
        selector: 0x10,
        type_: 11,
        present: 1,
        dpl: 0,
        db: 0,
        s: 1,
        l: 1,
        g: 1,
        avl: 0,
        unusable: 0,
        padding: 0,
    };
    let data = kvm_segment {
        selector: 0x18,
        type_: 3,
        l: 0,
        db: 1,
        ..code
    };
    // DS/ES/FS/GS are null, as 64-bit code needs nothing else: PVM hosts
    // run the kernel natively only with null or user data segments there.
    let null = kvm_segment {
        selector: 0,
        present: 0,
        unusable: 1,
        ..data
    };
    sregs.cs = code;
    sregs.ds = null;
    sregs.es = null;
    sregs.fs = null;
    sregs.gs = null;
    sregs.ss = data;
    sregs.gdt.base = boot.gdt.0;
    sregs.gdt.limit = boot.gdt.1;
    sregs.cr3 = boot.pml4;
    sregs.cr4 |= CR4_PAE | CR4_OSFXSR | CR4_OSXMMEXCPT;
    if xcr0 != 0 {
        sregs.cr4 |= CR4_OSXSAVE;
    }
    // MP and AM as well: the values PVM hosts run supervisor code with.
    sregs.cr0 = CR0_PE | CR0_MP | CR0_ET | CR0_NE | CR0_WP | CR0_AM | CR0_PG;
    sregs.efer = EFER_SCE | EFER_LME | EFER_LMA | EFER_NXE;
    vcpu.set_sregs(&sregs).map_err(kvm_err("KVM_SET_SREGS"))?;
    if xcr0 != 0 {
        let mut xcrs = kvm_bindings::kvm_xcrs {
            nr_xcrs: 1,
            ..Default::default()
        };
        xcrs.xcrs[0].xcr = 0;
        xcrs.xcrs[0].value = xcr0;
        vcpu.set_xcrs(&xcrs).map_err(kvm_err("KVM_SET_XCRS"))?;
    }
    tracing::debug!(
        xcr0 = format_args!("{xcr0:#x}"),
        cr4 = format_args!("{:#x}", sregs.cr4),
        "FPU state enabled"
    );

    let fpu = kvm_fpu {
        fcw: 0x37f,
        mxcsr: 0x1f80,
        ..Default::default()
    };
    vcpu.set_fpu(&fpu).map_err(kvm_err("KVM_SET_FPU"))?;

    let msrs = Msrs::from_entries(&[
        kvm_msr_entry {
            index: MSR_IA32_MISC_ENABLE,
            data: 1, // fast strings
            ..Default::default()
        },
        kvm_msr_entry {
            index: MSR_MTRR_DEF_TYPE,
            data: MTRR_ENABLE_WB,
            ..Default::default()
        },
    ])
    .map_err(|e| VmmError::Boot(format!("MSR list: {e:?}")))?;
    let n = vcpu.set_msrs(&msrs).map_err(kvm_err("KVM_SET_MSRS"))?;
    tracing::debug!(set = n, "MSRs set");

    let mut regs = vcpu.get_regs().map_err(kvm_err("KVM_GET_REGS"))?;
    regs.rflags = 2;
    regs.rip = boot.entry;
    regs.rsp = boot.stack;
    regs.rdi = boot.boot_info;
    regs.rsi = u64::from(id);
    debug_assert!(boot.stack <= layout::DIRECT_MAP + layout::KERNEL_START);
    vcpu.set_regs(&regs).map_err(kvm_err("KVM_SET_REGS"))
}

/// What kind of KVM this is, for the log: PVM, or hardware virtualisation
/// by the CPU's vendor extension.
pub fn host_kind(pvm: bool) -> &'static str {
    if pvm {
        return "PVM (shadow paging, no VT-x/SVM)";
    }
    let vmx = core::arch::x86_64::__cpuid(1).ecx & (1 << 5) != 0;
    let svm = core::arch::x86_64::__cpuid(0x8000_0001).ecx & (1 << 2) != 0;
    match (vmx, svm) {
        (true, _) => "Intel VT-x",
        (_, true) => "AMD SVM",
        _ => "hardware virtualisation (neither VT-x nor SVM visible)",
    }
}

/// Whether the host is PVM (shadow-paging virtualisation; see docs/pvm.md):
/// its signature MSR reads back "PVM".
pub fn is_pvm_host(vcpu: &VcpuFd) -> bool {
    let Ok(mut msrs) = Msrs::from_entries(&[kvm_msr_entry {
        index: astraea_abi::pvm::MSR_SIGNATURE,
        ..Default::default()
    }]) else {
        return false;
    };
    matches!(vcpu.get_msrs(&mut msrs), Ok(1))
        && msrs.as_slice()[0].data == astraea_abi::pvm::SIGNATURE
}

/// On a PVM host: registers the boot layout's virtual-interrupt-flag page, so
/// that the guest's supervisor code runs natively from its first instruction
/// instead of instruction by instruction in the host's emulator (about 1000x
/// faster; see docs/pvm.md). Must follow the last `KVM_SET_SREGS`.
pub fn enter_pvm_native(vcpu: &VcpuFd) -> Result<(), VmmError> {
    let msrs = Msrs::from_entries(&[kvm_msr_entry {
        index: astraea_abi::pvm::MSR_VIF,
        data: layout::PVM_VIF | astraea_abi::pvm::VIF_EXPLICIT_MODE,
        ..Default::default()
    }])
    .map_err(|e| VmmError::Boot(format!("MSR list: {e:?}")))?;
    match vcpu.set_msrs(&msrs).map_err(kvm_err("KVM_SET_MSRS"))? {
        1 => Ok(()),
        _ => Err(VmmError::Boot(
            "the PVM host refused the virtual-interrupt-flag page; set ASTRAEA_PVM_NATIVE=0 to run emulated".into(),
        )),
    }
}

/// Sets the vCPU's time-stamp counter (`IA32_TSC`): KVM keeps it going
/// from there at the host's rate.
pub fn set_tsc(vcpu: &VcpuFd, value: u64) -> Result<(), VmmError> {
    const IA32_TSC: u32 = 0x10;
    let msrs = Msrs::from_entries(&[kvm_msr_entry {
        index: IA32_TSC,
        data: value,
        ..Default::default()
    }])
    .map_err(|e| VmmError::Boot(format!("MSR list: {e:?}")))?;
    match vcpu.set_msrs(&msrs).map_err(kvm_err("KVM_SET_MSRS"))? {
        1 => Ok(()),
        _ => Err(VmmError::Boot("KVM refused to set the TSC".into())),
    }
}

/// A readable dump of the vCPU's state, for crash reports.
pub fn dump(vcpu: &VcpuFd) -> String {
    let mut s = String::new();
    match vcpu.get_regs() {
        Ok(r) => {
            s += &format!(
                "  rip {:016x}  rsp {:016x}  rbp {:016x}  rflags {:08x}\n  \
                 rax {:016x}  rbx {:016x}  rcx {:016x}  rdx {:016x}\n  \
                 rsi {:016x}  rdi {:016x}  r8  {:016x}  r9  {:016x}\n  \
                 r10 {:016x}  r11 {:016x}  r12 {:016x}  r13 {:016x}\n  \
                 r14 {:016x}  r15 {:016x}\n",
                r.rip,
                r.rsp,
                r.rbp,
                r.rflags,
                r.rax,
                r.rbx,
                r.rcx,
                r.rdx,
                r.rsi,
                r.rdi,
                r.r8,
                r.r9,
                r.r10,
                r.r11,
                r.r12,
                r.r13,
                r.r14,
                r.r15
            );
        }
        Err(e) => s += &format!("  (registers unavailable: {e})\n"),
    }
    match vcpu.get_sregs() {
        Ok(r) => {
            s += &format!(
                "  cr0 {:016x}  cr2 {:016x}  cr3 {:016x}  cr4 {:016x}  efer {:x}\n  \
                 cs {:04x} (dpl {})  ss {:04x}  gdt {:x}/{:x}  idt {:x}/{:x}",
                r.cr0,
                r.cr2,
                r.cr3,
                r.cr4,
                r.efer,
                r.cs.selector,
                r.cs.dpl,
                r.ss.selector,
                r.gdt.base,
                r.gdt.limit,
                r.idt.base,
                r.idt.limit
            );
        }
        Err(e) => s += &format!("  (system registers unavailable: {e})"),
    }
    s
}
