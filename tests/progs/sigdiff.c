/* Differential exerciser for signals in one thread: the same random
 * sequence of calls on the host and in a partition must print the same
 * lines (see differ.h).
 *
 * The calls are sigaction (handlers with and without SA_SIGINFO,
 * SA_NODEFER, SA_ONSTACK, SA_RESETHAND, a random sa_mask, SIG_IGN,
 * SIG_DFL), sigprocmask, kill/tgkill/raise/sigqueue/rt_tgsigqueueinfo to
 * itself, sigpending, sigtimedwait with no wait, sigsuspend (only when a
 * pending signal will end it), sigaltstack, calls with bad arguments,
 * and calls that wait (a pipe read, nanosleep, poll, epoll_wait, a
 * timerfd read, a Unix stream read with and without SO_RCVTIMEO, an
 * eventfd read, a futex wait) cut short by a process timer's signal,
 * which a handler's
 * SA_RESTART restarts for some (a call the timer beat is run again),
 * and a signalfd (new masks, reads of up to four records, poll).
 * A handler logs what it saw: the signal, its depth (a handler
 * interrupted by another), the mask it runs with, whether it is on the
 * alternate stack, and for SA_SIGINFO handlers the code, value and
 * sender. Some handlers raise another signal. The order in which handlers
 * run — Linux delivers the lowest-numbered pending signal first and, on
 * the way back to the program, the next one on top of it — is part of the
 * output. A signal that would end the process by default never gets
 * SIG_DFL, so no sequence kills the exerciser. */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <poll.h>
#include <stdarg.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/signalfd.h>
#include <time.h>

#define SLOTS 1
#include "differ.h"

static const int sigs[] = {SIGUSR1, SIGUSR2, SIGCHLD, SIGURG, SIGWINCH, 34, 35, 40, 64};
#define NS ((int)(sizeof sigs / sizeof *sigs))

/* Ends the process by default (never left at SIG_DFL here). */
static int terminating(int s) { return s == SIGUSR1 || s == SIGUSR2 || s >= 34; }

static char logbuf[16384];
static size_t loglen;
static volatile int depth;
static unsigned char altmem[1 << 16];
static int siginfo_on[65];
/* The signal a handler at depth 1 raises next (0: none). */
static volatile int nest_sig;
/* While a call waits for a timer's signal: a pipe the handler writes a
 * byte to (so a restarted read ends), and whether the call had begun. */
static volatile int wake_fd = -1;
/* How much the handler writes there: 1 byte, or 8 for an eventfd. */
static volatile size_t wake_len = 1;
static volatile int in_call;
static volatile int raced;
/* A signalfd (-1: none yet this sequence). */
static int sfd = -1;

static void logf_(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(logbuf + loglen, sizeof logbuf - loglen, fmt, ap);
    va_end(ap);
    if (n > 0 && loglen + (size_t)n < sizeof logbuf)
        loglen += (size_t)n;
}

/* The signals of our set in `m`, one bit each. */
static unsigned bits(const sigset_t *m) {
    unsigned b = 0;
    for (int i = 0; i < NS; i++)
        if (sigismember(m, sigs[i]))
            b |= 1u << i;
    return b;
}

static void set_of(unsigned b, sigset_t *m) {
    sigemptyset(m);
    for (int i = 0; i < NS; i++)
        if (b & (1u << i))
            sigaddset(m, sigs[i]);
}

static void handler(int sig, siginfo_t *si, void *uc) {
    (void)uc;
    int saved = errno;
    depth++;
    sigset_t cur;
    sigprocmask(SIG_BLOCK, NULL, &cur);
    unsigned char here;
    int on_alt = &here >= altmem && &here < altmem + sizeof altmem;
    logf_(" [%d d%d m%x alt%d", sig, depth, bits(&cur), on_alt);
    if (siginfo_on[sig])
        logf_(" c%d v%d p%d", si->si_code, si->si_code == SI_QUEUE ? si->si_value.sival_int : -1,
              si->si_pid == getpid());
    if (depth == 1 && nest_sig) {
        int t = nest_sig;
        nest_sig = 0;
        logf_(" raise %d:", t);
        syscall(SYS_tgkill, getpid(), gettid(), t);
    }
    if (wake_fd >= 0) {
        if (!in_call)
            raced = 1;
        unsigned long long one = 1;
        write(wake_fd, &one, wake_len);
    }
    logf_("]");
    depth--;
    errno = saved;
}

/* Prints the line for call `idx` with what handlers logged during it. */
static void done(unsigned idx, const char *what) {
    printf("%u %s%s\n", idx, what, logbuf);
    loglen = 0;
    logbuf[0] = 0;
}

