//! Who the process is: user and group ids (the launching user's), the
//! process tree around it (it is alone: pid 1, its own group and session,
//! no parent in the partition) and its file-creation mask.

use crate::errno::Errno;
use crate::mm::user;
use crate::vfs::{identity, pid};

/// `getuid()` and `geteuid()`.
pub fn getuid(_: &[u64; 6]) -> Result<u64, Errno> {
    Ok(u64::from(identity::ids().0))
}

/// `getgid()` and `getegid()`.
pub fn getgid(_: &[u64; 6]) -> Result<u64, Errno> {
    Ok(u64::from(identity::ids().1))
}

fn put_three(addrs: [u64; 3], v: u32) -> Result<u64, Errno> {
    for a in addrs {
        user::copy_in(a, &v.to_le_bytes())?;
    }
    Ok(0)
}

/// `getresuid(ruid, euid, suid)`.
pub fn getresuid(a: &[u64; 6]) -> Result<u64, Errno> {
    put_three([a[0], a[1], a[2]], identity::ids().0)
}

/// `getresgid(rgid, egid, sgid)`.
pub fn getresgid(a: &[u64; 6]) -> Result<u64, Errno> {
    put_three([a[0], a[1], a[2]], identity::ids().1)
}

/// `getgroups(size, list)`: no supplementary groups.
pub fn getgroups(_: &[u64; 6]) -> Result<u64, Errno> {
    Ok(0)
}

/// `getppid()`: the parent is outside the partition.
pub fn getppid(_: &[u64; 6]) -> Result<u64, Errno> {
    Ok(0)
}

/// `getpgrp()`, and `getpgid(pid)`/`getsid(pid)` for this process: it
/// leads its own group and session.
pub fn getpgid(a: &[u64; 6]) -> Result<u64, Errno> {
    if a[0] != 0 && a[0] != pid() {
        return Err(Errno(3)); // ESRCH
    }
    Ok(pid())
}

/// `getpgrp()`.
pub fn getpgrp(_: &[u64; 6]) -> Result<u64, Errno> {
    Ok(pid())
}

/// `setsid()`: the process already leads its session.
pub fn setsid(_: &[u64; 6]) -> Result<u64, Errno> {
    Err(Errno::EPERM)
}

/// `umask(mask)`: returns the old mask.
pub fn umask(a: &[u64; 6]) -> Result<u64, Errno> {
    Ok(u64::from(identity::set_umask(a[0] as u32)))
}
