//! What the partition needs from the host's KVM, checked before a VM is
//! made: a host without it gets one message naming everything missing (and
//! exit status 125) instead of a guest that dies on its first instruction.

use kvm_ioctls::{Cap, Kvm};

use crate::error::{VmmError, kvm_err};

/// A CPUID feature bit (in EDX) the library OS uses.
struct Feature {
    leaf: u32,
    bit: u32,
    name: &'static str,
}

/// The guest's CPU features that no path can do without: 64-bit mode and
/// its page tables, SYSCALL, and the SSE state HotSpot uses. (XSAVE is not
/// among them: PVM hosts run it natively without KVM reporting it.)
const FEATURES: &[Feature] = &[
    Feature {
        leaf: 0x8000_0001,
        bit: 29,
        name: "long mode (LM)",
    },
    Feature {
        leaf: 0x8000_0001,
        bit: 20,
        name: "no-execute pages (NX)",
    },
    Feature {
        leaf: 0x8000_0001,
        bit: 11,
        name: "SYSCALL/SYSRET",
    },
    Feature {
        leaf: 1,
        bit: 6,
        name: "PAE",
    },
    Feature {
        leaf: 1,
        bit: 24,
        name: "FXSR",
    },
    Feature {
        leaf: 1,
        bit: 26,
        name: "SSE2",
    },
];

/// The KVM capabilities the VMM uses.
const CAPS: &[(Cap, &str)] = &[
    (Cap::UserMemory, "KVM_CAP_USER_MEMORY"),
    (Cap::Irqchip, "KVM_CAP_IRQCHIP"),
    (Cap::Ioeventfd, "KVM_CAP_IOEVENTFD"),
    (Cap::Irqfd, "KVM_CAP_IRQFD"),
    (Cap::ExtCpuid, "KVM_CAP_EXT_CPUID"),
];

/// What is missing, given KVM's supported CPUID entries as (leaf, index,
/// ecx, edx) and whether each of [`CAPS`] is there.
fn missing(cpuid: &[(u32, u32, u32, u32)], has_cap: impl Fn(usize) -> bool) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = CAPS
        .iter()
        .enumerate()
        .filter(|&(i, _)| !has_cap(i))
        .map(|(_, c)| c.1)
        .collect();
    for f in FEATURES {
        let set = cpuid
            .iter()
            .any(|&(leaf, index, _, edx)| leaf == f.leaf && index == 0 && edx & (1 << f.bit) != 0);
        if !set {
            out.push(f.name);
        }
    }
    out
}

/// Checks `kvm` offers what a partition needs; the error names all that
/// is missing. Returns KVM's supported CPUID, which the vCPU set-up takes.
pub fn check(kvm: &Kvm) -> Result<kvm_bindings::CpuId, VmmError> {
    let cpuid = kvm
        .get_supported_cpuid(kvm_bindings::KVM_MAX_CPUID_ENTRIES)
        .map_err(kvm_err("KVM_GET_SUPPORTED_CPUID"))?;
    let entries: Vec<(u32, u32, u32, u32)> = cpuid
        .as_slice()
        .iter()
        .map(|e| (e.function, e.index, e.ecx, e.edx))
        .collect();
    let lacks = missing(&entries, |i| kvm.check_extension(CAPS[i].0));
    if lacks.is_empty() {
        Ok(cpuid)
    } else {
        Err(VmmError::HostLacks(lacks.join(", ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full() -> Vec<(u32, u32, u32, u32)> {
        vec![
            (1, 0, 0, (1 << 6) | (1 << 24) | (1 << 26)),
            (0x8000_0001, 0, 0, (1 << 29) | (1 << 20) | (1 << 11)),
        ]
    }

    #[test]
    fn a_complete_host_lacks_nothing() {
        assert!(missing(&full(), |_| true).is_empty());
    }

    #[test]
    fn everything_missing_is_named() {
        let mut c = full();
        c[0].3 &= !(1 << 26); // no SSE2
        c[1].3 &= !(1 << 20); // no NX
        let m = missing(&c, |i| CAPS[i].1 != "KVM_CAP_IRQFD");
        assert_eq!(m, ["KVM_CAP_IRQFD", "no-execute pages (NX)", "SSE2"]);
    }

    #[test]
    fn a_bit_in_another_subleaf_does_not_count() {
        let mut c = full();
        c[0].1 = 1;
        assert_eq!(missing(&c, |_| true), ["PAE", "FXSR", "SSE2"]);
    }
}
