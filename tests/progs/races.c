/* Races between wakers, signals and waiters that the host kernel gets right
 * every time, each repeated until a bad interleaving would be likely:
 *
 *  - a thread signalled right after pthread_create (it must exist: no ESRCH);
 *  - sem_timedwait against a sem_post at its deadline (a post is never lost:
 *    the successful waits plus what is left equal the posts);
 *  - an untimed FUTEX_WAIT after the thread's blocking read was interrupted
 *    by a signal, while writes to that pipe continue (never ETIMEDOUT);
 *  - shutdown(SHUT_RD) of a socket pair end wakes a reader blocked on it,
 *    and shutdown(SHUT_WR) a sender blocked on it (EPIPE);
 *  - a connected UDP socket reports an ICMP refusal once, then receives;
 *  - SO_RCVTIMEO ends blocking accept and receives with EAGAIN;
 *  - poll's events after shutting a TCP connection down one way, then both;
 *  - blocking pipe, eventfd and inotify calls interrupted by a signal whose
 *    handler has no SA_RESTART (EINTR), and one with SA_RESTART (restarted);
 *  - calls reading a struct from a page another thread maps and unmaps
 *    meanwhile: each succeeds or fails with EFAULT, and the process lives.
 *
 * Prints one line per case, the same on every run; exits 0 on success. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <poll.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#ifndef FUTEX_WAIT
#define FUTEX_WAIT 0
#define FUTEX_WAKE 1
#endif

static int failures;

static void check(const char *what, int ok) {
    if (!ok) {
        fprintf(stderr, "races: %s failed\n", what);
        failures++;
    }
}

static void sleep_us(long us) {
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* --- a signal right after pthread_create ----------------------------- */

static __thread volatile sig_atomic_t got_usr1;
static volatile int handled_total;

static void on_usr1(int sig) {
    (void)sig;
    got_usr1 = 1;
    __atomic_add_fetch(&handled_total, 1, __ATOMIC_SEQ_CST);
}

static void *wait_for_usr1(void *arg) {
    (void)arg;
    /* Bounded: a signal that never comes is reported, not waited for. */
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (!got_usr1) {
        sched_yield();
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (t.tv_sec - t0.tv_sec > 2)
            break;
    }
    return NULL;
}

static void create_then_kill(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    int n = 300, esrch = 0, other = 0;
    for (int i = 0; i < n; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, wait_for_usr1, NULL) != 0) {
            other++;
            continue;
        }
        int r = pthread_kill(t, SIGUSR1);
        if (r == ESRCH)
            esrch++;
        else if (r != 0)
            other++;
        pthread_join(t, NULL);
    }
    printf("create then kill: threads=%d esrch=%d other=%d handled=%d\n", n, esrch, other,
           handled_total);
    check("create then kill", esrch == 0 && other == 0 && handled_total == n);
}

/* --- sem_timedwait against sem_post at the deadline ------------------ */

static sem_t sem;
static volatile int post_delay_us;

static void *poster(void *arg) {
    int rounds = (int)(intptr_t)arg;
    for (int i = 0; i < rounds; i++) {
        sleep_us(post_delay_us);
        sem_post(&sem);
        sleep_us(300);
    }
    return NULL;
}

static void timed_sem(void) {
    int rounds = 600, got = 0;
    sem_init(&sem, 0, 0);
    pthread_t t;
    post_delay_us = 200;
    pthread_create(&t, NULL, poster, (void *)(intptr_t)rounds);
    for (int i = 0; i < rounds; i++) {
        struct timespec dl;
        clock_gettime(CLOCK_REALTIME, &dl);
        /* Around the poster's moment: some waits get the post, some time
         * out just as it comes. */
        dl.tv_nsec += (150 + (i % 5) * 25) * 1000;
        if (dl.tv_nsec >= 1000000000) {
            dl.tv_sec++;
            dl.tv_nsec -= 1000000000;
        }
        if (sem_timedwait(&sem, &dl) == 0)
            got++;
        else if (errno != ETIMEDOUT && errno != EINTR)
            check("sem_timedwait errno", 0);
    }
    pthread_join(t, NULL);
    int left = 0;
    while (sem_trywait(&sem) == 0)
        left++;
    printf("timed semaphore: posts=%d waits+left=%d\n", rounds, got + left);
    check("timed semaphore", got + left == rounds);
    sem_destroy(&sem);
}

