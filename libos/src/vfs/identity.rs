//! Who the process is: its user and group (the launching user's, as the
//! gateway reports them), its name (`PR_SET_NAME`) and file-creation mask.

use alloc::string::String;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::sync::IrqLock;

/// Not looked up yet.
const UNKNOWN: u64 = u64::MAX;
static IDS: AtomicU64 = AtomicU64::new(UNKNOWN);
static UMASK: AtomicU32 = AtomicU32::new(0o022);
static NAME: IrqLock<Option<String>> = IrqLock::new(None);

/// (uid, gid) of the launching user. The gateway runs as that user and
/// reports it as the owner of its synthetic root; without a gateway (or
/// with another 9P server) the root's owner is the best guess there is,
/// and 0 without files at all.
pub fn ids() -> (u32, u32) {
    let mut v = IDS.load(Ordering::Relaxed);
    if v == UNKNOWN {
        v = crate::p9::mounted()
            .and_then(|c| c.getattr(c.root()).ok())
            .map_or(0, |st| (u64::from(st.uid) << 32) | u64::from(st.gid));
        IDS.store(v, Ordering::Relaxed);
    }
    ((v >> 32) as u32, v as u32)
}

/// The file-creation mask.
pub fn umask() -> u32 {
    UMASK.load(Ordering::Relaxed)
}

/// Sets the file-creation mask; returns the old one.
pub fn set_umask(mask: u32) -> u32 {
    UMASK.swap(mask & 0o777, Ordering::Relaxed)
}

/// The process's name: what `PR_SET_NAME` set, else the program file's
/// base name, at most 15 bytes (Linux's `TASK_COMM_LEN` less the NUL).
pub fn name() -> String {
    if let Some(n) = NAME.lock().clone() {
        return n;
    }
    let exe = crate::process::EXE.lock().clone();
    let base = exe.rsplit('/').next().unwrap_or("");
    truncate(base)
}

/// Sets the process's name (truncated like Linux does).
pub fn set_name(name: &str) {
    *NAME.lock() = Some(truncate(name));
}

fn truncate(s: &str) -> String {
    let mut end = s.len().min(15);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    String::from(&s[..end])
}
