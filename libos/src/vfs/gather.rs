//! The bytes of one write to a pipe or a Unix stream socket, taken at the
//! pace the file takes them.
//!
//! Linux's `pipe_write` and `unix_stream_sendmsg` copy a write from the
//! program's memory a buffer (a page, an skb) at a time, deciding each
//! buffer's size from what is left of the *whole* write: the odd part of a
//! pipe write merges into the last buffer first, a Unix stream's skbs are
//! cut from the remaining length. A copy that meets a hole ends the write
//! with the buffers before it (or `EFAULT`). A [`Gather`] gives the file
//! that view: the whole write's length, and its bytes staged a window at a
//! time from the program's memory (outside any lock, since reading it may
//! fault pages in), with the offset where a hole begins.

use alloc::vec::Vec;

use crate::errno::Errno;

/// Appends `len` bytes of the program's memory at `addr` to the vector, or
/// as many as come before a hole (`Err((copied, errno))`).
pub type ReadFn = fn(&mut Vec<u8>, u64, u64) -> Result<(), (usize, Errno)>;

/// How many bytes of the program's memory are staged at once.
const WINDOW: usize = 1 << 20;

enum Source<'a> {
    /// The kernel's own bytes (a gathered copy, `sendfile`).
    Kernel(&'a [u8]),
    /// The program's pieces `(address, length)`, read with `read`.
    User {
        pieces: &'a [(u64, u64)],
        read: ReadFn,
    },
}

/// One write's bytes (see the module's documentation).
pub struct Gather<'a> {
    src: Source<'a>,
    total: usize,
    /// Staged bytes: `[start, start + staged.len())` of the write.
    staged: Vec<u8>,
    start: usize,
    /// Where a hole in the program's memory begins, and its error.
    hole: Option<(usize, Errno)>,
}