/* --- FUTEX_WAIT after an interrupted read ----------------------------- */

static int pfd[2];
static volatile uint32_t word;
static volatile int read_rc, read_errno, futex_rc, futex_errno;
static volatile int reader_state;

static void on_usr2(int sig) { (void)sig; }

static void *eintr_then_futex(void *arg) {
    (void)arg;
    char c;
    reader_state = 1;
    read_rc = (int)read(pfd[0], &c, 1);
    read_errno = errno;
    reader_state = 2;
    futex_rc = (int)syscall(SYS_futex, &word, FUTEX_WAIT, 0, NULL, NULL, 0);
    futex_errno = errno;
    return NULL;
}

static void futex_after_eintr(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr2; /* no SA_RESTART: the read fails with EINTR */
    sigaction(SIGUSR2, &sa, NULL);
    int bad = 0;
    for (int round = 0; round < 20; round++) {
        if (pipe(pfd) != 0)
            return;
        word = 0;
        reader_state = 0;
        pthread_t t;
        pthread_create(&t, NULL, eintr_then_futex, NULL);
        while (reader_state != 1)
            sched_yield();
        sleep_us(2000);
        pthread_kill(t, SIGUSR2);
        while (reader_state != 2)
            sched_yield();
        sleep_us(2000);
        /* Wakes whoever waits to read the pipe: not the futex waiter. */
        for (int i = 0; i < 3; i++) {
            if (write(pfd[1], "x", 1) != 1)
                bad++;
            sleep_us(1000);
        }
        word = 1;
        syscall(SYS_futex, &word, FUTEX_WAKE, 1, NULL, NULL, 0);
        pthread_join(t, NULL);
        if (!(read_rc == -1 && read_errno == EINTR))
            bad++;
        if (!(futex_rc == 0 || (futex_rc == -1 && futex_errno == EAGAIN)))
            bad++;
        close(pfd[0]);
        close(pfd[1]);
    }
    printf("futex wait after an interrupted read: rounds=20 bad=%d\n", bad);
    check("futex after eintr", bad == 0);
}

/* --- shutdown(SHUT_RD) wakes a blocked reader ------------------------ */

static int sv[2];
static volatile int shut_read_rc = -2;

static void *blocked_reader(void *arg) {
    (void)arg;
    char c;
    shut_read_rc = (int)read(sv[0], &c, 1);
    return NULL;
}

static void shut_rd_wakes(void) {
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
        return;
    pthread_t t;
    pthread_create(&t, NULL, blocked_reader, NULL);
    sleep_us(20000);
    int r = shutdown(sv[0], SHUT_RD);
    pthread_join(t, NULL);
    printf("shutdown(SHUT_RD) of a socket pair: shutdown=%d blocked read=%d\n", r, shut_read_rc);
    check("shut_rd", r == 0 && shut_read_rc == 0);
    close(sv[0]);
    close(sv[1]);
}

/* --- shutdown(SHUT_WR) while another thread is blocked sending ------ */

static int wsv[2];
static volatile long blocked_send_rc = -2;
static volatile int blocked_send_errno;

static void *blocked_sender(void *arg) {
    (void)arg;
    char b[4096];
    memset(b, 's', sizeof b);
    blocked_send_rc = send(wsv[0], b, sizeof b, MSG_NOSIGNAL);
    blocked_send_errno = errno;
    return NULL;
}

static void shut_wr_wakes_sender(void) {
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, wsv) != 0)
        return;
    fcntl(wsv[0], F_SETFL, O_NONBLOCK);
    char b[4096];
    memset(b, 'f', sizeof b);
    long queued = 0, n;
    while ((n = send(wsv[0], b, sizeof b, MSG_NOSIGNAL)) > 0)
        queued += n;
    fcntl(wsv[0], F_SETFL, 0);
    pthread_t t;
    pthread_create(&t, NULL, blocked_sender, NULL);
    sleep_us(20000);
    int r = shutdown(wsv[0], SHUT_WR);
    pthread_join(t, NULL);
    /* The peer reads what was queued, then the end. */
    long got = 0;
    while ((n = read(wsv[1], b, sizeof b)) > 0)
        got += n;
    printf("shutdown(SHUT_WR) of a socket pair end: shutdown=%d blocked send=%s peer read all=%d "
           "then end=%d\n",
           r, blocked_send_rc == -1 && blocked_send_errno == EPIPE ? "EPIPE" : "other",
           got == queued, n == 0);
    check("shut_wr", r == 0 && blocked_send_rc == -1 && blocked_send_errno == EPIPE &&
                         got == queued && n == 0);
    close(wsv[0]);
    close(wsv[1]);
}

