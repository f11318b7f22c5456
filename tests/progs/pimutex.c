/* Priority-inheritance futexes, as glibc's PTHREAD_PRIO_INHERIT mutexes
 * and as raw FUTEX_LOCK_PI/TRYLOCK_PI/UNLOCK_PI calls: contended counting,
 * trylock, a robust PI mutex whose owner dies, the hand-over to a waiter,
 * and Linux's errors. One line per check, no ids or timings; the host
 * kernel is the oracle. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define LOCK_PI 6
#define UNLOCK_PI 7
#define TRYLOCK_PI 8
#define LOCK_PI2 13
#define CLOCK_RT 256
#define WAITERS 0x80000000u
#define OWNER_DIED 0x40000000u

static const char *ename(int e) {
    switch (e) {
    case 0: return "0";
    case EPERM: return "EPERM";
    case ESRCH: return "ESRCH";
    case EAGAIN: return "EAGAIN";
    case EINVAL: return "EINVAL";
    case EDEADLK: return "EDEADLK";
    case ENOSYS: return "ENOSYS";
    case ETIMEDOUT: return "ETIMEDOUT";
    case EBUSY: return "EBUSY";
    case EOWNERDEAD: return "EOWNERDEAD";
    case EFAULT: return "EFAULT";
    default: {
        static char b[32];
        snprintf(b, sizeof b, "errno %d", e);
        return b;
    }
    }
}

static long fx(uint32_t *w, long op, const struct timespec *ts) {
    return syscall(SYS_futex, w, op, 0L, ts, NULL, 0L);
}

static void show(const char *what, long r) {
    if (r < 0)
        printf("%s: -1 %s\n", what, ename(errno));
    else
        printf("%s: %ld\n", what, r);
}

static pthread_mutex_t m;
static long counter;

static void *count(void *arg) {
    (void)arg;
    for (int i = 0; i < 20000; i++) {
        pthread_mutex_lock(&m);
        counter++;
        if (i % 1000 == 0)
            sched_yield();
        pthread_mutex_unlock(&m);
    }
    return NULL;
}

static void *try_other(void *arg) {
    int r = pthread_mutex_trylock(arg);
    printf("trylock of a mutex another thread holds: %s\n", ename(r));
    return NULL;
}

static void *die_holding(void *arg) {
    pthread_mutex_lock(arg);
    return NULL;
}

static uint32_t word;
static pid_t taker;
static char taken[128]; /* printed by main after the join: no race for stdout */
static void *take_word(void *arg) {
    (void)arg;
    taker = (pid_t)syscall(SYS_gettid);
    long r = fx(&word, LOCK_PI, NULL);
    snprintf(taken, sizeof taken,
             "waiter's LOCK_PI after the hand-over: %ld, word names it: %s, waiters bit: %s", r,
             (word & 0x3fffffff) == (uint32_t)taker ? "yes" : "no", word & WAITERS ? "set" : "clear");
    fx(&word, UNLOCK_PI, NULL);
    return NULL;
}

static void *timed(void *arg) {
    (void)arg;
    struct timespec past = {1, 0};
    show("LOCK_PI of a held word, deadline passed", fx(&word, LOCK_PI, &past));
    show("LOCK_PI2 of a held word, deadline passed", fx(&word, LOCK_PI2, &past));
    show("TRYLOCK_PI of a held word", fx(&word, TRYLOCK_PI, NULL));
    show("UNLOCK_PI of a word another thread owns", fx(&word, UNLOCK_PI, NULL));
    return NULL;
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    printf("setprotocol PRIO_INHERIT: %s\n",
           ename(pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT)));
    pthread_mutex_init(&m, &a);

    /* Contended counting through the kernel's hand-overs. */
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, count, NULL);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    printf("four threads counted to %ld\n", counter);

    pthread_mutex_lock(&m);
    pthread_t o;
    pthread_create(&o, NULL, try_other, &m);
    pthread_join(o, NULL);
    pthread_mutex_unlock(&m);

    /* An error-checking PI mutex locked twice. */
    pthread_mutex_t e;
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
    pthread_mutex_init(&e, &a);
    pthread_mutex_lock(&e);
    printf("relock of an error-checking PI mutex: %s\n", ename(pthread_mutex_lock(&e)));
    pthread_mutex_unlock(&e);

    /* A robust PI mutex whose owner exits holding it. */
    pthread_mutex_t r;
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_NORMAL);
    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(&r, &a);
    pthread_create(&o, NULL, die_holding, &r);
    pthread_join(o, NULL);
    printf("lock after the owner died: %s\n", ename(pthread_mutex_lock(&r)));
    printf("consistent: %s\n", ename(pthread_mutex_consistent(&r)));
    printf("unlock: %s\n", ename(pthread_mutex_unlock(&r)));
    printf("lock again: %s\n", ename(pthread_mutex_lock(&r)));
    pthread_mutex_unlock(&r);

    /* Raw calls. */
    pid_t me = (pid_t)syscall(SYS_gettid);
    word = 0;
    show("TRYLOCK_PI of a free word", fx(&word, TRYLOCK_PI, NULL));
    printf("  word names the caller: %s\n", word == (uint32_t)me ? "yes" : "no");
    show("LOCK_PI of a word the caller owns", fx(&word, LOCK_PI, NULL));
    show("TRYLOCK_PI of a word the caller owns", fx(&word, TRYLOCK_PI, NULL));
    pthread_create(&o, NULL, timed, NULL);
    pthread_join(o, NULL);
    show("UNLOCK_PI by the owner", fx(&word, UNLOCK_PI, NULL));
    printf("  word: %#x\n", word);
    show("UNLOCK_PI of a free word", fx(&word, UNLOCK_PI, NULL));
    word = 0x3ffffff0;
    show("LOCK_PI of a word naming no thread", fx(&word, LOCK_PI, NULL));
    word = OWNER_DIED;
    show("LOCK_PI of a free word its owner left dead", fx(&word, LOCK_PI, NULL));
    printf("  owner-died bit kept: %s\n", word & OWNER_DIED ? "yes" : "no");
    fx(&word, UNLOCK_PI, NULL);
    show("LOCK_PI with FUTEX_CLOCK_REALTIME", fx(&word, LOCK_PI | CLOCK_RT, NULL));
    show("LOCK_PI misaligned", fx((uint32_t *)((char *)&word + 1), LOCK_PI, NULL));
    show("LOCK_PI of no memory", fx((uint32_t *)16, LOCK_PI, NULL));
    struct timespec bad = {0, 2000000000L};
    word = 0x3ffffff0;
    show("LOCK_PI bad timespec", fx(&word, LOCK_PI, &bad));

    /* The hand-over: a waiter blocked in LOCK_PI gets the word from the
     * owner's UNLOCK_PI. */
    word = 0;
    fx(&word, LOCK_PI, NULL);
    pthread_create(&o, NULL, take_word, NULL);
    while (!(word & WAITERS))
        usleep(1000);
    printf("waiters bit once another thread waits: set\n");
    show("UNLOCK_PI with a waiter", fx(&word, UNLOCK_PI, NULL));
    pthread_join(o, NULL);
    printf("%s\n", taken);
    printf("word at the end: %#x\n", word);
    return 0;
}
