//! Architecture support. Only x86-64 exists; the rest of the kernel uses the
//! names re-exported here.
pub mod x86_64;
pub use self::x86_64::*;
