/* The direct path's rare cases, through the test-only direct call that
 * `ASTRAEA_DIRECT_SELFTEST=1 astraea run --syscall-entry direct` serves:
 * a write to a library-OS page the host has not mapped for user mode
 * (the call goes on in supervisor mode and returns by sysretq), interrupts
 * held while the library OS keeps them off in a direct call, and taken
 * while they are on. The stub-like sequence below is what a rewritten
 * site's stub does. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static uint64_t entry;

static long direct(long nr, long a0, long a1) {
    long ret;
    register long r12 __asm__("r12") = (long)entry;
    __asm__ volatile("lea 2f(%%rip), %%r11\n"
                     "jmp *%%r12\n"
                     "1: syscall\n"
                     "2:\n"
                     : "=a"(ret)
                     : "a"(nr), "D"(a0), "S"(a1), "r"(r12)
                     : "rcx", "r11", "memory", "cc");
    return ret;
}

/* Sleeps 1 ms at a time until told to stop: a timer is always armed, so
 * ticks come while the main thread spins. */
static volatile int stop;
static void *sleeper(void *arg) {
    (void)arg;
    struct timespec ms = {0, 1000000};
    while (!stop)
        nanosleep(&ms, NULL);
    return NULL;
}

int main(void) {
    /* The [vdso] page's last word: where stubs find the direct entry. */
    entry = *(volatile uint64_t *)0x7ffff8000ff8ull;
    if (entry == 0) {
        printf("no direct entry\n");
        return 1;
    }
    long up1 = direct(0x7a5a, 1, 0x1234567890abcdefll);
    long up2 = direct(0x7a5a, 1, 42);
    printf("write to a fresh library-OS page: upgraded %d, again %d\n", up1 >= 1, up2 >= up1);
    /* 150 M TSC ticks (30-150 ms at 1-5 GHz): several ticks of the
     * sleeper's timer. */
    pthread_t t;
    pthread_create(&t, NULL, sleeper, NULL);
    long off = direct(0x7a5a, 2, 150000000);
    printf("interrupts off: were on %ld, taken meanwhile %ld\n", off >> 32, off & 0xffffffff);
    long on = direct(0x7a5a, 3, 150000000);
    printf("interrupts on: taken meanwhile %d\n", on > 0);
    stop = 1;
    pthread_join(t, NULL);
    printf("getpid after: %d\n", getpid() == direct(39, 0, 0));
    return 0;
}
