//! The library OS's own files and file calls: generated `/proc` and `/sys`
//! files, `/dev` nodes, pipes, eventfds, poll/select, truncation, locks,
//! identity and sleeping, seen by C programs in a partition.

#[cfg(test)]
mod tests {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    use std::path::{Path, PathBuf};
    use std::process::Command;
    use std::time::Duration;

    use astraea_tests::*;

    /// Compiles `src` (static PIE, so the test does not depend on the host's
    /// shared libraries) into a fresh directory; `None` (loudly) without gcc.
    fn compile(name: &str, src: &str) -> Option<PathBuf> {
        if Command::new("gcc").arg("--version").output().is_err() {
            eprintln!("\n*** SKIPPED: gcc is not installed; this test did not run. ***\n");
            return None;
        }
        let dir = std::env::temp_dir().join(format!("astraea-lf-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let c = dir.join(format!("{name}.c"));
        std::fs::write(&c, src).unwrap();
        let out = Command::new("gcc")
            .args(["-O2", "-static-pie", "-Wall", "-o"])
            .arg(dir.join(name))
            .arg(&c)
            .output()
            .unwrap();
        assert!(out.status.success(), "gcc failed for {name}: {out:?}");
        Some(dir)
    }

    /// Runs `/name` with `dir` exported as `/`, killed after a minute so a
    /// wait that never ends fails the test rather than hanging it.
    fn run_in(dir: &Path, name: &str) -> Run {
        let mount = format!("{}:/", dir.display());
        let mut cmd = Command::new(astraea());
        cmd.args(["run", "--mount", &mount, "--", &format!("/{name}")]);
        run_with_timeout(&mut cmd, Duration::from_secs(60))
    }

    /// Compiles and runs `src`; `None` if it cannot run here.
    fn run_program(name: &str, src: &str) -> Option<(Run, PathBuf)> {
        if !kvm_available() {
            return None;
        }
        let dir = compile(name, src)?;
        Some((run_in(&dir, name), dir))
    }

    #[test]
    fn proc_and_sys_files_describe_the_partition() {
        let src = r#"
            #include <stdio.h>
            #include <stdlib.h>
            #include <string.h>
            #include <unistd.h>
            #include <fcntl.h>
            #include <errno.h>
            #include <dirent.h>
            #include <sys/stat.h>
            static char buf[65536];
            static int slurp(const char *p) {
                int fd = open(p, O_RDONLY | O_CLOEXEC);
                if (fd < 0) return -errno;
                int n = 0, r;
                /* Small reads: the text must come out whole by offset. */
                while ((r = read(fd, buf + n, 100)) > 0) n += r;
                buf[n] = 0;
                close(fd);
                return n;
            }
            int main(void) {
                int n = slurp("/proc/self/maps");
                int lines = 0, good = 0;
                for (char *l = strtok(buf, "\n"); l; l = strtok(NULL, "\n")) {
                    unsigned long a, b, off, ino; char perms[8]; unsigned maj, min;
                    lines++;
                    if (sscanf(l, "%lx-%lx %4s %lx %x:%x %lu", &a, &b, perms, &off, &maj, &min, &ino) == 7 && a < b)
                        good++;
                }
                printf("maps ok=%d\n", n >= 0 && lines == good);

                n = slurp("/proc/meminfo");
                long total = 0, avail = -1, nfree = -1;
                char *p = strstr(buf, "MemTotal:"); if (p) total = strtol(p + 9, NULL, 10);
                p = strstr(buf, "MemFree:"); if (p) nfree = strtol(p + 8, NULL, 10);
                p = strstr(buf, "MemAvailable:"); if (p) avail = strtol(p + 13, NULL, 10);
                printf("meminfo total_ok=%d free_ok=%d avail_ok=%d\n",
                       total > 100000 && total <= 1024 * 1024, nfree > 0 && nfree <= total, avail > 0 && avail <= total);

                slurp("/proc/cpuinfo");
                int procs = 0;
                for (p = buf; (p = strstr(p, "processor\t: ")); p++) procs++;
                printf("cpuinfo processors=%d vendor=%d model_name=%d flags_fpu=%d nproc=%ld\n", procs,
                       strstr(buf, "\nvendor_id\t: ") != NULL, strstr(buf, "\nmodel name\t: ") != NULL,
                       strstr(buf, "\nflags\t\t: fpu ") != NULL, sysconf(_SC_NPROCESSORS_ONLN));

                slurp("/sys/devices/system/cpu/online"); printf("online=%s", buf);
                slurp("/sys/devices/system/cpu/possible"); printf("possible=%s", buf);

                /* The process id is the first thread's id, whatever that is. */
                char want[64], path[64];
                snprintf(want, sizeof want, "\nPid:\t%d\n", getpid());
                slurp("/proc/self/status");
                printf("status name=%d pid=%d ppid=%d threads=%d vmrss=%d\n",
                       strstr(buf, "Name:\tprocfiles\n") != NULL, strstr(buf, want) != NULL,
                       strstr(buf, "\nPPid:\t0\n") != NULL, strstr(buf, "\nThreads:\t1\n") != NULL,
                       strstr(buf, "\nVmRSS:\t") != NULL);
                snprintf(path, sizeof path, "/proc/%d/stat", getpid());
                slurp(path);
                int fields = 0;
                snprintf(want, sizeof want, "%d (procfiles) ", getpid());
                for (p = strrchr(buf, ')') + 1; *p; p++) if (*p == ' ') fields++;
                printf("stat pid_and_name=%d fields_after_name=%d\n",
                       strncmp(buf, want, strlen(want)) == 0, fields);
                /* startstack (field 28) lies in the [stack] area of the maps,
                   as HotSpot expects when it looks for the main stack. */
                unsigned long startstack = 0;
                p = strrchr(buf, ')') + 2;
                for (int f = 3; f < 28 && p; f++) { p = strchr(p, ' '); if (p) p++; }
                if (p) startstack = strtoul(p, NULL, 10);
                slurp("/proc/self/maps");
                unsigned long lo = 0, hi = 0;
                for (char *l = strtok(buf, "\n"); l; l = strtok(NULL, "\n"))
                    if (strstr(l, "[stack]")) sscanf(l, "%lx-%lx", &lo, &hi);
                int local;
                printf("stack in_maps=%d startstack_in_stack=%d sp_in_stack=%d\n", lo < hi,
                       lo <= startstack && startstack < hi,
                       lo <= (unsigned long)&local && (unsigned long)&local < hi);
                slurp("/proc/self/comm"); printf("comm=%s", buf);
                slurp("/proc/stat"); printf("stat_cpu=%d\n", strncmp(buf, "cpu  ", 5) == 0);

                snprintf(path, sizeof path, "/proc/%d/maps", getpid() + 1000);
                printf("cgroup=%d other_pid=%d sys_other=%d\n", slurp("/proc/self/cgroup"),
                       slurp(path), slurp("/sys/fs/cgroup/cpu.max"));
                char link[256] = {0};
                readlink("/proc/self/exe", link, sizeof link - 1);
                printf("exe=%s\n", link);
                struct stat st;
                int r = stat("/proc/meminfo", &st);
                printf("stat meminfo r=%d reg=%d size=%ld\n", r, S_ISREG(st.st_mode), (long)st.st_size);
                printf("access r=%d w=%d missing=%d\n", access("/proc/cpuinfo", R_OK),
                       access("/proc/cpuinfo", W_OK) == -1 && errno == EACCES, access("/proc/nope", F_OK));
                int fd = open("/proc/meminfo", O_WRONLY);
                printf("open meminfo for writing: %d errno=%d\n", fd, errno);
                DIR *d = opendir("/sys/devices/system/cpu");
                int cpu0 = 0;
                for (struct dirent *e; d && (e = readdir(d)); ) cpu0 |= strcmp(e->d_name, "cpu0") == 0;
                printf("cpu dir lists cpu0=%d\n", cpu0);
                return 0;
            }
        "#;
        let Some((r, dir)) = run_program("procfiles", src) else {
            return;
        };
        assert_eq!(r.code, 0, "{r:?}");
        assert_eq!(
            r.stdout,
            "maps ok=1\n\
             meminfo total_ok=1 free_ok=1 avail_ok=1\n\
             cpuinfo processors=1 vendor=1 model_name=1 flags_fpu=1 nproc=1\n\
             online=0\n\
             possible=0\n\
             status name=1 pid=1 ppid=1 threads=1 vmrss=1\n\
             stat pid_and_name=1 fields_after_name=50\n\
             stack in_maps=1 startstack_in_stack=1 sp_in_stack=1\n\
             comm=procfiles\n\
             stat_cpu=1\n\
             cgroup=-2 other_pid=-2 sys_other=-2\n\
             exe=/procfiles\n\
             stat meminfo r=0 reg=1 size=0\n\
             access r=0 w=1 missing=-1\n\
             open meminfo for writing: -1 errno=13\n\
             cpu dir lists cpu0=1\n",
            "{r:?}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn dev_null_zero_and_urandom() {
        let src = r#"
            #include <stdio.h>
            #include <unistd.h>
            #include <fcntl.h>
            #include <errno.h>
            #include <sys/stat.h>
            #include <sys/sysmacros.h>
            int main(void) {
                char b[64];
                int fd = open("/dev/null", O_RDWR);
                struct stat st; fstat(fd, &st);
                printf("null read=%zd write=%zd chr=%d dev=%u,%u\n", read(fd, b, sizeof b),
                       write(fd, "xyz", 3), S_ISCHR(st.st_mode), major(st.st_rdev), minor(st.st_rdev));
                close(fd);
                fd = open("/dev/zero", O_RDONLY);
                for (int i = 0; i < 64; i++) b[i] = 1;
                ssize_t n = read(fd, b, sizeof b);
                int zeros = 1;
                for (int i = 0; i < 64; i++) zeros &= b[i] == 0;
                printf("zero read=%zd zeros=%d\n", n, zeros);
                close(fd);
                fd = open("/dev/urandom", O_RDONLY);
                unsigned char r1[32] = {0}, r2[32] = {0};
                read(fd, r1, 32); read(fd, r2, 32);
                int differ = 0, nonzero = 0;
                for (int i = 0; i < 32; i++) { differ |= r1[i] != r2[i]; nonzero |= r1[i]; }
                printf("urandom differ=%d nonzero=%d\n", differ, nonzero != 0);
                close(fd);
                fd = open("/dev/random", O_RDONLY);
                printf("random read=%zd\n", read(fd, r1, 16));
                close(fd);
                int tty = open("/dev/tty", O_RDWR);
                printf("tty=%d errno=%d\n", tty, errno);
                return 0;
            }
        "#;
        let Some((r, dir)) = run_program("devs", src) else {
            return;
        };
        assert_eq!(r.code, 0, "{r:?}");
        assert_eq!(
            r.stdout,
            "null read=0 write=3 chr=1 dev=1,3\n\
             zero read=64 zeros=1\n\
             urandom differ=1 nonzero=1\n\
             random read=16\n\
             tty=-1 errno=6\n",
            "{r:?}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn pipes_eventfds_poll_and_select() {
        let src = r#"
            #include <stdio.h>
            #include <string.h>
            #include <unistd.h>
            #include <fcntl.h>
            #include <errno.h>
            #include <poll.h>
            #include <signal.h>
            #include <time.h>
            #include <sys/eventfd.h>
            #include <sys/select.h>
            #include <sys/ioctl.h>
            #include <sys/stat.h>
            static long ms_since(struct timespec *t0) {
                struct timespec t1; clock_gettime(CLOCK_MONOTONIC, &t1);
                return (t1.tv_sec - t0->tv_sec) * 1000 + (t1.tv_nsec - t0->tv_nsec) / 1000000;
            }
            int main(void) {
                signal(SIGPIPE, SIG_IGN);
                int p[2];
                if (pipe(p) != 0) { perror("pipe"); return 1; }
                struct stat st; fstat(p[0], &st);
                printf("fifo=%d\n", S_ISFIFO(st.st_mode));
                struct pollfd pf = { p[0], POLLIN, 0 };
                printf("poll empty 0ms=%d\n", poll(&pf, 1, 0));
                struct timespec t0; clock_gettime(CLOCK_MONOTONIC, &t0);
                int r = poll(&pf, 1, 50);
                long el = ms_since(&t0);
                printf("poll empty 50ms=%d waited=%d\n", r, el >= 45 && el < 1000);
                printf("write=%zd\n", write(p[1], "hello pipe", 10));
                r = poll(&pf, 1, 1000);
                printf("poll data=%d revents_in=%d\n", r, (pf.revents & POLLIN) != 0);
                int avail = 0; ioctl(p[0], FIONREAD, &avail);
                char b[64] = {0};
                printf("fionread=%d read=%zd %s\n", avail, read(p[0], b, sizeof b), b);

                fd_set rs, ws; FD_ZERO(&rs); FD_ZERO(&ws); FD_SET(p[0], &rs); FD_SET(p[1], &ws);
                struct timeval tv = { 0, 20000 };
                r = select(p[1] + 1, &rs, &ws, NULL, &tv);
                printf("select=%d r=%d w=%d\n", r, FD_ISSET(p[0], &rs) != 0, FD_ISSET(p[1], &ws) != 0);

                /* A big write goes in whole while it fits (64 KiB). */
                static char big[70000];
                int fl = fcntl(p[1], F_GETFL);
                fcntl(p[1], F_SETFL, fl | O_NONBLOCK);
                printf("nonblock flag=%d\n", (fcntl(p[1], F_GETFL) & O_NONBLOCK) != 0);
                ssize_t w = write(p[1], big, sizeof big);
                errno = 0;
                ssize_t w2 = write(p[1], "x", 1);
                printf("big write=%zd then=%zd errno=%d\n", w, w2, errno);
                long total = 0; ssize_t n;
                while (total < w && (n = read(p[0], big, sizeof big)) > 0) total += n;
                printf("drained=%ld\n", total);

                close(p[1]);
                pf.revents = 0;
                r = poll(&pf, 1, 0);
                printf("after writer closed: poll=%d hup=%d", r, (pf.revents & POLLHUP) != 0);
                printf(" read=%zd\n", read(p[0], b, sizeof b));
                close(p[0]);

                if (pipe2(p, O_NONBLOCK | O_CLOEXEC) != 0) { perror("pipe2"); return 1; }
                ssize_t rd = read(p[0], b, 1);
                int err = errno;
                printf("pipe2 empty read=%zd errno=%d cloexec=%d\n", rd, err, fcntl(p[0], F_GETFD) == FD_CLOEXEC);
                close(p[0]);
                w = write(p[1], "x", 1);
                printf("no reader: write=%zd errno=%d\n", w, errno);
                close(p[1]);

                int e = eventfd(0, 0);
                unsigned long long v = 3;
                write(e, &v, 8); v = 4; write(e, &v, 8); v = 0;
                rd = read(e, &v, 8);
                printf("eventfd read=%zd value=%llu\n", rd, v);
                pf.fd = e; pf.events = POLLIN | POLLOUT; pf.revents = 0;
                r = poll(&pf, 1, 0);
                printf("eventfd poll=%d in=%d out=%d\n", r, (pf.revents & POLLIN) != 0, (pf.revents & POLLOUT) != 0);
                close(e);
                e = eventfd(2, EFD_SEMAPHORE | EFD_NONBLOCK);
                unsigned long long a = 0, c = 0, d = 0;
                read(e, &a, 8); read(e, &c, 8);
                errno = 0;
                ssize_t rr = read(e, &d, 8);
                printf("semaphore %llu %llu then=%zd errno=%d\n", a, c, rr, errno);
                close(e);
                return 0;
            }
        "#;
        let Some((r, dir)) = run_program("pipes", src) else {
            return;
        };
        assert_eq!(r.code, 0, "{r:?}");
        assert_eq!(
            r.stdout,
            "fifo=1\n\
             poll empty 0ms=0\n\
             poll empty 50ms=0 waited=1\n\
             write=10\n\
             poll data=1 revents_in=1\n\
             fionread=10 read=10 hello pipe\n\
             select=1 r=0 w=1\n\
             nonblock flag=1\n\
             big write=65536 then=-1 errno=11\n\
             drained=65536\n\
             after writer closed: poll=1 hup=1 read=0\n\
             pipe2 empty read=-1 errno=11 cloexec=1\n\
             no reader: write=-1 errno=32\n\
             eventfd read=8 value=7\n\
             eventfd poll=1 in=0 out=1\n\
             semaphore 1 1 then=-1 errno=11\n",
            "{r:?}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn truncate_sync_locks_and_umask_reach_the_host() {
        let src = r#"
            #include <stdio.h>
            #include <unistd.h>
            #include <fcntl.h>
            #include <errno.h>
            #include <sys/file.h>
            #include <sys/stat.h>
            #include <sys/uio.h>
            int main(void) {
                int fd = open("/data.txt", O_RDWR | O_CREAT | O_TRUNC, 0644);
                if (fd < 0) { perror("open"); return 1; }
                write(fd, "0123456789", 10);
                printf("ftruncate=%d fsync=%d fdatasync=%d\n", ftruncate(fd, 4), fsync(fd), fdatasync(fd));
                struct stat st; fstat(fd, &st);
                printf("size=%ld\n", (long)st.st_size);
                printf("flock ex=%d un=%d sh_nb=%d un=%d bad=%d\n", flock(fd, LOCK_EX), flock(fd, LOCK_UN),
                       flock(fd, LOCK_SH | LOCK_NB), flock(fd, LOCK_UN), flock(fd, 99));
                struct flock l = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 2 };
                printf("setlk=%d", fcntl(fd, F_SETLK, &l));
                struct flock q = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0 };
                int g = fcntl(fd, F_GETLK, &q);
                printf(" getlk=%d unlocked=%d", g, q.l_type == F_UNLCK);
                l.l_type = F_UNLCK;
                printf(" unlock=%d setlkw=%d\n", fcntl(fd, F_SETLK, &l), fcntl(fd, F_SETLKW, &(struct flock){ .l_type = F_RDLCK }));
                lseek(fd, 0, SEEK_SET);
                char a[2] = {0}, b[3] = {0};
                struct iovec iov[2] = { { a, 1 }, { b, 2 } };
                printf("readv=%zd %s %s\n", readv(fd, iov, 2), a, b);
                close(fd);
                printf("umask old=%03o", umask(027));
                fd = open("/masked", O_WRONLY | O_CREAT, 0666);
                fstat(fd, &st);
                printf(" mode=%03o again=%03o\n", st.st_mode & 0777, umask(022));
                close(fd);
                truncate("/masked", 7);
                mkdir("/subdir", 0777);
                fd = open("/subdir", O_RDONLY | O_DIRECTORY);
                printf("fchdir=%d", fchdir(fd));
                close(fd);
                char cwd[64];
                printf(" cwd=%s\n", getcwd(cwd, sizeof cwd));
                printf("uid=%d euid=%d gid=%d egid=%d\n", getuid(), geteuid(), getgid(), getegid());
                return 0;
            }
        "#;
        let Some((r, dir)) = run_program("files", src) else {
            return;
        };
        assert_eq!(r.code, 0, "{r:?}");
        let data = dir.join("data.txt");
        assert_eq!(std::fs::read_to_string(&data).unwrap(), "0123");
        let masked = std::fs::metadata(dir.join("masked")).unwrap();
        assert_eq!(masked.len(), 7);
        assert_eq!(masked.permissions().mode() & 0o777, 0o640);
        // The gateway runs as the launching user, who owns what it creates.
        let owner = std::fs::metadata(&data).unwrap();
        assert_eq!(
            r.stdout,
            format!(
                "ftruncate=0 fsync=0 fdatasync=0\n\
                 size=4\n\
                 flock ex=0 un=0 sh_nb=0 un=0 bad=-1\n\
                 setlk=0 getlk=0 unlocked=1 unlock=0 setlkw=0\n\
                 readv=3 0 12\n\
                 umask old=022 mode=640 again=027\n\
                 fchdir=0 cwd=/subdir\n\
                 uid={u} euid={u} gid={g} egid={g}\n",
                u = owner.uid(),
                g = owner.gid()
            ),
            "{r:?}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// `chown` and its kin change the host file through the gateway;
    /// inotify exists (an instance and a bad descriptor's EBADF; its events
    /// are `tests/progs/inotify.c`'s), and so do extended attributes (the
    /// rest is `tests/progs/xattr.c`).
    #[test]
    fn owners_change_inotify_and_xattrs() {
        let src = r#"
            #define _GNU_SOURCE
            #include <stdio.h>
            #include <unistd.h>
            #include <fcntl.h>
            #include <errno.h>
            #include <sys/stat.h>
            #include <sys/inotify.h>
            #include <sys/xattr.h>
            #define SHOW(what, call) do { errno = 0; int r_ = (call); \
                printf("%s=%d errno=%d\n", what, r_, r_ < 0 ? errno : 0); } while (0)
            int main(void) {
                int fd = open("/own", O_RDWR | O_CREAT | O_TRUNC, 0644);
                if (fd < 0) { perror("open"); return 1; }
                symlink("own", "/lnk");
                SHOW("fchown -1 -1", fchown(fd, -1, -1));
                SHOW("chown self", chown("/own", getuid(), getgid()));
                SHOW("lchown self", lchown("/lnk", getuid(), getgid()));
                SHOW("fchownat empty path", fchownat(fd, "", -1, getgid(), AT_EMPTY_PATH));
                SHOW("chown missing", chown("/missing", 0, 0));
                SHOW("fchownat bad flag", fchownat(AT_FDCWD, "/own", 0, 0, 0x4));
                int root = getuid() == 0;
                SHOW("fchown 4242", fchown(fd, 4242, -1) == 0 || !root ? 0 : -1);
                SHOW("lchown 4343", lchown("/lnk", -1, 4343) == 0 || !root ? 0 : -1);
                SHOW("inotify_init1", inotify_init1(IN_CLOEXEC) >= 0 ? 0 : -1);
                SHOW("inotify_add_watch", inotify_add_watch(99, "/", IN_CREATE));
                char buf[64];
                SHOW("flistxattr", (int)flistxattr(fd, buf, sizeof buf));
                SHOW("getxattr", (int)getxattr("/own", "user.x", buf, sizeof buf));
                SHOW("fsetxattr", fsetxattr(fd, "user.x", "1", 1, 0));
                printf("root=%d\n", root);
                return 0;
            }
        "#;
        let Some((r, dir)) = run_program("owners", src) else {
            return;
        };
        assert_eq!(r.code, 0, "{r:?}");
        assert_eq!(
            r.stdout,
            format!(
                "fchown -1 -1=0 errno=0\n\
                 chown self=0 errno=0\n\
                 lchown self=0 errno=0\n\
                 fchownat empty path=0 errno=0\n\
                 chown missing=-1 errno=2\n\
                 fchownat bad flag=-1 errno=22\n\
                 fchown 4242=0 errno=0\n\
                 lchown 4343=0 errno=0\n\
                 inotify_init1=0 errno=0\n\
                 inotify_add_watch=-1 errno=9\n\
                 flistxattr=0 errno=0\n\
                 getxattr=-1 errno=61\n\
                 fsetxattr=0 errno=0\n\
                 root={}\n",
                u8::from(r.stdout.contains("root=1"))
            ),
            "{r:?}"
        );
        assert!(!r.stderr.contains("unimplemented system call"), "{r:?}");
        if r.stdout.contains("root=1") {
            // As root the gateway really changed the owners on the host.
            let own = std::fs::metadata(dir.join("own")).unwrap();
            assert_eq!(own.uid(), 4242);
            let lnk = std::fs::symlink_metadata(dir.join("lnk")).unwrap();
            assert_eq!(lnk.gid(), 4343);
            assert_ne!(own.gid(), 4343, "lchown changed the link's target");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn sleeping_naming_and_the_calls_a_partition_refuses() {
        let src = r#"
            #define _GNU_SOURCE
            #include <stdio.h>
            #include <string.h>
            #include <unistd.h>
            #include <errno.h>
            #include <time.h>
            #include <sched.h>
            #include <sys/prctl.h>
            #include <sys/resource.h>
            #include <sys/syscall.h>
            static long long now(clockid_t c) {
                struct timespec t; clock_gettime(c, &t);
                return t.tv_sec * 1000000000LL + t.tv_nsec;
            }
            int main(void) {
                long long t0 = now(CLOCK_MONOTONIC);
                struct timespec d = { 0, 20000000 };
                int r = nanosleep(&d, NULL);
                long long slept = now(CLOCK_MONOTONIC) - t0;
                printf("nanosleep=%d ok=%d\n", r, slept >= 20000000 && slept < 2000000000);
                long long target = now(CLOCK_MONOTONIC) + 15000000;
                struct timespec abs = { target / 1000000000, target % 1000000000 };
                r = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &abs, NULL);
                printf("clock_nanosleep abs=%d ok=%d\n", r, now(CLOCK_MONOTONIC) >= target);
                target = now(CLOCK_REALTIME) + 10000000;
                abs.tv_sec = target / 1000000000; abs.tv_nsec = target % 1000000000;
                r = clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &abs, NULL);
                printf("clock_nanosleep realtime=%d ok=%d\n", r, now(CLOCK_REALTIME) >= target);
                d.tv_nsec = 2000000000;
                r = nanosleep(&d, NULL);
                printf("bad nanosleep=%d errno=%d\n", r, errno);
                printf("sched_yield=%d\n", sched_yield());
                time_t t = time(NULL);
                printf("time_ok=%d\n", t > 1600000000);
                char name[16] = {0};
                prctl(PR_SET_NAME, "renamed-program-long");
                prctl(PR_GET_NAME, name);
                printf("name=%s\n", name);
                struct rusage ru;
                printf("getrusage=%d\n", getrusage(RUSAGE_SELF, &ru));
                struct rlimit rl;
                r = getrlimit(RLIMIT_NOFILE, &rl);
                printf("getrlimit=%d nofile=%ld\n", r, (long)rl.rlim_cur);
                printf("getppid=%d getpgrp_is_pid=%d\n", getppid(), getpgrp() == getpid());
                errno = 0;
                long f = syscall(SYS_fork);
                printf("fork=%ld errno=%d\n", f, errno);
                errno = 0;
                f = syscall(SYS_fork);
                printf("fork again=%ld errno=%d\n", f, errno);
                errno = 0;
                char *argv[] = { "/x", NULL };
                r = execve("/x", argv, argv + 1);
                printf("execve=%d errno=%d\n", r, errno);
                return 0;
            }
        "#;
        let Some((r, dir)) = run_program("sleeps", src) else {
            return;
        };
        assert_eq!(r.code, 0, "{r:?}");
        // The program's descriptor limit is the one `astraea` started
        // with: this test's own.
        let limits = std::fs::read_to_string("/proc/self/limits").unwrap();
        let nofile = limits
            .lines()
            .find(|l| l.starts_with("Max open files"))
            .and_then(|l| l.split_whitespace().nth(3))
            .unwrap()
            .to_string();
        assert_eq!(
            r.stdout,
            format!(
                "nanosleep=0 ok=1\n\
                 clock_nanosleep abs=0 ok=1\n\
                 clock_nanosleep realtime=0 ok=1\n\
                 bad nanosleep=-1 errno=22\n\
                 sched_yield=0\n\
                 time_ok=1\n\
                 name=renamed-program\n\
                 getrusage=0\n\
                 getrlimit=0 nofile={nofile}\n\
                 getppid=0 getpgrp_is_pid=1\n\
                 fork=-1 errno=38\n\
                 fork again=-1 errno=38\n\
                 execve=-1 errno=38\n"
            ),
            "{r:?}"
        );
        let said = "astraea: fork is not supported in a partition (one process per partition)";
        assert_eq!(r.stderr.matches(said).count(), 1, "{r:?}");
        assert!(
            r.stderr
                .contains("astraea: execve is not supported in a partition"),
            "{r:?}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// `open(O_CREAT)` while a host process removes and makes the same name
    /// again and again: Linux never fails it (the lookup and the create are
    /// one step under its locks); through 9P the name may change between
    /// them, and the open must start over rather than answer `ENOENT` or
    /// `EEXIST`.
    #[test]
    fn create_races_with_the_host() {
        const SRC: &str = r#"
            #include <errno.h>
            #include <fcntl.h>
            #include <stdio.h>
            #include <string.h>
            #include <unistd.h>
            int main(void) {
                int failures = 0;
                for (int i = 0; i < 3000; i++) {
                    int fd = open("/race.file", O_CREAT | O_WRONLY, 0644);
                    if (fd < 0) {
                        if (failures++ < 5)
                            printf("open: %s\n", strerror(errno));
                    } else
                        close(fd);
                }
                printf("failures %d\n", failures);
                return 0;
            }
        "#;
        if !kvm_available() {
            return;
        }
        let Some(dir) = compile("creatrace", SRC) else {
            return;
        };
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let churn = {
            let (stop, file) = (stop.clone(), dir.join("race.file"));
            std::thread::spawn(move || {
                let mut n = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let _ = std::fs::remove_file(&file);
                    let _ = std::fs::write(&file, b"");
                    n += 1;
                }
                n
            })
        };
        let r = run_in(&dir, "creatrace");
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let churned = churn.join().unwrap();
        assert_eq!(
            (r.code, r.stdout.as_str()),
            (0, "failures 0\n"),
            "{churned} host removals meanwhile: {r:?}"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}
