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

#[cfg(test)]
mod tests {
    use super::truesize;

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
