/* The less common system calls a real program (and JDK 25) makes, as Linux
 * answers them: mincore, membarrier, sched_{get,set}affinity, madvise,
 * fallocate, copy_file_range, sendfile, getrusage, times, timerfd, prctl,
 * fsync of every kind of descriptor, sync_file_range, readahead,
 * wait4/waitid in a process without children, and preadv/pwritev and
 * preadv2/pwritev2 with their flags on files, memfds, pipes and sockets.
 * argv[1] is a writable directory. One line per check: the results and
 * errno names, never addresses or timings; the host kernel is the oracle.
 * Calls go through syscall() so glibc and musl make the same ones. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/times.h>
#include <time.h>
#include <unistd.h>

#define NR_mincore 27
#define NR_madvise 28
#define NR_sendfile 40
#define NR_prctl 157
#define NR_sched_setaffinity 203
#define NR_sched_getaffinity 204
#define NR_timerfd_create 283
#define NR_fallocate 285
#define NR_timerfd_settime 286
#define NR_timerfd_gettime 287
#define NR_membarrier 324
#define NR_copy_file_range 326
#define NR_preadv2 327
#define NR_pwritev2 328
#define PR_SET_NAME 15
#define PR_GET_NAME 16

static long page;
static const char *dir;

static const char *ename(int e) {
    switch (e) {
    case 0: return "0";
    case EPERM: return "EPERM";
    case ESRCH: return "ESRCH";
    case EINTR: return "EINTR";
    case EBADF: return "EBADF";
    case EACCES: return "EACCES";
    case EAGAIN: return "EAGAIN";
    case ENOMEM: return "ENOMEM";
    case EFAULT: return "EFAULT";
    case EISDIR: return "EISDIR";
    case EINVAL: return "EINVAL";
    case ESPIPE: return "ESPIPE";
    case ENODEV: return "ENODEV";
    case ENOSYS: return "ENOSYS";
    case EOPNOTSUPP: return "EOPNOTSUPP";
    case EXDEV: return "EXDEV";
    case ECHILD: return "ECHILD";
    case EPIPE: return "EPIPE";
    default: {
        static char buf[32];
        snprintf(buf, sizeof buf, "errno %d", e);
        return buf;
    }
    }
}

/* Prints "what: RESULT" where RESULT is the return value or -1 and its errno. */
static long show(const char *what, long r) {
    if (r < 0)
        printf("%s: -1 %s\n", what, ename(errno));
    else
        printf("%s: %ld\n", what, r);
    return r;
}

static char *anon(size_t pages) {
    char *p = mmap(NULL, pages * page, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    return p;
}

static int make_file(const char *name, size_t size, int flags) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | flags, 0644);
    if (fd < 0) {
        perror(path);
        exit(1);
    }
    char buf[4096];
    for (size_t done = 0; done < size;) {
        size_t n = size - done < sizeof buf ? size - done : sizeof buf;
        for (size_t i = 0; i < n; i++)
            buf[i] = 'a' + (done + i) % 26;
        if (write(fd, buf, n) != (ssize_t)n) {
            perror("write");
            exit(1);
        }
        done += n;
    }
    return fd;
}

static long fsize(int fd) {
    struct stat st;
    return fstat(fd, &st) == 0 ? (long)st.st_size : -1;
}

/* --- mincore --------------------------------------------------------- */

static void test_mincore(void) {
    unsigned char vec[8];
    char *p = anon(4);
    memset(vec, 0xee, sizeof vec);
    show("mincore fresh anon", syscall(NR_mincore, p, 4 * page, vec));
    printf("mincore fresh page0 resident: %d\n", vec[0] & 1);
    p[0] = 1;
    p[2 * page] = 1;
    syscall(NR_mincore, p, 4 * page, vec);
    printf("mincore touched page0,2 resident: %d %d\n", vec[0] & 1, vec[2] & 1);
    show("mincore len 1 (rounded up)", syscall(NR_mincore, p, 1, vec));
    show("mincore len 0", syscall(NR_mincore, p, 0, vec));
    show("mincore unaligned", syscall(NR_mincore, p + 1, page, vec));
    show("mincore bad vec", syscall(NR_mincore, p, page, (void *)8));
    syscall(NR_madvise, p, 4 * page, MADV_DONTNEED);
    syscall(NR_mincore, p, page, vec);
    printf("mincore after DONTNEED page0 resident: %d\n", vec[0] & 1);
    p[0] = 1;
    mprotect(p, page, PROT_NONE);
    syscall(NR_mincore, p, page, vec);
    printf("mincore PROT_NONE touched page resident: %d\n", vec[0] & 1);
    munmap(p + page, page);
    show("mincore over a hole", syscall(NR_mincore, p, 4 * page, vec));
    show("mincore unmapped", syscall(NR_mincore, p + page, page, vec));
    show("mincore beyond user space", syscall(NR_mincore, (void *)0x7ffffffff000UL, 2 * page, vec));
    munmap(p, 4 * page);

    int fd = make_file("mincore.dat", 3 * page, 0);
    char *m = mmap(NULL, 3 * page, PROT_READ, MAP_SHARED, fd, 0);
    volatile char c = m[page];
    (void)c;
    syscall(NR_mincore, m, 3 * page, vec);
    printf("mincore file page1 after read resident: %d\n", vec[1] & 1);
    munmap(m, 3 * page);
    close(fd);

    /* A file that was just read is in memory (Linux's page cache; in a
     * partition, the file cache of the read-only host root) before the
     * mapping touches it. */
    fd = open("/etc/passwd", O_RDONLY);
    char buf[4096];
    while (read(fd, buf, sizeof buf) > 0)
        ;
    m = mmap(NULL, page, PROT_READ, MAP_PRIVATE, fd, 0);
    syscall(NR_mincore, m, page, vec);
    printf("mincore read-but-untouched file page resident: %d\n", vec[0] & 1);
    munmap(m, page);
    close(fd);
}

/* --- membarrier ------------------------------------------------------ */

