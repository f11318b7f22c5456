/*
 * lxbench: the Linux personality's costs, measured the same way on the host
 * and in a partition (astraea-bench's `linux` benchmark builds this with
 * `gcc -O2 -pthread` and runs it in both places).
 *
 *   ./lxbench FILE [ROUNDS [TESTS]]
 *
 * FILE is a file of at least 64 KiB that the 1 KiB preads read. Every
 * measurement is a warm-up batch, then ROUNDS rounds (default 7) of a batch
 * of a fixed number of operations, timed as a whole (the page faults: a fresh
 * mapping per round). stdout gets one line per measurement, `NAME MEDIAN #
 * min MIN max MAX first FIRST ...`, in nanoseconds per operation, FIRST being
 * the first round's; the part after `#` is for people. TESTS, a
 * comma-separated subset of getpid,futex,thread,fault,pread,wake,getpidw,cached
 * picks some.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096UL
#define MAX_ROUNDS 64
/* The libOS maps up to this many pages per fault (its fault-around window). */
#define FAULT_AROUND 16
/* Regions for the page-fault measurements, fresh in every round. */
#define TOUCH_ALL_BYTES (64UL << 20)
#define TOUCH_16TH_BYTES (128UL << 20)

static int rounds = 7;

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Prints the median of v[0..n) (ns per operation) with its spread. */
static void report(const char *name, double *v, int n, long iters)
{
    double first = v[0];
    qsort(v, n, sizeof *v, cmp);
    printf("%s %.1f # min %.1f max %.1f first %.1f rounds %d ops %ld\n", name, v[n / 2],
           v[0], v[n - 1], first, n, iters);
    fflush(stdout);
}

/* Runs `batch(iters)` (which returns its elapsed ns) once to warm up, then
 * for the rounds. */
static void measure(const char *name, double (*batch)(long), long iters)
{
    double v[MAX_ROUNDS];
    batch(iters / 10 + 1);
    for (int r = 0; r < rounds; r++)
        v[r] = batch(iters) / (double)iters;
    report(name, v, rounds, iters);
}

/* (1) getpid through syscall(2): a bare system call round trip. */
static double getpid_batch(long n)
{
    double t0 = now_ns();
    for (long i = 0; i < n; i++)
        syscall(SYS_getpid);
    return now_ns() - t0;
}

/* (2) futex ping-pong: two threads hand a turn word back and forth with raw
 * FUTEX_WAIT / FUTEX_WAKE; one round trip is two hand-overs. */
static _Atomic uint32_t turn;
static long pp_rounds;

static void futex_op(_Atomic uint32_t *w, int op, uint32_t val)
{
    syscall(SYS_futex, (uint32_t *)w, op | FUTEX_PRIVATE_FLAG, val, NULL, NULL, 0);
}

static void player(uint32_t me)
{
    for (long i = 0; i < pp_rounds; i++) {
        uint32_t v;
        while ((v = atomic_load_explicit(&turn, memory_order_acquire)) != me)
            futex_op(&turn, FUTEX_WAIT, v);
        atomic_store_explicit(&turn, 1 - me, memory_order_release);
        futex_op(&turn, FUTEX_WAKE, 1);
    }
}

static void *pong(void *arg)
{
    (void)arg;
    player(1);
    return NULL;
}

static double futex_batch(long n)
{
    pthread_t t;
    atomic_store(&turn, 0);
    pp_rounds = n;
    double t0 = now_ns();
    if (pthread_create(&t, NULL, pong, NULL) != 0) {
        perror("pthread_create");
        exit(1);
    }
    player(0);
    pthread_join(t, NULL);
    return now_ns() - t0;
}

/* (3) pthread_create + pthread_join of a thread that returns at once. */
static void *nothing(void *arg)
{
    return arg;
}

static double thread_batch(long n)
{
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, nothing, NULL) != 0) {
            perror("pthread_create");
            exit(1);
        }
        pthread_join(t, NULL);
    }
    return now_ns() - t0;
}

