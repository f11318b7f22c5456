/* Differential exerciser for Unix datagram and seqpacket socket pairs:
 * the same random sequence of calls on the host and in a partition must
 * print the same lines.
 *
 *   msgdiff run SEED NSEEDS COUNT   seeds SEED..SEED+NSEEDS-1, COUNT calls
 *
 * A table of slots holds pair ends (non-blocking, so no call waits; dups
 * share an end). The calls are socketpair (SOCK_DGRAM, SOCK_SEQPACKET,
 * SOCK_RAW), close, send/write/sendmsg of sizes around Linux's charge steps
 * (empty, 191/192, 16064/16065, the send buffer's limit), bursts until
 * EAGAIN, recvmsg/read with short buffers and MSG_PEEK/MSG_TRUNC,
 * FIONREAD/SIOCOUTQ, poll, shutdown, SO_SNDBUF, SO_ERROR, names, dup. Each
 * message's bytes follow from a counter, so what is read is checked by a
 * sum. Each line is "INDEX CALL ARGS = RESULT". */
#define _GNU_SOURCE
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>

#define SLOTS 6
#include "differ.h"

static unsigned char buf[300000];
static unsigned msgno;

static size_t size_pick(void) {
    static const size_t sizes[] = {0, 1, 7, 100, 191, 192, 700, 1000, 2000, 4000,
                                   8000, 16064, 16065, 50000, 212960, 212961};
    return sizes[pick(sizeof sizes / sizeof *sizes)];
}

static void fill(size_t n) {
    msgno++;
    for (size_t i = 0; i < n; i++)
        buf[i] = (unsigned char)(msgno * 31 + i);
}

