/* Waiting for signals: sigsuspend (the mask during the wait and after),
 * pause, sigtimedwait/sigwaitinfo (what they take, siginfo, time limits,
 * queued real-time signals with their values), and HotSpot's
 * suspend/resume handshake (a handler parked in sigsuspend until another
 * thread resumes it). Output compared with the host's. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "errname.h"

static atomic_int handled;
static atomic_int handler_saw_usr2_blocked;

static void on_usr1(int sig)
{
    (void)sig;
    sigset_t now;
    sigprocmask(SIG_BLOCK, NULL, &now);
    handler_saw_usr2_blocked = sigismember(&now, SIGUSR2);
    handled++;
}

static pid_t gettid_(void) { return (pid_t)syscall(SYS_gettid); }

struct shot {
    pid_t tid;
    int sig;
    int delay_ms;
};

static void *shoot(void *arg)
{
    struct shot *s = arg;
    struct timespec d = {0, s->delay_ms * 1000000L};
    nanosleep(&d, NULL);
    syscall(SYS_tgkill, getpid(), s->tid, s->sig);
    return NULL;
}

/* kill(getpid(), SIGUSR2) after 10 ms, from a thread that blocks it too. */
static void *kill_later(void *arg)
{
    (void)arg;
    struct timespec d = {0, 10000000};
    nanosleep(&d, NULL);
    kill(getpid(), SIGUSR2);
    return NULL;
}

static void later(pthread_t *t, struct shot *s)
{
    pthread_create(t, NULL, shoot, s);
}

/* HotSpot's suspend/resume: SIGUSR2's handler says "suspended" and waits in
 * sigsuspend for the resume signal (SIGUSR2 again), with everything else
 * blocked. */
static atomic_int sr_state; /* 0 running, 1 suspended, 2 resume asked, 3 resumed */
static void sr_handler(int sig)
{
    (void)sig;
    /* The resume signal itself: in the suspend below, or (when the resume
     * came before the handler looked) pending until the handler returned. */
    if (sr_state >= 2)
        return;
    sr_state = 1;
    sigset_t wait;
    sigfillset(&wait);
    sigdelset(&wait, SIGUSR2);
    while (sr_state != 2)
        sigsuspend(&wait);
    sr_state = 3;
}

static atomic_long spins;
static void *spinner(void *arg)
{
    (void)arg;
    while (sr_state != 3 || spins < 1000)
        spins++;
    return NULL;
}

/* A signal sent to the process while every thread blocks it is pending
 * for the process: each thread sees it in sigpending, and the first to
 * unblock it takes it (Linux's shared_pending). */
static atomic_int taken_by;
static atomic_int stage;
static void on_urg(int sig)
{
    (void)sig;
    taken_by = gettid_();
}
static void *unblocker(void *arg)
{
    (void)arg;
    while (stage != 1)
        sched_yield();
    sigset_t p, u;
    sigpending(&p);
    printf("process signal: pending in the other thread %d\n", sigismember(&p, SIGURG));
    sigemptyset(&u);
    sigaddset(&u, SIGURG);
    int me = gettid_();
    pthread_sigmask(SIG_UNBLOCK, &u, NULL);
    printf("process signal: taken by the thread that unblocked it %d\n", taken_by == me);
    return NULL;
}
static void process_pending(void)
{
    struct sigaction a;
    memset(&a, 0, sizeof a);
    a.sa_handler = on_urg;
    sigaction(SIGURG, &a, NULL);
    sigset_t u;
    sigemptyset(&u);
    sigaddset(&u, SIGURG);
    pthread_sigmask(SIG_BLOCK, &u, NULL);
    pthread_t t;
    pthread_create(&t, NULL, unblocker, NULL); /* inherits the mask */
    kill(getpid(), SIGURG);
    sigset_t p;
    sigpending(&p);
    printf("process signal: pending in the sender %d\n", sigismember(&p, SIGURG));
    stage = 1;
    pthread_join(t, NULL);
    sigpending(&p);
    printf("process signal: pending after %d, main took it %d\n", sigismember(&p, SIGURG),
           taken_by == gettid_());
}

