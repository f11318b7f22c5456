//! Differential test of scheduling attributes: `tests/progs/scheddiff.c`
//! runs the same random sequences of `sched_setscheduler`/`getscheduler`,
//! `sched_setparam`/`getparam`, `sched_get_priority_min`/`max`,
//! `sched_rr_get_interval`, `sched_setattr`/`getattr`,
//! `getpriority`/`setpriority` and `ioprio_get`/`ioprio_set` on the host
//! (without capabilities, `RLIMIT_NICE` 0) and in a partition; every result,
//! errno and attribute read back must be the same.
//!
//! A failing sequence is reported with its seed and the first line that
//! differs. `ASTRAEA_SCHEDDIFF_SEEDS` and `ASTRAEA_SCHEDDIFF_CALLS` size the
//! long run (`scheddiff_stress`, ignored by default; `./x stress` runs it).

#[cfg(test)]
mod tests {
    use astraea_tests::*;

    /// Sequences and calls per sequence in the CI run.
    const CI_SEEDS: u32 = 400;
    const CI_CALLS: u32 = 60;

    #[test]
    fn scheddiff() {
        let Some(d) = Differ::build("scheddiff", "ci") else {
            return;
        };
        d.differential(1, CI_SEEDS, CI_CALLS, None);
        d.remove();
    }

    /// The long run: `ASTRAEA_SCHEDDIFF_SEEDS` sequences (default 5000) of
    /// `ASTRAEA_SCHEDDIFF_CALLS` calls (default 80), from seed
    /// `ASTRAEA_SCHEDDIFF_FIRST` (default 1000000).
    #[test]
    #[ignore]
    fn scheddiff_stress() {
        let Some(d) = Differ::build("scheddiff", "stress") else {
            return;
        };
        d.long_run(
            env_u64("ASTRAEA_SCHEDDIFF_FIRST", 1_000_000),
            env_u64("ASTRAEA_SCHEDDIFF_SEEDS", 5000),
            env_u64("ASTRAEA_SCHEDDIFF_CALLS", 80) as u32,
            None,
        );
        d.remove();
    }
}
