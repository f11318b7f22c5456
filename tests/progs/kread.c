/* Tries to read and write the library OS's memory (its kernel image in the
 * upper half, where the direct map starts) from the program. On standard
 * KVM (VT-x/SVM) the pages are supervisor-only: both accesses fault with
 * SIGSEGV, as a Linux process's would on the kernel's. (On PVM hosts the
 * library OS and its program share one protection domain; see
 * docs/pvm.md.) */
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static sigjmp_buf env;
static volatile void *fault_addr;

static void on_segv(int sig, siginfo_t *si, void *uc) {
    (void)sig;
    (void)uc;
    fault_addr = si->si_addr;
    siglongjmp(env, 1);
}

int main(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigaction(SIGSEGV, &sa, NULL);
    volatile uint64_t *kernel = (volatile uint64_t *)(0xffff808000000000ull + 0x200000ull);
    if (sigsetjmp(env, 1) == 0) {
        uint64_t v = *kernel;
        printf("read of library-OS memory succeeded (%#llx)\n", (unsigned long long)v);
    } else {
        printf("read of library-OS memory: SIGSEGV\n");
    }
    if (sigsetjmp(env, 1) == 0) {
        *kernel = 0;
        printf("write to library-OS memory succeeded\n");
    } else {
        printf("write to library-OS memory: SIGSEGV\n");
    }
    return 0;
}
