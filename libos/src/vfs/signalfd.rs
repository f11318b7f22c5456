//! signalfd: a file whose reads take the calling thread's pending signals
//! of a mask — its own first, then the process's, as a handler would get
//! them — as 128-byte `signalfd_siginfo` records (Linux's
//! `fs/signalfd.c`).

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use super::poll_bits::POLLIN;
use crate::errno::Errno;
use crate::signal::{self, SigInfo};

/// A `struct signalfd_siginfo`'s size.
const RECORD: usize = 128;

/// A signalfd.
pub struct SignalFd {
    /// The signals it takes (bit `n - 1` for signal `n`).
    mask: AtomicU64,
    /// `O_*` status flags.
    pub flags: AtomicU32,
}

impl SignalFd {
    /// A signalfd taking the signals of `mask`.
    pub fn new(mask: u64, flags: u32) -> Self {
        Self {
            mask: AtomicU64::new(mask),
            flags: AtomicU32::new(flags | 2),
        }
    }

    /// `signalfd` on an existing one: a new mask.
    pub fn set_mask(&self, mask: u64) {
        self.mask.store(mask, Ordering::Relaxed);
        super::readiness_changed();
    }
}

/// The `signalfd_siginfo` record of `sig` sent with `info`, as Linux's
/// `signalfd_copyinfo` fills it: the sender for `kill` and for queued
/// signals (`si_code` < 0, with their value too), the timer's id, overrun
/// and value for a POSIX timer's.
fn record(sig: u32, info: &SigInfo) -> [u8; RECORD] {
    let word = |at: usize| [info[at], info[at + 1], info[at + 2], info[at + 3]];
    let code = i32::from_le_bytes(word(8));
    let mut r = [0u8; RECORD];
    r[0..4].copy_from_slice(&sig.to_le_bytes());
    r[4..8].copy_from_slice(&word(4));
    r[8..12].copy_from_slice(&word(8));
    if code == signal::code::SI_TIMER {
        r[24..28].copy_from_slice(&word(16));
        r[32..36].copy_from_slice(&word(20));
    } else {
        r[12..16].copy_from_slice(&word(16));
        r[16..20].copy_from_slice(&word(20));
    }
    if code < 0 {
        // `ssi_int` and `ssi_ptr`: the value (`si_int` overlays `si_ptr`).
        r[44..48].copy_from_slice(&word(24));
        r[48..56].copy_from_slice(&info[24..32]);
    }
    r
}

impl crate::fd::FileLike for SignalFd {
    /// Lost if the buffer faults: Linux dequeues, then copies.
    fn taken_before_copy(&self) -> bool {
        true
    }

    fn read(&self, max: usize, nonblock: bool) -> Result<alloc::vec::Vec<u8>, Errno> {
        if max < RECORD {
            return Err(Errno::EINVAL);
        }
        let mask = self.mask.load(Ordering::Relaxed);
        let mut out = alloc::vec::Vec::new();
        loop {
            while out.len() + RECORD <= max {
                let Some((sig, info)) = signal::take_pending(mask) else {
                    break;
                };
                out.extend_from_slice(&record(sig, &info));
            }
            if !out.is_empty() {
                return Ok(out);
            }
            if nonblock {
                return Err(Errno::EAGAIN);
            }
            // A handled signal outside the mask ends the wait (`EINTR`).
            signal::SENT.wait_while_interruptible(|| !signal::pending_in(mask))?;
        }
    }

    fn poll(&self) -> u16 {
        if signal::pending_in(self.mask.load(Ordering::Relaxed)) {
            POLLIN
        } else {
            0
        }
    }

    fn wakes(&self) -> [u64; 3] {
        signal::SENT_WAKES.get()
    }

    fn flags(&self) -> &AtomicU32 {
        &self.flags
    }

    fn mode(&self) -> u32 {
        0o600
    }

    fn own_inode(&self) -> bool {
        true
    }

    fn proc_link(&self) -> alloc::string::String {
        alloc::string::String::from("anon_inode:[signalfd]")
    }

    fn as_any(&self) -> &dyn core::any::Any {
        self
    }
}
