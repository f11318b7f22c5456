//! Scheduling attributes as a program sets and reads them back:
//! `sched_setscheduler(2)`, `sched_getscheduler`, `sched_setparam`,
//! `sched_getparam`, `sched_get_priority_max`/`min`,
//! `sched_rr_get_interval`, `sched_setattr`, `sched_getattr`,
//! `getpriority`/`setpriority` and `ioprio_get`/`ioprio_set`, per thread,
//! with Linux's checks and permissions for a program without
//! capabilities (`tests/progs/scheddiff.c`). The partition's scheduler
//! does not act on them: its threads share its vCPU round-robin, as a
//! host program's threads share their CPUs whatever they ask for, only
//! less fairly.

use alloc::collections::BTreeMap;

use crate::errno::Errno;
use crate::mm::user;
use crate::sync::IrqLock;

const SCHED_NORMAL: u32 = 0;
const SCHED_FIFO: u32 = 1;
const SCHED_RR: u32 = 2;
const SCHED_BATCH: u32 = 3;
const SCHED_IDLE: u32 = 5;
const SCHED_DEADLINE: u32 = 6;
/// Linux 6.12's extensible scheduler class: a policy its priority calls
/// know, which cannot be chosen without it loaded.
const SCHED_EXT: u32 = 7;
const SCHED_RESET_ON_FORK: u32 = 0x4000_0000;
/// `sched_attr.sched_flags`: `RESET_ON_FORK`, `RECLAIM`, `DL_OVERRUN`,
/// `KEEP_POLICY`, `KEEP_PARAMS`, `UTIL_CLAMP_MIN`/`MAX`; and `SUGOV`.
const FLAG_RESET_ON_FORK: u64 = 0x01;
const FLAG_KEEP_POLICY: u64 = 0x08;
const FLAG_KEEP_PARAMS: u64 = 0x10;
const FLAG_UTIL_CLAMP: u64 = 0x60;
const FLAGS_KNOWN: u64 = 0x7f | 0x1000_0000;
/// `struct sched_attr`: its first version's size and Linux's.
const ATTR_VER0: u64 = 48;
const ATTR_SIZE: u64 = 56;
const ATTR_VER1: u64 = 56;
/// `RLIMIT_NICE`, `RLIMIT_RTPRIO`.
const RLIMIT_NICE: usize = 13;
const RLIMIT_RTPRIO: usize = 14;
/// `IOPRIO_CLASS_*` and `IOPRIO_WHO_PROCESS`.
const IOPRIO_CLASS_NONE: u32 = 0;
const IOPRIO_CLASS_RT: u32 = 1;
const IOPRIO_CLASS_BE: u32 = 2;
const IOPRIO_CLASS_IDLE: u32 = 3;
const IOPRIO_WHO_PROCESS: u64 = 1;

/// One thread's attributes.
#[derive(Clone, Copy, Default)]
struct Attrs {
    policy: u32,
    rt_priority: u32,
    nice: i32,
    reset_on_fork: bool,
    /// `ioprio_set`'s value; `None`: never set (Linux: no I/O context).
    ioprio: Option<u32>,
}

/// Attributes of the threads that changed theirs, by thread id.
static ATTRS: IrqLock<BTreeMap<u64, Attrs>> = IrqLock::new(BTreeMap::new());

/// The thread `pid` names (0: the caller), as Linux's `find_task_by_vpid`.
fn target(pid: i32) -> Result<u64, Errno> {
    if pid == 0 {
        return Ok(crate::sched::current().id());
    }
    let tid = u64::try_from(pid).map_err(|_| Errno::ESRCH)?;
    if crate::process::alive(tid) {
        Ok(tid)
    } else {
        Err(Errno::ESRCH)
    }
}

fn attrs(tid: u64) -> Attrs {
    ATTRS.lock().get(&tid).copied().unwrap_or_default()
}

fn store(tid: u64, a: Attrs) {
    ATTRS.lock().insert(tid, a);
}

/// A new thread `child` takes `parent`'s attributes, or the defaults for
/// what `reset_on_fork` resets (Linux's `sched_fork`).
pub fn inherit(parent: u64, child: u64) {
    let mut a = attrs(parent);
    if a.reset_on_fork {
        if matches!(a.policy, SCHED_FIFO | SCHED_RR | SCHED_DEADLINE) {
            a.policy = SCHED_NORMAL;
            a.rt_priority = 0;
        }
        a.nice = a.nice.max(0);
        a.reset_on_fork = false;
    }
    a.ioprio = None;
    store(child, a);
}

