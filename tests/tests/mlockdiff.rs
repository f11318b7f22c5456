//! Differential test of memory locking: `tests/progs/mlockdiff.c` runs the
//! same random sequences of `mlock`, `mlock2`, `munlock`, `mlockall`,
//! `munlockall`, `MAP_LOCKED`, `RLIMIT_MEMLOCK` changes, `RLIMIT_AS` and
//! `RLIMIT_DATA` set just above what is mapped, and of what
//! locking changes elsewhere (`madvise` refusing locked areas, `mremap`
//! growing a locked mapping, `MAP_FIXED` over locked pages) over mappings
//! of every kind, on the host (without capabilities) and in a partition;
//! every result, errno, page's contents and the locked size (`VmLck`) after
//! every call must be the same.
//!
//! A failing sequence is reported with its seed and the first line that
//! differs. `ASTRAEA_MLOCKDIFF_SEEDS` and `ASTRAEA_MLOCKDIFF_CALLS` size the
//! long run (`mlockdiff_stress`, ignored by default; `./x stress` runs it).

#[cfg(test)]
mod tests {
    use astraea_tests::*;

    /// Sequences and calls per sequence in the CI run.
    const CI_SEEDS: u32 = 800;
    const CI_CALLS: u32 = 60;

    #[test]
    fn mlockdiff() {
        let Some(d) = Differ::build("mlockdiff", "ci") else {
            return;
        };
        d.differential(1, CI_SEEDS, CI_CALLS, None);
        d.remove();
    }

    /// The long run: `ASTRAEA_MLOCKDIFF_SEEDS` sequences (default 5000) of
    /// `ASTRAEA_MLOCKDIFF_CALLS` calls (default 80), from seed
    /// `ASTRAEA_MLOCKDIFF_FIRST` (default 1000000).
    #[test]
    #[ignore]
    fn mlockdiff_stress() {
        let Some(d) = Differ::build("mlockdiff", "stress") else {
            return;
        };
        d.long_run(
            env_u64("ASTRAEA_MLOCKDIFF_FIRST", 1_000_000),
            env_u64("ASTRAEA_MLOCKDIFF_SEEDS", 5000),
            env_u64("ASTRAEA_MLOCKDIFF_CALLS", 80) as u32,
            None,
        );
        d.remove();
    }
}
