/* Differential exerciser for Unix stream socket pairs: the same random
 * sequence of calls on the host and in a partition must print the same
 * lines (see differ.h).
 *
 * A table of slots holds pair ends (non-blocking, so no call waits; dups
 * share an end). The calls are socketpair, close, write/send/writev of
 * sizes around Linux's skb steps (a write goes as skbs of at most 36,544
 * bytes, each charged its truesize against the sender's SO_SNDBUF), bursts
 * until EAGAIN, reads and MSG_PEEK receives, FIONREAD/SIOCOUTQ, poll,
 * shutdown, SO_SNDBUF and dup. Each write's bytes follow from a counter,
 * so what is read is checked by a sum. */
#define _GNU_SOURCE
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>

#define SLOTS 6
#include "differ.h"

static unsigned char buf[2200000];
static unsigned long written;

static size_t size_pick(void) {
    static const size_t sizes[] = {0,     1,     100,   1000,  3776,  3777,  4096,
                                   5000,  16384, 36544, 36545, 65536, 106000, 200000,
                                   300000, 1048576, 1048577, 2100000};
    return sizes[pick(sizeof sizes / sizeof *sizes)];
}

static void fill(size_t n) {
    for (size_t i = 0; i < n; i++)
        buf[i] = (unsigned char)((written + i) * 7 + 3);
}

static void call(unsigned idx) {
    int s = used_slot();
    unsigned op = pick(16);
    if (s < 0 || op == 0) {
        int a = free_slot();
        if (a < 0)
            return;
        fd[a] = -2; /* reserve */
        int b = free_slot();
        fd[a] = -1;
        if (b < 0)
            return;
        int sv[2];
        long r = socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv);
        printf("%u socketpair S%d S%d = %s\n", idx, a, b, res(r));
        if (r == 0) {
            fd[a] = sv[0];
            fd[b] = sv[1];
        }
        return;
    }
    int f = fd[s];
    switch (op) {
    case 1:
        printf("%u close S%d = %s\n", idx, s, res(close(f)));
        fd[s] = -1;
        break;
    case 2:
    case 3: {
        size_t n = size_pick();
        fill(n);
        long r;
        int how = pick(3);
        if (how == 0)
            r = write(f, buf, n);
        else if (how == 1)
            r = send(f, buf, n, MSG_DONTWAIT | MSG_NOSIGNAL);
        else {
            size_t a = n / 3, b = n / 3;
            struct iovec v[3] = {{buf, a}, {buf + a, b}, {buf + a + b, n - a - b}};
            r = writev(f, v, 3);
        }
        if (r > 0)
            written += (unsigned long)r;
        printf("%u %s S%d %zu = %s\n", idx, how == 0 ? "write" : how == 1 ? "send" : "writev", s, n,
               res(r));
        break;
    }
    case 4: {
        size_t n = size_pick();
        unsigned limit = 1 + pick(300);
        unsigned k = 0;
        long r = 0, total = 0;
        while (k < limit) {
            fill(n);
            r = write(f, buf, n);
            if (r < 0)
                break;
            written += (unsigned long)r;
            total += r;
            k++;
            if (r == 0)
                break;
        }
        printf("%u burst S%d %zu x%u = %u writes, %ld bytes, last %s\n", idx, s, n, limit, k, total,
               res(r));
        break;
    }
    case 5:
    case 6:
    case 7: {
        static const size_t rooms[] = {0, 1, 100, 3776, 5000, 36544, 65536, 1100000};
        size_t room = rooms[pick(sizeof rooms / sizeof *rooms)];
        memset(buf, 0, room);
        long r;
        int peek = pick(4) == 0;
        if (peek)
            r = recv(f, buf, room, MSG_PEEK | MSG_DONTWAIT);
        else
            r = read(f, buf, room);
        printf("%u %s S%d %zu = %s sum %lx\n", idx, peek ? "peek" : "read", s, room, res(r),
               r > 0 ? sum(buf, r) : 0);
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
        int how = pick(3);
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
        int b = free_slot();
        if (b < 0)
            break;
        int d = dup(f);
        printf("%u dup S%d S%d = %s\n", idx, s, b, d < 0 ? res(d) : "ok");
        if (d >= 0)
            fd[b] = d;
        break;
    }
    case 14: {
        int e = -1;
        socklen_t l = sizeof e;
        long r = getsockopt(f, SOL_SOCKET, SO_ERROR, &e, &l);
        printf("%u so_error S%d = %s %s\n", idx, s, res(r), e ? errname(e) : "0");
        break;
    }
    case 15: {
        /* A write that meets a hole in the program's memory. */
        size_t n = 1 + size_pick();
        size_t h = hole_pick(n);
        fill(n);
        int how = pick(2);
        long r = write_holed(f, buf, n, h, how);
        if (r > 0)
            written += (unsigned long)r;
        printf("%u %s S%d %zu hole %zu = %s\n", idx, how == 0 ? "write" : "writev", s, n, h,
               res(r));
        break;
    }
    }
}

static void begin(void) { written = 0; }

int main(int argc, char **argv) { return differ_main(argc, argv, "streamdiff", begin, call); }