/// Forgets an exited thread's attributes.
pub fn exit(tid: u64) {
    ATTRS.lock().remove(&tid);
}

fn rt(policy: u32) -> bool {
    matches!(policy, SCHED_FIFO | SCHED_RR)
}

fn fair(policy: u32) -> bool {
    matches!(policy, SCHED_NORMAL | SCHED_BATCH)
}

/// Whether `RLIMIT_NICE` lets the thread's nice value go to `nice`.
fn nice_allowed(nice: i32) -> bool {
    (20 - i64::from(nice)) as u64 <= crate::process::rlimit(RLIMIT_NICE).0
}

/// A change of `tid`'s attributes to `new` (its policy `policy`, or the
/// current one for `None`), checked as Linux's `__sched_setscheduler`.
fn change(
    tid: u64,
    policy: Option<u32>,
    flags: u64,
    priority: u32,
    nice: i32,
) -> Result<(), Errno> {
    let old = attrs(tid);
    let (policy, reset) = match policy {
        None => (old.policy, old.reset_on_fork),
        Some(p) => {
            if !matches!(
                p,
                SCHED_NORMAL | SCHED_FIFO | SCHED_RR | SCHED_BATCH | SCHED_IDLE | SCHED_DEADLINE
            ) {
                return Err(Errno::EINVAL);
            }
            (p, flags & FLAG_RESET_ON_FORK != 0)
        }
    };
    if flags & !FLAGS_KNOWN != 0 || priority > 99 {
        return Err(Errno::EINVAL);
    }
    // SCHED_DEADLINE's parameters (all zero here) are never valid.
    if policy == SCHED_DEADLINE || rt(policy) != (priority != 0) {
        return Err(Errno::EINVAL);
    }
    // `user_check_sched_setscheduler`, without CAP_SYS_NICE.
    let rtprio = crate::process::rlimit(RLIMIT_RTPRIO).0;
    let denied = (fair(policy) && nice < old.nice && !nice_allowed(nice))
        || (rt(policy) && policy != old.policy && rtprio == 0)
        || (rt(policy) && priority > old.rt_priority && u64::from(priority) > rtprio)
        || (old.policy == SCHED_IDLE && policy != SCHED_IDLE && !nice_allowed(old.nice))
        || (old.reset_on_fork && !reset);
    if denied {
        return Err(Errno::EPERM);
    }
    let mut new = old;
    new.policy = policy;
    new.rt_priority = priority;
    new.reset_on_fork = reset;
    if fair(policy) {
        new.nice = nice;
    }
    store(tid, new);
    Ok(())
}

/// `sched_setscheduler(pid, policy, param)`.
pub fn sched_setscheduler(a: &[u64; 6]) -> Result<u64, Errno> {
    let policy = a[1] as i32;
    if policy < 0 {
        return Err(Errno::EINVAL);
    }
    set_param(a[0] as i32, Some(policy as u32), a[2])
}

/// `sched_setparam(pid, param)`: the priority, the policy kept.
pub fn sched_setparam(a: &[u64; 6]) -> Result<u64, Errno> {
    set_param(a[0] as i32, None, a[1])
}

fn set_param(pid: i32, policy: Option<u32>, param: u64) -> Result<u64, Errno> {
    if param == 0 || pid < 0 {
        return Err(Errno::EINVAL);
    }
    let priority = u32::from_le_bytes(user::read_array::<4>(param)?);
    let tid = target(pid)?;
    // The legacy flag in the policy number.
    let (policy, flags) = match policy {
        Some(p) if p & SCHED_RESET_ON_FORK != 0 => {
            (Some(p & !SCHED_RESET_ON_FORK), FLAG_RESET_ON_FORK)
        }
        p => (p, 0),
    };
    change(tid, policy, flags, priority, attrs(tid).nice).map(|()| 0)
}

/// `sched_getscheduler(pid)`: the policy, with `SCHED_RESET_ON_FORK`.
pub fn sched_getscheduler(a: &[u64; 6]) -> Result<u64, Errno> {
    let pid = a[0] as i32;
    if pid < 0 {
        return Err(Errno::EINVAL);
    }
    let at = attrs(target(pid)?);
    Ok(u64::from(
        at.policy
            | if at.reset_on_fork {
                SCHED_RESET_ON_FORK
            } else {
                0
            },
    ))
}

