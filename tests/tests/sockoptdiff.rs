//! Differential test of socket options: `tests/progs/sockoptdiff.c` runs
//! the same random sequences of `setsockopt` and `getsockopt` — socket,
//! TCP, IPv4 and IPv6 options, known and unknown, with short, exact and long
//! lengths and values at and past their limits — on TCP and UDP sockets
//! over IPv4 and IPv6 and on Unix stream, datagram and seqpacket sockets,
//! on the host (without capabilities, as a partition's program) and in a
//! partition; every result, errno, length and value must be the same.
//!
//! A failing sequence is reported with its seed and the first line that
//! differs. `ASTRAEA_SOCKOPTDIFF_SEEDS` and `ASTRAEA_SOCKOPTDIFF_CALLS` size the
//! long run (`sockoptdiff_stress`, ignored by default; `./x stress` runs it).

#[cfg(test)]
mod tests {
    use astraea_tests::*;

    /// Sequences and calls per sequence in the CI run.
    const CI_SEEDS: u32 = 2000;
    const CI_CALLS: u32 = 60;

    #[test]
    fn sockoptdiff() {
        let Some(d) = Differ::build("sockoptdiff", "ci") else {
            return;
        };
        d.differential(1, CI_SEEDS, CI_CALLS, None);
        d.remove();
    }

    /// The long run: `ASTRAEA_SOCKOPTDIFF_SEEDS` sequences (default 5000) of
    /// `ASTRAEA_SOCKOPTDIFF_CALLS` calls (default 80), from seed
    /// `ASTRAEA_SOCKOPTDIFF_FIRST` (default 1000000).
    #[test]
    #[ignore]
    fn sockoptdiff_stress() {
        let Some(d) = Differ::build("sockoptdiff", "stress") else {
            return;
        };
        d.long_run(
            env_u64("ASTRAEA_SOCKOPTDIFF_FIRST", 1_000_000),
            env_u64("ASTRAEA_SOCKOPTDIFF_SEEDS", 5000),
            env_u64("ASTRAEA_SOCKOPTDIFF_CALLS", 80) as u32,
            None,
        );
        d.remove();
    }
}
