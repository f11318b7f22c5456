//! Robust futexes (`set_robust_list(2)`, `get_robust_list(2)`): each
//! thread names a list of the futex words it holds (glibc's robust
//! mutexes); when it exits, the library OS walks the list as Linux's
//! `exit_robust_list` does, marks every word still owned by the thread
//! `FUTEX_OWNER_DIED` and wakes one waiter, so that the next `lock` gets
//! `EOWNERDEAD` instead of waiting forever.

use core::sync::atomic::Ordering;

use crate::arch::cpu;
use crate::errno::Errno;
use crate::mm::user;

/// `sizeof(struct robust_list_head)`: the list's `next`, the futex offset,
/// `list_op_pending`.
const HEAD_LEN: u64 = 24;
/// `FUTEX_WAITERS`, `FUTEX_OWNER_DIED`, `FUTEX_TID_MASK`.
const WAITERS: u32 = 0x8000_0000;
const OWNER_DIED: u32 = 0x4000_0000;
const TID_MASK: u32 = 0x3fff_ffff;
/// Linux's `ROBUST_LIST_LIMIT`: a longer (or circular) list is cut there.
const LIST_LIMIT: usize = 2048;

/// `set_robust_list(head, len)`: `len` must be the head's size, as Linux
/// checks; the head is remembered for the thread's exit.
pub fn set_robust_list(a: &[u64; 6]) -> Result<u64, Errno> {
    if a[1] != HEAD_LEN {
        return Err(Errno::EINVAL);
    }
    crate::sched::current()
        .user
        .robust_list
        .store(a[0], Ordering::Relaxed);
    Ok(0)
}

/// `get_robust_list(pid, head_ptr, len_ptr)`: the head a thread of the
/// program (0: the caller) set, `ESRCH` for no such thread.
pub fn get_robust_list(a: &[u64; 6]) -> Result<u64, Errno> {
    let head = if a[0] == 0 {
        crate::sched::current()
            .user
            .robust_list
            .load(Ordering::Relaxed)
    } else {
        let t = crate::process::thread(a[0]).ok_or(Errno::ESRCH)?;
        t.user.robust_list.load(Ordering::Relaxed)
    };
    user::copy_in(a[2], &(HEAD_LEN as usize).to_le_bytes())?;
    user::copy_in(a[1], &head.to_le_bytes())?;
    Ok(0)
}

fn read_u64(addr: u64) -> Result<u64, Errno> {
    Ok(u64::from_le_bytes(user::read_array::<8>(addr)?))
}

/// A list pointer: the entry's address, and bit 0 (a priority-inheritance
/// futex).
fn entry(addr: u64) -> Result<(u64, bool), Errno> {
    let v = read_u64(addr)?;
    Ok((v & !1, v & 1 != 0))
}

/// At the exit of thread `tid` (before its `clear_child_tid` is cleared,
/// as Linux's `mm_release`): every futex of its robust list, and the one
/// it was taking or releasing (`list_op_pending`). A list the program
/// corrupted is followed until a pointer cannot be read, as Linux does.
pub fn exit_robust_list(tid: u32, head: u64) {
    if head == 0 {
        return;
    }
    let Ok((mut cur, mut pi)) = entry(head) else {
        return;
    };
    let Ok(offset) = read_u64(head + 8) else {
        return;
    };
    let Ok((pending, pending_pi)) = entry(head + 16) else {
        return;
    };
    let mut limit = LIST_LIMIT;
    while cur != head {
        let next = entry(cur);
        if cur != pending {
            futex_death(cur.wrapping_add(offset), tid, pi, false);
        }
        let Ok((n, npi)) = next else {
            return;
        };
        cur = n;
        pi = npi;
        limit -= 1;
        if limit == 0 {
            break;
        }
    }
    if pending != 0 {
        futex_death(pending.wrapping_add(offset), tid, pending_pi, true);
    }
}

/// Linux's `handle_futex_death`: a word the dead thread owns becomes
/// `OWNER_DIED` (keeping `WAITERS`) and one waiter is woken; a pending
/// unlock that already cleared the word still wakes one (the unlocking
/// thread died between the store and its wake).
fn futex_death(uaddr: u64, tid: u32, pi: bool, pending: bool) {
    if !uaddr.is_multiple_of(4) {
        return;
    }
    // One vCPU: nobody runs between the load and the store with
    // interrupts off, which makes them Linux's cmpxchg.
    let irq = cpu::irq_save();
    let woke = (|| {
        let uval = u32::from_le_bytes(user::read_array::<4>(uaddr).ok()?);
        if pending && !pi && uval == 0 {
            return Some(true);
        }
        if uval & TID_MASK != tid {
            return None;
        }
        let mval = (uval & WAITERS) | OWNER_DIED;
        user::copy_in(uaddr, &mval.to_le_bytes()).ok()?;
        Some(!pi && uval & WAITERS != 0)
    })();
    cpu::irq_restore(irq);
    if woke == Some(true) {
        super::futex::wake(uaddr, 1, u32::MAX);
    }
}
