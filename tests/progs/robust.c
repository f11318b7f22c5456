/* Robust futexes: what a thread that dies holding them leaves behind.
 *
 *  - glibc's robust mutexes: a thread exits holding one; the next lock
 *    answers EOWNERDEAD, a waiter already blocked is woken with it,
 *    pthread_mutex_consistent makes the mutex usable again, and one
 *    unlocked without it becomes ENOTRECOVERABLE;
 *  - a hand-made robust list (set_robust_list): words the dying thread
 *    owns get FUTEX_OWNER_DIED (WAITERS kept) and wake one waiter, a word
 *    owned by another tid is left alone, a pending unlock (word 0) still
 *    wakes, a PI entry is marked but wakes nobody;
 *  - set_robust_list with a wrong length (EINVAL), get_robust_list of the
 *    caller, of another thread, and of no thread (ESRCH).
 *
 * Prints one line per case, the same on every run; exits 0. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "errname.h"

/* <linux/futex.h>'s, which musl's headers lack. */
#define FUTEX_WAIT 0
#define FUTEX_WAITERS 0x80000000u
#define FUTEX_OWNER_DIED 0x40000000u
#define FUTEX_TID_MASK 0x3fffffffu

static pthread_mutex_t m;
static pthread_mutex_t m2;

static void *die_holding(void *arg) {
    pthread_mutex_lock(arg);
    return NULL;
}

static void sleep_ms(long ms);
static volatile int owner_has;

/* Locks m2 and exits holding it, once a waiter has (most likely) begun to
 * wait; the waiter's result does not depend on it. */
static void *hold_then_die(void *arg) {
    (void)arg;
    pthread_mutex_lock(&m2);
    owner_has = 1;
    sleep_ms(50);
    return NULL;
}

static void *lock_after_owner(void *arg) {
    (void)arg;
    int r = pthread_mutex_lock(&m2);
    static char res[64];
    snprintf(res, sizeof res, "%s", r ? errname(r) : "0");
    if (r == EOWNERDEAD) {
        pthread_mutex_consistent(&m2);
        pthread_mutex_unlock(&m2);
    }
    return res;
}

static void init_robust(pthread_mutex_t *mx) {
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(mx, &a);
    pthread_mutexattr_destroy(&a);
}

static void sleep_ms(long ms) {
    struct timespec t = {0, ms * 1000000};
    nanosleep(&t, NULL);
}

static void mutexes(void) {
    init_robust(&m);
    pthread_t t;
    pthread_create(&t, NULL, die_holding, &m);
    pthread_join(t, NULL);
    int r1 = pthread_mutex_lock(&m);
    int c = pthread_mutex_consistent(&m);
    int u = pthread_mutex_unlock(&m);
    int r2 = pthread_mutex_lock(&m);
    pthread_mutex_unlock(&m);
    printf("dead owner: lock %s consistent %d unlock %d lock again %d\n", errname(r1), c, u, r2);

    /* Not made consistent: unlocking leaves it unrecoverable. */
    pthread_create(&t, NULL, die_holding, &m);
    pthread_join(t, NULL);
    r1 = pthread_mutex_lock(&m);
    u = pthread_mutex_unlock(&m);
    r2 = pthread_mutex_lock(&m);
    printf("not consistent: lock %s unlock %d lock again %s\n", errname(r1), u, errname(r2));

    /* A waiter blocked on a mutex whose owner then dies. */
    init_robust(&m2);
    pthread_t owner, waiter;
    pthread_create(&owner, NULL, hold_then_die, NULL);
    while (!owner_has)
        sleep_ms(1);
    pthread_create(&waiter, NULL, lock_after_owner, NULL);
    pthread_join(owner, NULL);
    void *res;
    pthread_join(waiter, &res);
    printf("waiter after the owner died: %s\n", (char *)res);
}

/* The hand-made list: a head and four entries, each a list link with the
 * futex word 8 bytes after it. */
struct entry {
    struct entry *next;
    uint32_t word;
};

static struct {
    struct entry *next;
    long offset;
    struct entry *pending;
} head;

static struct entry e[5];
static volatile int dier_tid;
static volatile int dier_ready;

