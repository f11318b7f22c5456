//! Priority-inheritance futexes (`FUTEX_LOCK_PI`, `FUTEX_LOCK_PI2`,
//! `FUTEX_TRYLOCK_PI`, `FUTEX_UNLOCK_PI`): the word holds its owner's
//! thread id, and the kernel hands the lock from an unlocking (or dying)
//! owner to its first waiter. glibc's `PTHREAD_PRIO_INHERIT` mutexes are
//! made of them. One vCPU and no priorities to lend: the inheritance itself
//! has nothing to do, the ownership protocol is Linux's.

use alloc::collections::BTreeMap;

use crate::arch::cpu;
use crate::errno::Errno;
use crate::mm::user;
use crate::sched;
use crate::sync::IrqLock;

const WAITERS: u32 = 0x8000_0000;
const OWNER_DIED: u32 = 0x4000_0000;
const TID_MASK: u32 = 0x3fff_ffff;

/// PI futexes with threads blocked on them, and the owner they wait for
/// (Linux's `pi_state`): a dying owner hands them on.
static OWNERS: IrqLock<BTreeMap<u64, u32>> = IrqLock::new(BTreeMap::new());

fn word(addr: u64) -> Result<u32, Errno> {
    if !addr.is_multiple_of(4) {
        return Err(Errno::EINVAL);
    }
    Ok(u32::from_le_bytes(user::read_array::<4>(addr)?))
}

fn set_word(addr: u64, v: u32) -> Result<(), Errno> {
    user::copy_in(addr, &v.to_le_bytes())
}

fn me() -> u32 {
    sched::current().id() as u32
}

/// `FUTEX_LOCK_PI` (`deadline` on the monotonic clock) and
/// `FUTEX_TRYLOCK_PI` (`try_only`): takes the word for the calling thread,
/// or waits until its owner hands it over. As Linux's: `EDEADLK` if the
/// caller owns it, `ESRCH` if no thread has the owner's id, `EAGAIN` for a
/// trylock of a taken word; a free word with `OWNER_DIED` is taken keeping
/// that bit (the program's mutex then says `EOWNERDEAD`). A signal does not
/// end the wait: its handler runs and the call goes on.
pub fn lock(addr: u64, deadline: Option<u64>, try_only: bool) -> Result<u64, Errno> {
    // Faulted in before interrupts go off.
    word(addr)?;
    let tid = me();
    loop {
        // With interrupts off nothing else runs on this (only) CPU: the
        // read, the change and the enqueue are one step, as Linux's
        // cmpxchg under the hash-bucket lock.
        let irq = cpu::irq_save();
        let r = (|| {
            let uval = word(addr)?;
            let owner = uval & TID_MASK;
            if owner == tid {
                return Err(Errno::EDEADLK);
            }
            if owner == 0 {
                let waiting = super::futex::waiting(addr);
                let new = tid | (uval & OWNER_DIED) | if waiting { WAITERS } else { 0 };
                set_word(addr, new)?;
                return Ok(None);
            }
            // The first waiter sets WAITERS before the owner is looked
            // for (Linux's `futex_lock_pi_atomic`): a dead owner or a
            // trylock leaves it set.
            if uval & WAITERS == 0 {
                set_word(addr, uval | WAITERS)?;
            }
            if !crate::process::alive(u64::from(owner)) {
                return Err(Errno::ESRCH);
            }
            if try_only {
                return Err(Errno::EAGAIN);
            }
            OWNERS.lock().insert(addr, owner);
            if crate::signal::has_interrupting()
                || deadline.is_some_and(|d| d <= crate::time::monotonic_ns())
            {
                return Ok(Some(false));
            }
            Ok(Some(super::futex::sleep(
                addr,
                u32::MAX,
                deadline,
                sched::block,
            )))
        })();
        cpu::irq_restore(irq);
        match r? {
            None => return Ok(0),
            // Handed over: the word names this thread now.
            Some(true) if word(addr)? & TID_MASK == tid => return Ok(0),
            _ => {}
        }
        if crate::signal::has_deliverable() {
            return Err(Errno::ERESTARTNOINTR);
        }
        if deadline.is_some_and(|d| d <= crate::time::monotonic_ns()) {
            // Nobody waits for the owner now: no hand-over at its exit.
            let irq = cpu::irq_save();
            if !super::futex::waiting(addr) {
                OWNERS.lock().remove(&addr);
            }
            cpu::irq_restore(irq);
            return Err(Errno::ETIMEDOUT);
        }
    }
}

/// `FUTEX_UNLOCK_PI`: `EPERM` unless the caller owns the word; hands it to
/// the first waiter (its id and `WAITERS`, as Linux always sets then), or
/// clears it. Linux reads the word before it looks at the address (an
/// unaligned one is `EPERM` when the bytes there do not name the caller).
pub fn unlock(addr: u64, shared: bool) -> Result<u64, Errno> {
    let tid = me();
    if u32::from_le_bytes(user::read_array::<4>(addr)?) & TID_MASK != tid {
        return Err(Errno::EPERM);
    }
    super::futex::key(addr, shared, true)?;
    let irq = cpu::irq_save();
    let r = (|| {
        let uval = word(addr)?;
        if uval & TID_MASK != tid {
            return Err(Errno::EPERM);
        }
        hand_over(addr, 0)?;
        Ok(0)
    })();
    cpu::irq_restore(irq);
    r
}

/// Gives the word at `addr` to its first waiter, with `keep` of the old
/// word's bits, or clears it when none waits. Interrupts off.
fn hand_over(addr: u64, keep: u32) -> Result<(), Errno> {
    match super::futex::take_first(addr) {
        Some(next) => {
            let id = next.id() as u32;
            set_word(addr, id | WAITERS | keep)?;
            if super::futex::waiting(addr) {
                OWNERS.lock().insert(addr, id);
            } else {
                OWNERS.lock().remove(&addr);
            }
            sched::make_ready(next);
        }
        None => {
            set_word(addr, 0)?;
            OWNERS.lock().remove(&addr);
        }
    }
    Ok(())
}

/// At the exit of thread `tid` (after its robust list, which marks the
/// robust ones `OWNER_DIED`): the PI futexes it owned that others wait on
/// go to their first waiter, as Linux's `exit_pi_state_list`, keeping
/// `OWNER_DIED`.
pub fn exit(tid: u32) {
    let irq = cpu::irq_save();
    let owned: alloc::vec::Vec<u64> = OWNERS
        .lock()
        .iter()
        .filter(|&(_, &o)| o == tid)
        .map(|(&a, _)| a)
        .collect();
    for addr in owned {
        let Ok(uval) = word(addr) else {
            OWNERS.lock().remove(&addr);
            continue;
        };
        // Still the dead thread's (or cleared by its robust list).
        let owner = uval & TID_MASK;
        if (owner == tid || owner == 0) && super::futex::waiting(addr) {
            let _ = hand_over(addr, uval & OWNER_DIED);
        } else {
            OWNERS.lock().remove(&addr);
        }
    }
    cpu::irq_restore(irq);
}
