/* File locks as Linux gives them within one process: POSIX record locks
 * belong to the process (two descriptors of a file never conflict, F_GETLK
 * does not report the process's own, closing any descriptor of the file
 * drops them all, a lock needs a descriptor open for its kind), OFD locks
 * belong to the open file description (they conflict with the process's
 * POSIX locks and with other descriptions', not with dups), flock locks
 * belong to the description and are apart from both; F_SETLKW and a
 * blocking flock wait for another thread's release. Run in DIR:
 *
 *   locks DIR
 *
 * Everything printed is independent of timing and pids, so the host's
 * output and a partition's must be equal (tests/tests/linux.rs). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "errname.h"

static const char *res(long r)
{
    static char buf[4][48];
    static int i;
    i = (i + 1) % 4;
    if (r < 0)
        snprintf(buf[i], sizeof buf[i], "-1 %s", errname(errno));
    else
        snprintf(buf[i], sizeof buf[i], "%ld", r);
    return buf[i];
}

static const char *tname(int t) { return t == F_RDLCK ? "rd" : t == F_WRLCK ? "wr" : t == F_UNLCK ? "un" : "?"; }

static long lk(int fd, int cmd, int type, off_t start, off_t len)
{
    struct flock f = {.l_type = type, .l_whence = SEEK_SET, .l_start = start, .l_len = len};
    return fcntl(fd, cmd, &f);
}

/* A test for a lock: what conflicts (type, range, whether the pid is -1). */
static void get(const char *what, int fd, int cmd, int type, off_t start, off_t len)
{
    struct flock f = {.l_type = type, .l_whence = SEEK_SET, .l_start = start, .l_len = len};
    long r = fcntl(fd, cmd, &f);
    const char *rr = res(r);
    if (r == 0 && f.l_type != F_UNLCK)
        printf("%s: %s %s %ld+%ld pid %s\n", what, rr, tname(f.l_type), (long)f.l_start, (long)f.l_len,
               f.l_pid == -1 ? "-1" : f.l_pid > 0 ? "positive" : "other");
    else
        printf("%s: %s %s\n", what, rr, tname(f.l_type));
}

static int fd_a;

static void *release_later(void *arg)
{
    (void)arg;
    usleep(50000);
    lk(fd_a, F_OFD_SETLK, F_UNLCK, 0, 0);
    return NULL;
}

