/* Differential exerciser for clocks and timers: the same random sequence
 * of calls on the host (without capabilities, as a partition's program)
 * and in a partition must print the same lines.
 *
 *   timediff run SEED NSEEDS COUNT   seeds SEED..SEED+NSEEDS-1, COUNT calls
 *
 * timerfd_create/settime/gettime and reads (every clock, flags that exist
 * and do not, absolute and relative times, CANCEL_ON_SET, descriptors that
 * are no timerfd); POSIX timers (timer_create with every clock, the
 * process's and the thread's CPU clocks, SIGEV_NONE, SIGEV_SIGNAL,
 * SIGEV_THREAD_ID with the caller's and a made-up thread, bad signals and
 * notifications; timer_settime/gettime/getoverrun/delete on live, deleted
 * and made-up ids) and the signal an expired one sends (si_code, value,
 * overrun); getitimer/setitimer of the CPU-time itimers; clock_getres,
 * clock_gettime and clock_settime of every clock id; clock_nanosleep and
 * nanosleep with times in the past, bad flags and bad times.
 *
 * Nothing printed depends on timing: a timer either never expires within
 * a run (1000 s or more) or has expired before it is looked at (armed for
 * 1 ns, then waited for with poll or sigtimedwait); a remaining time is
 * printed as "~V" when it lies within 10 s below the V it was set to,
 * exactly otherwise. All calls are raw system calls (the vDSO and glibc's
 * timer threads stay out of it). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <time.h>

#define SLOTS 4
#include "differ.h"

#define NTIMERS 4
/* The real-time signals the POSIX timers send; blocked, taken with
 * sigtimedwait. */
#define SIGT0 40

static long timer_id[NTIMERS]; /* -1: none */
static long dead_id = -1;      /* a deleted id, for calls on it */

/* The clocks asked about: every fixed id, the caller's process and thread
 * CPU clocks, another process's (pid 1's), and ids that do not exist. */
static char clock_name[24];

static clockid_t clock_pick_(void) {
    switch (pick(16)) {
    case 0:
    case 1:
        return CLOCK_REALTIME;
    case 2:
    case 3:
        return CLOCK_MONOTONIC;
    case 4:
        return CLOCK_BOOTTIME;
    case 5:
        return CLOCK_PROCESS_CPUTIME_ID;
    case 6:
        return CLOCK_THREAD_CPUTIME_ID;
    case 7:
        return CLOCK_MONOTONIC_RAW;
    case 8:
        return pick(2) ? CLOCK_REALTIME_COARSE : CLOCK_MONOTONIC_COARSE;
    case 9:
        return pick(2) ? CLOCK_REALTIME_ALARM : CLOCK_BOOTTIME_ALARM;
    case 10:
        return CLOCK_TAI;
    case 11: {
        clockid_t c;
        return clock_getcpuclockid(0, &c) == 0 ? c : -1;
    }
    case 12:
        /* The calling thread's CPU clock by its thread id
         * (MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)). */
        return (clockid_t)((~(unsigned)syscall(SYS_gettid) << 3) | 2 | 4);
    case 13:
        return 12; /* the first id past the fixed ones */
    case 14:
        return -1 - (clockid_t)pick(3) * 8; /* CPU clocks of pids that do not exist */
    default:
        return (clockid_t)(16 + pick(100));
    }
}

/* A clock id, named for printing in `clock_name`: the CPU clocks of the
 * caller's process and thread by their ids, which differ between the host
 * and a partition, by what they are. */
static clockid_t clock_pick(void) {
    clockid_t c = clock_pick_(), own;
    if (clock_getcpuclockid(0, &own) == 0 && c == own)
        snprintf(clock_name, sizeof clock_name, "own-process-cpu");
    else if (c == (clockid_t)((~(unsigned)syscall(SYS_gettid) << 3) | 2 | 4))
        snprintf(clock_name, sizeof clock_name, "own-thread-cpu");
    else
        snprintf(clock_name, sizeof clock_name, "%d", (int)c);
    return c;
}

/* A clock mostly from the usual two. */
static clockid_t clock_usual(unsigned odds) {
    if (pick(odds)) {
        clockid_t c = pick(2) ? CLOCK_MONOTONIC : CLOCK_REALTIME;
        snprintf(clock_name, sizeof clock_name, "%d", (int)c);
        return c;
    }
    return clock_pick();
}

