//! A partition's files through a separate gateway process over vhost-user
//! (`astraea-gateway --vhost-user SOCK` + `astraea run --gateway
//! vhost-user:SOCK`): the guest's requests go from KVM to the gateway through
//! shared memory and eventfds, never through the VMM.

mod common;

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::common::{check_files, seed_files};
    use std::path::{Path, PathBuf};
    use std::process::{Child, Command, ExitStatus, Stdio};
    use std::time::{Duration, Instant};

    use astraea_tests::*;

    const TIMEOUT: Duration = Duration::from_secs(20);

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("astraea-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// An `astraea-gateway --vhost-user` process, killed if the test fails.
    struct VhostGateway {
        child: Option<Child>,
        sock: PathBuf,
    }

    impl VhostGateway {
        /// Starts the gateway on `sock` exporting `export` at `/`, and waits
        /// until it listens.
        fn start(sock: &Path, export: &Path, extra: &[&str]) -> Self {
            Self::start_with(Command::new(gateway()), sock, export, extra)
        }

        /// [`VhostGateway::start`] from a shell that first lowers the soft
        /// descriptor limit to `soft` (the hard one stays).
        fn start_with_soft_nofile(sock: &Path, export: &Path, extra: &[&str], soft: u32) -> Self {
            let mut sh = Command::new("/bin/sh");
            sh.arg("-c")
                .arg(format!("ulimit -Sn {soft} && exec \"$0\" \"$@\""))
                .arg(gateway());
            Self::start_with(sh, sock, export, extra)
        }

        fn start_with(mut cmd: Command, sock: &Path, export: &Path, extra: &[&str]) -> Self {
            let child = cmd
                .arg("--vhost-user")
                .arg(sock)
                .arg("--export")
                .arg(format!("{}:/", export.display()))
                .args(extra)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("cannot start astraea-gateway");
            let mut g = Self {
                child: Some(child),
                sock: sock.to_path_buf(),
            };
            let t0 = Instant::now();
            while !g.sock.exists() {
                if let Some(st) = g.child_mut().try_wait().unwrap() {
                    panic!("astraea-gateway exited early ({st}): {}", g.stderr());
                }
                assert!(
                    t0.elapsed() < TIMEOUT,
                    "astraea-gateway did not start listening"
                );
                std::thread::sleep(Duration::from_millis(20));
            }
            g
        }

        fn child_mut(&mut self) -> &mut Child {
            self.child.as_mut().expect("gateway running")
        }

        fn stderr(&mut self) -> String {
            let mut s = String::new();
            if let Some(mut e) = self.child_mut().stderr.take() {
                let _ = e.read_to_string(&mut s);
            }
            s
        }

        /// Waits for the gateway to exit on its own.
        fn wait(mut self) -> (ExitStatus, String) {
            let t0 = Instant::now();
            loop {
                if let Some(st) = self.child_mut().try_wait().unwrap() {
                    let err = self.stderr();
                    self.child = None;
                    return (st, err);
                }
                assert!(
                    t0.elapsed() < TIMEOUT,
                    "astraea-gateway did not exit after its VMM disconnected"
                );
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }

    impl Drop for VhostGateway {
        fn drop(&mut self) {
            if let Some(mut c) = self.child.take() {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }

    fn run_files(sock: &Path) -> Run {
        let k = kernel("astraea-ktest");
        let gw = format!("vhost-user:{}", sock.display());
        astraea_cmd(&[
            "run",
            "--kernel",
            k.to_str().unwrap(),
            "--gateway",
            &gw,
            "--",
            "9p-files",
        ])
    }

    #[test]
    fn partition_file_operations_reach_the_host_over_vhost_user() {
        if !kvm_available() {
            return;
        }
        let dir = temp_dir("vhost-files");
        let export = dir.join("export");
        std::fs::create_dir_all(&export).unwrap();
        seed_files(&export);
        let sock = dir.join("gw.sock");
        let gw = VhostGateway::start(&sock, &export, &[]);
        let r = run_files(&sock);
        check_files(&r, &export, true);
        // One VMM per run: the gateway exits 0 once it has left, and removes
        // its socket.
        let (st, log) = gw.wait();
        assert!(st.success(), "gateway: {st} {log}");
        assert!(log.contains("VMM disconnected"), "{log}");
        assert!(!sock.exists(), "socket left behind");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn keep_listening_serves_one_partition_after_another() {
        if !kvm_available() {
            return;
        }
        let dir = temp_dir("vhost-keep");
        let export = dir.join("export");
        std::fs::create_dir_all(&export).unwrap();
        let sock = dir.join("gw.sock");
        let _gw = VhostGateway::start(&sock, &export, &["--keep-listening"]);
        for round in 0..2 {
            let _ = std::fs::remove_dir_all(export.join("sub"));
            seed_files(&export);
            let r = run_files(&sock);
            eprintln!("round {round}");
            check_files(&r, &export, true);
        }
        drop(_gw);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn missing_gateway_is_a_clear_error() {
        let sock =
            std::env::temp_dir().join(format!("astraea-no-gateway-{}.sock", std::process::id()));
        let r = astraea_cmd(&[
            "run",
            "--gateway",
            &format!("vhost-user:{}", sock.display()),
        ]);
        assert_eq!(r.code, 125, "{r:?}");
        let s = sock.display();
        assert!(
            r.stderr.contains(&format!(
                "cannot connect to the gateway at {s}: No such file or directory (os error 2), \
                 start it with astraea-gateway --vhost-user {s}"
            )),
            "{r:?}"
        );
        let r = astraea_cmd(&["run", "--gateway", "tcp:127.0.0.1:1"]);
        assert_eq!(r.code, 125, "{r:?}");
        assert!(r.stderr.contains("write vhost-user:SOCK"), "{r:?}");
    }

    #[test]
    fn gateway_that_goes_away_ends_the_partition() {
        if !kvm_available() {
            return;
        }
        let dir = temp_dir("vhost-lost");
        let export = dir.join("export");
        std::fs::create_dir_all(&export).unwrap();
        let sock = dir.join("gw.sock");
        // The partition blocks reading /dev/cons, which the gateway serves
        // from its stdin (a pipe that stays open); then the gateway dies.
        let mut child = Command::new(gateway())
            .arg("--vhost-user")
            .arg(&sock)
            .arg("--export")
            .arg(format!("{}:/", export.display()))
            .args(["--env", "ASTRAEA_TEST_VAR=x"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let t0 = Instant::now();
        while !sock.exists() {
            assert!(
                t0.elapsed() < TIMEOUT,
                "astraea-gateway did not start listening"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let pid = child.id();
        let log = child.stderr.take().unwrap();
        // Kill it once the partition is connected and waiting on the console.
        let killer = std::thread::spawn(move || {
            use std::io::BufRead;
            let connected = std::io::BufReader::new(log)
                .lines()
                .map_while(Result::ok)
                .any(|l| l.contains("VMM connected"));
            if connected {
                std::thread::sleep(Duration::from_millis(500));
            }
            let _ = child.kill();
            let _ = child.wait();
        });
        let k = kernel("astraea-ktest");
        let gw = format!("vhost-user:{}", sock.display());
        let started = Instant::now();
        let r = astraea_cmd(&[
            "run",
            "--kernel",
            k.to_str().unwrap(),
            "--gateway",
            &gw,
            "--",
            "9p-console-env",
            "ASTRAEA_TEST_VAR",
        ]);
        killer.join().unwrap();
        assert_eq!(r.code, 125, "gateway {pid}: {r:?}");
        assert!(
            r.stderr
                .contains("closed the connection while the partition was running"),
            "{r:?}"
        );
        assert!(started.elapsed() < TIMEOUT, "took {:?}", started.elapsed());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A gateway started with a low soft descriptor limit (a shell's
    /// default of 1024 is common) raises it to the hard one, as the JVM
    /// does: it holds a host descriptor for every file its partitions have
    /// open, so a program keeping more files open than that soft limit
    /// works as on the host. (Without the raise the program's 47th `open`
    /// failed.)
    #[test]
    fn a_gateway_serves_more_files_than_its_soft_limit() {
        if !kvm_available() {
            return;
        }
        let dir = temp_dir("vhost-nofile");
        let prog = dir.join("many");
        let src = dir.join("many.c");
        std::fs::write(
            &src,
            r#"#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
int main(int argc, char **argv) {
    static int fds[300];
    char path[4096];
    int n = 0;
    for (; n < 300; n++) {
        snprintf(path, sizeof path, "%s/f%d", argv[1], n);
        fds[n] = open(path, O_CREAT | O_RDWR, 0600);
        if (fds[n] < 0) { perror("open"); break; }
        if (write(fds[n], "x", 1) != 1) { perror("write"); break; }
    }
    printf("opened %d\n", n);
    for (int i = 0; i < n; i++) close(fds[i]);
    return n == 300 ? 0 : 1;
}
"#,
        )
        .unwrap();
        let built = Command::new("gcc")
            .args(["-O2", "-o"])
            .arg(&prog)
            .arg(&src)
            .output();
        if !built.is_ok_and(|o| o.status.success()) {
            eprintln!(
                "\n*** SKIPPED: gcc cannot build a test program; this test did not run. ***\n"
            );
            return;
        }
        let files = dir.join("files");
        std::fs::create_dir_all(&files).unwrap();
        let sock = dir.join("gw.sock");
        let gw =
            VhostGateway::start_with_soft_nofile(&sock, Path::new("/"), &["--log", "info"], 64);
        let gwarg = format!("vhost-user:{}", sock.display());
        let r = astraea_cmd(&[
            "run",
            "--gateway",
            &gwarg,
            "--",
            prog.to_str().unwrap(),
            files.to_str().unwrap(),
        ]);
        assert_eq!((r.code, r.stdout.as_str()), (0, "opened 300\n"), "{r:?}");
        let (_, err) = gw.wait();
        assert!(err.contains("raised the descriptor limit"), "{err}");
        assert_eq!(std::fs::read_dir(&files).unwrap().count(), 300);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Sockets through a separate gateway process: `astraea-gateway
    /// --vhost-user SOCK --net` serves the partition's `/net`, and the
    /// socket program prints what it prints on the host.
    #[test]
    fn sockets_through_a_vhost_user_gateway() {
        if !kvm_available() {
            return;
        }
        let dir = temp_dir("vhost-net");
        let prog = dir.join("sockets");
        let built = Command::new("gcc")
            .args(["-O2", "-pthread", "-o"])
            .arg(&prog)
            .arg(workspace().join("tests/progs/sockets.c"))
            .output();
        if !built.is_ok_and(|o| o.status.success()) {
            eprintln!(
                "\n*** SKIPPED: gcc cannot build tests/progs/sockets.c; this test did not run. ***\n"
            );
            return;
        }
        let sock = dir.join("gw.sock");
        let _gw = VhostGateway::start(&sock, Path::new("/"), &["--net"]);
        let gw = format!("vhost-user:{}", sock.display());
        let r = astraea_cmd(&["run", "--gateway", &gw, "--", prog.to_str().unwrap()]);
        let want = std::fs::read_to_string(workspace().join("tests/progs/sockets.stdout")).unwrap();
        assert_eq!((r.code, r.stdout.as_str()), (0, want.as_str()), "{r:?}");
        drop(_gw);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
