//! What Linux charges a socket's send buffer for a message it has queued.

/// What Linux charges a sender for a message of `len` bytes (its skb's
/// `truesize`): a head from `kmalloc` (a power of two holding the aligned
/// bytes and the shared info), the `sk_buff` itself, and page fragments
/// for what passes `SKB_MAX_ALLOC` (`unix_dgram_sendmsg`).
pub fn truesize(len: usize) -> usize {
    const PAGE: usize = 4096;
    const SHINFO: usize = 320;
    const SKB: usize = 256;
    const MAX_ALLOC: usize = 4 * PAGE - SHINFO;
    const MAX_FRAGS: usize = 17;
    let frags = if len > MAX_ALLOC {
        (len - MAX_ALLOC)
            .min(MAX_FRAGS * PAGE)
            .next_multiple_of(PAGE)
    } else {
        0
    };
    let head = (len - frags).next_multiple_of(64) + SHINFO;
    head.next_power_of_two() + SKB + frags
}

/// The next skb of a Unix stream write with `remaining` bytes left, for a
/// sender whose send buffer is `sndbuf`: its length and its truesize, as
/// `unix_stream_sendmsg` (Linux 6.18) makes it — at most half the buffer
/// less 64 bytes ("two messages in the pipe") and at most a page's head
/// (3,776 bytes) plus 32 KiB of page fragments; the part past the head
/// (rounded up to a page, at most the whole) goes in fragments, each page
/// charged whole.
pub fn stream_skb(remaining: usize, sndbuf: usize) -> (usize, usize) {
    const PAGE: usize = 4096;
    const SHINFO: usize = 320;
    const SKB: usize = 256;
    const MAX_HEAD: usize = PAGE - SHINFO;
    const FRAGS: usize = 32 * 1024;
    let size = remaining
        .min((sndbuf / 2).saturating_sub(64).max(1))
        .min(MAX_HEAD + FRAGS);
    let data = size
        .saturating_sub(MAX_HEAD)
        .next_multiple_of(PAGE)
        .min(size);
    let head = (size - data).next_multiple_of(64) + SHINFO;
    // Fragments are whole pages, charged whole (`alloc_skb_with_frags`).
    (
        size,
        head.next_power_of_two() + SKB + data.next_multiple_of(PAGE),
    )
}

#[cfg(test)]
mod tests {
    use super::{stream_skb, truesize};

    /// Writes of `len` bytes a 212,992-byte send buffer takes before
    /// `EAGAIN`, and the bytes: each skb goes while the charge so far is
    /// below the buffer.
    fn stream_fill(len: usize) -> (usize, usize) {
        let (mut wmem, mut writes, mut bytes) = (0, 0, 0);
        loop {
            let mut done = 0;
            while done < len {
                if wmem >= 212_992 {
                    return (writes + usize::from(done > 0), bytes + done);
                }
                let (n, t) = stream_skb(len - done, 212_992);
                wmem += t;
                done += n;
            }
            writes += 1;
            bytes += len;
        }
    }

    /// As measured on the host (Linux 6.18): non-blocking writes of each
    /// size into a fresh `socketpair(AF_UNIX, SOCK_STREAM)` until `EAGAIN`.
    #[test]
    fn stream_skbs_match_linux() {
        for (len, writes, bytes) in [
            (1, 278, 278),
            (100, 278, 27_800),
            (1000, 93, 93_000),
            (4096, 44, 180_224),
            (5000, 34, 170_000),
            (16_384, 13, 212_992),
            (65_536, 4, 233_152),
            (106_000, 2, 212_000),
            (200_000, 2, 236_544),
            (1_048_576, 1, 219_264),
            (3777, 44, 166_188),
        ] {
            assert_eq!(stream_fill(len), (writes, bytes), "writes of {len} bytes");
        }
    }

    /// The charges Linux 6.18 makes, as measured on the host: the number of
    /// messages of each size a 212,992-byte send buffer takes before
    /// `EAGAIN` (`tests/progs/unixmsg.c` checks one of them end to end).
    #[test]
    fn truesize_matches_linux() {
        let fits = |len: usize| 212_992usize.div_ceil(truesize(len));
        for (len, n) in [
            (0, 278),
            (192, 278),
            (300, 167),
            (700, 167),
            (1000, 93),
            (2000, 49),
            (4000, 26),
            (7872, 26),
            (8000, 13),
            (16064, 13),
            (16065, 11),
            (20000, 11),
            (50000, 4),
            (100_000, 3),
            (150_000, 2),
            (212_960, 1),
        ] {
            assert_eq!(fits(len), n, "messages of {len} bytes");
        }
    }
}