static void test_membarrier(void) {
    long q = syscall(NR_membarrier, 0, 0, 0);
    printf("membarrier QUERY: %#lx\n", q);
    show("membarrier QUERY flags=1", syscall(NR_membarrier, 0, 1, 0));
    show("membarrier GLOBAL", syscall(NR_membarrier, 1, 0, 0));
    show("membarrier PRIVATE_EXPEDITED unregistered", syscall(NR_membarrier, 8, 0, 0));
    show("membarrier REGISTER_PRIVATE_EXPEDITED", syscall(NR_membarrier, 16, 0, 0));
    show("membarrier PRIVATE_EXPEDITED", syscall(NR_membarrier, 8, 0, 0));
    show("membarrier GET_REGISTRATIONS", syscall(NR_membarrier, 512, 0, 0));
    show("membarrier REGISTER_GLOBAL_EXPEDITED", syscall(NR_membarrier, 4, 0, 0));
    show("membarrier GLOBAL_EXPEDITED", syscall(NR_membarrier, 2, 0, 0));
    show("membarrier SYNC_CORE unregistered", syscall(NR_membarrier, 32, 0, 0));
    show("membarrier REGISTER_SYNC_CORE", syscall(NR_membarrier, 64, 0, 0));
    show("membarrier SYNC_CORE", syscall(NR_membarrier, 32, 0, 0));
    show("membarrier GET_REGISTRATIONS", syscall(NR_membarrier, 512, 0, 0));
    show("membarrier unknown", syscall(NR_membarrier, 1 << 20, 0, 0));
}

/* --- affinity -------------------------------------------------------- */

static void test_affinity(void) {
    unsigned long mask[16];
    show("sched_getaffinity size 4", syscall(NR_sched_getaffinity, 0, 4, mask));
    show("sched_getaffinity size 12", syscall(NR_sched_getaffinity, 0, 12, mask));
    memset(mask, 0, sizeof mask);
    long n = syscall(NR_sched_getaffinity, 0, sizeof mask, mask);
    printf("sched_getaffinity: %s, cpu0 %s\n", n >= 8 ? "ok" : "FAILED",
           mask[0] & 1 ? "set" : "clear");
    show("sched_getaffinity bad pid", syscall(NR_sched_getaffinity, 999999, sizeof mask, mask));
    show("sched_getaffinity bad mask", syscall(NR_sched_getaffinity, 0, sizeof mask, (void *)8));
    mask[0] = 1;
    show("sched_setaffinity {0}", syscall(NR_sched_setaffinity, 0, 8, mask));
    show("sched_setaffinity {0} own tid", syscall(NR_sched_setaffinity, syscall(SYS_gettid), 8, mask));
    mask[0] = 0;
    show("sched_setaffinity {}", syscall(NR_sched_setaffinity, 0, 8, mask));
    mask[0] = 1;
    show("sched_setaffinity bad pid", syscall(NR_sched_setaffinity, 999999, 8, mask));
    cpu_set_t set;
    CPU_ZERO(&set);
    sched_getaffinity(0, sizeof set, &set);
    printf("CPU_COUNT after {0}: %d\n", CPU_COUNT(&set));
}

/* --- madvise --------------------------------------------------------- */

static void test_madvise(void) {
    static const struct {
        int advice;
        const char *name;
    } advices[] = {
        {0, "NORMAL"},        {1, "RANDOM"},    {2, "SEQUENTIAL"},     {3, "WILLNEED"},
        {4, "DONTNEED"},      {8, "FREE"},      {10, "DONTFORK"},      {11, "DOFORK"},
        {14, "HUGEPAGE"},     {15, "NOHUGEPAGE"}, {16, "DONTDUMP"},    {17, "DODUMP"},
        {18, "WIPEONFORK"},   {19, "KEEPONFORK"}, {20, "COLD"},        {21, "PAGEOUT"},
        {22, "POPULATE_READ"}, {23, "POPULATE_WRITE"}, {24, "DONTNEED_LOCKED"},
        {7, "(7)"},           {99, "(99)"},     {-1, "(-1)"},
    };
    char *p = anon(4);
    char what[64];
    for (size_t i = 0; i < sizeof advices / sizeof advices[0]; i++) {
        snprintf(what, sizeof what, "madvise %s", advices[i].name);
        show(what, syscall(NR_madvise, p, 4 * page, advices[i].advice));
    }
    memset(p, 7, 4 * page);
    syscall(NR_madvise, p, 2 * page, MADV_DONTNEED);
    printf("madvise DONTNEED reads back: %d %d\n", p[0], p[3 * page]);
    show("madvise unaligned", syscall(NR_madvise, p + 1, page, MADV_WILLNEED));
    show("madvise len 0", syscall(NR_madvise, p, 0, MADV_WILLNEED));
    show("madvise REMOVE private anon", syscall(NR_madvise, p, page, 9));
    char *sh = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    sh[0] = 5;
    show("madvise FREE shared anon", syscall(NR_madvise, sh, page, 8));
    show("madvise WIPEONFORK shared anon", syscall(NR_madvise, sh, page, 18));
    show("madvise REMOVE shared anon", syscall(NR_madvise, sh, page, 9));
    printf("madvise REMOVE shared anon reads back: %d\n", sh[0]);
    munmap(sh, page);
    int fd = make_file("madvise.dat", page, 0);
    char *fm = mmap(NULL, page, PROT_READ, MAP_PRIVATE, fd, 0);
    show("madvise FREE private file", syscall(NR_madvise, fm, page, 8));
    show("madvise REMOVE private file", syscall(NR_madvise, fm, page, 9));
    show("madvise DONTNEED private file", syscall(NR_madvise, fm, page, 4));
    munmap(fm, page);
    fm = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, 0);
    show("madvise REMOVE shared read-only file", syscall(NR_madvise, fm, page, 9));
    munmap(fm, page);
    close(fd);
    munmap(p + page, page);
    show("madvise over a hole", syscall(NR_madvise, p, 4 * page, MADV_WILLNEED));
    show("madvise unmapped", syscall(NR_madvise, p + page, page, MADV_NORMAL));
    munmap(p, 4 * page);
}