/* (4) first touch of anonymous pages: a fresh private mapping per round,
 * one byte written every `stride` pages; ns per page touched. */
static double touch_round(size_t bytes, size_t stride)
{
    char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    /* No transparent huge pages on the host: 4 KiB faults on both sides. */
    madvise(p, bytes, MADV_NOHUGEPAGE);
    size_t pages = 0;
    double t0 = now_ns();
    for (size_t off = 0; off < bytes; off += stride * PAGE, pages++)
        p[off] = 1;
    double t = now_ns() - t0;
    munmap(p, bytes);
    return t / (double)pages;
}

static void faults(void)
{
    double v[MAX_ROUNDS];
    for (int r = 0; r < rounds; r++)
        v[r] = touch_round(TOUCH_ALL_BYTES, 1);
    report("fault_page_ns", v, rounds, (long)(TOUCH_ALL_BYTES / PAGE));
    for (int r = 0; r < rounds; r++)
        v[r] = touch_round(TOUCH_16TH_BYTES, FAULT_AROUND);
    report("fault_16th_ns", v, rounds, (long)(TOUCH_16TH_BYTES / PAGE / FAULT_AROUND));
}

/* (5) 1 KiB pread of a host file, cycling over its first 64 KiB; (6) the
 * same from a second file: in a partition, one the file cache holds
 * (outside the read-write current directory). */
static int fd = -1;

static double pread_batch(long n)
{
    char buf[1024];
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        if (pread(fd, buf, sizeof buf, (off_t)(i % 64) * 1024) != (ssize_t)sizeof buf) {
            perror("pread");
            exit(1);
        }
    }
    return now_ns() - t0;
}

/* (8) 1 KiB read() through the file (glibc's read: `xor eax, eax; syscall`),
 * back to its start once per MiB. */
static double read_batch(long n)
{
    char buf[1024];
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        if (i % 1024 == 0)
            lseek(fd, 0, SEEK_SET);
        if (read(fd, buf, sizeof buf) != (ssize_t)sizeof buf) {
            perror("read");
            exit(1);
        }
    }
    return now_ns() - t0;
}

/* (9) read() of `read_size` bytes through the file, back to its start once
 * per MiB: Libra's Figure 5 buffer sizes, on the cached file. */
static size_t read_size;

static double read_sized_batch(long n)
{
    static char buf[64 * 1024];
    long per_mib = (long)((1 << 20) / read_size);
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        if (i % per_mib == 0)
            lseek(fd, 0, SEEK_SET);
        if (read(fd, buf, read_size) != (ssize_t)read_size) {
            perror("read");
            exit(1);
        }
    }
    return now_ns() - t0;
}

/* (10) pipe round trip: two threads pass a byte back and forth through two
 * pipes (each round trip: two writes, two reads, two hand-overs). */
static int ping[2], pong_pipe[2];
static long pipe_rounds;

static void *pipe_echo(void *arg)
{
    char b;
    for (long i = 0; i < pipe_rounds; i++) {
        if (read(ping[0], &b, 1) != 1 || write(pong_pipe[1], &b, 1) != 1) {
            perror("pipe echo");
            exit(1);
        }
    }
    return arg;
}

static double pipe_batch(long n)
{
    pthread_t t;
    pipe_rounds = n;
    if (pthread_create(&t, NULL, pipe_echo, NULL) != 0) {
        perror("pthread_create");
        exit(1);
    }
    char b = 1;
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        if (write(ping[1], &b, 1) != 1 || read(pong_pipe[0], &b, 1) != 1) {
            perror("pipe");
            exit(1);
        }
    }
    double elapsed = now_ns() - t0;
    pthread_join(t, NULL);
    return elapsed;
}

/* (7) getpid through glibc's own wrapper (its `mov eax, 39; syscall`). */
static double getpid_wrapper_batch(long n)
{
    volatile long sink = 0;
    double t0 = now_ns();
    for (long i = 0; i < n; i++)
        sink += getpid();
    (void)sink;
    return now_ns() - t0;
}