static void *unflock_later(void *arg)
{
    (void)arg;
    usleep(50000);
    flock(fd_a, LOCK_UN);
    return NULL;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc != 2 || chdir(argv[1])) {
        fprintf(stderr, "usage: locks DIR\n");
        return 2;
    }
    int f = open("f", O_RDWR | O_CREAT | O_TRUNC, 0644);
    char zeros[100] = {0};
    write(f, zeros, sizeof zeros);
    close(f);

    printf("== POSIX locks are the process's\n");
    int fd1 = open("f", O_RDWR), fd2 = open("f", O_RDWR), fd3 = open("f", O_RDONLY);
    printf("wr 0+10 by fd1: %s\n", res(lk(fd1, F_SETLK, F_WRLCK, 0, 10)));
    printf("wr 5+10 by fd2: %s\n", res(lk(fd2, F_SETLK, F_WRLCK, 5, 10)));
    get("F_GETLK wr by fd3", fd3, F_GETLK, F_WRLCK, 0, 0);
    get("F_OFD_GETLK wr by fd3", fd3, F_OFD_GETLK, F_WRLCK, 0, 0);
    printf("OFD rd 0+5 by fd3: %s\n", res(lk(fd3, F_OFD_SETLK, F_RDLCK, 0, 5)));
    printf("rd 20+10 by fd3 (read-only): %s\n", res(lk(fd3, F_SETLK, F_RDLCK, 20, 10)));
    printf("wr 40+10 by fd3 (read-only): %s\n", res(lk(fd3, F_SETLK, F_WRLCK, 40, 10)));
    int wo = open("f", O_WRONLY);
    printf("rd 60+10 by a write-only fd: %s\n", res(lk(wo, F_SETLK, F_RDLCK, 60, 10)));
    printf("wr 60+10 by a write-only fd: %s\n", res(lk(wo, F_SETLK, F_WRLCK, 60, 10)));
    printf("un 0+5 by fd2: %s\n", res(lk(fd2, F_SETLK, F_UNLCK, 0, 5)));
    get("F_OFD_GETLK wr 0+0 by fd3", fd3, F_OFD_GETLK, F_WRLCK, 0, 0);
    get("F_OFD_GETLK wr 16+100 by fd3", fd3, F_OFD_GETLK, F_WRLCK, 16, 100);
    get("F_OFD_GETLK rd 20+5 by fd3", fd3, F_OFD_GETLK, F_RDLCK, 20, 5);
    printf("OFD getlk with l_pid set: ");
    struct flock bad = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_pid = 1};
    printf("%s\n", res(fcntl(fd3, F_OFD_GETLK, &bad)));
    bad.l_pid = 1;
    printf("OFD setlk with l_pid set: %s\n", res(fcntl(fd1, F_OFD_SETLK, &bad)));
    printf("un by an fd with no locks of its own (fd3): %s\n", res(lk(fd3, F_SETLK, F_UNLCK, 0, 0)));
    get("after: F_OFD_GETLK rd by fd1", fd1, F_OFD_GETLK, F_WRLCK, 0, 0);
    printf("wr again 0+10 by fd1: %s\n", res(lk(fd1, F_SETLK, F_WRLCK, 0, 10)));
    printf("close fd2 (never mind which fd took them): %s\n", res(close(fd2)));
    get("F_OFD_GETLK wr by fd3", fd3, F_OFD_GETLK, F_WRLCK, 0, 0);
    close(wo);

    printf("== OFD locks are the description's\n");
    printf("OFD wr by fd1: %s\n", res(lk(fd1, F_OFD_SETLK, F_WRLCK, 0, 0)));
    int fd4 = open("f", O_RDWR);
    printf("POSIX rd by fd4: %s\n", res(lk(fd4, F_SETLK, F_RDLCK, 0, 1)));
    get("F_GETLK by fd4", fd4, F_GETLK, F_RDLCK, 0, 0);
    printf("OFD wr by fd1 again: %s\n", res(lk(fd1, F_OFD_SETLK, F_WRLCK, 10, 10)));
    int fd5 = dup(fd1);
    printf("OFD rd by its dup: %s\n", res(lk(fd5, F_OFD_SETLK, F_RDLCK, 50, 1)));
    printf("close the dup: %s\n", res(close(fd5)));
    printf("POSIX rd by fd4: %s\n", res(lk(fd4, F_SETLK, F_RDLCK, 0, 1)));
    printf("OFD wr by fd3 (read-only): %s\n", res(lk(fd3, F_OFD_SETLK, F_WRLCK, 0, 1)));
    printf("close fd1: %s\n", res(close(fd1)));
    printf("POSIX rd by fd4: %s\n", res(lk(fd4, F_SETLK, F_RDLCK, 0, 1)));
    printf("POSIX wr by fd4: %s\n", res(lk(fd4, F_SETLK, F_WRLCK, 0, 0)));
    close(fd3);
    close(fd4);

    printf("== F_SETLKW waits for a release\n");
    fd_a = open("f", O_RDWR);
    int fd_b = open("f", O_RDWR);
    printf("OFD wr by a: %s\n", res(lk(fd_a, F_OFD_SETLK, F_WRLCK, 0, 0)));
    pthread_t th;
    pthread_create(&th, NULL, release_later, NULL);
    printf("F_SETLKW wr by b: %s\n", res(lk(fd_b, F_SETLKW, F_WRLCK, 0, 0)));
    pthread_join(th, NULL);
    get("F_OFD_GETLK by a", fd_a, F_OFD_GETLK, F_WRLCK, 0, 0);
    close(fd_a);
    close(fd_b);

    printf("== flock locks are the description's, apart from fcntl's\n");
    fd_a = open("f", O_RDWR);
    fd_b = open("f", O_RDONLY);
    printf("ex a: %s\n", res(flock(fd_a, LOCK_EX)));
    printf("ex|nb b: %s\n", res(flock(fd_b, LOCK_EX | LOCK_NB)));
    printf("sh|nb b: %s\n", res(flock(fd_b, LOCK_SH | LOCK_NB)));
    printf("ex a again: %s\n", res(flock(fd_a, LOCK_EX)));
    int c = open("f", O_RDWR);
    printf("POSIX wr by another fd meanwhile: %s\n", res(lk(c, F_SETLK, F_WRLCK, 0, 0)));
    printf("un POSIX: %s\n", res(lk(c, F_SETLK, F_UNLCK, 0, 0)));
    close(c);
    printf("un a: %s\n", res(flock(fd_a, LOCK_UN)));
    printf("sh|nb b: %s\n", res(flock(fd_b, LOCK_SH | LOCK_NB)));
    printf("sh|nb a: %s\n", res(flock(fd_a, LOCK_SH | LOCK_NB)));
    printf("ex|nb a (b shares): %s\n", res(flock(fd_a, LOCK_EX | LOCK_NB)));
    int d = dup(fd_b);
    printf("close b (its dup keeps it): %s\n", res(close(fd_b)));
    printf("ex|nb a: %s\n", res(flock(fd_a, LOCK_EX | LOCK_NB)));
    printf("close the dup: %s\n", res(close(d)));
    printf("ex|nb a: %s\n", res(flock(fd_a, LOCK_EX | LOCK_NB)));
    fd_b = open("f", O_RDONLY);
    pthread_create(&th, NULL, unflock_later, NULL);
    printf("blocking sh b: %s\n", res(flock(fd_b, LOCK_SH)));
    pthread_join(th, NULL);
    printf("bad operation: %s\n", res(flock(fd_b, 0)));
    printf("LOCK_SH|LOCK_EX: %s\n", res(flock(fd_b, LOCK_SH | LOCK_EX)));
    close(fd_a);
    close(fd_b);
    printf("flock on a pipe: ");
    int p[2];
    pipe(p);
    printf("%s\n", res(flock(p[0], LOCK_EX)));
    printf("F_SETLK on a pipe: %s\n", res(lk(p[1], F_SETLK, F_WRLCK, 0, 0)));
    printf("flock on a bad fd: %s\n", res(flock(99, LOCK_EX)));
    unlink("f");
    return 0;
}
