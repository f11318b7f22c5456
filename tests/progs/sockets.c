/* TCP sockets as Linux gives them: a listener on loopback and a client in
 * the same process, exact bytes both ways, half-close, non-blocking
 * connect with poll and SO_ERROR, epoll (level and edge), MSG_PEEK,
 * MSG_WAITALL, sendmsg/recvmsg with several pieces, FIONREAD, options,
 * names, a refused connect, EPIPE after the peer went, dual-stack IPv6.
 * Everything printed is independent of port numbers and timing, so the
 * host's output and a partition's must be equal (tests/tests/linux.rs). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "errname.h"

static int failures;

#define CHECK(cond, ...)                                                         \
    do {                                                                         \
        if (!(cond)) {                                                           \
            printf("FAIL line %d: ", __LINE__);                                  \
            printf(__VA_ARGS__);                                                 \
            printf(" (errno %s)\n", errname(errno));                             \
            failures++;                                                          \
        }                                                                        \
    } while (0)

static const char *res(long r)
{
    static char buf[64];
    if (r < 0)
        return errname(errno);
    snprintf(buf, sizeof buf, "%ld", r);
    return buf;
}

static int listener(struct sockaddr_in *out)
{
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    CHECK(bind(l, (void *)&a, sizeof a) == 0, "bind");
    socklen_t len = sizeof *out;
    CHECK(getsockname(l, (void *)out, &len) == 0 && len == sizeof *out, "getsockname");
    CHECK(out->sin_port != 0, "bind to port 0 gave port 0");
    CHECK(listen(l, 16) == 0, "listen");
    return l;
}

static int dial(const struct sockaddr_in *a)
{
    int c = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(connect(c, (const void *)a, sizeof *a) == 0, "connect");
    return c;
}

/* Reads exactly n bytes. */
static long read_full(int fd, char *buf, long n)
{
    long got = 0;
    while (got < n) {
        long r = read(fd, buf + got, n - got);
        if (r <= 0)
            return r < 0 ? r : got;
        got += r;
    }
    return got;
}

static void *echo_server(void *arg)
{
    int l = *(int *)arg;
    for (;;) {
        int c = accept(l, NULL, NULL);
        if (c < 0) {
            if (errno != EINVAL)
                printf("echo server: accept %s\n", errname(errno));
            return NULL;
        }
        char buf[65536];
        long n;
        while ((n = read(c, buf, sizeof buf)) > 0) {
            long off = 0;
            while (off < n) {
                long w = write(c, buf + off, n - off);
                if (w <= 0)
                    break;
                off += w;
            }
        }
        close(c);
    }
}

static void basics(void)
{
    struct sockaddr_in a;
    int l = listener(&a);
    int c = dial(&a);
    struct sockaddr_in peer;
    socklen_t plen = sizeof peer;
    int s = accept4(l, (void *)&peer, &plen, SOCK_CLOEXEC);
    CHECK(s >= 0, "accept4");
    printf("accept peer: family %d addr %s len %u\n", peer.sin_family,
           inet_ntoa(peer.sin_addr), plen);
    struct sockaddr_in me, them;
    socklen_t ml = sizeof me, tl = sizeof them;
    getsockname(c, (void *)&me, &ml);
    getpeername(c, (void *)&them, &tl);
    printf("client names: local %s, peer is listener: %d, accept peer is client: %d\n",
           inet_ntoa(me.sin_addr), them.sin_port == a.sin_port, peer.sin_port == me.sin_port);

    /* Exact bytes, both ways. */
    char msg[] = "hello, partition";
    printf("write: %s\n", res(write(c, msg, sizeof msg)));
    char buf[256] = {0};
    printf("read: %s '%s'\n", res(read_full(s, buf, sizeof msg)), buf);
    printf("send: %s\n", res(send(s, "pong", 4, 0)));
    struct pollfd p = {.fd = c, .events = POLLIN};
    long pr = poll(&p, 1, 5000);
    printf("poll: %s revents %#x\n", res(pr), p.revents);
    int avail = -1;
    long ir = ioctl(c, FIONREAD, &avail);
    printf("FIONREAD: %s %d\n", res(ir), avail);
    memset(buf, 0, sizeof buf);
    printf("recv PEEK: %s '%s'\n", res(recv(c, buf, sizeof buf, MSG_PEEK)), buf);
    memset(buf, 0, sizeof buf);
    printf("recv: %s '%s'\n", res(recv(c, buf, sizeof buf, 0)), buf);
    printf("recv DONTWAIT: %s\n", res(recv(c, buf, sizeof buf, MSG_DONTWAIT)));

    /* sendmsg with three pieces, recvmsg into two. */
    struct iovec out[3] = {{"abc", 3}, {"defg", 4}, {"hij", 3}};
    struct msghdr mo = {.msg_iov = out, .msg_iovlen = 3};
    printf("sendmsg: %s\n", res(sendmsg(s, &mo, MSG_NOSIGNAL)));
    char x[4] = {0}, y[16] = {0};
    struct iovec in[2] = {{x, 3}, {y, 7}};
    struct msghdr mi = {.msg_iov = in, .msg_iovlen = 2};
    char wait_all[10];
    printf("recv WAITALL: %s\n", res(recv(c, wait_all, 10, MSG_WAITALL | MSG_PEEK)));
    long r = recvmsg(c, &mi, MSG_WAITALL);
    printf("recvmsg: %s '%s' '%s' flags %d\n", res(r), x, y, mi.msg_flags);

    /* Half-close: the peer reads the end, then still writes back. */
    printf("shutdown WR: %s\n", res(shutdown(c, SHUT_WR)));
    printf("read after peer's shutdown: %s\n", res(read(s, buf, sizeof buf)));
    printf("write after shutdown: %s\n", res(send(c, "x", 1, MSG_NOSIGNAL)));
    printf("reply after half-close: %s\n", res(write(s, "late", 4)));
    memset(buf, 0, sizeof buf);
    printf("read it: %s '%s'\n", res(read_full(c, buf, 4)), buf);
    close(s);
    printf("read at end: %s\n", res(read(c, buf, sizeof buf)));
    close(c);
    close(l);
}

