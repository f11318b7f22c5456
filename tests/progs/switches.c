/* Threads that leave the CPU inside system calls and come back, compared
 * with the host line by line. In a partition with direct entry these waits
 * and yields switch threads inside direct calls (sched::leave_direct):
 *  - futex ping-pong between two threads, 20000 rounds: each thread checks
 *    its thread-local id (the FS base), a vector register and the shared
 *    turn word after every wait;
 *  - four threads calling sched_yield 20000 times each, same checks;
 *  - timed waits: FUTEX_WAIT with 1 ms relative, FUTEX_WAIT_BITSET with an
 *    absolute deadline already past and one 2 ms ahead: ETIMEDOUT, and the
 *    time waited at least the limit;
 *  - 300 signals (no SA_RESTART) sent to a thread waiting on a futex that
 *    nobody wakes: every handler runs, and the wait fails with EINTR;
 *    then it is woken for real.
 * Usage: switches */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* From <linux/futex.h>, which musl's headers lack. */
#define FUTEX_WAIT_PRIVATE 128
#define FUTEX_WAKE_PRIVATE 129
#define FUTEX_WAIT_BITSET_PRIVATE 137
#define FUTEX_BITSET_MATCH_ANY 0xffffffff

static __thread long my_id = -1;
static int failures;

static long futex(atomic_int *w, int op, int val, const struct timespec *ts, int bits) {
    return syscall(SYS_futex, w, op, val, ts, NULL, bits);
}

static const char *err_name(long r) {
    if (r != -1)
        return "";
    switch (errno) {
    case ETIMEDOUT: return "ETIMEDOUT";
    case EAGAIN: return "EAGAIN";
    case EINTR: return "EINTR";
    case EINVAL: return "EINVAL";
    default: return "other";
    }
}

static void fail(const char *what, long id) {
    printf("FAIL: %s (thread %ld)\n", what, id);
    __atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED);
}

/* A value in xmm7 that must survive the call (the switch saves and
 * restores each thread's vector registers). */
static inline void set_xmm(uint64_t v) { __asm__ volatile("movq %0, %%xmm7" ::"r"(v) : "xmm7"); }
static inline uint64_t get_xmm(void) {
    uint64_t v;
    __asm__ volatile("movq %%xmm7, %0" : "=r"(v));
    return v;
}

static atomic_int turn;
enum { ROUNDS = 20000 };

static void *pingpong(void *arg) {
    long id = (long)arg;
    my_id = id;
    for (int i = 0; i < ROUNDS; i++) {
        while (atomic_load(&turn) != id) {
            set_xmm(0x1234000000000000ull + (uint64_t)id * 77 + (uint64_t)i);
            futex(&turn, FUTEX_WAIT_PRIVATE, 1 - (int)id, NULL, 0);
            if (get_xmm() != 0x1234000000000000ull + (uint64_t)id * 77 + (uint64_t)i)
                fail("xmm7 changed across a futex wait", id);
            if (my_id != id)
                fail("thread pointer changed across a futex wait", id);
        }
        atomic_store(&turn, 1 - (int)id);
        futex(&turn, FUTEX_WAKE_PRIVATE, 1, NULL, 0);
    }
    return NULL;
}

static atomic_long yields_done;
static void *yielder(void *arg) {
    long id = (long)arg;
    my_id = id;
    for (int i = 0; i < ROUNDS; i++) {
        set_xmm(0xabcd000000000000ull + (uint64_t)id * 131 + (uint64_t)i);
        if (sched_yield() != 0)
            fail("sched_yield failed", id);
        if (get_xmm() != 0xabcd000000000000ull + (uint64_t)id * 131 + (uint64_t)i)
            fail("xmm7 changed across sched_yield", id);
        if (my_id != id)
            fail("thread pointer changed across sched_yield", id);
    }
    atomic_fetch_add(&yields_done, ROUNDS);
    return NULL;
}

