//! `setuid(2)` and its family, `setgroups(2)` and `personality(2)`, as
//! Linux answers a process without capabilities whose real, effective,
//! saved and file-system ids are all the launching user's
//! (`tests/progs/privdiff.c`): it may "change" an id only to that value
//! (-1: unchanged where the call allows it), anything else is `EPERM`.

use core::sync::atomic::{AtomicU64, Ordering};

use crate::errno::Errno;
use crate::vfs::identity;

/// The id every id is, of users (`uid`) or groups.
fn own(uid: bool) -> u32 {
    let (u, g) = identity::ids();
    if uid { u } else { g }
}

/// `setuid`/`setgid`: -1 is not an id (`EINVAL`).
fn set_one(id: u64, uid: bool) -> Result<u64, Errno> {
    let id = id as u32;
    if id == u32::MAX {
        return Err(Errno::EINVAL);
    }
    if id == own(uid) {
        Ok(0)
    } else {
        Err(Errno::EPERM)
    }
}

/// `setreuid`/`setresuid` and the group ones: each -1 or the own id.
fn set_many(ids: &[u64], uid: bool) -> Result<u64, Errno> {
    let mine = own(uid);
    if ids
        .iter()
        .map(|&i| i as u32)
        .all(|i| i == u32::MAX || i == mine)
    {
        Ok(0)
    } else {
        Err(Errno::EPERM)
    }
}

/// `setuid(uid)`.
pub fn setuid(a: &[u64; 6]) -> Result<u64, Errno> {
    set_one(a[0], true)
}

/// `setgid(gid)`.
pub fn setgid(a: &[u64; 6]) -> Result<u64, Errno> {
    set_one(a[0], false)
}

/// `setreuid(ruid, euid)`.
pub fn setreuid(a: &[u64; 6]) -> Result<u64, Errno> {
    set_many(&a[..2], true)
}

/// `setregid(rgid, egid)`.
pub fn setregid(a: &[u64; 6]) -> Result<u64, Errno> {
    set_many(&a[..2], false)
}

/// `setresuid(ruid, euid, suid)`.
pub fn setresuid(a: &[u64; 6]) -> Result<u64, Errno> {
    set_many(&a[..3], true)
}

/// `setresgid(rgid, egid, sgid)`.
pub fn setresgid(a: &[u64; 6]) -> Result<u64, Errno> {
    set_many(&a[..3], false)
}

/// `setfsuid(uid)`/`setfsgid(gid)`: the previous id, always; it changes
/// only to an id the process has, which is the one it already has.
pub fn setfsuid(_: &[u64; 6]) -> Result<u64, Errno> {
    Ok(u64::from(own(true)))
}

/// `setfsgid(gid)`.
pub fn setfsgid(_: &[u64; 6]) -> Result<u64, Errno> {
    Ok(u64::from(own(false)))
}

/// `setgroups(size, list)`: `CAP_SETGID` first, whatever the list.
pub fn setgroups(_: &[u64; 6]) -> Result<u64, Errno> {
    Err(Errno::EPERM)
}

/// The execution domain (`PER_LINUX` and flags), kept as set.
static PERSONA: AtomicU64 = AtomicU64::new(0);

/// `personality(persona)`: the previous value; `0xffffffff` only asks.
pub fn personality(a: &[u64; 6]) -> Result<u64, Errno> {
    let new = a[0] as u32;
    let old = if new == u32::MAX {
        PERSONA.load(Ordering::Relaxed)
    } else {
        PERSONA.swap(u64::from(new), Ordering::Relaxed)
    };
    Ok(old)
}
