//! System calls a partition cannot offer: there is one process per
//! partition, so no `fork` and no `exec` of another program. Each says so
//! once on the console, since a program that depends on them fails in ways
//! that are otherwise hard to trace.

use core::sync::atomic::{AtomicBool, Ordering};

use crate::errno::Errno;

static FORK_SAID: AtomicBool = AtomicBool::new(false);
static VFORK_SAID: AtomicBool = AtomicBool::new(false);
static EXECVE_SAID: AtomicBool = AtomicBool::new(false);
static EXECVEAT_SAID: AtomicBool = AtomicBool::new(false);

fn refuse(said: &AtomicBool, name: &str) -> Result<u64, Errno> {
    if !said.swap(true, Ordering::Relaxed) {
        crate::eprintln!(
            "astraea: {name} is not supported in a partition (one process per partition)"
        );
    }
    Err(Errno::ENOSYS)
}

/// `fork()`.
pub fn fork(_: &[u64; 6]) -> Result<u64, Errno> {
    refuse(&FORK_SAID, "fork")
}

/// `vfork()`.
pub fn vfork(_: &[u64; 6]) -> Result<u64, Errno> {
    refuse(&VFORK_SAID, "vfork")
}

/// `execve(path, argv, envp)`.
pub fn execve(_: &[u64; 6]) -> Result<u64, Errno> {
    refuse(&EXECVE_SAID, "execve")
}

/// `execveat(dirfd, path, argv, envp, flags)`.
pub fn execveat(_: &[u64; 6]) -> Result<u64, Errno> {
    refuse(&EXECVEAT_SAID, "execveat")
}