static void options(void)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    int v = 0;
    socklen_t len = sizeof v;
    getsockopt(s, SOL_SOCKET, SO_TYPE, &v, &len);
    printf("SO_TYPE %d len %u\n", v, len);
    int one = 1;
    printf("TCP_NODELAY set: %s\n", res(setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one)));
    len = sizeof v;
    getsockopt(s, IPPROTO_TCP, TCP_NODELAY, &v, &len);
    printf("TCP_NODELAY %d\n", v != 0);
    int sz = 65536;
    setsockopt(s, SOL_SOCKET, SO_RCVBUF, &sz, sizeof sz);
    len = sizeof v;
    getsockopt(s, SOL_SOCKET, SO_RCVBUF, &v, &len);
    printf("SO_RCVBUF after 65536: %d\n", v);
    len = sizeof v;
    getsockopt(s, SOL_SOCKET, SO_KEEPALIVE, &v, &len);
    printf("SO_KEEPALIVE %d\n", v);
    struct linger lg = {1, 5};
    printf("SO_LINGER set: %s\n", res(setsockopt(s, SOL_SOCKET, SO_LINGER, &lg, sizeof lg)));
    struct linger lg2;
    len = sizeof lg2;
    getsockopt(s, SOL_SOCKET, SO_LINGER, &lg2, &len);
    printf("SO_LINGER %d %d len %u\n", lg2.l_onoff, lg2.l_linger, len);
    len = sizeof v;
    printf("getsockopt unknown: %s\n", res(getsockopt(s, SOL_SOCKET, 9999, &v, &len)));
    len = sizeof v;
    printf("IPV6_V6ONLY on AF_INET: %s\n", res(getsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &v, &len)));
    len = sizeof v;
    getsockopt(s, SOL_SOCKET, SO_ERROR, &v, &len);
    printf("SO_ERROR %d\n", v);
    struct sockaddr_in a;
    socklen_t al = sizeof a;
    printf("getpeername unconnected: %s\n", res(getpeername(s, (void *)&a, &al)));
    printf("recv unconnected: %s\n", res(recv(s, &v, 4, 0)));
    printf("send unconnected: %s\n", res(send(s, &v, 4, MSG_NOSIGNAL)));
    printf("shutdown unconnected: %s\n", res(shutdown(s, SHUT_RDWR)));
    printf("accept unlistened: %s\n", res(accept(s, NULL, NULL)));
    printf("getsockname on a file: %s\n", res(getsockname(0, (void *)&a, &al)));
    printf("socket(AF_INET, 99): %s\n", res(socket(AF_INET, 99, 0)));
    printf("socket(12345, STREAM): %s\n", res(socket(12345, SOCK_STREAM, 0)));
    close(s);
}

