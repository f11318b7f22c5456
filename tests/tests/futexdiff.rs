//! Differential test of `futex(2)`: `tests/progs/futexdiff.c` runs the
//! same random sequences of every futex operation but the requeue-PI pair
//! (waits whose time is already up, wakes, requeues, `WAKE_OP` encodings,
//! priority-inheritance locks, trylocks and unlocks on words holding the
//! caller's, a live, an exited and a made-up thread's ID, with `WAITERS`
//! and `OWNER_DIED`), with the private and realtime-clock flags and
//! addresses that are NULL, unaligned, unmapped or read-only, on the host
//! and in a partition; every result, errno and word afterwards must be
//! the same.
//!
//! A failing sequence is reported with its seed and the first line that
//! differs. `ASTRAEA_FUTEXDIFF_SEEDS` and `ASTRAEA_FUTEXDIFF_CALLS` size the
//! long run (`futexdiff_stress`, ignored by default; `./x stress` runs it).

#[cfg(test)]
mod tests {
    use astraea_tests::*;

    /// Sequences and calls per sequence in the CI run.
    const CI_SEEDS: u32 = 3000;
    const CI_CALLS: u32 = 60;

    #[test]
    fn futexdiff() {
        let Some(d) = Differ::build("futexdiff", "ci") else {
            return;
        };
        d.differential(1, CI_SEEDS, CI_CALLS, None);
        d.remove();
    }

    /// The long run: `ASTRAEA_FUTEXDIFF_SEEDS` sequences (default 5000) of
    /// `ASTRAEA_FUTEXDIFF_CALLS` calls (default 80), from seed
    /// `ASTRAEA_FUTEXDIFF_FIRST` (default 1000000).
    #[test]
    #[ignore]
    fn futexdiff_stress() {
        let Some(d) = Differ::build("futexdiff", "stress") else {
            return;
        };
        d.long_run(
            env_u64("ASTRAEA_FUTEXDIFF_FIRST", 1_000_000),
            env_u64("ASTRAEA_FUTEXDIFF_SEEDS", 5000),
            env_u64("ASTRAEA_FUTEXDIFF_CALLS", 80) as u32,
            None,
        );
        d.remove();
    }
}
