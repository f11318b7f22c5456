/* Resource limits: a program sees the limits it was started with (on the
 * host, its shell's; in a partition, those of the `astraea` that started
 * it), changes them as Linux allows, and RLIMIT_NOFILE bounds its
 * descriptors.
 *
 *  - every limit by getrlimit and prlimit64, and /proc/self/limits' line
 *    for open files;
 *  - lowering and raising soft limits, lowering a hard limit, then
 *    raising it again (EPERM without CAP_SYS_RESOURCE, which neither this
 *    host's root nor a partition's program has), soft above hard (EINVAL),
 *    an unknown resource (EINVAL), RLIMIT_NOFILE past nr_open (EPERM),
 *    prlimit64 of the process, of a thread, of no process (ESRCH), bad
 *    pointers (EFAULT);
 *  - with RLIMIT_NOFILE at 16: opens until EMFILE, dup2 and dup3 to 16
 *    (EBADF), F_DUPFD from 16 (EINVAL), poll of 17 entries (EINVAL);
 *    raised again, the descriptors past 16 open.
 *
 * With the argument `values`, prints every limit and /proc/self/limits'
 * line for open files instead (the test compares them with the host's,
 * which depend on how the test was started); without, one line per check
 * with limits told relative to the starting ones, the same on every run.
 * Exits 0. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "errname.h"

static const char *names[] = {"CPU",    "FSIZE",   "DATA",  "STACK",      "CORE",     "RSS",
                              "NPROC",  "NOFILE",  "MEMLOCK", "AS",       "LOCKS",    "SIGPENDING",
                              "MSGQUEUE", "NICE",  "RTPRIO", "RTTIME"};

static void value(char *out, size_t n, unsigned long long v) {
    if (v == (unsigned long long)RLIM_INFINITY)
        snprintf(out, n, "inf");
    else
        snprintf(out, n, "%llu", v);
}

static void show(const char *what, long r) {
    if (r < 0)
        printf("%s = -1 %s\n", what, errname(errno));
    else
        printf("%s = %ld\n", what, r);
}

struct lim {
    unsigned long long cur, max;
};

static long prl(int pid, int res, const struct lim *new, struct lim *old) {
    return syscall(SYS_prlimit64, pid, res, new, old);
}

/* The limits the program started with. */
static struct lim start[16];

/* `v` as a number, or relative to the starting soft or hard limit. */
static void relative(char *out, size_t n, unsigned long long v, int r, int relative_to_start) {
    if (!relative_to_start) {
        value(out, n, v);
        return;
    }
    long long ds = (long long)(v - start[r].cur), dh = (long long)(v - start[r].max);
    if (v == (unsigned long long)RLIM_INFINITY)
        snprintf(out, n, "inf");
    else if (dh == 0)
        snprintf(out, n, "hard");
    else if (ds == 0)
        snprintf(out, n, "soft");
    else if (dh >= -8 && dh < 0)
        snprintf(out, n, "hard%lld", dh);
    else
        snprintf(out, n, "%llu", v);
}

static int rel = 1;

static void print_limit(int r) {
    struct lim l;
    char c[32], m[32];
    long rc = prl(0, r, NULL, &l);
    struct rlimit g;
    int grc = getrlimit(r, &g);
    relative(c, sizeof c, l.cur, r, rel);
    relative(m, sizeof m, l.max, r, rel);
    printf("%-10s %s %s%s\n", names[r], c, m,
           rc == 0 && grc == 0 && g.rlim_cur == l.cur && g.rlim_max == l.max ? "" : " (getrlimit differs)");
}

/* /proc/self/limits' line for open files, agreeing with getrlimit. */
static void proc_line(void) {
    FILE *f = fopen("/proc/self/limits", "r");
    char line[256];
    struct rlimit g;
    getrlimit(RLIMIT_NOFILE, &g);
    char want[256];
    snprintf(want, sizeof want, "Max open files            %-20llu %-20llu files     \n",
             (unsigned long long)g.rlim_cur, (unsigned long long)g.rlim_max);
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "Max open files", 14) == 0)
            printf("/proc/self/limits open files: %s\n", strcmp(line, want) == 0 ? "as getrlimit" : line);
    if (f)
        fclose(f);
}

