//! Booting partitions with the real `astraea` binary on real KVM.

#[cfg(test)]
mod tests {
    use astraea_tests::*;

    #[test]
    fn boots_prints_banner_and_exits_zero() {
        if !kvm_available() {
            return;
        }
        let r = astraea_cmd(&["run"]);
        assert_eq!(r.code, 0, "{r:?}");
        assert!(r.stdout.starts_with("Astraea "), "banner missing: {r:?}");
        assert!(
            r.stdout.contains("partition up, 512 MiB RAM, 1 vCPU"),
            "{r:?}"
        );
        assert_eq!(
            r.stdout.lines().count(),
            1,
            "stdout carries only the banner: {r:?}"
        );
        assert!(
            r.stderr.is_empty(),
            "nothing on stderr at the default log level: {r:?}"
        );
    }

    #[test]
    fn boots_with_pvm_native_mode_turned_off() {
        if !kvm_available() {
            return;
        }
        // On PVM hosts this runs the kernel in the host's emulator; elsewhere
        // the variable changes nothing. Either way the partition must work.
        let r = astraea_cmd_env(&["run", "--log", "info"], &[("ASTRAEA_PVM_NATIVE", "0")]);
        assert_eq!(r.code, 0, "{r:?}");
        assert!(r.stdout.starts_with("Astraea "), "{r:?}");
        assert!(!r.stderr.contains("running natively"), "{r:?}");
    }

    #[test]
    fn kernel_log_goes_to_stderr_not_stdout() {
        if !kvm_available() {
            return;
        }
        let k = kernel("astraea-kernel");
        let r = astraea_cmd(&[
            "run",
            "--kernel",
            k.to_str().unwrap(),
            "--log",
            "info",
            "--mem",
            "256M",
        ]);
        assert_eq!(r.code, 0, "{r:?}");
        assert!(
            r.stderr.contains("booted in"),
            "kernel log on stderr: {r:?}"
        );
        assert!(r.stderr.contains("256 MiB RAM"), "{r:?}");
        assert!(!r.stdout.contains("INFO"), "no log lines on stdout: {r:?}");
    }

    #[test]
    fn in_partition_tests_pass() {
        if !kvm_available() {
            return;
        }
        let r = ktest(&[]);
        let results: Vec<&str> = r
            .stdout
            .lines()
            .filter(|l| l.starts_with("test ") && !l.starts_with("test result"))
            .collect();
        assert!(results.len() >= 10, "too few in-partition tests ran: {r:?}");
        for line in &results {
            assert!(
                line.contains("... ok"),
                "in-partition test failed: {line}\n{r:?}"
            );
        }
        assert!(r.stdout.contains("test result: ok."), "{r:?}");
        assert_eq!(r.code, 0, "{r:?}");
    }

    #[test]
    fn exit_status_propagates() {
        if !kvm_available() {
            return;
        }
        assert_eq!(ktest(&["exit", "0"]).code, 0);
        assert_eq!(ktest(&["exit", "7"]).code, 7);
        assert_eq!(ktest(&["exit", "255"]).code, 255);
        // Like a Linux process, only the low 8 bits survive.
        assert_eq!(ktest(&["exit", "300"]).code, 300 & 0xff);
    }

    #[test]
    fn a_lock_reentered_or_held_while_sleeping_panics_naming_both_places() {
        if !kvm_available() {
            return;
        }
        let r = ktest(&["lock", "reenter"]);
        assert_eq!(r.code, 134, "{r:?}");
        assert!(
            r.stderr
                .contains("lock re-entered: taken at tests/ktest/src/main.rs:")
                && r.stderr
                    .contains("while already held (taken at tests/ktest/src/main.rs:"),
            "{r:?}"
        );
        let r = ktest(&["lock", "sleep"]);
        assert_eq!(r.code, 134, "{r:?}");
        assert!(
            r.stderr.contains("a thread switch at")
                && r.stderr
                    .contains("while holding the lock taken at tests/ktest/src/main.rs:"),
            "{r:?}"
        );
    }

    #[test]
    fn panic_gives_134_and_its_message() {
        if !kvm_available() {
            return;
        }
        let r = ktest(&["panic", "the", "sky", "is", "falling"]);
        assert_eq!(r.code, 134, "{r:?}");
        assert!(
            r.stderr
                .contains("partition kernel panic: the sky is falling"),
            "{r:?}"
        );
        assert!(
            r.stderr.contains("tests/ktest/src/main.rs:"),
            "panic location: {r:?}"
        );
    }

