/* Differential exerciser for epoll: the same calls on the host and in a
 * partition must print the same lines.
 *
 *   epolldiff DIR cases                  the hand-written cases: level vs
 *                                        edge triggering, EPOLLONESHOT,
 *                                        hang-ups, nesting, descriptor
 *                                        lifetime, EINTR, signal masks,
 *                                        timeouts, every error
 *   epolldiff DIR run SEED NSEEDS COUNT  random sequences: seeds
 *                                        SEED..SEED+NSEEDS-1, COUNT calls each
 *
 * A random sequence works on a table of slots holding pipe ends, eventfds,
 * timerfds (disarmed, expired or far in the future: nothing depends on
 * timing), epoll instances, Unix socket pairs, loopback TCP connections
 * (see `settle`: a TCP end is never shut for reading), dups of those and one
 * regular file in DIR, with pipe/socketpair/eventfd/timerfd/epoll_create1/
 * dup/close/write/read/send/recv (MSG_PEEK, MSG_DONTWAIT, MSG_WAITALL)/
 * shutdown/FIONREAD/SO_ERROR/epoll_ctl/epoll_wait(timeout 0)/poll calls. Each line is "INDEX CALL ARGS = RESULT";
 * descriptors are printed as slot numbers, epoll events sorted by data.
 * Each sequence starts from a clean table. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_epoll_pwait2
#define SYS_epoll_pwait2 441
#endif
#ifndef EPOLLEXCLUSIVE
#define EPOLLEXCLUSIVE (1u << 28)
#endif

static const char *ename(int e) {
    static char buf[16];
    switch (e) {
#define E(x) case x: return #x;
        E(EPERM) E(ENOENT) E(EINTR) E(EBADF) E(EAGAIN) E(EFAULT) E(EEXIST) E(EINVAL)
        E(ELOOP) E(ENOSYS) E(EPIPE) E(ENOMEM) E(EMFILE) E(ENOTSOCK) E(ENOTCONN) E(EOPNOTSUPP)
#undef E
    default:
        snprintf(buf, sizeof buf, "E%d", e);
        return buf;
    }
}

static void evtext(uint32_t ev) {
    static const struct {
        uint32_t bit;
        const char *name;
    } names[] = {
        {EPOLLIN, "IN"}, {EPOLLPRI, "PRI"}, {EPOLLOUT, "OUT"}, {EPOLLERR, "ERR"},
        {EPOLLHUP, "HUP"}, {EPOLLRDNORM, "RDNORM"}, {EPOLLRDBAND, "RDBAND"},
        {EPOLLWRNORM, "WRNORM"}, {EPOLLWRBAND, "WRBAND"}, {EPOLLMSG, "MSG"},
        {EPOLLRDHUP, "RDHUP"},
    };
    int any = 0;
    for (unsigned k = 0; k < sizeof names / sizeof *names; k++)
        if (ev & names[k].bit) {
            printf("%s%s", any ? "|" : "", names[k].name);
            ev &= ~names[k].bit;
            any = 1;
        }
    if (ev)
        printf("%s%#x", any ? "|" : "", ev);
    else if (!any)
        printf("0");
}

static int cmp_ev(const void *a, const void *b) {
    const struct epoll_event *x = a, *y = b;
    if (x->data.u64 != y->data.u64)
        return x->data.u64 < y->data.u64 ? -1 : 1;
    return x->events < y->events ? -1 : x->events > y->events;
}

/* Prints " = N [events:data ...]" or " = ERRNO" for a wait's result. */
static void waited(int n, struct epoll_event *ev) {
    if (n < 0) {
        printf(" = %s\n", ename(errno));
        return;
    }
    qsort(ev, (size_t)n, sizeof *ev, cmp_ev);
    printf(" = %d", n);
    for (int k = 0; k < n; k++) {
        printf(" ");
        evtext(ev[k].events);
        printf(":%llx", (unsigned long long)ev[k].data.u64);
    }
    printf("\n");
}

static void res(long r) {
    if (r < 0)
        printf(" = %s\n", ename(errno));
    else
        printf(" = %ld\n", r);
}

/* ---- random sequences ---- */