/* --- fallocate ------------------------------------------------------- */

static void test_fallocate(void) {
    int fd = make_file("falloc.dat", 1000, 0);
    show("fallocate extend to 10000", syscall(NR_fallocate, fd, 0, 0L, 10000L));
    printf("fallocate size: %ld\n", fsize(fd));
    show("fallocate inside", syscall(NR_fallocate, fd, 0, 100L, 100L));
    printf("fallocate size: %ld\n", fsize(fd));
    show("fallocate KEEP_SIZE past end", syscall(NR_fallocate, fd, 1, 0L, 20000L));
    printf("fallocate size: %ld\n", fsize(fd));
    show("fallocate PUNCH_HOLE|KEEP_SIZE", syscall(NR_fallocate, fd, 3, 10L, 20L));
    char buf[40];
    pread(fd, buf, sizeof buf, 0);
    int zeros = 0;
    for (int i = 0; i < 40; i++)
        zeros += buf[i] == 0;
    printf("fallocate hole: %d zero bytes, byte 9 '%c', byte 30 '%c', size %ld\n", zeros,
           buf[9], buf[30], fsize(fd));
    show("fallocate PUNCH_HOLE alone", syscall(NR_fallocate, fd, 2, 0L, 10L));
    show("fallocate len 0", syscall(NR_fallocate, fd, 0, 0L, 0L));
    show("fallocate offset -1", syscall(NR_fallocate, fd, 0, -1L, 10L));
    show("fallocate unknown mode", syscall(NR_fallocate, fd, 0x1000, 0L, 10L));
    int fds[2];
    pipe(fds);
    show("fallocate pipe", syscall(NR_fallocate, fds[1], 0, 0L, 10L));
    close(fds[0]);
    close(fds[1]);
    char path[4096];
    snprintf(path, sizeof path, "%s/falloc.dat", dir);
    int ro = open(path, O_RDONLY);
    show("fallocate read-only fd", syscall(NR_fallocate, ro, 0, 0L, 10L));
    close(ro);
    int app = open(path, O_WRONLY | O_APPEND);
    show("fallocate PUNCH_HOLE on O_APPEND", syscall(NR_fallocate, app, 3, 0L, 2L));
    close(app);
    int d = open(dir, O_RDONLY | O_DIRECTORY);
    show("fallocate directory", syscall(NR_fallocate, d, 0, 0L, 10L));
    close(d);
    show("fallocate bad fd", syscall(NR_fallocate, 999, 0, 0L, 10L));
    close(fd);
}

/* --- copy_file_range, sendfile ---------------------------------------- */

static int same(int a, long aoff, int b, long boff, long len) {
    char x[512], y[512];
    while (len > 0) {
        long n = len < 512 ? len : 512;
        if (pread(a, x, n, aoff) != n || pread(b, y, n, boff) != n || memcmp(x, y, n))
            return 0;
        len -= n;
        aoff += n;
        boff += n;
    }
    return 1;
}

static void test_copy(void) {
    int src = make_file("src.dat", 100000, 0);
    int dst = make_file("dst.dat", 0, 0);
    loff_t in = 100, out = 0;
    show("copy_file_range 70000 at 100", syscall(NR_copy_file_range, src, &in, dst, &out, 70000L, 0));
    printf("copy_file_range offsets: %ld %ld, same: %d\n", (long)in, (long)out,
           same(src, 100, dst, 0, 70000));
    printf("copy_file_range positions untouched: %ld %ld\n", (long)lseek(src, 0, SEEK_CUR),
           (long)lseek(dst, 0, SEEK_CUR));
    lseek(src, 99000, SEEK_SET);
    lseek(dst, 5, SEEK_SET);
    show("copy_file_range by positions", syscall(NR_copy_file_range, src, NULL, dst, NULL, 5000L, 0));
    printf("copy_file_range positions: %ld %ld, same: %d\n", (long)lseek(src, 0, SEEK_CUR),
           (long)lseek(dst, 0, SEEK_CUR), same(src, 99000, dst, 5, 1000));
    show("copy_file_range at end", syscall(NR_copy_file_range, src, NULL, dst, NULL, 5000L, 0));
    in = 0;
    show("copy_file_range flags", syscall(NR_copy_file_range, src, &in, dst, NULL, 10L, 1));
    out = 50;
    show("copy_file_range same file overlapping",
         syscall(NR_copy_file_range, src, &in, src, &out, 100L, 0));
    int fds[2];
    pipe(fds);
    show("copy_file_range to a pipe", syscall(NR_copy_file_range, src, &in, fds[1], NULL, 10L, 0));
    char path[4096];
    snprintf(path, sizeof path, "%s/src.dat", dir);
    int ro = open(path, O_RDONLY);
    show("copy_file_range to read-only", syscall(NR_copy_file_range, src, &in, ro, NULL, 10L, 0));
    int app = open(path, O_WRONLY | O_APPEND);
    show("copy_file_range to O_APPEND", syscall(NR_copy_file_range, src, &in, app, NULL, 10L, 0));
    close(app);

    /* sendfile: a file into a pipe, and into another file. */
    off_t off = 26;
    show("sendfile to pipe at 26", syscall(NR_sendfile, fds[1], src, &off, 10L));
    char buf[16] = {0};
    read(fds[0], buf, 10);
    printf("sendfile pipe got: %s, offset %ld\n", buf, (long)off);
    int dst2 = make_file("dst2.dat", 0, 0);
    lseek(src, 1000, SEEK_SET);
    show("sendfile by position", syscall(NR_sendfile, dst2, src, NULL, 30000L));
    printf("sendfile positions: %ld %ld, same: %d\n", (long)lseek(src, 0, SEEK_CUR),
           (long)lseek(dst2, 0, SEEK_CUR), same(src, 1000, dst2, 0, 30000));
    off = 100000;
    show("sendfile at end", syscall(NR_sendfile, dst2, src, &off, 10L));
    show("sendfile count 0", syscall(NR_sendfile, dst2, src, NULL, 0L));
    show("sendfile to read-only", syscall(NR_sendfile, ro, src, NULL, 10L));
    show("sendfile bad fd", syscall(NR_sendfile, 999, src, NULL, 10L));
    write(fds[1], "pipe", 4);
    show("sendfile from a pipe", syscall(NR_sendfile, dst2, fds[0], NULL, 4L));
    int d = open(dir, O_RDONLY | O_DIRECTORY);
    show("copy_file_range from a directory", syscall(NR_copy_file_range, d, NULL, dst2, NULL, 4L, 0));
    close(d);
    close(ro);
    close(fds[0]);
    close(fds[1]);
    close(src);
    close(dst);
    close(dst2);
}