static const char *disp_name(const struct sigaction *a) {
    static char b[64];
    if (a->sa_handler == SIG_DFL)
        return "dfl";
    if (a->sa_handler == SIG_IGN)
        return "ign";
    snprintf(b, sizeof b, "h%s%s%s%s%s", a->sa_flags & SA_SIGINFO ? "+info" : "",
             a->sa_flags & SA_NODEFER ? "+nodefer" : "", a->sa_flags & SA_ONSTACK ? "+onstack" : "",
             a->sa_flags & SA_RESETHAND ? "+reset" : "", a->sa_flags & SA_RESTART ? "+restart" : "");
    return b;
}

static int install(int sig, unsigned kind, unsigned maskbits, struct sigaction *old) {
    struct sigaction a;
    memset(&a, 0, sizeof a);
    set_of(maskbits, &a.sa_mask);
    switch (kind) {
    case 0:
        a.sa_handler = SIG_IGN;
        break;
    case 1:
        /* SIG_DFL only where it ignores. */
        a.sa_handler = terminating(sig) ? SIG_IGN : SIG_DFL;
        break;
    default: {
        static const int flags[] = {0,           SA_SIGINFO, SA_NODEFER, SA_ONSTACK | SA_SIGINFO,
                                    SA_RESTART, SA_RESETHAND, SA_NODEFER | SA_SIGINFO};
        a.sa_flags = flags[(kind - 2) % 7];
        /* A reset handler falls back to SIG_DFL: only where it ignores. */
        if (terminating(sig))
            a.sa_flags &= ~SA_RESETHAND;
        a.sa_sigaction = handler;
        break;
    }
    }
    siginfo_on[sig] = a.sa_handler != SIG_IGN && a.sa_handler != SIG_DFL && (a.sa_flags & SA_SIGINFO);
    return sigaction(sig, &a, old);
}

/* Whether a handler runs for `sig` (not ignored, by SIG_IGN or default). */
static int handled(int sig) {
    struct sigaction a;
    sigaction(sig, NULL, &a);
    return a.sa_handler != SIG_IGN && a.sa_handler != SIG_DFL;
}

