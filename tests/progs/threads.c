/* 16 pthreads: a mutex-protected counter, a condition-variable handoff in a
 * fixed order, a barrier, thread-local storage and join values, and the
 * thread count in /proc/self/status while all of them are alive. Prints
 * totals that are the same on every run; exits 0 on success. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#ifndef FUTEX_WAIT
#define FUTEX_WAIT 0
#endif
#include <sys/syscall.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include "errname.h"

#define NTHREADS 16
#define ITERS 100000

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t turn_cv = PTHREAD_COND_INITIALIZER;
static pthread_barrier_t barrier;
static long counter;
static int turn = -1; /* the handoff starts once the threads are counted */
static int proc_threads;
static int order[NTHREADS];
static int norder;
static int seen_after_barrier[NTHREADS];
static int serial_threads;
static __thread long tls_value = 7;

/* The Threads: line of /proc/self/status, or -1. */
static int threads_in_status(void) {
    char buf[4096];
    int fd = open("/proc/self/status", O_RDONLY);
    if (fd < 0)
        return -1;
    int n = 0, r;
    while (n < (int)sizeof buf - 1 && (r = read(fd, buf + n, sizeof buf - 1 - n)) > 0)
        n += r;
    close(fd);
    buf[n] = 0;
    char *p = strstr(buf, "\nThreads:");
    return p ? atoi(p + 9) : -1;
}

static void *worker(void *arg) {
    int id = (int)(long)arg;

    /* Phase 1: the mutex-protected counter, with a thread-local one beside it. */
    for (int i = 0; i < ITERS; i++) {
        pthread_mutex_lock(&lock);
        counter++;
        pthread_mutex_unlock(&lock);
        tls_value++;
    }

    /* Phase 2: every thread waits at the barrier, after which all of phase
     * 1 is visible to each of them. */
    int r = pthread_barrier_wait(&barrier);
    if (r == PTHREAD_BARRIER_SERIAL_THREAD) {
        /* No thread can have ended yet: they all wait for turn 0. */
        int n = threads_in_status();
        pthread_mutex_lock(&lock);
        serial_threads++;
        proc_threads = n;
        turn = 0;
        pthread_cond_broadcast(&turn_cv);
        pthread_mutex_unlock(&lock);
    } else if (r != 0) {
        fprintf(stderr, "barrier_wait: %s\n", strerror(r));
        exit(1);
    }
    pthread_mutex_lock(&lock);
    seen_after_barrier[id] = counter == (long)NTHREADS * ITERS;
    pthread_mutex_unlock(&lock);

    /* Phase 3: a handoff through the condition variable in id order,
     * whatever order the threads were scheduled in. */
    pthread_mutex_lock(&lock);
    while (turn != id)
        pthread_cond_wait(&turn_cv, &lock);
    order[norder++] = id;
    turn++;
    pthread_cond_broadcast(&turn_cv);
    pthread_mutex_unlock(&lock);

    return (void *)(tls_value * 100 + id);
}

/* clone(2) with the tid words: CLONE_PARENT_SETTID and CLONE_CHILD_SETTID
 * are written before the child runs, CLONE_CHILD_CLEARTID is cleared (and
 * woken) when it exits. The child uses no libc (it shares the parent's
 * TLS). */
static volatile pid_t ptid_word = -1, ctid_word = -1, child_saw_ctid = -2, child_tid = -3;

static int clone_child(void *arg) {
    (void)arg;
    long tid;
    __asm__ volatile("syscall" : "=a"(tid) : "a"((long)SYS_gettid) : "rcx", "r11", "memory");
    child_tid = (pid_t)tid;
    child_saw_ctid = ctid_word;
    return 0;
}

/* After a clone of clone_child with the three tid flags: the words the
 * kernel wrote, waiting for it to clear the child's at its exit. */
static int check_tids(const char *what, long tid) {
    int parent_ok = ptid_word == tid;
    for (;;) {
        pid_t v = ctid_word;
        if (v == 0)
            break;
        syscall(SYS_futex, &ctid_word, FUTEX_WAIT, v, NULL, NULL, 0);
    }
    int ok = parent_ok && child_tid == tid && child_saw_ctid == tid && ctid_word == 0;
    printf("%s tids: parent_settid=%d child_settid=%d cleared=%d\n", what, parent_ok,
           child_saw_ctid == tid, ctid_word == 0);
    return ok;
}

static int clone_tids(void) {
    size_t size = 64 * 1024;
    char *stack = malloc(size);
    if (stack == NULL)
        return 0;
    int flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
                CLONE_SYSVSEM | CLONE_PARENT_SETTID | CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID;
    int tid = clone(clone_child, stack + size, flags, NULL, (pid_t *)&ptid_word, NULL,
                    (pid_t *)&ctid_word);
    int ok = tid > 0 && check_tids("clone", tid);
    free(stack);
    return ok;
}

/* clone3 (glibc's pthread_create uses it; this is for every libc): the
 * same words as above, the stack given as an area, the child started by
 * hand since no libc wraps clone3. */
#ifndef SYS_clone3
#define SYS_clone3 435
#endif
struct clone_args_v2 {
    uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid,
        set_tid_size, cgroup;
};

static long raw_clone3(struct clone_args_v2 *a, size_t size, int (*fn)(void *)) {
    long ret;
    register int (*r12)(void *) __asm__("r12") = fn;
    /* The child returns from the call on its new stack with the parent's
     * other registers: it calls fn (kept in a callee-saved register) and
     * exits its thread. */
    __asm__ volatile("syscall\n\t"
                     "test %%rax, %%rax\n\t"
                     "jnz 1f\n\t"
                     "xor %%ebp, %%ebp\n\t"
                     "xor %%edi, %%edi\n\t"
                     "call *%%r12\n\t"
                     "mov %%eax, %%edi\n\t"
                     "mov $60, %%eax\n\t"
                     "syscall\n\t"
                     "1:\n\t"
                     : "=a"(ret)
                     : "a"((long)SYS_clone3), "D"(a), "S"(size), "r"(r12)
                     : "rcx", "r11", "memory");
    return ret;
}