static void call(unsigned idx) {
    int s = used_slot();
    unsigned op = pick(17);
    if (s < 0 || op == 0) {
        int a = free_slot();
        if (a < 0)
            return;
        fd[a] = -2; /* reserve */
        int b = free_slot();
        fd[a] = -1;
        if (b < 0)
            return;
        static const int types[] = {SOCK_DGRAM, SOCK_SEQPACKET, SOCK_RAW};
        int ty = types[pick(3)];
        int sv[2];
        long r = socketpair(AF_UNIX, ty | SOCK_NONBLOCK, 0, sv);
        printf("%u socketpair %s S%d S%d = %s\n", idx,
               ty == SOCK_DGRAM ? "dgram" : ty == SOCK_SEQPACKET ? "seqpacket" : "raw", a, b, res(r));
        if (r == 0) {
            fd[a] = sv[0];
            fd[b] = sv[1];
        }
        return;
    }
    int f = fd[s];
    switch (op) {
    case 1: {
        printf("%u close S%d = %s\n", idx, s, res(close(f)));
        fd[s] = -1;
        break;
    }
    case 2:
    case 3: {
        size_t n = size_pick();
        fill(n);
        int how = pick(3);
        long r;
        if (how == 0)
            r = send(f, buf, n, MSG_DONTWAIT | MSG_NOSIGNAL);
        else if (how == 1)
            r = write(f, buf, n);
        else {
            size_t a = n / 3, b = n / 3;
            struct iovec v[3] = {{buf, a}, {buf + a, b}, {buf + a + b, n - a - b}};
            struct msghdr m = {.msg_iov = v, .msg_iovlen = 3};
            r = sendmsg(f, &m, MSG_NOSIGNAL);
        }
        printf("%u %s S%d %zu = %s\n", idx, how == 0 ? "send" : how == 1 ? "write" : "sendmsg", s, n,
               res(r));
        break;
    }
    case 4: {
        size_t n = size_pick();
        unsigned limit = 1 + pick(300);
        unsigned k = 0;
        long r = 0;
        while (k < limit) {
            fill(n);
            r = send(f, buf, n, MSG_DONTWAIT | MSG_NOSIGNAL);
            if (r < 0)
                break;
            k++;
        }
        printf("%u burst S%d %zu x%u = %u sent, last %s\n", idx, s, n, limit, k, res(r));
        break;
    }
    case 5:
    case 6:
    case 7: {
        static const size_t rooms[] = {0, 1, 3, 64, 5000, 300000};
        size_t room = rooms[pick(6)];
        int flags = 0;
        if (pick(3) == 0)
            flags |= MSG_PEEK;
        if (pick(3) == 0)
            flags |= MSG_TRUNC;
        if (pick(2) == 0) {
            memset(buf, 0, room);
            long r = read(f, buf, room);
            printf("%u read S%d %zu = %s sum %lx\n", idx, s, room, res(r), r > 0 ? sum(buf, r) : 0);
            break;
        }
        memset(buf, 0, room);
        struct iovec v = {buf, room};
        struct msghdr m = {.msg_iov = &v, .msg_iovlen = 1};
        long r = recvmsg(f, &m, flags | MSG_DONTWAIT);
        long got = r < 0 ? 0 : (r < (long)room ? r : (long)room);
        printf("%u recvmsg S%d %zu%s%s = %s flags %#x sum %lx\n", idx, s, room,
               flags & MSG_PEEK ? " peek" : "", flags & MSG_TRUNC ? " trunc" : "", res(r),
               r >= 0 ? m.msg_flags : 0, sum(buf, got));
        break;
    }
    case 8: {
        int in = -1, out = -1;
        long a = ioctl(f, FIONREAD, &in);
        const char *ra = res(a);
        long b = ioctl(f, TIOCOUTQ, &out);
        printf("%u inq/outq S%d = %s %d, %s %d\n", idx, s, ra, in, res(b), out);
        break;
    }
    case 9:
    case 10: {
        struct pollfd p = {f, POLLIN | POLLOUT | POLLRDHUP, 0};
        long r = poll(&p, 1, 0);
        printf("%u poll S%d = %s %#x\n", idx, s, res(r), p.revents);
        break;
    }
    case 11: {
        int how = pick(4);
        printf("%u shutdown S%d %d = %s\n", idx, s, how, res(shutdown(f, how)));
        break;
    }
    case 12: {
        static const int vals[] = {0, 1000, 5000, 100000, 500000};
        int v = vals[pick(5)];
        long r = setsockopt(f, SOL_SOCKET, SO_SNDBUF, &v, sizeof v);
        const char *rr = res(r);
        int got = -1;
        socklen_t l = sizeof got;
        getsockopt(f, SOL_SOCKET, SO_SNDBUF, &got, &l);
        printf("%u sndbuf S%d %d = %s now %d\n", idx, s, v, rr, got);
        break;
    }
    case 13: {
        int e = -1, ty = -1;
        socklen_t l = sizeof e;
        long r = getsockopt(f, SOL_SOCKET, SO_ERROR, &e, &l);
        const char *rr = res(r);
        l = sizeof ty;
        getsockopt(f, SOL_SOCKET, SO_TYPE, &ty, &l);
        printf("%u so_error S%d = %s %s type %d\n", idx, s, rr, e ? errname(e) : "0", ty);
        break;
    }
    case 14: {
        struct sockaddr_un a;
        socklen_t l = sizeof a;
        long r = getpeername(f, (void *)&a, &l);
        const char *rp = res(r);
        socklen_t l2 = sizeof a;
        long r2 = getsockname(f, (void *)&a, &l2);
        printf("%u names S%d = peer %s len %u, local %s len %u\n", idx, s, rp, r == 0 ? l : 0, res(r2),
               l2);
        break;
    }
    case 15: {
        int b = free_slot();
        if (b < 0)
            break;
        int d = dup(f);
        printf("%u dup S%d S%d = %s\n", idx, s, b, d < 0 ? res(d) : "ok");
        if (d >= 0)
            fd[b] = d;
        break;
    }
    case 16: {
        /* A message that meets a hole in the program's memory. */
        size_t n = 1 + size_pick();
        size_t h = hole_pick(n);
        fill(n);
        int how = pick(2);
        long r = write_holed(f, buf, n, h, how * 2);
        printf("%u %s S%d %zu hole %zu = %s\n", idx, how == 0 ? "write" : "sendmsg", s, n, h,
               res(r));
        break;
    }
    }
}

static void begin(void) { msgno = 0; }

int main(int argc, char **argv) { return differ_main(argc, argv, "msgdiff", begin, call); }
