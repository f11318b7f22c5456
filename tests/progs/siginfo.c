/* What a signal handler learns from its siginfo, for every way a signal is
 * sent: kill (SI_USER), raise/tgkill (SI_TKILL), sigqueue (SI_QUEUE with a
 * value; real-time instances queue, each with its own value, in order),
 * rt_tgsigqueueinfo, a POSIX timer (SI_TIMER with sigev_value), setitimer
 * (SI_KERNEL), a write to a pipe without readers (SIGPIPE, SI_USER); which
 * thread takes a process-directed signal the main thread blocks; and the
 * errors of the sigqueue calls. Every line must be the host's. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "errname.h"

static volatile sig_atomic_t got;
static struct {
    int signo, code, value, pid_ok, uid_ok, worker;
} seen[16];
static pthread_t worker_thread;
static volatile int worker_ready;

static void handler(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    int i = got;
    if (i < 16) {
        seen[i].signo = si->si_signo == sig ? sig : -1;
        seen[i].code = si->si_code;
        seen[i].value = si->si_value.sival_int;
        seen[i].pid_ok = si->si_pid == getpid();
        seen[i].uid_ok = si->si_uid == getuid();
        seen[i].worker = worker_ready && pthread_equal(pthread_self(), worker_thread);
    }
    got = i + 1;
}

static void on(int sig)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = handler;
    sa.sa_flags = SA_SIGINFO;
    sigaction(sig, &sa, NULL);
}

static const char *code_name(int c)
{
    switch (c) {
    case SI_USER: return "SI_USER";
    case SI_QUEUE: return "SI_QUEUE";
    case SI_TKILL: return "SI_TKILL";
    case SI_TIMER: return "SI_TIMER";
    case SI_KERNEL: return "SI_KERNEL";
    default: return "other";
    }
}

/* Prints what the handler saw since the last call. */
static void report(const char *what, int with_sender, int with_value)
{
    printf("%s: %d delivered", what, (int)got);
    for (int i = 0; i < got && i < 16; i++) {
        /* SIGRTMIN is 34 with glibc, 35 with musl. */
        if (seen[i].signo >= SIGRTMIN)
            printf(" [SIGRTMIN+%d %s", seen[i].signo - SIGRTMIN, code_name(seen[i].code));
        else
            printf(" [sig %d %s", seen[i].signo, code_name(seen[i].code));
        if (with_value)
            printf(" value %d", seen[i].value);
        if (with_sender)
            printf(" pid %s uid %s", seen[i].pid_ok ? "ok" : "wrong", seen[i].uid_ok ? "ok" : "wrong");
        printf("]");
    }
    printf("\n");
    got = 0;
}

static const char *res(long r)
{
    static char b[64];
    if (r < 0)
        snprintf(b, sizeof b, "-1 %s", errname(errno));
    else
        snprintf(b, sizeof b, "%ld", r);
    return b;
}

