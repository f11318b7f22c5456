//! `astraea deploy` on what goes wrong: a bad file, a member that cannot
//! start, a member that never gets ready, one that dies and comes back. The
//! members are small host programs (`--host`), so these run without KVM;
//! the search deployment on partitions is in `search_app.rs`.

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::process::Command;
    use std::sync::OnceLock;
    use std::time::Duration;

    use astraea_tests::*;

    fn dir(name: &str) -> PathBuf {
        static ROOT: OnceLock<PathBuf> = OnceLock::new();
        let d = ROOT.get_or_init(|| scratch_root("deploy-tests")).join(name);
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn deploy(file: &PathBuf, extra: &[&str], timeout: Duration) -> Run {
        let mut c = Command::new(astraea());
        c.arg("deploy").arg(file).args(extra);
        run_with_timeout(&mut c, timeout)
    }

    /// Starts `astraea deploy F --host` (log directory `d/logs`) and waits
    /// until its member "member" is ready; returns the supervisor and the
    /// member's pid.
    #[allow(clippy::zombie_processes)] // returned: the caller kills and waits
    fn supervise(d: &std::path::Path, f: &PathBuf) -> (std::process::Child, String) {
        let mut sup = Command::new(astraea())
            .arg("deploy")
            .arg(f)
            .arg("--host")
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let status = d.join("logs/status");
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let s = std::fs::read_to_string(&status).unwrap_or_default();
            if let Some(l) = s
                .lines()
                .find(|l| l.starts_with("member") && l.contains("ready"))
            {
                return (sup, l.split_whitespace().nth(2).unwrap().to_string());
            }
            if std::time::Instant::now() >= deadline {
                let _ = sup.kill();
                let _ = sup.wait();
                panic!("never ready: {s}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Whether process `pid` is gone within 10 s.
    fn gone_soon(pid: &str) -> bool {
        let p = std::path::Path::new("/proc").join(pid);
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while p.exists() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        !p.exists()
    }

    #[test]
    fn a_bad_file_is_named_with_its_mistake_and_exit_2() {
        let d = dir("bad");
        let f = d.join("d.toml");
        std::fs::write(
            &f,
            "[deployment]\nname = 'x'\n[[partition]]\nname = 'a'\ncommand = ['true']\nreddy = 'log:x'\n",
        )
        .unwrap();
        let r = deploy(&f, &["--host"], Duration::from_secs(30));
        assert_eq!(r.code, 2, "{r:?}");
        assert!(r.stderr.contains("unknown field `reddy`"), "{r:?}");
        assert!(r.stderr.contains(&f.display().to_string()), "{r:?}");
        let r = deploy(&d.join("missing.toml"), &[], Duration::from_secs(30));
        assert_eq!(r.code, 2, "{r:?}");
        assert!(r.stderr.contains("cannot read"), "{r:?}");
        std::fs::write(
            &f,
            "[deployment]\nname = 'x'\n[[partition]]\nname = 'a'\ncommand = ['${NOPE}']\n",
        )
        .unwrap();
        let r = deploy(&f, &["--host"], Duration::from_secs(30));
        assert_eq!(r.code, 2, "{r:?}");
        assert!(
            r.stderr.contains("--set NOPE=VALUE"),
            "says how to fix it: {r:?}"
        );
    }

    /// A member that fails at once is restarted 5 times, then the
    /// deployment gives up with exit 1; the member that was fine is stopped.
    #[test]
    fn a_member_that_keeps_failing_ends_the_deployment() {
        let d = dir("failing");
        let f = d.join("d.toml");
        std::fs::write(
            &f,
            r#"
            [deployment]
            name = "failing"
            log-dir = "logs"
            [[partition]]
            name = "fine"
            command = ["sh", "-c", "trap 'echo bye; exit 0' TERM; echo up; while :; do sleep 0.1; done"]
            ready = "log:up"
            [[partition]]
            name = "broken"
            after = ["fine"]
            command = ["sh", "-c", "echo oops >&2; exit 3"]
            ready = "log:never"
            "#,
        )
        .unwrap();
        let r = deploy(&f, &["--host"], Duration::from_secs(60));
        assert_eq!(r.code, 1, "{r:?}");
        assert_eq!(
            r.stderr.matches("broken exited (status 3)").count(),
            6,
            "{r:?}"
        );
        assert!(
            r.stderr.contains("restarting broken in 2.5 s (5 of 5"),
            "{r:?}"
        );
        assert!(
            r.stderr
                .contains("the deployment cannot come up: broken failed 6 times"),
            "{r:?}"
        );
        assert!(r.stderr.contains("fine stopped (status 0)"), "{r:?}");
        let log = d.join("logs/broken.log");
        assert!(
            r.stderr
                .contains(&format!("(its output: {})", log.display())),
            "names the log: {r:?}"
        );
        let log = std::fs::read_to_string(d.join("logs/broken.log")).unwrap();
        assert_eq!(log.lines().filter(|l| *l == "oops").count(), 6, "{log}");
        assert_eq!(
            log.matches("=== astraea deploy: start ").count(),
            6,
            "{log}"
        );
        let fine = std::fs::read_to_string(d.join("logs/fine.log")).unwrap();
        assert!(
            fine.contains("up\n") && fine.ends_with("bye\n"),
            "its TERM trap ran: {fine}"
        );
        let status = std::fs::read_to_string(d.join("logs/status")).unwrap();
        assert!(
            status
                .lines()
                .any(|l| l.starts_with("broken") && l.contains("failed")),
            "{status}"
        );
    }

    /// A member that never gets ready is killed at the ready timeout.
    #[test]
    fn a_member_that_never_gets_ready_is_killed() {
        let d = dir("slow");
        let f = d.join("d.toml");
        std::fs::write(
            &f,
            r#"
            [deployment]
            name = "slow"
            log-dir = "logs"
            ready-timeout = 1
            [[partition]]
            name = "sleepy"
            restart = "never"
            command = ["sleep", "100"]
            ready = "tcp:127.0.0.1:1"
            "#,
        )
        .unwrap();
        let r = deploy(&f, &["--host"], Duration::from_secs(60));
        assert_eq!(r.code, 1, "{r:?}");
        assert!(
            r.stderr.contains("sleepy not ready after 1 s; killing it"),
            "{r:?}"
        );
        assert!(r.stderr.contains("restart policy is never"), "{r:?}");
    }
    /// Members never outlive the supervisor: SIGKILL of `astraea deploy`
    /// still stops them (SIGTERM by the parent-death signal). A second
    /// supervisor on the same log directory is refused meanwhile.
    #[test]
    fn members_stop_when_the_supervisor_is_killed() {
        let d = dir("orphans");
        let f = d.join("d.toml");
        std::fs::write(
            &f,
            r#"
            [deployment]
            name = "orphans"
            log-dir = "logs"
            [[partition]]
            name = "member"
            command = ["sh", "-c", "trap 'exit 0' TERM; echo up; while :; do sleep 0.1; done"]
            ready = "log:up"
            "#,
        )
        .unwrap();
        let (mut sup, pid) = supervise(&d, &f);
        // A second supervisor on the same log directory is refused.
        let second = deploy(&f, &["--host"], Duration::from_secs(30));
        assert_eq!(second.code, 1, "{second:?}");
        assert!(
            second
                .stderr
                .contains("another astraea deploy is running with the log directory"),
            "{second:?}"
        );
        sup.kill().unwrap();
        sup.wait().unwrap();
        assert!(gone_soon(&pid), "member {pid} outlived its supervisor");
    }

    /// A member that takes SIGTERM's default action (no handler, no shell
    /// to reset its signal mask) stops when the supervisor is killed: the
    /// supervisor blocks the signals it forwards, and its children used to
    /// inherit that mask, so such a member (a host JVM, the shared
    /// gateway) outlived it.
    #[test]
    fn a_member_without_a_handler_takes_sigterm() {
        let d = dir("plain-term");
        let f = d.join("d.toml");
        std::fs::write(
            &f,
            r#"
            [deployment]
            name = "plain-term"
            log-dir = "logs"
            [[partition]]
            name = "member"
            command = ["python3", "-c", "import time; print([l for l in open('/proc/self/status') if l.startswith('SigBlk')][0].strip()); print('up', flush=True); time.sleep(600)"]
            ready = "log:up"
            "#,
        )
        .unwrap();
        let (mut sup, pid) = supervise(&d, &f);
        let log = std::fs::read_to_string(d.join("logs/member.log")).unwrap_or_default();
        sup.kill().unwrap();
        sup.wait().unwrap();
        let outlived = !gone_soon(&pid);
        if outlived {
            // Not left behind holding the test's output.
            let _ = Command::new("kill").args(["-9", &pid]).status();
        }
        assert!(
            log.contains("SigBlk:\t0000000000000000"),
            "the member started with signals blocked:\n{log}"
        );
        assert!(!outlived, "member {pid} outlived its supervisor");
    }
}
