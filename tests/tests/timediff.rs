//! Differential test of clocks and timers: `tests/progs/timediff.c` runs
//! the same random sequences of timerfd, POSIX timer (every clock, the
//! CPU-time ones included; every notification; the signal an expired one
//! sends), CPU-time itimer, `clock_getres`/`gettime`/`settime` and
//! `clock_nanosleep`/`nanosleep` calls on the host (without capabilities)
//! and in a partition; every result and errno must be the same. Nothing it
//! prints depends on timing.
//!
//! A failing sequence is reported with its seed and the first line that
//! differs. `ASTRAEA_TIMEDIFF_SEEDS` and `ASTRAEA_TIMEDIFF_CALLS` size the
//! long run (`timediff_stress`, ignored by default; `./x stress` runs it).

#[cfg(test)]
mod tests {
    use astraea_tests::*;

    /// Sequences and calls per sequence in the CI run.
    const CI_SEEDS: u32 = 1000;
    const CI_CALLS: u32 = 60;

    #[test]
    fn timediff() {
        let Some(d) = Differ::build("timediff", "ci") else {
            return;
        };
        d.differential(1, CI_SEEDS, CI_CALLS, None);
        d.remove();
    }

    /// The long run: `ASTRAEA_TIMEDIFF_SEEDS` sequences (default 5000) of
    /// `ASTRAEA_TIMEDIFF_CALLS` calls (default 80), from seed
    /// `ASTRAEA_TIMEDIFF_FIRST` (default 1000000).
    #[test]
    #[ignore]
    fn timediff_stress() {
        let Some(d) = Differ::build("timediff", "stress") else {
            return;
        };
        d.long_run(
            env_u64("ASTRAEA_TIMEDIFF_FIRST", 1_000_000),
            env_u64("ASTRAEA_TIMEDIFF_SEEDS", 5000),
            env_u64("ASTRAEA_TIMEDIFF_CALLS", 80) as u32,
            None,
        );
        d.remove();
    }
}
