//! Threads, preemption and sleeping inside a partition.

#[cfg(test)]
mod tests {
    use astraea_tests::*;

    #[test]
    fn hundred_threads_thousand_yields_each() {
        if !kvm_available() {
            return;
        }
        let r = ktest(&["threads", "100", "1000"]);
        assert_eq!(r.code, 0, "{r:?}");
        assert_eq!(field(&r.stdout, "yields"), Some(100_000), "{r:?}");
        assert!(
            field(&r.stdout, "switches").unwrap_or(0) >= 100_000,
            "{r:?}"
        );
    }

    #[test]
    fn spinning_thread_is_preempted_by_the_timer() {
        if !kvm_available() {
            return;
        }
        let r = ktest(&["spin"]);
        assert_eq!(r.code, 0, "the main thread never ran again: {r:?}");
        assert!(r.stdout.contains("spinner preempted"), "{r:?}");
    }

    #[test]
    fn sleep_10ms_wakes_within_bound() {
        if !kvm_available() {
            return;
        }
        let r = ktest(&["sleep", "10"]);
        assert_eq!(r.code, 0, "{r:?}");
        let us = field(&r.stdout, "slept_us").expect("slept_us");
        // Never early; late by at most one time slice plus slack for a loaded host.
        assert!(us >= 10_000, "woke early: {us} us");
        assert!(us < 60_000, "woke too late: {us} us");
    }
}
