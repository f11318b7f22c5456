/* AF_UNIX datagram and seqpacket socket pairs as Linux gives them: both
 * directions, message boundaries (a short read truncates, MSG_TRUNC, the
 * rest of the message gone), MSG_PEEK, empty messages, FIONREAD, poll,
 * shutdown, the peer's close (ECONNREFUSED then ENOTCONN for a datagram
 * pair; EOF, EPIPE, ECONNRESET with unread data for seqpacket), a full
 * send queue (EAGAIN, POLLOUT back once drained), a blocked receiver woken
 * by another thread, sendmsg/recvmsg pieces, options and names. Everything
 * printed is independent of timing, so the host's output and a
 * partition's must be equal (tests/tests/linux.rs). */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
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
#include <sys/un.h>
#include <unistd.h>

#include "errname.h"

static const char *res(long r)
{
    static char buf[4][48];
    static int i;
    i = (i + 1) % 4;
    if (r < 0)
        snprintf(buf[i], sizeof buf[i], "-1 %s", errname(errno));
    else
        snprintf(buf[i], sizeof buf[i], "%ld", r);
    return buf[i];
}

static const char *tname(int t) { return t == SOCK_DGRAM ? "dgram" : "seqpacket"; }

static int revents(int fd)
{
    struct pollfd p = {fd, POLLIN | POLLOUT | POLLRDHUP | POLLPRI, 0};
    poll(&p, 1, 0);
    return p.revents;
}

/* recvmsg into one buffer of `room` bytes with `flags`: the count, the
 * bytes and msg_flags. */
static void rmsg(const char *what, int fd, size_t room, int flags)
{
    char buf[256] = {0};
    struct iovec v = {buf, room};
    struct msghdr m = {.msg_iov = &v, .msg_iovlen = 1};
    long n = recvmsg(fd, &m, flags);
    printf("  %s: %s '%.*s' flags %#x\n", what, res(n), n > 0 ? (int)(n < (long)room ? n : (long)room) : 0,
           buf, n >= 0 ? m.msg_flags : 0);
}

struct blocked { int fd; long n; char buf[16]; };

static void *receiver(void *arg)
{
    struct blocked *b = arg;
    b->n = recv(b->fd, b->buf, sizeof b->buf, 0);
    return NULL;
}

