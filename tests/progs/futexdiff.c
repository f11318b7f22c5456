/* Differential exerciser for futex(2): the same random sequence of calls on
 * the host and in a partition must print the same lines.
 *
 *   futexdiff run SEED NSEEDS COUNT   seeds SEED..SEED+NSEEDS-1, COUNT calls
 *
 * Four futex words (three in a private page, one in a shared one) take
 * values that matter to the kernel: 0, small numbers, the caller's thread
 * ID (M), a live thread's (H, a helper blocked in a pipe read for the whole
 * run), an exited thread's (D), a thread ID nobody has, and those with
 * FUTEX_WAITERS and FUTEX_OWNER_DIED. The calls are every futex operation
 * but the requeue-PI pair, with the private and realtime-clock flags,
 * matching and stale values, bitsets, negative counts, WAKE_OP encodings,
 * timeouts that are invalid or already over (so nothing ever sleeps), and
 * addresses that are NULL, unaligned, unmapped or read-only. Each line is
 * "INDEX CALL ARGS = RESULT", then the words as they are after it, thread
 * IDs by name. */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>

#define SLOTS 1
#include "differ.h"

#define WAITERS 0x80000000U
#define OWNER_DIED 0x40000000U
#define TID_MASK 0x3fffffffU
#define NOBODY 0x3ffffff0U
#define NWORDS 4

static uint32_t *page, *shared, *readonly, *none;
static uint32_t *words[NWORDS];
static uint32_t me, helper, dead;
static int helper_pipe[2];

static void *helper_main(void *arg) {
    (void)arg;
    helper = (uint32_t)syscall(SYS_gettid);
    char c;
    while (read(helper_pipe[0], &c, 1) < 0 && errno == EINTR)
        ;
    return NULL;
}

static void *dead_main(void *arg) {
    (void)arg;
    dead = (uint32_t)syscall(SYS_gettid);
    return NULL;
}

/* A word's value with thread IDs by name. */
static const char *show(uint32_t v) {
    static char b[4][48];
    static int i;
    i = (i + 1) % 4;
    uint32_t tid = v & TID_MASK;
    const char *who = tid == 0 ? "0" : tid == me ? "M" : tid == helper ? "H" : tid == dead ? "D"
                      : tid == NOBODY             ? "N"
                                                  : NULL;
    char num[16];
    if (!who) {
        snprintf(num, sizeof num, "%u", tid);
        who = num;
    }
    snprintf(b[i], sizeof b[i], "%s%s%s", who, v & WAITERS ? "|W" : "", v & OWNER_DIED ? "|OD" : "");
    return b[i];
}

static uint32_t value_pick(void) {
    uint32_t base[] = {0, 1, 2, 7, me, helper, dead, NOBODY};
    uint32_t v = base[pick(8)];
    switch (pick(6)) {
    case 0: v |= WAITERS; break;
    case 1: v |= OWNER_DIED; break;
    case 2: v |= WAITERS | OWNER_DIED; break;
    }
    return v;
}

/* An address: mostly a word, sometimes a bad one. */
static uint32_t *addr_pick(const char **name) {
    static char b[2][24];
    static int i;
    i = (i + 1) % 2;
    unsigned w = pick(NWORDS + 5);
    if (w < NWORDS) {
        snprintf(b[i], sizeof b[i], "w%u", w);
        *name = b[i];
        return words[w];
    }
    switch (w - NWORDS) {
    case 0: *name = "NULL"; return NULL;
    case 1: *name = "unaligned"; return (uint32_t *)((char *)page + 2);
    case 2: *name = "unmapped"; return none;
    case 3: *name = "readonly"; return readonly;
    default: snprintf(b[i], sizeof b[i], "w%u", w % NWORDS); *name = b[i]; return words[w % NWORDS];
    }
}

/* A timeout: none (only where nothing can block), invalid, or over. */
static struct timespec ts;
static const struct timespec *timeout_pick(int may_be_null, int absolute, const char **name) {
    switch (pick(may_be_null ? 5 : 4)) {
    case 0: ts = (struct timespec){0, 0}; *name = "t0"; break;
    case 1: ts = (struct timespec){0, 1000000000L}; *name = "tbadns"; break;
    case 2: ts = (struct timespec){-1, 0}; *name = "tneg"; break;
    case 3:
        if (absolute)
            ts = (struct timespec){1, 0}, *name = "tpast";
        else
            ts = (struct timespec){0, 1}, *name = "t1ns";
        break;
    default: *name = "tnull"; return NULL;
    }
    return &ts;
}