/* The long times set (seconds): a remaining time within 10 s below one
 * prints as "~V"; one past 10^6 s (an absolute time far ahead, whose
 * distance depends on the clock's now) as "far"; 0 and 1 ns as "0" (Linux
 * says 1 ns for a timer that expired but has not fired yet). */
static const long long LONGS[] = {1000, 2000, 3000, 3600, 100000};

static void ts_print(const char *tag, const struct timespec *t) {
    if (t->tv_sec > 1000000) {
        printf(" %s=far", tag);
        return;
    }
    long long ns = (long long)t->tv_sec * 1000000000LL + t->tv_nsec;
    if (t->tv_sec >= 0 && t->tv_nsec >= 0 && ns <= 1) {
        printf(" %s=0", tag);
        return;
    }
    for (unsigned i = 0; i < sizeof LONGS / sizeof *LONGS; i++) {
        long long want = LONGS[i] * 1000000000LL;
        if (ns <= want && ns > want - 10000000000LL) {
            printf(" %s=~%lld", tag, LONGS[i]);
            return;
        }
    }
    printf(" %s=%lld.%09ld", tag, (long long)t->tv_sec, t->tv_nsec);
}

static void its_print(const struct itimerspec *its) {
    ts_print("value", &its->it_value);
    ts_print("interval", &its->it_interval);
}

/* Per timerfd slot: its clock, and whether it is disarmed (0), will
 * expire at once or has (1), or is set far ahead (2). */
static clockid_t fd_clock[SLOTS];
static int fd_state[SLOTS];
/* Per POSIX timer: whether its expiry sends a signal to this thread, and
 * whether it runs on CPU time. */
static int timer_sig[NTIMERS], timer_cpu[NTIMERS];

/* A time to set: nothing (disarm), 1 ns (expires at once), long (never
 * within a run), or one that is invalid. `*long_sec` says which long. */
static struct timespec time_pick(int absolute, clockid_t clk, long long *long_sec,
                                 int *expires) {
    struct timespec t = {0, 0};
    *long_sec = 0;
    *expires = 0;
    switch (pick(10)) {
    case 0:
        return t; /* disarm */
    case 1:
    case 2:
    case 3:
        if (absolute) {
            /* In the past: 1 s ago (not near the clock's epoch, which
             * with a period would tick as often as the clock's now
             * says). */
            syscall(SYS_clock_gettime, clk, &t);
            if (t.tv_sec > 0)
                t.tv_sec -= 1;
            *expires = 1;
            return t;
        }
        t.tv_nsec = 1;
        *expires = 1;
        return t;
    case 4:
    case 5:
    case 6:
    case 7: {
        static const long long longs[] = {1000, 3600, 100000};
        *long_sec = longs[pick(3)];
        (void)LONGS;
        if (absolute) {
            syscall(SYS_clock_gettime, clk, &t);
            t.tv_sec += *long_sec;
        } else {
            t.tv_sec = *long_sec;
        }
        return t;
    }
    case 8:
        t.tv_nsec = 1000000000;
        return t;
    default:
        t.tv_sec = -1;
        return t;
    }
}

/* A time to sleep for (or until) that never waits: invalid (nanoseconds
 * too many or negative, seconds negative), zero, or when `absolute` 5 ns
 * after the clock's epoch, past on every clock (a CPU clock's too). */
static struct timespec no_wait_time(int absolute) {
    struct timespec t = {0, 0};
    switch (pick(5)) {
    case 0:
        t.tv_nsec = 1000000000;
        break;
    case 1:
        t.tv_sec = -1;
        break;
    case 2:
        t.tv_nsec = -1;
        break;
    case 3:
        break;
    default:
        t.tv_nsec = absolute ? 5 : 0;
        break;
    }
    return t;
}

static void drain_signals(void) {
    sigset_t s;
    sigemptyset(&s);
    for (int i = 0; i < NTIMERS; i++)
        sigaddset(&s, SIGT0 + i);
    struct timespec zero = {0, 0};
    while (sigtimedwait(&s, NULL, &zero) > 0) {
    }
}