int main(void)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sa.sa_flags = SA_RESTART; /* sigsuspend and pause still return EINTR */
    sigaction(SIGUSR1, &sa, NULL);

    /* sigsuspend: SIGUSR1 blocked outside the wait, SIGUSR2 blocked inside. */
    sigset_t block, wait, after;
    sigemptyset(&block);
    sigaddset(&block, SIGUSR1);
    sigprocmask(SIG_BLOCK, &block, NULL);
    sigemptyset(&wait);
    sigaddset(&wait, SIGUSR2);
    pthread_t t;
    struct shot s = {gettid_(), SIGUSR1, 20};
    later(&t, &s);
    int r = sigsuspend(&wait);
    int e = errno;
    pthread_join(t, NULL);
    sigprocmask(SIG_BLOCK, NULL, &after);
    printf("sigsuspend = %d %s, handled %d, handler saw SIGUSR2 blocked %d, after: USR1 blocked %d USR2 blocked %d\n",
           r, errname(e), (int)handled, (int)handler_saw_usr2_blocked, sigismember(&after, SIGUSR1),
           sigismember(&after, SIGUSR2));

    /* A signal already pending (blocked before) is taken at once. */
    raise(SIGUSR1);
    r = sigsuspend(&wait);
    printf("sigsuspend with one pending = %d %s, handled %d\n", r, errname(errno), (int)handled);
    sigprocmask(SIG_UNBLOCK, &block, NULL);

    /* pause. */
    s.delay_ms = 10;
    later(&t, &s);
    r = pause();
    e = errno;
    pthread_join(t, NULL);
    printf("pause = %d %s, handled %d\n", r, errname(e), (int)handled);

    /* sigtimedwait: SIGUSR2 blocked, taken without a handler. */
    sigset_t w2;
    sigemptyset(&w2);
    sigaddset(&w2, SIGUSR2);
    sigprocmask(SIG_BLOCK, &w2, NULL);
    struct timespec zero = {0, 0}, short_ = {0, 30000000};
    siginfo_t info;
    r = sigtimedwait(&w2, &info, &zero);
    printf("sigtimedwait with none, no time = %d %s\n", r, errname(errno));
    r = sigtimedwait(&w2, &info, &short_);
    printf("sigtimedwait with none, 30 ms = %d %s\n", r, errname(errno));
    struct shot s2 = {gettid_(), SIGUSR2, 10};
    later(&t, &s2);
    memset(&info, 0, sizeof info);
    r = sigwaitinfo(&w2, &info);
    pthread_join(t, NULL);
    /* glibc reports tgkill's SI_TKILL as SI_USER. */
    printf("sigwaitinfo = %d (SIGUSR2 %d), si_signo %d, si_code tkill %d, si_pid mine %d\n", r,
           r == SIGUSR2, info.si_signo, info.si_code == SI_TKILL || info.si_code == SI_USER,
           info.si_pid == getpid());
    sigset_t pend;
    sigpending(&pend);
    printf("after: SIGUSR2 pending %d\n", sigismember(&pend, SIGUSR2));

    /* A signal sent to the process by another thread while every thread
     * blocks it: the thread waiting in sigwaitinfo takes it. */
    {
        pthread_t k;
        pthread_create(&k, NULL, kill_later, NULL);
        memset(&info, 0, sizeof info);
        r = sigwaitinfo(&w2, &info);
        pthread_join(k, NULL);
        printf("process-directed: sigwaitinfo = %d (SIGUSR2 %d), si_code SI_USER %d\n", r,
               r == SIGUSR2, info.si_code == SI_USER);
    }

    /* Queued real-time signals, each with its value, lowest number first. */
    int rt = SIGRTMIN + 2;
    sigset_t wrt;
    sigemptyset(&wrt);
    sigaddset(&wrt, rt);
    sigaddset(&wrt, rt + 1);
    sigprocmask(SIG_BLOCK, &wrt, NULL);
    union sigval v;
    v.sival_int = 11;
    sigqueue(getpid(), rt + 1, v);
    v.sival_int = 22;
    sigqueue(getpid(), rt, v);
    v.sival_int = 33;
    sigqueue(getpid(), rt, v);
    for (int i = 0; i < 3; i++) {
        r = sigtimedwait(&wrt, &info, &zero);
        printf("rt %d: signal +%d value %d code SI_QUEUE %d\n", i, r - rt, info.si_value.sival_int,
               info.si_code == SI_QUEUE);
    }
    r = sigtimedwait(&wrt, &info, &zero);
    printf("rt then: %d %s\n", r, errname(errno));

    /* A handled signal outside the set ends the wait (the system call
     * itself: musl's sigwaitinfo tries again after EINTR). */
    s.delay_ms = 10;
    later(&t, &s);
    r = (int)syscall(SYS_rt_sigtimedwait, &w2, &info, NULL, 8);
    e = errno;
    pthread_join(t, NULL);
    printf("sigwaitinfo interrupted = %d %s, handled %d\n", r, errname(e), (int)handled);

    /* Suspend/resume as HotSpot does it, 200 times. */
    struct sigaction sr;
    memset(&sr, 0, sizeof sr);
    sr.sa_handler = sr_handler;
    sigfillset(&sr.sa_mask);
    sigaction(SIGUSR2, &sr, NULL);
    sigprocmask(SIG_UNBLOCK, &w2, NULL);
    int ok = 0;
    for (int i = 0; i < 200; i++) {
        sr_state = 0;
        spins = 0;
        pthread_t sp;
        pthread_create(&sp, NULL, spinner, NULL);
        while (spins < 100)
            sched_yield();
        pthread_kill(sp, SIGUSR2);
        while (sr_state != 1)
            sched_yield();
        long frozen = spins;
        struct timespec d = {0, 200000};
        nanosleep(&d, NULL);
        int still = spins == frozen;
        sr_state = 2;
        pthread_kill(sp, SIGUSR2);
        pthread_join(sp, NULL);
        ok += still && sr_state == 3;
    }
    printf("suspend/resume: %d of 200 froze the thread and resumed it\n", ok);
    process_pending();
    return 0;
}