static void refused(void)
{
    /* A port nobody listens on: bound, never listening, so it stays ours
     * (a closed port could be taken by another program meanwhile). */
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int l = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(bind(l, (void *)&a, sizeof a) == 0, "bind");
    socklen_t al = sizeof a;
    CHECK(getsockname(l, (void *)&a, &al) == 0 && a.sin_port != 0, "getsockname");
    int c = socket(AF_INET, SOCK_STREAM, 0);
    printf("connect to a closed port: %s\n", res(connect(c, (void *)&a, sizeof a)));
    close(c);
    printf("accept on a bound socket: %s\n", res(accept(l, NULL, NULL)));
    c = socket(AF_INET, SOCK_STREAM, 0);
    printf("bind to its port again: %s\n", res(bind(c, (void *)&a, sizeof a)));
    close(c);

    /* Bind, then connect: the connection leaves from the bound port. */
    {
        struct sockaddr_in srv;
        int sl = listener(&srv);
        struct sockaddr_in me = {.sin_family = AF_INET,
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        int d = socket(AF_INET, SOCK_STREAM, 0);
        CHECK(bind(d, (void *)&me, sizeof me) == 0, "bind before connect");
        socklen_t ml = sizeof me;
        getsockname(d, (void *)&me, &ml);
        CHECK(connect(d, (void *)&srv, sizeof srv) == 0, "connect after bind");
        struct sockaddr_in peer, after;
        socklen_t pl = sizeof peer, afl = sizeof after;
        int s = accept(sl, (void *)&peer, &pl);
        getsockname(d, (void *)&after, &afl);
        printf("bind then connect: local port kept %d, server sees it %d\n",
               after.sin_port == me.sin_port, s >= 0 && peer.sin_port == me.sin_port);
        close(s);
        close(d);
        close(sl);
    }

    /* Listening at last: the same port takes calls. */
    CHECK(listen(l, 4) == 0, "listen after bind");
    c = socket(AF_INET, SOCK_STREAM, 0);
    printf("connect once it listens: %s\n", res(connect(c, (void *)&a, sizeof a)));
    close(c);
    close(l);
    /* The rest use a port bound but not listening, as above. */
    l = socket(AF_INET, SOCK_STREAM, 0);
    a.sin_port = 0;
    CHECK(bind(l, (void *)&a, sizeof a) == 0, "bind");
    al = sizeof a;
    CHECK(getsockname(l, (void *)&a, &al) == 0 && a.sin_port != 0, "getsockname");

    /* Non-blocking: EINPROGRESS, then POLLOUT with SO_ERROR. */
    c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    printf("nonblocking connect (closed): %s\n", res(connect(c, (void *)&a, sizeof a)));
    struct pollfd p = {.fd = c, .events = POLLOUT};
    poll(&p, 1, 5000);
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(c, SOL_SOCKET, SO_ERROR, &err, &len);
    printf("  then POLLOUT %d POLLERR %d, SO_ERROR %s\n", !!(p.revents & POLLOUT),
           !!(p.revents & POLLERR), errname(err));
    len = sizeof err;
    getsockopt(c, SOL_SOCKET, SO_ERROR, &err, &len);
    printf("  SO_ERROR again: %d\n", err);
    close(c);
    c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    connect(c, (void *)&a, sizeof a);
    poll(&p, 1, 5000);
    printf("  connect after the failure showed: %s\n", res(connect(c, (void *)&a, sizeof a)));
    close(c);

    /* What a socket whose connect failed answers afterwards. */
    c = socket(AF_INET, SOCK_STREAM, 0);
    connect(c, (void *)&a, sizeof a);
    char buf[8];
    printf("after a refused connect: recv %s", res(recv(c, buf, sizeof buf, MSG_DONTWAIT)));
    printf(", send %s", res(send(c, "x", 1, MSG_NOSIGNAL)));
    len = sizeof err;
    err = -1;
    getsockopt(c, SOL_SOCKET, SO_ERROR, &err, &len);
    printf(", SO_ERROR %d", err);
    struct sockaddr_in peer;
    socklen_t pl = sizeof peer;
    printf(", getpeername %s\n", res(getpeername(c, (void *)&peer, &pl)));
    close(c);
    close(l);
}

/* A peer that resets the connection (SO_LINGER 0, then close). */
static void reset(void)
{
    struct sockaddr_in a;
    int l = listener(&a);
    int c = dial(&a);
    int s = accept(l, NULL, NULL);
    struct linger lg = {1, 0};
    setsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    close(c);
    struct pollfd p = {.fd = s, .events = POLLIN};
    poll(&p, 1, 5000);
    usleep(100000);
    poll(&p, 1, 0);
    printf("reset: poll POLLIN %d POLLERR %d POLLHUP %d\n", !!(p.revents & POLLIN),
           !!(p.revents & POLLERR), !!(p.revents & POLLHUP));
    int err = -1;
    socklen_t len = sizeof err;
    getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len);
    printf("  SO_ERROR %s", err ? errname(err) : "0");
    char buf[8];
    printf(", then recv %s", res(recv(s, buf, sizeof buf, 0)));
    printf(", send %s\n", res(send(s, "x", 1, MSG_NOSIGNAL)));
    close(s);
    c = dial(&a);
    s = accept(l, NULL, NULL);
    setsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    close(c);
    p.fd = s;
    poll(&p, 1, 5000);
    usleep(100000);
    printf("reset, recv first: %s", res(recv(s, buf, sizeof buf, 0)));
    printf(", again %s\n", res(recv(s, buf, sizeof buf, 0)));
    close(s);
    close(l);
}

static void nonblocking(void)
{
    struct sockaddr_in a;
    int l = listener(&a);
    fcntl(l, F_SETFL, O_NONBLOCK);
    printf("accept with none waiting: %s\n", res(accept(l, NULL, NULL)));
    int c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    int r = connect(c, (void *)&a, sizeof a);
    printf("nonblocking connect: %s\n", r == 0 ? "0 (done at once)" : errname(errno));
    /* Linux has chosen the source address and port by now (Netty's epoll
     * transport reads them here). */
    struct sockaddr_in me = {0};
    socklen_t ml = sizeof me;
    getsockname(c, (void *)&me, &ml);
    printf("  getsockname while connecting: %s, port %s\n",
           me.sin_addr.s_addr == htonl(INADDR_LOOPBACK) ? "127.0.0.1" : "not the source",
           me.sin_port ? "chosen" : "0");
    struct pollfd p = {.fd = c, .events = POLLOUT};
    poll(&p, 1, 5000);
    int err = -1;
    socklen_t len = sizeof err;
    getsockopt(c, SOL_SOCKET, SO_ERROR, &err, &len);
    printf("  POLLOUT %d, SO_ERROR %d\n", !!(p.revents & POLLOUT), err);
    printf("connect after POLLOUT: %s\n", res(connect(c, (void *)&a, sizeof a)));
    printf("connect once connected: %s\n", res(connect(c, (void *)&a, sizeof a)));

    /* epoll: the listener becomes readable; level- and edge-triggered. */
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = 1};
    epoll_ctl(ep, EPOLL_CTL_ADD, l, &ev);
    struct epoll_event got[4];
    int n = epoll_wait(ep, got, 4, 5000);
    printf("epoll listener: %d ready, id %u events %#x\n", n, got[0].data.u32, got[0].events);
    int s = accept4(l, NULL, NULL, SOCK_NONBLOCK);
    printf("accept4: %s, F_GETFL nonblock %d\n", s >= 0 ? "ok" : errname(errno),
           !!(fcntl(s, F_GETFL) & O_NONBLOCK));
    char buf[64];
    printf("read with nothing: %s\n", res(read(s, buf, sizeof buf)));
    ev.events = EPOLLIN | EPOLLET | EPOLLRDHUP;
    ev.data.u32 = 2;
    epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev);
    printf("epoll before data: %d\n", epoll_wait(ep, got, 4, 0));
    write(c, "12345", 5);
    n = epoll_wait(ep, got, 4, 5000);
    printf("epoll after data: %d, id %u events %#x\n", n, got[0].data.u32, got[0].events);
    printf("edge-triggered again: %d\n", epoll_wait(ep, got, 4, 50));
    printf("read: %s\n", res(read(s, buf, sizeof buf)));
    close(c);
    n = epoll_wait(ep, got, 4, 5000);
    printf("epoll after peer closed: %d, events %#x\n", n, n > 0 ? got[0].events : 0);
    printf("read at end: %s\n", res(read(s, buf, sizeof buf)));
    close(s);
    close(ep);
    close(l);
}

