//! Differential test of signals in one thread: `tests/progs/sigdiff.c`
//! runs the same random sequences of `sigaction` (handlers with
//! `SA_SIGINFO`, `SA_NODEFER`, `SA_ONSTACK`, `SA_RESETHAND`, masks;
//! `SIG_IGN`, `SIG_DFL`), `sigprocmask`, signals sent to itself by
//! `kill`, `tgkill`, `raise`, `sigqueue` and `rt_tgsigqueueinfo` (some
//! from inside handlers), `sigpending`, `sigtimedwait`, `sigsuspend` and
//! `sigaltstack`, waits cut short by a timer's signal (`EINTR` or
//! restarted) and signalfd reads on the host and in a partition, and
//! every line must be
//! the same: which handlers ran, in which order and nesting, under which
//! mask, on which stack, with which `siginfo`. Linux keeps the signals
//! sent to the process apart from each thread's own and takes the
//! thread's first.
//!
//! A failing sequence is reported with its seed and the first line that
//! differs. `ASTRAEA_SIGDIFF_SEEDS` and `ASTRAEA_SIGDIFF_CALLS` size the
//! long run (`sigdiff_stress`, ignored by default; `./x stress` runs it).

#[cfg(test)]
mod tests {
    use astraea_tests::*;

    /// Sequences and calls per sequence in the CI run.
    const CI_SEEDS: u32 = 500;
    const CI_CALLS: u32 = 60;

    #[test]
    fn sigdiff() {
        let Some(d) = Differ::build("sigdiff", "ci") else {
            return;
        };
        d.differential(1, CI_SEEDS, CI_CALLS, None);
        d.remove();
    }

    /// The long run: `ASTRAEA_SIGDIFF_SEEDS` sequences (default 5000) of
    /// `ASTRAEA_SIGDIFF_CALLS` calls (default 80), from seed
    /// `ASTRAEA_SIGDIFF_FIRST` (default 1000000).
    #[test]
    #[ignore]
    fn sigdiff_stress() {
        let Some(d) = Differ::build("sigdiff", "stress") else {
            return;
        };
        d.long_run(
            env_u64("ASTRAEA_SIGDIFF_FIRST", 1_000_000),
            env_u64("ASTRAEA_SIGDIFF_SEEDS", 5000),
            env_u64("ASTRAEA_SIGDIFF_CALLS", 80) as u32,
            None,
        );
        d.remove();
    }
}
