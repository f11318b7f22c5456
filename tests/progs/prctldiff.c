/* Differential exerciser for prctl(2): the same random sequence of calls
 * on the host (without capabilities, as a partition's program) and in a
 * partition must print the same lines.
 *
 *   prctldiff run SEED NSEEDS COUNT   seeds SEED..SEED+NSEEDS-1, COUNT calls
 *
 * The options a program sets and reads back — the thread's name, dumpable,
 * the parent-death signal, keep-capabilities, timer slack, child
 * subreaper, no-new-privileges, THP disable, the capability bounding set,
 * seccomp's mode, names of anonymous memory — with valid and invalid
 * values, unused arguments that must be 0 and bad pointers, and options
 * that do not exist. The attributes carry over from one sequence to the
 * next on both sides alike. Each line is "INDEX CALL ARGS = RESULT". */
#define _GNU_SOURCE
#include <sys/prctl.h>
#include <sys/syscall.h>

#define SLOTS 1
#include "differ.h"

#ifndef PR_SET_VMA
#define PR_SET_VMA 0x53564d41
#define PR_SET_VMA_ANON_NAME 0
#endif

static unsigned char *region;

static long pr(long op, unsigned long a2, unsigned long a3, unsigned long a4, unsigned long a5) {
    return syscall(SYS_prctl, op, a2, a3, a4, a5);
}

/* An unused argument: mostly 0, sometimes not. */
static unsigned long junk(void) { return pick(6) == 0 ? 1 + pick(3) : 0; }

