//! The Astraea VMM: creates a KVM partition, loads the library OS into it and
//! runs it, relaying its console and returning its exit status.
//!
//! The `astraea` binary is a thin CLI over [`run`].

pub mod boot;
pub mod control;
pub mod deploy;
pub mod devices;
pub mod error;
pub mod host_signals;
mod hostcheck;
pub mod jdk;
pub mod jvm_opts;
pub mod memory;
pub mod mounts;
pub mod ninep;
pub mod partition;
pub mod sampler;
mod serial;
pub mod snapshot;
mod teardown;
mod vcpu;
pub mod warm;
pub mod working_set;

pub use error::VmmError;
pub use partition::{NinePTarget, Outcome, PartitionConfig, SyscallEntry, Timings, run};
