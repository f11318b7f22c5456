/* Differential exerciser for memory locking: the same random sequence of
 * calls on the host (without capabilities, as a partition's program) and in
 * a partition must print the same lines.
 *
 *   mlockdiff run SEED NSEEDS COUNT   seeds SEED..SEED+NSEEDS-1, COUNT calls
 *
 * mlock, mlock2, munlock, mlockall (MCL_FUTURE's effect on the next mmap
 * included) and munlockall over a region of mappings of every kind
 * (anonymous, a file, a memory-only file; private, shared; MAP_LOCKED;
 * every protection), with unaligned starts, odd and huge lengths, bad flags
 * and holes; RLIMIT_MEMLOCK lowered and raised (0 included: EPERM); what
 * locking changes elsewhere: madvise refusing locked areas (and the areas
 * before them changed all the same), mremap growing a locked mapping past
 * the limit, MAP_FIXED over locked pages. RLIMIT_AS and RLIMIT_DATA set a
 * few pages above what is mapped (VmSize, VmData), then met by mmap,
 * mprotect (a private area made writable is data) and mremap. Every line
 * ends with the
 * process's locked size from /proc/self/status (VmLck), so the accounting
 * is compared after every call, and madvise prints the contents of the
 * pages it was given.
 *
 * MCL_CURRENT is always refused here (ENOMEM: the limits drawn are below
 * any process's size), so what is locked is always inside the region. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <setjmp.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#define SLOTS 1
#include "differ.h"

#define PAGE 4096
#define NPAGES 24

#ifndef MLOCK_ONFAULT
#define MLOCK_ONFAULT 1
#endif
#ifndef MCL_ONFAULT
#define MCL_ONFAULT 4
#endif

static char *base;
static int mfd = -1, ffd = -1;
/* Whether RLIMIT_DATA is below its hard limit. */
static int data_limited;
/* Pages whose contents Linux leaves unspecified (after MADV_FREE). */
static unsigned char fuzzy[NPAGES];

/* A field of /proc/self/status in kB ("VmLck:"), or -1. Reads into the
 * stack only: no allocation while MCL_FUTURE is in force. */
static long status_kb(const char *field) {
    char text[4096];
    int f = open("/proc/self/status", O_RDONLY);
    if (f < 0)
        return -1;
    long n = 0, r;
    while (n < (long)sizeof text - 1 && (r = read(f, text + n, sizeof text - 1 - n)) > 0)
        n += r;
    close(f);
    text[n < 0 ? 0 : n] = 0;
    char want[32];
    snprintf(want, sizeof want, "\n%s", field);
    char *l = strstr(text, want);
    return l ? strtol(l + strlen(want), NULL, 10) : -1;
}

static long vmlck(void) { return status_kb("VmLck:"); }

static sigjmp_buf fault;
static volatile int fault_armed;
static void on_fault(int sig) {
    (void)sig;
    if (!fault_armed)
        _exit(99);
    siglongjmp(fault, 1);
}

/* Appends page p's contents' hash (or the fault) to b. */
static void probe(char *b, size_t cap, unsigned p) {
    size_t l = strlen(b);
    if (fuzzy[p]) {
        snprintf(b + l, cap - l, " %u:fuzzy", p);
        return;
    }
    fault_armed = 1;
    if (sigsetjmp(fault, 1) == 0) {
        unsigned long h = sum((unsigned char *)base + (size_t)p * PAGE, PAGE);
        fault_armed = 0;
        snprintf(b + l, cap - l, " %u:%lx", p, h);
    } else {
        fault_armed = 0;
        snprintf(b + l, cap - l, " %u:fault", p);
    }
}

/* A range [p, p+n) of the region, n >= 1. */
static void range(unsigned *p, unsigned *n, unsigned max) {
    *p = pick(NPAGES);
    *n = 1 + pick(max);
    if (*p + *n > NPAGES)
        *n = NPAGES - *p;
}

static const int prots[] = {PROT_NONE, PROT_READ, PROT_READ | PROT_WRITE, PROT_WRITE,
                            PROT_READ | PROT_EXEC};