static void call(unsigned idx) {
    long r;
    unsigned long a = 0, b = junk(), c = junk(), d = junk();
    int out = -77;
    const char *what = "?";
    switch (pick(24)) {
    case 0:
    case 1: {
        static const char *names[] = {"", "a", "worker-1", "exactly15chars!", "sixteen-chars-16",
                                      "a-much-longer-thread-name"};
        const char *n = names[pick(6)];
        r = pr(PR_SET_NAME, (unsigned long)n, 0, 0, 0);
        printf("%u set_name \"%s\" = %s\n", idx, n, res(r));
        return;
    }
    case 2: {
        char n[32];
        memset(n, 'x', sizeof n);
        r = pr(PR_GET_NAME, pick(8) ? (unsigned long)n : 8, 0, 0, 0);
        printf("%u get_name = %s \"%.16s\"\n", idx, res(r), r == 0 ? n : "");
        return;
    }
    case 3:
        a = pick(5);
        what = "set_dumpable";
        r = pr(PR_SET_DUMPABLE, a, b, c, d);
        break;
    case 4:
        r = pr(PR_GET_DUMPABLE, b, c, d, 0);
        printf("%u get_dumpable %lu %lu %lu = %s\n", idx, b, c, d, res(r));
        return;
    case 5: {
        static const long sigs[] = {0, 9, 15, 64, 65, -1};
        a = (unsigned long)sigs[pick(6)];
        what = "set_pdeathsig";
        r = pr(PR_SET_PDEATHSIG, a, b, c, d);
        break;
    }
    case 6:
        r = pr(PR_GET_PDEATHSIG, pick(6) ? (unsigned long)&out : 8, 0, 0, 0);
        printf("%u get_pdeathsig = %s %d\n", idx, res(r), out);
        return;
    case 7:
        a = pick(3);
        what = "set_keepcaps";
        r = pr(PR_SET_KEEPCAPS, a, b, c, d);
        break;
    case 8:
        r = pr(PR_GET_KEEPCAPS, b, c, d, 0);
        printf("%u get_keepcaps %lu %lu %lu = %s\n", idx, b, c, d, res(r));
        return;
    case 9: {
        static const unsigned long s[] = {0, 1, 50000, 1000000};
        a = s[pick(4)];
        what = "set_timerslack";
        r = pr(PR_SET_TIMERSLACK, a, b, c, d);
        break;
    }
    case 10:
        r = pr(PR_GET_TIMERSLACK, b, c, d, 0);
        printf("%u get_timerslack %lu %lu %lu = %s\n", idx, b, c, d, res(r));
        return;
    case 11:
        a = pick(3) == 2 ? 5 : pick(2);
        what = "set_child_subreaper";
        r = pr(PR_SET_CHILD_SUBREAPER, a, b, c, d);
        break;
    case 12:
        r = pr(PR_GET_CHILD_SUBREAPER, pick(6) ? (unsigned long)&out : 8, 0, 0, 0);
        printf("%u get_child_subreaper = %s %d\n", idx, res(r), out);
        return;
    case 13:
        /* Only ever to 1 (it cannot be undone; both sides alike). */
        a = pick(3) ? 1 : pick(2) * 2;
        what = "set_no_new_privs";
        r = pr(PR_SET_NO_NEW_PRIVS, a, b, c, d);
        break;
    case 14:
        r = pr(PR_GET_NO_NEW_PRIVS, b, c, d, 0);
        printf("%u get_no_new_privs %lu %lu %lu = %s\n", idx, b, c, d, res(r));
        return;
    case 15:
        a = pick(3);
        what = "set_thp_disable";
        r = pr(PR_SET_THP_DISABLE, a, b, c, d);
        break;
    case 16:
        r = pr(PR_GET_THP_DISABLE, b, c, d, 0);
        printf("%u get_thp_disable %lu %lu %lu = %s\n", idx, b, c, d, res(r));
        return;
    case 17: {
        static const long caps[] = {0, 21, 40, 41, 63, -1};
        a = (unsigned long)caps[pick(6)];
        r = pr(PR_CAPBSET_READ, a, 0, 0, 0);
        printf("%u capbset_read %ld = %s\n", idx, (long)a, res(r));
        return;
    }
    case 18:
        r = pr(PR_GET_SECCOMP, 0, 0, 0, 0);
        printf("%u get_seccomp = %s\n", idx, res(r));
        return;
    case 19:
    case 20: {
        static const char *names[] = {"heap", "", "with space", "bad[name]", "a$b",
                                      "x123456789012345678901234567890123456789012345678901234567890123456789012345678"};
        unsigned k = pick(7);
        const char *n = k < 6 ? names[k] : NULL;
        unsigned long len = pick(4) == 0 ? 4096 * (1 + pick(3)) : 8192;
        unsigned long at = (unsigned long)region + (pick(5) == 0 ? 4096 * 9 : pick(4) == 0 ? 1 : 0);
        r = pr(PR_SET_VMA, PR_SET_VMA_ANON_NAME, at, len, (unsigned long)n);
        printf("%u set_vma_anon_name +%lu len %lu \"%s\" = %s\n", idx, at - (unsigned long)region,
               len, n ? n : "(null)", res(r));
        return;
    }
    case 21:
        r = pr(PR_SET_VMA, 7, (unsigned long)region, 4096, 0);
        printf("%u set_vma 7 = %s\n", idx, res(r));
        return;
    default: {
        static const long ops[] = {0, 100, 1000, 0x41555856 + 1};
        a = (unsigned long)ops[pick(4)];
        r = pr((long)a, 0, 0, 0, 0);
        printf("%u prctl %ld = %s\n", idx, (long)a, res(r));
        return;
    }
    }
    printf("%u %s %ld %lu %lu %lu = %s\n", idx, what, (long)a, b, c, d, res(r));
}

static void begin(void) {}

int main(int argc, char **argv) {
    /* Ten pages, the last one unmapped. */
    region = mmap(NULL, 4096 * 10, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (region == MAP_FAILED || munmap(region + 4096 * 9, 4096)) {
        perror("prctldiff: mmap");
        return 2;
    }
    /* A partition's program has no capabilities: neither has this one. */
    drop_capabilities();
    return differ_main(argc, argv, "prctldiff", begin, call);
}