static void peer_gone(void)
{
    signal(SIGPIPE, SIG_IGN);
    struct sockaddr_in a;
    int l = listener(&a);
    int c = dial(&a);
    int s = accept(l, NULL, NULL);
    close(s);
    char buf[16];
    printf("read after peer close: %s\n", res(read(c, buf, sizeof buf)));
    printf("first write: %s\n", res(write(c, "a", 1)));
    usleep(200000); /* the peer's reset arrives */
    printf("second write: %s\n", res(write(c, "b", 1)));
    close(c);
    close(l);
}

/* SIGPIPE: raised by a write that sends nothing to a broken pipe or
 * connection (a socket pair's send too), not by one that sent some bytes
 * before the peer reset the connection. */
static volatile int sigpipes;

static void on_sigpipe(int sig)
{
    (void)sig;
    sigpipes++;
}

static void *read_some_then_reset(void *arg)
{
    int s = *(int *)arg;
    static char buf[65536];
    long got = 0;
    while (got < (1 << 20)) {
        long n = read(s, buf, sizeof buf);
        if (n <= 0)
            break;
        got += n;
    }
    struct linger lg = {1, 0};
    setsockopt(s, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    close(s);
    return NULL;
}

static void pipe_signals(void)
{
    signal(SIGPIPE, on_sigpipe);
    int sv[2];
    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    close(sv[1]);
    sigpipes = 0;
    printf("pair send to a closed peer: %s", res(send(sv[0], "x", 1, 0)));
    printf(", SIGPIPE %d", sigpipes);
    printf("; with MSG_NOSIGNAL: %s, SIGPIPE %d\n", res(send(sv[0], "x", 1, MSG_NOSIGNAL)), sigpipes);
    close(sv[0]);

    struct sockaddr_in a;
    int l = listener(&a);
    int c = dial(&a);
    int s = accept(l, NULL, NULL);
    pthread_t t;
    pthread_create(&t, NULL, read_some_then_reset, &s);
    long big = 64L << 20;
    char *data = calloc(1, big);
    sigpipes = 0;
    long r = write(c, data, big);
    pthread_join(t, NULL);
    printf("64 MiB write to a peer that resets after 1 MiB: %s, SIGPIPE %d\n",
           r > 0 && r < big ? "a partial count" : res(r), sigpipes);
    free(data);
    close(c);
    close(l);
    signal(SIGPIPE, SIG_IGN);
}

/* A sendmsg of several MiB in two pieces goes out whole (blocking). */
static int sm_fd;
static long sm_got;

static void *sm_reader(void *arg)
{
    static char b[65536];
    long n;
    while ((n = read(sm_fd, b, sizeof b)) > 0)
        sm_got += n;
    return arg;
}

static void big_sendmsg(void)
{
    struct sockaddr_in a;
    int l = listener(&a);
    int c = dial(&a);
    sm_fd = accept(l, NULL, NULL);
    pthread_t t;
    pthread_create(&t, NULL, sm_reader, NULL);
    char *p = calloc(1, 3 << 20);
    struct iovec iov[2] = {{p, 2 << 20}, {p + (2 << 20), 1 << 20}};
    struct msghdr m = {.msg_iov = iov, .msg_iovlen = 2};
    long r = sendmsg(c, &m, 0);
    shutdown(c, SHUT_WR);
    pthread_join(t, NULL);
    printf("sendmsg of 3 MiB: %s, received %ld\n", res(r), sm_got);
    free(p);
    close(c);
    close(sm_fd);
    close(l);
}

static void bulk(void)
{
    struct sockaddr_in a;
    int l = listener(&a);
    pthread_t t;
    pthread_create(&t, NULL, echo_server, &l);
    int c = dial(&a);
    /* 4 MiB through the echo server, written and read by two threads'
     * worth of interleaving: write in pieces, read what comes back. */
    enum { TOTAL = 4 << 20 };
    static unsigned char out[TOTAL], in[TOTAL];
    for (long i = 0; i < TOTAL; i++)
        out[i] = (unsigned char)(i * 131 + (i >> 12));
    long sent = 0, got = 0;
    fcntl(c, F_SETFL, O_NONBLOCK);
    while (got < TOTAL) {
        struct pollfd p = {.fd = c, .events = POLLIN | (sent < TOTAL ? POLLOUT : 0)};
        if (poll(&p, 1, 10000) <= 0) {
            printf("bulk: poll timed out at %ld/%ld\n", sent, got);
            break;
        }
        if ((p.revents & POLLOUT) && sent < TOTAL) {
            long w = write(c, out + sent, TOTAL - sent < 100000 ? TOTAL - sent : 100000);
            if (w > 0)
                sent += w;
        }
        if (p.revents & POLLIN) {
            long r = read(c, in + got, TOTAL - got);
            if (r > 0)
                got += r;
            else if (r == 0)
                break;
        }
    }
    printf("bulk: %ld bytes echoed, equal %d\n", got, got == TOTAL && !memcmp(in, out, TOTAL));
    close(c);
    /* A listener shut down for reading fails the accept waiting in it. */
    printf("shutdown of the listener: %s\n", res(shutdown(l, SHUT_RDWR)));
    pthread_join(t, NULL);
    printf("echo server's accept ended\n");
    printf("accept after: %s\n", res(accept(l, NULL, NULL)));
    close(l);
}

static void ipv6(void)
{
    int l = socket(AF_INET6, SOCK_STREAM, 0);
    if (l < 0) {
        printf("ipv6: %s\n", errname(errno));
        return;
    }
    struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_ANY_INIT};
    printf("bind [::]:0: %s\n", res(bind(l, (void *)&a, sizeof a)));
    socklen_t len = sizeof a;
    getsockname(l, (void *)&a, &len);
    printf("getsockname len %u family %d\n", len, a.sin6_family);
    listen(l, 4);
    /* An IPv4 client reaches the dual-stack listener. */
    struct sockaddr_in v4 = {.sin_family = AF_INET, .sin_port = a.sin6_port,
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int c = dial(&v4);
    struct sockaddr_in6 peer;
    socklen_t pl = sizeof peer;
    int s = accept(l, (void *)&peer, &pl);
    char text[64];
    inet_ntop(AF_INET6, &peer.sin6_addr, text, sizeof text);
    printf("accepted v4 client as %s (len %u)\n", text, pl);
    close(s);
    close(c);
    /* An IPv6 socket dials an IPv4-mapped address. */
    int c6 = socket(AF_INET6, SOCK_STREAM, 0);
    struct sockaddr_in6 m = {.sin6_family = AF_INET6, .sin6_port = a.sin6_port};
    inet_pton(AF_INET6, "::ffff:127.0.0.1", &m.sin6_addr);
    printf("connect ::ffff:127.0.0.1: %s\n", res(connect(c6, (void *)&m, sizeof m)));
    s = accept(l, NULL, NULL);
    struct sockaddr_in6 me;
    socklen_t ml = sizeof me;
    getsockname(c6, (void *)&me, &ml);
    inet_ntop(AF_INET6, &me.sin6_addr, text, sizeof text);
    printf("its local address: %s\n", text);
    close(s);
    close(c6);
    close(l);
}

static void udp(void)
{
    struct sockaddr_in lo = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int a = socket(AF_INET, SOCK_DGRAM, 0), b = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    printf("udp bind: %s\n", res(bind(a, (void *)&lo, sizeof lo)));
    struct sockaddr_in aa, ba, from;
    socklen_t len = sizeof aa;
    getsockname(a, (void *)&aa, &len);
    printf("udp bound to a port: %d\n", aa.sin_port != 0);
    char buf[64] = {0};
    printf("recv with nothing (nonblocking): %s\n", res(recv(b, buf, sizeof buf, 0)));
    printf("send without an address: %s\n", res(send(b, "x", 1, 0)));
    printf("sendto (autobinds): %s\n", res(sendto(b, "hello", 5, 0, (void *)&aa, sizeof aa)));
    len = sizeof ba;
    getsockname(b, (void *)&ba, &len);
    printf("autobound: %s port set %d\n", inet_ntoa(ba.sin_addr), ba.sin_port != 0);
    struct pollfd p = {.fd = a, .events = POLLIN};
    long pr = poll(&p, 1, 5000);
    printf("poll: %s revents %#x\n", res(pr), p.revents);
    int avail = -1;
    ioctl(a, FIONREAD, &avail);
    printf("FIONREAD: %d\n", avail);
    socklen_t fl = sizeof from;
    long r = recvfrom(a, buf, sizeof buf, 0, (void *)&from, &fl);
    printf("recvfrom: %s '%s' from %s, its port %d, len %u\n", res(r), buf, inet_ntoa(from.sin_addr),
           from.sin_port == ba.sin_port, fl);
    printf("reply: %s\n", res(sendto(a, "world!", 6, 0, (void *)&from, fl)));
    p.fd = b;
    poll(&p, 1, 5000);
    memset(buf, 0, sizeof buf);
    printf("recv: %s '%s'\n", res(recv(b, buf, sizeof buf, 0)), buf);
    /* Truncation: the rest of a datagram is gone. */
    sendto(b, "0123456789", 10, 0, (void *)&aa, sizeof aa);
    sendto(b, "abc", 3, 0, (void *)&aa, sizeof aa);
    memset(buf, 0, sizeof buf);
    printf("recv 4 of 10 with MSG_TRUNC: %s '%s'\n", res(recv(a, buf, 4, MSG_TRUNC)), buf);
    memset(buf, 0, sizeof buf);
    printf("next datagram: %s '%s'\n", res(recv(a, buf, sizeof buf, 0)), buf);
    /* connect: default destination, and getpeername. */
    printf("connect: %s\n", res(connect(b, (void *)&aa, sizeof aa)));
    struct sockaddr_in peer, now;
    len = sizeof peer;
    getpeername(b, (void *)&peer, &len);
    printf("peer is a: %d\n", peer.sin_port == aa.sin_port);
    len = sizeof now;
    getsockname(b, (void *)&now, &len);
    printf("local after connect: %s, same port %d\n", inet_ntoa(now.sin_addr), now.sin_port == ba.sin_port);
    struct iovec iov[2] = {{"con", 3}, {"nected", 6}};
    struct msghdr m = {.msg_iov = iov, .msg_iovlen = 2};
    printf("sendmsg: %s\n", res(sendmsg(b, &m, 0)));
    char x[4] = {0}, y[16] = {0};
    struct iovec in[2] = {{x, 3}, {y, 15}};
    struct sockaddr_in src;
    struct msghdr mi = {.msg_name = &src, .msg_namelen = sizeof src, .msg_iov = in, .msg_iovlen = 2};
    r = recvmsg(a, &mi, 0);
    printf("recvmsg: %s '%s' '%s' namelen %u from b %d flags %d\n", res(r), x, y, mi.msg_namelen,
           src.sin_port == ba.sin_port, mi.msg_flags);
    int v = 0;
    len = sizeof v;
    getsockopt(a, SOL_SOCKET, SO_TYPE, &v, &len);
    printf("SO_TYPE %d\n", v);
    len = sizeof v;
    getsockopt(a, SOL_SOCKET, SO_RCVBUF, &v, &len);
    printf("SO_RCVBUF %d\n", v);
    len = sizeof v;
    printf("TCP_NODELAY on UDP: %s\n", res(getsockopt(a, IPPROTO_TCP, TCP_NODELAY, &v, &len)));
    printf("listen on UDP: %s\n", res(listen(a, 1)));
    printf("accept on UDP: %s\n", res(accept(a, NULL, NULL)));
    printf("bind again: %s\n", res(bind(a, (void *)&lo, sizeof lo)));
    /* Linux answers ENOTCONN but shuts the socket down all the same. */
    printf("shutdown unconnected UDP: %s\n", res(shutdown(a, SHUT_RDWR)));
    printf("  then sendto: %s\n", res(sendto(a, "z", 1, 0, (void *)&ba, sizeof ba)));
    printf("  then recv: %s\n", res(recv(a, buf, sizeof buf, MSG_DONTWAIT)));
    close(b);
    close(a);
    a = socket(AF_INET, SOCK_DGRAM, 0);
    /* A dual-stack IPv6 socket hears an IPv4 sender. */
    int c = socket(AF_INET6, SOCK_DGRAM, 0);
    struct sockaddr_in6 any6 = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_ANY_INIT};
    bind(c, (void *)&any6, sizeof any6);
    len = sizeof any6;
    getsockname(c, (void *)&any6, &len);
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = any6.sin6_port,
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    sendto(a, "v4", 2, 0, (void *)&to, sizeof to);
    struct sockaddr_in6 f6;
    socklen_t l6 = sizeof f6;
    memset(buf, 0, sizeof buf);
    r = recvfrom(c, buf, sizeof buf, 0, (void *)&f6, &l6);
    char text[64];
    inet_ntop(AF_INET6, &f6.sin6_addr, text, sizeof text);
    printf("IPv6 socket: %s '%s' from %s (len %u)\n", res(r), buf, text, l6);
    close(c);
    close(a);
}

