//! Differential test of `prctl(2)`: `tests/progs/prctldiff.c` runs the
//! same random sequences of the options programs set and read back (the
//! thread's name, dumpable, the parent-death signal, keep-capabilities,
//! timer slack, child subreaper, no-new-privileges, THP disable, the
//! capability bounding set, seccomp's mode, anonymous memory names), with
//! valid and invalid values and unused arguments, on the host (without
//! capabilities) and in a partition; every result and errno must be the
//! same.
//!
//! A failing sequence is reported with its seed and the first line that
//! differs. `ASTRAEA_PRCTLDIFF_SEEDS` and `ASTRAEA_PRCTLDIFF_CALLS` size the
//! long run (`prctldiff_stress`, ignored by default; `./x stress` runs it).

#[cfg(test)]
mod tests {
    use astraea_tests::*;

    /// Sequences and calls per sequence in the CI run.
    const CI_SEEDS: u32 = 1000;
    const CI_CALLS: u32 = 60;

    #[test]
    fn prctldiff() {
        let Some(d) = Differ::build("prctldiff", "ci") else {
            return;
        };
        d.differential(1, CI_SEEDS, CI_CALLS, None);
        d.remove();
    }

    /// The long run: `ASTRAEA_PRCTLDIFF_SEEDS` sequences (default 5000) of
    /// `ASTRAEA_PRCTLDIFF_CALLS` calls (default 80), from seed
    /// `ASTRAEA_PRCTLDIFF_FIRST` (default 1000000).
    #[test]
    #[ignore]
    fn prctldiff_stress() {
        let Some(d) = Differ::build("prctldiff", "stress") else {
            return;
        };
        d.long_run(
            env_u64("ASTRAEA_PRCTLDIFF_FIRST", 1_000_000),
            env_u64("ASTRAEA_PRCTLDIFF_SEEDS", 5000),
            env_u64("ASTRAEA_PRCTLDIFF_CALLS", 80) as u32,
            None,
        );
        d.remove();
    }
}