static uint64_t now_ns(clockid_t c) {
    struct timespec t;
    clock_gettime(c, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void timed(void) {
    atomic_int w = 5;
    int ok = 0;
    for (int i = 0; i < 50; i++) {
        struct timespec rel = {0, 1000000};
        uint64_t t0 = now_ns(CLOCK_MONOTONIC);
        long r = futex(&w, FUTEX_WAIT_PRIVATE, 5, &rel, 0);
        uint64_t dt = now_ns(CLOCK_MONOTONIC) - t0;
        if (r == -1 && errno == ETIMEDOUT && dt >= 1000000)
            ok++;
    }
    printf("relative 1 ms waits: %d of 50 timed out after at least 1 ms\n", ok);
    /* 1 ms ago (a partition's monotonic clock starts at its boot, so a
     * whole second back may be before 0, which is EINVAL). */
    struct timespec past;
    clock_gettime(CLOCK_MONOTONIC, &past);
    if (past.tv_nsec >= 1000000) {
        past.tv_nsec -= 1000000;
    } else {
        past.tv_sec--;
        past.tv_nsec += 1000000000 - 1000000;
    }
    long r = futex(&w, FUTEX_WAIT_BITSET_PRIVATE, 5, &past, FUTEX_BITSET_MATCH_ANY);
    printf("absolute deadline in the past: %ld %s\n", r, err_name(r));
    struct timespec ahead;
    clock_gettime(CLOCK_MONOTONIC, &ahead);
    uint64_t t0 = now_ns(CLOCK_MONOTONIC);
    ahead.tv_nsec += 2000000;
    if (ahead.tv_nsec >= 1000000000) {
        ahead.tv_sec++;
        ahead.tv_nsec -= 1000000000;
    }
    r = futex(&w, FUTEX_WAIT_BITSET_PRIVATE, 5, &ahead, FUTEX_BITSET_MATCH_ANY);
    uint64_t dt = now_ns(CLOCK_MONOTONIC) - t0;
    printf("absolute deadline 2 ms ahead: %ld %s, waited at least 2 ms: %s\n", r,
           err_name(r), dt >= 2000000 ? "yes" : "no");
    r = futex(&w, FUTEX_WAIT_PRIVATE, 6, NULL, 0);
    printf("value already changed: %ld %s\n", r, err_name(r));
}

static atomic_int handled, eintrs, stop_word;
static void on_usr1(int sig) {
    (void)sig;
    atomic_fetch_add(&handled, 1);
}

static void *sleeper(void *arg) {
    (void)arg;
    my_id = 99;
    while (atomic_load(&stop_word) == 0) {
        long r = futex(&stop_word, FUTEX_WAIT_PRIVATE, 0, NULL, 0);
        if (r == -1 && errno == EINTR)
            atomic_fetch_add(&eintrs, 1);
        if (my_id != 99)
            fail("thread pointer changed across an interrupted wait", 99);
    }
    return NULL;
}

static void signals(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    pthread_t t;
    pthread_create(&t, NULL, sleeper, NULL);
    enum { SIGNALS = 300 };
    for (int i = 0; i < SIGNALS; i++) {
        /* Wait until the thread is (very likely) back in its wait. */
        for (int k = 0; k < 20; k++)
            sched_yield();
        pthread_kill(t, SIGUSR1);
        while (atomic_load(&handled) <= i)
            sched_yield();
    }
    atomic_store(&stop_word, 1);
    futex(&stop_word, FUTEX_WAKE_PRIVATE, 1, NULL, 0);
    pthread_join(t, NULL);
    printf("signals to a waiting thread: sent %d, handled %d, waits interrupted: %s\n", SIGNALS,
           atomic_load(&handled), atomic_load(&eintrs) > 0 ? "yes" : "no");
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    my_id = 1000;
    pthread_t a, b;
    pthread_create(&a, NULL, pingpong, (void *)0);
    pthread_create(&b, NULL, pingpong, (void *)1);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("futex ping-pong: %d rounds, turn %d\n", ROUNDS, atomic_load(&turn));

    pthread_t y[4];
    for (long i = 0; i < 4; i++)
        pthread_create(&y[i], NULL, yielder, (void *)(i + 10));
    for (int i = 0; i < 4; i++)
        pthread_join(y[i], NULL);
    printf("sched_yield: %ld yields by 4 threads\n", atomic_load(&yields_done));

    timed();
    signals();
    if (my_id != 1000)
        fail("main thread pointer changed", 1000);
    printf("failures: %d\n", failures);
    return failures != 0;
}
