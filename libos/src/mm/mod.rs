//! Memory: physical frames (a page bitmap), the kernel heap (power-of-two
//! free lists on whole pages), and x86-64 page tables. As in Libra, the
//! small-object lists sit on top of the page-granular bitmap.
//!
//! `frame`, `chunk` and `paging` are pure and unit-tested on the host;
//! `kernel` wires them to the machine.

pub mod chunk;

/// Where the kernel sees guest-physical address 0 (see `astraea_abi::layout`).
pub const DIRECT_MAP: u64 = astraea_abi::layout::DIRECT_MAP;

/// The kernel's address of guest-physical `pa`.
pub const fn phys_to_virt(pa: u64) -> u64 {
    pa + DIRECT_MAP
}

/// The guest-physical address behind kernel address `va` (kernel memory
/// is all in the direct map: image, heap, stacks, page tables).
pub fn virt_to_phys(va: u64) -> u64 {
    debug_assert!(va >= DIRECT_MAP, "{va:#x} is not a kernel address");
    va - DIRECT_MAP
}
pub mod frame;
pub mod paging;
#[cfg(test)]
mod testutil;

#[cfg(target_os = "none")]
mod kernel;
#[cfg(target_os = "none")]
pub use kernel::*;
#[cfg(target_os = "none")]
pub mod shared;
#[cfg(target_os = "none")]
pub mod user;
#[cfg(target_os = "none")]
pub mod vma;
