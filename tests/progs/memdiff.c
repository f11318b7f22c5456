/* Differential exerciser beyond files: random sequences of memory, signal,
 * futex, clock and /proc calls, one deterministic line per call.
 *
 *   memdiff DIR run SEED NSEEDS COUNT   seeds SEED..SEED+NSEEDS-1, COUNT
 *                                       calls each, state reset before each
 *   memdiff DIR replay SEED COUNT I,J,… only calls I, J, … of that sequence
 *                                       (more SEED COUNT I,J,… triples may
 *                                       follow: each its own sequence)
 *
 * Call i of a seed depends only on (seed, i), so any subset of a sequence can
 * be replayed (the test shrinks a failing sequence that way). Each line is
 * "INDEX GROUP ARGS = RESULT [DETAILS] [~ SOFT]". Nothing printed depends on
 * where things are: addresses are page indexes in a reserved region of
 * NPAGES pages, contents are hashes, results are "ok", a value or an errno
 * name. What follows "~" is not compared: values Linux lets vary (which pages
 * mincore finds resident, a coarse clock's resolution, how many lines the
 * kernel merges in /proc/self/maps).
 *
 * The memory calls work on one region reserved PROT_NONE at the start of each
 * sequence; every mapping is MAP_FIXED inside it. Two scratch files in DIR:
 * "shared" (NPAGES pages, mapped MAP_SHARED only at the offset equal to the
 * page's index in the region, so no two shared mappings alias — a
 * partition's shared mappings are copies, docs/linux.md) and "private"
 * (mapped MAP_PRIVATE at any offset, never written). Stores to shared pages
 * are msync'd before anything that drops them (MAP_FIXED over them, munmap,
 * madvise), for the same reason. A memfd of NPAGES pages is mapped shared or
 * private at any offset, aliases included: its pages are one set in a
 * partition as on Linux. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096
#define NPAGES 24

static char *base;
static int sfd = -1, pfd = -1, mfd = -1;
static char root[4096];
/* Pages whose contents Linux leaves unspecified (after MADV_FREE). */
static unsigned char fuzzy[NPAGES];

/* ---- deterministic randomness: call i of seed s has its own stream ---- */