/// `sched_getparam(pid, param)`: the real-time priority (0 otherwise).
pub fn sched_getparam(a: &[u64; 6]) -> Result<u64, Errno> {
    let pid = a[0] as i32;
    if a[1] == 0 || pid < 0 {
        return Err(Errno::EINVAL);
    }
    let at = attrs(target(pid)?);
    let p = if rt(at.policy) { at.rt_priority } else { 0 };
    user::copy_in(a[1], &p.to_le_bytes())?;
    Ok(0)
}

fn priority_range(policy: u64) -> Result<(u64, u64), Errno> {
    match policy as i32 as u32 {
        SCHED_FIFO | SCHED_RR => Ok((1, 99)),
        SCHED_NORMAL | SCHED_BATCH | SCHED_IDLE | SCHED_DEADLINE | SCHED_EXT => Ok((0, 0)),
        _ => Err(Errno::EINVAL),
    }
}

/// `sched_get_priority_max(policy)`.
pub fn sched_get_priority_max(a: &[u64; 6]) -> Result<u64, Errno> {
    priority_range(a[0]).map(|r| r.1)
}

/// `sched_get_priority_min(policy)`.
pub fn sched_get_priority_min(a: &[u64; 6]) -> Result<u64, Errno> {
    priority_range(a[0]).map(|r| r.0)
}

/// `sched_rr_get_interval(pid, interval)`: the partition's time slice
/// (its scheduler's, 10 ms) for a round-robin thread, 0 for others as
/// Linux answers for `SCHED_FIFO`; fair threads get the slice too.
pub fn sched_rr_get_interval(a: &[u64; 6]) -> Result<u64, Errno> {
    let pid = a[0] as i32;
    if pid < 0 {
        return Err(Errno::EINVAL);
    }
    let at = attrs(target(pid)?);
    let ns: u64 = if at.policy == SCHED_FIFO {
        0
    } else {
        10_000_000
    };
    let mut ts = [0u8; 16];
    ts[..8].copy_from_slice(&(ns / 1_000_000_000).to_le_bytes());
    ts[8..].copy_from_slice(&(ns % 1_000_000_000).to_le_bytes());
    user::copy_in(a[1], &ts)?;
    Ok(0)
}

/// `sched_setattr(pid, attr, flags)`: a `struct sched_attr` of any size
/// from 48 bytes (0: 48) to a page, whose bytes past Linux's are zero.
pub fn sched_setattr(a: &[u64; 6]) -> Result<u64, Errno> {
    let (pid, uattr) = (a[0] as i32, a[1]);
    if uattr == 0 || pid < 0 || a[2] as u32 != 0 {
        return Err(Errno::EINVAL);
    }
    let mut size = u64::from(u32::from_le_bytes(user::read_array::<4>(uattr)?));
    if size == 0 {
        size = ATTR_VER0;
    }
    let too_big = |uattr: u64| {
        let _ = user::copy_in(uattr, &(ATTR_SIZE as u32).to_le_bytes());
        Err(Errno::E2BIG)
    };
    if !(ATTR_VER0..=4096).contains(&size) {
        return too_big(uattr);
    }
    let bytes = user::read_vec(uattr, size)?;
    if bytes.iter().skip(ATTR_SIZE as usize).any(|&b| b != 0) {
        return too_big(uattr);
    }
    let word =
        |at: usize| u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    let policy = word(4);
    let flags = u64::from(word(8)) | u64::from(word(12)) << 32;
    let nice = (word(16) as i32).clamp(-20, 19);
    let priority = word(20);
    if flags & FLAG_UTIL_CLAMP != 0 && size < ATTR_VER1 {
        return Err(Errno::EINVAL);
    }
    if (policy as i32) < 0 {
        return Err(Errno::EINVAL);
    }
    let tid = target(pid)?;
    let old = attrs(tid);
    let policy = (flags & FLAG_KEEP_POLICY == 0).then_some(policy);
    let (priority, nice) = if flags & FLAG_KEEP_PARAMS != 0 {
        (old.rt_priority, old.nice)
    } else {
        (priority, nice)
    };
    change(tid, policy, flags, priority, nice).map(|()| 0)
}