/* Writes "12", "34", "56", then "78", "9a", "bc", 10 ms apart. */
static void *dribble(void *arg)
{
    int fd = *(int *)arg;
    const char *pieces[] = {"12", "34", "56", "78", "9a", "bc"};
    for (int i = 0; i < 6; i++) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
        write(fd, pieces[i], 2);
    }
    return NULL;
}

static void pair(void)
{
    int sv[2];
    printf("socketpair: %s\n", res(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)));
    char buf[16] = {0};
    write(sv[0], "ab", 2);
    printf("one way: %s '%s'\n", res(read(sv[1], buf, sizeof buf)), buf);
    write(sv[1], "xyz", 3);
    int avail = -1;
    ioctl(sv[0], FIONREAD, &avail);
    memset(buf, 0, sizeof buf);
    printf("other way: FIONREAD %d, %s '%s'\n", avail, res(read(sv[0], buf, sizeof buf)), buf);
    write(sv[1], "peek", 4);
    memset(buf, 0, sizeof buf);
    printf("pair MSG_PEEK: %s '%s'", res(recv(sv[0], buf, sizeof buf, MSG_PEEK)), buf);
    memset(buf, 0, sizeof buf);
    printf(", then read: %s '%s'\n", res(read(sv[0], buf, sizeof buf)), buf);
    /* The pieces come 10 ms apart: MSG_WAITALL waits for all of them,
     * MSG_PEEK|MSG_WAITALL takes what is there without waiting (Linux's
     * Unix streams), then MSG_WAITALL the rest. */
    pthread_t t;
    pthread_create(&t, NULL, dribble, &sv[1]);
    memset(buf, 0, sizeof buf);
    printf("pair MSG_WAITALL: %s '%s'\n", res(recv(sv[0], buf, 6, MSG_WAITALL)), buf);
    memset(buf, 0, sizeof buf);
    printf("pair MSG_PEEK|MSG_WAITALL: %s '%s'", res(recv(sv[0], buf, 6, MSG_PEEK | MSG_WAITALL)), buf);
    memset(buf, 0, sizeof buf);
    printf(", then read: %s '%s'\n", res(recv(sv[0], buf, 6, MSG_WAITALL)), buf);
    pthread_join(t, NULL);
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    getsockname(sv[0], (void *)&ss, &len);
    printf("getsockname: family %d len %u\n", ss.ss_family, len);
    int v = 0;
    len = sizeof v;
    getsockopt(sv[0], SOL_SOCKET, SO_TYPE, &v, &len);
    printf("SO_TYPE %d\n", v);
    printf("shutdown WR: %s\n", res(shutdown(sv[0], SHUT_WR)));
    printf("peer reads the end: %s\n", res(read(sv[1], buf, sizeof buf)));
    struct pollfd p = {.fd = sv[1], .events = POLLIN | POLLOUT | POLLRDHUP};
    poll(&p, 1, 0);
    printf("peer's poll: %#x\n", p.revents);
    printf("write after shutdown: %s\n", res(send(sv[0], "q", 1, MSG_NOSIGNAL)));
    printf("peer writes back: %s\n", res(write(sv[1], "back", 4)));
    memset(buf, 0, sizeof buf);
    printf("read it: %s '%s'\n", res(read(sv[0], buf, sizeof buf)), buf);
    close(sv[1]);
    p.fd = sv[0];
    poll(&p, 1, 0);
    printf("after the peer closed, poll: %#x\n", p.revents);
    printf("read: %s\n", res(read(sv[0], buf, sizeof buf)));
    close(sv[0]);
    /* readv takes what is there (a second piece must not wait), writev
     * sends the pieces as one write: on a pipe and on a pair. */
    for (int kind = 0; kind < 2; kind++) {
        int fds[2];
        if (kind == 0)
            pipe(fds);
        else
            socketpair(AF_UNIX, SOCK_STREAM, 0, fds);
        struct iovec out[3] = {{"ab", 2}, {NULL, 0}, {"cd", 2}};
        printf("%s writev: %s\n", kind ? "pair" : "pipe", res(writev(fds[1], out, 3)));
        char a[5] = {0}, b[8] = {0};
        struct iovec in[2] = {{a, 4}, {b, 8}};
        printf("%s readv: %s '%s' '%s'\n", kind ? "pair" : "pipe", res(readv(fds[0], in, 2)), a, b);
        close(fds[0]);
        close(fds[1]);
    }
    printf("socketpair(AF_UNIX, SOCK_DGRAM): %s\n", res(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv)));
    close(sv[0]);
    close(sv[1]);
}

