//! Linux x86-64 programs in ring 3 of a partition: the first steps of the
//! Linux personality (static programs, a few system calls).

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};
    use std::process::Command;

    use astraea_tests::*;

    /// Compiles `src` with gcc into a fresh directory; `None` (loudly) without gcc.
    fn compile(name: &str, src: &str, flags: &[&str]) -> Option<PathBuf> {
        if Command::new("gcc").arg("--version").output().is_err() {
            eprintln!("\n*** SKIPPED: gcc is not installed; this test did not run. ***\n");
            return None;
        }
        let dir = std::env::temp_dir().join(format!("astraea-prog-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let c = dir.join(format!("{name}.c"));
        std::fs::write(&c, src).unwrap();
        let st = Command::new("gcc")
            .args(flags)
            .arg("-o")
            .arg(dir.join(name))
            .arg(&c)
            .status()
            .unwrap();
        assert!(st.success(), "gcc failed for {name}");
        Some(dir)
    }

    fn run_in(dir: &Path, args: &[&str]) -> Run {
        let mount = format!("{}:/", dir.display());
        let mut a = vec!["run", "--mount", &mount, "--"];
        a.extend_from_slice(args);
        astraea_cmd(&a)
    }

    #[test]
    fn raw_static_pie_writes_and_exits_with_its_status() {
        if !kvm_available() {
            return;
        }
        let src = r#"
            static long sys(long n, long a, long b, long c) {
                long r;
                __asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
                return r;
            }
            void _start(void) {
                static const char msg[] = "hello from ring 3\n";
                sys(1, 1, (long)msg, sizeof msg - 1);
                sys(1, 2, (long)"to stderr\n", 10);
                sys(231, 42, 0, 0);
                for (;;) {}
            }
        "#;
        let Some(dir) = compile(
            "raw",
            src,
            &["-O2", "-static-pie", "-nostdlib", "-fno-stack-protector"],
        ) else {
            return;
        };
        let r = run_in(&dir, &["/raw"]);
        assert_eq!(r.code, 42, "{r:?}");
        assert_eq!(r.stdout, "hello from ring 3\n", "{r:?}");
        assert!(r.stderr.contains("to stderr\n"), "{r:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn glibc_static_pie_printf_sees_its_arguments_and_environment() {
        if !kvm_available() {
            return;
        }
        let src = r#"
            #include <stdio.h>
            #include <stdlib.h>
            int main(int argc, char **argv) {
                printf("argc=%d argv[1]=%s home=%s\n", argc, argc > 1 ? argv[1] : "-", getenv("ASTRAEA_TEST_HOME"));
                return 3;
            }
        "#;
        let Some(dir) = compile("libc", src, &["-O2", "-static-pie"]) else {
            return;
        };
        let mount = format!("{}:/", dir.display());
        let r = astraea_cmd_env(
            &["run", "--mount", &mount, "--", "/libc", "world"],
            &[("ASTRAEA_TEST_HOME", "/home/test")],
        );
        assert_eq!(r.code, 3, "{r:?}");
        assert_eq!(r.stdout, "argc=2 argv[1]=world home=/home/test\n", "{r:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn clocks_uname_and_random_without_leaving_the_partition() {
        if !kvm_available() {
            return;
        }
        let src = r#"
            #include <stdio.h>
            #include <time.h>
            #include <sys/random.h>
            #include <sys/utsname.h>
            int main(void) {
                struct timespec a, b, r;
                clock_gettime(CLOCK_MONOTONIC, &a);
                struct utsname u;
                uname(&u);
                clock_gettime(CLOCK_MONOTONIC, &b);
                clock_gettime(CLOCK_REALTIME, &r);
                unsigned char x[32] = {0};
                long n = getrandom(x, sizeof x, 0);
                int nonzero = 0;
                for (int i = 0; i < 32; i++) nonzero |= x[i];
                printf("%s %s mono_ok=%d wall_ok=%d random=%ld,%d\n", u.sysname, u.machine,
                       b.tv_sec > a.tv_sec || (b.tv_sec == a.tv_sec && b.tv_nsec >= a.tv_nsec),
                       r.tv_sec > 1700000000, n, nonzero != 0);
                return 0;
            }
        "#;
        let Some(dir) = compile("clock", src, &["-O2", "-static-pie"]) else {
            return;
        };
        let r = run_in(&dir, &["/clock"]);
        assert_eq!(r.code, 0, "{r:?}");
        assert_eq!(
            r.stdout, "Linux x86_64 mono_ok=1 wall_ok=1 random=32,1\n",
            "{r:?}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn stdio_files_directories_and_the_terminal_over_9p() {
        if !kvm_available() {
            return;
        }
        let src = r#"
            #include <stdio.h>
            #include <dirent.h>
            #include <unistd.h>
            #include <fcntl.h>
            #include <sys/stat.h>
            int main(int argc, char **argv) {
                FILE *f = fopen(argv[1], "r");
                if (!f) { perror("fopen"); return 1; }
                char line[256]; int n = 0;
                while (fgets(line, sizeof line, f)) { n++; fputs(line, stdout); }
                fclose(f);
                struct stat st = {0}; stat(argv[1], &st);
                printf("lines=%d size=%ld regular=%d\n", n, (long)st.st_size, S_ISREG(st.st_mode));
                DIR *d = opendir(argv[2]); int k = 0; struct dirent *e;
                while ((e = readdir(d))) if (e->d_name[0] == 'f') k++;
                closedir(d);
                char cwd[256]; getcwd(cwd, sizeof cwd);
                printf("f_entries=%d cwd=%s missing=%d\n", k, cwd, open("/nope", O_RDONLY));
                return 0;
            }
        "#;
        let Some(dir) = compile("files", src, &["-O2", "-static-pie"]) else {
            return;
        };
        std::fs::write(dir.join("f.txt"), "one\ntwo\nthree\n").unwrap();
        std::fs::create_dir(dir.join("fdir")).unwrap();
        let r = run_in(&dir, &["/files", "/f.txt", "/"]);
        assert_eq!(r.code, 0, "{r:?}");
        assert_eq!(
            r.stdout, "one\ntwo\nthree\nlines=3 size=14 regular=1\nf_entries=4 cwd=/ missing=-1\n",
            "{r:?}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn default_namespace_runs_from_the_current_directory_and_strace_goes_to_stderr() {
        if !kvm_available() {
            return;
        }
        let src = r#"
            #include <stdio.h>
            #include <unistd.h>
            int main(void) {
                char cwd[512]; getcwd(cwd, sizeof cwd);
                FILE *f = fopen("data.txt", "r");
                char line[64] = {0};
                if (f) fgets(line, sizeof line, f);
                printf("cwd=%s data=%s", cwd, line);
                return 0;
            }
        "#;
        let Some(dir) = compile("cwd", src, &["-O2", "-static-pie"]) else {
            return;
        };
        std::fs::write(dir.join("data.txt"), "relative read works\n").unwrap();
        let out = Command::new(astraea())
            .args(["run", "--strace", "--", "./cwd"])
            .current_dir(&dir)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stdout} {stderr}");
        assert_eq!(
            stdout,
            format!("cwd={} data=relative read works\n", dir.display())
        );
        assert!(stderr.contains("[strace] openat("), "{stderr}");
        assert!(stderr.contains("[strace] write(0x1,"), "{stderr}");
        assert!(!stdout.contains("[strace]"), "{stdout}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The current directory two levels below the shared `/tmp`: the
    /// partition mounts it over the host's `/tmp`, and the directory
    /// between (`/tmp/…/a`) is still the host's, writable as it is for a
    /// host process (it was read-only: `mkdir ../x` was `EROFS`; found by
    /// the JUnit launcher making its reports directory `../reports`).
    #[test]
    fn files_made_beside_a_nested_working_directory_as_on_the_host() {
        if !kvm_available() {
            return;
        }
        let src = r#"
            #include <errno.h>
            #include <fcntl.h>
            #include <stdio.h>
            #include <string.h>
            #include <sys/stat.h>
            #include <unistd.h>
            static void r(const char *what, int rc) {
                printf("%s = %d %s\n", what, rc, rc < 0 ? strerror(errno) : "");
            }
            int main(void) {
                r("mkdir ../made", mkdir("../made", 0755));
                int fd = open("../made/f", O_CREAT | O_WRONLY | O_EXCL, 0644);
                r("create ../made/f", fd < 0 ? fd : 0);
                r("write", (int)write(fd, "hello", 5));
                close(fd);
                r("rename to ../g", rename("../made/f", "../g"));
                struct stat st = {0};
                r("stat ../g", stat("../g", &st));
                printf("size %ld\n", (long)st.st_size);
                r("symlink ../ln", symlink("g", "../ln"));
                char buf[16] = {0};
                r("readlink ../ln", (int)readlink("../ln", buf, sizeof buf - 1));
                printf("target %s\n", buf);
                r("unlink ../ln", unlink("../ln"));
                r("unlink ../g", unlink("../g"));
                r("rmdir ../made", rmdir("../made"));
                r("mkdir ../wd (this directory)", mkdir("../wd", 0755));
                r("mkdir ../../top", mkdir("../../top", 0755));
                r("rmdir ../../top", rmdir("../../top"));
                r("mkdir /tmp (a mount point)", mkdir("/tmp", 0755));
                r("chmod .. 0750", chmod("..", 0750));
                r("stat ..", stat("..", &st));
                printf("mode %o\n", st.st_mode & 07777);
                return 0;
            }
        "#;
        let Some(dir) = compile("nested", src, &["-O2", "-static-pie"]) else {
            return;
        };
        let wd = dir.join("a").join("wd");
        std::fs::create_dir_all(&wd).unwrap();
        let exe = dir.join("nested");
        let host = Command::new(&exe).current_dir(&wd).output().unwrap();
        let part = Command::new(astraea())
            .arg("run")
            .arg("--")
            .arg(&exe)
            .current_dir(&wd)
            .output()
            .unwrap();
        let (host_out, part_out) = (
            String::from_utf8_lossy(&host.stdout),
            String::from_utf8_lossy(&part.stdout),
        );
        assert!(host.status.success(), "{host_out}");
        assert!(host_out.contains("mkdir ../made = 0"), "{host_out}");
        assert_eq!(
            (part.status.code(), part_out.as_ref()),
            (host.status.code(), host_out.as_ref()),
            "stderr: {}",
            String::from_utf8_lossy(&part.stderr)
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn compute_bound_program_survives_timer_interrupts_from_ring_3() {
        if !kvm_available() {
            return;
        }
        let src = r#"
            #include <stdio.h>
            int main(void) {
                volatile unsigned long x = 0;
                for (unsigned long i = 0; i < 100000000UL; i++) x += i;
                printf("x=%lu\n", (unsigned long)x);
                return 0;
            }
        "#;
        let Some(dir) = compile("spin", src, &["-O2", "-static-pie"]) else {
            return;
        };
        // The kernel's main thread wakes every 10 ms meanwhile, so the
        // program is interrupted and resumed many times.
        let r = run_in(&dir, &["/spin"]);
        assert_eq!(r.code, 0, "{r:?}");
        assert_eq!(r.stdout, "x=4999999950000000\n", "{r:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_crashing_program_ends_with_128_plus_its_signal() {
        if !kvm_available() {
            return;
        }
        let src = r#"
            #include <stdio.h>
            int main(int argc, char **argv) {
                printf("about to crash\n");
                fflush(stdout);
                if (argc > 1) __asm__ volatile("ud2");
                volatile int *p = (int *)0x700000000000;
                return *p;
            }
        "#;
        let Some(dir) = compile("crash", src, &["-O2", "-static-pie"]) else {
            return;
        };
        let r = run_in(&dir, &["/crash"]);
        assert_eq!(r.code, 139, "{r:?}");
        assert_eq!(r.stdout, "about to crash\n", "{r:?}");
        assert!(
            r.stderr.contains("killed by signal 11 (SIGSEGV)")
                && r.stderr.contains("address 0x700000000000"),
            "{r:?}"
        );
        let r = run_in(&dir, &["/crash", "ill"]);
        assert_eq!(r.code, 132, "{r:?}");
        assert!(r.stderr.contains("killed by signal 4 (SIGILL)"), "{r:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn dynamic_program_runs_through_the_hosts_ld_so_and_libc() {
        if !kvm_available() {
            return;
        }
        let src = r#"
            #include <stdio.h>
            int main(int argc, char **argv) { printf("dynamic argc=%d argv[1]=%s\n", argc, argv[1]); return 5; }
        "#;
        let Some(dir) = compile("dyn", src, &["-O2"]) else {
            return;
        };
        // The default namespace: the host's / read-only (ld.so, libc, their
        // symlinks), the current directory read-write at its own path.
        let out = Command::new(astraea())
            .args(["run", "--", "./dyn", "hello"])
            .current_dir(&dir)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(5), "{out:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "dynamic argc=2 argv[1]=hello\n"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_hosts_own_ls_lists_a_directory_as_on_the_host() {
        if !kvm_available() {
            return;
        }
        if !Path::new("/bin/ls").exists() {
            eprintln!("\n*** SKIPPED: /bin/ls is missing; this test did not run. ***\n");
            return;
        }
        let dir = std::env::temp_dir().join(format!("astraea-ls-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("a-dir")).unwrap();
        std::fs::write(dir.join("b-file"), "12345").unwrap();
        std::fs::write(dir.join("c-empty"), "").unwrap();
        let host = Command::new("/bin/ls")
            .args(["-l", "--time-style=+%s"])
            .arg(&dir)
            .output()
            .unwrap();
        // Run from a directory inside the listed one: the current directory
        // is mounted beneath it, which must not hide its other entries.
        let part = Command::new(astraea())
            .args(["run", "--", "/bin/ls", "-l", "--time-style=+%s"])
            .arg(&dir)
            .current_dir(dir.join("a-dir"))
            .output()
            .unwrap();
        assert!(part.status.success(), "{part:?}");
        // Every entry line is the same; the "total" line counts blocks.
        let entries = |o: &[u8]| -> Vec<String> {
            String::from_utf8_lossy(o)
                .lines()
                .filter(|l| !l.starts_with("total"))
                .map(String::from)
                .collect()
        };
        assert_eq!(entries(&part.stdout), entries(&host.stdout));
        assert_eq!(entries(&part.stdout).len(), 3);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_program_writes_appends_renames_and_deletes_host_files() {
        if !kvm_available() {
            return;
        }
        let src = r#"
            #include <stdio.h>
            #include <sys/stat.h>
            #include <unistd.h>
            #include <fcntl.h>
            int main(void) {
                if (mkdir("out", 0755) != 0) { perror("mkdir"); return 1; }
                FILE *f = fopen("out/a.txt", "w");
                if (!f) { perror("fopen"); return 1; }
                for (int i = 0; i < 1000; i++) fprintf(f, "line %d\n", i);
                fclose(f);
                int fd = open("out/a.txt", O_WRONLY | O_APPEND);
                if (write(fd, "appended\n", 9) != 9) return 2;
                close(fd);
                if (rename("out/a.txt", "out/b.txt") != 0) { perror("rename"); return 1; }
                FILE *g = fopen("out/tmp", "w"); fputs("x", g); fclose(g);
                if (unlink("out/tmp") != 0) { perror("unlink"); return 1; }
                struct stat st = {0}; stat("out/b.txt", &st);
                printf("size=%ld\n", (long)st.st_size);
                return 0;
            }
        "#;
        let Some(dir) = compile("writes", src, &["-O2"]) else {
            return;
        };
        let out = Command::new(astraea())
            .args(["run", "--", "./writes"])
            .current_dir(&dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let text = std::fs::read_to_string(dir.join("out/b.txt")).unwrap();
        let expected: String =
            (0..1000).map(|i| format!("line {i}\n")).collect::<String>() + "appended\n";
        assert_eq!(text, expected);
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            format!("size={}\n", expected.len())
        );
        assert!(!dir.join("out/a.txt").exists() && !dir.join("out/tmp").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn dup2_redirects_stdout_into_a_file() {
        if !kvm_available() {
            return;
        }
        let src = r#"
            #include <stdio.h>
            #include <unistd.h>
            #include <fcntl.h>
            int main(void) {
                int saved = dup(1);
                int fd = open("redirected.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
                if (fd < 0 || dup2(fd, 1) != 1) return 1;
                close(fd);
                printf("into the file, flags=%d\n", fcntl(1, F_GETFL) & O_ACCMODE);
                fflush(stdout);
                dup2(saved, 1);
                printf("back on the console\n");
                return 0;
            }
        "#;
        let Some(dir) = compile("dup", src, &["-O2"]) else {
            return;
        };
        let out = Command::new(astraea())
            .args(["run", "--", "./dup"])
            .current_dir(&dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "back on the console\n"
        );
        assert_eq!(
            std::fs::read_to_string(dir.join("redirected.txt")).unwrap(),
            "into the file, flags=1\n"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn missing_program_gives_127_and_a_non_program_126() {
        if !kvm_available() {
            return;
        }
        let dir = std::env::temp_dir().join(format!("astraea-prog-missing-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("text"), "not a program").unwrap();
        let r = run_in(&dir, &["/no-such-program"]);
        assert_eq!(r.code, 127, "{r:?}");
        assert!(r.stderr.contains("cannot run /no-such-program"), "{r:?}");
        let r = run_in(&dir, &["/text"]);
        assert_eq!(r.code, 126, "{r:?}");
        assert!(r.stderr.contains("not a Linux x86-64 executable"), "{r:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
    /// SIGHUP and SIGTERM sent to `astraea run` reach the program as they
    /// reach the same program on the host: its handlers run (pause returns),
    /// its exit status is its own; a program that does not handle SIGTERM
    /// ends with 143, as on the host. The signals go to the pid the program
    /// reports (`getpid`), which in a partition is the `astraea` process's.
    #[test]
    fn signals_sent_to_the_vmm_reach_the_program_as_on_the_host() {
        use std::io::{BufRead, BufReader};
        use std::process::Stdio;
        if !kvm_available() {
            return;
        }
        let src = r#"
            #include <signal.h>
            #include <stdio.h>
            #include <string.h>
            #include <unistd.h>
            static void on(int s) {
                char b[32];
                int n = snprintf(b, sizeof b, "signal %d\n", s);
                write(1, b, n);
                if (s == SIGTERM) _exit(7);
            }
            int main(int argc, char **argv) {
                if (argc > 1) { printf("ready %d\n", getpid()); fflush(stdout); for (;;) pause(); }
                struct sigaction sa;
                memset(&sa, 0, sizeof sa);
                sa.sa_handler = on;
                sigaction(SIGHUP, &sa, 0);
                sigaction(SIGTERM, &sa, 0);
                printf("ready %d\n", getpid());
                fflush(stdout);
                for (;;) pause();
            }
        "#;
        let Some(dir) = compile("hostsig", src, &["-O1"]) else {
            return;
        };
        let prog = dir.join("hostsig");
        let prog = prog.to_str().unwrap();
        // (handled?, signals to send) → (stdout, exit status)
        let session = |mut cmd: Command, default: bool| -> (String, Option<i32>) {
            let mut child = cmd
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .unwrap();
            let mut out = BufReader::new(child.stdout.take().unwrap());
            let mut text = String::new();
            let mut line = String::new();
            out.read_line(&mut line).unwrap();
            let pid = line
                .strip_prefix("ready ")
                .map(|p| p.trim().to_string())
                .unwrap_or_else(|| panic!("the program did not start: {line:?}"));
            assert_eq!(pid, child.id().to_string(), "the pid the program reports");
            text += "ready\n";
            let send = |s: &str| {
                let st = Command::new("kill").args([s, &pid]).status().unwrap();
                assert!(st.success(), "kill {s} {pid}");
            };
            if !default {
                send("-HUP");
                line.clear();
                out.read_line(&mut line).unwrap();
                text += &line;
            }
            send("-TERM");
            let mut rest = String::new();
            std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
            text += &rest;
            let st = child.wait().unwrap();
            use std::os::unix::process::ExitStatusExt;
            (text, st.code().or(st.signal().map(|s| 128 + s)))
        };
        for default in [false, true] {
            let args: &[&str] = if default { &["x"] } else { &[] };
            let mut host = Command::new(prog);
            host.args(args);
            let mut part = Command::new(astraea());
            part.arg("run").arg("--").arg(prog).args(args);
            let want = session(host, default);
            let got = session(part, default);
            assert_eq!(got, want, "handled={}", !default);
        }
        assert_eq!(
            session(Command::new(prog), false),
            ("ready\nsignal 1\nsignal 15\n".to_string(), Some(7))
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Runs `argv` in a fresh directory on the host and then in a
    /// partition (`astraea run -- argv…`): both runs.
    fn host_then_partition(tag: &str, argv: &[&Path]) -> (Run, Run) {
        let run = |what: &str| {
            let dir =
                std::env::temp_dir().join(format!("astraea-{tag}-{what}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            let mut c = if what == "host" {
                Command::new(argv[0])
            } else {
                let mut c = Command::new(astraea());
                c.args(["run", "--"]).arg(argv[0]);
                c
            };
            c.args(&argv[1..]).current_dir(&dir);
            let r = run_with_timeout(&mut c, std::time::Duration::from_secs(120));
            let _ = std::fs::remove_dir_all(&dir);
            r
        };
        let host = run("host");
        assert_eq!(host.code, 0, "{tag} fails on the host: {host:?}");
        (host, run("partition"))
    }

    /// The partition's run printed what the host's did, and reached no
    /// system call the library OS lacks.
    fn same_run(tag: &str, host: &Run, part: &Run) {
        eprintln!(
            "{tag}: {} lines, as on the host",
            host.stdout.lines().count()
        );
        assert_eq!(
            (part.code, part.stdout.as_str()),
            (0, host.stdout.as_str()),
            "{tag}: {part:?}"
        );
        assert!(
            !part.stderr.contains("unimplemented system call"),
            "{tag}: {}",
            part.stderr
        );
    }

    /// The host's own Python 3 and its standard library run
    /// `tests/progs/pystd.py` (SQLite in WAL mode, Unix sockets, select,
    /// memfd and mmap, sigtimedwait, threads, temporary files): the
    /// partition prints what the host prints.
    #[test]
    fn the_hosts_python_prints_what_it_prints_on_the_host() {
        script_as_on_the_host("python", "/usr/bin/python3", "pystd.py");
    }

    /// The host's Node.js (libuv: epoll, eventfd, threads, `capget`) runs
    /// `tests/progs/nodeprobe.js`: the partition prints what the host prints.
    #[test]
    fn the_hosts_node_prints_what_it_prints_on_the_host() {
        script_as_on_the_host("node", "/usr/bin/node", "nodeprobe.js");
    }

    /// The host's `interpreter` runs `tests/progs/{script}` on the host and
    /// in a partition: the same output (skipped, loudly, without it).
    fn script_as_on_the_host(tag: &str, interpreter: &str, script: &str) {
        let interpreter = Path::new(interpreter);
        if !interpreter.is_file() {
            eprintln!(
                "\n*** SKIPPED: no {}; this test did not run. ***\n",
                interpreter.display()
            );
            return;
        }
        if !kvm_available() {
            return;
        }
        let script = workspace().join("tests/progs").join(script);
        let (host, part) = host_then_partition(tag, &[interpreter, &script]);
        same_run(tag, &host, &part);
    }

    /// A static Go program (`tests/progs/goprobe`, built here with the
    /// host's Go toolchain) with its own runtime: the partition prints what
    /// the host prints.
    #[test]
    fn a_go_program_prints_what_it_prints_on_the_host() {
        let go = ["/usr/local/go/bin/go", "/usr/bin/go"]
            .into_iter()
            .map(Path::new)
            .find(|p| p.is_file());
        let Some(go) = go else {
            eprintln!("\n*** SKIPPED: no Go toolchain; this test did not run. ***\n");
            return;
        };
        if !kvm_available() {
            return;
        }
        let src = workspace().join("tests/progs/goprobe");
        let out = std::env::temp_dir().join(format!("astraea-goprobe-{}", std::process::id()));
        let built = Command::new(go)
            .args(["build", "-o"])
            .arg(&out)
            .arg(".")
            .current_dir(&src)
            .env("CGO_ENABLED", "0")
            .env("GOFLAGS", "-mod=mod")
            .output()
            .unwrap();
        // The program has no dependencies: a failed build is a broken test.
        assert!(
            built.status.success(),
            "go build of tests/progs/goprobe failed: {}",
            String::from_utf8_lossy(&built.stderr)
        );
        let (host, part) = host_then_partition("go", &[&out]);
        let _ = std::fs::remove_file(&out);
        same_run("go", &host, &part);
    }
}