impl<'a> Gather<'a> {
    /// A write of the kernel's `bytes`.
    pub fn kernel(bytes: &'a [u8]) -> Gather<'a> {
        Gather {
            src: Source::Kernel(bytes),
            total: bytes.len(),
            staged: Vec::new(),
            start: 0,
            hole: None,
        }
    }

    /// A write of the program's `pieces`, read with `read`.
    pub fn user(pieces: &'a [(u64, u64)], read: ReadFn) -> Gather<'a> {
        let total = pieces.iter().map(|p| p.1 as usize).sum();
        Gather {
            src: Source::User { pieces, read },
            total,
            staged: Vec::new(),
            start: 0,
            hole: None,
        }
    }

    /// The write's length.
    pub fn len(&self) -> usize {
        self.total
    }

    /// Whether the write is of nothing.
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// Makes the bytes from `off` on available, up to a window or a hole;
    /// returns the offset where they end (at most [`len`](Self::len)).
    /// Offsets below `off` may be forgotten. Call with no lock held.
    pub fn stage(&mut self, off: usize) -> usize {
        let (pieces, read) = match self.src {
            Source::Kernel(_) => return self.total,
            Source::User { pieces, read } => (pieces, read),
        };
        let end = self.start + self.staged.len();
        if let Some((at, _)) = self.hole
            && end >= at
        {
            return at;
        }
        if off >= self.start && end >= (off + WINDOW / 2).min(self.total) {
            return end;
        }
        // Keep what is staged from `off` on, then read on from its end.
        if off >= self.start && off <= end {
            self.staged.drain(..off - self.start);
        } else {
            self.staged.clear();
        }
        self.start = off;
        let want = (self.total - off).min(WINDOW);
        let mut pos = self.start + self.staged.len();
        // Find the piece holding byte `pos` of the write.
        let mut skip = pos;
        let mut i = 0;
        while i < pieces.len() && skip >= pieces[i].1 as usize {
            skip -= pieces[i].1 as usize;
            i += 1;
        }
        while self.staged.len() < want && i < pieces.len() {
            let (base, len) = pieces[i];
            let take = ((len as usize - skip).min(want - self.staged.len())) as u64;
            // An empty piece is not looked at (its address may be null).
            if take > 0
                && let Err((n, e)) = read(&mut self.staged, base + skip as u64, take)
            {
                self.hole = Some((pos + n, e));
                break;
            }
            pos += take as usize;
            skip = 0;
            i += 1;
        }
        self.start + self.staged.len()
    }

    /// All of the write's bytes at once (a message goes whole), or the
    /// error of the hole they meet. Call with no lock held.
    pub fn whole(&mut self) -> Result<&[u8], Errno> {
        let (pieces, read) = match self.src {
            Source::Kernel(b) => return Ok(b),
            Source::User { pieces, read } => (pieces, read),
        };
        if self.hole.is_none() && (self.start != 0 || self.staged.len() < self.total) {
            self.staged.clear();
            self.start = 0;
            for &(base, len) in pieces {
                if len > 0
                    && let Err((_, e)) = read(&mut self.staged, base, len)
                {
                    self.hole = Some((self.staged.len(), e));
                    break;
                }
            }
        }
        match self.hole {
            Some((_, e)) => Err(e),
            None => Ok(&self.staged),
        }
    }

    /// The bytes `[off, off + n)`, staged by [`stage`](Self::stage).
    pub fn bytes(&self, off: usize, n: usize) -> &[u8] {
        match self.src {
            Source::Kernel(b) => &b[off..off + n],
            Source::User { .. } => &self.staged[off - self.start..off - self.start + n],
        }
    }

    /// The error of the hole a write stopped at, if it met one.
    pub fn fault(&self) -> Option<Errno> {
        self.hole.map(|h| h.1)
    }

    /// The result of a write that took `done` bytes and then stopped at a
    /// hole: the count, or the hole's error if nothing went.
    pub fn stopped(&self, done: usize) -> Result<usize, Errno> {
        match self.fault() {
            Some(e) if done == 0 => Err(e),
            _ => Ok(done),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake program memory: bytes are their address mod 251, and
    /// addresses at or past 0x10_0000 + HOLE are unmapped.
    const HOLE: u64 = 3 << 20;
    fn read(v: &mut Vec<u8>, addr: u64, len: u64) -> Result<(), (usize, Errno)> {
        if addr < 0x1000 {
            return Err((0, Errno::EFAULT));
        }
        let end = (addr + len).min(0x10_0000 + HOLE);
        let n = end.saturating_sub(addr);
        v.extend((addr..addr + n).map(|a| (a % 251) as u8));
        if n == len {
            Ok(())
        } else {
            Err((n as usize, Errno::EFAULT))
        }
    }

    #[test]
    fn stages_windows_across_pieces_in_order() {
        let pieces = [(0x10_0000, 5), (0, 0), (0x10_1000, 2 << 20)];
        let mut g = Gather::user(&pieces, read);
        assert_eq!(g.len(), 5 + (2 << 20));
        let mut off = 0;
        let mut seen = Vec::new();
        while off < g.len() {
            let end = g.stage(off);
            assert!(end > off);
            let n = (end - off).min(7000);
            seen.extend_from_slice(g.bytes(off, n));
            off += n;
        }
        let mut want: Vec<u8> = (0x10_0000u64..0x10_0005).map(|a| (a % 251) as u8).collect();
        want.extend((0x10_1000u64..0x10_1000 + (2 << 20)).map(|a| (a % 251) as u8));
        assert!(seen == want);
        assert_eq!(g.fault(), None);
    }

    #[test]
    fn a_hole_ends_what_is_staged() {
        // The second piece runs into the hole 100 bytes in.
        let pieces = [(0x10_0000, 10), (0x10_0000 + HOLE - 100, 4096)];
        let mut g = Gather::user(&pieces, read);
        assert_eq!(g.stage(0), 110);
        assert_eq!(g.stage(50), 110);
        assert_eq!(g.fault(), Some(Errno::EFAULT));
        assert_eq!(g.stopped(0), Err(Errno::EFAULT));
        assert_eq!(g.stopped(4), Ok(4));
        let want: Vec<u8> = (90..100)
            .map(|i| ((0x10_0000 + HOLE - 100 + i) % 251) as u8)
            .collect();
        assert_eq!(g.bytes(100, 10), &want[..]);
    }

    #[test]
    fn a_message_is_whole_or_meets_its_hole() {
        let pieces = [(0x10_0000, 3), (0, 0), (0x20_0000, 2 << 20)];
        let mut g = Gather::user(&pieces, read);
        assert_eq!(g.stage(0), 1 << 20);
        assert_eq!(g.whole().map(<[u8]>::len), Ok(3 + (2 << 20)));
        let pieces = [(0x10_0000, 3), (0x10_0000 + HOLE - 5, 10)];
        let mut g = Gather::user(&pieces, read);
        assert_eq!(g.whole(), Err(Errno::EFAULT));
    }

    #[test]
    fn kernel_bytes_are_all_there() {
        let b = [1u8, 2, 3];
        let mut g = Gather::kernel(&b);
        assert_eq!(g.stage(0), 3);
        assert_eq!(g.bytes(1, 2), &[2, 3]);
    }
}
