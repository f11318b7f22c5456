//! Differential test of Unix datagram and seqpacket socket pairs:
//! `tests/progs/msgdiff.c` runs the same random sequences of `socketpair`
//! (`SOCK_DGRAM`, `SOCK_SEQPACKET`, `SOCK_RAW`), `close`, `dup`, sends
//! (`send`, `write`, `sendmsg`, empty ones, sizes around Linux's charge
//! steps and the send buffer's limit, bursts until `EAGAIN`), receives
//! (short buffers, `MSG_PEEK`, `MSG_TRUNC`, `read` of nothing),
//! `FIONREAD`/`SIOCOUTQ`, `poll`, `shutdown`, `SO_SNDBUF`, `SO_ERROR` and
//! names on the host and in a partition, and every line must be the same.
//!
//! A failing sequence is reported with its seed and the first line that
//! differs. `ASTRAEA_MSGDIFF_SEEDS` and `ASTRAEA_MSGDIFF_CALLS` size the long
//! run (`msgdiff_stress`, ignored by default; `./x stress` runs it).

#[cfg(test)]
mod tests {
    use astraea_tests::*;

    /// Sequences and calls per sequence in the CI run.
    const CI_SEEDS: u32 = 500;
    const CI_CALLS: u32 = 60;

    #[test]
    fn msgdiff() {
        let Some(d) = Differ::build("msgdiff", "ci") else {
            return;
        };
        d.differential(1, CI_SEEDS, CI_CALLS, None);
        d.remove();
    }

    /// The long run: `ASTRAEA_MSGDIFF_SEEDS` sequences (default 5000) of
    /// `ASTRAEA_MSGDIFF_CALLS` calls (default 80), from seed
    /// `ASTRAEA_MSGDIFF_FIRST` (default 1000000).
    #[test]
    #[ignore]
    fn msgdiff_stress() {
        let Some(d) = Differ::build("msgdiff", "stress") else {
            return;
        };
        d.long_run(
            env_u64("ASTRAEA_MSGDIFF_FIRST", 1_000_000),
            env_u64("ASTRAEA_MSGDIFF_SEEDS", 5000),
            env_u64("ASTRAEA_MSGDIFF_CALLS", 80) as u32,
            None,
        );
        d.remove();
    }
}