static uint64_t rng;
static uint64_t next(void) {
    uint64_t z = (rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
static unsigned pick(unsigned n) { return (unsigned)(next() % n); }

enum kind { FREE, PIPE_R, PIPE_W, EVENT, TIMER, EPOLL, FILE_, SOCK, TCP, ULIS };
static const char *kname[] = {"free", "piper", "pipew", "eventfd", "timerfd", "epoll", "file", "sock", "tcp",
                              "ulisten"};
#define NSLOTS 12
static struct {
    int fd;
    enum kind kind;
    /* TCP: the connection and which end (0 dialed, 1 accepted). */
    int conn, side;
} slot[NSLOTS];

/* TCP connections over loopback (through the gateway in a partition),
 * whose bytes and FINs arrive asynchronously: after every call the
 * program waits until what it knows is under way has arrived (`settle`),
 * so that both runs print the same. */
#define NCONNS NSLOTS
static struct {
    int used;
    int shut_wr[2], closed[2];
    /* Bytes sent towards end i, not yet received by it. */
    long inflight[2];
    /* End i is to see a reset (its peer closed with bytes unread, or it
     * sent after the peer closed). */
    int reset[2];
} conn[NCONNS];

static int tcp_fd(int c, int side) {
    for (int k = 0; k < NSLOTS; k++)
        if (slot[k].kind == TCP && slot[k].conn == c && slot[k].side == side)
            return slot[k].fd;
    return -1;
}

/* Waits (at most 5 s) until every open TCP end shows what its peer did:
 * the bytes sent to it (FIONREAD), the peer's FIN (POLLRDHUP), a reset
 * (POLLHUP). */
static void settle(void) {
    for (int c = 0; c < NCONNS; c++) {
        if (!conn[c].used)
            continue;
        for (int i = 0; i < 2; i++) {
            int fd = tcp_fd(c, i);
            if (fd < 0)
                continue;
            for (int tries = 0;; tries++) {
                int avail = 0;
                struct pollfd p = {.fd = fd, .events = POLLIN | POLLRDHUP};
                ioctl(fd, FIONREAD, &avail);
                poll(&p, 1, 0);
                int ok = conn[c].reset[i] ? (p.revents & POLLHUP) != 0
                                          : avail >= conn[c].inflight[i] &&
                                                (!(conn[c].shut_wr[1 - i] || conn[c].closed[1 - i]) ||
                                                 (p.revents & POLLRDHUP));
                if (ok)
                    break;
                if (tries == 5000) {
                    fprintf(stderr,
                            "epolldiff: tcp connection %d end %d did not settle (FIONREAD %d of %ld, "
                            "revents %#x, peer shut %d closed %d, reset %d)\n",
                            c, i, avail, conn[c].inflight[i], p.revents, conn[c].shut_wr[1 - i],
                            conn[c].closed[1 - i], conn[c].reset[i]);
                    break;
                }
                struct timespec ts = {0, 1000 * 1000};
                nanosleep(&ts, NULL);
            }
        }
    }
}

/* Bookkeeping for `settle` after a call on slot s. */
static void tcp_sent(int s, long r) {
    if (s < 0 || slot[s].kind != TCP || r <= 0)
        return;
    int c = slot[s].conn, i = slot[s].side;
    if (conn[c].closed[1 - i])
        conn[c].reset[i] = 1;
    else
        conn[c].inflight[1 - i] += r;
}
static void tcp_received(int s, long r) {
    if (s >= 0 && slot[s].kind == TCP && r > 0)
        conn[slot[s].conn].inflight[slot[s].side] -= r;
}
static void tcp_shut(int s, int how) {
    if (s >= 0 && slot[s].kind == TCP && (how == SHUT_WR || how == SHUT_RDWR)) {
        conn[slot[s].conn].shut_wr[slot[s].side] = 1;
        /* Linux's peer delays the ACK of a FIN (it expects to close soon);
         * its arrival changes this end's state, which wakes an
         * edge-triggered registration again, when the peer next sends or
         * 40 ms later. Waited for here, where it joins the shutdown's own
         * wake-up as in a partition (which has no TCP_INFO: no wait). */
        struct tcp_info ti;
        for (int k = 0; k < 500; k++) {
            socklen_t l = sizeof ti;
            if (getsockopt(slot[s].fd, IPPROTO_TCP, TCP_INFO, &ti, &l) != 0 ||
                (ti.tcpi_state != TCP_FIN_WAIT1 && ti.tcpi_state != TCP_LAST_ACK &&
                 ti.tcpi_state != TCP_CLOSING))
                break;
            struct timespec ts = {0, 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
}
/* After slot s was closed (its kind still TCP). */
static void tcp_closed(int s) {
    if (slot[s].kind != TCP)
        return;
    int c = slot[s].conn, i = slot[s].side;
    slot[s].kind = FREE;
    if (tcp_fd(c, i) >= 0)
        return;
    conn[c].closed[i] = 1;
    if (conn[c].inflight[i] > 0 && !conn[c].closed[1 - i])
        conn[c].reset[1 - i] = 1;
    if (conn[c].closed[1 - i])
        conn[c].used = 0;
}

/* A connected pair over loopback, both ends non-blocking. */
static int tcp_pair(int fds[2]) {
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    if (l < 0 || bind(l, (void *)&a, sizeof a) || listen(l, 1) || getsockname(l, (void *)&a, &al))
        return -1;
    fds[0] = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(fds[0], (void *)&a, sizeof a))
        return -1;
    fds[1] = accept4(l, NULL, NULL, SOCK_NONBLOCK);
    close(l);
    fcntl(fds[0], F_SETFL, O_NONBLOCK);
    return fds[1] < 0 ? -1 : 0;
}
static char root[4096];

static int free_slot(void) {
    for (int k = 0; k < NSLOTS; k++)
        if (slot[k].kind == FREE)
            return k;
    return -1;
}
/* A slot of a kind in `mask` (bits of enum kind), or -1. */
static int some_slot(unsigned mask) {
    int c[NSLOTS], n = 0;
    for (int k = 0; k < NSLOTS; k++)
        if (mask & (1u << slot[k].kind))
            c[n++] = k;
    return n ? c[pick((unsigned)n)] : -1;
}
#define ANY_OPEN (~1u)

static int unix_names;
static void unix_path(char *out, size_t n, int k);

static void reset(void) {
    for (int k = 0; k < NSLOTS; k++) {
        if (slot[k].kind != FREE)
            close(slot[k].fd);
        slot[k].kind = FREE;
        slot[k].fd = -1;
    }
    memset(conn, 0, sizeof conn);
    for (int k = 0; k < unix_names; k++) {
        char path[4200];
        unix_path(path, sizeof path, k);
        unlink(path);
    }
    unix_names = 0;
}

static uint32_t rand_events(void) {
    static const uint32_t bits[] = {EPOLLIN, EPOLLOUT, EPOLLRDHUP, EPOLLPRI, EPOLLET,
                                    EPOLLONESHOT, EPOLLRDNORM, EPOLLWRNORM, EPOLLERR};
    uint32_t ev = 0;
    unsigned n = 1 + pick(3);
    for (unsigned k = 0; k < n; k++)
        ev |= bits[pick(sizeof bits / sizeof *bits)];
    if (pick(40) == 0)
        ev |= EPOLLEXCLUSIVE;
    return ev;
}

/* Unix sockets bound to paths in the run's directory, `unix_names` of
 * them so far in this sequence. */
static void unix_path(char *out, size_t n, int k) {
    /* Relative to the run's directory (main changes to it): a socket's
     * path must fit its 108 bytes. */
    snprintf(out, n, "ed%d.sock", k);
}

/* Listening Unix sockets, their connections and accepts (connected ends
 * are `sock` slots, as a pair's). */
static void unix_call(unsigned what) {
    char path[64];
    /* Connections need a listener: make one first. */
    if (some_slot(1u << ULIS) < 0 && pick(2))
        what = 0;
    if (what == 0) {
        int a = free_slot();
        int backlog = (int)pick(3);
        printf("ulisten %d", backlog);
        if (a < 0) {
            printf(" = full\n");
            return;
        }
        int k = unix_names++;
        unix_path(path, sizeof path, k);
        unlink(path);
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
        if (fd < 0 || bind(fd, (void *)&sa, sizeof sa) || listen(fd, backlog)) {
            res(-1);
            if (fd >= 0)
                close(fd);
            return;
        }
        slot[a].fd = fd;
        slot[a].kind = ULIS;
        slot[a].conn = k;
        printf(" = s%d (u%d)\n", a, k);
    } else if (what == 1) {
        int l = pick(6) ? some_slot(1u << ULIS) : -1;
        /* A name no socket is bound to any more, now and then. */
        int k = l >= 0 ? slot[l].conn : unix_names ? (int)pick((unsigned)unix_names) : 0;
        int a = free_slot();
        printf("uconnect u%d", k);
        if (a < 0) {
            printf(" = full\n");
            return;
        }
        unix_path(path, sizeof path, k);
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
        if (connect(fd, (void *)&sa, sizeof sa)) {
            res(-1);
            close(fd);
            return;
        }
        slot[a].fd = fd;
        slot[a].kind = SOCK;
        printf(" = s%d\n", a);
    } else {
        int l = pick(8) ? some_slot(1u << ULIS) : some_slot(ANY_OPEN);
        int a = free_slot();
        printf("uaccept s%d", l);
        if (l < 0 || a < 0) {
            printf(" = skip\n");
            return;
        }
        int fd = accept4(slot[l].fd, NULL, NULL, SOCK_NONBLOCK);
        if (fd < 0) {
            res(fd);
            return;
        }
        slot[a].fd = fd;
        slot[a].kind = SOCK;
        printf(" = s%d\n", a);
    }
}

/* A socket call on a socket pair end (or, now and then, another kind):
 * send, recv with flags, shutdown, FIONREAD, SO_ERROR; or one of Unix
 * listeners. */
static void sock_call(void) {
    unsigned what = pick(9);
    if (what >= 6) {
        unsigned u = pick(8);
        unix_call(u < 2 ? 0 : u < 5 ? 1 : 2);
        return;
    }
    int s = pick(8) ? some_slot(1u << SOCK | 1u << TCP) : some_slot(ANY_OPEN);
    int fd = s < 0 ? -1 : slot[s].fd;
    char buf[64];
    if (what == 0) {
        unsigned n = pick(40), fl = pick(3);
        memset(buf, 'A' + (int)pick(26), sizeof buf);
        printf("send s%d %u%s", s, n, fl == 1 ? " NOSIGNAL" : fl == 2 ? " DONTWAIT" : "");
        long r = send(fd, buf, n, fl == 1 ? MSG_NOSIGNAL : fl == 2 ? MSG_DONTWAIT : 0);
        tcp_sent(s, r);
        res(r);
    } else if (what <= 2) {
        static const int flags[] = {0, MSG_PEEK, MSG_DONTWAIT, MSG_WAITALL, MSG_PEEK | MSG_WAITALL};
        static const char *fname[] = {"", " PEEK", " DONTWAIT", " WAITALL", " PEEK|WAITALL"};
        unsigned f = pick(5), n = pick(40);
        printf("recv s%d %u%s", s, n, fname[f]);
        memset(buf, 0, sizeof buf);
        long r = recv(fd, buf, n, flags[f]);
        if (!(flags[f] & MSG_PEEK))
            tcp_received(s, r);
        if (r > 0)
            printf(" = %ld '%.*s'\n", r, (int)r, buf);
        else
            res(r);
    } else if (what == 3) {
        int how = (int)pick(4);
        /* A TCP end shut for reading answers later data with a reset at
         * a time the program cannot wait for: only SHUT_WR there. */
        if (s >= 0 && slot[s].kind == TCP && how != 3)
            how = SHUT_WR;
        printf("shutdown s%d %d", s, how);
        long r = shutdown(fd, how == 3 ? 7 : how);
        if (r == 0)
            tcp_shut(s, how);
        res(r);
    } else if (what == 4) {
        int v = -1;
        printf("FIONREAD s%d", s);
        long r = ioctl(fd, FIONREAD, &v);
        if (r == 0)
            printf(" = %d\n", v);
        else
            res(r);
    } else {
        int v = -1;
        socklen_t l = sizeof v;
        printf("SO_ERROR s%d", s);
        long r = getsockopt(fd, SOL_SOCKET, SO_ERROR, &v, &l);
        if (r == 0)
            printf(" = %d\n", v);
        else
            res(r);
    }
}

static void call(unsigned i) {
    unsigned op = pick(100);
    printf("%u ", i);
    if (op < 8) {
        int a = free_slot(), fds[2];
        int sock = pick(3), c = 0;
        while (c < NCONNS && conn[c].used)
            c++;
        if (sock == 2 && (c == NCONNS || some_slot(1u << FREE) < 0)) {
            printf("tcp pair = skip\n");
            return;
        }
        /* Both ends need a slot (a TCP end never goes alone). */
        int spare = 0;
        for (int k = 0; k < NSLOTS; k++)
            spare += slot[k].kind == FREE;
        if (sock == 2 && spare < 2) {
            printf("tcp pair = full\n");
            return;
        }
        printf(sock == 2 ? "tcp pair" : sock ? "socketpair" : "pipe2");
        long r = a < 0       ? (errno = EMFILE, -1)
                 : sock == 2 ? tcp_pair(fds)
                 : sock      ? socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds)
                             : pipe2(fds, O_NONBLOCK);
        if (r == 0) {
            slot[a].fd = fds[0];
            slot[a].kind = sock == 2 ? TCP : sock ? SOCK : PIPE_R;
            slot[a].conn = c;
            slot[a].side = 0;
            int b = free_slot();
            if (b < 0) {
                close(fds[1]);
                printf(" = s%d\n", a);
                return;
            }
            slot[b].fd = fds[1];
            slot[b].kind = sock == 2 ? TCP : sock ? SOCK : PIPE_W;
            slot[b].conn = c;
            slot[b].side = 1;
            if (sock == 2) {
                memset(&conn[c], 0, sizeof conn[c]);
                conn[c].used = 1;
            }
            printf(" = s%d s%d\n", a, b);
        } else
            res(r);
    } else if (op < 13) {
        int a = free_slot();
        unsigned init = pick(3), sem = pick(2);
        printf("eventfd %u%s", init, sem ? " SEMAPHORE" : "");
        if (a < 0) {
            printf(" = full\n");
            return;
        }
        int fd = eventfd(init, EFD_NONBLOCK | (sem ? EFD_SEMAPHORE : 0));
        if (fd >= 0) {
            slot[a].fd = fd;
            slot[a].kind = EVENT;
            printf(" = s%d\n", a);
        } else
            res(fd);
    } else if (op < 17) {
        int a = free_slot();
        unsigned how = pick(3);
        printf("timerfd %s", how == 0 ? "disarmed" : how == 1 ? "expired" : "future");
        if (a < 0) {
            printf(" = full\n");
            return;
        }
        int fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
        if (fd < 0) {
            res(fd);
            return;
        }
        struct itimerspec its = {0};
        if (how == 1)
            its.it_value.tv_nsec = 1; /* absolute: long past */
        else if (how == 2)
            its.it_value.tv_sec = 1000000000;
        timerfd_settime(fd, TFD_TIMER_ABSTIME, &its, NULL);
        slot[a].fd = fd;
        slot[a].kind = TIMER;
        printf(" = s%d\n", a);
    } else if (op < 23) {
        int a = free_slot();
        unsigned fl = pick(4);
        int flags = fl == 0 ? 0 : fl == 1 ? EPOLL_CLOEXEC : fl == 2 ? 1 : EPOLL_CLOEXEC;
        printf("epoll_create1 %#x", flags);
        if (a < 0) {
            printf(" = full\n");
            return;
        }
        int fd = epoll_create1(flags);
        if (fd >= 0) {
            slot[a].fd = fd;
            slot[a].kind = EPOLL;
            printf(" = s%d\n", a);
        } else
            res(fd);
    } else if (op < 25) {
        int a = free_slot();
        printf("open file");
        if (a < 0 || some_slot(1u << FILE_) >= 0) {
            printf(" = skip\n");
            return;
        }
        char path[4200];
        snprintf(path, sizeof path, "%s/epolldiff.file", root);
        int fd = open(path, O_RDWR | O_CREAT, 0644);
        if (fd >= 0) {
            slot[a].fd = fd;
            slot[a].kind = FILE_;
            printf(" = s%d\n", a);
        } else
            res(fd);
    } else if (op < 32) {
        int s = some_slot(ANY_OPEN), a = free_slot();
        printf("dup s%d", s);
        if (s < 0 || a < 0) {
            printf(" = skip\n");
            return;
        }
        int fd = dup(slot[s].fd);
        if (fd >= 0) {
            slot[a].fd = fd;
            slot[a].kind = slot[s].kind;
            slot[a].conn = slot[s].conn;
            slot[a].side = slot[s].side;
            printf(" = s%d\n", a);
        } else
            res(fd);
    } else if (op < 40) {
        int s = some_slot(ANY_OPEN);
        printf("close s%d", s);
        if (s < 0) {
            printf(" = skip\n");
            return;
        }
        long r = close(slot[s].fd);
        tcp_closed(s);
        slot[s].kind = FREE;
        res(r);
    } else if (op < 50) {
        int s = some_slot(1u << PIPE_W | 1u << EVENT | 1u << PIPE_R | 1u << SOCK | 1u << TCP);
        printf("write s%d", s);
        if (s < 0) {
            printf(" = skip\n");
            return;
        }
        if (slot[s].kind == EVENT) {
            uint64_t v = pick(3);
            printf(" %llu", (unsigned long long)v);
            res(write(slot[s].fd, &v, 8));
        } else {
            char buf[64];
            unsigned n = 1 + pick(40);
            memset(buf, 'a' + (int)pick(26), n);
            printf(" %u", n);
            long r = write(slot[s].fd, buf, n);
            tcp_sent(s, r);
            res(r);
        }
    } else if (op < 60) {
        int s = some_slot(1u << PIPE_R | 1u << EVENT | 1u << TIMER | 1u << EPOLL | 1u << SOCK | 1u << TCP);
        printf("read s%d", s);
        if (s < 0) {
            printf(" = skip\n");
            return;
        }
        if (slot[s].kind == PIPE_R || slot[s].kind == SOCK || slot[s].kind == TCP) {
            char buf[64];
            unsigned n = 1 + pick(40);
            printf(" %u", n);
            long r = read(slot[s].fd, buf, n);
            tcp_received(s, r);
            res(r);
        } else {
            uint64_t v = 0;
            long r = read(slot[s].fd, &v, 8);
            if (r == 8)
                printf(" = %llu\n", (unsigned long long)v);
            else
                res(r);
        }
    } else if (op < 80) {
        int e = pick(8) ? some_slot(1u << EPOLL) : some_slot(ANY_OPEN);
        int t = pick(12) ? some_slot(ANY_OPEN) : some_slot(1u);
        static const int ops[] = {EPOLL_CTL_ADD, EPOLL_CTL_ADD, EPOLL_CTL_MOD, EPOLL_CTL_MOD,
                                  EPOLL_CTL_DEL, EPOLL_CTL_ADD, 7};
        int o = ops[pick(sizeof ops / sizeof *ops)];
        struct epoll_event ev = {.events = rand_events(), .data.u64 = 0x100 + pick(16)};
        int efd = e < 0 ? -1 : slot[e].fd, tfd = t < 0 ? 99 : slot[t].fd;
        if (t >= 0 && slot[t].kind == FREE)
            tfd = 200 + t;
        printf("epoll_ctl s%d %s s%d(%s) ", e,
               o == EPOLL_CTL_ADD ? "ADD" : o == EPOLL_CTL_MOD ? "MOD" : o == EPOLL_CTL_DEL ? "DEL" : "7",
               t, t >= 0 ? kname[slot[t].kind] : "-");
        evtext(ev.events & ~(EPOLLET | EPOLLONESHOT | EPOLLEXCLUSIVE));
        printf("%s%s%s:%llx", ev.events & EPOLLET ? "|ET" : "", ev.events & EPOLLONESHOT ? "|ONESHOT" : "",
               ev.events & EPOLLEXCLUSIVE ? "|EXCLUSIVE" : "", (unsigned long long)ev.data.u64);
        res(epoll_ctl(efd, o, tfd, &ev));
    } else if (op < 88) {
        sock_call();
    } else if (op < 93) {
        int e = pick(10) ? some_slot(1u << EPOLL) : some_slot(ANY_OPEN);
        /* Room for every registration: which of several ready ones a
         * smaller buffer gets depends on Linux's ready-list order, which a
         * partition does not follow (docs/linux.md). */
        int max = pick(12) ? NSLOTS + (int)pick(4) : -(int)pick(2);
        printf("epoll_wait s%d max %d", e, max);
        struct epoll_event ev[NSLOTS + 4];
        int n = epoll_wait(e < 0 ? -1 : slot[e].fd, ev, max, 0);
        waited(n, ev);
    } else {
        struct pollfd p[NSLOTS];
        int n = 0;
        printf("poll");
        for (int k = 0; k < NSLOTS; k++)
            if (slot[k].kind != FREE) {
                p[n].fd = slot[k].fd;
                p[n].events = POLLIN | POLLOUT | POLLPRI | POLLRDHUP;
                p[n].revents = 0;
                printf(" s%d", k);
                n++;
            }
        int r = poll(p, (nfds_t)n, 0);
        if (r < 0) {
            res(r);
            return;
        }
        printf(" = %d", r);
        for (int k = 0; k < n; k++) {
            printf(" ");
            evtext((uint32_t)p[k].revents);
        }
        printf("\n");
    }
    fflush(stdout);
}

/* ---- hand-written cases ---- */

static int ep(void) { return epoll_create1(0); }
static void add(int e, int fd, uint32_t events, uint64_t data) {
    struct epoll_event ev = {.events = events, .data.u64 = data};
    if (epoll_ctl(e, EPOLL_CTL_ADD, fd, &ev) < 0)
        printf("  (add failed: %s)\n", ename(errno));
}
static void w(const char *what, int e, int timeout) {
    struct epoll_event ev[8];
    printf("%s", what);
    waited(epoll_wait(e, ev, 8, timeout), ev);
}
static void ctl(const char *what, int e, int op, int fd, uint32_t events, uint64_t data) {
    struct epoll_event ev = {.events = events, .data.u64 = data};
    printf("%s", what);
    res(epoll_ctl(e, op, fd, &ev));
}

static volatile int handled;
static void on_usr1(int sig) {
    (void)sig;
    handled++;
}
static pid_t main_tid;
static int late_pipe = -1;
/* Sends SIGUSR1 to the main thread after 50 ms, then (if late_pipe is set)
 * writes a byte to it 50 ms later. */
static void *interrupter(void *arg) {
    (void)arg;
    usleep(50000);
    syscall(SYS_tgkill, getpid(), main_tid, SIGUSR1);
    if (late_pipe >= 0) {
        usleep(50000);
        if (write(late_pipe, "z", 1) != 1)
            _exit(3);
    }
    return NULL;
}

static int arm_fd = -1;
/* Arms arm_fd to expire 20 ms after 50 ms. */
static void *arm_later(void *arg) {
    (void)arg;
    usleep(50000);
    struct itimerspec its = {.it_value = {0, 20000000}};
    timerfd_settime(arm_fd, 0, &its, NULL);
    return NULL;
}

static int write_fd = -1;
/* Writes a byte to write_fd after 50 ms. */
static void *write_later(void *arg) {
    (void)arg;
    usleep(50000);
    if (write(write_fd, "w", 1) != 1)
        _exit(3);
    return NULL;
}

static void cases(void) {
    int p[2], e, e2;
    char buf[64];

    printf("-- errors\n");
    printf("epoll_create1(1)");
    res(epoll_create1(1));
    printf("epoll_create1(O_NONBLOCK)");
    res(epoll_create1(O_NONBLOCK));
    printf("epoll_create(0)");
    res(syscall(SYS_epoll_create, 0));
    printf("epoll_create(-1)");
    res(syscall(SYS_epoll_create, -1));
    e = (int)syscall(SYS_epoll_create, 1);
    printf("epoll_create(1) ok=%d\n", e >= 0);
    printf("F_GETFD cloexec=%d\n", fcntl(e, F_GETFD));
    close(e);
    e = epoll_create1(EPOLL_CLOEXEC);
    printf("EPOLL_CLOEXEC F_GETFD=%d F_GETFL=%#x\n", fcntl(e, F_GETFD), fcntl(e, F_GETFL));
    if (pipe2(p, O_NONBLOCK) < 0)
        return;
    ctl("add self", e, EPOLL_CTL_ADD, e, EPOLLIN, 1);
    ctl("add closed fd", e, EPOLL_CTL_ADD, 500, EPOLLIN, 1);
    ctl("add to closed epfd", 500, EPOLL_CTL_ADD, p[0], EPOLLIN, 1);
    ctl("add to a pipe", p[1], EPOLL_CTL_ADD, p[0], EPOLLIN, 1);
    ctl("op 0", e, 0, p[0], EPOLLIN, 1);
    ctl("mod missing", e, EPOLL_CTL_MOD, p[0], EPOLLIN, 1);
    ctl("del missing", e, EPOLL_CTL_DEL, p[0], EPOLLIN, 1);
    ctl("add", e, EPOLL_CTL_ADD, p[0], EPOLLIN, 1);
    ctl("add again", e, EPOLL_CTL_ADD, p[0], EPOLLIN, 1);
    printf("add bad event pointer");
    res(epoll_ctl(e, EPOLL_CTL_ADD, p[1], (struct epoll_event *)8));
    printf("add NULL event");
    res(epoll_ctl(e, EPOLL_CTL_ADD, p[1], NULL));
    printf("del NULL event");
    res(epoll_ctl(e, EPOLL_CTL_DEL, p[0], NULL));
    ctl("add EXCLUSIVE", e, EPOLL_CTL_ADD, p[0], EPOLLIN | EPOLLEXCLUSIVE, 1);
    ctl("mod EXCLUSIVE", e, EPOLL_CTL_MOD, p[0], EPOLLIN | EPOLLEXCLUSIVE, 1);
    ctl("mod of EXCLUSIVE", e, EPOLL_CTL_MOD, p[0], EPOLLIN, 1);
    ctl("add EXCLUSIVE|RDHUP", e, EPOLL_CTL_ADD, p[1], EPOLLOUT | EPOLLEXCLUSIVE | EPOLLRDHUP, 1);
    ctl("add EXCLUSIVE|ONESHOT", e, EPOLL_CTL_ADD, p[1], EPOLLOUT | EPOLLEXCLUSIVE | EPOLLONESHOT, 1);
    e2 = ep();
    ctl("add EXCLUSIVE epoll", e, EPOLL_CTL_ADD, e2, EPOLLIN | EPOLLEXCLUSIVE, 1);
    close(e2);
    char path[4200];
    snprintf(path, sizeof path, "%s/epolldiff.regular", root);
    int f = open(path, O_RDWR | O_CREAT, 0644);
    ctl("add regular file", e, EPOLL_CTL_ADD, f, EPOLLIN, 1);
    ctl("mod regular file", e, EPOLL_CTL_MOD, f, EPOLLIN, 1);
    ctl("add regular file to a non-epoll", p[0], EPOLL_CTL_ADD, f, EPOLLIN, 1);
    close(f);
    unlink(path);
    int d = open(root, O_RDONLY | O_DIRECTORY);
    ctl("add directory", e, EPOLL_CTL_ADD, d, EPOLLIN, 1);
    close(d);
    int dn = open("/dev/null", O_RDWR);
    ctl("add /dev/null", e, EPOLL_CTL_ADD, dn, EPOLLIN, 1);
    close(dn);
    struct epoll_event evs[4];
    printf("wait max 0");
    res(epoll_wait(e, evs, 0, 0));
    printf("wait max -1");
    res(syscall(SYS_epoll_wait, e, evs, -1, 0));
    printf("wait on a pipe");
    res(epoll_wait(p[0], evs, 4, 0));
    printf("wait on a closed fd");
    res(epoll_wait(600, evs, 4, 0));
    printf("read epoll fd");
    res(read(e, buf, 8));
    printf("write epoll fd");
    res(write(e, buf, 8));
    printf("pwait bad sigsetsize");
    sigset_t none;
    sigemptyset(&none);
    res(syscall(SYS_epoll_pwait, e, evs, 4, 0, &none, 4));
    struct timespec bad = {0, 1000000000};
    printf("pwait2 bad timespec");
    res(syscall(SYS_epoll_pwait2, e, evs, 4, &bad, NULL, 8));
    close(e);
    close(p[0]);
    close(p[1]);

    printf("-- level vs edge (pipe)\n");
    pipe2(p, O_NONBLOCK);
    e = ep();
    e2 = ep();
    add(e, p[0], EPOLLIN, 0x11);
    add(e2, p[0], EPOLLIN | EPOLLET, 0x22);
    w("LT empty", e, 0);
    w("ET empty", e2, 0);
    write(p[1], "abc", 3);
    w("LT after write", e, 0);
    w("LT again", e, 0);
    w("ET after write", e2, 0);
    w("ET again", e2, 0);
    read(p[0], buf, 1);
    w("ET after partial read", e2, 0);
    write(p[1], "d", 1);
    w("ET after second write", e2, 0);
    read(p[0], buf, 64);
    w("LT drained", e, 0);
    w("ET drained", e2, 0);
    add(e, p[1], EPOLLOUT | EPOLLET, 0x33);
    w("ET write end", e, 0);
    w("ET write end again", e, 0);
    write(p[1], "x", 1);
    w("ET write end after write", e, 0);
    read(p[0], buf, 64);
    w("ET write end after read", e, 0);
    ctl("MOD write end", e, EPOLL_CTL_MOD, p[1], EPOLLOUT | EPOLLET, 0x34);
    w("ET write end after MOD", e, 0);
    close(e);
    close(e2);

    printf("-- level vs edge (eventfd)\n");
    int ev = eventfd(0, EFD_NONBLOCK);
    e = ep();
    add(e, ev, EPOLLIN | EPOLLOUT | EPOLLET, 0x44);
    w("ET eventfd", e, 0);
    w("ET eventfd again", e, 0);
    uint64_t one = 1, zero = 0, got;
    write(ev, &one, 8);
    w("ET after write 1", e, 0);
    write(ev, &zero, 8);
    w("ET after write 0", e, 0);
    read(ev, &got, 8);
    w("ET after read", e, 0);
    ctl("MOD IN only", e, EPOLL_CTL_MOD, ev, EPOLLIN | EPOLLET, 0x45);
    w("ET IN only, empty", e, 0);
    write(ev, &one, 8);
    read(ev, &got, 8);
    w("ET IN only after write+read", e, 0);
    close(e);
    close(ev);

    printf("-- oneshot\n");
    e = ep();
    add(e, p[0], EPOLLIN | EPOLLONESHOT, 0x55);
    write(p[1], "a", 1);
    w("oneshot", e, 0);
    w("oneshot again", e, 0);
    write(p[1], "b", 1);
    w("oneshot after write", e, 0);
    ctl("oneshot MOD", e, EPOLL_CTL_MOD, p[0], EPOLLIN | EPOLLONESHOT, 0x56);
    w("after MOD", e, 0);
    w("after MOD again", e, 0);
    ctl("oneshot ADD again", e, EPOLL_CTL_ADD, p[0], EPOLLIN, 0x57);
    ctl("oneshot DEL", e, EPOLL_CTL_DEL, p[0], 0, 0);
    read(p[0], buf, 64);
    close(e);

    printf("-- hang-ups\n");
    e = ep();
    add(e, p[0], EPOLLIN | EPOLLRDHUP, 0x66);
    add(e, p[1], EPOLLOUT | EPOLLRDHUP, 0x77);
    w("both open", e, 0);
    write(p[1], "q", 1);
    close(p[1]);
    w("writer closed, data left", e, 0);
    read(p[0], buf, 64);
    w("writer closed, drained", e, 0);
    ctl("MOD read end to 0", e, EPOLL_CTL_MOD, p[0], 0, 0x67);
    w("events 0 (HUP always reported)", e, 0);
    close(e);
    close(p[0]);
    pipe2(p, O_NONBLOCK);
    e = ep();
    add(e, p[1], EPOLLOUT, 0x88);
    add(e, p[0], EPOLLIN | EPOLLET, 0x89);
    close(p[0]);
    w("reader closed", e, 0);
    write(p[1], "r", 1);
    printf("write to a pipe without reader errno=%s\n", ename(errno));
    close(e);
    close(p[1]);

    printf("-- lifetime\n");
    pipe2(p, O_NONBLOCK);
    e = ep();
    int dup0 = dup(p[0]);
    add(e, p[0], EPOLLIN, 0x99);
    write(p[1], "l", 1);
    w("registered", e, 0);
    close(p[0]);
    w("original closed, dup open", e, 0);
    ctl("MOD via the dup", e, EPOLL_CTL_MOD, dup0, EPOLLIN, 0x9a);
    ctl("DEL via the dup", e, EPOLL_CTL_DEL, dup0, 0, 0);
    ctl("ADD via the dup", e, EPOLL_CTL_ADD, dup0, EPOLLIN, 0x9b);
    w("both registered", e, 0);
    close(dup0);
    w("all closed", e, 0);
    close(p[1]);
    close(e);

    printf("-- nesting\n");
    pipe2(p, O_NONBLOCK);
    int inner = ep(), outer = ep();
    add(inner, p[0], EPOLLIN, 0xa1);
    add(outer, inner, EPOLLIN, 0xa2);
    ctl("inner into itself", inner, EPOLL_CTL_ADD, inner, EPOLLIN, 0);
    ctl("outer into inner (cycle)", inner, EPOLL_CTL_ADD, outer, EPOLLIN, 0);
    struct pollfd pf = {.fd = inner, .events = POLLIN | POLLOUT};
    printf("poll inner (empty)");
    res(poll(&pf, 1, 0));
    w("outer (empty)", outer, 0);
    write(p[1], "n", 1);
    pf.revents = 0;
    printf("poll inner (data) = %d revents=", poll(&pf, 1, 0));
    evtext((uint32_t)pf.revents);
    printf("\n");
    w("outer (data)", outer, 0);
    w("inner (data)", inner, 0);
    read(p[0], buf, 64);
    w("outer (drained)", outer, 0);
    int chain[7];
    chain[0] = outer;
    for (int k = 1; k < 7; k++) {
        chain[k] = ep();
        printf("level %d", k + 2);
        struct epoll_event ce = {.events = EPOLLIN, .data.u64 = (uint64_t)k};
        res(epoll_ctl(chain[k], EPOLL_CTL_ADD, chain[k - 1], &ce));
    }
    for (int k = 1; k < 7; k++)
        close(chain[k]);
    /* Below: the depth counted downwards. */
    int top = ep(), mid = ep();
    add(top, mid, EPOLLIN, 1);
    ctl("top into inner's new parent", mid, EPOLL_CTL_ADD, outer, EPOLLIN, 2);
    close(top);
    close(mid);
    close(outer);
    close(inner);
    close(p[0]);
    close(p[1]);

    printf("-- timerfd, eventfd, maxevents\n");
    e = ep();
    int t = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
    add(e, t, EPOLLIN, 0xb1);
    w("disarmed", e, 0);
    struct itimerspec its = {.it_value = {0, 30000000}};
    timerfd_settime(t, 0, &its, NULL);
    w("armed 30 ms, wait -1", e, -1);
    read(t, &got, 8);
    printf("expirations %llu\n", (unsigned long long)got);
    w("after read", e, 0);
    int evs_fd[5];
    for (int k = 0; k < 5; k++) {
        evs_fd[k] = eventfd(1, EFD_NONBLOCK);
        add(e, evs_fd[k], EPOLLIN, 0xc0 + (uint64_t)k);
    }
    struct epoll_event two[2];
    int total = 0;
    for (int k = 0; k < 4; k++) {
        int n = epoll_wait(e, two, 2, 0);
        printf("max 2 -> %d\n", n);
        total += n;
    }
    printf("total %d\n", total);
    for (int k = 0; k < 5; k++)
        close(evs_fd[k]);
    w("all closed", e, 0);
    struct epoll_event big = {.events = EPOLLIN, .data.u64 = 0xdeadbeefcafebabeULL};
    ev = eventfd(1, 0);
    epoll_ctl(e, EPOLL_CTL_ADD, ev, &big);
    w("data verbatim", e, 0);
    struct timespec ts = {0, 20000000};
    pipe2(p, O_NONBLOCK);
    e2 = ep();
    add(e2, p[0], EPOLLIN, 1);
    printf("pwait2 20 ms");
    waited((int)syscall(SYS_epoll_pwait2, e2, evs, 4, &ts, NULL, 8), evs);
    printf("wait 20 ms");
    waited(epoll_wait(e2, evs, 4, 20), evs);
    close(ev);
    close(t);
    close(e);

    printf("-- signals\n");
    /* SIGUSR1 stays blocked but inside the waits that unblock it, so a
     * signal from the other thread can only arrive during them, however
     * late that thread runs. */
    struct sigaction sa = {.sa_handler = on_usr1, .sa_flags = SA_RESTART};
    sigaction(SIGUSR1, &sa, NULL);
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    sigprocmask(SIG_BLOCK, &usr1, NULL);
    main_tid = (pid_t)syscall(SYS_gettid);
    pthread_t th;
    handled = 0;
    late_pipe = -1;
    pthread_create(&th, NULL, interrupter, NULL);
    printf("pwait -1 with an empty mask, signal (SA_RESTART)");
    waited(epoll_pwait(e2, evs, 4, -1, &none), evs);
    pthread_join(th, NULL);
    printf("handled %d\n", handled);
    handled = 0;
    late_pipe = p[1];
    pthread_create(&th, NULL, interrupter, NULL);
    printf("pwait -1 masking SIGUSR1, then data");
    waited(epoll_pwait(e2, evs, 4, -1, &usr1), evs);
    pthread_join(th, NULL);
    printf("handled %d (still blocked)\n", handled);
    sigprocmask(SIG_UNBLOCK, &usr1, NULL);
    printf("handled %d (unblocked)\n", handled);
    sigprocmask(SIG_BLOCK, &usr1, NULL);
    read(p[0], buf, 64);
    handled = 0;
    raise(SIGUSR1);
    printf("pending while blocked, handled %d\n", handled);
    printf("pwait with an empty mask");
    waited(epoll_pwait(e2, evs, 4, -1, &none), evs);
    printf("handled %d\n", handled);
    sigset_t now;
    sigprocmask(SIG_BLOCK, NULL, &now);
    printf("mask restored: SIGUSR1 blocked=%d\n", sigismember(&now, SIGUSR1));
    handled = 0;
    raise(SIGUSR1);
    ts.tv_nsec = 0;
    printf("pwait2 timeout 0 with an empty mask");
    waited((int)syscall(SYS_epoll_pwait2, e2, evs, 4, &ts, &none, 8), evs);
    printf("handled %d\n", handled);
    sigprocmask(SIG_UNBLOCK, &usr1, NULL);
    printf("handled after unblock %d\n", handled);
    sigprocmask(SIG_BLOCK, &usr1, NULL);
    handled = 0;
    late_pipe = -1;
    pthread_create(&th, NULL, interrupter, NULL);
    pf.fd = p[0];
    pf.events = POLLIN;
    printf("ppoll -1 with an empty mask, signal");
    res(ppoll(&pf, 1, NULL, &none));
    pthread_join(th, NULL);
    printf("handled %d\n", handled);
    sigprocmask(SIG_UNBLOCK, &usr1, NULL);

    printf("-- edge-triggered and one-shot waits woken by another thread\n");
    int e3 = ep();
    add(e3, p[0], EPOLLIN | EPOLLET, 0xe1);
    add(e3, p[1], EPOLLOUT | EPOLLET | EPOLLONESHOT, 0xe2);
    w("ET/ONESHOT at first", e3, 0);
    write_fd = p[1];
    pthread_create(&th, NULL, write_later, NULL);
    w("ET wait -1, data from a thread", e3, -1);
    pthread_join(th, NULL);
    w("ET after it", e3, 0);
    ctl("MOD ONESHOT", e3, EPOLL_CTL_MOD, p[0], EPOLLIN | EPOLLONESHOT, 0xe3);
    read(p[0], buf, 64);
    pthread_create(&th, NULL, write_later, NULL);
    w("ONESHOT wait -1, data from a thread", e3, -1);
    pthread_join(th, NULL);
    w("ONESHOT after it", e3, 0);
    read(p[0], buf, 64);
    close(e3);

    printf("-- a timer armed during the wait\n");
    int tm = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
    add(e2, tm, EPOLLIN, 0xd1);
    arm_fd = tm;
    pthread_create(&th, NULL, arm_later, NULL);
    w("wait -1 on a disarmed timer another thread arms", e2, -1);
    pthread_join(th, NULL);
    close(tm);
    close(e2);
    close(p[0]);
    close(p[1]);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: epolldiff DIR cases | DIR run SEED NSEEDS COUNT\n");
        return 2;
    }
    snprintf(root, sizeof root, "%s", argv[1]);
    if (chdir(root)) {
        perror(root);
        return 2;
    }
    setvbuf(stdout, NULL, _IOFBF, 1 << 16);
    signal(SIGPIPE, SIG_IGN);
    if (!strcmp(argv[2], "cases")) {
        cases();
    } else if (!strcmp(argv[2], "run") && argc == 6) {
        uint64_t seed = strtoull(argv[3], NULL, 10);
        unsigned nseeds = (unsigned)strtoul(argv[4], NULL, 10);
        unsigned count = (unsigned)strtoul(argv[5], NULL, 10);
        for (unsigned s = 0; s < nseeds; s++) {
            reset();
            rng = (seed + s) * 0x2545f4914f6cdd1dULL;
            printf("# seed %llu\n", (unsigned long long)(seed + s));
            for (unsigned i = 0; i < count; i++) {
                call(i);
                settle();
            }
        }
        reset();
    } else {
        fprintf(stderr, "epolldiff: bad arguments\n");
        return 2;
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/epolldiff.file", root);
    unlink(path);
    fflush(stdout);
    return 0;
}