static int clone3_tids(void) {
    size_t size = 64 * 1024;
    char *stack = aligned_alloc(64, size);
    if (stack == NULL)
        return 0;
    ptid_word = -1, ctid_word = -1, child_saw_ctid = -2, child_tid = -3;
    struct clone_args_v2 a;
    memset(&a, 0, sizeof a);
    a.flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM |
              CLONE_PARENT_SETTID | CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID;
    a.parent_tid = (uint64_t)(uintptr_t)&ptid_word;
    a.child_tid = (uint64_t)(uintptr_t)&ctid_word;
    a.stack = (uint64_t)(uintptr_t)stack;
    a.stack_size = size;
    long tid = raw_clone3(&a, sizeof a, clone_child);
    if (tid <= 0) {
        printf("clone3: %s\n", tid < 0 ? errname((int)-tid) : "returned 0");
        return 0;
    }
    int ok = check_tids("clone3", tid);
    free(stack);
    return ok;
}

/* clone3's argument checks, each case built to fail (a success would be a
 * thread sharing this stack): the errno of each, as Linux gives it. */
static void clone3_errors(void) {
    static unsigned char buf[256];
    struct clone_args_v2 *a = (struct clone_args_v2 *)buf;
    const uint64_t thread = CLONE_VM | CLONE_SIGHAND | CLONE_THREAD;
#define TRY(what, args, size)                                                                      \
    do {                                                                                           \
        long r = syscall(SYS_clone3, args, (size_t)(size));                                        \
        printf("clone3 %s: %s\n", what, r == -1 ? errname(errno) : "succeeded");                  \
    } while (0)
    memset(buf, 0, sizeof buf);
    a->flags = thread;
    TRY("size 0", a, 0);
    TRY("size 63", a, 63);
    TRY("size 4097", a, 4097);
    TRY("unreadable", (void *)16, 64);
    buf[100] = 1;
    TRY("nonzero past the known struct", a, 120);
    buf[100] = 0;
    a->set_tid_size = 33;
    TRY("set_tid_size 33", a, 88);
    a->set_tid_size = 1;
    TRY("set_tid_size without set_tid", a, 88);
    a->set_tid_size = 0;
    a->exit_signal = 65;
    TRY("exit signal 65", a, 64);
    a->exit_signal = SIGCHLD;
    TRY("thread with an exit signal", a, 64);
    a->exit_signal = 0;
    a->flags = thread | (1ULL << 40);
    TRY("unknown flag", a, 64);
    a->flags = thread | 0x11;
    TRY("signal in flags", a, 64);
    a->flags = thread | 0x100000000ULL;
    TRY("CLONE_SIGHAND with CLONE_CLEAR_SIGHAND", a, 64);
    a->flags = thread;
    a->stack = (uint64_t)(uintptr_t)buf;
    TRY("stack without a size", a, 64);
    a->stack = 0;
    a->stack_size = 4096;
    TRY("size without a stack", a, 64);
    a->stack = 0x7ffffffff000ULL;
    TRY("stack past the user range", a, 64);
#undef TRY
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    pthread_t t[NTHREADS];
    int r = pthread_barrier_init(&barrier, NULL, NTHREADS);
    if (r != 0) {
        fprintf(stderr, "barrier_init: %s\n", strerror(r));
        return 1;
    }
    for (long i = 0; i < NTHREADS; i++) {
        r = pthread_create(&t[i], NULL, worker, (void *)i);
        if (r != 0) {
            fprintf(stderr, "pthread_create %ld: %s\n", i, strerror(r));
            return 1;
        }
    }
    long joined = 0;
    int bad_tls = 0;
    for (int i = 0; i < NTHREADS; i++) {
        void *ret;
        r = pthread_join(t[i], &ret);
        if (r != 0) {
            fprintf(stderr, "pthread_join %d: %s\n", i, strerror(r));
            return 1;
        }
        long v = (long)ret;
        if (v / 100 != 7 + ITERS || v % 100 != i)
            bad_tls++;
        joined += v % 100;
    }
    pthread_barrier_destroy(&barrier);

    int all_seen = 0;
    for (int i = 0; i < NTHREADS; i++)
        all_seen += seen_after_barrier[i];
    printf("threads=%d\n", NTHREADS);
    printf("counter=%ld\n", counter);
    printf("barrier: serial=%d saw_all=%d\n", serial_threads, all_seen);
    printf("handoff:");
    for (int i = 0; i < norder; i++)
        printf(" %d", order[i]);
    printf("\n");
    printf("join_sum=%ld tls_ok=%d main_tls=%ld\n", joined, bad_tls == 0, tls_value);
    printf("proc_threads=%d\n", proc_threads);
    int tids_ok = clone_tids();
    tids_ok = clone3_tids() && tids_ok;
    clone3_errors();
    int ok = counter == (long)NTHREADS * ITERS && serial_threads == 1 && all_seen == NTHREADS &&
             norder == NTHREADS && bad_tls == 0 && tls_value == 7 &&
             proc_threads == NTHREADS + 1 && tids_ok;
    for (int i = 0; i < norder; i++)
        ok = ok && order[i] == i;
    if (!ok) {
        fprintf(stderr, "threads: FAILED\n");
        return 1;
    }
    printf("threads: ok\n");
    return 0;
}