/// `sched_getattr(pid, attr, size, flags)`: the attributes in the first
/// `min(size, 56)` bytes, that size in the first field.
pub fn sched_getattr(a: &[u64; 6]) -> Result<u64, Errno> {
    let (pid, uattr, usize_) = (a[0] as i32, a[1], a[2] as u32 as u64);
    if uattr == 0 || pid < 0 || !(ATTR_VER0..=4096).contains(&usize_) || a[3] as u32 != 0 {
        return Err(Errno::EINVAL);
    }
    let at = attrs(target(pid)?);
    let size = usize_.min(ATTR_SIZE);
    let mut b = [0u8; ATTR_SIZE as usize];
    b[..4].copy_from_slice(&(size as u32).to_le_bytes());
    b[4..8].copy_from_slice(&at.policy.to_le_bytes());
    let flags = if at.reset_on_fork {
        FLAG_RESET_ON_FORK
    } else {
        0
    };
    b[8..16].copy_from_slice(&flags.to_le_bytes());
    if rt(at.policy) {
        b[20..24].copy_from_slice(&at.rt_priority.to_le_bytes());
    } else {
        b[16..20].copy_from_slice(&at.nice.to_le_bytes());
    }
    // No utilization clamp: the whole range.
    b[52..56].copy_from_slice(&1024u32.to_le_bytes());
    user::copy_in(uattr, &b[..size as usize])?;
    Ok(0)
}

/// `getpriority(which, who)`: `20 - nice` of a thread (`PRIO_PROCESS`);
/// the program is its only process, group and user's.
pub fn getpriority(a: &[u64; 6]) -> Result<u64, Errno> {
    let which = a[0] as i32;
    if !(0..=2).contains(&which) {
        return Err(Errno::EINVAL);
    }
    let tid = who(which, a[1] as i32)?;
    Ok((20 - attrs(tid).nice) as u64)
}

/// The thread `who` names for `which` (`PRIO_PROCESS`: a thread; a group
/// or user: this process, whose main thread answers).
fn who(which: i32, who: i32) -> Result<u64, Errno> {
    match which {
        0 => target(who),
        _ if who == 0 || who as u64 == crate::process::pid() => Ok(crate::process::pid()),
        // A user: ours (the program runs as the partition's identity).
        2 if who as u32 == crate::vfs::identity::ids().0 => Ok(crate::process::pid()),
        _ => Err(Errno::ESRCH),
    }
}

/// `setpriority(which, who, nice)`: the nice value, clamped to -20..19;
/// lowering it takes `RLIMIT_NICE`'s room (`EACCES`).
pub fn setpriority(a: &[u64; 6]) -> Result<u64, Errno> {
    let which = a[0] as i32;
    if !(0..=2).contains(&which) {
        return Err(Errno::EINVAL);
    }
    let nice = (a[2] as i32).clamp(-20, 19);
    let tid = who(which, a[1] as i32)?;
    let mut at = attrs(tid);
    if nice < at.nice && !nice_allowed(nice) {
        return Err(Errno::EACCES);
    }
    at.nice = nice;
    store(tid, at);
    Ok(0)
}

/// `ioprio_set(which, who, ioprio)`: a class and level, checked as
/// Linux's `ioprio_check_cap` (the real-time class needs a capability).
pub fn ioprio_set(a: &[u64; 6]) -> Result<u64, Errno> {
    let prio = a[2] as u32;
    // The bits between level and class are hints, taken as they are.
    let (class, level) = ((prio >> 13) & 7, prio & 7);
    match class {
        IOPRIO_CLASS_RT => return Err(Errno::EPERM),
        IOPRIO_CLASS_BE | IOPRIO_CLASS_IDLE => {}
        IOPRIO_CLASS_NONE if level != 0 => return Err(Errno::EINVAL),
        IOPRIO_CLASS_NONE => {}
        _ => return Err(Errno::EINVAL),
    }
    if a[0] != IOPRIO_WHO_PROCESS {
        return Err(if (2..=3).contains(&a[0]) {
            Errno::ESRCH
        } else {
            Errno::EINVAL
        });
    }
    let tid = target(a[1] as i32)?;
    let mut at = attrs(tid);
    at.ioprio = Some(prio);
    store(tid, at);
    Ok(0)
}

/// `ioprio_get(which, who)`: what was set, as it was set (Linux 6.18 no
/// longer derives a level from the nice value for the class "none"); 0 for
/// a thread that set none.
pub fn ioprio_get(a: &[u64; 6]) -> Result<u64, Errno> {
    if a[0] != IOPRIO_WHO_PROCESS {
        return Err(if (2..=3).contains(&a[0]) {
            Errno::ESRCH
        } else {
            Errno::EINVAL
        });
    }
    let at = attrs(target(a[1] as i32)?);
    Ok(u64::from(at.ioprio.unwrap_or(0)))
}
