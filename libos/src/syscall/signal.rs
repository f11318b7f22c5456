//! `rt_sigaction(2)`, `rt_sigprocmask(2)`, `sigaltstack(2)`,
//! `rt_sigreturn(2)`, `kill(2)`, `tgkill(2)`, `tkill(2)`: the system calls
//! over the signal machinery in `crate::signal`.

use crate::errno::Errno;
use crate::mm::user;
use crate::signal::{self, Action};

fn u64_at(b: &[u8], off: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[off..off + 8]);
    u64::from_le_bytes(w)
}

/// `rt_sigaction(sig, act, oact, sigsetsize)`.
pub fn rt_sigaction(a: &[u64; 6]) -> Result<u64, Errno> {
    if a[3] != 8 {
        return Err(Errno::EINVAL);
    }
    let new = if a[1] != 0 {
        let b = &user::read_array::<32>(a[1])?;
        Some(Action {
            handler: u64_at(b, 0),
            flags: u64_at(b, 8),
            restorer: u64_at(b, 16),
            mask: u64_at(b, 24),
        })
    } else {
        None
    };
    let old = signal::set_action(a[0] as u32, new)?;
    if a[2] != 0 {
        let mut b = [0u8; 32];
        for (i, v) in [old.handler, old.flags, old.restorer, old.mask]
            .into_iter()
            .enumerate()
        {
            b[i * 8..i * 8 + 8].copy_from_slice(&v.to_le_bytes());
        }
        user::copy_in(a[2], &b)?;
    }
    Ok(0)
}

/// `rt_sigprocmask(how, set, oldset, sigsetsize)`.
pub fn rt_sigprocmask(a: &[u64; 6]) -> Result<u64, Errno> {
    if a[3] != 8 {
        return Err(Errno::EINVAL);
    }
    let set = if a[1] != 0 {
        Some(u64_at(&user::read_array::<8>(a[1])?, 0))
    } else {
        None
    };
    let old = signal::set_mask(a[0], set)?;
    if a[2] != 0 {
        user::copy_in(a[2], &old.to_le_bytes())?;
    }
    Ok(0)
}

/// [`rt_sigprocmask`] in a direct call, when its sets lie in present pages.
/// A change that leaves a signal deliverable is undone and declined: the
/// trapped call makes it again and delivers the signal on its way out, as
/// Linux does on the return from `rt_sigprocmask`.
pub fn rt_sigprocmask_direct(a: &[u64; 6]) -> Option<u64> {
    let irq = crate::arch::cpu::irq_save();
    let present = (a[1] == 0 || user::present_readable(a[1], 8))
        && (a[2] == 0 || user::present_writable(a[2], 8));
    let r = if !present || signal::has_deliverable() {
        None
    } else {
        let me = crate::sched::current();
        let before = me.user.sigmask.load(core::sync::atomic::Ordering::Relaxed);
        let r = rt_sigprocmask(a);
        if signal::has_deliverable() {
            // Undo; nothing else ran meanwhile.
            me.user
                .sigmask
                .store(before, core::sync::atomic::Ordering::Relaxed);
            None
        } else {
            Some(r)
        }
    };
    crate::arch::cpu::irq_restore(irq);
    r.map(|r| r.unwrap_or_else(super::errno_value))
}

/// `sigaltstack(ss, old_ss)`.
pub fn sigaltstack(a: &[u64; 6]) -> Result<u64, Errno> {
    let new = if a[0] != 0 {
        let b = &user::read_array::<24>(a[0])?;
        Some((u64_at(b, 0), u64_at(b, 16), u64_at(b, 8) as u32))
    } else {
        None
    };
    let rsp = crate::arch::user::current_syscall_frame();
    // SAFETY: the current thread's system-call frame, at the top of its
    // kernel stack for the duration of the call; only read here.
    let rsp = unsafe { (*rsp).user_rsp };
    let (sp, size, flags) = signal::altstack(new, rsp)?;
    if a[1] != 0 {
        let mut b = [0u8; 24];
        b[0..8].copy_from_slice(&sp.to_le_bytes());
        b[8..12].copy_from_slice(&flags.to_le_bytes());
        b[16..24].copy_from_slice(&size.to_le_bytes());
        user::copy_in(a[1], &b)?;
    }
    Ok(0)
}

