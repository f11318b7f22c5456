//! A partition's files, console and environment through the built-in
//! gateway (the default of `astraea run`), over the in-process virtio-9p
//! transport.

mod common;

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::common::{check_files, seed_files};
    use std::process::{Command, Stdio};

    use astraea_tests::*;

    fn temp_export(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("astraea-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// Boots the test kernel's `9p-files` scenario with `dir` mounted at `/`.
    fn run_files(dir: &std::path::Path, read_only: bool) -> Run {
        let k = kernel("astraea-ktest");
        let ro = if read_only { ":ro" } else { "" };
        let mount = format!("{}:/{ro}", dir.display());
        astraea_cmd(&[
            "run",
            "--kernel",
            k.to_str().unwrap(),
            "--mount",
            &mount,
            "--",
            "9p-files",
        ])
    }

    #[test]
    fn partition_file_operations_reach_the_host() {
        if !kvm_available() {
            return;
        }
        let dir = temp_export("gw-files");
        seed_files(&dir);
        let r = run_files(&dir, false);
        check_files(&r, &dir, true);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn read_only_mount_refuses_writes() {
        if !kvm_available() {
            return;
        }
        let dir = temp_export("gw-ro");
        seed_files(&dir);
        let r = run_files(&dir, true);
        assert_eq!(r.code, 1, "{r:?}");
        assert!(
            r.stdout
                .contains("hello.txt (20 bytes): hello from the host"),
            "reads work: {r:?}"
        );
        assert!(
            r.stdout.contains("9p error: create new.txt: errno 30"),
            "EROFS: {r:?}"
        );
        assert!(!dir.join("new.txt").exists());
        assert!(dir.join("delete-me.txt").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn console_is_stdin_and_stdout_and_env_is_the_launch_environment() {
        if !kvm_available() {
            return;
        }
        let dir = temp_export("gw-cons");
        let k = kernel("astraea-ktest");
        let mount = format!("{}:/", dir.display());
        let mut child = Command::new(astraea())
            .args([
                "run",
                "--kernel",
                k.to_str().unwrap(),
                "--mount",
                &mount,
                "--",
                "9p-console-env",
                "ASTRAEA_TEST_VAR",
            ])
            .env("ASTRAEA_TEST_VAR", "value from the host")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(b"typed by the user\n")
            .unwrap();
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{stdout} {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(stdout.contains("env: value from the host\n"), "{stdout}");
        assert!(stdout.contains("echo: typed by the user\n"), "{stdout}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn bad_mount_is_a_clear_error() {
        let r = astraea_cmd(&["run", "--mount", "/nonexistent/dir:/data"]);
        assert_eq!(r.code, 125, "{r:?}");
        assert!(
            r.stderr
                .contains("--mount \"/nonexistent/dir:/data\": cannot use /nonexistent/dir"),
            "{r:?}"
        );
        let r = astraea_cmd(&["run", "--mount", "/tmp:relative"]);
        assert_eq!(r.code, 125, "{r:?}");
        assert!(
            r.stderr.contains("the guest path must be absolute"),
            "{r:?}"
        );
    }
}
