//! `/dev/null`, `/dev/zero`, `/dev/full`, `/dev/random`, `/dev/urandom`,
//! `/dev/astraea-snapshot`.

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use super::route::DevKind;
use crate::errno::Errno;

/// An open device node.
pub struct Device {
    /// Which device.
    pub kind: DevKind,
    /// `O_*` status flags.
    pub flags: AtomicU32,
    /// `/dev/astraea-snapshot`: how the snapshot this open file made ended
    /// (high half: 0 none yet, 1 taken, 2 restored) and how much of the
    /// word saying so was read (low half).
    said: AtomicU64,
}

impl Device {
    /// A newly opened device node with status flags `flags`.
    pub fn new(kind: DevKind, flags: u32) -> Self {
        Device {
            kind,
            flags: AtomicU32::new(flags),
            said: AtomicU64::new(0),
        }
    }

    /// Fills `out` as a read does; returns how many bytes it produced.
    pub fn read(&self, out: &mut [u8]) -> Result<usize, Errno> {
        Ok(match self.kind {
            DevKind::Null => 0,
            DevKind::Zero | DevKind::Full => {
                out.fill(0);
                out.len()
            }
            DevKind::Random { .. } => {
                random_fill(out);
                out.len()
            }
            DevKind::Snapshot => {
                // The first read snapshots the partition; it and the next
                // ones read what `snapshot::said` gives for how that went,
                // then EOF (a program reading the file whole snapshots once).
                let mut st = self.said.load(Ordering::SeqCst);
                if st >> 32 == 0 {
                    let outcome = match crate::snapshot::request()? {
                        crate::snapshot::Outcome::Taken => 1,
                        crate::snapshot::Outcome::Restored => 2,
                    };
                    st = outcome << 32;
                }
                let word = crate::snapshot::said(if st >> 32 == 1 {
                    crate::snapshot::Outcome::Taken
                } else {
                    crate::snapshot::Outcome::Restored
                });
                let at = ((st & 0xffff_ffff) as usize).min(word.len());
                let n = (word.len() - at).min(out.len());
                out[..n].copy_from_slice(&word[at..at + n]);
                self.said.store(st + n as u64, Ordering::SeqCst);
                n
            }
        })
    }

    /// A write of `len` bytes: they are consumed (or refused by `/dev/full`).
    pub fn write(&self, len: u64) -> Result<u64, Errno> {
        match self.kind {
            DevKind::Full => Err(Errno::ENOSPC),
            _ => Ok(len),
        }
    }

    /// Its attributes.
    pub fn stat(&self) -> astraea_9p::Stat {
        stat_of(self.kind)
    }
}

/// The attributes of a device node: a character device, read-write for all.
pub fn stat_of(kind: DevKind) -> astraea_9p::Stat {
    let (major, minor) = kind.rdev();
    let mut st = super::synthetic::base_stat(0o020666, 0);
    st.rdev = u64::from((major << 8) | minor);
    st.qid.path = 0x1000 + u64::from(minor);
    st
}

fn rdrand() -> Option<u64> {
    // Asked once: CPUID traps to the host in a guest (3.5 µs here), and
    // this runs for every 8 random bytes.
    static HAS: spin::Once<bool> = spin::Once::new();
    if !*HAS.call_once(|| core::arch::x86_64::__cpuid(1).ecx & (1 << 30) != 0) {
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

/// Fills `out` with random bytes: RDRAND when the CPU has it, else a
/// TSC-seeded xorshift (not for cryptography, but never blocking).
pub fn random_fill(out: &mut [u8]) {
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
}