static void begin(void) {
    for (int i = 0; i < NTIMERS; i++) {
        if (timer_id[i] >= 0)
            syscall(SYS_timer_delete, timer_id[i]);
        timer_id[i] = -1;
        timer_sig[i] = timer_cpu[i] = 0;
    }
    for (int i = 0; i < SLOTS; i++)
        fd_state[i] = 0;
    dead_id = -1;
    struct itimerval zero = {{0, 0}, {0, 0}};
    setitimer(ITIMER_VIRTUAL, &zero, NULL);
    setitimer(ITIMER_PROF, &zero, NULL);
    drain_signals();
}

/* A timer id to use: a live one, the deleted one, or one never made. */
static long id_pick(int *slot) {
    *slot = -1;
    switch (pick(8)) {
    case 0:
        return dead_id >= 0 ? dead_id : 12345;
    case 1:
        return pick(2) ? -1 : 1 << 20;
    default: {
        int s = (int)pick(NTIMERS);
        if (timer_id[s] >= 0)
            *slot = s;
        return timer_id[s] >= 0 ? timer_id[s] : 54321;
    }
    }
}

/* Waits for the expired timer's signal and prints what it carried. */
static void take_signal(int slot) {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGT0 + slot);
    struct timespec wait = {10, 0};
    siginfo_t si;
    memset(&si, 0, sizeof si);
    int r = sigtimedwait(&s, &si, &wait);
    if (r < 0)
        printf(" signal=%s", res(r));
    else
        printf(" signal=%d code=%d value=%d overrun=%d", r, si.si_code, si.si_value.sival_int,
               si.si_overrun);
}

/* Spends CPU time until a signal of `slot` is pending (a CPU-time timer
 * expires only while the process runs), for at most 5 s of wall time. */
static void spin_until_pending(int slot) {
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        sigset_t p;
        sigpending(&p);
        if (sigismember(&p, SIGT0 + slot))
            return;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - start.tv_sec > 5)
            return;
        for (volatile int i = 0; i < 10000; i++) {
        }
    }
}