static void call(unsigned idx) {
    char what[256];
    unsigned op = pick(15);
    int sig = sigs[pick(NS)];
    switch (op) {
    case 0:
    case 1: {
        unsigned kind = pick(9), mask = (unsigned)next() & ((1u << NS) - 1);
        struct sigaction old;
        long r = install(sig, kind, pick(2) ? 0 : mask, &old);
        snprintf(what, sizeof what, "sigaction %d kind %u = %s old %s m%x", sig, kind, res(r),
                 disp_name(&old), bits(&old.sa_mask));
        break;
    }
    case 2: {
        static const int hows[] = {SIG_BLOCK, SIG_UNBLOCK, SIG_SETMASK};
        int how = hows[pick(3)];
        sigset_t set, old;
        set_of((unsigned)next() & ((1u << NS) - 1), &set);
        long r = sigprocmask(how, &set, &old);
        sigset_t now;
        sigprocmask(SIG_BLOCK, NULL, &now);
        snprintf(what, sizeof what, "sigprocmask %d %x = %s old %x now %x", how, bits(&set), res(r),
                 bits(&old), bits(&now));
        break;
    }
    case 3:
    case 4:
    case 5: {
        unsigned how = pick(5);
        if (pick(3) == 0) {
            int t = sigs[pick(NS)];
            /* A raise inside a handler, of a signal that is handled or
             * ignored (never one left to its default). */
            nest_sig = t != sig ? t : 0;
        }
        long r;
        switch (how) {
        case 0:
            r = kill(getpid(), sig);
            break;
        case 1:
            r = syscall(SYS_tgkill, getpid(), gettid(), sig);
            break;
        case 2:
            r = raise(sig);
            break;
        case 3: {
            union sigval v = {.sival_int = (int)idx};
            r = sigqueue(getpid(), sig, v);
            break;
        }
        default: {
            siginfo_t si;
            memset(&si, 0, sizeof si);
            si.si_signo = sig;
            si.si_code = -50;
            si.si_pid = getpid();
            si.si_uid = getuid();
            r = syscall(SYS_rt_tgsigqueueinfo, getpid(), gettid(), sig, &si);
            break;
        }
        }
        nest_sig = 0;
        snprintf(what, sizeof what, "send %u %d = %s", how, sig, res(r));
        break;
    }
    case 6: {
        sigset_t p;
        long r = sigpending(&p);
        snprintf(what, sizeof what, "sigpending = %s %x", res(r), bits(&p));
        break;
    }
    case 7: {
        sigset_t set;
        set_of((unsigned)next() & ((1u << NS) - 1), &set);
        struct timespec zero = {0, 0};
        siginfo_t si;
        memset(&si, 0, sizeof si);
        long r = sigtimedwait(&set, &si, &zero);
        snprintf(what, sizeof what, "sigtimedwait %x = %s code %d value %d", bits(&set), res(r),
                 r > 0 ? si.si_code : 0, r > 0 && si.si_code == SI_QUEUE ? si.si_value.sival_int : -1);
        break;
    }
    case 8: {
        /* Only when a pending signal that the mask lets through has a
         * handler: otherwise sigsuspend would wait for ever. */
        unsigned m = (unsigned)next() & ((1u << NS) - 1);
        sigset_t pend, mask;
        sigpending(&pend);
        int ok = 0;
        for (int i = 0; i < NS; i++)
            if (sigismember(&pend, sigs[i]) && !(m & (1u << i)) && handled(sigs[i]))
                ok = 1;
        if (!ok) {
            snprintf(what, sizeof what, "sigsuspend %x skipped", m);
            break;
        }
        set_of(m, &mask);
        long r = sigsuspend(&mask);
        sigset_t now;
        sigprocmask(SIG_BLOCK, NULL, &now);
        snprintf(what, sizeof what, "sigsuspend %x = %s now %x", m, res(r), bits(&now));
        break;
    }
    case 9: {
        stack_t ss, old;
        memset(&ss, 0, sizeof ss);
        if (pick(2)) {
            ss.ss_sp = altmem;
            ss.ss_size = sizeof altmem;
        } else
            ss.ss_flags = SS_DISABLE;
        long r = sigaltstack(&ss, &old);
        snprintf(what, sizeof what, "sigaltstack %s = %s old %s", ss.ss_flags ? "off" : "on", res(r),
                 old.ss_flags & SS_DISABLE ? "off" : "on");
        break;
    }
    case 13: {
        /* A signalfd: made, or given a new mask. */
        sigset_t m;
        set_of((unsigned)next() & ((1u << NS) - 1), &m);
        int r = signalfd(sfd, &m, SFD_NONBLOCK);
        snprintf(what, sizeof what, "signalfd %s %x = %s", sfd < 0 ? "new" : "mask", bits(&m),
                 r < 0 ? res(r) : "ok");
        if (r >= 0)
            sfd = r;
        break;
    }
    case 14: {
        /* Reads of it take the pending signals of its mask. */
        if (sfd < 0) {
            snprintf(what, sizeof what, "signalfd read skipped");
            break;
        }
        struct pollfd pf = {sfd, POLLIN, 0};
        int pr = poll(&pf, 1, 0);
        struct signalfd_siginfo si[4];
        size_t n = 1 + pick(4);
        long r = read(sfd, si, n * sizeof *si);
        int len = snprintf(what, sizeof what, "signalfd read %zu poll %d %#x = %s", n, pr, pf.revents,
                           res(r));
        for (long i = 0; r > 0 && i < r / (long)sizeof *si && len < (int)sizeof what - 40; i++)
            len += snprintf(what + len, sizeof what - (size_t)len, " {%u %d %d}", si[i].ssi_signo,
                            si[i].ssi_code, si[i].ssi_code == SI_QUEUE ? si[i].ssi_int : -1);
        break;
    }
    case 12: {
        /* A call that waits, cut short by a process timer's signal: a
         * handler with SA_RESTART restarts a pipe read, a timerfd or
         * eventfd read, a socket read without a receive timeout or a futex
         * wait (Linux), never a sleep, poll, epoll wait or a socket read
         * with SO_RCVTIMEO (EINTR). Only a signal with a handler, not
         * blocked: another would not end the wait. */
        sigset_t now;
        sigprocmask(SIG_BLOCK, NULL, &now);
        if (sigismember(&now, sig) || !handled(sig)) {
            snprintf(what, sizeof what, "interrupt %d skipped", sig);
            break;
        }
        unsigned kind = pick(9);
        long r = 0;
        int tries = 0;
        do {
            int p[2];
            pipe(p);
            timer_t t;
            struct sigevent ev = {.sigev_notify = SIGEV_SIGNAL, .sigev_signo = sig};
            ev.sigev_value.sival_int = 7;
            timer_create(CLOCK_MONOTONIC, &ev, &t);
            struct itimerspec when = {.it_value = {0, 20 * 1000 * 1000}};
            char c;
            int e = kind == 3 ? epoll_create1(0) : -1;
            static int word;
            struct timespec long_wait = {2, 0};
            /* The waited-on descriptor (kinds 4-7) and its other end. */
            int w[2] = {-1, -1};
            wake_fd = p[1];
            wake_len = 1;
            if (kind == 4) {
                /* Fires after the signal; a restarted read returns then. */
                w[0] = timerfd_create(CLOCK_MONOTONIC, 0);
                struct itimerspec tw = {.it_value = {0, 80 * 1000 * 1000}};
                timerfd_settime(w[0], 0, &tw, NULL);
            } else if (kind == 5 || kind == 6) {
                socketpair(AF_UNIX, SOCK_STREAM, 0, w);
                struct timeval tv = {2, 0};
                if (kind == 5)
                    setsockopt(w[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
                wake_fd = w[1];
            } else if (kind == 7) {
                w[0] = eventfd(0, 0);
                wake_fd = w[0];
                wake_len = 8;
            }
            raced = 0;
            loglen = 0;
            logbuf[0] = 0;
            timer_settime(t, 0, &when, NULL);
            in_call = 1;
            switch (kind) {
            case 0:
                r = read(p[0], &c, 1);
                break;
            case 1:
                r = nanosleep(&long_wait, NULL);
                break;
            case 2: {
                struct pollfd pf = {p[0], POLLIN, 0};
                r = poll(&pf, 1, 2000);
                break;
            }
            case 3: {
                struct epoll_event ee;
                r = epoll_wait(e, &ee, 1, 2000);
                break;
            }
            case 4:
            case 7: {
                unsigned long long n;
                r = read(w[0], &n, sizeof n);
                if (r == 8)
                    r = (long)(100 + n);
                break;
            }
            case 5:
            case 6:
                r = read(w[0], &c, 1);
                break;
            default:
                word = 0;
                r = syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 0, &long_wait, NULL, 0);
                break;
            }
            r = r < 0 ? -errno : r;
            in_call = 0;
            wake_fd = -1;
            timer_delete(t);
            close(p[0]);
            close(p[1]);
            if (e >= 0)
                close(e);
            if (w[0] >= 0)
                close(w[0]);
            if (w[1] >= 0)
                close(w[1]);
        } while (raced && ++tries < 5);
        if (r < 0) {
            errno = (int)-r;
            r = -1;
        }
        snprintf(what, sizeof what, "interrupt %d kind %u = %s%s", sig, kind, res(r),
                 raced ? " (raced)" : "");
        break;
    }
    case 10: {
        /* Bad arguments, and the null signal. */
        unsigned k = pick(6);
        long r;
        struct sigaction a;
        memset(&a, 0, sizeof a);
        a.sa_handler = SIG_IGN;
        sigset_t set;
        sigemptyset(&set);
        switch (k) {
        case 0:
            r = kill(getpid(), 0);
            break;
        case 1:
            r = kill(getpid(), 65);
            break;
        case 2:
            r = sigaction(SIGKILL, &a, NULL);
            break;
        case 3:
            r = sigaction(SIGSTOP, NULL, &a);
            break;
        case 4:
            r = syscall(SYS_rt_sigprocmask, 7, &set, NULL, 8);
            break;
        default:
            r = syscall(SYS_rt_sigprocmask, SIG_BLOCK, &set, NULL, 4);
            break;
        }
        snprintf(what, sizeof what, "bad %u = %s", k, res(r));
        break;
    }
    default: {
        /* Several instances at once: queued (real-time) or merged. */
        unsigned n = 2 + pick(3);
        sigset_t one, old;
        sigemptyset(&one);
        sigaddset(&one, sig);
        sigprocmask(SIG_BLOCK, &one, &old);
        for (unsigned i = 0; i < n; i++) {
            union sigval v = {.sival_int = (int)(idx * 10 + i)};
            sigqueue(getpid(), sig, v);
        }
        sigset_t p;
        sigpending(&p);
        logf_(" pending %x", bits(&p));
        long r = sigprocmask(SIG_SETMASK, &old, NULL);
        snprintf(what, sizeof what, "queue %d x%u = %s", sig, n, res(r));
        break;
    }
    }
    done(idx, what);
}

static void begin(void) {
    if (sfd >= 0)
        close(sfd);
    sfd = -1;
    /* Ignoring a signal drops what is pending of it; then each gets its
     * starting disposition, and nothing is blocked. */
    for (int i = 0; i < NS; i++)
        install(sigs[i], 0, 0, NULL);
    for (int i = 0; i < NS; i++)
        install(sigs[i], terminating(sigs[i]) ? 2 : 1, 0, NULL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    stack_t ss = {.ss_flags = SS_DISABLE};
    sigaltstack(&ss, NULL);
    nest_sig = 0;
    loglen = 0;
    logbuf[0] = 0;
}

int main(int argc, char **argv) { return differ_main(argc, argv, "sigdiff", begin, call); }
