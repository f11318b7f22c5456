//! Differential test of the descriptor table and eventfd:
//! `tests/progs/fddiff.c` runs the same random sequences of `eventfd2`,
//! `pipe2`, `memfd_create`, `dup`, `dup2`, `dup3`, `F_DUPFD` and
//! `F_DUPFD_CLOEXEC`, `F_GETFD`/`F_SETFD`, `F_GETFL`/`F_SETFL`, `close`,
//! `close_range`, `setrlimit(RLIMIT_NOFILE)` and eventfd reads, writes and
//! polls on the host and in a partition; every result, errno, descriptor
//! number and close-on-exec flag must be the same.
//!
//! A failing sequence is reported with its seed and the first line that
//! differs. `ASTRAEA_FDDIFF_SEEDS` and `ASTRAEA_FDDIFF_CALLS` size the
//! long run (`fddiff_stress`, ignored by default; `./x stress` runs it).

#[cfg(test)]
mod tests {
    use astraea_tests::*;

    /// Sequences and calls per sequence in the CI run.
    const CI_SEEDS: u32 = 1000;
    const CI_CALLS: u32 = 60;

    #[test]
    fn fddiff() {
        let Some(d) = Differ::build("fddiff", "ci") else {
            return;
        };
        d.differential(1, CI_SEEDS, CI_CALLS, None);
        d.remove();
    }

    /// The long run: `ASTRAEA_FDDIFF_SEEDS` sequences (default 5000) of
    /// `ASTRAEA_FDDIFF_CALLS` calls (default 80), from seed
    /// `ASTRAEA_FDDIFF_FIRST` (default 1000000).
    #[test]
    #[ignore]
    fn fddiff_stress() {
        let Some(d) = Differ::build("fddiff", "stress") else {
            return;
        };
        d.long_run(
            env_u64("ASTRAEA_FDDIFF_FIRST", 1_000_000),
            env_u64("ASTRAEA_FDDIFF_SEEDS", 5000),
            env_u64("ASTRAEA_FDDIFF_CALLS", 80) as u32,
            None,
        );
        d.remove();
    }
}