/* A reader thread that takes its time: counts and checksums what comes
 * until the end, then answers with its figures (a half-closed exchange). */
struct slow { int fd; long bytes; unsigned long sum; };

static void *slow_reader(void *arg)
{
    struct slow *r = arg;
    static char buf[65536];
    long n;
    int rounds = 0;
    while ((n = read(r->fd, buf, (rounds++ % 3) ? sizeof buf : 1000)) > 0) {
        for (long i = 0; i < n; i++)
            r->sum = r->sum * 31 + (unsigned char)buf[i];
        r->bytes += n;
        if (rounds % 16 == 0)
            usleep(1000);
    }
    char msg[64];
    int len = snprintf(msg, sizeof msg, "%ld %lx", r->bytes, r->sum);
    write(r->fd, msg, len);
    close(r->fd);
    return NULL;
}

/* Bytes a program wrote are all delivered, in order, whatever it does
 * next: many small writes, a large one into a slow reader, then
 * shutdown(SHUT_WR) (the peer sees the end after the last byte, and can
 * still answer), and a close right after a large write. */
static void delivery(void)
{
    struct sockaddr_in a;
    int l = listener(&a);
    static char data[3 << 20];
    unsigned long want = 0;
    for (long i = 0; i < (long)sizeof data; i++) {
        data[i] = (char)(i * 7 + (i >> 10));
    }
    for (int round = 0; round < 2; round++) {
        int c = dial(&a);
        struct slow r = {.fd = accept(l, NULL, NULL)};
        pthread_t t;
        pthread_create(&t, NULL, slow_reader, &r);
        long sent = 0;
        want = 0;
        /* 2,000 small writes, then the rest in one. */
        for (int i = 0; i < 2000; i++, sent += 7)
            CHECK(write(c, data + sent, 7) == 7, "small write");
        CHECK(write(c, data + sent, sizeof data - sent) == (long)(sizeof data - sent),
              "large write");
        for (long i = 0; i < (long)sizeof data; i++)
            want = want * 31 + (unsigned char)data[i];
        char answer[64] = {0};
        if (round == 0) {
            printf("delivery: shutdown: %s\n", res(shutdown(c, SHUT_WR)));
            printf("delivery: write after shutdown: %s\n", res(write(c, "x", 1)));
            long n = read_full(c, answer, sizeof answer - 1);
            char expect[64];
            snprintf(expect, sizeof expect, "%ld %lx", (long)sizeof data, want);
            printf("delivery: the peer got everything before the end: %s\n",
                   n > 0 && !strcmp(answer, expect) ? "yes" : answer);
            pthread_join(t, NULL);
            close(c);
        } else {
            close(c);
            pthread_join(t, NULL);
            printf("delivery: after a close: %ld bytes, %s\n", r.bytes,
                   r.bytes == (long)sizeof data && r.sum == want ? "intact" : "damaged");
        }
    }
    close(l);
}

