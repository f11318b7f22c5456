//! The Astraea library OS: a `no_std` x86-64 kernel that runs in ring 0 of a
//! KVM partition and will host one unmodified JVM in ring 3.
//!
//! The pure parts (memory allocators, page tables) build and are unit-tested
//! on the host; everything that touches the CPU is compiled only for the
//! kernel target (`target_os = "none"`).
#![cfg_attr(not(test), no_std)]

extern crate alloc;

pub mod errno;
pub mod linux;
pub mod mm;
pub mod net;
pub mod vfs;

#[cfg(target_os = "none")]
pub mod arch;
#[cfg(target_os = "none")]
pub mod boot;
#[cfg(target_os = "none")]
pub mod cache;
pub mod cache_image;
#[cfg(target_os = "none")]
pub mod clock;
#[cfg(target_os = "none")]
pub mod console;
pub mod drivers;
#[cfg(target_os = "none")]
pub mod fd;
#[cfg(target_os = "none")]
pub mod p9;
#[cfg(target_os = "none")]
pub mod process;
#[cfg(target_os = "none")]
pub mod profile;
#[cfg(target_os = "none")]
pub mod sched;
#[cfg(target_os = "none")]
pub mod signal;
#[cfg(target_os = "none")]
pub mod snapshot;
#[cfg(target_os = "none")]
pub mod sync;
#[cfg(target_os = "none")]
pub mod syscall;
#[cfg(target_os = "none")]
pub mod time;
#[cfg(target_os = "none")]
pub mod timers;

#[cfg(target_os = "none")]
pub use boot::{BootConfig, exit};

/// The kernel's version, printed in the banner.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
