//! `prctl(2)`: per-thread names and the process attributes Linux programs
//! read or set. Attributes about privileges, dumps and the parent's death
//! are remembered and reported back (there is no exec, no core dump and
//! no parent in the partition for them to act on); options Linux does not
//! know, and those whose effect cannot be honoured (seccomp filters), are
//! `EINVAL`, as on a kernel built without them.

use alloc::collections::BTreeMap;
use core::sync::atomic::{AtomicU64, Ordering};

use crate::errno::Errno;
use crate::mm::user;
use crate::sync::IrqLock;
use crate::vfs::identity;

const PR_SET_PDEATHSIG: u64 = 1;
const PR_GET_PDEATHSIG: u64 = 2;
const PR_GET_DUMPABLE: u64 = 3;
const PR_SET_DUMPABLE: u64 = 4;
const PR_GET_KEEPCAPS: u64 = 7;
const PR_SET_KEEPCAPS: u64 = 8;
/// `prctl` option: the calling thread's name.
pub const PR_SET_NAME: u64 = 15;
const PR_GET_NAME: u64 = 16;
const PR_GET_SECCOMP: u64 = 21;
const PR_CAPBSET_READ: u64 = 23;
const PR_SET_TIMERSLACK: u64 = 29;
const PR_GET_TIMERSLACK: u64 = 30;
const PR_SET_CHILD_SUBREAPER: u64 = 36;
const PR_GET_CHILD_SUBREAPER: u64 = 37;
const PR_SET_NO_NEW_PRIVS: u64 = 38;
const PR_GET_NO_NEW_PRIVS: u64 = 39;
const PR_SET_THP_DISABLE: u64 = 41;
const PR_GET_THP_DISABLE: u64 = 42;
/// `PR_SET_THP_DISABLE`'s flag (Linux 6.18).
const THP_EXCEPT_ADVISED: u64 = 1 << 1;
/// The highest capability number (`CAP_CHECKPOINT_RESTORE`).
const CAP_LAST_CAP: u64 = 40;
/// Linux's default timer slack, in nanoseconds.
const DEFAULT_SLACK_NS: u64 = 50_000;

/// Names set with `PR_SET_NAME` by threads other than the first, by thread
/// id (ids are never reused). A thread without one reports the process's
/// name, which is what it inherits on Linux unless its creator renamed
/// itself first.
static THREAD_NAMES: IrqLock<BTreeMap<u64, [u8; 16]>> = IrqLock::new(BTreeMap::new());

/// Process attributes that are only reported back.
static PDEATHSIG: AtomicU64 = AtomicU64::new(0);
static DUMPABLE: AtomicU64 = AtomicU64::new(1);
static KEEPCAPS: AtomicU64 = AtomicU64::new(0);
static SUBREAPER: AtomicU64 = AtomicU64::new(0);
static NO_NEW_PRIVS: AtomicU64 = AtomicU64::new(0);
static THP_DISABLE: AtomicU64 = AtomicU64::new(0);
static TIMER_SLACK: AtomicU64 = AtomicU64::new(DEFAULT_SLACK_NS);

/// The calling thread's name, NUL-padded.
fn current_name() -> [u8; 16] {
    name_of(crate::sched::current().id())
}

/// Thread `tid`'s name (`/proc/self/task/<tid>/comm`).
pub fn thread_name(tid: u64) -> alloc::string::String {
    let name = name_of(tid);
    let len = name.iter().position(|&b| b == 0).unwrap_or(16);
    alloc::string::String::from_utf8_lossy(&name[..len]).into_owned()
}

/// Thread `tid`'s name, NUL-padded.
fn name_of(tid: u64) -> [u8; 16] {
    if let Some(n) = THREAD_NAMES.lock().get(&tid) {
        return *n;
    }
    let mut out = [0u8; 16];
    let name = identity::name();
    let n = name.len().min(15);
    out[..n].copy_from_slice(&name.as_bytes()[..n]);
    out
}

fn set_name(addr: u64) -> Result<u64, Errno> {
    // At most 15 bytes are kept, terminated or not.
    let (given, _) = user::read_cstr(addr, 15)?;
    let mut name = [0u8; 16];
    name[..given.len()].copy_from_slice(&given);
    let tid = crate::sched::current().id();
    if tid == crate::process::pid() {
        let len = name.iter().position(|&b| b == 0).unwrap_or(16);
        identity::set_name(&alloc::string::String::from_utf8_lossy(&name[..len]));
    } else {
        THREAD_NAMES.lock().insert(tid, name);
    }
    Ok(0)
}