    #[test]
    fn exceptions_are_reported_with_vector_error_rip_and_cr2() {
        if !kvm_available() {
            return;
        }
        for (kind, name) in [
            ("ud", "#UD invalid opcode (vector 6)"),
            ("de", "#DE divide error (vector 0)"),
            ("gp", "#GP general protection (vector 13)"),
            ("pf", "#PF page fault (vector 14)"),
        ] {
            let r = ktest(&["fault", kind]);
            assert_eq!(r.code, 134, "{kind}: {r:?}");
            assert!(r.stderr.contains(name), "{kind}: {r:?}");
            for key in ["error=", "rip=", "cr2=", "rsp="] {
                assert!(r.stderr.contains(key), "{kind} lacks {key}: {r:?}");
            }
        }
        let r = ktest(&["fault", "pf"]);
        assert!(
            r.stderr.contains("cr2=0x7ead00000000"),
            "exact faulting address: {r:?}"
        );
        assert!(
            r.stderr.contains("not-present page on read in kernel mode"),
            "{r:?}"
        );
    }

    #[test]
    fn null_pointer_faults() {
        if !kvm_available() {
            return;
        }
        let r = ktest(&["fault", "null"]);
        assert_eq!(r.code, 134, "{r:?}");
        assert!(
            r.stderr.contains("#PF page fault") && r.stderr.contains("cr2=0x8 "),
            "{r:?}"
        );
    }

    #[test]
    fn kernel_stack_overflow_hits_the_guard_page() {
        if !kvm_available() {
            return;
        }
        let r = ktest(&["fault", "stack"]);
        assert_eq!(r.code, 134, "{r:?}");
        assert!(r.stderr.contains("#DF double fault"), "{r:?}");
        assert!(r.stderr.contains("stack overflow"), "{r:?}");
    }

    #[test]
    fn triple_fault_ends_with_139_and_a_register_dump() {
        if !kvm_available() {
            return;
        }
        let r = ktest(&["fault", "triple"]);
        assert_eq!(r.code, 139, "{r:?}");
        assert!(r.stderr.contains("partition crashed"), "{r:?}");
        for reg in ["rip ", "rsp ", "rflags ", "cr3 ", "efer "] {
            assert!(r.stderr.contains(reg), "dump lacks {reg}: {r:?}");
        }
    }

    #[test]
    fn unexpected_vm_exit_ends_with_139_and_a_register_dump() {
        if !kvm_available() {
            return;
        }
        let r = ktest(&["fault", "mmio"]);
        assert_eq!(r.code, 139, "{r:?}");
        assert!(
            r.stderr.contains("guest-physical address 0xd0100000"),
            "{r:?}"
        );
        assert!(r.stderr.contains("rip "), "{r:?}");
    }

    #[test]
    fn vcpu_sampler_reports_the_program_and_library_os_functions() {
        if !kvm_available() {
            return;
        }
        let out = std::env::temp_dir().join(format!("astraea-samples-{}.txt", std::process::id()));
        let _ = std::fs::remove_file(&out);
        // A shell loop: program code, with the system calls of its output.
        let r = astraea_cmd_env(
            &[
                "run",
                "--",
                "/bin/sh",
                "-c",
                "i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done; echo $i",
            ],
            &[("ASTRAEA_SAMPLE", out.to_str().unwrap())],
        );
        assert_eq!(r.code, 0, "{r:?}");
        // The sampler's own line goes to stderr; stdout is the program's.
        assert_eq!(r.stdout, "400000\n", "{r:?}");
        assert!(r.stderr.contains("vCPU samples written to"), "{r:?}");
        let report = std::fs::read_to_string(&out).expect("the sampler's report");
        let _ = std::fs::remove_file(&out);
        let taken = report
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("# vCPU samples: "))
            .and_then(|l| l.split(' ').next())
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or_else(|| panic!("no sample count: {report}"));
        assert!(taken >= 20, "{taken} samples: {report}");
        let program = report
            .lines()
            .find_map(|l| l.strip_prefix("# program (user addresses): "))
            .and_then(|l| l.split(' ').next())
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or_else(|| panic!("no program count: {report}"));
        assert!(program > 0, "the shell's loop was never sampled: {report}");
        assert!(report.contains("## library OS by function"), "{report}");
        if program < taken {
            assert!(
                report.contains("astraea_libos::") || report.contains("trap_"),
                "library-OS samples without names (addr2line missing?): {report}"
            );
        }
    }
}