static void *worker(void *arg)
{
    (void)arg;
    /* Threads start with their creator's mask: take SIGUSR2 here. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR2);
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
    worker_ready = 1;
    while (got == 0)
        usleep(1000);
    return NULL;
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    on(SIGUSR1);
    on(SIGUSR2);
    on(SIGRTMIN);
    on(SIGRTMIN + 1);
    on(SIGALRM);
    on(SIGPIPE);

    kill(getpid(), SIGUSR1);
    report("kill", 1, 0);
    raise(SIGUSR1);
    report("raise", 1, 0);
    syscall(SYS_tgkill, getpid(), gettid(), SIGUSR2);
    report("tgkill", 1, 0);

    union sigval v = {.sival_int = 42};
    printf("sigqueue: %s\n", res(sigqueue(getpid(), SIGRTMIN, v)));
    report("sigqueue", 1, 1);

    /* Blocked, three real-time instances queue with their own values; a
     * standard signal sent twice is one. Unblocked: the standard one first
     * (lowest number), then the real-time ones in order. */
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGRTMIN);
    sigaddset(&set, SIGUSR1);
    sigprocmask(SIG_BLOCK, &set, &old);
    for (int i = 1; i <= 3; i++) {
        v.sival_int = 100 + i;
        sigqueue(getpid(), SIGRTMIN, v);
    }
    v.sival_int = 7;
    sigqueue(getpid(), SIGUSR1, v);
    v.sival_int = 8;
    sigqueue(getpid(), SIGUSR1, v);
    sigset_t pend;
    sigpending(&pend);
    printf("pending while blocked: SIGRTMIN %d SIGUSR1 %d, delivered %d\n",
           sigismember(&pend, SIGRTMIN), sigismember(&pend, SIGUSR1), (int)got);
    sigprocmask(SIG_SETMASK, &old, NULL);
    report("after unblocking", 0, 1);

    /* rt_tgsigqueueinfo to this thread, with a caller-made siginfo. */
    siginfo_t si;
    memset(&si, 0, sizeof si);
    si.si_code = SI_QUEUE;
    si.si_pid = getpid();
    si.si_uid = getuid();
    si.si_value.sival_int = 9;
    printf("rt_tgsigqueueinfo: %s\n",
           res(syscall(SYS_rt_tgsigqueueinfo, getpid(), gettid(), SIGRTMIN + 1, &si)));
    report("rt_tgsigqueueinfo", 1, 1);

    /* Errors. */
    printf("rt_sigqueueinfo to pid 999999: %s\n",
           res(syscall(SYS_rt_sigqueueinfo, 999999, SIGUSR1, &si)));
    printf("rt_sigqueueinfo signal 0: %s\n", res(syscall(SYS_rt_sigqueueinfo, getpid(), 0, &si)));
    printf("rt_sigqueueinfo signal 65: %s\n", res(syscall(SYS_rt_sigqueueinfo, getpid(), 65, &si)));
    printf("rt_sigqueueinfo bad siginfo: %s\n",
           res(syscall(SYS_rt_sigqueueinfo, getpid(), SIGUSR1, (void *)16)));
    printf("rt_tgsigqueueinfo tid 0: %s\n",
           res(syscall(SYS_rt_tgsigqueueinfo, getpid(), 0, SIGUSR1, &si)));
    printf("rt_tgsigqueueinfo unknown tid: %s\n",
           res(syscall(SYS_rt_tgsigqueueinfo, getpid(), 999999, SIGUSR1, &si)));
    printf("rt_tgsigqueueinfo tgid 0: %s\n",
           res(syscall(SYS_rt_tgsigqueueinfo, 0, gettid(), SIGUSR1, &si)));
    printf("rt_tgsigqueueinfo other tgid: %s\n",
           res(syscall(SYS_rt_tgsigqueueinfo, 999999, gettid(), SIGUSR1, &si)));
    report("after the errors", 0, 0);

    /* A POSIX timer with a value, then setitimer. */
    struct sigevent ev;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_SIGNAL;
    ev.sigev_signo = SIGALRM;
    ev.sigev_value.sival_int = 1234;
    timer_t t;
    timer_create(CLOCK_MONOTONIC, &ev, &t);
    struct itimerspec its = {.it_value = {.tv_nsec = 5000000}};
    timer_settime(t, 0, &its, NULL);
    while (got == 0)
        usleep(1000);
    report("timer", 0, 1);
    timer_delete(t);
    struct itimerval itv = {.it_value = {.tv_usec = 5000}};
    setitimer(ITIMER_REAL, &itv, NULL);
    while (got == 0)
        usleep(1000);
    report("setitimer", 0, 0);

    /* A pipe without readers: SIGPIPE, then EPIPE. */
    int p[2];
    pipe(p);
    close(p[0]);
    printf("write to a pipe without readers: %s\n", res(write(p[1], "x", 1)));
    report("pipe", 1, 0);
    signal(SIGPIPE, SIG_IGN);
    printf("again, SIGPIPE ignored: %s\n", res(write(p[1], "x", 1)));
    close(p[1]);

    /* A process-directed signal the main thread blocks goes to the worker. */
    sigemptyset(&set);
    sigaddset(&set, SIGUSR2);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    pthread_create(&worker_thread, NULL, worker, NULL);
    while (!worker_ready)
        usleep(1000);
    kill(getpid(), SIGUSR2);
    pthread_join(worker_thread, NULL);
    printf("kill with the main thread blocking it: taken by the %s\n",
           seen[0].worker ? "worker" : "main thread");
    report("worker", 1, 0);
    return 0;
}
