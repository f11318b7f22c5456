//! Memory: physical frames (a page bitmap), the kernel heap (power-of-two
//! free lists on whole pages), and x86-64 page tables. As in Libra, the
//! small-object lists sit on top of the page-granular bitmap.
//!
//! `frame`, `chunk` and `paging` are pure and unit-tested on the host;
//! `kernel` wires them to the machine.

pub mod chunk;
pub mod frame;
pub mod paging;
#[cfg(test)]
mod testutil;

#[cfg(target_os = "none")]
mod kernel;
#[cfg(target_os = "none")]
pub use kernel::*;
#[cfg(target_os = "none")]
pub mod user;
#[cfg(target_os = "none")]
pub mod vma;