static uint64_t rng;
static uint64_t next(void) {
    uint64_t z = (rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
static unsigned pick(unsigned n) { return (unsigned)(next() % n); }

static uint64_t fnv(const unsigned char *p, size_t n) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

static const char *ename(int e) {
    static char buf[16];
    switch (e) {
#define E(x) case x: return #x;
        E(EPERM) E(ENOENT) E(EINTR) E(EIO) E(EBADF) E(EAGAIN) E(ENOMEM) E(EACCES)
        E(EFAULT) E(EBUSY) E(EEXIST) E(ENODEV) E(EINVAL) E(ENOSYS) E(EOPNOTSUPP)
        E(ETIMEDOUT) E(ESRCH) E(EOVERFLOW)
#undef E
    default:
        snprintf(buf, sizeof buf, "E%d", e);
        return buf;
    }
}

/* The line being built. */
static char line[8192];
static size_t len;
static void add(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void add(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line + len, sizeof line - len, fmt, ap);
    va_end(ap);
    if (n > 0)
        len += (size_t)n < sizeof line - len ? (size_t)n : sizeof line - len - 1;
}
static void begin(unsigned i, const char *group) {
    len = 0;
    add("%u %s", i, group);
}
static void end(void) {
    printf("%s\n", line);
    fflush(stdout);
}
/* Appends " = ok" or " = ERRNO"; returns whether r succeeded. */
static int result(long r) {
    if (r < 0) {
        add(" = %s", ename(errno));
        return 0;
    }
    add(" = ok");
    return 1;
}

/* ---- faults: a probe is a load or store under sigsetjmp ---- */

static sigjmp_buf fault;
static volatile int fault_armed;
static volatile int fault_sig, fault_code;
static volatile long fault_page;
static void on_fault(int sig, siginfo_t *si, void *uc) {
    (void)uc;
    if (!fault_armed)
        _exit(99);
    fault_sig = sig;
    fault_code = si->si_code;
    fault_page = ((char *)si->si_addr - base) / PAGE;
    siglongjmp(fault, 1);
}
static void fault_text(void) {
    const char *code = fault_sig == SIGBUS ? "BUS"
                       : fault_code == SEGV_MAPERR ? "MAPERR"
                       : fault_code == SEGV_ACCERR ? "ACCERR"
                                                  : "?";
    add("%s", code);
    if (fault_page >= 0 && fault_page < NPAGES)
        add("@%ld", fault_page);
}

/* Reads page p: its hash (or "fuzzy"), or the fault. */
static void probe_read(unsigned p) {
    fault_armed = 1;
    if (sigsetjmp(fault, 1) == 0) {
        uint64_t h = fnv((unsigned char *)base + (size_t)p * PAGE, PAGE);
        fault_armed = 0;
        if (fuzzy[p])
            add(" r%u=fuzzy", p);
        else
            add(" r%u=%016llx", p, (unsigned long long)h);
    } else {
        fault_armed = 0;
        add(" r%u=", p);
        fault_text();
    }
}

/* Fills page p with a pattern from the call's stream. */
static void probe_write(unsigned p) {
    uint64_t v = next();
    fault_armed = 1;
    if (sigsetjmp(fault, 1) == 0) {
        volatile uint64_t *w = (volatile uint64_t *)(base + (size_t)p * PAGE);
        for (unsigned k = 0; k < PAGE / 8; k++)
            w[k] = v + k;
        fault_armed = 0;
        fuzzy[p] = 0;
        add(" w%u=ok", p);
    } else {
        fault_armed = 0;
        add(" w%u=", p);
        fault_text();
    }
}

/* msync each page (stores to shared file pages reach the file before a
 * partition would drop its copy); results are not printed. */
static void sync_pages(unsigned p, unsigned n) {
    for (unsigned k = p; k < p + n && k < NPAGES; k++)
        msync(base + (size_t)k * PAGE, PAGE, MS_SYNC);
}

static unsigned rand_prot(const char **text) {
    static const struct {
        int prot;
        const char *text;
    } prots[] = {
        {PROT_NONE, "NONE"}, {PROT_READ, "R"}, {PROT_READ | PROT_WRITE, "RW"},
        {PROT_WRITE, "W"}, {PROT_READ | PROT_EXEC, "RX"}, {PROT_READ | PROT_WRITE, "RW"},
    };
    unsigned c = pick(sizeof prots / sizeof *prots);
    *text = prots[c].text;
    return (unsigned)prots[c].prot;
}

/* A range [p, p+n) of the region, n >= 1. */
static void range(unsigned *p, unsigned *n, unsigned max) {
    *p = pick(NPAGES);
    *n = 1 + pick(max);
    if (*p + *n > NPAGES)
        *n = NPAGES - *p;
}

/* ---- memory ---- */

static void op_mmap(unsigned i) {
    unsigned p, n;
    range(&p, &n, 5);
    const char *pt;
    unsigned prot = rand_prot(&pt);
    unsigned kind = pick(6);
    static const char *kinds[] = {"anon-private", "anon-shared", "file-private", "file-shared",
                                  "memfd-private", "memfd-shared"};
    unsigned foff = pick(NPAGES - 4);
    begin(i, "mmap");
    add("(%s,%s) page=%u n=%u", kinds[kind], pt, p, n);
    sync_pages(p, n);
    void *want = base + (size_t)p * PAGE;
    void *r;
    switch (kind) {
    case 0:
        r = mmap(want, (size_t)n * PAGE, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        break;
    case 1:
        r = mmap(want, (size_t)n * PAGE, prot, MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        break;
    case 2:
        add(" off=%u", foff);
        r = mmap(want, (size_t)n * PAGE, prot, MAP_PRIVATE | MAP_FIXED, pfd, (off_t)foff * PAGE);
        break;
    case 3:
        r = mmap(want, (size_t)n * PAGE, prot, MAP_SHARED | MAP_FIXED, sfd, (off_t)p * PAGE);
        break;
    default:
        /* A memory-only file: any offset, aliases included (its pages are
         * one set, however many mappings show them). */
        add(" off=%u", foff);
        r = mmap(want, (size_t)n * PAGE, prot, (kind == 4 ? MAP_PRIVATE : MAP_SHARED) | MAP_FIXED, mfd,
                 (off_t)foff * PAGE);
        break;
    }
    if (r == MAP_FAILED) {
        add(" = %s", ename(errno));
    } else {
        add(" = %s", r == want ? "ok" : "moved");
        for (unsigned k = p; k < p + n; k++)
            fuzzy[k] = 0;
    }
    end();
}

static void op_mprotect(unsigned i) {
    unsigned p, n;
    range(&p, &n, 6);
    const char *pt;
    unsigned prot = rand_prot(&pt);
    begin(i, "mprotect");
    add("(%s) page=%u n=%u", pt, p, n);
    result(mprotect(base + (size_t)p * PAGE, (size_t)n * PAGE, (int)prot));
    end();
}

static void op_munmap(unsigned i) {
    unsigned p, n;
    range(&p, &n, 6);
    begin(i, "munmap");
    add(" page=%u n=%u", p, n);
    sync_pages(p, n);
    if (result(munmap(base + (size_t)p * PAGE, (size_t)n * PAGE)))
        for (unsigned k = p; k < p + n; k++)
            fuzzy[k] = 0;
    end();
}

static void op_madvise(unsigned i) {
    static const struct {
        int advice;
        const char *text;
    } advs[] = {
        {MADV_DONTNEED, "DONTNEED"}, {MADV_FREE, "FREE"}, {MADV_WILLNEED, "WILLNEED"},
        {MADV_NORMAL, "NORMAL"}, {MADV_SEQUENTIAL, "SEQUENTIAL"},
    };
    unsigned a = pick(sizeof advs / sizeof *advs);
    unsigned p, n;
    range(&p, &n, 6);
    char group[32];
    snprintf(group, sizeof group, "madvise(%s)", advs[a].text);
    begin(i, group);
    add(" page=%u n=%u", p, n);
    sync_pages(p, n);
    int r = madvise(base + (size_t)p * PAGE, (size_t)n * PAGE, advs[a].advice);
    if (result(r) && advs[a].advice == MADV_FREE)
        for (unsigned k = p; k < p + n; k++)
            fuzzy[k] = 1;
    end();
}

static void op_access(unsigned i) {
    unsigned p, n;
    range(&p, &n, 4);
    int write = pick(3) == 0;
    begin(i, write ? "write" : "read");
    add(" page=%u n=%u =", p, n);
    for (unsigned k = p; k < p + n; k++) {
        if (write)
            probe_write(k);
        else
            probe_read(k);
    }
    end();
}

/* Every page: readable? writable (storing back what was there)? */
static void op_probe(unsigned i) {
    begin(i, "probe");
    add(" =");
    for (unsigned p = 0; p < NPAGES; p++) {
        volatile char *c = base + (size_t)p * PAGE + 123;
        volatile char r = 0, w = 0;
        fault_armed = 1;
        if (sigsetjmp(fault, 1) == 0) {
            char v = *c;
            r = 'r';
            if (sigsetjmp(fault, 1) == 0) {
                *c = v;
                w = 'w';
            } else {
                w = fault_sig == SIGBUS ? 'B' : fault_code == SEGV_ACCERR ? 'A' : 'M';
            }
        } else {
            r = fault_sig == SIGBUS ? 'B' : fault_code == SEGV_ACCERR ? 'A' : 'M';
            w = '-';
        }
        fault_armed = 0;
        add(" %c%c", r, w);
    }
    end();
}

static void op_mincore(unsigned i) {
    unsigned p, n;
    range(&p, &n, NPAGES);
    unsigned char vec[NPAGES];
    begin(i, "mincore");
    add(" page=%u n=%u", p, n);
    if (result(mincore(base + (size_t)p * PAGE, (size_t)n * PAGE, vec))) {
        /* Which pages are resident is the kernel's business (fault-around,
         * the page cache): not compared. */
        add(" ~ ");
        for (unsigned k = 0; k < n; k++)
            add("%d", vec[k] & 1);
    }
    end();
}

/* mremap on a mapping of its own (outside the region), undone at the end:
 * whatever it answers leaves no state behind. */
static void op_mremap(unsigned i) {
    static const char *kinds[] = {"grow", "shrink", "MAYMOVE", "FIXED"};
    unsigned k = pick(4);
    unsigned n = 2 + pick(3), m = k == 1 ? 1 : n + 1 + pick(3);
    int shared = pick(2);
    char group[32];
    snprintf(group, sizeof group, "mremap(%s)", kinds[k]);
    begin(i, group);
    add(" %s n=%u to %u", shared ? "shared" : "private", n, m);
    /* Room to grow into: reserve 16 pages, map n at the start. */
    char *area = mmap(NULL, 16 * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (k != 3)
        munmap(area + (size_t)n * PAGE, (16 - (size_t)n) * PAGE);
    char *a = mmap(area, (size_t)n * PAGE, PROT_READ | PROT_WRITE,
                   MAP_FIXED | MAP_ANONYMOUS | (shared ? MAP_SHARED : MAP_PRIVATE), -1, 0);
    for (unsigned q = 0; q < n; q++)
        memset(a + (size_t)q * PAGE, 'a' + q, PAGE);
    if (k == 0 && pick(2)) {
        /* Something in the way: growing in place is impossible. */
        mmap(area + (size_t)n * PAGE, PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        add(" blocked");
    }
    char *r;
    if (k == 3)
        r = mremap(a, (size_t)n * PAGE, (size_t)m * PAGE, MREMAP_MAYMOVE | MREMAP_FIXED, area + 8 * PAGE);
    else
        r = mremap(a, (size_t)n * PAGE, (size_t)m * PAGE, k == 2 ? MREMAP_MAYMOVE : 0);
    if (r == MAP_FAILED) {
        add(" = %s", ename(errno));
    } else {
        add(" = ok %s", r == a ? "in-place" : r == area + 8 * PAGE ? "at-target" : "moved");
        for (volatile unsigned q = 0; q < m; q++) {
            volatile unsigned char *pg = (unsigned char *)r + (size_t)q * PAGE;
            fault_armed = 1;
            if (sigsetjmp(fault, 1) == 0) {
                /* A shared anonymous mapping grown past its object: SIGBUS. */
                add(" %c", q < n ? (pg[0] == 'a' + q && pg[PAGE - 1] == 'a' + q ? 'k' : 'X')
                                 : (pg[0] == 0 && pg[PAGE - 1] == 0 ? '0' : 'X'));
            } else {
                add(" %s", fault_sig == SIGBUS ? "BUS" : "SEGV");
            }
            fault_armed = 0;
        }
        if (r != a) {
            /* The old place is gone. */
            fault_armed = 1;
            if (sigsetjmp(fault, 1) == 0) {
                (void)*(volatile char *)a;
                add(" old=mapped");
            } else {
                add(" old=%s", fault_code == SEGV_MAPERR ? "MAPERR" : "other");
            }
            fault_armed = 0;
        }
        munmap(r, (size_t)m * PAGE);
    }
    munmap(area, 16 * PAGE);
    end();
}

/* ---- signals ---- */

static volatile int trace[32], ntrace;
static volatile int depth, again;
static void note(int v) {
    if (ntrace < 32)
        trace[ntrace++] = v;
}
static void on_sig(int sig) {
    depth++;
    note(sig * 10 + depth);
    if (again) {
        again = 0;
        raise(sig);
    }
    sigset_t cur;
    sigprocmask(SIG_BLOCK, NULL, &cur);
    note(sigismember(&cur, sig) ? 1 : 0);
    depth--;
}
static void print_trace(void) {
    add(" trace=");
    for (int k = 0; k < ntrace; k++)
        add("%s%d", k ? "," : "", trace[k]);
    ntrace = 0;
}
static void handle(int sig, int flags) {
    struct sigaction sa = {.sa_handler = on_sig, .sa_flags = flags};
    sigaction(sig, &sa, NULL);
}
static void deflt(int sig) {
    struct sigaction sa = {.sa_handler = SIG_DFL};
    sigaction(sig, &sa, NULL);
}
static const int sigs[] = {SIGUSR1, SIGUSR2, SIGWINCH, 40 /* SIGRTMIN+6 */, 45};
#define NSIGS 5

static void print_set(const char *what, const sigset_t *s) {
    add(" %s=", what);
    int any = 0;
    for (int k = 0; k < NSIGS; k++)
        if (sigismember(s, sigs[k]))
            add("%s%d", any++ ? "," : "", sigs[k]);
    if (!any)
        add("-");
}

/* Block some, raise some, look at the pending set, unblock: which handlers
 * run, in which order. */
static void op_sigmask(unsigned i) {
    sigset_t block, pend, old;
    sigemptyset(&block);
    for (int k = 0; k < NSIGS; k++) {
        handle(sigs[k], 0);
        if (pick(2))
            sigaddset(&block, sigs[k]);
    }
    begin(i, "sigprocmask");
    print_set("block", &block);
    sigprocmask(SIG_BLOCK, &block, &old);
    add(" raise=");
    for (int k = 0; k < 3; k++) {
        int s = sigs[pick(NSIGS)];
        add("%s%d", k ? "," : "", s);
        if (pick(2))
            raise(s);
        else
            syscall(SYS_tgkill, getpid(), gettid(), s);
    }
    print_trace();
    add(" pending");
    if (result(sigpending(&pend)))
        print_set("set", &pend);
    sigprocmask(SIG_SETMASK, &old, NULL);
    print_trace();
    for (int k = 0; k < NSIGS; k++)
        deflt(sigs[k]);
    end();
}

/* SA_NODEFER, SA_RESETHAND and a handler raising its own signal. */
static void op_sigflags(unsigned i) {
    int sig = sigs[pick(NSIGS)];
    int nodefer = pick(2), reset = pick(2);
    begin(i, "sigaction(flags)");
    add(" sig=%d%s%s", sig, nodefer ? " NODEFER" : "", reset ? " RESETHAND" : "");
    handle(sig, (nodefer ? SA_NODEFER : 0) | (reset ? SA_RESETHAND : 0));
    /* With RESETHAND the nested raise would take the default action. */
    again = !reset;
    raise(sig);
    print_trace();
    struct sigaction now;
    sigaction(sig, NULL, &now);
    add(" after=%s", now.sa_handler == SIG_DFL ? "DFL" : "handler");
    deflt(sig);
    end();
}

static void op_sigprocmask_edges(unsigned i) {
    sigset_t s, got;
    sigemptyset(&s);
    sigaddset(&s, SIGKILL);
    sigaddset(&s, SIGSTOP);
    sigaddset(&s, SIGUSR1);
    begin(i, "sigprocmask(edges)");
    int how = pick(2) ? 77 : SIG_BLOCK;
    add(" how=%s", how == 77 ? "bad" : "BLOCK");
    long r = syscall(SYS_rt_sigprocmask, how, &s, NULL, 8);
    result(r);
    sigprocmask(SIG_BLOCK, NULL, &got);
    add(" KILL=%d STOP=%d USR1=%d", sigismember(&got, SIGKILL), sigismember(&got, SIGSTOP),
        sigismember(&got, SIGUSR1));
    add(" size9");
    result(syscall(SYS_rt_sigprocmask, SIG_BLOCK, &s, NULL, 9));
    sigprocmask(SIG_UNBLOCK, &s, NULL);
    add(" action(KILL)");
    struct sigaction sa = {.sa_handler = on_sig};
    result(sigaction(SIGKILL, &sa, NULL));
    end();
}

static char altstack[131072];
static volatile int on_alt, alt_flags;
static void on_altsig(int sig) {
    (void)sig;
    char here;
    on_alt = &here >= altstack && &here < altstack + sizeof altstack;
    stack_t cur;
    sigaltstack(NULL, &cur);
    alt_flags = cur.ss_flags;
    /* Changing the stack while on it is refused. */
    stack_t off = {.ss_flags = SS_DISABLE};
    if (sigaltstack(&off, NULL) < 0)
        alt_flags |= errno == EPERM ? 0x100 : 0x200;
}

static void op_sigaltstack(unsigned i) {
    int set = pick(3), onstack = pick(2);
    begin(i, "sigaltstack");
    add(" %s%s", set == 0 ? "none" : set == 1 ? "set" : "small", onstack ? " ONSTACK" : "");
    stack_t ss = {.ss_sp = altstack, .ss_size = set == 2 ? 1024 : sizeof altstack};
    if (set)
        result(sigaltstack(&ss, NULL));
    stack_t cur;
    sigaltstack(NULL, &cur);
    add(" flags=%d", cur.ss_flags);
    struct sigaction sa = {.sa_handler = on_altsig, .sa_flags = onstack ? SA_ONSTACK : 0};
    sigaction(SIGUSR2, &sa, NULL);
    on_alt = -1;
    raise(SIGUSR2);
    add(" handler on_alt=%d flags=%#x", on_alt, alt_flags);
    stack_t off = {.ss_flags = SS_DISABLE};
    sigaltstack(&off, NULL);
    deflt(SIGUSR2);
    end();
}

/* A blocking read of a pipe interrupted by a signal from another thread,
 * with and without SA_RESTART. */
static int rpipe[2];
static pid_t main_tid;
static void *interrupter(void *arg) {
    (void)arg;
    usleep(50000);
    syscall(SYS_tgkill, getpid(), main_tid, SIGUSR1);
    usleep(20000);
    write(rpipe[1], "x", 1);
    return NULL;
}
static void op_restart(unsigned i) {
    int restart = pick(2);
    begin(i, "SA_RESTART");
    add(" %s", restart ? "RESTART" : "no");
    handle(SIGUSR1, restart ? SA_RESTART : 0);
    pipe(rpipe);
    main_tid = gettid();
    pthread_t t;
    static char stack[256 * 1024] __attribute__((aligned(4096)));
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setstack(&at, stack, sizeof stack);
    pthread_create(&t, &at, interrupter, NULL);
    pthread_attr_destroy(&at);
    char c;
    long r = read(rpipe[0], &c, 1);
    add(" read");
    if (r >= 0)
        add(" = %ld", r);
    else
        result(r);
    print_trace();
    pthread_join(t, NULL);
    close(rpipe[0]);
    close(rpipe[1]);
    ntrace = 0;
    deflt(SIGUSR1);
    end();
}

/* ---- futexes ---- */

static long futex(volatile int *w, int op, int val, const struct timespec *ts, volatile int *w2, int val3) {
    return syscall(SYS_futex, w, op, val, ts, w2, val3);
}
static volatile int fa, fb, ready, woke;
static volatile unsigned bits[4];
static void *waiter(void *arg) {
    long k = (long)arg;
    __atomic_add_fetch(&ready, 1, __ATOMIC_SEQ_CST);
    long r = futex(&fa, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, 0, NULL, NULL, (int)bits[k]);
    if (r == 0)
        __atomic_add_fetch(&woke, 1, __ATOMIC_SEQ_CST);
    return NULL;
}
/* The waiters' stacks, outside the region: stacks glibc maps itself may
 * land in the region's holes, where later calls would map over them. */
static char waiter_stacks[4][256 * 1024] __attribute__((aligned(4096)));
/* Starts n waiters on fa and waits until they are (very probably) asleep. */
static void start_waiters(pthread_t *t, unsigned n) {
    fa = 0;
    fb = 0;
    ready = 0;
    woke = 0;
    for (long k = 0; k < (long)n; k++) {
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setstack(&at, waiter_stacks[k], sizeof waiter_stacks[k]);
        pthread_create(&t[k], &at, waiter, (void *)k);
        pthread_attr_destroy(&at);
    }
    while (__atomic_load_n(&ready, __ATOMIC_SEQ_CST) < (int)n)
        usleep(1000);
    usleep(20000);
}
static void stop_waiters(pthread_t *t, unsigned n) {
    for (int tries = 0; tries < 100 && woke < (int)n; tries++) {
        futex(&fa, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 100, NULL, NULL, 0);
        futex(&fb, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 100, NULL, NULL, 0);
        usleep(1000);
    }
    for (unsigned k = 0; k < n; k++)
        pthread_join(t[k], NULL);
}

static void op_futex_simple(unsigned i) {
    unsigned c = pick(4);
    volatile int w = 5;
    struct timespec ts = {0, 2000000};
    switch (c) {
    case 0:
        begin(i, "futex(WAIT)");
        add(" wrong value");
        result(futex(&w, FUTEX_WAIT, 4, NULL, NULL, 0));
        break;
    case 1:
        begin(i, "futex(WAIT)");
        add(" timeout 2ms");
        result(futex(&w, FUTEX_WAIT | (pick(2) ? FUTEX_PRIVATE_FLAG : 0), 5, &ts, NULL, 0));
        break;
    case 2: {
        begin(i, "futex(WAIT_BITSET)");
        int absolute = pick(2);
        add(" %s", absolute ? "absolute past deadline" : "bitset 0");
        if (absolute) {
            /* 1 ns after boot: past on both (a partition boots at 0, so
             * "now - 1 s" could be negative there: EINVAL). */
            struct timespec past = {0, 1};
            result(futex(&w, FUTEX_WAIT_BITSET, 5, &past, NULL, -1));
        } else {
            result(futex(&w, FUTEX_WAIT_BITSET, 5, &ts, NULL, 0));
        }
        break;
    }
    default:
        begin(i, "futex(WAKE)");
        add(" no waiters");
        long r = futex(&w, FUTEX_WAKE, 3, NULL, NULL, 0);
        if (r >= 0)
            add(" = %ld", r);
        else
            result(r);
        break;
    }
    end();
}

static void op_futex_threads(unsigned i) {
    pthread_t t[4];
    unsigned n = 1 + pick(3);
    unsigned c = pick(3);
    for (unsigned k = 0; k < 4; k++)
        bits[k] = c == 2 ? 1u << pick(3) : 0xffffffffu;
    long r, r2 = 0;
    switch (c) {
    case 0: {
        unsigned k = pick(4);
        begin(i, "futex(WAKE)");
        add(" waiters=%u wake=%u", n, k);
        start_waiters(t, n);
        r = futex(&fa, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, (int)k, NULL, NULL, 0);
        break;
    }
    case 1: {
        unsigned wake = pick(2), req = pick(3);
        int cmp = pick(3);
        begin(i, cmp ? "futex(CMP_REQUEUE)" : "futex(REQUEUE)");
        add(" waiters=%u wake=%u requeue=%u%s", n, wake, req, cmp == 2 ? " wrong-value" : "");
        start_waiters(t, n);
        if (cmp)
            r = futex(&fa, FUTEX_CMP_REQUEUE | FUTEX_PRIVATE_FLAG, (int)wake,
                      (struct timespec *)(uintptr_t)req, &fb, cmp == 2 ? 1 : 0);
        else
            r = futex(&fa, FUTEX_REQUEUE | FUTEX_PRIVATE_FLAG, (int)wake,
                      (struct timespec *)(uintptr_t)req, &fb, 0);
        usleep(5000);
        /* Those requeued now wait on fb. */
        r2 = futex(&fb, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 100, NULL, NULL, 0);
        break;
    }
    default: {
        unsigned mask = 1 + pick(7);
        begin(i, "futex(WAKE_BITSET)");
        add(" waiters=%u bits=", n);
        for (unsigned k = 0; k < n; k++)
            add("%s%u", k ? "," : "", bits[k]);
        add(" mask=%u", mask);
        start_waiters(t, n);
        r = futex(&fa, FUTEX_WAKE_BITSET | FUTEX_PRIVATE_FLAG, 100, NULL, NULL, (int)mask);
        break;
    }
    }
    if (r >= 0)
        add(" = %ld", r);
    else
        result(r);
    if (c == 1)
        add(" then fb woke %ld", r2);
    stop_waiters(t, n);
    end();
}

/* ---- clocks ---- */

static void op_clock_getres(unsigned i) {
    static const int ids[] = {0, 1, 2, 3, 4, 5, 6, 7, 11, 10, 12, 100, -1};
    int id = ids[pick(sizeof ids / sizeof *ids)];
    struct timespec ts = {0, 0};
    begin(i, "clock_getres");
    add(" id=%d", id);
    if (result(syscall(SYS_clock_getres, id, &ts))) {
        long ns = ts.tv_sec * 1000000000L + ts.tv_nsec;
        add(" nonzero=%d", ns > 0);
        /* Coarse clocks' resolution is the host's tick. */
        add(" ~ %s", ns <= 1000 ? "fine" : "coarse");
    }
    end();
}

static void op_clock_gettime(unsigned i) {
    static const int ids[] = {0, 1, 2, 3, 4, 5, 6, 7, 11, 10, 100};
    int id = ids[pick(sizeof ids / sizeof *ids)];
    begin(i, "clock_gettime");
    add(" id=%d x200", id);
    struct timespec a, b;
    long r = syscall(SYS_clock_gettime, id, &a);
    if (result(r)) {
        int back = 0;
        for (int k = 0; k < 200; k++) {
            syscall(SYS_clock_gettime, id, &b);
            if (id != 0 && id != 5 && id != 11 &&
                (b.tv_sec < a.tv_sec || (b.tv_sec == a.tv_sec && b.tv_nsec < a.tv_nsec)))
                back = 1;
            a = b;
        }
        add(" backwards=%d nsec-in-range=%d", back, a.tv_nsec >= 0 && a.tv_nsec < 1000000000L);
    }
    end();
}

static void op_sleep(unsigned i) {
    unsigned c = pick(6);
    struct timespec ts = {0, 1000000}, rem;
    begin(i, "nanosleep");
    long r;
    switch (c) {
    case 0:
        add(" 1ms");
        r = syscall(SYS_nanosleep, &ts, &rem);
        break;
    case 1:
        add(" nsec=1e9");
        ts.tv_nsec = 1000000000L;
        r = syscall(SYS_nanosleep, &ts, &rem);
        break;
    case 2:
        add(" sec=-1");
        ts.tv_sec = -1;
        r = syscall(SYS_nanosleep, &ts, &rem);
        break;
    case 3: {
        int id = pick(2) ? CLOCK_MONOTONIC : CLOCK_REALTIME;
        add(" clock_nanosleep(%d, ABSTIME, now+1ms)", id);
        clock_gettime(id, &ts);
        ts.tv_nsec += 1000000;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        struct timespec before, after;
        clock_gettime(id, &before);
        r = syscall(SYS_clock_nanosleep, id, TIMER_ABSTIME, &ts, NULL);
        clock_gettime(id, &after);
        if (r == 0)
            add(" reached=%d", after.tv_sec > ts.tv_sec ||
                                   (after.tv_sec == ts.tv_sec && after.tv_nsec >= ts.tv_nsec));
        break;
    }
    case 4: {
        add(" clock_nanosleep(MONOTONIC, ABSTIME, past)");
        ts.tv_sec = 1;
        r = syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
        break;
    }
    default: {
        static const int ids[] = {CLOCK_THREAD_CPUTIME_ID, CLOCK_MONOTONIC_RAW, 100, CLOCK_BOOTTIME};
        int id = ids[pick(4)];
        add(" clock_nanosleep(%d, relative 1ms)", id);
        r = syscall(SYS_clock_nanosleep, id, 0, &ts, NULL);
        break;
    }
    }
    result(r);
    end();
}

/* Interval timers: setitimer(ITIMER_REAL) and a POSIX timer, each expiring
 * once into a handler; undone at the end. */
static void op_timer(unsigned i) {
    int posix = pick(2);
    ntrace = 0;
    handle(SIGALRM, 0);
    begin(i, posix ? "timer_create" : "setitimer");
    long r;
    if (posix) {
        struct sigevent ev = {.sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGALRM};
        int id = -1;
        r = syscall(SYS_timer_create, CLOCK_MONOTONIC, &ev, &id);
        result(r);
        if (r == 0) {
            struct itimerspec its = {.it_value = {0, 5000000}};
            add(" settime");
            result(syscall(SYS_timer_settime, id, 0, &its, NULL));
            usleep(30000);
            add(" overrun");
            result(syscall(SYS_timer_getoverrun, id));
            add(" delete");
            result(syscall(SYS_timer_delete, id));
        }
    } else {
        struct itimerval it = {.it_value = {0, 5000}};
        r = setitimer(ITIMER_REAL, &it, NULL);
        result(r);
        if (r == 0)
            usleep(30000);
    }
    add(" fired=%d", ntrace > 0);
    ntrace = 0;
    deflt(SIGALRM);
    end();
}

/* ---- /proc and /sys: structure only ---- */

static char text[1 << 16];
static long slurp(const char *path) {
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return -1;
    long n = 0, r;
    while ((r = read(fd, text + n, sizeof text - 1 - (size_t)n)) > 0)
        n += r;
    close(fd);
    text[n] = 0;
    return n;
}

static void op_proc(unsigned i) {
    static const char *files[] = {
        "/proc/self/status", "/proc/self/stat", "/proc/self/maps", "/proc/self/cgroup",
        "/proc/self/mountinfo", "/proc/self/limits", "/sys/devices/system/cpu/online",
        "/sys/fs/cgroup",
    };
    unsigned f = pick(sizeof files / sizeof *files);
    begin(i, "proc");
    add(" %s", files[f]);
    if (f == 7) {
        /* Presence only. */
        result(access(files[f], F_OK));
        end();
        return;
    }
    long n = slurp(files[f]);
    if (!result(n)) {
        end();
        return;
    }
    switch (f) {
    case 0: {
        static const char *fields[] = {"Name:", "State:", "Tgid:", "Pid:", "PPid:", "Uid:",
                                       "Gid:", "Threads:", "VmSize:", "VmRSS:", "VmPeak:",
                                       "SigBlk:", "Cpus_allowed:"};
        add(" fields");
        for (unsigned k = 0; k < sizeof fields / sizeof *fields; k++) {
            char want[32];
            snprintf(want, sizeof want, "\n%s", fields[k]);
            int has = !strncmp(text, fields[k], strlen(fields[k])) || strstr(text, want);
            add(" %s%d", fields[k], has);
        }
        char *t = strstr(text, "\nThreads:");
        add(" threads=%ld", t ? strtol(t + 9, NULL, 10) : -1);
        break;
    }
    case 1: {
        /* Fields after the command's closing parenthesis. */
        char *p = strrchr(text, ')');
        int count = p ? 2 : 0;
        for (char *s = p ? p + 1 : text; s && *s;) {
            while (*s == ' ' || *s == '\n')
                s++;
            if (!*s)
                break;
            count++;
            while (*s && *s != ' ' && *s != '\n')
                s++;
        }
        add(" fields=%d", count);
        break;
    }
    case 2: {
        /* start-end perms offset dev inode [path] */
        int lines = 0, bad = 0, region = 0;
        for (char *l = text; *l;) {
            char *e = strchr(l, '\n');
            if (e)
                *e = 0;
            unsigned long s, en, off, ino;
            char perms[8];
            unsigned maj, min;
            int used = 0;
            if (sscanf(l, "%lx-%lx %7s %lx %x:%x %lu%n", &s, &en, perms, &off, &maj, &min,
                       &ino, &used) != 7 ||
                strlen(perms) != 4 || (perms[3] != 'p' && perms[3] != 's'))
                bad++;
            else if (s >= (unsigned long)base && en <= (unsigned long)base + NPAGES * PAGE)
                region++;
            lines++;
            l = e ? e + 1 : l + strlen(l);
        }
        add(" bad-lines=%d ~ region-lines=%d", bad, region);
        (void)lines;
        break;
    }
    case 3:
    case 4:
    case 5: {
        int lines = 0, bad = 0;
        if (f == 5)
            add(" header=%d stack=%d nofile=%d", !strncmp(text, "Limit", 5),
                !!strstr(text, "\nMax stack size"), !!strstr(text, "\nMax open files"));
        for (char *l = text; *l;) {
            char *e = strchr(l, '\n');
            if (e)
                *e = 0;
            if (f == 3 && !strchr(l, ':'))
                bad++;
            if (f == 4 && !strstr(l, " - "))
                bad++;
            lines++;
            l = e ? e + 1 : l + strlen(l);
        }
        add(" nonempty=%d bad-lines=%d", lines > 0, bad);
        break;
    }
    default: {
        /* A list of ranges: 0 or 0-3,5 */
        int ok = 1;
        for (char *s = text; *s && *s != '\n'; s++)
            if (!((*s >= '0' && *s <= '9') || *s == '-' || *s == ','))
                ok = 0;
        add(" ranges=%d", ok && text[0] >= '0' && text[0] <= '9');
        break;
    }
    }
    end();
}

/* ---- the sequence ---- */

static const struct {
    void (*fn)(unsigned);
    unsigned weight;
} ops[] = {
    {op_mmap, 14}, {op_mprotect, 8}, {op_munmap, 5}, {op_madvise, 6}, {op_access, 14},
    {op_probe, 4}, {op_mincore, 3}, {op_mremap, 3}, {op_sigmask, 4}, {op_sigflags, 3},
    {op_sigprocmask_edges, 1}, {op_sigaltstack, 2}, {op_restart, 1}, {op_futex_simple, 3},
    {op_futex_threads, 1}, {op_clock_getres, 2}, {op_clock_gettime, 2}, {op_sleep, 2},
    {op_timer, 1}, {op_proc, 3},
};
#define NOPS (sizeof ops / sizeof *ops)

static void call(uint64_t seed, unsigned i) {
    unsigned total = 0;
    for (unsigned k = 0; k < NOPS; k++)
        total += ops[k].weight;
    rng = seed * 0x100000001b3ULL + i * 0x9e3779b97f4a7c15ULL + 1;
    next();
    unsigned w = pick(total);
    for (unsigned k = 0; k < NOPS; k++) {
        if (w < ops[k].weight) {
            ops[k].fn(i);
            return;
        }
        w -= ops[k].weight;
    }
}

static int scratch(const char *name, unsigned char salt) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", root, name);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        perror("memdiff: scratch file");
        exit(2);
    }
    static unsigned char page[PAGE];
    for (unsigned p = 0; p < NPAGES; p++) {
        for (unsigned k = 0; k < PAGE; k++)
            page[k] = (unsigned char)(p * 31 + k * 7 + salt);
        if (pwrite(fd, page, PAGE, (off_t)p * PAGE) != PAGE) {
            perror("memdiff: scratch write");
            exit(2);
        }
    }
    return fd;
}

/* A fresh region and fresh files. */
static void reset(void) {
    if (base) {
        sync_pages(0, NPAGES);
        munmap(base, NPAGES * PAGE);
    }
    if (sfd >= 0)
        close(sfd);
    if (pfd >= 0)
        close(pfd);
    if (mfd >= 0)
        close(mfd);
    mfd = (int)syscall(SYS_memfd_create, "memdiff", 0);
    if (mfd < 0 || ftruncate(mfd, NPAGES * PAGE)) {
        perror("memdiff: memfd");
        exit(2);
    }
    sfd = scratch("shared", 1);
    pfd = scratch("private", 2);
    base = mmap(NULL, NPAGES * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) {
        perror("memdiff: reserve");
        exit(2);
    }
    memset(fuzzy, 0, sizeof fuzzy);
    ntrace = 0;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: memdiff DIR run SEED NSEEDS COUNT | replay SEED COUNT I,J,...\n");
        return 2;
    }
    snprintf(root, sizeof root, "%s", argv[1]);
    struct sigaction sa = {.sa_sigaction = on_fault, .sa_flags = SA_SIGINFO | SA_NODEFER};
    sigaction(SIGBUS, &sa, NULL);
    sigaction(SIGSEGV, &sa, NULL);
    if (!strcmp(argv[2], "run") && argc == 6) {
        uint64_t seed = strtoull(argv[3], NULL, 10);
        unsigned nseeds = (unsigned)strtoul(argv[4], NULL, 10);
        unsigned count = (unsigned)strtoul(argv[5], NULL, 10);
        for (unsigned s = 0; s < nseeds; s++) {
            reset();
            printf("# seed %llu\n", (unsigned long long)(seed + s));
            for (unsigned i = 0; i < count; i++)
                call(seed + s, i);
        }
    } else if (!strcmp(argv[2], "replay") && argc >= 6 && (argc - 3) % 3 == 0) {
        for (int a = 3; a < argc; a += 3) {
            uint64_t seed = strtoull(argv[a], NULL, 10);
            reset();
            printf("# seed %llu\n", (unsigned long long)seed);
            for (char *p = argv[a + 2]; *p;) {
                char *e;
                unsigned long i = strtoul(p, &e, 10);
                if (e == p)
                    break;
                call(seed, (unsigned)i);
                p = *e ? e + 1 : e;
            }
        }
    } else {
        fprintf(stderr, "memdiff: bad arguments\n");
        return 2;
    }
    reset();
    munmap(base, NPAGES * PAGE);
    close(sfd);
    close(pfd);
    char path[4200];
    snprintf(path, sizeof path, "%s/shared", root);
    unlink(path);
    snprintf(path, sizeof path, "%s/private", root);
    unlink(path);
    return 0;
}
