//! Differential test of UDP sockets: `tests/progs/udpdiff.c` runs the same
//! random sequences of `socket`, `bind` (port 0 and other sockets' ports),
//! `connect` (to another socket, to a port nothing listens on, `AF_UNSPEC`
//! to disconnect), `send`/`sendto` (zero-length too), `recvmsg` with short
//! buffers, `MSG_PEEK` and `MSG_TRUNC`, `shutdown`, names, `FIONREAD`,
//! `SO_ERROR` and `poll` on the host and in a partition (through the
//! gateway's `/net/udp`), and every line must be the same: what arrives,
//! what is dropped, the port unreachable errors a connected socket gets.
//! Each sequence is of one family (by its seed): IPv4, IPv6 at `::1`, or
//! IPv6 dual-stack sockets at IPv4-mapped addresses, as Java's are.
//!
//! A failing sequence is reported with its seed and the first line that
//! differs. `ASTRAEA_UDPDIFF_SEEDS` and `ASTRAEA_UDPDIFF_CALLS` size the long
//! run (`udpdiff_stress`, ignored by default; `./x stress` runs it).

#[cfg(test)]
mod tests {
    use astraea_tests::*;

    /// Sequences and calls per sequence in the CI run.
    const CI_SEEDS: u32 = 300;
    const CI_CALLS: u32 = 50;

    #[test]
    fn udpdiff() {
        let Some(d) = Differ::build("udpdiff", "ci") else {
            return;
        };
        d.differential(1, CI_SEEDS, CI_CALLS, None);
        d.remove();
    }

    /// The long run: `ASTRAEA_UDPDIFF_SEEDS` sequences (default 3000) of
    /// `ASTRAEA_UDPDIFF_CALLS` calls (default 80), from seed
    /// `ASTRAEA_UDPDIFF_FIRST` (default 1000000).
    #[test]
    #[ignore]
    fn udpdiff_stress() {
        let Some(d) = Differ::build("udpdiff", "stress") else {
            return;
        };
        d.long_run(
            env_u64("ASTRAEA_UDPDIFF_FIRST", 1_000_000),
            env_u64("ASTRAEA_UDPDIFF_SEEDS", 3000),
            env_u64("ASTRAEA_UDPDIFF_CALLS", 80) as u32,
            None,
        );
        d.remove();
    }
}
