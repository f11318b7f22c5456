//! The `none` policy: every read goes to the server.

use core::sync::atomic::{AtomicU64, Ordering};

use super::{Fetch, FileCache, Stats};
use crate::errno::Errno;

/// Forwards every read.
#[derive(Default)]
pub struct NoCache {
    fetched: AtomicU64,
    reads: AtomicU64,
}

impl FileCache for NoCache {
    fn name(&self) -> &'static str {
        "none"
    }

    fn read(
        &self,
        _key: u64,
        offset: u64,
        out: &mut [u8],
        fetch: &mut Fetch<'_>,
    ) -> Result<usize, Errno> {
        let n = fetch(offset, out)?;
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.fetched.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }

    fn stats(&self) -> Stats {
        Stats {
            misses: self.reads.load(Ordering::Relaxed),
            fetched_bytes: self.fetched.load(Ordering::Relaxed),
            ..Stats::default()
        }
    }
}