static void call(unsigned idx) {
    long r;
    switch (pick(30)) {
    case 0:
    case 1:
    case 2: { /* timerfd_create */
        int s = free_slot();
        if (s < 0) {
            s = used_slot();
            close(fd[s]);
            fd[s] = -1;
        }
        clockid_t c = clock_usual(4);
        static const int flags[] = {0, TFD_NONBLOCK, TFD_CLOEXEC, TFD_NONBLOCK | TFD_CLOEXEC, 1,
                                    TFD_TIMER_ABSTIME};
        int f = flags[pick(6)];
        r = syscall(SYS_timerfd_create, c, f);
        printf("%u timerfd_create %s %#x = %s\n", idx, clock_name, f, r >= 0 ? "fd" : res(r));
        if (r >= 0) {
            fd[s] = (int)r;
            fd_clock[s] = c;
            fd_state[s] = 0;
        }
        return;
    }
    case 3:
    case 4:
    case 5:
    case 6: { /* timerfd_settime */
        int s = used_slot();
        int bad = pick(10) == 0;
        int f = bad ? (pick(2) ? -1 : 0) : (s >= 0 ? fd[s] : -1);
        if (bad && f == 0) {
            f = (int)syscall(SYS_eventfd2, 0, 0); /* not a timerfd */
        }
        static const int flags[] = {0,
                                    0,
                                    TFD_TIMER_ABSTIME,
                                    TFD_TIMER_ABSTIME,
                                    TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET,
                                    TFD_TIMER_CANCEL_ON_SET,
                                    4};
        int fl = flags[pick(7)];
        /* An absolute time is on the timer's own clock. */
        clockid_t c = s >= 0 ? fd_clock[s] : CLOCK_MONOTONIC;
        struct itimerspec old, its;
        long long vlong, ilong;
        int expires, iexp;
        its.it_value = time_pick(fl & TFD_TIMER_ABSTIME, c, &vlong, &expires);
        its.it_interval = time_pick(0, c, &ilong, &iexp);
        if (iexp || pick(2)) {
            /* A short period would tick a timing-dependent number of
             * times. */
            its.it_interval.tv_sec = ilong = 1000;
            its.it_interval.tv_nsec = 0;
        }
        int want_old = pick(4) != 0;
        r = syscall(SYS_timerfd_settime, f, fl, &its, want_old ? &old : NULL);
        printf("%u timerfd_settime %s %#x = %s", idx, bad ? "bad" : "slot", fl, res(r));
        if (r == 0 && want_old && s >= 0 && !bad)
            its_print(&old);
        printf("\n");
        if (r == 0 && s >= 0 && !bad)
            fd_state[s] = expires ? 1 : (vlong ? 2 : 0);
        if (bad && f > 0)
            close(f);
        return;
    }
    case 7:
    case 8: { /* timerfd_gettime */
        int s = used_slot();
        int f = s >= 0 ? fd[s] : -1;
        struct itimerspec cur;
        r = syscall(SYS_timerfd_gettime, f, pick(12) ? (long)&cur : 16L);
        printf("%u timerfd_gettime = %s", idx, res(r));
        if (r == 0)
            its_print(&cur);
        printf("\n");
        return;
    }
    case 9:
    case 10:
    case 11: { /* read a timerfd: only once it is known to have expired, or
                  one that does not block */
        int s = used_slot();
        if (s < 0)
            return;
        struct pollfd p = {fd[s], POLLIN, 0};
        int pr = poll(&p, 1, fd_state[s] == 1 ? 5000 : 0);
        int nb = fcntl(fd[s], F_GETFL) & O_NONBLOCK;
        printf("%u timerfd_read poll=%d revents=%#x", idx, pr, (unsigned)p.revents);
        if (pr == 1 || nb) {
            uint64_t ticks = 0;
            size_t len = pick(6) ? 8 : (pick(2) ? 4 : 16);
            r = read(fd[s], &ticks, len);
            printf(" len=%zu = %s ticks=%llu", len, res(r), (unsigned long long)ticks);
            if (r == 8 && fd_state[s] == 1) {
                /* Ticked: disarmed if one-shot, 1000 s ahead if periodic. */
                struct itimerspec cur;
                syscall(SYS_timerfd_gettime, fd[s], &cur);
                fd_state[s] = cur.it_interval.tv_sec ? 2 : 0;
            }
        }
        printf("\n");
        return;
    }
    case 12:
    case 13:
    case 14: { /* timer_create */
        int s = (int)pick(NTIMERS);
        if (timer_id[s] >= 0) {
            syscall(SYS_timer_delete, timer_id[s]);
            timer_id[s] = -1;
        }
        drain_signals();
        clockid_t c = clock_usual(3);
        struct sigevent ev;
        memset(&ev, 0, sizeof ev);
        ev.sigev_value.sival_int = 100 + s;
        ev.sigev_signo = SIGT0 + s;
        const char *how;
        switch (pick(9)) {
        case 0:
            how = "none";
            ev.sigev_notify = SIGEV_NONE;
            break;
        case 1:
        case 2:
        case 3:
            how = "signal";
            ev.sigev_notify = SIGEV_SIGNAL;
            break;
        case 4:
            how = "thread_id";
            ev.sigev_notify = SIGEV_THREAD_ID;
            ev._sigev_un._tid = (int)syscall(SYS_gettid);
            break;
        case 5:
            how = "thread_id_other";
            ev.sigev_notify = SIGEV_THREAD_ID;
            ev._sigev_un._tid = 99999;
            break;
        case 6:
            how = pick(2) ? "signal_0" : "signal_65";
            ev.sigev_notify = SIGEV_SIGNAL;
            ev.sigev_signo = how[7] == '0' ? 0 : 65;
            break;
        case 7:
            how = pick(2) ? "notify_2" : "notify_9";
            ev.sigev_notify = how[7] - '0'; /* SIGEV_THREAD raw: as SIGEV_SIGNAL */
            break;
        default:
            how = "bad_pointer";
            break;
        }
        int id = -1;
        r = syscall(SYS_timer_create, c, how[0] == 'b' ? 16L : (long)&ev, &id);
        printf("%u timer_create %s %s = %s\n", idx, clock_name, how, r == 0 ? "0" : res(r));
        if (r == 0) {
            timer_id[s] = id;
            timer_sig[s] = ev.sigev_notify != SIGEV_NONE;
            timer_cpu[s] = c == CLOCK_PROCESS_CPUTIME_ID || c == CLOCK_THREAD_CPUTIME_ID || c < 0;
        }
        return;
    }
    case 15:
    case 16:
    case 17:
    case 18: { /* timer_settime, then the signal of an expired one */
        int s;
        long id = id_pick(&s);
        int fl = pick(3) == 0 ? TIMER_ABSTIME : (pick(8) ? 0 : 2);
        clockid_t c = CLOCK_MONOTONIC; /* absolute times below are far past or
                                          far ahead on every clock */
        struct itimerspec its, old;
        long long vlong, ilong;
        int expires, iexp;
        its.it_value = time_pick(0, c, &vlong, &expires);
        if (fl & TIMER_ABSTIME) {
            /* 5 ns after every clock's epoch is past (a CPU clock's too);
             * 10^10 s is far ahead of every clock's now. */
            if (expires) {
                its.it_value.tv_sec = 0;
                its.it_value.tv_nsec = 5;
            } else if (vlong) {
                its.it_value.tv_sec = 10000000000LL;
            }
        }
        its.it_interval = time_pick(0, c, &ilong, &iexp);
        if (iexp || pick(2)) {
            its.it_interval.tv_sec = ilong = 1000;
            its.it_interval.tv_nsec = 0;
        }
        if ((fl & TIMER_ABSTIME) && expires) {
            /* Near the epoch with a period, it would overrun as often as
             * the clock's now says. */
            its.it_interval.tv_sec = its.it_interval.tv_nsec = 0;
        }
        if (expires && s >= 0 && timer_cpu[s]) {
            /* Linux re-arms an expired CPU-time timer from samples of the
             * process's time that a loaded machine makes disagree (its
             * remaining time then reads 1 ns or the period at random):
             * one-shot. */
            its.it_interval.tv_sec = its.it_interval.tv_nsec = 0;
        }
        int want_old = pick(4) != 0;
        r = syscall(SYS_timer_settime, id, fl, &its, want_old ? &old : NULL);
        printf("%u timer_settime %s %#x = %s", idx, s >= 0 ? "live" : "other", fl, res(r));
        if (r == 0 && want_old && s >= 0)
            printf(" old:"), its_print(&old);
        if (r == 0 && s >= 0 && timer_sig[s]) {
            if (expires) {
                /* An expired timer's signal comes from the timer
                 * interrupt, or for a CPU clock while the process runs. */
                spin_until_pending(s);
                sigset_t p;
                sigpending(&p);
                printf(" pending=%d", sigismember(&p, SIGT0 + s));
                if (sigismember(&p, SIGT0 + s))
                    take_signal(s);
            }
        }
        printf("\n");
        return;
    }
    case 19:
    case 20: { /* timer_gettime, timer_getoverrun */
        int s;
        long id = id_pick(&s);
        struct itimerspec cur;
        if (pick(3)) {
            r = syscall(SYS_timer_gettime, id, pick(12) ? (long)&cur : 16L);
            printf("%u timer_gettime %s = %s", idx, s >= 0 ? "live" : "other", res(r));
            if (r == 0)
                its_print(&cur);
        } else {
            r = syscall(SYS_timer_getoverrun, id);
            printf("%u timer_getoverrun %s = %s", idx, s >= 0 ? "live" : "other", res(r));
        }
        printf("\n");
        return;
    }
    case 21: { /* timer_delete */
        int s;
        long id = id_pick(&s);
        r = syscall(SYS_timer_delete, id);
        printf("%u timer_delete %s = %s\n", idx, s >= 0 ? "live" : "other", res(r));
        if (r == 0 && s >= 0) {
            dead_id = timer_id[s];
            timer_id[s] = -1;
        }
        drain_signals();
        return;
    }
    case 22:
    case 23: { /* getitimer/setitimer of CPU time (ITIMER_REAL is the
                  watchdog's) */
        static const int which[] = {ITIMER_VIRTUAL, ITIMER_PROF, 5, -1};
        int w = which[pick(4)];
        struct itimerval v, old;
        memset(&old, 0, sizeof old);
        if (pick(3) == 0) {
            r = syscall(SYS_getitimer, w, pick(10) ? (long)&v : 16L);
            printf("%u getitimer %d = %s", idx, w, res(r));
            if (r == 0)
                printf(" value=%s interval=%ld.%06ld",
                       v.it_value.tv_sec > 900 || (v.it_value.tv_sec | v.it_value.tv_usec) == 0
                           ? (v.it_value.tv_sec ? "long" : "0")
                           : "short",
                       (long)v.it_interval.tv_sec, (long)v.it_interval.tv_usec);
            printf("\n");
            return;
        }
        static const long usecs[] = {0, 1, 999999, 1000000, -1, 500000};
        v.it_value.tv_sec = pick(4) ? 1000 + pick(3) * 1000 : 0;
        v.it_value.tv_usec = usecs[pick(6)];
        /* A short value would fire, and SIGVTALRM/SIGPROF end the run. */
        if (v.it_value.tv_sec == 0 && v.it_value.tv_usec > 0 && v.it_value.tv_usec < 1000000)
            v.it_value.tv_usec = 0;
        v.it_interval.tv_sec = pick(2) ? 2000 : 0;
        v.it_interval.tv_usec = usecs[pick(6)];
        r = syscall(SYS_setitimer, w, &v, pick(3) ? (long)&old : 0L);
        printf("%u setitimer %d %ld.%06ld %ld.%06ld = %s old=%s\n", idx, w,
               (long)v.it_value.tv_sec, (long)v.it_value.tv_usec, (long)v.it_interval.tv_sec,
               (long)v.it_interval.tv_usec, res(r),
               old.it_value.tv_sec > 900 ? "long" : (old.it_value.tv_usec ? "short" : "0"));
        return;
    }
    case 24:
    case 25: { /* clock_getres, clock_gettime's errors */
        clockid_t c = clock_pick();
        struct timespec t = {-7, -7};
        if (pick(2)) {
            r = syscall(SYS_clock_getres, c, pick(8) ? (long)&t : (pick(2) ? 0L : 16L));
            printf("%u clock_getres %s = %s res=%lld.%09ld\n", idx, clock_name, res(r),
                   (long long)t.tv_sec, t.tv_nsec);
        } else {
            r = syscall(SYS_clock_gettime, c, pick(8) ? (long)&t : 16L);
            printf("%u clock_gettime %s = %s %s\n", idx, clock_name, res(r),
                   r == 0 ? (t.tv_nsec >= 0 && t.tv_nsec < 1000000000 ? "valid" : "bad") : "");
        }
        return;
    }
    case 26: { /* clock_settime: only errors without CAP_SYS_TIME */
        clockid_t c = clock_pick();
        struct timespec t;
        syscall(SYS_clock_gettime, CLOCK_REALTIME, &t);
        switch (pick(3)) {
        case 0:
            t.tv_nsec = 1000000000;
            break;
        case 1:
            t.tv_sec = -1;
            break;
        default:
            break;
        }
        r = syscall(SYS_clock_settime, c, &t);
        printf("%u clock_settime %s = %s\n", idx, clock_name, res(r));
        return;
    }
    case 27:
    case 28: { /* clock_nanosleep: never one that waits (Linux ignores
                  unknown flags, so only past or zero times) */
        clockid_t c = clock_usual(3);
        static const int flags[] = {0, TIMER_ABSTIME, TIMER_ABSTIME, 2, -1};
        int fl = flags[pick(5)];
        struct timespec t = no_wait_time(fl & TIMER_ABSTIME), rem = {-7, -7};
        r = syscall(SYS_clock_nanosleep, c, fl, pick(10) ? (long)&t : 16L, &rem);
        /* The raw call answers -1 and errno (glibc's wrapper returns the
         * error). */
        printf("%u clock_nanosleep %s %#x %lld.%09ld = %s\n", idx, clock_name, fl, (long long)t.tv_sec,
               t.tv_nsec, res(r));
        return;
    }
    default: { /* nanosleep's errors and a zero sleep */
        struct timespec t = no_wait_time(0), rem;
        r = syscall(SYS_nanosleep, pick(8) ? (long)&t : 16L, &rem);
        printf("%u nanosleep %lld.%09ld = %s\n", idx, (long long)t.tv_sec, t.tv_nsec, res(r));
        return;
    }
    }
}

int main(int argc, char **argv) {
    if (!drop_capabilities()) {
        fprintf(stderr, "timediff: could not drop every capability\n");
        return 2;
    }
    sigset_t s;
    sigemptyset(&s);
    for (int i = 0; i < NTIMERS; i++) {
        sigaddset(&s, SIGT0 + i);
        timer_id[i] = -1;
    }
    sigprocmask(SIG_BLOCK, &s, NULL);
    return differ_main(argc, argv, "timediff", begin, call);
}
