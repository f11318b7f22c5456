/* RLIMIT_FSIZE: a write that reaches the limit is cut short there, one at
 * or past it fails with EFBIG and raises SIGXFSZ (which HotSpot ignores, so
 * Java sees "File too large"); truncate and fallocate that would grow a
 * file past it likewise; shrinking, writes below it, O_APPEND at the end,
 * memory-only files, pipes (not limited) — each with the number of
 * SIGXFSZ taken so far. Exits 0.
 *
 *   fsize DIR        the checks above, on DIR/fsize.data
 *   fsize DIR kill   SIGXFSZ's default action: the process ends by it */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "errname.h"

static volatile int taken;
static void on_xfsz(int sig) {
    (void)sig;
    taken++;
}

static void show(const char *what, long r) {
    if (r < 0)
        printf("%s = -1 %s (SIGXFSZ %d)\n", what, errname(errno), taken);
    else
        printf("%s = %ld (SIGXFSZ %d)\n", what, r, taken);
    fflush(stdout);
}

static long size_of(int fd) {
    struct stat st;
    return fstat(fd, &st) == 0 ? (long)st.st_size : -1;
}

static char buf[20000];

/* SIGXFSZ's default action ends the process (exit status 153 from a
 * shell). */
static int killed(const char *path) {
    struct rlimit rl;
    getrlimit(RLIMIT_FSIZE, &rl);
    rl.rlim_cur = 10000;
    setrlimit(RLIMIT_FSIZE, &rl);
    int d = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    unlink(path);
    show("write 20000 with SIGXFSZ's default action", write(d, buf, 20000));
    show("write 1 at the limit with SIGXFSZ's default action", write(d, buf, 1));
    return 0;
}

int main(int argc, char **argv) {
    memset(buf, 'x', sizeof buf);
    char path[4200];
    snprintf(path, sizeof path, "%s/fsize.data", argc > 1 ? argv[1] : ".");
    if (argc > 2 && !strcmp(argv[2], "kill"))
        return killed(path);
    signal(SIGXFSZ, on_xfsz);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        perror("fsize: open");
        return 2;
    }
    struct rlimit rl;
    getrlimit(RLIMIT_FSIZE, &rl);
    rl.rlim_cur = 10000;
    show("setrlimit(FSIZE, 10000)", setrlimit(RLIMIT_FSIZE, &rl));
    show("write 8000", write(fd, buf, 8000));
    show("write 4000 (cut at the limit)", write(fd, buf, 4000));
    show("write 1 at the limit", write(fd, buf, 1));
    show("write 0 at the limit", write(fd, buf, 0));
    show("size", size_of(fd));
    show("pwrite 10 at 9995", pwrite(fd, buf, 10, 9995));
    show("pwrite 10 at 10000", pwrite(fd, buf, 10, 10000));
    show("pwrite 10 at 50000", pwrite(fd, buf, 10, 50000));
    struct iovec iov[2] = {{buf, 3000}, {buf, 3000}};
    show("pwritev 6000 at 6000", pwritev(fd, iov, 2, 6000));
    show("ftruncate 20000", ftruncate(fd, 20000));
    show("ftruncate 10000", ftruncate(fd, 10000));
    show("ftruncate 5000", ftruncate(fd, 5000));
    show("truncate path 10001", truncate(path, 10001));
    show("truncate path 9000", truncate(path, 9000));
    show("fallocate 0 to 12000", fallocate(fd, 0, 0, 12000));
    show("fallocate KEEP_SIZE 0 to 12000", fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 12000));
    show("fallocate 0 to 9500", fallocate(fd, 0, 0, 9500));
    show("size", size_of(fd));
    int ap = open(path, O_WRONLY | O_APPEND);
    show("O_APPEND write 1000 at 9500", write(ap, buf, 1000));
    show("O_APPEND write 1 at 10000", write(ap, buf, 1));
    close(ap);
    show("size", size_of(fd));
    int m = (int)syscall(SYS_memfd_create, "fsize", 0);
    show("memfd write 12000", write(m, buf, 12000));
    show("memfd write 1", write(m, buf, 1));
    show("memfd pwrite 5 at 9998", pwrite(m, buf, 5, 9998));
    show("memfd ftruncate 10001", ftruncate(m, 10001));
    show("memfd ftruncate 100", ftruncate(m, 100));
    show("memfd fallocate 0 to 10001", fallocate(m, 0, 0, 10001));
    show("memfd size", size_of(m));
    int p[2];
    if (pipe(p) == 0)
        show("pipe write 20000", write(p[1], buf, 20000));
    close(fd);
    unlink(path);
    return 0;
}
