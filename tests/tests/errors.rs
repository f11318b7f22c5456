//! Every way `astraea run` can fail to start a partition gives one clear line
//! and exit status 125.

#[cfg(test)]
mod tests {
    use astraea_tests::*;

    fn assert_setup_error(r: &Run, needle: &str) {
        assert_eq!(r.code, 125, "{r:?}");
        assert!(r.stderr.contains(needle), "expected {needle:?}: {r:?}");
        assert!(r.stderr.starts_with("astraea: "), "{r:?}");
        assert!(r.stdout.is_empty(), "{r:?}");
    }

    #[test]
    fn missing_kvm_device() {
        let r = astraea_cmd_env(&["run"], &[("ASTRAEA_KVM_DEVICE", "/nonexistent/kvm")]);
        assert_setup_error(&r, "/nonexistent/kvm does not exist");
        assert!(r.stderr.contains("modprobe"), "says what to do: {r:?}");
    }

    #[test]
    fn missing_kernel() {
        let r = astraea_cmd(&["run", "--kernel", "/nonexistent/kernel.elf"]);
        assert_setup_error(&r, "cannot read kernel image /nonexistent/kernel.elf");
    }

    #[test]
    fn kernel_that_is_not_elf() {
        let dir = std::env::temp_dir().join(format!("astraea-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("not-a-kernel");
        std::fs::write(&f, b"hello, I am text").unwrap();
        let r = astraea_cmd(&["run", "--kernel", f.to_str().unwrap()]);
        assert_setup_error(&r, "is not a bootable kernel image: it is not an ELF file");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn elf_that_is_not_an_astraea_kernel() {
        // A Linux program: a valid ELF without the entry-version note.
        let r = astraea_cmd(&["run", "--kernel", "/bin/true"]);
        assert_setup_error(&r, "is not a bootable kernel image");
    }

    #[test]
    fn memory_too_small() {
        let r = astraea_cmd(&["run", "--mem", "4M"]);
        assert_setup_error(&r, "--mem 4 MiB is too small");
    }

    #[test]
    fn memory_unparsable() {
        let r = astraea_cmd(&["run", "--mem", "lots"]);
        assert_setup_error(&r, "invalid memory size \"lots\"");
    }

    #[test]
    fn prefault_unparsable() {
        let r = astraea_cmd(&["run", "--prefault", "12Q"]);
        assert_setup_error(&r, "--prefault \"12Q\" is not understood");
    }

    #[test]
    fn memory_too_large() {
        let r = astraea_cmd(&["run", "--mem", "100G"]);
        assert_setup_error(&r, "too large");
    }

    #[test]
    fn help_explains_exit_status() {
        let r = astraea_cmd(&["run", "--help"]);
        assert_eq!(r.code, 0, "{r:?}");
        for word in ["--kernel", "--mem", "--cpus", "--log", "--timings"] {
            assert!(r.stdout.contains(word), "help lacks {word}: {r:?}");
        }
        let r = astraea_cmd(&["--help"]);
        assert!(r.stdout.contains("Exit status"), "{r:?}");
    }
}
