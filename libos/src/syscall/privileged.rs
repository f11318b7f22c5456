//! The system calls only a privileged process may make — mounting,
//! `chroot`, `pivot_root`, setting the clock, the host and domain names,
//! rebooting, swap, process accounting, `vhangup` — answer as Linux
//! answers a process without those capabilities, which a partition's
//! program is: `EPERM`, after the checks Linux makes first
//! (`tests/progs/privdiff.c`). Before, they were `ENOSYS`, which programs
//! take for "not built in" rather than "not allowed". Modules, `kexec` and
//! port I/O stay `ENOSYS`, as on a kernel built without them (the host's
//! here).

use crate::errno::Errno;
use crate::mm::user;

/// The target of `chroot`, `mount` and `umount2`: its lookup's error, or
/// whether it is a directory.
fn lookup(addr: u64, follow: bool) -> Result<bool, Errno> {
    let p = super::open::abs(&super::open::user_path(addr)?)?;
    let st = super::stat::path_stat_at(&p, follow)?;
    Ok(st.mode & 0o170000 == 0o040000)
}

/// `EPERM` at once: `sethostname`, `setdomainname`, `reboot`, `swapon`,
/// `swapoff`, `acct`, `vhangup`, `pivot_root`.
pub fn not_permitted(_: &[u64; 6]) -> Result<u64, Errno> {
    Err(Errno::EPERM)
}

/// A `struct timeval` at `tv` (0: none) read and checked as
/// `settimeofday` does.
fn timeval_checked(tv: u64) -> Result<(), Errno> {
    if tv != 0 {
        let b = user::read_array::<16>(tv)?;
        let usec = i64::from_le_bytes(b[8..16].try_into().map_err(|_| Errno::EFAULT)?);
        let sec = i64::from_le_bytes(b[..8].try_into().map_err(|_| Errno::EFAULT)?);
        // Microseconds below a second, a time not before 1970.
        if !(0..1_000_000).contains(&usec) || sec < 0 {
            return Err(Errno::EINVAL);
        }
    }
    Ok(())
}

/// `settimeofday(tv, tz)`: the arguments, then `CAP_SYS_TIME`.
pub fn settimeofday(a: &[u64; 6]) -> Result<u64, Errno> {
    timeval_checked(a[0])?;
    if a[1] != 0 {
        user::read_array::<8>(a[1])?;
    }
    Err(Errno::EPERM)
}

/// `clock_settime(clock, tp)`: only `CLOCK_REALTIME` could be set (its
/// time, then `CAP_SYS_TIME`); the CPU-time clocks refuse with `EPERM`.
pub fn clock_settime(a: &[u64; 6]) -> Result<u64, Errno> {
    use crate::clock::Clock;
    // Only the wall clock, the CPU-time clocks by id (not the fixed
    // process and thread ones) and dynamic clocks have a way to be set;
    // the CPU-time clocks are checked, then refused.
    let clock = Clock::of(a[0])?;
    let by_id = (a[0] as u32 as i32) < 0;
    if !(clock == Clock::Realtime || by_id) {
        return Err(Errno::EINVAL);
    }
    let b = user::read_array::<16>(a[1])?;
    match clock {
        Clock::Cpu(c) => return c.target().and(Err(Errno::EPERM)),
        Clock::Dynamic => return Err(Errno::EINVAL),
        _ => {}
    }
    let sec = i64::from_le_bytes(b[..8].try_into().map_err(|_| Errno::EFAULT)?);
    let nsec = i64::from_le_bytes(b[8..16].try_into().map_err(|_| Errno::EFAULT)?);
    if sec < 0 || !(0..1_000_000_000).contains(&nsec) {
        return Err(Errno::EINVAL);
    }
    Err(Errno::EPERM)
}

/// `chroot(path)`: the lookup (a directory, `ENOTDIR` otherwise), then
/// `CAP_SYS_CHROOT`.
pub fn chroot(a: &[u64; 6]) -> Result<u64, Errno> {
    if lookup(a[0], true)? {
        Err(Errno::EPERM)
    } else {
        Err(Errno::ENOTDIR)
    }
}

/// `MS_NOUSER`: refused before the capability.
const MS_NOUSER: u64 = 1 << 31;

/// `mount(source, target, type, flags, data)`: the strings, the target's
/// lookup, `MS_NOUSER`, then `CAP_SYS_ADMIN`.
pub fn mount(a: &[u64; 6]) -> Result<u64, Errno> {
    for s in [a[0], a[2]] {
        if s != 0 {
            super::open::user_path(s)?;
        }
    }
    lookup(a[1], true)?;
    if a[3] & MS_NOUSER != 0 {
        return Err(Errno::EINVAL);
    }
    Err(Errno::EPERM)
}

/// `umount2(target, flags)`: the flags (`MNT_FORCE`, `MNT_DETACH`,
/// `MNT_EXPIRE`, `UMOUNT_NOFOLLOW`), the target's lookup, then
/// `CAP_SYS_ADMIN`.
pub fn umount2(a: &[u64; 6]) -> Result<u64, Errno> {
    let flags = a[1] as u32;
    if flags & !0xf != 0 {
        return Err(Errno::EINVAL);
    }
    lookup(a[0], flags & 0x8 == 0)?;
    Err(Errno::EPERM)
}
