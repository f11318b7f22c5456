//! Differential test of pipes: `tests/progs/pipediff.c` runs the same
//! random sequences of `pipe2`, `close`, `dup`, writes (`write`, `writev`,
//! sizes around a page and `PIPE_BUF`, bursts until `EAGAIN`), reads,
//! `FIONREAD`, `poll`, `F_SETPIPE_SZ`/`F_GETPIPE_SZ` and `F_GETFL` on the
//! host and in a partition, and every line must be the same: Linux's
//! pipe is a ring of page buffers (a write's odd part merges into the last
//! one; room is counted in buffers, not bytes).
//!
//! A failing sequence is reported with its seed and the first line that
//! differs. `ASTRAEA_PIPEDIFF_SEEDS` and `ASTRAEA_PIPEDIFF_CALLS` size the
//! long run (`pipediff_stress`, ignored by default; `./x stress` runs it).

#[cfg(test)]
mod tests {
    use astraea_tests::*;

    /// Sequences and calls per sequence in the CI run.
    const CI_SEEDS: u32 = 500;
    const CI_CALLS: u32 = 60;

    #[test]
    fn pipediff() {
        let Some(d) = Differ::build("pipediff", "ci") else {
            return;
        };
        d.differential(1, CI_SEEDS, CI_CALLS, None);
        d.remove();
    }

    /// The long run: `ASTRAEA_PIPEDIFF_SEEDS` sequences (default 5000) of
    /// `ASTRAEA_PIPEDIFF_CALLS` calls (default 80), from seed
    /// `ASTRAEA_PIPEDIFF_FIRST` (default 1000000).
    #[test]
    #[ignore]
    fn pipediff_stress() {
        let Some(d) = Differ::build("pipediff", "stress") else {
            return;
        };
        d.long_run(
            env_u64("ASTRAEA_PIPEDIFF_FIRST", 1_000_000),
            env_u64("ASTRAEA_PIPEDIFF_SEEDS", 5000),
            env_u64("ASTRAEA_PIPEDIFF_CALLS", 80) as u32,
            None,
        );
        d.remove();
    }
}
