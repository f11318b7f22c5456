/* What the random differential exercisers share (the `*diff.c` programs,
 * run by tests/src/lib.rs's `Differ`): the sequence generator, the result
 * format, the table of descriptor slots, the watchdog on a call that
 * blocks, and the command line
 *
 *   NAME run SEED NSEEDS COUNT   seeds SEED..SEED+NSEEDS-1, COUNT calls
 *
 * An exerciser defines SLOTS, then includes this, and gives
 * `differ_main` its `call(index)` and `begin()` (per seed, after the
 * slots were closed). Every line it prints must be the same on the host
 * and in a partition. */
#ifndef ASTRAEA_DIFFER_H
#define ASTRAEA_DIFFER_H

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "errname.h"

static uint64_t rng;
static uint64_t next(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}
static unsigned pick(unsigned n) { return (unsigned)(next() % n); }

/* A call's result: the value, or -1 and the errno's name. */
static const char *res(long r) {
    static char b[4][48];
    static int i;
    i = (i + 1) % 4;
    if (r < 0)
        snprintf(b[i], sizeof b[i], "-1 %s", errname(errno));
    else
        snprintf(b[i], sizeof b[i], "%ld", r);
    return b[i];
}

/* Descriptors by slot: -1 free. */
static int fd[SLOTS];

__attribute__((unused)) static int free_slot(void) {
    for (int k = 0, s = (int)pick(SLOTS); k < SLOTS; k++, s = (s + 1) % SLOTS)
        if (fd[s] == -1)
            return s;
    return -1;
}

__attribute__((unused)) static int used_slot(void) {
    for (int k = 0, s = (int)pick(SLOTS); k < SLOTS; k++, s = (s + 1) % SLOTS)
        if (fd[s] >= 0)
            return s;
    return -1;
}

static void close_slots(void) {
    for (int i = 0; i < SLOTS; i++) {
        if (fd[i] >= 0)
            close(fd[i]);
        fd[i] = -1;
    }
}

/* A byte-string checksum: what was read, compared by value. */
__attribute__((unused)) static unsigned long sum(const unsigned char *p, long n) {
    unsigned long s = 0;
    for (long i = 0; i < n; i++)
        s = s * 131 + p[i];
    return s;
}

/* A copy of `src`'s first `h` bytes right before a page the program may
 * not read: a write from it meets a hole after `h` bytes (Linux keeps the
 * buffers it copied before the hole, or fails with EFAULT). */
__attribute__((unused)) static unsigned char *holed(const unsigned char *src, size_t h) {
    enum { REGION = 3 << 20 };
    static unsigned char *region;
    if (!region) {
        region = mmap(NULL, REGION + 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                      -1, 0);
        if (region == MAP_FAILED || mprotect(region + REGION, 4096, PROT_NONE)) {
            perror("holed: mmap");
            exit(2);
        }
    }
    if (h > REGION)
        h = REGION;
    unsigned char *p = region + REGION - h;
    memcpy(p, src, h);
    return p;
}

/* Writes `n` bytes of `src` to `f` from memory with a hole after `h`
 * bytes: by write (`how` 0), or as three pieces — the first readable, an
 * empty one at NULL (never looked at), the hole in the third — by writev
 * (1) or by sendmsg without waiting or SIGPIPE (2). */
__attribute__((unused)) static long write_holed(int f, const unsigned char *src, size_t n, size_t h,
                                                int how) {
    unsigned char *p = holed(src, h);
    if (how == 0)
        return write(f, p, n);
    size_t a = h / 2;
    struct iovec v[3] = {{(void *)src, a}, {NULL, 0}, {p + a, n - a}};
    if (how == 1)
        return writev(f, v, 3);
    struct msghdr m = {.msg_iov = v, .msg_iovlen = 3};
    return sendmsg(f, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
}

/* Where a write of `n` bytes meets a hole: at the start, around a page or
 * an skb, or anywhere. */
__attribute__((unused)) static size_t hole_pick(size_t n) {
    static const size_t at[] = {0, 1, 4095, 4096, 4097, 8192, 36544, 36545, 65536};
    size_t h = pick(3) == 0 ? (size_t)(next() % (n + 1)) : at[pick(sizeof at / sizeof *at)];
    return h < n ? h : n / 2;
}

/* Drops every capability, as a partition's program has none: where Linux
 * asks for one (SO_DEBUG, SO_PRIORITY above 6, a lower nice value) the
 * host then answers as the partition does, also when the tests run as
 * root. Returns whether none is left (capget says so). */
__attribute__((unused)) static int drop_capabilities(void) {
    struct {
        uint32_t version;
        int pid;
    } hdr = {0x20080522 /* _LINUX_CAPABILITY_VERSION_3 */, 0};
    struct {
        uint32_t effective, permitted, inheritable;
    } caps[2] = {{0, 0, 0}, {0, 0, 0}};
    syscall(126 /* SYS_capset */, &hdr, caps);
    if (syscall(125 /* SYS_capget */, &hdr, caps) != 0)
        return 0;
    return !(caps[0].effective | caps[1].effective);
}

static const char *differ_name;
static unsigned current_call;

static void on_alarm(int sig) {
    (void)sig;
    char msg[96];
    int n = snprintf(msg, sizeof msg, "%s: call %u blocked for 20 s\n", differ_name, current_call);
    fflush(stdout);
    write(2, msg, (size_t)n);
    _exit(3);
}

static int differ_main(int argc, char **argv, const char *name, void (*begin)(void),
                       void (*call)(unsigned)) {
    differ_name = name;
    if (argc != 5 || strcmp(argv[1], "run")) {
        fprintf(stderr, "usage: %s run SEED NSEEDS COUNT\n", name);
        return 2;
    }
    signal(SIGALRM, on_alarm);
    signal(SIGPIPE, SIG_IGN);
    setvbuf(stdout, NULL, _IOFBF, 1 << 16);
    uint64_t seed = strtoull(argv[2], NULL, 10);
    unsigned nseeds = (unsigned)strtoul(argv[3], NULL, 10);
    unsigned count = (unsigned)strtoul(argv[4], NULL, 10);
    for (int i = 0; i < SLOTS; i++)
        fd[i] = -1;
    for (unsigned s = 0; s < nseeds; s++) {
        rng = (seed + s) * 0x2545f4914f6cdd1dULL | 1;
        close_slots();
        begin();
        printf("# seed %llu\n", (unsigned long long)(seed + s));
        for (unsigned i = 0; i < count; i++) {
            current_call = i;
            alarm(20);
            call(i);
        }
        alarm(0);
    }
    close_slots();
    fflush(stdout);
    return 0;
}

#endif