/* --- getrusage, times --------------------------------------------------- */

static volatile unsigned long sink;

/* Spends `ms` of CPU time (of wall time in a partition, whose CPU clocks
 * are the monotonic clock). */
static void burn(long ms) {
    struct timespec a, b;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
    do {
        for (int i = 0; i < 100000; i++)
            sink += i;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
    } while ((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 < ms);
}

static long rusage_us(int who) {
    struct rusage ru;
    if (getrusage(who, &ru) != 0)
        return -1;
    return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000L + ru.ru_utime.tv_usec +
           ru.ru_stime.tv_usec;
}

static long ts_ms(struct timespec t) {
    return t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* A thread that sleeps has used almost no CPU time, whatever the others did. */
static pthread_t burner;
static volatile int burned;
static void *sleeper(void *arg) {
    (void)arg;
    while (!__atomic_load_n(&burned, __ATOMIC_ACQUIRE))
        usleep(10000);
    struct timespec own, other;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &own);
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    clockid_t cid;
    pthread_getcpuclockid(burner, &cid);
    clock_gettime(cid, &other);
    printf("sleeping thread: own CPU time < 50 ms: %s, RUSAGE_THREAD < 50 ms: %s, "
           "the burner's >= 90 ms: %s\n",
           ts_ms(own) < 50 ? "yes" : "no",
           ru.ru_utime.tv_sec * 1000 + ru.ru_utime.tv_usec / 1000 < 50 ? "yes" : "no",
           ts_ms(other) >= 90 ? "yes" : "no");
    return NULL;
}

static void test_rusage(void) {
    long before = rusage_us(RUSAGE_SELF);
    struct tms t0, t1;
    clock_t c0 = times(&t0);
    burn(100);
    long after = rusage_us(RUSAGE_SELF);
    clock_t c1 = times(&t1);
    printf("getrusage SELF cpu time grows by >= 50 ms: %s\n",
           after - before >= 50000 ? "yes" : "no");
    printf("getrusage THREAD: %s\n", rusage_us(RUSAGE_THREAD) >= 50000 ? "ok" : "FAILED");
    printf("getrusage CHILDREN: %ld\n", rusage_us(RUSAGE_CHILDREN));
    struct rusage ru;
    show("getrusage who=5", getrusage(5, &ru));
    long ticks = sysconf(_SC_CLK_TCK);
    long used = (t1.tms_utime + t1.tms_stime) - (t0.tms_utime + t0.tms_stime);
    printf("times: clock grows %s, cpu ticks grow by >= 5: %s, children %ld\n",
           c1 > c0 ? "yes" : "no", used * 1000 / ticks >= 50 ? "yes" : "no",
           (long)(t1.tms_cutime + t1.tms_cstime));
    burner = pthread_self();
    pthread_t th;
    pthread_create(&th, NULL, sleeper, NULL);
    burn(100);
    __atomic_store_n(&burned, 1, __ATOMIC_RELEASE);
    pthread_join(th, NULL);
    struct timespec ts;
    show("clock_gettime bad clock 10", syscall(SYS_clock_gettime, 10, &ts));
    show("clock_gettime bad CPU clock of a missing thread",
         syscall(SYS_clock_gettime, (~999999 << 3) | 6, &ts));
}

/* --- timerfd -------------------------------------------------------- */

struct its {
    struct timespec interval, value;
};

static int tfd_set(int fd, int flags, long value_ns, long interval_ns, struct its *old) {
    struct its v = {{interval_ns / 1000000000, interval_ns % 1000000000},
                    {value_ns / 1000000000, value_ns % 1000000000}};
    return syscall(NR_timerfd_settime, fd, flags, &v, old);
}

static void on_usr1(int sig) {
    (void)sig;
}

static pthread_t main_thread;
static void *signal_later(void *arg) {
    (void)arg;
    usleep(30000);
    pthread_kill(main_thread, SIGUSR1);
    return NULL;
}

static int arm_fd;
static void *arm_later(void *arg) {
    (void)arg;
    usleep(30000);
    tfd_set(arm_fd, 0, 20000000, 0, NULL);
    return NULL;
}

static void test_timerfd(void) {
    int fd = syscall(NR_timerfd_create, CLOCK_MONOTONIC, 0);
    printf("timerfd_create MONOTONIC: %s\n", fd >= 0 ? "ok" : ename(errno));
    show("timerfd_create bad clock", syscall(NR_timerfd_create, 99, 0));
    show("timerfd_create bad flags", syscall(NR_timerfd_create, CLOCK_MONOTONIC, 1));
    struct its cur;
    show("timerfd_gettime disarmed", syscall(NR_timerfd_gettime, fd, &cur));
    printf("timerfd disarmed value %ld.%09ld interval %ld.%09ld\n", (long)cur.value.tv_sec,
           cur.value.tv_nsec, (long)cur.interval.tv_sec, cur.interval.tv_nsec);
    uint64_t n = 0;
    show("timerfd read short buffer", read(fd, &n, 4));

    /* One-shot, 50 ms: poll sees it, read counts one. */
    show("timerfd_settime 50 ms", tfd_set(fd, 0, 50000000, 0, NULL));
    syscall(NR_timerfd_gettime, fd, &cur);
    printf("timerfd armed: remaining in (0, 50 ms]: %s\n",
           cur.value.tv_sec == 0 && cur.value.tv_nsec > 0 && cur.value.tv_nsec <= 50000000 ? "yes"
                                                                                          : "no");
    struct pollfd pfd = {fd, POLLIN, 0};
    show("timerfd poll before expiry (0 ms)", poll(&pfd, 1, 0));
    show("timerfd poll until expiry", poll(&pfd, 1, 5000));
    printf("timerfd revents: %#x\n", pfd.revents);
    show("timerfd read", read(fd, &n, 8));
    printf("timerfd expirations: %llu\n", (unsigned long long)n);
    int fl = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, fl | O_NONBLOCK);
    show("timerfd read nonblocking, none due", read(fd, &n, 8));
    fcntl(fd, F_SETFL, fl);

    /* Blocking read of a 30 ms one-shot. */
    tfd_set(fd, 0, 30000000, 0, NULL);
    n = 0;
    show("timerfd blocking read", read(fd, &n, 8));
    printf("timerfd expirations: %llu\n", (unsigned long long)n);

    /* Periodic, 10 ms: after 55 ms at least 4 expirations are counted. */
    struct its old;
    tfd_set(fd, 0, 10000000, 10000000, NULL);
    usleep(55000);
    read(fd, &n, 8);
    printf("timerfd periodic expirations >= 4: %s\n", n >= 4 ? "yes" : "no");
    show("timerfd_settime disarm, old", tfd_set(fd, 0, 0, 0, &old));
    printf("timerfd old interval %ld.%09ld\n", (long)old.interval.tv_sec, old.interval.tv_nsec);

    /* Absolute time on CLOCK_MONOTONIC. */
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long abs_ns = (now.tv_sec * 1000000000L + now.tv_nsec) + 20000000L;
    show("timerfd_settime ABSTIME", tfd_set(fd, 1, abs_ns, 0, NULL));
    show("timerfd read ABSTIME", read(fd, &n, 8));
    printf("timerfd expirations: %llu\n", (unsigned long long)n);

    /* CLOCK_REALTIME, absolute, already past: fires at once. */
    int rt = syscall(NR_timerfd_create, CLOCK_REALTIME, O_NONBLOCK | O_CLOEXEC);
    clock_gettime(CLOCK_REALTIME, &now);
    tfd_set(rt, 1, (now.tv_sec - 10) * 1000000000L, 0, NULL);
    show("timerfd REALTIME past read", read(rt, &n, 8));
    printf("timerfd expirations: %llu, cloexec %d\n", (unsigned long long)n,
           fcntl(rt, F_GETFD) & FD_CLOEXEC);
    close(rt);

    /* select, and a poll without a time limit on a timer another thread arms. */
    tfd_set(fd, 0, 20000000, 0, NULL);
    fd_set rd;
    FD_ZERO(&rd);
    FD_SET(fd, &rd);
    show("timerfd select", select(fd + 1, &rd, NULL, NULL, NULL));
    read(fd, &n, 8);
    arm_fd = fd;
    pthread_t th;
    pthread_create(&th, NULL, arm_later, NULL);
    pfd.revents = 0;
    show("timerfd poll forever, armed by another thread", poll(&pfd, 1, -1));
    pthread_join(th, NULL);
    read(fd, &n, 8);

    /* A signal (handler without SA_RESTART) ends a blocked read, armed or not. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    main_thread = pthread_self();
    for (int armed = 0; armed < 2; armed++) {
        tfd_set(fd, 0, armed ? 5000000000L : 0, 0, NULL);
        pthread_create(&th, NULL, signal_later, NULL);
        show(armed ? "timerfd read armed, signal" : "timerfd read disarmed, signal",
             read(fd, &n, 8));
        pthread_join(th, NULL);
    }
    tfd_set(fd, 0, 0, 0, NULL);

    struct its bad = {{0, 0}, {0, 1000000000}};
    show("timerfd_settime bad nsec", syscall(NR_timerfd_settime, fd, 0, &bad, NULL));
    show("timerfd_settime bad flags", tfd_set(fd, 4, 1000, 0, NULL));
    show("timerfd write", write(fd, &n, 8));
    int fds[2];
    pipe(fds);
    show("timerfd_settime on a pipe", tfd_set(fds[0], 0, 1000, 0, NULL));
    show("timerfd_gettime on a pipe", syscall(NR_timerfd_gettime, fds[0], &cur));
    show("timerfd_gettime bad fd", syscall(NR_timerfd_gettime, 999, &cur));
    close(fds[0]);
    close(fds[1]);
    close(fd);
}

/* --- prctl ----------------------------------------------------------- */

static void *named_thread(void *arg) {
    char name[16] = {0};
    syscall(NR_prctl, PR_GET_NAME, name, 0, 0, 0);
    printf("prctl thread inherits name: %s\n", name);
    syscall(NR_prctl, PR_SET_NAME, "worker-thread-long-name", 0, 0, 0);
    memset(name, 0, sizeof name);
    syscall(NR_prctl, PR_GET_NAME, name, 0, 0, 0);
    printf("prctl thread's own name: %s\n", name);
    return arg;
}

static void test_prctl(void) {
    char name[16] = {0};
    show("prctl PR_SET_NAME", syscall(NR_prctl, PR_SET_NAME, "syscalls-main", 0, 0, 0));
    syscall(NR_prctl, PR_GET_NAME, name, 0, 0, 0);
    printf("prctl PR_GET_NAME: %s\n", name);
    pthread_t th;
    pthread_create(&th, NULL, named_thread, NULL);
    pthread_join(th, NULL);
    memset(name, 0, sizeof name);
    syscall(NR_prctl, PR_GET_NAME, name, 0, 0, 0);
    printf("prctl main's name after the thread's: %s\n", name);
    show("prctl PR_GET_DUMPABLE", syscall(NR_prctl, 3, 0, 0, 0, 0));
    show("prctl PR_SET_DUMPABLE 2", syscall(NR_prctl, 4, 2, 0, 0, 0));
    show("prctl PR_SET_DUMPABLE 0", syscall(NR_prctl, 4, 0, 0, 0, 0));
    show("prctl PR_GET_DUMPABLE", syscall(NR_prctl, 3, 0, 0, 0, 0));
    syscall(NR_prctl, 4, 1, 0, 0, 0);
    int sig = -1;
    show("prctl PR_SET_PDEATHSIG 9", syscall(NR_prctl, 1, 9, 0, 0, 0));
    syscall(NR_prctl, 2, &sig, 0, 0, 0);
    printf("prctl PR_GET_PDEATHSIG: %d\n", sig);
    show("prctl PR_SET_PDEATHSIG 100", syscall(NR_prctl, 1, 100, 0, 0, 0));
    syscall(NR_prctl, 1, 0, 0, 0, 0);
    show("prctl PR_GET_KEEPCAPS", syscall(NR_prctl, 7, 0, 0, 0, 0));
    show("prctl PR_GET_TIMERSLACK", syscall(NR_prctl, 30, 0, 0, 0, 0));
    show("prctl PR_GET_THP_DISABLE", syscall(NR_prctl, 42, 0, 0, 0, 0));
    show("prctl PR_SET_NO_NEW_PRIVS bad", syscall(NR_prctl, 38, 2, 0, 0, 0));
    show("prctl PR_GET_SECCOMP", syscall(NR_prctl, 21, 0, 0, 0, 0));
    show("prctl unknown", syscall(NR_prctl, 9999, 0, 0, 0, 0));
}

/* fsync, sync_file_range and readahead on each kind of descriptor, and
 * their argument checks. */
static void test_sync(void) {
    int f = make_file("sync.dat", 5000, 0);
    int p[2];
    pipe(p);
    int m = (int)syscall(SYS_memfd_create, "sync", 0);
    char path[4096];
    snprintf(path, sizeof path, "%s/sync.dat", dir);
    int ro = open(path, O_RDONLY);
    int wo = open(path, O_WRONLY);
    int d = open(dir, O_RDONLY | O_DIRECTORY);
    int null = open("/dev/null", O_RDWR);
    int ev = (int)syscall(SYS_eventfd2, 0, 0);
    struct {
        const char *name;
        int fd;
    } fds[] = {{"file", f}, {"read-only file", ro}, {"write-only file", wo}, {"directory", d},
               {"pipe", p[0]}, {"memfd", m}, {"/dev/null", null}, {"eventfd", ev},
               {"closed", 999}};
    char what[128];
    for (size_t i = 0; i < sizeof fds / sizeof *fds; i++) {
        snprintf(what, sizeof what, "fsync %s", fds[i].name);
        show(what, syscall(SYS_fsync, fds[i].fd));
        snprintf(what, sizeof what, "fdatasync %s", fds[i].name);
        show(what, syscall(SYS_fdatasync, fds[i].fd));
        snprintf(what, sizeof what, "sync_file_range %s", fds[i].name);
        show(what, syscall(SYS_sync_file_range, fds[i].fd, 0L, 100L, 7L));
        snprintf(what, sizeof what, "readahead %s", fds[i].name);
        show(what, syscall(SYS_readahead, fds[i].fd, 0L, 4096L));
    }
    show("sync_file_range flags 8", syscall(SYS_sync_file_range, f, 0L, 100L, 8L));
    show("sync_file_range offset -1", syscall(SYS_sync_file_range, f, -1L, 100L, 2L));
    show("sync_file_range length -1", syscall(SYS_sync_file_range, f, 0L, -1L, 2L));
    show("sync_file_range wraps", syscall(SYS_sync_file_range, f, 0x7fffffffffffff00L, 0x200L, 2L));
    show("sync_file_range length 0", syscall(SYS_sync_file_range, f, 10L, 0L, 2L));
    show("sync_file_range pipe flags 8", syscall(SYS_sync_file_range, p[1], 0L, 1L, 8L));
    show("readahead past the end", syscall(SYS_readahead, f, 100000L, 4096L));
    show("readahead length 0", syscall(SYS_readahead, f, 0L, 0L));
    close(f);
    close(p[0]);
    close(p[1]);
    close(m);
    close(ro);
    close(wo);
    close(d);
    close(null);
    close(ev);
}

/* A process without children: every wait is ECHILD, after Linux's
 * argument checks. */
static void test_wait(void) {
    int st = 0;
    show("wait4 any", syscall(SYS_wait4, -1, &st, 0, NULL));
    show("wait4 WNOHANG", syscall(SYS_wait4, -1, &st, 1, NULL));
    show("wait4 pid 1", syscall(SYS_wait4, 1, &st, 0, NULL));
    show("wait4 group 0", syscall(SYS_wait4, 0, &st, 0, NULL));
    show("wait4 bad options", syscall(SYS_wait4, -1, &st, 0x100, NULL));
    show("wait4 INT_MIN", syscall(SYS_wait4, (long)(-2147483647 - 1), &st, 0, NULL));
    show("wait4 bad status pointer", syscall(SYS_wait4, -1, (void *)8, 0, NULL));
    siginfo_t si;
    /* P_ALL 0, P_PID 1, P_PGID 2, P_PIDFD 3; WEXITED 4. */
    show("waitid P_ALL", syscall(SYS_waitid, 0, 0, &si, 4, NULL));
    show("waitid P_ALL WNOHANG", syscall(SYS_waitid, 0, 0, &si, 4 | 1, NULL));
    show("waitid no WEXITED", syscall(SYS_waitid, 0, 0, &si, 1, NULL));
    show("waitid bad options", syscall(SYS_waitid, 0, 0, &si, 4 | 0x100, NULL));
    show("waitid P_PID 0", syscall(SYS_waitid, 1, 0, &si, 4, NULL));
    show("waitid P_PID 1", syscall(SYS_waitid, 1, 1, &si, 4, NULL));
    show("waitid P_PGID -1", syscall(SYS_waitid, 2, -1, &si, 4, NULL));
    show("waitid P_PGID 0", syscall(SYS_waitid, 2, 0, &si, 4, NULL));
    show("waitid P_PIDFD bad fd", syscall(SYS_waitid, 3, 999, &si, 4, NULL));
    show("waitid P_PIDFD not a pidfd", syscall(SYS_waitid, 3, 1, &si, 4, NULL));
    show("waitid P_PIDFD -1", syscall(SYS_waitid, 3, -1, &si, 4, NULL));
    show("waitid bad idtype", syscall(SYS_waitid, 9, 0, &si, 4, NULL));
}

/* What a file holds now, as "LEN:BYTES" (at most 40). */
static void contents(const char *what, int fd) {
    char buf[64];
    long n = pread(fd, buf, 40, 0);
    if (n < 0) n = 0;
    printf("%s holds %ld:%.*s\n", what, n, (int)n, buf);
}

/* preadv/pwritev and preadv2/pwritev2 (offset -1: the file position) with
 * RWF_* flags; the offset is argument 4 whole on x86-64, argument 5 (its
 * high half on 32-bit machines) is ignored. */
static void test_rw2(void) {
    const long HIPRI = 1, DSYNC = 2, SYNC = 4, NOWAIT = 8, APPEND = 0x10, NOAPPEND = 0x20,
               ATOMIC = 0x40, DONTCACHE = 0x80, NOSIGNAL = 0x100;
    char a[8], b[8];
    struct iovec rd[2] = {{a, 4}, {b, 6}};
    struct iovec wr[2] = {{"AB", 2}, {"CDE", 3}};
    struct iovec none[1] = {{a, 0}};
    int m = (int)syscall(SYS_memfd_create, "rw2", 0);
    int ma = (int)syscall(SYS_memfd_create, "rw2a", 0);
    int f = make_file("rw2.dat", 30, 0);
    int fa = make_file("rw2a.dat", 12, O_APPEND);
    int p[2], sv[2];
    pipe(p);
    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    write(m, "hello world, memory", 19);
    write(ma, "0123456789", 10);
    fcntl(ma, F_SETFL, O_APPEND);
    struct {
        const char *name;
        int fd;
    } files[] = {{"file", f}, {"memfd", m}};
    char what[128];
    for (size_t i = 0; i < 2; i++) {
        int fd = files[i].fd;
        const char *n = files[i].name;
        lseek(fd, 3, SEEK_SET);
#define RW(label, call) (snprintf(what, sizeof what, "%s %s", label, n), show(what, call))
        memset(a, 0, sizeof a), memset(b, 0, sizeof b);
        RW("preadv at 2", syscall(SYS_preadv, fd, rd, 2, 2L, 0L));
        printf("  read %.4s|%.6s\n", a, b);
        RW("preadv2 at 1", syscall(NR_preadv2, fd, rd, 2, 1L, 0L, 0L));
        RW("preadv2 at -1 (the position)", syscall(NR_preadv2, fd, rd, 2, -1L, 0L, 0L));
        printf("  read %.4s|%.6s, position %ld\n", a, b, (long)lseek(fd, 0, SEEK_CUR));
        RW("preadv2 high half ignored", syscall(NR_preadv2, fd, rd, 1, 0L, 7L, 0L));
        RW("preadv2 at -2", syscall(NR_preadv2, fd, rd, 2, -2L, 0L, 0L));
        RW("preadv at -1", syscall(SYS_preadv, fd, rd, 2, -1L, 0L));
        RW("preadv2 HIPRI|DSYNC|SYNC", syscall(NR_preadv2, fd, rd, 2, 0L, 0L, HIPRI | DSYNC | SYNC));
        RW("preadv2 NOWAIT", syscall(NR_preadv2, fd, rd, 2, 0L, 0L, NOWAIT));
        RW("preadv2 APPEND", syscall(NR_preadv2, fd, rd, 2, 0L, 0L, APPEND));
        RW("preadv2 APPEND|NOAPPEND", syscall(NR_preadv2, fd, rd, 2, 0L, 0L, APPEND | NOAPPEND));
        RW("preadv2 ATOMIC", syscall(NR_preadv2, fd, rd, 2, 0L, 0L, ATOMIC));
        RW("preadv2 DONTCACHE", syscall(NR_preadv2, fd, rd, 2, 0L, 0L, DONTCACHE));
        RW("preadv2 NOSIGNAL", syscall(NR_preadv2, fd, rd, 2, 0L, 0L, NOSIGNAL));
        RW("preadv2 flag 0x200", syscall(NR_preadv2, fd, rd, 2, 0L, 0L, 0x200L));
        RW("preadv2 nothing, flag 0x200", syscall(NR_preadv2, fd, none, 1, 0L, 0L, 0x200L));
        RW("pwritev2 NOWAIT", syscall(NR_pwritev2, fd, wr, 1, 0L, 0L, NOWAIT));
        RW("pwritev2 DONTCACHE", syscall(NR_pwritev2, fd, wr, 1, 0L, 0L, DONTCACHE));
        RW("pwritev2 at 4", syscall(NR_pwritev2, fd, wr, 2, 4L, 0L, 0L));
        lseek(fd, 10, SEEK_SET);
        RW("pwritev2 at -1 (the position)", syscall(NR_pwritev2, fd, wr, 2, -1L, 0L, DSYNC));
        printf("  position %ld\n", (long)lseek(fd, 0, SEEK_CUR));
        RW("pwritev2 APPEND at 0", syscall(NR_pwritev2, fd, wr, 2, 0L, 0L, APPEND));
        printf("  position %ld\n", (long)lseek(fd, 0, SEEK_CUR));
        RW("pwritev2 APPEND at -1", syscall(NR_pwritev2, fd, wr, 1, -1L, 0L, APPEND));
        printf("  position %ld\n", (long)lseek(fd, 0, SEEK_CUR));
        RW("pwritev2 ATOMIC", syscall(NR_pwritev2, fd, wr, 2, 0L, 0L, ATOMIC));
        RW("pwritev2 APPEND|NOAPPEND", syscall(NR_pwritev2, fd, wr, 2, 0L, 0L, APPEND | NOAPPEND));
        RW("pwritev at -1", syscall(SYS_pwritev, fd, wr, 2, -1L, 0L));
        if (i == 0) {
            char path[4096];
            snprintf(path, sizeof path, "%s/rw2.dat", dir);
            int ro = open(path, O_RDONLY);
            RW("pwritev O_RDONLY, bad vector", syscall(SYS_pwritev, ro, (void *)8, 2, 0L, 0L));
            RW("writev O_RDONLY, bad vector", syscall(SYS_writev, ro, (void *)8, 2));
            close(ro);
        }
        contents(n, fd);
    }
    /* O_APPEND files: pwritev appends anyway (Linux's documented bug),
     * RWF_NOAPPEND writes where asked. */
    struct {
        const char *name;
        int fd;
    } apps[] = {{"O_APPEND file", fa}, {"O_APPEND memfd", ma}};
    for (size_t i = 0; i < 2; i++) {
        int fd = apps[i].fd;
        const char *n = apps[i].name;
        RW("pwritev2 at 1", syscall(NR_pwritev2, fd, wr, 1, 1L, 0L, 0L));
        RW("pwritev2 NOAPPEND at 1", syscall(NR_pwritev2, fd, wr, 1, 1L, 0L, NOAPPEND));
        lseek(fd, 5, SEEK_SET);
        RW("pwritev2 NOAPPEND at -1", syscall(NR_pwritev2, fd, wr + 1, 1, -1L, 0L, NOAPPEND));
        printf("  position %ld\n", (long)lseek(fd, 0, SEEK_CUR));
        contents(n, fd);
    }
    /* Streams: no offset (ESPIPE), NOWAIT as non-blocking. */
    {
        const char *n = "pipe";
        RW("preadv2 at 0", syscall(NR_preadv2, p[0], rd, 2, 0L, 0L, 0L));
        RW("preadv2 NOWAIT, empty", syscall(NR_preadv2, p[0], rd, 2, -1L, 0L, NOWAIT));
        RW("pwritev2 at 0", syscall(NR_pwritev2, p[1], wr, 2, 0L, 0L, 0L));
        RW("pwritev2 NOWAIT", syscall(NR_pwritev2, p[1], wr, 2, -1L, 0L, NOWAIT));
        memset(a, 0, sizeof a), memset(b, 0, sizeof b);
        RW("preadv2 NOWAIT", syscall(NR_preadv2, p[0], rd, 2, -1L, 0L, NOWAIT));
        printf("  read %.4s|%.6s\n", a, b);
        RW("preadv2 DONTCACHE", syscall(NR_preadv2, p[0], rd, 2, -1L, 0L, DONTCACHE));
        RW("pwritev of the read end", syscall(SYS_pwritev, p[0], wr, 2, 0L, 0L));
        /* EPIPE without SIGPIPE (ignored here, so that a wrong one does not
         * end the program: the errno shows). */
        signal(SIGPIPE, SIG_IGN);
        int q[2];
        pipe(q);
        close(q[0]);
        RW("pwritev2 NOSIGNAL, no reader", syscall(NR_pwritev2, q[1], wr, 2, -1L, 0L, NOSIGNAL));
        close(q[1]);
        signal(SIGPIPE, SIG_DFL);
        RW("preadv of the write end", syscall(SYS_preadv, p[1], rd, 2, 0L, 0L));
        RW("preadv bad vector", syscall(SYS_preadv, p[0], (void *)8, 2, 0L, 0L));
        /* The access mode before the vector (Linux's vfs_readv/vfs_writev). */
        RW("readv of the write end, bad vector", syscall(SYS_readv, p[1], (void *)8, 2));
        RW("writev of the read end, bad vector", syscall(SYS_writev, p[0], (void *)8, 2));
        RW("readv of the write end, 2000 pieces", syscall(SYS_readv, p[1], rd, 2000));
        RW("readv bad vector", syscall(SYS_readv, p[0], (void *)8, 2));
        n = "socket";
        RW("preadv2 NOWAIT, empty", syscall(NR_preadv2, sv[0], rd, 2, -1L, 0L, NOWAIT));
        RW("pwritev2 NOWAIT", syscall(NR_pwritev2, sv[1], wr, 2, -1L, 0L, NOWAIT));
        memset(a, 0, sizeof a), memset(b, 0, sizeof b);
        RW("preadv2", syscall(NR_preadv2, sv[0], rd, 2, -1L, 0L, HIPRI));
        printf("  read %.4s|%.6s\n", a, b);
        n = "closed";
        RW("preadv2 at -2", syscall(NR_preadv2, 999, rd, 2, -2L, 0L, 0L));
        RW("preadv2", syscall(NR_preadv2, 999, rd, 2, 0L, 0L, 0L));
        RW("preadv at -1", syscall(SYS_preadv, 999, rd, 2, -1L, 0L));
#undef RW
    }
    close(m), close(ma), close(f), close(fa), close(p[0]), close(p[1]), close(sv[0]), close(sv[1]);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: syscalls DIR\n");
        return 2;
    }
    dir = argv[1];
    page = sysconf(_SC_PAGESIZE);
    setvbuf(stdout, NULL, _IOLBF, 0);
    test_mincore();
    test_membarrier();
    test_affinity();
    test_madvise();
    test_fallocate();
    test_copy();
    test_rusage();
    test_timerfd();
    test_prctl();
    test_sync();
    test_wait();
    test_rw2();
    /* Never implemented by Linux either: ENOSYS on both sides, and the
     * partition names it in its log. */
    show("afs_syscall", syscall(183, 0, 0, 0));
    return 0;
}