static void *idle(void *arg) {
    (void)arg;
    usleep(100000);
    return NULL;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IONBF, 0);
    for (int r = 0; r < 16; r++)
        prl(0, r, NULL, &start[r]);
    if (argc > 1 && strcmp(argv[1], "values") == 0) {
        rel = 0;
        for (int r = 0; r < 16; r++)
            print_limit(r);
        proc_line();
        return 0;
    }
    for (int r = 0; r < 16; r++)
        print_limit(r);
    proc_line();

    struct lim orig, l, old;
    prl(0, RLIMIT_NOFILE, NULL, &orig);
    l.cur = 100;
    l.max = orig.max;
    show("lower NOFILE soft to 100", prl(0, RLIMIT_NOFILE, &l, &old));
    printf("  old soft is the original: %d\n", old.cur == orig.cur);
    print_limit(RLIMIT_NOFILE);
    proc_line();
    l.cur = orig.max;
    show("raise NOFILE soft to hard", prl(0, RLIMIT_NOFILE, &l, NULL));
    l.cur = 2 * orig.max + 1;
    show("soft above hard", prl(0, RLIMIT_NOFILE, &l, NULL));
    l.cur = l.max = 2000000;
    show("NOFILE past nr_open", prl(0, RLIMIT_NOFILE, &l, NULL));
    l.cur = 64;
    l.max = orig.max - 1;
    show("lower NOFILE hard", prl(0, RLIMIT_NOFILE, &l, NULL));
    print_limit(RLIMIT_NOFILE);
    l.max = orig.max;
    show("raise NOFILE hard again", prl(0, RLIMIT_NOFILE, &l, NULL));
    l.cur = orig.max - 1;
    l.max = orig.max - 1;
    show("set NOFILE back (hard stays lowered)", prl(0, RLIMIT_NOFILE, &l, NULL));

    struct rlimit core = {0, 0};
    show("setrlimit CORE 0 0", setrlimit(RLIMIT_CORE, &core));
    print_limit(RLIMIT_CORE);
    core.rlim_max = 1;
    show("setrlimit CORE hard up", setrlimit(RLIMIT_CORE, &core));
    struct rlimit st;
    getrlimit(RLIMIT_STACK, &st);
    st.rlim_cur = 4 << 20;
    show("setrlimit STACK soft 4 MiB", setrlimit(RLIMIT_STACK, &st));
    print_limit(RLIMIT_STACK);
    show("getrlimit 16", syscall(SYS_getrlimit, 16, &st));
    show("setrlimit 16", syscall(SYS_setrlimit, 16, &st));
    show("prlimit64 resource 99", prl(0, 99, NULL, &l));
    show("getrlimit bad pointer", syscall(SYS_getrlimit, RLIMIT_CORE, (void *)8));
    show("setrlimit bad pointer", syscall(SYS_setrlimit, RLIMIT_CORE, (void *)8));
    show("prlimit64 bad new", prl(0, RLIMIT_CORE, (void *)8, NULL));
    show("prlimit64 bad old", prl(0, RLIMIT_CORE, NULL, (void *)8));
    show("prlimit64 bad new, no process", prl(999999, RLIMIT_CORE, (void *)8, NULL));
    show("prlimit64 no process", prl(999999, RLIMIT_CORE, NULL, &l));
    show("prlimit64 own pid", prl(getpid(), RLIMIT_CORE, NULL, &l));
    pthread_t t;
    pthread_create(&t, NULL, idle, NULL);
    show("prlimit64 own tid", prl((int)syscall(SYS_gettid), RLIMIT_CORE, NULL, &l));
    pthread_join(t, NULL);

    /* Descriptors bounded by RLIMIT_NOFILE, from 0-2 alone (a test
     * runner may leave others open on the host). */
    syscall(SYS_close_range, 3, ~0u, 0);
    l.cur = 16;
    l.max = orig.max - 1;
    prl(0, RLIMIT_NOFILE, &l, NULL);
    int last = -1, n = 0;
    for (;;) {
        int fd = open("/dev/null", O_RDONLY);
        if (fd < 0) {
            printf("open until it fails: %d opened, last %d, then %s\n", n, last, errname(errno));
            break;
        }
        last = fd;
        n++;
    }
    show("dup2 to 16", dup2(0, 16));
    show("dup2 to 15", dup2(0, 15));
    show("dup3 to 20", syscall(SYS_dup3, 0, 20, 0));
    show("F_DUPFD from 16", fcntl(0, F_DUPFD, 16));
    show("F_DUPFD from 3 (full)", fcntl(0, F_DUPFD, 3));
    close(10);
    show("F_DUPFD from 3 after closing 10", fcntl(0, F_DUPFD, 3));
    struct pollfd pf[17];
    for (int i = 0; i < 17; i++) {
        pf[i].fd = -1;
        pf[i].events = POLLIN;
    }
    show("poll of 17", poll(pf, 17, 0));
    show("poll of 16", poll(pf, 16, 0));
    l.cur = 64;
    prl(0, RLIMIT_NOFILE, &l, NULL);
    show("open after raising to 64", open("/dev/null", O_RDONLY));
    show("dup2 to 40", dup2(0, 40));
    /* Lowered below what is open: those stay, new ones are refused. */
    l.cur = 8;
    prl(0, RLIMIT_NOFILE, &l, NULL);
    show("open with 8 and more open", open("/dev/null", O_RDONLY));
    show("close 40", close(40));
    return 0;
}