/* --- blocking calls interrupted by a signal -------------------------- */

static volatile int alarms;

static void on_alarm(int sig) {
    (void)sig;
    alarms++;
}

static void arm(int restart) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sa.sa_flags = restart ? SA_RESTART : 0;
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {{0, 0}, {0, 20000}};
    setitimer(ITIMER_REAL, &it, NULL);
}

static const char *outcome(long rc, int err) {
    if (rc >= 0)
        return "done";
    return err == EINTR ? "EINTR" : strerror(err);
}

static int drain_fd;

static void *drain_later(void *arg) {
    (void)arg;
    sleep_us(60000);
    char b[4096];
    for (int i = 0; i < 4; i++)
        if (read(drain_fd, b, sizeof b) <= 0)
            break;
    return NULL;
}

static void interrupted_calls(void) {
    /* A pipe write with no room. */
    int p[2];
    if (pipe(p) != 0)
        return;
    fcntl(p[1], F_SETFL, O_NONBLOCK);
    char buf[4096];
    memset(buf, 'p', sizeof buf);
    while (write(p[1], buf, sizeof buf) > 0) {
    }
    fcntl(p[1], F_SETFL, 0);
    arm(0);
    long rc = write(p[1], buf, 1);
    printf("pipe write, full pipe, signal: %s\n", outcome(rc, errno));
    check("pipe write eintr", rc == -1 && errno == EINTR);
    close(p[0]);
    close(p[1]);

    /* An eventfd write past the counter's limit. */
    int e = eventfd(0, 0);
    uint64_t v = 0xfffffffffffffffeULL;
    if (write(e, &v, 8) != 8)
        check("eventfd fill", 0);
    v = 1;
    arm(0);
    rc = write(e, &v, 8);
    printf("eventfd write, full counter, signal: %s\n", outcome(rc, errno));
    check("eventfd write eintr", rc == -1 && errno == EINTR);

    close(e);

    /* Under SA_RESTART a pipe write restarts after the handler, and ends
     * once another thread makes room (after the alarm). */
    if (pipe(p) != 0)
        return;
    fcntl(p[1], F_SETFL, O_NONBLOCK);
    while (write(p[1], buf, sizeof buf) > 0) {
    }
    fcntl(p[1], F_SETFL, 0);
    drain_fd = p[0];
    pthread_t t;
    pthread_create(&t, NULL, drain_later, NULL);
    arm(1);
    rc = write(p[1], buf, 1);
    pthread_join(t, NULL);
    printf("pipe write, full pipe, SA_RESTART signal: %s\n", outcome(rc, errno));
    check("pipe write restart", rc == 1);
    close(p[0]);
    close(p[1]);

    /* An inotify read with no event. */
    int in = inotify_init1(0);
    char dir[] = "races-inotify-XXXXXX"; /* in the working directory */
    if (in >= 0 && mkdtemp(dir) != NULL) {
        inotify_add_watch(in, dir, IN_CREATE);
        char ev[256];
        arm(0);
        rc = read(in, ev, sizeof ev);
        printf("inotify read, no event, signal: %s\n", outcome(rc, errno));
        check("inotify read eintr", rc == -1 && errno == EINTR);
        rmdir(dir);
    }
    if (in >= 0)
        close(in);
    printf("alarms handled: %d\n", alarms);
}

/* A socket of `type` bound to 127.0.0.1 on a port the kernel picks; its
 * address in `*a`. */
static int bound_loopback(int type, struct sockaddr_in *a) {
    socklen_t al = sizeof *a;
    memset(a, 0, sizeof *a);
    a->sin_family = AF_INET;
    a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int fd = socket(AF_INET, type, 0);
    bind(fd, (struct sockaddr *)a, sizeof *a);
    getsockname(fd, (struct sockaddr *)a, &al);
    return fd;
}

/* --- a connected UDP socket keeps receiving after a refusal ---------- */

static void on_alarm_quiet(int sig) { (void)sig; }