/* A mapping of a random kind at [p, p+n); returns its description. */
static const char *map(unsigned p, unsigned n, int extra, int prot, long *r) {
    static const char *kinds[] = {"anon-private", "anon-shared", "file-private", "memfd-shared",
                                  "memfd-private"};
    unsigned k = pick(5), off = pick(NPAGES - 4);
    char *want = base + (size_t)p * PAGE;
    void *m;
    switch (k) {
    case 0:
        m = mmap(want, (size_t)n * PAGE, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | extra, -1, 0);
        break;
    case 1:
        m = mmap(want, (size_t)n * PAGE, prot, MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED | extra, -1, 0);
        break;
    case 2:
        m = mmap(want, (size_t)n * PAGE, prot, MAP_PRIVATE | MAP_FIXED | extra, ffd, (off_t)off * PAGE);
        break;
    default:
        m = mmap(want, (size_t)n * PAGE, prot, (k == 3 ? MAP_SHARED : MAP_PRIVATE) | MAP_FIXED | extra,
                 mfd, (off_t)off * PAGE);
        break;
    }
    *r = m == MAP_FAILED ? -1 : m == want ? 0 : 1;
    if (m != MAP_FAILED)
        for (unsigned q = p; q < p + n; q++)
            fuzzy[q] = 0;
    return kinds[k];
}

/* A start and length for mlock/munlock: mostly pages of the region,
 * sometimes an unaligned start, a length that is not whole pages, 0, or
 * one that wraps. */
static void lock_args(unsigned p, unsigned n, char **addr, size_t *len, char *text, size_t cap) {
    *addr = base + (size_t)p * PAGE;
    *len = (size_t)n * PAGE;
    unsigned v = pick(10);
    /* An unaligned start reaches one page further: never past the region
     * (what follows it differs between the host and a partition). */
    if (v == 0 && p + n < NPAGES) {
        unsigned d = 1 + pick(PAGE - 1);
        *addr += d;
        snprintf(text, cap, "page=%u+%u n=%u", p, d, n);
        return;
    }
    if (v == 1) {
        *len -= 1 + pick(PAGE - 1);
        snprintf(text, cap, "page=%u n=%u-part", p, n);
        return;
    }
    if (v == 2) {
        static const size_t odd[] = {0, (size_t)-1, (size_t)-PAGE, (size_t)1 << 62};
        unsigned o = pick(4);
        *len = odd[o];
        snprintf(text, cap, "page=%u len=odd%u", p, o);
        return;
    }
    snprintf(text, cap, "page=%u n=%u", p, n);
}