/// `rt_sigreturn()`: back to where the signal interrupted the program.
pub fn rt_sigreturn(_: &[u64; 6]) -> Result<u64, Errno> {
    let frame = crate::arch::user::current_syscall_frame();
    // SAFETY: the current thread's system-call frame, at the top of its
    // kernel stack for the duration of the call; nothing else touches it.
    let f = unsafe { &mut *frame };
    let mut regs = match signal::sigreturn(f.user_rsp) {
        Ok(r) => r,
        Err(_) => {
            let info = signal::Info {
                signo: signal::nr::SIGSEGV,
                code: 0,
                addr: f.user_rsp,
                trap: (0, 0),
                sent: None,
            };
            signal::die(&info, &f.user_regs())
        }
    };
    // The restored mask may unblock a pending signal (one raised in its
    // own handler without SA_NODEFER): Linux delivers it now, before the
    // interrupted code goes on (the dispatcher skips a full restore).
    signal::deliver_pending(&mut regs);
    if !f.set_user_regs(&regs) {
        let info = signal::Info {
            signo: signal::nr::SIGSEGV,
            code: 0,
            addr: regs.rsp,
            trap: (0, 0),
            sent: None,
        };
        signal::die(&info, &regs);
    }
    Ok(regs.rax)
}

/// `rt_sigpending(set, sigsetsize)`: the pending signals the mask blocks.
pub fn rt_sigpending(a: &[u64; 6]) -> Result<u64, Errno> {
    if a[1] > 8 {
        return Err(Errno::EINVAL);
    }
    let set = signal::pending_blocked().to_le_bytes();
    user::copy_in(a[0], &set[..a[1] as usize])?;
    Ok(0)
}

/// `kill(pid, sig)`: only this process exists. A process-directed signal
/// goes to a thread that does not block it (the caller first), else waits
/// on the caller, as Linux picks.
pub fn kill(a: &[u64; 6]) -> Result<u64, Errno> {
    let pid = a[0] as i64;
    if pid != crate::process::pid() as i64 && pid != 0 && pid != -1 {
        return Err(Errno::ESRCH);
    }
    let sig = a[1] as u32;
    if a[1] == 0 {
        return Ok(0);
    }
    if a[1] > 64 {
        return Err(Errno::EINVAL);
    }
    signal::send_process(sig, signal::sent_info(sig, signal::code::SI_USER))?;
    Ok(0)
}

/// `tgkill(tgid, tid, sig)`.
pub fn tgkill(a: &[u64; 6]) -> Result<u64, Errno> {
    if a[0] != crate::process::pid() {
        return Err(Errno::ESRCH);
    }
    tkill(&[a[1], a[2], 0, 0, 0, 0])
}

/// `tkill(tid, sig)`.
pub fn tkill(a: &[u64; 6]) -> Result<u64, Errno> {
    if a[1] == 0 {
        return crate::process::thread(a[0]).map(|_| 0).ok_or(Errno::ESRCH);
    }
    signal::send(a[0], a[1] as u32)?;
    Ok(0)
}

/// Reads the `siginfo` a `sigqueue`-style call sends.
fn user_info(addr: u64) -> Result<signal::SigInfo, Errno> {
    let b = &user::read_array::<128>(addr)?;
    let mut info = [0u8; 128];
    info.copy_from_slice(b);
    Ok(info)
}

/// `rt_sigqueueinfo(tgid, sig, info)`: `sigqueue(3)`, the caller's
/// `siginfo` delivered as given (its `si_signo` set to `sig`); only this
/// process exists, which may send itself any `si_code`.
pub fn rt_sigqueueinfo(a: &[u64; 6]) -> Result<u64, Errno> {
    let sig = a[1] as u32;
    let info = user_info(a[2])?;
    if a[0] != crate::process::pid() {
        return Err(Errno::ESRCH);
    }
    if a[1] > 64 {
        return Err(Errno::EINVAL);
    }
    if sig == 0 {
        return Ok(0);
    }
    signal::send_process(sig, info)?;
    Ok(0)
}

/// `rt_tgsigqueueinfo(tgid, tid, sig, info)`: the same, to one thread.
pub fn rt_tgsigqueueinfo(a: &[u64; 6]) -> Result<u64, Errno> {
    let sig = a[2] as u32;
    let info = user_info(a[3])?;
    if a[0] as i32 <= 0 || a[1] as i32 <= 0 {
        return Err(Errno::EINVAL);
    }
    if a[0] != crate::process::pid() {
        return Err(Errno::ESRCH);
    }
    if a[2] > 64 {
        return Err(Errno::EINVAL);
    }
    crate::process::thread(a[1]).ok_or(Errno::ESRCH)?;
    if sig == 0 {
        return Ok(0);
    }
    signal::send_info(a[1], sig, info)?;
    Ok(0)
}