/* The sender of `sockets bulk`: `words` counting u32s in uneven pieces,
 * pausing now and then (the receiver's reads then wait at the gateway). */
struct bulk {
    int fd;
    unsigned words;
};

static void *bulk_send(void *arg)
{
    struct bulk *b = arg;
    static unsigned buf[256 * 1024 / 4];
    unsigned next = 0, piece = 1;
    while (next < b->words) {
        unsigned n = piece < b->words - next ? piece : b->words - next;
        if (n > sizeof buf / 4)
            n = sizeof buf / 4;
        for (unsigned i = 0; i < n; i++)
            buf[i] = next + i;
        const char *p = (const char *)buf;
        size_t left = (size_t)n * 4;
        while (left > 0) {
            ssize_t w = write(b->fd, p, left);
            if (w <= 0)
                return NULL;
            p += w;
            left -= (size_t)w;
        }
        next += n;
        piece = (piece * 7 + 13) % 70000 + 1;
        if (piece % 11 == 0)
            usleep(300);
    }
    shutdown(b->fd, SHUT_WR);
    return NULL;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    /* `sockets policy PORT`: a connect to 127.0.0.1:PORT and a bind, for
     * the network policy tests (--net none, --net allow=...). */
    if (argc > 2 && !strcmp(argv[1], "policy")) {
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[2])),
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        int c = socket(AF_INET, SOCK_STREAM, 0);
        printf("connect: %s\n", res(connect(c, (void *)&a, sizeof a)));
        int l = socket(AF_INET, SOCK_STREAM, 0);
        a.sin_port = 0;
        printf("bind: %s\n", res(bind(l, (void *)&a, sizeof a)));
        return 0;
    }
    /* `sockets bulk MIB`: MIB MiB through one connection to itself, read
     * in 64 KiB reads and checked word by word: the bytes arrive whole and
     * in order however many reads the partition keeps in flight. */
    if (argc > 2 && !strcmp(argv[1], "bulk")) {
        struct sockaddr_in a;
        int l = listener(&a);
        struct bulk b = {.fd = dial(&a), .words = (unsigned)atoi(argv[2]) * 256 * 1024};
        int s = accept(l, NULL, NULL);
        if (b.fd < 0 || s < 0) {
            printf("bulk: %s\n", errname(errno));
            return 1;
        }
        pthread_t t;
        pthread_create(&t, NULL, bulk_send, &b);
        static unsigned char in[64 * 1024 + 3];
        unsigned long long got = 0;
        unsigned expect = 0, bad = 0, carry = 0, have = 0;
        for (;;) {
            /* Odd sizes: words straddle reads. */
            ssize_t r = read(s, in, sizeof in - (got % 3));
            if (r <= 0)
                break;
            for (ssize_t i = 0; i < r; i++) {
                carry |= (unsigned)in[i] << (8 * have);
                if (++have == 4) {
                    if (carry != expect && bad++ < 3)
                        printf("bulk: word %u is %u\n", expect, carry);
                    expect++;
                    carry = 0;
                    have = 0;
                }
            }
            got += (unsigned long long)r;
        }
        pthread_join(t, NULL);
        printf("bulk: %llu MiB read, %u words out of place\n", got >> 20, bad);
        return bad != 0;
    }
    /* `sockets many N`: N connections at once, idle, then a byte each way
     * on every one and a file read: nothing starves. */
    if (argc > 2 && !strcmp(argv[1], "many")) {
        int n = atoi(argv[2]);
        struct sockaddr_in a;
        int l = listener(&a);
        int *cs = calloc(n, sizeof *cs), *ss = calloc(n, sizeof *ss);
        for (int i = 0; i < n; i++) {
            cs[i] = dial(&a);
            ss[i] = accept(l, NULL, NULL);
            if (cs[i] < 0 || ss[i] < 0) {
                printf("many: connection %d: %s\n", i, errname(errno));
                return 1;
            }
        }
        int bad = 0;
        for (int i = n - 1; i >= 0; i--) {
            char b = (char)i, r = 0;
            if (write(cs[i], &b, 1) != 1 || read(ss[i], &r, 1) != 1 || r != b)
                bad++;
            if (write(ss[i], &b, 1) != 1 || read(cs[i], &r, 1) != 1 || r != b)
                bad++;
        }
        FILE *f = fopen("/proc/self/status", "r");
        printf("many: %d connections, %d bad exchanges, file read %s\n", n, bad,
               f && fgetc(f) != EOF ? "ok" : "failed");
        return bad != 0;
    }
    /* `sockets emfile`: connections until the descriptors run out, then
     * all closed and one more exchange: the failure is clean. */
    if (argc > 1 && !strcmp(argv[1], "emfile")) {
        struct sockaddr_in a;
        int l = listener(&a);
        int max = 1 << 16, n = 0, err = 0;
        int *fds = calloc(max, sizeof *fds);
        while (n + 2 <= max) {
            int c = socket(AF_INET, SOCK_STREAM, 0);
            if (c < 0) { err = errno; break; }
            fds[n++] = c;
            if (connect(c, (void *)&a, sizeof a) != 0) { err = errno; break; }
            int s = accept(l, NULL, NULL);
            if (s < 0) { err = errno; break; }
            fds[n++] = s;
        }
        printf("emfile: stopped by %s\n", errname(err));
        for (int i = 0; i < n; i++)
            close(fds[i]);
        /* A call the program could not accept (ENFILE: the host ran out
         * first) is still queued, its dialler closed: accepted now, it
         * reads the end at once. Such stale calls are skipped. */
        int c = dial(&a), s, stale = 0;
        char b = 0;
        int ok = write(c, "z", 1) == 1;
        while (ok && (s = accept(l, NULL, NULL)) >= 0) {
            long r = read(s, &b, 1);
            close(s);
            if (r == 1) {
                ok = b == 'z';
                break;
            }
            if (++stale > 4096) {
                ok = 0;
                break;
            }
        }
        fprintf(stderr, "emfile: %d stale calls skipped\n", stale);
        printf("emfile: after closing them, an exchange %s\n", ok ? "works" : "fails");
        return !ok;
    }
    /* `sockets N`: the IPv6 part N times (a loop for debugging races). */
    if (argc > 1) {
        for (int i = atoi(argv[1]); i > 0; i--)
            ipv6();
        return failures != 0;
    }
    basics();
    options();
    refused();
    nonblocking();
    peer_gone();
    reset();
    pipe_signals();
    big_sendmsg();
    bulk();
    delivery();
    ipv6();
    udp();
    pair();
    printf("failures: %d\n", failures);
    return failures != 0;
}
