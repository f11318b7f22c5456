//! `futex(2)`, for one thread: wake-ups find nobody to wake, and a wait
//! whose value still matches could never end, so it is refused with EDEADLK
//! rather than hanging the partition. Real waiting comes with threads.

use crate::errno::Errno;
use crate::mm::user;

const FUTEX_WAIT: u64 = 0;
const FUTEX_WAKE: u64 = 1;
const FUTEX_WAIT_BITSET: u64 = 9;
const FUTEX_WAKE_BITSET: u64 = 10;
const FUTEX_CMD_MASK: u64 = 0x7f;

/// `futex(uaddr, op, val, timeout, uaddr2, val3)`.
pub fn futex(a: &[u64; 6]) -> Result<u64, Errno> {
    match a[1] & FUTEX_CMD_MASK {
        FUTEX_WAKE | FUTEX_WAKE_BITSET => Ok(0),
        FUTEX_WAIT | FUTEX_WAIT_BITSET => {
            let word = user::slice(a[0], 4)?;
            let v = u32::from_le_bytes([word[0], word[1], word[2], word[3]]);
            if v != a[2] as u32 {
                Err(Errno::EAGAIN)
            } else {
                Err(Errno::EDEADLK)
            }
        }
        _ => Err(Errno::ENOSYS),
    }
}