/// Stores `v` as a C `int` at `addr`.
fn put_int(addr: u64, v: u64) -> Result<u64, Errno> {
    user::copy_in(addr, &(v as u32).to_le_bytes())?;
    Ok(0)
}

/// Sets a flag that takes 0 or 1.
fn set_flag(cell: &AtomicU64, v: u64) -> Result<u64, Errno> {
    if v > 1 {
        return Err(Errno::EINVAL);
    }
    cell.store(v, Ordering::Relaxed);
    Ok(0)
}

/// `prctl(option, arg2, arg3, arg4, arg5)`.
pub fn prctl(a: &[u64; 6]) -> Result<u64, Errno> {
    let option = a[0] as u32 as u64;
    match option {
        PR_SET_NAME => set_name(a[1]),
        PR_GET_NAME => {
            user::copy_in(a[1], &current_name())?;
            Ok(0)
        }
        PR_SET_PDEATHSIG => {
            if a[1] > 64 {
                return Err(Errno::EINVAL);
            }
            PDEATHSIG.store(a[1], Ordering::Relaxed);
            Ok(0)
        }
        PR_GET_PDEATHSIG => put_int(a[1], PDEATHSIG.load(Ordering::Relaxed)),
        PR_GET_DUMPABLE => Ok(DUMPABLE.load(Ordering::Relaxed)),
        PR_SET_DUMPABLE => set_flag(&DUMPABLE, a[1]),
        PR_GET_KEEPCAPS => Ok(KEEPCAPS.load(Ordering::Relaxed)),
        PR_SET_KEEPCAPS => set_flag(&KEEPCAPS, a[1]),
        PR_GET_SECCOMP => Ok(0),
        PR_CAPBSET_READ => {
            if a[1] > CAP_LAST_CAP {
                return Err(Errno::EINVAL);
            }
            Ok(1)
        }
        PR_SET_TIMERSLACK => {
            let v = if a[1] == 0 { DEFAULT_SLACK_NS } else { a[1] };
            TIMER_SLACK.store(v, Ordering::Relaxed);
            Ok(0)
        }
        PR_GET_TIMERSLACK => Ok(TIMER_SLACK.load(Ordering::Relaxed)),
        PR_SET_CHILD_SUBREAPER => {
            SUBREAPER.store(u64::from(a[1] != 0), Ordering::Relaxed);
            Ok(0)
        }
        PR_GET_CHILD_SUBREAPER => put_int(a[1], SUBREAPER.load(Ordering::Relaxed)),
        PR_SET_NO_NEW_PRIVS => {
            if a[1] != 1 || a[2] != 0 || a[3] != 0 || a[4] != 0 {
                return Err(Errno::EINVAL);
            }
            NO_NEW_PRIVS.store(1, Ordering::Relaxed);
            Ok(0)
        }
        PR_GET_NO_NEW_PRIVS => {
            if a[1] != 0 || a[2] != 0 || a[3] != 0 || a[4] != 0 {
                return Err(Errno::EINVAL);
            }
            Ok(NO_NEW_PRIVS.load(Ordering::Relaxed))
        }
        // Linux 6.18: `PR_THP_DISABLE_EXCEPT_ADVISED` in arg3, only when
        // disabling; the getter says `1 | flags` then.
        PR_SET_THP_DISABLE => {
            if a[3] != 0 || a[4] != 0 || (a[1] == 0 && a[2] != 0) || a[2] & !THP_EXCEPT_ADVISED != 0
            {
                return Err(Errno::EINVAL);
            }
            let v = if a[1] == 0 { 0 } else { 1 | a[2] };
            THP_DISABLE.store(v, Ordering::Relaxed);
            Ok(0)
        }
        PR_GET_THP_DISABLE => {
            if a[1] != 0 || a[2] != 0 || a[3] != 0 || a[4] != 0 {
                return Err(Errno::EINVAL);
            }
            Ok(THP_DISABLE.load(Ordering::Relaxed))
        }
        // Naming anonymous memory (glibc names its thread stacks and
        // HotSpot its heap) is EINVAL, as on a kernel built without
        // `CONFIG_ANON_VMA_NAME` (Debian's, this host's): the names would
        // not show in `/proc/self/maps`, and the callers do without.
        _ => Err(Errno::EINVAL),
    }
}
