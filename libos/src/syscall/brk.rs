//! `brk(2)`: the program break, an anonymous area named `[heap]`. After
//! `mlockall(MCL_FUTURE)` it grows locked, within `RLIMIT_MEMLOCK`.

use alloc::sync::Arc;

use crate::errno::Errno;
use crate::mm::vma::{self, Backing, PROT_READ, PROT_WRITE, Placement};
use crate::process::MEMORY;

/// Largest heap the break may reach.
const MAX_BRK: u64 = 1 << 32;

/// `brk(addr)`: returns the new break, or the old one if it cannot move.
pub fn brk(a: &[u64; 6]) -> Result<u64, Errno> {
    let mut m = MEMORY.lock();
    let want = a[0];
    if want < m.brk_start || want > m.brk_start + MAX_BRK {
        return Ok(m.brk);
    }
    let mapped_end = m.brk.next_multiple_of(4096);
    let new_end = want.next_multiple_of(4096);
    if new_end > mapped_end {
        let grown = vma::map(
            Placement::NoReplace(mapped_end),
            new_end - mapped_end,
            PROT_READ | PROT_WRITE,
            false,
            Backing::Anon,
            Some(Arc::from("[heap]")),
            false,
        );
        if grown.is_err() {
            return Ok(m.brk);
        }
    } else if new_end < mapped_end {
        vma::unmap(new_end, mapped_end - new_end)?;
    }
    m.brk = want;
    Ok(want)
}
