//! Differential test of what a process without capabilities may do
//! about its identity and the system: `tests/progs/privdiff.c` runs the
//! same random sequences of the `setuid` family, `setgroups`,
//! `personality` and the privileged calls (`mount`, `umount2`, `chroot`,
//! `pivot_root`, `settimeofday`, `clock_settime`, `sethostname`, `reboot`,
//! swap, accounting, modules, `kexec`, port I/O, `vhangup`) on the host,
//! capabilities dropped and checked, and in a partition; every result and
//! errno must be the same.
//!
//! A failing sequence is reported with its seed and the first line that
//! differs. `ASTRAEA_PRIVDIFF_SEEDS` and `ASTRAEA_PRIVDIFF_CALLS` size the
//! long run (`privdiff_stress`, ignored by default; `./x stress` runs it).

#[cfg(test)]
mod tests {
    use astraea_tests::*;

    /// Sequences and calls per sequence in the CI run.
    const CI_SEEDS: u32 = 500;
    const CI_CALLS: u32 = 60;

    #[test]
    fn privdiff() {
        let Some(d) = Differ::build("privdiff", "ci") else {
            return;
        };
        d.differential(1, CI_SEEDS, CI_CALLS, None);
        d.remove();
    }

    /// The long run: `ASTRAEA_PRIVDIFF_SEEDS` sequences (default 5000) of
    /// `ASTRAEA_PRIVDIFF_CALLS` calls (default 80), from seed
    /// `ASTRAEA_PRIVDIFF_FIRST` (default 1000000).
    #[test]
    #[ignore]
    fn privdiff_stress() {
        let Some(d) = Differ::build("privdiff", "stress") else {
            return;
        };
        d.long_run(
            env_u64("ASTRAEA_PRIVDIFF_FIRST", 1_000_000),
            env_u64("ASTRAEA_PRIVDIFF_SEEDS", 5000),
            env_u64("ASTRAEA_PRIVDIFF_CALLS", 80) as u32,
            None,
        );
        d.remove();
    }
}