static void *dier(void *arg) {
    (void)arg;
    int tid = (int)syscall(SYS_gettid);
    /* e[0]: owned, with waiters; e[1]: owned; e[2]: someone else's;
     * e[3] (PI link): owned, with waiters; e[4]: pending, unlocked. */
    e[0].word = (uint32_t)tid | FUTEX_WAITERS;
    e[1].word = (uint32_t)tid;
    e[2].word = (uint32_t)(tid + 1);
    e[3].word = (uint32_t)tid | FUTEX_WAITERS;
    e[4].word = 0;
    e[0].next = &e[1];
    e[1].next = &e[2];
    e[2].next = (struct entry *)((uintptr_t)&e[3] | 1);
    e[3].next = (struct entry *)&head;
    head.next = &e[0];
    head.offset = (long)offsetof(struct entry, word);
    head.pending = &e[4];
    syscall(SYS_set_robust_list, &head, sizeof head);
    dier_tid = tid;
    dier_ready = 1;
    /* Wait for the waiters to be (most likely) blocked; the result does
     * not depend on it. */
    sleep_ms(50);
    /* The libc's own robust list is no longer the kernel's: the exit's
     * walk is of the list above. */
    return NULL;
}

/* Waits while the word still holds what the dying thread left, then says
 * what it became. */
static void *word_waiter(void *arg) {
    volatile uint32_t *w = arg;
    uint32_t v;
    while (!dier_ready)
        sleep_ms(1);
    while ((v = *w) == 0 || (v & FUTEX_TID_MASK) == (uint32_t)dier_tid)
        syscall(SYS_futex, w, FUTEX_WAIT, v, NULL, NULL, 0);
    return NULL;
}

static void *pending_waiter(void *arg) {
    volatile uint32_t *w = arg;
    while (!dier_ready)
        sleep_ms(1);
    /* Woken by the exit's wake of the pending word (it stays 0). */
    long r = syscall(SYS_futex, w, FUTEX_WAIT, 0, NULL, NULL, 0);
    static char res[32];
    snprintf(res, sizeof res, "%s", r == 0 ? "woken" : errname(errno));
    return res;
}

static void hand_made(void) {
    pthread_t d, w0, w4;
    pthread_create(&w0, NULL, word_waiter, &e[0].word);
    pthread_create(&w4, NULL, pending_waiter, &e[4].word);
    pthread_create(&d, NULL, dier, NULL);
    pthread_join(d, NULL);
    pthread_join(w0, NULL);
    void *r4;
    pthread_join(w4, &r4);
    uint32_t t = (uint32_t)dier_tid;
    printf("hand-made list:");
    for (int i = 0; i < 5; i++) {
        uint32_t v = e[i].word;
        printf(" [%d] %s%s%s", i, (v & FUTEX_TID_MASK) == t ? "tid" : (v & FUTEX_TID_MASK) ? "other" : "0",
               v & FUTEX_WAITERS ? "+waiters" : "", v & FUTEX_OWNER_DIED ? "+died" : "");
    }
    printf("; pending waiter %s\n", (char *)r4);
}

static void *sleeper(void *arg) {
    (void)arg;
    sleep_ms(100);
    return NULL;
}

static void calls(void) {
    long r = syscall(SYS_set_robust_list, &head, sizeof head + 1);
    printf("set_robust_list(len + 1) = %s\n", r == 0 ? "0" : errname(errno));
    /* An empty list of our own (the libcs differ in when they set
     * theirs). */
    static void *mine[3];
    mine[0] = mine;
    syscall(SYS_set_robust_list, mine, sizeof mine);
    void *h = NULL;
    size_t len = 0;
    r = syscall(SYS_get_robust_list, 0, &h, &len);
    printf("get_robust_list(0) = %ld, ours %d, len %zu\n", r, h == (void *)mine, len);
    pthread_t t;
    pthread_create(&t, NULL, sleeper, NULL);
    sleep_ms(20);
    h = NULL;
    r = syscall(SYS_get_robust_list, (int)syscall(SYS_gettid), &h, &len);
    printf("get_robust_list(own tid) = %ld, ours %d\n", r, h == (void *)mine);
    r = syscall(SYS_get_robust_list, 999999, &h, &len);
    printf("get_robust_list(no thread) = %s\n", r == 0 ? "0" : errname(errno));
    r = syscall(SYS_get_robust_list, 0, (void *)8, &len);
    printf("get_robust_list(bad head_ptr) = %s\n", r == 0 ? "0" : errname(errno));
    pthread_join(t, NULL);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    mutexes();
    hand_made();
    calls();
    return 0;
}
