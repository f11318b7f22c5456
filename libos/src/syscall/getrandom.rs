//! `getrandom(2)`: RDRAND when the CPU has it, else a TSC-seeded xorshift.

use alloc::vec;

use crate::errno::Errno;
use crate::mm::user;

fn rdrand() -> Option<u64> {
    if core::arch::x86_64::__cpuid(1).ecx & (1 << 30) == 0 {
        return None;
    }
    for _ in 0..10 {
        let v: u64;
        let ok: u8;
        // SAFETY: RDRAND only writes the register and the carry flag.
        unsafe {
            core::arch::asm!("rdrand {}", "setc {}", out(reg) v, out(reg_byte) ok, options(nomem, nostack))
        };
        if ok != 0 {
            return Some(v);
        }
    }
    None
}

/// `getrandom(buf, count, flags)`.
pub fn getrandom(a: &[u64; 6]) -> Result<u64, Errno> {
    let len = a[1].min(1 << 20) as usize;
    let mut out = vec![0u8; len];
    let mut x = crate::arch::cpu::rdtsc() | 1;
    for chunk in out.chunks_mut(8) {
        let v = rdrand().unwrap_or_else(|| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        });
        chunk.copy_from_slice(&v.to_le_bytes()[..chunk.len()]);
    }
    user::copy_in(a[0], &out)?;
    Ok(len as u64)
}
