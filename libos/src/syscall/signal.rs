//! `rt_sigaction(2)`, `rt_sigprocmask(2)`, `sigaltstack(2)`: the process's
//! signal dispositions and mask are recorded; delivery (signal frames with
//! the full register state) comes with the Linux personality's signal work.
//! Until then a fault ends the program as an unhandled signal would.

use crate::errno::Errno;
use crate::mm::user;
use crate::sync::IrqLock;

/// `struct kernel_sigaction`: handler, flags, restorer, mask (32 bytes).
const SIGACTION_SIZE: usize = 32;

struct Signals {
    actions: [[u8; SIGACTION_SIZE]; 64],
    mask: u64,
    altstack: [u8; 24],
}

static SIGNALS: IrqLock<Signals> = IrqLock::new(Signals {
    actions: [[0; SIGACTION_SIZE]; 64],
    mask: 0,
    altstack: [
        0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    ],
});

/// `rt_sigaction(sig, act, oldact, sigsetsize)`.
pub fn rt_sigaction(a: &[u64; 6]) -> Result<u64, Errno> {
    let sig = a[0] as usize;
    if !(1..=64).contains(&sig) || a[3] != 8 || sig == 9 || sig == 19 {
        return Err(Errno::EINVAL);
    }
    let new = if a[1] != 0 {
        let mut act = [0u8; SIGACTION_SIZE];
        act.copy_from_slice(user::slice(a[1], SIGACTION_SIZE as u64)?);
        Some(act)
    } else {
        None
    };
    let old = {
        let mut s = SIGNALS.lock();
        let old = s.actions[sig - 1];
        if let Some(act) = new {
            s.actions[sig - 1] = act;
        }
        old
    };
    if a[2] != 0 {
        user::copy_in(a[2], &old)?;
    }
    Ok(0)
}

/// `rt_sigprocmask(how, set, oldset, sigsetsize)`.
pub fn rt_sigprocmask(a: &[u64; 6]) -> Result<u64, Errno> {
    if a[3] != 8 {
        return Err(Errno::EINVAL);
    }
    let set = if a[1] != 0 {
        let b = user::slice(a[1], 8)?;
        Some(u64::from_le_bytes(b.try_into().map_err(|_| Errno::EFAULT)?))
    } else {
        None
    };
    let old = {
        let mut s = SIGNALS.lock();
        let old = s.mask;
        if let Some(set) = set {
            s.mask = match a[0] {
                0 => old | set,
                1 => old & !set,
                2 => set,
                _ => return Err(Errno::EINVAL),
            } & !((1 << 8) | (1 << 18)); // SIGKILL, SIGSTOP cannot be blocked
        }
        old
    };
    if a[2] != 0 {
        user::copy_in(a[2], &old.to_le_bytes())?;
    }
    Ok(0)
}

/// `sigaltstack(ss, old_ss)`.
pub fn sigaltstack(a: &[u64; 6]) -> Result<u64, Errno> {
    let new = if a[0] != 0 {
        let mut ss = [0u8; 24];
        ss.copy_from_slice(user::slice(a[0], 24)?);
        Some(ss)
    } else {
        None
    };
    let old = {
        let mut s = SIGNALS.lock();
        let old = s.altstack;
        if let Some(ss) = new {
            s.altstack = ss;
        }
        old
    };
    if a[1] != 0 {
        user::copy_in(a[1], &old)?;
    }
    Ok(0)
}