static void words_line(unsigned idx) {
    printf("%u   words", idx);
    for (int w = 0; w < NWORDS; w++)
        printf(" %s", show(*words[w]));
    printf("\n");
}

/* Whether a PI lock of `a` would look up a thread outside the program (a
 * number a WAKE_OP made): the host has other processes, a partition none. */
static int foreign_owner(const uint32_t *a) {
    if (!a || a == none || (uintptr_t)a % 4)
        return 0;
    uint32_t tid = *a & TID_MASK;
    return tid && tid != me && tid != helper && tid != dead && tid != NOBODY;
}

static long fx(uint32_t *a, int op, uint32_t val, const void *t, uint32_t *a2, uint32_t val3) {
    return syscall(SYS_futex, a, op, val, t, a2, val3);
}

static void call(unsigned idx) {
    const char *an, *bn, *tn;
    int priv = pick(3) ? FUTEX_PRIVATE_FLAG : 0;
    int rt = pick(6) == 0 ? FUTEX_CLOCK_REALTIME : 0;
    int flags = priv | rt;
    const char *fl = priv ? (rt ? "priv|rt" : "priv") : (rt ? "rt" : "shared");
    long r;
    switch (pick(16)) {
    case 0:
    case 1: {
        unsigned w = pick(NWORDS);
        uint32_t v = value_pick();
        *words[w] = v;
        printf("%u set w%u %s\n", idx, w, show(v));
        return;
    }
    case 2: {
        uint32_t *a = addr_pick(&an);
        /* A matching value only with a timeout that is over. */
        int match = a && a != none && a != (uint32_t *)((char *)page + 2) && pick(2);
        uint32_t v = match ? *a : (a && a != none && a != (uint32_t *)((char *)page + 2) ? *a + 1 : 5);
        const struct timespec *t = timeout_pick(!match, 0, &tn);
        r = fx(a, FUTEX_WAIT | flags, v, t, NULL, 0);
        printf("%u wait %s %s %s %s = %s\n", idx, fl, an, match ? "match" : "stale", tn, res(r));
        break;
    }
    case 3: {
        uint32_t *a = addr_pick(&an);
        uint32_t bits = pick(4) == 0 ? 0 : (pick(2) ? 0xffffffffU : 0x5U);
        int match = a && a != none && a != (uint32_t *)((char *)page + 2) && pick(2);
        uint32_t v = match ? *a : (a && a != none && a != (uint32_t *)((char *)page + 2) ? *a + 1 : 5);
        const struct timespec *t = timeout_pick(!match, 1, &tn);
        r = fx(a, FUTEX_WAIT_BITSET | flags, v, t, NULL, bits);
        printf("%u wait_bitset %s %s %s %s bits=%#x = %s\n", idx, fl, an, match ? "match" : "stale",
               tn, bits, res(r));
        break;
    }
    case 4:
    case 5: {
        uint32_t *a = addr_pick(&an);
        int n = (int)pick(4) - 1;
        r = fx(a, FUTEX_WAKE | flags, (uint32_t)n, NULL, NULL, 0);
        printf("%u wake %s %s %d = %s\n", idx, fl, an, n, res(r));
        break;
    }
    case 6: {
        uint32_t *a = addr_pick(&an);
        uint32_t bits = pick(3) == 0 ? 0 : 0xffffffffU;
        r = fx(a, FUTEX_WAKE_BITSET | flags, 1, NULL, NULL, bits);
        printf("%u wake_bitset %s %s bits=%#x = %s\n", idx, fl, an, bits, res(r));
        break;
    }
    case 7: {
        uint32_t *a = addr_pick(&an), *b = addr_pick(&bn);
        int cmp = pick(2);
        int nw = (int)pick(3) - 1;
        long nr = (long)pick(3) - 1;
        uint32_t v3 = 0;
        if (cmp && a && a != none && a != (uint32_t *)((char *)page + 2))
            v3 = pick(2) ? *a : *a ^ 1;
        r = fx(a, (cmp ? FUTEX_CMP_REQUEUE : FUTEX_REQUEUE) | flags, (uint32_t)nw,
               (const void *)nr, b, v3);
        printf("%u %s %s %s %s wake=%d requeue=%ld = %s\n", idx, cmp ? "cmp_requeue" : "requeue", fl,
               an, bn, nw, nr, res(r));
        break;
    }
    case 8: {
        uint32_t *a = addr_pick(&an), *b = addr_pick(&bn);
        unsigned op = pick(7), cmp = pick(7), shift = pick(4) == 0;
        unsigned oparg = pick(3) == 0 ? 40 : pick(9), cmparg = pick(4);
        /* A thread ID changed by arithmetic differs between the two runs. */
        if (b && b != none && (uintptr_t)b % 4 == 0 && b != readonly) {
            uint32_t t = *b & TID_MASK;
            if (t && (t == me || t == helper || t == dead)) {
                printf("%u wake_op on a thread ID left out\n", idx);
                return;
            }
        }
        uint32_t enc = (shift ? 8U : 0U) << 28 | (op & 7) << 28 | (cmp & 15) << 24 |
                       (oparg & 0xfff) << 12 | (cmparg & 0xfff);
        r = fx(a, FUTEX_WAKE_OP | flags, 1, (const void *)1L, b, enc);
        printf("%u wake_op %s %s %s op=%u%s arg=%u cmp=%u cmparg=%u = %s\n", idx, fl, an, bn, op,
               shift ? "|shift" : "", oparg, cmp, cmparg, res(r));
        break;
    }
    case 9:
    case 10: {
        uint32_t *a = addr_pick(&an);
        int two = pick(2);
        const struct timespec *t = timeout_pick(0, 1, &tn);
        if (foreign_owner(a)) {
            printf("%u lock_pi of a foreign owner left out\n", idx);
            return;
        }
        r = fx(a, (two ? FUTEX_LOCK_PI2 : FUTEX_LOCK_PI) | flags, 0, t, NULL, 0);
        printf("%u %s %s %s %s = %s\n", idx, two ? "lock_pi2" : "lock_pi", fl, an, tn, res(r));
        break;
    }
    case 11: {
        uint32_t *a = addr_pick(&an);
        if (foreign_owner(a)) {
            printf("%u trylock_pi of a foreign owner left out\n", idx);
            return;
        }
        r = fx(a, FUTEX_TRYLOCK_PI | flags, 0, NULL, NULL, 0);
        printf("%u trylock_pi %s %s = %s\n", idx, fl, an, res(r));
        break;
    }
    case 12:
    case 13: {
        uint32_t *a = addr_pick(&an);
        r = fx(a, FUTEX_UNLOCK_PI | flags, 0, NULL, NULL, 0);
        printf("%u unlock_pi %s %s = %s\n", idx, fl, an, res(r));
        break;
    }
    case 14: {
        /* Operations that do not exist. */
        static const int ops[] = {14, 15, 31, 127};
        int op = ops[pick(4)];
        r = fx(words[0], op | flags, 0, NULL, NULL, 0);
        printf("%u op %d %s = %s\n", idx, op, fl, res(r));
        break;
    }
    default: {
        /* The word through a second mapping of the shared page's file is
           the same futex: a wake there counts nobody, as here. */
        uint32_t v = *shared;
        r = fx(shared, FUTEX_WAIT | (flags & ~FUTEX_CLOCK_REALTIME), v ^ 4, NULL, NULL, 0);
        printf("%u wait shared stale = %s\n", idx, res(r));
        break;
    }
    }
    words_line(idx);
}

static void begin(void) {
    for (int w = 0; w < NWORDS; w++)
        *words[w] = 0;
}

int main(int argc, char **argv) {
    page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    readonly = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    none = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED || shared == MAP_FAILED || readonly == MAP_FAILED || none == MAP_FAILED) {
        perror("futexdiff: mmap");
        return 2;
    }
    words[0] = page;
    words[1] = page + 1;
    words[2] = page + 16;
    words[3] = shared;
    me = (uint32_t)syscall(SYS_gettid);
    pthread_t t;
    /* A thread that has exited, then one that lives until the end. */
    if (pthread_create(&t, NULL, dead_main, NULL) || pthread_join(t, NULL) || pipe(helper_pipe) ||
        pthread_create(&t, NULL, helper_main, NULL)) {
        perror("futexdiff: threads");
        return 2;
    }
    while (!__atomic_load_n(&helper, __ATOMIC_ACQUIRE))
        usleep(1000);
    if (helper == dead) {
        fprintf(stderr, "futexdiff: the helper got the exited thread's ID\n");
        return 2;
    }
    int rc = differ_main(argc, argv, "futexdiff", begin, call);
    write(helper_pipe[1], "x", 1);
    pthread_join(t, NULL);
    return rc;
}