/* (7) wake-up behind a CPU-bound thread: the caller and a spinning thread
 * share CPU 0 (a partition has one CPU; the host is pinned to match) and
 * the caller sleeps 200 us at a time; ns slept beyond that per sleep
 * (Linux's timer slack is 50 us of it). */
#define WAKE_SLEEP_NS 200000L
static _Atomic int hog_stop;

static void *hog(void *arg)
{
    while (!atomic_load_explicit(&hog_stop, memory_order_relaxed))
        ;
    return arg;
}

static double wake_batch(long n)
{
    cpu_set_t one, saved;
    if (sched_getaffinity(0, sizeof saved, &saved) != 0) {
        perror("sched_getaffinity");
        exit(1);
    }
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    /* The spinning thread inherits the mask. */
    if (sched_setaffinity(0, sizeof one, &one) != 0) {
        perror("sched_setaffinity");
        exit(1);
    }
    atomic_store(&hog_stop, 0);
    pthread_t t;
    if (pthread_create(&t, NULL, hog, NULL) != 0) {
        perror("pthread_create");
        exit(1);
    }
    const struct timespec d = {0, WAKE_SLEEP_NS};
    double late = 0;
    for (long i = 0; i < n; i++) {
        double t0 = now_ns();
        nanosleep(&d, NULL);
        late += now_ns() - t0 - (double)WAKE_SLEEP_NS;
    }
    atomic_store(&hog_stop, 1);
    pthread_join(t, NULL);
    sched_setaffinity(0, sizeof saved, &saved);
    return late;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE [ROUNDS [TESTS [CACHED-FILE]]]\n", argv[0]);
        return 2;
    }
    if (argc > 2) {
        rounds = atoi(argv[2]);
        if (rounds < 1 || rounds > MAX_ROUNDS) {
            fprintf(stderr, "ROUNDS must be 1..%d\n", MAX_ROUNDS);
            return 2;
        }
    }
    fd = open(argv[1], O_RDONLY);
    if (fd < 0) {
        perror(argv[1]);
        return 1;
    }
    const char *tests = argc > 3 ? argv[3] : "getpid,futex,thread,fault,pread";
    if (strstr(tests, "getpid"))
        measure("getpid_ns", getpid_batch, 100000);
    /* The faults before the threads: each thread a partition creates still
     * leaks some memory, and 7000 of them leave too little for the regions. */
    if (strstr(tests, "fault"))
        faults();
    if (strstr(tests, "futex"))
        measure("futex_rt_ns", futex_batch, 10000);
    if (strstr(tests, "thread"))
        measure("thread_ns", thread_batch, 1000);
    if (strstr(tests, "pread"))
        measure("pread1k_ns", pread_batch, 20000);
    if (strstr(tests, "wake"))
        measure("wake_hog_ns", wake_batch, 200);
    if (strstr(tests, "getpidw"))
        measure("getpid_wrapper_ns", getpid_wrapper_batch, 100000);
    if (strstr(tests, "pipe")) {
        if (pipe(ping) != 0 || pipe(pong_pipe) != 0) {
            perror("pipe");
            return 1;
        }
        measure("pipe_rt_ns", pipe_batch, 10000);
    }
    if (strstr(tests, "cached") && argc > 4) {
        close(fd);
        fd = open(argv[4], O_RDONLY);
        if (fd < 0) {
            perror(argv[4]);
            return 1;
        }
        measure("pread1k_cached_ns", pread_batch, 200000);
        measure("read1k_cached_ns", read_batch, 200000);
        if (strstr(tests, "sizes")) {
            static const size_t sizes[] = {64, 256, 1024, 4096, 16384, 65536};
            static const char *names[] = {"read64_cached_ns",  "read256_cached_ns",
                                          "read1k_cached_ns2", "read4k_cached_ns",
                                          "read16k_cached_ns", "read64k_cached_ns"};
            for (int i = 0; i < 6; i++) {
                read_size = sizes[i];
                measure(names[i], read_sized_batch, sizes[i] >= 16384 ? 20000 : 100000);
            }
        }
    }
    close(fd);
    return 0;
}