static void call(unsigned idx) {
    char args[96], extra[512] = "";
    const char *what;
    long r;
    unsigned p, n;
    range(&p, &n, 8);
    switch (pick(21)) {
    case 0:
    case 1:
    case 2: {
        int locked = pick(3) == 0, populate = pick(5) == 0;
        int prot = prots[pick(5)];
        long mr;
        const char *kind = map(p, n, (locked ? MAP_LOCKED : 0) | (populate ? MAP_POPULATE : 0), prot, &mr);
        snprintf(args, sizeof args, "%s prot=%d page=%u n=%u%s%s", kind, prot, p, n,
                 locked ? " LOCKED" : "", populate ? " POPULATE" : "");
        what = "mmap";
        r = mr < 0 ? -1 : mr;
        break;
    }
    case 3:
        snprintf(args, sizeof args, "page=%u n=%u", p, n);
        what = "munmap";
        r = munmap(base + (size_t)p * PAGE, (size_t)n * PAGE);
        break;
    case 4: {
        int prot = prots[pick(5)];
        /* Under a data limit, where a range stops (at an area) depends on
         * how the kernel split and merged its areas: one page at a time
         * then, whose answer depends only on the totals. */
        if (data_limited)
            n = 1;
        snprintf(args, sizeof args, "prot=%d page=%u n=%u", prot, p, n);
        what = "mprotect";
        r = mprotect(base + (size_t)p * PAGE, (size_t)n * PAGE, prot);
        break;
    }
    case 5:
    case 6:
    case 7:
    case 8:
    case 9:
    case 10: {
        /* mlock (3 in 6), mlock2 with flags (1 in 6), munlock (2 in 6). */
        static const unsigned flags[] = {0, MLOCK_ONFAULT, MLOCK_ONFAULT, 2, 3, 0x80000000u};
        unsigned kind = pick(6), f = kind == 3 ? flags[pick(6)] : 0;
        char *a;
        size_t l;
        char t[64];
        lock_args(p, n, &a, &l, t, sizeof t);
        if (kind == 3) {
            snprintf(args, sizeof args, "%s flags=%#x", t, f);
            what = "mlock2";
            r = syscall(SYS_mlock2, a, l, f);
        } else {
            snprintf(args, sizeof args, "%s", t);
            what = kind < 3 ? "mlock" : "munlock";
            r = syscall(kind < 3 ? SYS_mlock : SYS_munlock, a, l);
        }
        break;
    }
    case 11: {
        static const unsigned flags[] = {MCL_FUTURE, MCL_FUTURE | MCL_ONFAULT, MCL_FUTURE,
                                         MCL_CURRENT, MCL_CURRENT | MCL_FUTURE, MCL_ONFAULT, 0, 8,
                                         MCL_CURRENT | MCL_ONFAULT};
        unsigned f = flags[pick(9)];
        snprintf(args, sizeof args, "flags=%#x", f);
        what = "mlockall";
        r = syscall(SYS_mlockall, f);
        if (r == 0 && (f & MCL_FUTURE)) {
            /* A new mapping is locked now (within the limit, else EAGAIN),
             * and so is a grown one; then everything is undone. */
            long mr;
            const char *kind = map(p, n, 0, prots[pick(5)], &mr);
            long l1 = vmlck();
            long ur = syscall(SYS_munlockall);
            snprintf(extra, sizeof extra, " then mmap %s n=%u = %s lck=%ld, munlockall = %s", kind, n,
                     res(mr), l1, res(ur));
        }
        break;
    }
    case 12:
        args[0] = 0;
        what = "munlockall";
        r = syscall(SYS_munlockall);
        break;
    case 13:
    case 14: {
        static const struct {
            int advice;
            const char *name;
        } advs[] = {{MADV_DONTNEED, "DONTNEED"}, {MADV_FREE, "FREE"},
                    {MADV_COLD, "COLD"},         {MADV_PAGEOUT, "PAGEOUT"},
                    {24, "DONTNEED_LOCKED"},     {MADV_WILLNEED, "WILLNEED"},
                    {22, "POPULATE_READ"},       {23, "POPULATE_WRITE"},
                    {MADV_REMOVE, "REMOVE"}};
        unsigned a = pick(9);
        snprintf(args, sizeof args, "%s page=%u n=%u", advs[a].name, p, n);
        what = "madvise";
        r = madvise(base + (size_t)p * PAGE, (size_t)n * PAGE, advs[a].advice);
        /* Freed lazily, up to where the walk stopped if it failed. */
        if (advs[a].advice == MADV_FREE)
            for (unsigned q = p; q < p + n; q++)
                fuzzy[q] = 1;
        /* A hole punched in a memory-only file reaches its other
         * mappings; contents are not compared after REMOVE. */
        if (advs[a].advice != MADV_REMOVE) {
            strcpy(extra, " contents");
            for (unsigned q = p; q < p + n; q++)
                probe(extra, sizeof extra, q);
        }
        break;
    }
    case 15: {
        /* Stores into the range (what DONTNEED would drop). */
        what = "write";
        snprintf(args, sizeof args, "page=%u n=%u", p, n);
        unsigned char v = (unsigned char)next();
        r = 0;
        for (unsigned q = p; q < p + n; q++) {
            fault_armed = 1;
            if (sigsetjmp(fault, 1) == 0) {
                memset(base + (size_t)q * PAGE, v + q, PAGE);
                fault_armed = 0;
                fuzzy[q] = 0;
                r++;
            } else {
                fault_armed = 0;
            }
        }
        break;
    }
    case 16: {
        /* A locked mapping of its own, outside the region, grown. */
        unsigned m = n + 1 + pick(8);
        int how = pick(3), maymove = pick(2);
        char *a = mmap(NULL, 32 * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (a == MAP_FAILED) {
            /* Past RLIMIT_AS. */
            snprintf(args, sizeof args, "n=%u reserve", n);
            what = "mremap";
            r = -1;
            break;
        }
        munmap(a + (size_t)n * PAGE, (32 - (size_t)n) * PAGE);
        mmap(a, (size_t)n * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        long lr = how == 0 ? syscall(SYS_mlock, a, (size_t)n * PAGE)
                  : how == 1 ? syscall(SYS_mlock2, a, (size_t)n * PAGE, MLOCK_ONFAULT)
                             : 0;
        if (maymove)
            mmap(a + (size_t)n * PAGE, PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        snprintf(args, sizeof args, "n=%u to %u %s%s lock=%s", n, m,
                 how == 0 ? "locked" : how == 1 ? "onfault" : "unlocked", maymove ? " MAYMOVE" : "",
                 res(lr));
        what = "mremap";
        char *g = mremap(a, (size_t)n * PAGE, (size_t)m * PAGE, maymove ? MREMAP_MAYMOVE : 0);
        r = g == MAP_FAILED ? -1 : g == a ? 0 : 1;
        long l1 = vmlck();
        snprintf(extra, sizeof extra, " grown-lck=%ld", l1);
        munmap(g == MAP_FAILED ? a : g, (size_t)m * PAGE);
        munmap(a, (size_t)(n + 1) * PAGE);
        break;
    }
    case 18:
    case 19: {
        /* The address-space or data limit, a few pages above what is
         * mapped now (so that the next calls meet it), or none. */
        int as = pick(2);
        struct rlimit rl;
        int res_ = as ? RLIMIT_AS : RLIMIT_DATA;
        getrlimit(res_, &rl);
        long now = status_kb(as ? "VmSize:" : "VmData:");
        unsigned v = pick(6);
        if (v == 0 || now < 0) {
            rl.rlim_cur = rl.rlim_max;
            snprintf(args, sizeof args, "none");
        } else if (v == 1 && !as) {
            rl.rlim_cur = 0;
            snprintf(args, sizeof args, "zero");
        } else {
            long more = pick(12);
            rl.rlim_cur = (rlim_t)now * 1024 + (rlim_t)more * PAGE;
            snprintf(args, sizeof args, "now+%ld pages", more);
        }
        what = as ? "setrlimit(AS)" : "setrlimit(DATA)";
        r = setrlimit(res_, &rl);
        if (!as && r == 0)
            data_limited = rl.rlim_cur != rl.rlim_max;
        break;
    }
    default: {
        static const long pages[] = {0, 2, 4, 8, 12, 16, 32};
        struct rlimit rl;
        getrlimit(RLIMIT_MEMLOCK, &rl);
        long want = pages[pick(7)];
        rl.rlim_cur = (rlim_t)want * PAGE;
        snprintf(args, sizeof args, "soft=%ld pages", want);
        what = "setrlimit(MEMLOCK)";
        r = setrlimit(RLIMIT_MEMLOCK, &rl);
        break;
    }
    }
    printf("%u %s %s = %s%s lck=%ld\n", idx, what, args, res(r), extra, vmlck());
}

/* A fresh region and files, nothing locked, a limit of 16 pages locked,
 * none on the address space and data. */
static void begin(void) {
    for (int k = 0; k < 2; k++) {
        struct rlimit l;
        int res_ = k ? RLIMIT_AS : RLIMIT_DATA;
        getrlimit(res_, &l);
        l.rlim_cur = l.rlim_max;
        setrlimit(res_, &l);
    }
    data_limited = 0;
    syscall(SYS_munlockall);
    if (base)
        munmap(base, NPAGES * PAGE);
    base = mmap(NULL, NPAGES * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mfd >= 0)
        close(mfd);
    mfd = (int)syscall(SYS_memfd_create, "mlockdiff", 0);
    if (ffd < 0) {
        int w = open("mlockdiff.data", O_RDWR | O_CREAT | O_TRUNC, 0644);
        static unsigned char page[PAGE];
        for (unsigned q = 0; q < NPAGES; q++) {
            memset(page, 'A' + q, sizeof page);
            if (write(w, page, PAGE) != PAGE)
                exit(2);
        }
        close(w);
        ffd = open("mlockdiff.data", O_RDONLY);
    }
    if (base == MAP_FAILED || mfd < 0 || ftruncate(mfd, NPAGES * PAGE) || ffd < 0) {
        perror("mlockdiff: set-up");
        exit(2);
    }
    memset(fuzzy, 0, sizeof fuzzy);
    struct rlimit rl;
    getrlimit(RLIMIT_MEMLOCK, &rl);
    rl.rlim_cur = 16 * PAGE;
    if (rl.rlim_max < rl.rlim_cur)
        rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_MEMLOCK, &rl);
}

int main(int argc, char **argv) {
    if (!drop_capabilities()) {
        fprintf(stderr, "mlockdiff: cannot drop capabilities (CAP_IPC_LOCK ignores the limit)\n");
        return 2;
    }
    struct sigaction sa = {.sa_handler = on_fault, .sa_flags = SA_NODEFER};
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
    return differ_main(argc, argv, "mlockdiff", begin, call);
}