static void pair(int type)
{
    int sv[2];
    const char *t = tname(type);
    printf("== %s\n", t);
    printf("socketpair: %s\n", res(socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, sv)));
    int v = 0;
    socklen_t l = sizeof v;
    getsockopt(sv[0], SOL_SOCKET, SO_TYPE, &v, &l);
    printf("SO_TYPE %d (%s)\n", v, v == type ? "same" : "other");
    l = sizeof v;
    const char *r0 = res(getsockopt(sv[0], SOL_SOCKET, SO_DOMAIN, &v, &l));
    printf("SO_DOMAIN %s %d\n", r0, v);
    l = sizeof v;
    r0 = res(getsockopt(sv[0], SOL_SOCKET, SO_ACCEPTCONN, &v, &l));
    printf("SO_ACCEPTCONN %s %d\n", r0, v);
    struct sockaddr_un sa;
    socklen_t sl = sizeof sa;
    memset(&sa, 0x55, sizeof sa);
    r0 = res(getsockname(sv[0], (void *)&sa, &sl));
    printf("getsockname %s len %u family %d\n", r0, sl, sa.sun_family);
    sl = sizeof sa;
    r0 = res(getpeername(sv[1], (void *)&sa, &sl));
    printf("getpeername %s len %u\n", r0, sl);
    printf("fcntl GETFL %#x\n", fcntl(sv[0], F_GETFL));
    printf("poll fresh: %#x\n", revents(sv[0]));

    /* Both directions, boundaries kept. */
    printf("send a->b: %s %s\n", res(send(sv[0], "hello", 5, 0)), res(send(sv[0], "world!", 6, 0)));
    printf("send b->a: %s\n", res(write(sv[1], "back", 4)));
    int n = -1;
    r0 = res(ioctl(sv[1], FIONREAD, &n));
    printf("FIONREAD b: %s %d\n", r0, n);
    printf("poll b: %#x\n", revents(sv[1]));
    rmsg("recv b 3 (truncates)", sv[1], 3, 0);
    rmsg("recv b 64", sv[1], 64, 0);
    rmsg("recv b nonblock", sv[1], 64, MSG_DONTWAIT);
    rmsg("recv a", sv[0], 64, 0);
    /* MSG_PEEK and MSG_TRUNC. */
    send(sv[0], "peekaboo", 8, 0);
    rmsg("peek 4", sv[1], 4, MSG_PEEK);
    rmsg("peek|trunc 2", sv[1], 2, MSG_PEEK | MSG_TRUNC);
    rmsg("trunc 3", sv[1], 3, MSG_TRUNC);
    rmsg("after", sv[1], 64, MSG_DONTWAIT);
    /* Empty messages. */
    printf("send empty: %s\n", res(send(sv[0], "", 0, 0)));
    n = -1;
    ioctl(sv[1], FIONREAD, &n);
    printf("FIONREAD after empty: %d, poll %#x\n", n, revents(sv[1]));
    rmsg("recv empty", sv[1], 64, MSG_DONTWAIT);
    rmsg("recv none", sv[1], 64, MSG_DONTWAIT);
    /* read/readv on a short buffer drop the rest too. */
    write(sv[0], "abcdefgh", 8);
    write(sv[0], "ij", 2);
    char small[4] = {0};
    printf("read 4: %s '%.4s'\n", res(read(sv[1], small, 4)), small);
    char x[3] = {0}, y[3] = {0};
    struct iovec in[2] = {{x, 1}, {y, 3}};
    printf("readv 1+3: %s '%.1s' '%.1s'\n", res(readv(sv[1], in, 2)), x, y);
    /* sendmsg gathers pieces into one message. */
    struct iovec out[3] = {{"ab", 2}, {NULL, 0}, {"cde", 3}};
    struct msghdr om = {.msg_iov = out, .msg_iovlen = 3};
    printf("sendmsg 2+0+3: %s\n", res(sendmsg(sv[0], &om, 0)));
    rmsg("recv", sv[1], 64, 0);
    /* An address on a connected pair's send. */
    struct sockaddr_un to = {.sun_family = AF_UNIX};
    strcpy(to.sun_path + 1, "nobody-here");
    long r = sendto(sv[0], "z", 1, 0, (void *)&to, offsetof(struct sockaddr_un, sun_path) + 12);
    printf("sendto abstract nobody: %s\n", res(r));
    if (r == 1)
        rmsg("  recv it", sv[1], 64, 0);
    /* Too big. */
    static char big[300000];
    printf("send 300000: %s\n", res(send(sv[0], big, sizeof big, MSG_DONTWAIT)));
    /* The queue fills: EAGAIN, not writable; drained, writable again. */
    int sent = 0;
    while (send(sv[0], big, 1000, MSG_DONTWAIT) == 1000 && sent < 100000)
        sent++;
    printf("filled with 1000-byte messages: %s, %d sent\n", errname(errno), sent);
    printf("poll full a: %#x b: %#x\n", revents(sv[0]), revents(sv[1]));
    n = -1;
    ioctl(sv[1], FIONREAD, &n);
    printf("FIONREAD full: %d\n", n);
    int got = 0;
    while (recv(sv[1], big, sizeof big, MSG_DONTWAIT) == 1000)
        got++;
    printf("drained %d: %s, poll a: %#x\n", got, errname(errno), revents(sv[0]));
    /* A receiver blocked in recv is woken by a send from another thread. */
    struct blocked b = {sv[1], -2, {0}};
    pthread_t th;
    pthread_create(&th, NULL, receiver, &b);
    usleep(20000);
    send(sv[0], "wake", 4, 0);
    pthread_join(th, NULL);
    printf("blocked receiver: %ld '%.4s'\n", b.n, b.buf);
    /* epoll, edge-triggered. */
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN | EPOLLET, .data.u32 = 7};
    epoll_ctl(ep, EPOLL_CTL_ADD, sv[1], &ev);
    struct epoll_event out_ev[2];
    printf("epoll empty: %d\n", epoll_wait(ep, out_ev, 2, 0));
    send(sv[0], "e1", 2, 0);
    int k = epoll_wait(ep, out_ev, 2, 0);
    printf("epoll after send: %d %#x\n", k, k > 0 ? out_ev[0].events : 0);
    printf("epoll again: %d\n", epoll_wait(ep, out_ev, 2, 0));
    send(sv[0], "e2", 2, 0);
    k = epoll_wait(ep, out_ev, 2, 0);
    printf("epoll after second: %d\n", k);
    rmsg("recv e1", sv[1], 64, 0);
    rmsg("recv e2", sv[1], 64, 0);
    close(ep);

    /* Shutdown. */
    printf("shutdown a WR: %s\n", res(shutdown(sv[0], SHUT_WR)));
    printf("poll a: %#x b: %#x\n", revents(sv[0]), revents(sv[1]));
    printf("send a: %s\n", res(send(sv[0], "q", 1, MSG_NOSIGNAL)));
    printf("send b: %s\n", res(send(sv[1], "r", 1, MSG_NOSIGNAL)));
    rmsg("recv a", sv[0], 64, MSG_DONTWAIT);
    rmsg("recv b", sv[1], 64, MSG_DONTWAIT);
    printf("shutdown b RD: %s\n", res(shutdown(sv[1], SHUT_RD)));
    printf("poll a: %#x b: %#x\n", revents(sv[0]), revents(sv[1]));
    rmsg("recv b blocking", sv[1], 64, 0);
    printf("shutdown 5: %s\n", res(shutdown(sv[1], 5)));
    close(sv[0]);
    close(sv[1]);

    /* The peer closes. */
    socketpair(AF_UNIX, type, 0, sv);
    send(sv[0], "left", 4, 0);
    send(sv[1], "unread", 6, 0);
    close(sv[1]);
    printf("after the peer closed (with unread data): poll %#x\n", revents(sv[0]));
    l = sizeof v;
    v = -1;
    getsockopt(sv[0], SOL_SOCKET, SO_ERROR, &v, &l);
    printf("SO_ERROR %s\n", v ? errname(v) : "0");
    printf("send: %s\n", res(send(sv[0], "x", 1, MSG_NOSIGNAL)));
    printf("send again: %s\n", res(send(sv[0], "x", 1, MSG_NOSIGNAL)));
    rmsg("recv", sv[0], 64, MSG_DONTWAIT);
    rmsg("recv again", sv[0], 64, MSG_DONTWAIT);
    printf("poll now %#x\n", revents(sv[0]));
    sl = sizeof sa;
    printf("getpeername %s\n", res(getpeername(sv[0], (void *)&sa, &sl)));
    close(sv[0]);

    socketpair(AF_UNIX, type, 0, sv);
    close(sv[1]);
    printf("after the peer closed (nothing unread): poll %#x\n", revents(sv[0]));
    rmsg("recv", sv[0], 64, MSG_DONTWAIT);
    printf("send: %s\n", res(send(sv[0], "x", 1, MSG_NOSIGNAL)));
    close(sv[0]);

    /* SIGPIPE on a send after shutdown (raised for seqpacket only?). */
    signal(SIGPIPE, SIG_IGN);
    socketpair(AF_UNIX, type | SOCK_NONBLOCK, 0, sv);
    printf("nonblock GETFL %#x\n", fcntl(sv[0], F_GETFL));
    rmsg("recv nonblock empty", sv[0], 64, 0);
    shutdown(sv[0], SHUT_WR);
    printf("write after shutdown: %s\n", res(write(sv[0], "x", 1)));
    close(sv[0]);
    close(sv[1]);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    pair(SOCK_DGRAM);
    pair(SOCK_SEQPACKET);
    int sv[2];
    printf("socketpair(AF_UNIX, SOCK_RAW): %s\n", res(socketpair(AF_UNIX, SOCK_RAW, 0, sv)));
    printf("socketpair(AF_UNIX, 9): %s\n", res(socketpair(AF_UNIX, 9, 0, sv)));
    printf("socketpair(AF_UNIX, SOCK_DGRAM, 2): %s\n", res(socketpair(AF_UNIX, SOCK_DGRAM, 2, sv)));
    return 0;
}
