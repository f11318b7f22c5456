/* SIGFPE from an integer division by zero (and INT_MIN / -1), left with
 * siglongjmp; SIGILL from ud2, resumed past the instruction by the handler.
 * si_code and si_addr (the faulting instruction) are checked. Exits 0 on
 * success. */
#define _GNU_SOURCE
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <ucontext.h>

/* Functions whose faulting instruction has a known address. */
int divide(int a, int b);
void ud2_here(void);
extern char divide_insn[], ud2_insn[];
__asm__(".text\n"
        ".globl divide\n"
        ".type divide, @function\n"
        "divide:\n"
        "  movl %edi, %eax\n"
        "  cltd\n"
        ".globl divide_insn\n"
        "divide_insn:\n"
        "  idivl %esi\n"
        "  ret\n"
        ".size divide, .-divide\n"
        ".globl ud2_here\n"
        ".type ud2_here, @function\n"
        "ud2_here:\n"
        ".globl ud2_insn\n"
        "ud2_insn:\n"
        "  ud2\n"
        "  ret\n"
        ".size ud2_here, .-ud2_here\n");

static sigjmp_buf env;
static volatile int fpe_count, ill_count;
static volatile int last_code;
static void *volatile last_addr;

static void on_fpe(int sig, siginfo_t *si, void *uc) {
    (void)uc;
    fpe_count++;
    last_code = si->si_signo == sig ? si->si_code : -1;
    last_addr = si->si_addr;
    siglongjmp(env, 1);
}

static void on_ill(int sig, siginfo_t *si, void *uc_) {
    ucontext_t *uc = uc_;
    ill_count++;
    last_code = si->si_signo == sig ? si->si_code : -1;
    last_addr = si->si_addr;
    uc->uc_mcontext.gregs[REG_RIP] += 2; /* ud2 is 0f 0b */
}

static int failures;

static void expect(const char *what, int cond) {
    if (!cond) {
        fprintf(stderr, "%s: FAILED\n", what);
        failures++;
    }
}

static int try_divide(int a, int b, int *result) {
    if (sigsetjmp(env, 1) == 0) {
        *result = divide(a, b);
        return 0;
    }
    return 1;
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sa.sa_sigaction = on_fpe;
    if (sigaction(SIGFPE, &sa, NULL) != 0) {
        perror("sigaction SIGFPE");
        return 1;
    }
    sa.sa_sigaction = on_ill;
    if (sigaction(SIGILL, &sa, NULL) != 0) {
        perror("sigaction SIGILL");
        return 1;
    }

    int q = 0;
    int trapped = try_divide(84, 2, &q);
    printf("84/2: trapped=%d q=%d\n", trapped, q);
    expect("84/2", !trapped && q == 42);

    trapped = try_divide(7, 0, &q);
    printf("7/0: trapped=%d FPE_INTDIV=%d addr_exact=%d\n", trapped, last_code == FPE_INTDIV,
           last_addr == (void *)divide_insn);
    expect("7/0", trapped && last_code == FPE_INTDIV && last_addr == (void *)divide_insn);

    /* siglongjmp with savemask restored the mask: a second fault is caught. */
    sigset_t cur;
    sigprocmask(SIG_BLOCK, NULL, &cur);
    printf("SIGFPE blocked after siglongjmp: %d\n", sigismember(&cur, SIGFPE));
    expect("mask", !sigismember(&cur, SIGFPE));

    last_code = 0;
    trapped = try_divide(INT_MIN, -1, &q);
    printf("INT_MIN/-1: trapped=%d FPE_INTDIV=%d addr_exact=%d\n", trapped,
           last_code == FPE_INTDIV, last_addr == (void *)divide_insn);
    expect("INT_MIN/-1", trapped && last_code == FPE_INTDIV && last_addr == (void *)divide_insn);
    printf("fpe_count=%d\n", fpe_count);
    expect("fpe_count", fpe_count == 2);

    for (int i = 0; i < 3; i++) {
        last_code = 0;
        last_addr = 0;
        ud2_here();
        printf("ud2 #%d: ILL_ILLOPN=%d addr_exact=%d\n", i, last_code == ILL_ILLOPN,
               last_addr == (void *)ud2_insn);
        expect("ud2", last_code == ILL_ILLOPN && last_addr == (void *)ud2_insn);
    }
    printf("ill_count=%d\n", ill_count);
    expect("ill_count", ill_count == 3);

    if (failures) {
        fprintf(stderr, "sigfpe: %d FAILED\n", failures);
        return 1;
    }
    printf("sigfpe: ok\n");
    return 0;
}
