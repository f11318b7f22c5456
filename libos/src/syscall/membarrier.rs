//! `membarrier(2)`: a memory barrier on every CPU running the process's
//! threads. A partition has one vCPU, so a full fence on the calling CPU
//! already orders every thread's accesses (the others are switched out, and
//! a context switch is a full barrier); what remains is Linux's bookkeeping:
//! which commands exist, and that the private ones need registering first.

use core::sync::atomic::{AtomicU32, Ordering, fence};

use crate::errno::Errno;

const QUERY: u64 = 0;
const GLOBAL: u32 = 1 << 0;
const GLOBAL_EXPEDITED: u32 = 1 << 1;
const REGISTER_GLOBAL_EXPEDITED: u32 = 1 << 2;
const PRIVATE_EXPEDITED: u32 = 1 << 3;
const REGISTER_PRIVATE_EXPEDITED: u32 = 1 << 4;
const PRIVATE_EXPEDITED_SYNC_CORE: u32 = 1 << 5;
const REGISTER_PRIVATE_EXPEDITED_SYNC_CORE: u32 = 1 << 6;
const PRIVATE_EXPEDITED_RSEQ: u32 = 1 << 7;
const REGISTER_PRIVATE_EXPEDITED_RSEQ: u32 = 1 << 8;
const GET_REGISTRATIONS: u32 = 1 << 9;
/// `MEMBARRIER_CMD_FLAG_CPU` (only with `PRIVATE_EXPEDITED_RSEQ`).
const FLAG_CPU: u64 = 1;

/// Every command, as Linux 6.3+ on x86-64 reports them to `QUERY`.
const SUPPORTED: u32 = GLOBAL
    | GLOBAL_EXPEDITED
    | REGISTER_GLOBAL_EXPEDITED
    | PRIVATE_EXPEDITED
    | REGISTER_PRIVATE_EXPEDITED
    | PRIVATE_EXPEDITED_SYNC_CORE
    | REGISTER_PRIVATE_EXPEDITED_SYNC_CORE
    | PRIVATE_EXPEDITED_RSEQ
    | REGISTER_PRIVATE_EXPEDITED_RSEQ
    | GET_REGISTRATIONS;

/// The `REGISTER_*` commands the process has made.
static REGISTERED: AtomicU32 = AtomicU32::new(0);

/// A barrier for a private command, which its registration must precede.
fn private(register: u32) -> Result<u64, Errno> {
    if REGISTERED.load(Ordering::Acquire) & register == 0 {
        return Err(Errno::EPERM);
    }
    fence(Ordering::SeqCst);
    Ok(0)
}

/// `membarrier(cmd, flags, cpu_id)`.
pub fn membarrier(a: &[u64; 6]) -> Result<u64, Errno> {
    let (cmd, flags) = (u64::from(a[0] as u32), u64::from(a[1] as u32));
    let allowed = if cmd == u64::from(PRIVATE_EXPEDITED_RSEQ) {
        FLAG_CPU
    } else {
        0
    };
    if flags & !allowed != 0 {
        return Err(Errno::EINVAL);
    }
    if cmd == QUERY {
        return Ok(u64::from(SUPPORTED));
    }
    let cmd = cmd as u32;
    match cmd {
        GLOBAL | GLOBAL_EXPEDITED => {
            fence(Ordering::SeqCst);
            Ok(0)
        }
        REGISTER_GLOBAL_EXPEDITED
        | REGISTER_PRIVATE_EXPEDITED
        | REGISTER_PRIVATE_EXPEDITED_SYNC_CORE
        | REGISTER_PRIVATE_EXPEDITED_RSEQ => {
            REGISTERED.fetch_or(cmd, Ordering::AcqRel);
            Ok(0)
        }
        PRIVATE_EXPEDITED => private(REGISTER_PRIVATE_EXPEDITED),
        PRIVATE_EXPEDITED_SYNC_CORE => private(REGISTER_PRIVATE_EXPEDITED_SYNC_CORE),
        PRIVATE_EXPEDITED_RSEQ => private(REGISTER_PRIVATE_EXPEDITED_RSEQ),
        GET_REGISTRATIONS => Ok(u64::from(REGISTERED.load(Ordering::Acquire))),
        _ => Err(Errno::EINVAL),
    }
}
