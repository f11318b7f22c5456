/* signalfd: reads take the thread's pending signals of the mask (its own
 * first, then the process's) as signalfd_siginfo records, poll and epoll
 * see them, a blocking read waits for one (from another thread, from a
 * timer), a new mask replaces the old, and bad arguments fail as Linux's.
 * Output compared with the host's. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "errname.h"

static const char *res(long r)
{
    static char b[4][48];
    static int i;
    i = (i + 1) % 4;
    if (r < 0)
        snprintf(b[i], sizeof b[i], "-1 %s", errname(errno));
    else
        snprintf(b[i], sizeof b[i], "%ld", r);
    return b[i];
}

static void show(const char *what, const struct signalfd_siginfo *s)
{
    printf("%s: signo %u code %d pid-is-me %d uid %u int %d", what, s->ssi_signo, s->ssi_code,
           s->ssi_pid == (unsigned)getpid(), s->ssi_uid, s->ssi_int);
    if (s->ssi_code == SI_TIMER)
        printf(" overrun %u", s->ssi_overrun);
    printf("\n");
}

/* Reads up to `n` records, printing each. */
static long take(int fd, int n, const char *what)
{
    struct signalfd_siginfo s[8];
    long r = read(fd, s, sizeof *s * (size_t)n);
    if (r < 0) {
        printf("%s: read = %s\n", what, res(r));
        return r;
    }
    printf("%s: read = %ld bytes\n", what, r);
    for (long i = 0; i < r / (long)sizeof *s; i++)
        show(what, &s[i]);
    return r;
}

static int blocking_fd;
static void *reader(void *arg)
{
    (void)arg;
    take(blocking_fd, 1, "blocking read in a thread");
    return NULL;
}

int main(void)
{
    sigset_t m;
    sigemptyset(&m);
    sigaddset(&m, SIGUSR1);
    sigaddset(&m, SIGUSR2);
    sigaddset(&m, 40);
    sigprocmask(SIG_BLOCK, &m, NULL);

    sigset_t want;
    sigemptyset(&want);
    sigaddset(&want, SIGUSR1);
    sigaddset(&want, 40);
    sigaddset(&want, SIGKILL); /* silently left out */

    printf("sizemask 4: %s\n", res(syscall(SYS_signalfd4, -1, &want, 4, 0)));
    printf("bad flags: %s\n", res(syscall(SYS_signalfd4, -1, &want, 8, 1)));
    printf("mask NULL: %s\n", res(syscall(SYS_signalfd4, -1, NULL, 8, 0)));
    printf("bad fd: %s\n", res(signalfd(999, &want, 0)));
    int p[2];
    pipe(p);
    printf("a pipe: %s\n", res(signalfd(p[0], &want, 0)));

    int fd = signalfd(-1, &want, SFD_NONBLOCK | SFD_CLOEXEC);
    printf("signalfd: %s, cloexec %d, nonblock %d\n", fd >= 0 ? "ok" : res(fd),
           (fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0, (fcntl(fd, F_GETFL) & O_NONBLOCK) != 0);
    struct stat st;
    fstat(fd, &st);
    char link[64] = {0}, path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    readlink(path, link, sizeof link - 1);
    printf("mode %o, link %s\n", st.st_mode & 07777, link);

    take(fd, 1, "nothing pending");
    struct pollfd pf = {fd, POLLIN | POLLOUT, 0};
    printf("poll with nothing: %d revents %#x\n", poll(&pf, 1, 0), pf.revents);

    union sigval v = {.sival_int = 41};
    sigqueue(getpid(), 40, v);
    v.sival_int = 42;
    sigqueue(getpid(), 40, v);
    raise(SIGUSR1);
    printf("poll: %d revents %#x\n", poll(&pf, 1, 0), pf.revents);
    char small[100];
    printf("read of 100 bytes: %s\n", res(read(fd, small, sizeof small)));
    /* The thread's own (raise) first, then the process's in order. */
    take(fd, 8, "three pending");
    sigset_t pend;
    sigpending(&pend);
    printf("still pending: USR1 %d, 40 %d\n", sigismember(&pend, SIGUSR1), sigismember(&pend, 40));

    kill(getpid(), SIGUSR1);
    raise(SIGUSR2); /* not in the mask: stays pending */
    take(fd, 1, "kill");
    sigpending(&pend);
    printf("USR2 pending %d\n", sigismember(&pend, SIGUSR2));

    /* A new mask for the same file. */
    sigset_t two;
    sigemptyset(&two);
    sigaddset(&two, SIGUSR2);
    printf("new mask: same fd %d\n", signalfd(fd, &two, 0) == fd);
    take(fd, 2, "USR2 with the new mask");

    /* epoll, edge-triggered. */
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN | EPOLLET, .data.u32 = 7}, out;
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
    printf("epoll with nothing: %d\n", epoll_wait(ep, &out, 1, 0));
    raise(SIGUSR2);
    int n = epoll_wait(ep, &out, 1, 0);
    printf("epoll after a signal: %d id %u events %#x\n", n, n > 0 ? out.data.u32 : 0,
           n > 0 ? out.events : 0);
    printf("epoll again (edge): %d\n", epoll_wait(ep, &out, 1, 0));
    take(fd, 1, "epoll's");

    /* A read into a bad buffer loses the signal, as Linux's. */
    void *none = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    void *volatile null = NULL; /* not a constant: no -Wnonnull */
    raise(SIGUSR2);
    printf("read into PROT_NONE: %s\n", res(read(fd, none, 128)));
    sigpending(&pend);
    printf("USR2 pending after: %d\n", sigismember(&pend, SIGUSR2));
    raise(SIGUSR2);
    printf("read into NULL: %s\n", res(read(fd, null, 128)));
    sigpending(&pend);
    printf("USR2 pending after: %d\n", sigismember(&pend, SIGUSR2));

    /* A blocking read in another thread, ended by a signal to the process. */
    blocking_fd = signalfd(-1, &want, 0);
    pthread_t t;
    pthread_create(&t, NULL, reader, NULL);
    struct timespec d = {0, 20 * 1000 * 1000};
    nanosleep(&d, NULL);
    v.sival_int = 43;
    sigqueue(getpid(), 40, v);
    pthread_join(t, NULL);

    /* A POSIX timer's signal. */
    timer_t tm;
    struct sigevent sev = {.sigev_notify = SIGEV_SIGNAL, .sigev_signo = 40};
    sev.sigev_value.sival_int = 77;
    timer_create(CLOCK_MONOTONIC, &sev, &tm);
    struct itimerspec when = {.it_value = {0, 2 * 1000 * 1000}};
    timer_settime(tm, 0, &when, NULL);
    take(blocking_fd, 1, "timer");
    timer_delete(tm);
    close(ep);
    close(fd);
    close(blocking_fd);
    return 0;
}
