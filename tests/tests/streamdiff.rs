//! Differential test of Unix stream socket pairs: `tests/progs/streamdiff.c`
//! runs the same random sequences of `socketpair`, `close`, `dup`, writes
//! (sizes around Linux's skb steps, bursts until `EAGAIN`), reads and
//! `MSG_PEEK` receives, `FIONREAD`/`SIOCOUTQ`, `poll`, `shutdown`,
//! `SO_SNDBUF` and `SO_ERROR` on the host and in a partition, and every line
//! must be the same: Linux charges each skb of a write (at most 36,544
//! bytes) its truesize against the sender's send buffer.
//!
//! A failing sequence is reported with its seed and the first line that
//! differs. `ASTRAEA_STREAMDIFF_SEEDS` and `ASTRAEA_STREAMDIFF_CALLS` size the
//! long run (`streamdiff_stress`, ignored by default; `./x stress` runs it).

#[cfg(test)]
mod tests {
    use astraea_tests::*;

    /// Sequences and calls per sequence in the CI run.
    const CI_SEEDS: u32 = 500;
    const CI_CALLS: u32 = 60;

    #[test]
    fn streamdiff() {
        let Some(d) = Differ::build("streamdiff", "ci") else {
            return;
        };
        d.differential(1, CI_SEEDS, CI_CALLS, None);
        d.remove();
    }

    /// The long run: `ASTRAEA_STREAMDIFF_SEEDS` sequences (default 5000) of
    /// `ASTRAEA_STREAMDIFF_CALLS` calls (default 80), from seed
    /// `ASTRAEA_STREAMDIFF_FIRST` (default 1000000).
    #[test]
    #[ignore]
    fn streamdiff_stress() {
        let Some(d) = Differ::build("streamdiff", "stress") else {
            return;
        };
        d.long_run(
            env_u64("ASTRAEA_STREAMDIFF_FIRST", 1_000_000),
            env_u64("ASTRAEA_STREAMDIFF_SEEDS", 5000),
            env_u64("ASTRAEA_STREAMDIFF_CALLS", 80) as u32,
            None,
        );
        d.remove();
    }
}