static void udp_after_refusal(void) {
    /* A port nobody listens on (bound, then closed). */
    struct sockaddr_in closed, sa;
    close(bound_loopback(SOCK_DGRAM, &closed));
    int s = bound_loopback(SOCK_DGRAM, &sa);
    connect(s, (struct sockaddr *)&closed, sizeof closed);
    send(s, "ping", 4, 0);
    sleep_us(50000);
    char b[16];
    long r1 = recv(s, b, sizeof b, MSG_DONTWAIT);
    int e1 = errno;
    /* Now a datagram from that port arrives: it is received. */
    int q = socket(AF_INET, SOCK_DGRAM, 0);
    int one = 1;
    setsockopt(q, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    bind(q, (struct sockaddr *)&closed, sizeof closed);
    sendto(q, "pong", 4, 0, (struct sockaddr *)&sa, sizeof sa);
    struct sigaction act;
    memset(&act, 0, sizeof act);
    act.sa_handler = on_alarm_quiet;
    sigaction(SIGALRM, &act, NULL);
    struct itimerval it = {{0, 0}, {2, 0}};
    setitimer(ITIMER_REAL, &it, NULL);
    long r2 = recv(s, b, sizeof b, 0);
    int e2 = errno;
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    printf("connected UDP after a refusal: first=%s then=%s\n",
           r1 < 0 ? (e1 == ECONNREFUSED ? "ECONNREFUSED" : strerror(e1)) : "data",
           r2 == 4 && memcmp(b, "pong", 4) == 0 ? "pong" : (r2 < 0 ? strerror(e2) : "other"));
    check("udp after refusal", r1 < 0 && e1 == ECONNREFUSED && r2 == 4);
    close(q);
    close(s);
}

/* --- SO_RCVTIMEO ends blocking accept and receives ------------------ */

static const char *after_timeout(long rc, int err) {
    if (rc >= 0)
        return "data";
    return err == EAGAIN ? "EAGAIN" : strerror(err);
}

static void socket_timeouts(void) {
    struct timeval tv = {0, 50000};
    struct sockaddr_in a;
    int l = bound_loopback(SOCK_STREAM, &a);
    listen(l, 4);
    setsockopt(l, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    long r = accept(l, NULL, NULL);
    const char *acc = after_timeout(r, errno);
    int c = socket(AF_INET, SOCK_STREAM, 0);
    connect(c, (struct sockaddr *)&a, sizeof a);
    int s = accept(l, NULL, NULL);
    setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char b[8];
    r = recv(c, b, sizeof b, 0);
    const char *rcv = after_timeout(r, errno);
    struct sockaddr_in ua;
    int u = bound_loopback(SOCK_DGRAM, &ua);
    setsockopt(u, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    r = recv(u, b, sizeof b, 0);
    const char *udp = after_timeout(r, errno);
    struct timeval bad = {0, 2000000};
    int br = setsockopt(u, SOL_SOCKET, SO_RCVTIMEO, &bad, sizeof bad);
    const char *badr = br == 0 ? "ok" : (errno == EDOM ? "EDOM" : strerror(errno));
    printf("SO_RCVTIMEO: accept=%s recv=%s udp recv=%s usec=2000000 %s\n", acc, rcv, udp, badr);
    check("socket timeouts", strcmp(acc, "EAGAIN") == 0 && strcmp(rcv, "EAGAIN") == 0 &&
                                 strcmp(udp, "EAGAIN") == 0 && strcmp(badr, "EDOM") == 0);
    /* Unix stream and datagram pairs, which live in the partition: a
     * receive ends with EAGAIN, and a blocking send into a full buffer
     * returns what went in, then EAGAIN. */
    const char *ux[2];
    for (int dg = 0; dg < 2; dg++) {
        int sp[2];
        socketpair(AF_UNIX, dg ? SOCK_DGRAM : SOCK_STREAM, 0, sp);
        setsockopt(sp[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        r = recv(sp[0], b, sizeof b, 0);
        ux[dg] = after_timeout(r, errno);
        close(sp[0]);
        close(sp[1]);
    }
    int sp[2];
    socketpair(AF_UNIX, SOCK_STREAM, 0, sp);
    setsockopt(sp[0], SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    static char big[1 << 20];
    long w1 = write(sp[0], big, sizeof big);
    long w2 = write(sp[0], big, sizeof big);
    int e2 = errno;
    printf("unix SO_RCVTIMEO: stream recv=%s dgram recv=%s; SO_SNDTIMEO: stream write %ld then %s\n",
           ux[0], ux[1], w1, after_timeout(w2, e2));
    check("unix socket timeouts", strcmp(ux[0], "EAGAIN") == 0 && strcmp(ux[1], "EAGAIN") == 0 &&
                                      w1 > 0 && w2 < 0 && e2 == EAGAIN);
    close(sp[0]);
    close(sp[1]);
    close(u);
    close(s);
    close(c);
    close(l);
}

/* --- poll after shutting a TCP connection down ------------------------ */

static void show_events(const char *when, short ev) {
    printf("  %s:%s%s%s%s%s\n", when, ev & POLLIN ? " IN" : "", ev & POLLOUT ? " OUT" : "",
           ev & POLLRDHUP ? " RDHUP" : "", ev & POLLHUP ? " HUP" : "", ev & POLLERR ? " ERR" : "");
}

static void poll_after_shutdown(void) {
    struct sockaddr_in a;
    int l = bound_loopback(SOCK_STREAM, &a);
    listen(l, 4);
    int c = socket(AF_INET, SOCK_STREAM, 0);
    connect(c, (struct sockaddr *)&a, sizeof a);
    int s = accept(l, NULL, NULL);
    struct pollfd p = {c, POLLIN | POLLOUT | POLLRDHUP, 0};
    printf("poll of a TCP connection:\n");
    poll(&p, 1, 0);
    show_events("connected", p.revents);
    shutdown(c, SHUT_WR);
    sleep_us(20000);
    poll(&p, 1, 0);
    show_events("after SHUT_WR", p.revents);
    shutdown(c, SHUT_RD);
    poll(&p, 1, 0);
    show_events("after SHUT_RD too", p.revents);
    close(s);
    close(c);
    close(l);
}

/* The page the flipper maps and unmaps, and the flipper's stop flag. */
static char *volatile flip_page;
static volatile int flip_stop;

static void *flipper(void *arg) {
    (void)arg;
    char *p = flip_page;
    while (!flip_stop) {
        munmap(p, 4096);
        sched_yield();
        void *q = mmap(p, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        if (q == MAP_FAILED) break;
        /* Valid contents for every call below: zero timespecs, an epoll
         * event, an empty signal set, a zero int. */
        memset(p, 0, 4096);
        sched_yield();
    }
    return NULL;
}

static void struct_args_unmapped(void) {
    flip_page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(flip_page, 0, 4096);
    int ep = epoll_create1(0);
    int efd = eventfd(0, EFD_NONBLOCK);
    int sock = socket(AF_INET, SOCK_DGRAM, 0);
    pthread_t t;
    pthread_create(&t, NULL, flipper, NULL);
    int other = 0;
    for (int i = 0; i < 3000; i++) {
        char *p = flip_page;
        long r;
        r = syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, (struct timespec *)p, NULL);
        if (r != 0 && errno != EFAULT) other++;
        r = epoll_ctl(ep, EPOLL_CTL_ADD, efd, (struct epoll_event *)p);
        if (r == 0) epoll_ctl(ep, EPOLL_CTL_DEL, efd, NULL);
        else if (errno != EFAULT) other++;
        r = syscall(SYS_rt_sigprocmask, SIG_BLOCK, (sigset_t *)p, NULL, 8);
        if (r != 0 && errno != EFAULT) other++;
        r = setsockopt(sock, SOL_SOCKET, SO_RCVBUF, p, sizeof(int));
        if (r != 0 && errno != EFAULT) other++;
        r = syscall(SYS_ppoll, NULL, 0, (struct timespec *)p, NULL, 8);
        if (r != 0 && errno != EFAULT) other++;
    }
    flip_stop = 1;
    pthread_join(t, NULL);
    close(sock);
    close(efd);
    close(ep);
    printf("struct arguments in a page being unmapped: other errors=%d\n", other);
    check("struct arguments in a page being unmapped", other == 0);
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    create_then_kill();
    timed_sem();
    futex_after_eintr();
    shut_rd_wakes();
    shut_wr_wakes_sender();
    udp_after_refusal();
    socket_timeouts();
    poll_after_shutdown();
    interrupted_calls();
    struct_args_unmapped();
    if (failures) {
        fprintf(stderr, "races: %d FAILED\n", failures);
        return 1;
    }
    printf("races: ok\n");
    return 0;
}
