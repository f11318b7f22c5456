//! Who the process is: user and group ids (the launching user's), the
//! process tree around it (it is alone: pid 1, its own group and session,
//! no parent in the partition), its name, file-creation mask and resource
//! usage.

use crate::errno::Errno;
use crate::mm::user;
use crate::vfs::{identity, pid};

const PR_SET_NAME: u64 = 15;
const PR_GET_NAME: u64 = 16;

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

/// `prctl(option, …)`: the process name; other options are not offered.
pub fn prctl(a: &[u64; 6]) -> Result<u64, Errno> {
    match a[0] {
        PR_SET_NAME => {
            let mut name = alloc::vec::Vec::new();
            for i in 0..16 {
                let b = user::slice(a[1] + i, 1)?[0];
                if b == 0 {
                    break;
                }
                name.push(b);
            }
            identity::set_name(&alloc::string::String::from_utf8_lossy(&name));
            Ok(0)
        }
        PR_GET_NAME => {
            let mut out = [0u8; 16];
            let name = identity::name();
            out[..name.len()].copy_from_slice(name.as_bytes());
            user::copy_in(a[1], &out)?;
            Ok(0)
        }
        _ => Err(Errno::EINVAL),
    }
}

/// CPU time used so far: the partition has one program, so its lifetime.
fn cpu_ns() -> u64 {
    crate::time::monotonic_ns()
}

/// `getrusage(who, usage)`: `RUSAGE_SELF` and `RUSAGE_THREAD` report the
/// time used and the memory in use; children never existed.
pub fn getrusage(a: &[u64; 6]) -> Result<u64, Errno> {
    const RUSAGE_SELF: i32 = 0;
    const RUSAGE_CHILDREN: i32 = -1;
    const RUSAGE_THREAD: i32 = 1;
    let mut r = [0u8; 144];
    match a[0] as i32 {
        RUSAGE_SELF | RUSAGE_THREAD => {
            let ns = cpu_ns();
            r[0..8].copy_from_slice(&(ns / 1_000_000_000).to_le_bytes());
            r[8..16].copy_from_slice(&((ns % 1_000_000_000) / 1000).to_le_bytes());
            let m = crate::mm::stats();
            let used_kb = (m.total_pages - m.free_pages) as u64 * 4;
            r[32..40].copy_from_slice(&used_kb.to_le_bytes()); // ru_maxrss
            let s = crate::sched::stats();
            r[128..136].copy_from_slice(&(s.switches - s.preemptions).to_le_bytes()); // ru_nvcsw
            r[136..144].copy_from_slice(&s.preemptions.to_le_bytes()); // ru_nivcsw
        }
        RUSAGE_CHILDREN => {}
        _ => return Err(Errno::EINVAL),
    }
    user::copy_in(a[1], &r)?;
    Ok(0)
}

/// `times(buf)`: user time in clock ticks; returns ticks since boot.
pub fn times(a: &[u64; 6]) -> Result<u64, Errno> {
    let ticks = cpu_ns() / (1_000_000_000 / crate::vfs::proc::USER_HZ);
    if a[0] != 0 {
        let mut t = [0u8; 32];
        t[..8].copy_from_slice(&ticks.to_le_bytes());
        user::copy_in(a[0], &t)?;
    }
    Ok(ticks)
}
